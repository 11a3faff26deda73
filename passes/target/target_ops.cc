// The function library of ai.onnxopt (include/onnxopt/passes/target_ops.h): each op's standard
// decomposition, built at the model's default opset.
//
//   MatMulBias(A, B, bias) => (Y)                 { t = MatMul(A, B); Y = Add(t, bias) }
//   MatMulBiasRelu(A, B, bias) => (Y)             { t = MatMul(A, B); u = Add(t, bias); Y = Relu(u) }
//   MatMulBiasGelu<approximate>(A, B, bias) => (Y)
//                                   { t = MatMul(A, B); u = Add(t, bias); Y = Gelu<@approximate>(u) }
//   SkipLayerNormalization<axis, epsilon>(X, Skip, Scale, B) => (Y, Sum)
//                  { Sum = Add(X, Skip); Y = LayerNormalization<@axis, @epsilon>(Sum, Scale, B) }
//   SkipRMSNormalization<axis, epsilon>(X, Skip, Scale) => (Y, Sum)
//                  { Sum = Add(X, Skip); Y = RMSNormalization<@axis, @epsilon>(Sum, Scale) }
//   SwiGlu(A) => (Y)         { G, U = Split<axis=-1, num_outputs=2>(A); Y = Mul(Mul(G, Sigmoid(G)), U) }
//   GeGlu<approximate>(A) => (Y)
//                            { G, U = Split<axis=-1, num_outputs=2>(A); Y = Mul(Gelu<@approximate>(G), U) }
//
// The channels-last forms (X, Y, Z: [N, H, W, C]; W: [M, kH, kW, C / group]); T<p> is
// Transpose<perm=p>, to NCHW p = [0, 3, 1, 2], back q = [0, 2, 3, 1]; attrs: Conv's (strides,
// pads, dilations, group, kernel_shape) or the pool's, each taken from the call:
//   NhwcConv<attrs>(X, W, B) => (Y)            { Y = T<q>(Conv<@attrs>(T<p>(X), T<p>(W), B)) }
//   NhwcConvRelu<attrs>(X, W, B) => (Y)        { Y = Relu(NhwcConv's Y) }
//   NhwcConvAddRelu<attrs>(X, W, B, Z) => (Y)  { Y = Relu(Add(NhwcConv's Y, Z)) }
//   NhwcMaxPool<attrs>(X) => (Y)               { Y = T<q>(MaxPool<@attrs>(T<p>(X))) }
//   NhwcAveragePool<attrs>(X) => (Y)           { Y = T<q>(AveragePool<@attrs>(T<p>(X))) }
//
// Attention with the softmax's NaNs made 0 (torch's export of scaled_dot_product_attention),
// 3-D Q, K, V ([B, S, num_heads * D]); split(x) = Reshape(x, [0, 0, @num_heads, -1]):
//   SafeAttention<num_heads, scale>(Q, K, V, M) => (Y)
//     { P = Softmax<-1>(MatMul(T<0,2,1,3>(split(Q)), T<0,2,3,1>(split(K))) * @scale + M);
//       Y = Reshape(T<0,2,1,3>(MatMul(Where(IsNaN(P), 0, P), T<0,2,1,3>(split(V)))), [0, 0, -1]) }
//   SafePackedAttention<num_heads, scale>(QKV, M) => (Y)
//     { Q, K, V = Split<axis=2, num_outputs=3>(QKV); Y = SafeAttention's }
// Without mask, the softmax as Attention's:
//   PackedAttention<num_heads, scale>(QKV) => (Y)      QKV [B, S, 3E], Y [B, S, E]
//     { Q, K, V = Split<axis=2, num_outputs=3>(QKV);
//       P = Softmax<-1>(MatMul(T<0,2,1,3>(split(Q)), T<0,2,3,1>(split(K))) * @scale);
//       Y = Reshape(T<0,2,1,3>(MatMul(P, T<0,2,1,3>(split(V)))), [0, 0, -1]) }
// and sequence-first (torch's nn.MultiheadAttention):
//   SeqFirstPackedAttention<num_heads, scale>(QKV) => (Y)      QKV [S, B, 3E], Y [S, B, E]
//     { as PackedAttention's with the perms T<1,2,0,3> for Q and V, T<1,2,3,0> for K and
//       T<2,0,1,3> for Y }
#include "onnxopt/passes/target_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/rewrite/pattern.h"
#include "onnxopt/rewrite/rewriter.h"

