// The function library of ai.onnxopt (include/onnxopt/passes/target_ops.h): each op's standard
// decomposition, built at the model's default opset.
//
//   MatMulBias(A, B, bias) => (Y)                 { t = MatMul(A, B); Y = Add(t, bias) }
//   MatMulBiasRelu(A, B, bias) => (Y)             { t = MatMul(A, B); u = Add(t, bias); Y = Relu(u) }
//   MatMulBiasGelu<approximate>(A, B, bias) => (Y)
//                                   { t = MatMul(A, B); u = Add(t, bias); Y = Gelu<@approximate>(u) }
//   SkipLayerNormalization<axis, epsilon>(X, Skip, Scale, B) => (Y, Sum)
//                  { Sum = Add(X, Skip); Y = LayerNormalization<@axis, @epsilon>(Sum, Scale, B) }
#include "onnxopt/passes/target_ops.h"

#include <algorithm>
#include <memory>
#include <set>

#include "onnxopt/rewrite/pattern.h"
#include "onnxopt/rewrite/rewriter.h"

namespace onnxopt::passes {
namespace {

struct OpInfo {
  const char* name;
  int64_t min_opset;  ///< of the default domain, for the decomposition
};

constexpr OpInfo kOps[] = {
    {"MatMulBias", 1},
    {"MatMulBiasGelu", 20},
    {"MatMulBiasRelu", 1},
    {"SkipLayerNormalization", 17},
};

/// A function body under construction: untyped inputs, nodes appended in order.
class Body {
 public:
  explicit Body(ir::Function& fn) : fn_(fn) { rw_.setInsertionPointToEnd(*fn_.body); }

  ir::Value* input(const std::string& name) { return rw_.addGraphInput(*fn_.body, name, {}); }

  /// Appends `op`(inputs) with one output named `out`, and attributes that take the caller's.
  ir::Value* node(const std::string& op, const std::vector<ir::Value*>& inputs,
                  const std::string& out,
                  const std::vector<std::pair<std::string, ir::Attribute::Kind>>& refs = {}) {
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

  void output(ir::Value* v) { rw_.addGraphOutput(*fn_.body, v); }

 private:
  ir::Function& fn_;
  rewrite::Rewriter rw_;
};

std::unique_ptr<ir::Function> buildFunction(const std::string& op, int64_t opset) {
  auto fn = std::make_unique<ir::Function>();
  fn->name = op;
  fn->domain = kTargetDomain;
  fn->opset_imports = {{"", opset}};
  fn->body = std::make_unique<ir::Graph>();
  Body body(*fn);
  if (op == "SkipLayerNormalization") {
    fn->attribute_names = {"axis", "epsilon"};
    fn->doc_string = "Y = LayerNormalization(X + Skip, Scale, B); Sum = X + Skip";
    ir::Value* x = body.input("X");
    ir::Value* skip = body.input("Skip");
    ir::Value* scale = body.input("Scale");
    ir::Value* bias = body.input("B");
    ir::Value* sum = body.node("Add", {x, skip}, "Sum");
    ir::Value* y =
        body.node("LayerNormalization", {sum, scale, bias}, "Y",
                  {{"axis", ir::Attribute::Kind::kInt}, {"epsilon", ir::Attribute::Kind::kFloat}});
    body.output(y);
    body.output(sum);
    return fn;
  }
  // The MatMulBias family.
  ir::Value* a = body.input("A");
  ir::Value* b = body.input("B");
  ir::Value* bias = body.input("bias");
  ir::Value* t = body.node("MatMul", {a, b}, "product");
  if (op == "MatMulBias") {
    fn->doc_string = "Y = MatMul(A, B) + bias";
    body.output(body.node("Add", {t, bias}, "Y"));
    return fn;
  }
  ir::Value* u = body.node("Add", {t, bias}, "biased");
  if (op == "MatMulBiasRelu") {
    fn->doc_string = "Y = Relu(MatMul(A, B) + bias)";
    body.output(body.node("Relu", {u}, "Y"));
  } else {
    fn->attribute_names = {"approximate"};
    fn->doc_string = "Y = Gelu(MatMul(A, B) + bias), approximate as the call says";
    body.output(body.node("Gelu", {u}, "Y", {{"approximate", ir::Attribute::Kind::kString}}));
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