namespace onnxopt::passes {
namespace {

struct OpInfo {
  const char* name;
  int64_t min_opset;  ///< of the default domain, for the decomposition
};

constexpr OpInfo kOps[] = {
    {"GeGlu", 20},
    {"MatMulBias", 1},
    {"MatMulBiasGelu", 20},
    {"MatMulBiasRelu", 1},
    {"NhwcAveragePool", 7},
    {"NhwcConv", 1},
    {"NhwcConvAddRelu", 1},
    {"NhwcConvRelu", 1},
    {"NhwcMaxPool", 8},
    {"PackedAttention", 15},
    {"SafeAttention", 15},
    {"SafePackedAttention", 15},
    {"SeqFirstPackedAttention", 15},
    {"SkipLayerNormalization", 17},
    {"SkipRMSNormalization", 23},
    {"SwiGlu", 13},
};

using AttrRefs = std::vector<std::pair<std::string, ir::Attribute::Kind>>;

/// The attributes of Conv and the pools a channels-last call passes on to its body: only those
/// the body's op has at `opset` (a reference to another is an invalid function): MaxPool has
/// ceil_mode and dilations from opset 10, AveragePool ceil_mode from 10 and dilations from 19.
AttrRefs windowRefs(const std::string& op, int64_t opset) {
  using K = ir::Attribute::Kind;
  AttrRefs refs = {{"strides", K::kInts},
                   {"pads", K::kInts},
                   {"kernel_shape", K::kInts},
                   {"auto_pad", K::kString}};
  if (op.rfind("NhwcConv", 0) == 0) {
    refs.push_back({"dilations", K::kInts});
    refs.push_back({"group", K::kInt});
    return refs;
  }
  bool max_pool = op == "NhwcMaxPool";
  if (opset >= 10) refs.push_back({"ceil_mode", K::kInt});
  if (opset >= (max_pool ? 10 : 19)) refs.push_back({"dilations", K::kInts});
  refs.push_back({max_pool ? "storage_order" : "count_include_pad", K::kInt});
  return refs;
}

/// A function body under construction: untyped inputs, nodes appended in order.
class Body {
 public:
  explicit Body(ir::Function& fn) : fn_(fn) { rw_.setInsertionPointToEnd(*fn_.body); }

  ir::Value* input(const std::string& name) { return rw_.addGraphInput(*fn_.body, name, {}); }

  /// Appends `op`(inputs) with one output named `out`, and attributes that take the caller's.
  ir::Value* node(const std::string& op, const std::vector<ir::Value*>& inputs,
                  const std::string& out, const AttrRefs& refs = {}) {
    ir::Node* n = rw_.createNode(op, "", inputs, 1);
    rw_.setName(n, out);
    rw_.setName(n->output(0), out);
    for (const auto& [name, kind] : refs) {
      ir::Attribute a;
      a.name = name;
      a.kind = kind;
      a.ref_attr_name = name;
      rw_.setAttribute(n, std::move(a));
    }
    return n->output(0);
  }

  /// `op`(inputs) with one output per name in `outs`.
  std::vector<ir::Value*> nodes(const std::string& op, const std::vector<ir::Value*>& inputs,
                                const std::vector<std::string>& outs) {
    ir::Node* n = rw_.createNode(op, "", inputs, outs.size());
    rw_.setName(n, outs[0]);
    std::vector<ir::Value*> values;
    for (size_t i = 0; i < outs.size(); ++i) {
      rw_.setName(n->output(i), outs[i]);
      values.push_back(n->output(i));
    }
    return values;
  }

  /// Transpose<perm>(v).
  ir::Value* transpose(ir::Value* v, const std::vector<int64_t>& perm, const std::string& out) {
    ir::Value* t = node("Transpose", {v}, out);
    ir::Attribute a;
    a.name = "perm";
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = perm;
    rw_.setAttribute(t->producer(), std::move(a));
    return t;
  }

  /// Sets a literal attribute on `v`'s producer.
  void set(ir::Value* v, ir::Attribute a) { rw_.setAttribute(v->producer(), std::move(a)); }

  /// Constant<value_ints = values>.
  ir::Value* ints(const std::vector<int64_t>& values, const std::string& out) {
    ir::Value* c = node("Constant", {}, out);
    ir::Attribute a;
    a.name = "value_ints";
    a.kind = ir::Attribute::Kind::kInts;
    a.ints = values;
    set(c, std::move(a));
    return c;
  }

  /// Constant<`attr` = @ref> (value_int or value_float taken from the call's `ref`).
  ir::Value* constantRef(const std::string& attr, const std::string& ref, ir::Attribute::Kind kind,
                         const std::string& out) {
    ir::Value* c = node("Constant", {}, out);
    ir::Attribute a;
    a.name = attr;
    a.kind = kind;
    a.ref_attr_name = ref;
    set(c, std::move(a));
    return c;
  }

  /// `v` with an int attribute `name` = `value` set on its producer.
  ir::Value* withInt(ir::Value* v, const std::string& name, int64_t value) {
    ir::Attribute a;
    a.name = name;
    a.kind = ir::Attribute::Kind::kInt;
    a.i = value;
    set(v, std::move(a));
    return v;
  }

  void output(ir::Value* v) { rw_.addGraphOutput(*fn_.body, v); }

 private:
  ir::Function& fn_;
  rewrite::Rewriter rw_;
};

/// SkipLayerNormalization: Y = LayerNormalization(X + Skip, Scale, B), Sum = X + Skip;
/// SkipRMSNormalization: Y = RMSNormalization(X + Skip, Scale), Sum = X + Skip.
void skipNormBody(ir::Function& fn, Body& body, const std::string& op) {
  const bool rms = op == "SkipRMSNormalization";
  const std::string norm = rms ? "RMSNormalization" : "LayerNormalization";
  fn.attribute_names = {"axis", "epsilon"};
  fn.doc_string =
      "Y = " + norm + (rms ? "(X + Skip, Scale)" : "(X + Skip, Scale, B)") + "; Sum = X + Skip";
  ir::Value* x = body.input("X");
  ir::Value* skip = body.input("Skip");
  std::vector<ir::Value*> params = {body.input("Scale")};
  if (!rms) params.push_back(body.input("B"));
  ir::Value* sum = body.node("Add", {x, skip}, "Sum");
  params.insert(params.begin(), sum);
  ir::Value* y =
      body.node(norm, params, "Y",
                {{"axis", ir::Attribute::Kind::kInt}, {"epsilon", ir::Attribute::Kind::kFloat}});
  body.output(y);
  body.output(sum);
}

/// SwiGlu: Y = Silu(G) * U, GeGlu: Y = Gelu(G) * U, G and U the halves of A's last dim.
void gluBody(ir::Function& fn, Body& body, const std::string& op, int64_t opset) {
  const bool gelu = op == "GeGlu";
  fn.doc_string = std::string("Y = ") + (gelu ? "Gelu(G)" : "G * Sigmoid(G)") +
                  " * U; G, U = the two halves of A's last dim";
  std::vector<ir::Value*> halves = body.nodes("Split", {body.input("A")}, {"G", "U"});
  body.set(halves[0], pass::intAttr("axis", -1));
  // Equal parts: num_outputs from opset 18, the outputs' count before.
  if (opset >= 18) body.set(halves[0], pass::intAttr("num_outputs", 2));
  ir::Value* g = halves[0];
  if (gelu) {
    fn.attribute_names = {"approximate"};
    g = body.node("Gelu", {g}, "gate", {{"approximate", ir::Attribute::Kind::kString}});
  } else {
    g = body.node("Mul", {g, body.node("Sigmoid", {g}, "sigmoid")}, "gate");
  }
  body.output(body.node("Mul", {g, halves[1]}, "Y"));
}

/// The attention family: (Safe)(Packed|SeqFirstPacked)Attention.
void attentionBody(ir::Function& fn, Body& body, const std::string& op, int64_t opset) {
  using K = ir::Attribute::Kind;
  // The Safe ops take a mask and make the softmax's NaNs 0; the Packed ones split one QKV;
  // SeqFirst's rows are [S, B] where the others' are [B, S].
  const bool safe = op.rfind("Safe", 0) == 0;
  const bool seq_first = op == "SeqFirstPackedAttention";
  fn.attribute_names = {"num_heads", "scale"};
  fn.doc_string =
      safe ? "Y = merge(MatMul(Where(IsNaN(P), 0, P), split(V))), P = Softmax(split(Q) "
             "split(K)^T * scale + M): 3-D [B, S, num_heads * D] inputs, the softmax's NaNs made 0"
           : "Y = merge(MatMul(P, split(V))), P = Softmax(split(Q) split(K)^T * scale): 3-D [B, "
             "S, num_heads * D] parts";
  if (seq_first) fn.doc_string += " ([S, B, num_heads * D]: sequence-first)";
  ir::Value *q, *k, *v;
  if (op != "SafeAttention") {
    fn.doc_string += "; Q, K, V the three equal parts of QKV's last dim";
    ir::Value* qkv = body.input("QKV");
    std::vector<ir::Value*> parts = body.nodes("Split", {qkv}, {"Q", "K", "V"});
    body.set(parts[0], pass::intAttr("axis", 2));
    // Equal parts: num_outputs from opset 18, the outputs' count before.
    if (opset >= 18) body.set(parts[0], pass::intAttr("num_outputs", 3));
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    q = body.input("Q");
    k = body.input("K");
    v = body.input("V");
  }
  ir::Value* m = safe ? body.input("M") : nullptr;
  ir::Value* heads = body.node(
      "Unsqueeze",
      {body.constantRef("value_int", "num_heads", K::kInt, "heads"), body.ints({0}, "axes")},
      "heads_1d");
  ir::Value* split_shape =
      body.withInt(body.node("Concat", {body.ints({0, 0}, "lead"), heads, body.ints({-1}, "rest")},
                             "split_shape"),
                   "axis", 0);
  auto split = [&](ir::Value* x, const std::vector<int64_t>& perm, const std::string& name) {
    return body.transpose(body.node("Reshape", {x, split_shape}, name + "_heads"), perm, name);
  };
  // [B, S, H, D] or, sequence-first, [S, B, H, D] to [B, H, S, D] (K to [B, H, D, S]).
  const std::vector<int64_t> heads_first =
      seq_first ? std::vector<int64_t>{1, 2, 0, 3} : std::vector<int64_t>{0, 2, 1, 3};
  ir::Value* q4 = split(q, heads_first, "q4");
  ir::Value* kt = split(
      k, seq_first ? std::vector<int64_t>{1, 2, 3, 0} : std::vector<int64_t>{0, 2, 3, 1}, "kt");
  ir::Value* v4 = split(v, heads_first, "v4");
  ir::Value* s0 = body.node("MatMul", {q4, kt}, "qk");
  ir::Value* c = body.node(
      "CastLike", {body.constantRef("value_float", "scale", K::kFloat, "scale_f"), s0}, "c");
  ir::Value* s1 = body.node("Mul", {s0, c}, "scaled");
  if (m != nullptr) s1 = body.node("Add", {s1, m}, "scores");
  ir::Value* p = body.withInt(body.node("Softmax", {s1}, "probs"), "axis", -1);
  if (safe) {
    ir::Value* zero_f = body.node("Constant", {}, "zero_f");
    ir::Attribute zf;
    zf.name = "value_float";
    zf.kind = K::kFloat;
    zf.f = 0.0f;
    body.set(zero_f, std::move(zf));
    ir::Value* zero = body.node("CastLike", {zero_f, p}, "zero");
    p = body.node("Where", {body.node("IsNaN", {p}, "nan"), zero, p}, "safe_probs");
  }
  ir::Value* y4 = body.node("MatMul", {p, v4}, "y4");
  body.output(body.node(
      "Reshape",
      {body.transpose(
           y4, seq_first ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{0, 2, 1, 3},
           "y_heads"),
       body.ints({0, 0, -1}, "merge_shape")},
      "Y"));
}

/// The channels-last family: NhwcConv(AddRelu|Relu), NhwcMaxPool, NhwcAveragePool.
void nhwcBody(ir::Function& fn, Body& body, const std::string& op, int64_t opset) {
  const std::vector<int64_t> to_nchw = {0, 3, 1, 2}, to_nhwc = {0, 2, 3, 1};
  AttrRefs refs = windowRefs(op, opset);
  for (const auto& r : refs) fn.attribute_names.push_back(r.first);
  ir::Value* x = body.transpose(body.input("X"), to_nchw, "x_nchw");
  if (op == "NhwcMaxPool" || op == "NhwcAveragePool") {
    std::string pool = op.substr(4);
    fn.doc_string = fmt::format("Y = {} on channels-last X ([N, H, W, C])", pool);
    body.output(body.transpose(body.node(pool, {x}, "y_nchw", refs), to_nhwc, "Y"));
    return;
  }
  ir::Value* w = body.transpose(body.input("W"), to_nchw, "w_nchw");
  ir::Value* b = body.input("B");
  ir::Value* z = op == "NhwcConvAddRelu" ? body.input("Z") : nullptr;
  ir::Value* conv = body.node("Conv", {x, w, b}, "conv_nchw", refs);
  if (op == "NhwcConv") {
    fn.doc_string = "Y = Conv(X, W, B) on channels-last X, W ([M, kH, kW, C / group]) and Y";
    body.output(body.transpose(conv, to_nhwc, "Y"));
    return;
  }
  ir::Value* y = body.transpose(conv, to_nhwc, "conv");
  if (z != nullptr) {
    fn.doc_string = "Y = Relu(Conv(X, W, B) + Z), channels-last (as NhwcConv)";
    y = body.node("Add", {y, z}, "sum");
  } else {
    fn.doc_string = "Y = Relu(Conv(X, W, B)), channels-last (as NhwcConv)";
  }
  body.output(body.node("Relu", {y}, "Y"));
}

/// The MatMulBias family.
void matMulBiasBody(ir::Function& fn, Body& body, const std::string& op) {
  ir::Value* a = body.input("A");
  ir::Value* b = body.input("B");
  ir::Value* bias = body.input("bias");
  ir::Value* t = body.node("MatMul", {a, b}, "product");
  if (op == "MatMulBias") {
    fn.doc_string = "Y = MatMul(A, B) + bias";
    body.output(body.node("Add", {t, bias}, "Y"));
    return;
  }
  ir::Value* u = body.node("Add", {t, bias}, "biased");
  if (op == "MatMulBiasRelu") {
    fn.doc_string = "Y = Relu(MatMul(A, B) + bias)";
    body.output(body.node("Relu", {u}, "Y"));
  } else {
    fn.attribute_names = {"approximate"};
    fn.doc_string = "Y = Gelu(MatMul(A, B) + bias), approximate as the call says";
    body.output(body.node("Gelu", {u}, "Y", {{"approximate", ir::Attribute::Kind::kString}}));
  }
}

std::unique_ptr<ir::Function> buildFunction(const std::string& op, int64_t opset) {
  auto fn = std::make_unique<ir::Function>();
  fn->name = op;
  fn->domain = kTargetDomain;
  fn->opset_imports = {{"", opset}};
  fn->body = std::make_unique<ir::Graph>();
  Body body(*fn);
  if (op.rfind("Skip", 0) == 0) {
    skipNormBody(*fn, body, op);
  } else if (op.find("Attention") != std::string::npos) {
    attentionBody(*fn, body, op, opset);
  } else if (op == "SwiGlu" || op == "GeGlu") {
    gluBody(*fn, body, op, opset);
  } else if (op.rfind("Nhwc", 0) == 0) {
    nhwcBody(*fn, body, op, opset);
  } else {
    matMulBiasBody(*fn, body, op);
  }
  return fn;
}

}  // namespace

const std::vector<std::string>& targetOps() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> out;
    for (const OpInfo& o : kOps) out.emplace_back(o.name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return ops;
}

bool isTargetOp(const std::string& domain, const std::string& op) {
  if (domain != kTargetDomain) return false;
  const auto& ops = targetOps();
  return std::binary_search(ops.begin(), ops.end(), op);
}

StatusOr<int64_t> attachTargetFunctions(ir::Model& model) {
  std::set<std::string> called;
  for (ir::Graph* g : rewrite::allGraphs(model, /*include_functions=*/false)) {
    for (const ir::Node* n : *g) {
      if (isTargetOp(n->domain(), n->opType())) called.insert(n->opType());
    }
  }
  if (called.empty()) return int64_t{0};
  int64_t opset = model.opsetVersion("").value_or(0);
  rewrite::Rewriter rw;
  rw.addOpsetImport(model, kTargetDomain, kTargetDomainVersion);
  int64_t added = 0;
  for (const OpInfo& o : kOps) {
    if (called.count(o.name) == 0) continue;
    bool present = std::any_of(model.functions.begin(), model.functions.end(), [&](const auto& f) {
      return f->domain == kTargetDomain && f->name == o.name;
    });
    if (present) continue;
    if (opset < o.min_opset) {
      return invalidArgument("{}.{} has no decomposition at opset {} (it needs {})", kTargetDomain,
                             o.name, opset, o.min_opset);
    }
    rw.addFunction(model, buildFunction(o.name, opset));
    ++added;
  }
  return added;
}

}  // namespace onnxopt::passes
