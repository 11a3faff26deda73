// quantize-weights: constant float weights of MatMul and Gemm (and, on request, Gather embedding
// tables) become int4 or int8 blocks dequantized in the graph (weight-only quantization, RTN).
//
//   %y = MatMul(%x, %W: T[K,N])   ==>  %W' = DequantizeLinear<axis=0, block_size=B>(%q, %s [, %z])
//                                      %y  = MatMul(%x, %W')
//   symmetric:   s[b,n] = max_k |W[k,n]| / qmax           q = clamp(round(W / s), qmin, qmax)
//   asymmetric:  s[b,n] = (max(W,0) - min(W,0)) / (2^bits - 1),  z = clamp(round(-min(W,0) / s))
//                q = clamp(round(W / s) + z, 0, 2^bits - 1)
//   for k in block b = k / B; so that W' = (q - z) * s, and |W' - W| <= s / 2 inside the range.
//   (an all-zero block, or one whose s flushes to zero in T, takes s = 1).
//
// The block runs along the reduction axis: a MatMul weight's dim -2 (axis rank-2), a Gemm's B dim
// 0, or 1 with transB=1, an embedding table's hidden dim (Gather<axis=0> of a T[V,H] table: axis
// 1). T is float, float16 or bfloat16; s has type T (rounded to T before q is computed, so q is
// what QuantizeLinear(W, s, z) gives), q is int4 / int8 (symmetric, no zero point) or uint4 /
// uint8 (asymmetric, z of q's type); int4 and uint4 are packed two to a byte by the exporter's
// rule (the first element in the low nibble). This is standard DequantizeLinear-21 blocked
// quantization: the model must import ai.onnx 21 or later (`--target-opset 21` raises it), and
// its IR version becomes at least 10 (the 4-bit types).
//
// A weight (an initializer of any graph of the model but function bodies) is quantized when every
// reader takes it along the same axis, readers in subgraphs too (the DequantizeLinear goes in the
// weight's graph, before the first node that reads it or holds a subgraph that does); its
// reduction dim must be a multiple of B and at least B (else it stays float and a warning names
// it). The last MatMul/Gemm of the main graph (an LLM's lm_head) is quantized
// unless lm-head=false; `exclude` globs (* and ?) match node or initializer names.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include <fmt/ranges.h>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/support/half.h"

namespace onnxopt::passes {
namespace {

using ir::DataType;

/// ai.onnx opset of DequantizeLinear-21 (block_size, int4/uint4); IR version of the 4-bit types.
constexpr int64_t kBlockedOpset = 21;
constexpr int64_t kFourBitIrVersion = 10;

/// Whether `name` matches the glob `pattern` (* any run, ? any one character).
bool globMatch(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

/// The quantized integer type: its range and whether it carries a zero point.
struct QuantFormat {
  DataType type;
  int64_t qmin;
  int64_t qmax;
  bool zero_point;
};

QuantFormat formatFor(int bits, bool symmetric) {
  if (bits == 4) {
    return symmetric ? QuantFormat{DataType::kInt4, -8, 7, false}
                     : QuantFormat{DataType::kUint4, 0, 15, true};
  }
  return symmetric ? QuantFormat{DataType::kInt8, -128, 127, false}
                   : QuantFormat{DataType::kUint8, 0, 255, true};
}

/// A tensor of integer type `type` holding `values` (4-bit types packed, low nibble first).
ir::Tensor makeIntTensor(DataType type, std::vector<int64_t> dims,
                         const std::vector<int16_t>& values) {
  bool packed = type == DataType::kInt4 || type == DataType::kUint4;
  std::string bytes(packed ? (values.size() + 1) / 2 : values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    auto bits = static_cast<uint8_t>(values[i]);
    if (packed) {
      bytes[i / 2] = static_cast<char>(static_cast<uint8_t>(bytes[i / 2]) |
                                       ((bits & 0x0F) << (i % 2 == 0 ? 0 : 4)));
    } else {
      bytes[i] = static_cast<char>(bits);
    }
  }
  ir::Tensor t(type, std::move(dims));
  t.setBytes(std::move(bytes));
  return t;
}

/// Element i of a float, float16 or bfloat16 tensor, read in place: an LLM's largest weights hold
/// hundreds of millions of elements, too many to copy as doubles.
float elementAt(const ir::Tensor& t, size_t i) {
  if (t.dtype() == DataType::kFloat) {
    float f = 0;
    std::memcpy(&f, t.data() + i * sizeof(float), sizeof f);
    return f;
  }
  uint16_t bits = 0;
  std::memcpy(&bits, t.data() + i * sizeof bits, sizeof bits);
  return fromLowPrecision(bits, t.dtype());
}

/// The quantized weight, its scales and (asymmetric) zero points.
struct Quantized {
  ir::Tensor q;
  ir::Tensor scale;
  std::optional<ir::Tensor> zero_point;
};

/// `w` quantized in blocks of `block` along `axis` (its dim there a multiple of `block`).
/// Element (o, k, j) of w seen as [outer, K, inner] reads scale (o, k / block, j).
std::optional<Quantized> quantizeBlocks(const ir::Tensor& w, int64_t axis, int64_t block,
                                        const QuantFormat& f) {
  if (w.expectedByteSize() != w.byteSize()) return std::nullopt;
  const std::vector<int64_t>& dims = w.dims();
  int64_t k_dim = dims[static_cast<size_t>(axis)], blocks = k_dim / block, outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < dims.size(); ++d) inner *= dims[d];
  auto at = [&](int64_t o, int64_t k, int64_t j) { return (o * k_dim + k) * inner + j; };
  auto block_of = [&](int64_t o, int64_t k, int64_t j) {
    return (o * blocks + k / block) * inner + j;
  };
  size_t num_blocks = static_cast<size_t>(outer * blocks * inner);
  std::vector<double> lo(num_blocks, 0.0), hi(num_blocks, 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < k_dim; ++k) {
      for (int64_t j = 0; j < inner; ++j) {
        double v = elementAt(w, static_cast<size_t>(at(o, k, j)));
        if (!std::isfinite(v)) return std::nullopt;
        auto b = static_cast<size_t>(block_of(o, k, j));
        lo[b] = std::min(lo[b], v);
        hi[b] = std::max(hi[b], v);
      }
    }
  }
  // The range always holds 0 (exactly representable: zero padding, ReLU'd weights stay exact).
  std::vector<double> scales(num_blocks);
  for (size_t b = 0; b < num_blocks; ++b) {
    scales[b] = f.zero_point ? (hi[b] - lo[b]) / static_cast<double>(f.qmax - f.qmin)
                             : std::max(-lo[b], hi[b]) / static_cast<double>(f.qmax);
  }
  std::vector<int64_t> scale_dims = dims;
  scale_dims[static_cast<size_t>(axis)] = blocks;
  ir::Tensor scale = pass::makeFloatTensor(w.dtype(), scale_dims, scales);
  auto rounded = pass::floatValues(scale);  // q is computed against the scale as stored
  if (std::count(rounded->begin(), rounded->end(), 0.0) > 0) {
    // An all-zero block (or one whose scale flushes to zero in T) takes scale 1, so that
    // QuantizeLinear(W, s) is defined and gives its q (0) too.
    for (size_t b = 0; b < num_blocks; ++b) scales[b] = (*rounded)[b] == 0.0 ? 1.0 : scales[b];
    scale = pass::makeFloatTensor(w.dtype(), scale_dims, scales);
    rounded = pass::floatValues(scale);
  }
  std::vector<int16_t> zero(num_blocks, 0);
  for (size_t b = 0; b < num_blocks; ++b) {
    auto s = static_cast<float>((*rounded)[b]);
    if (!std::isfinite(s)) return std::nullopt;
    if (f.zero_point) {
      double z = std::nearbyint(static_cast<double>(static_cast<float>(-lo[b]) / s));
      zero[b] = static_cast<int16_t>(std::clamp(z, 0.0, static_cast<double>(f.qmax)));
    }
  }
  std::vector<int16_t> q(static_cast<size_t>(outer * k_dim * inner));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < k_dim; ++k) {
      for (int64_t j = 0; j < inner; ++j) {
        auto b = static_cast<size_t>(block_of(o, k, j));
        auto s = static_cast<float>((*rounded)[b]);
        auto i = static_cast<size_t>(at(o, k, j));
        // As QuantizeLinear computes it: x / s in float, rounded half to even, plus z, clamped.
        double r = std::nearbyint(static_cast<double>(elementAt(w, i) / s));
        r += static_cast<double>(zero[b]);
        q[i] = static_cast<int16_t>(
            std::clamp(r, static_cast<double>(f.qmin), static_cast<double>(f.qmax)));
      }
    }
  }
  Quantized out{makeIntTensor(f.type, dims, q), std::move(scale), std::nullopt};
  if (f.zero_point) out.zero_point = makeIntTensor(f.type, scale_dims, zero);
  return out;
}

/// A reader of a weight and the weight's reduction axis there; kNotProduct for a reader that
/// cannot take it dequantized (another op, another operand, the graph's outputs), kLmHead for the
/// lm_head that lm-head=false keeps float.
constexpr int64_t kNotProduct = -1;
constexpr int64_t kLmHead = -2;
struct Reader {
  ir::Node* node;
  int64_t axis;
};

/// Why a weight stays float, as the statistics and the warning name it.
enum class Skip { kNone, kExcluded, kNotMultiple, kOtherReaders };

class QuantizeWeightsPass final : public pass::GraphPass {
 public:
  std::string id() const override { return "quantize-weights"; }
  std::string summary() const override {
    return "Quantize constant MatMul/Gemm weights to int4 or int8 blocks along the reduction axis "
           "(round to nearest), dequantized by DequantizeLinear-21 (opset 21+)";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"weights", "string", "", "int4 or int8 (required)"},
            {"block-size", "int", "32", "elements per scale along the reduction axis (2 or more)"},
            {"symmetric", "bool", "true",
             "signed values, no zero point (false: unsigned values with a zero point per block)"},
            {"exclude", "string", "",
             "globs (* and ?) of node or weight names left float, comma-separated (quoted)"},
            {"lm-head", "bool", "true", "quantize the main graph's last MatMul/Gemm too"},
            {"embeddings", "bool", "false",
             "quantize Gather<axis=0> embedding tables (rank 2) along their hidden dim"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name == "weights") {
      if (value != "int4" && value != "int8") {
        return invalidArgument("quantize-weights: weights must be int4 or int8, not '{}'", value);
      }
      bits_ = value == "int4" ? 4 : 8;
      return Status::ok();
    }
    if (name == "block-size") {
      ASSIGN_OR_RETURN(block_, parseInt(name, value));
      if (block_ < 2) return invalidArgument("quantize-weights: block-size must be 2 or more");
      return Status::ok();
    }
    if (name == "symmetric") {
      ASSIGN_OR_RETURN(symmetric_, parseBool(name, value));
      return Status::ok();
    }
    if (name == "exclude") {
      exclude_.clear();
      std::stringstream in(value);
      for (std::string item; std::getline(in, item, ',');) {
        if (!item.empty()) exclude_.push_back(item);
      }
      return Status::ok();
    }
    if (name == "lm-head") {
      ASSIGN_OR_RETURN(lm_head_, parseBool(name, value));
      return Status::ok();
    }
    if (name == "embeddings") {
      ASSIGN_OR_RETURN(embeddings_, parseBool(name, value));
      return Status::ok();
    }
    return Pass::setOption(name, value);
  }

 protected:
  StatusOr<bool> runOnGraph(ir::Graph& graph, ir::Model& model, rewrite::Rewriter& rw,
                            pass::PassContext& ctx) override {
    if (bits_ == 0) {
      return invalidArgument("quantize-weights: the type is not set (weights=int4 or int8)");
    }
    if (!inModelGraph(graph, model)) return false;  // function bodies: no weights of their own
    const ir::Node* lm_head = lm_head_ ? nullptr : lastProduct(model);
    std::vector<ir::Value*> order;
    std::map<ir::Value*, std::vector<Reader>> readers;
    std::vector<ir::Value*> initializers = graph.initializers();  // quantizing erases from it
    for (ir::Value* w : initializers) {
      if (!isCandidate(*w)) continue;
      for (const ir::Use& use : w->uses()) {
        auto axis = use.user == lm_head ? kLmHead : readerAxis(*use.user, use.index, *w);
        readers[w].push_back({use.user, axis.value_or(kNotProduct)});
      }
      bool any = std::any_of(readers[w].begin(), readers[w].end(),
                             [](const Reader& r) { return r.axis != kNotProduct; });
      if (any) order.push_back(w);  // a weight no product reads is none of this pass's business
    }
    std::vector<std::string> not_multiple;
    bool changed = false;
    for (ir::Value* w : order) {
      Skip why = skipReason(w, readers[w]);
      if (why == Skip::kNotMultiple) {
        not_multiple.push_back(
            fmt::format("{} ({} along axis {})", w->name(),
                        w->initializer()->dims()[static_cast<size_t>(readers[w].front().axis)],
                        readers[w].front().axis));
      }
      if (why != Skip::kNone) {
        bump(why == Skip::kExcluded      ? "skipped-excluded"
             : why == Skip::kNotMultiple ? "skipped-block-size"
                                         : "skipped-other-readers");
        continue;
      }
      RETURN_IF_ERROR(requireOpset(model, *readers[w].front().node));
      if (quantizeWeight(w, readers[w], model, rw)) changed = true;
    }
    if (!not_multiple.empty()) {
      report(ctx.diagnostics,
             {Severity::kWarning, "",
              fmt::format("quantize-weights: {} weight(s) stay float: the reduction dim is not a "
                          "multiple of the block size {} (or smaller): {}",
                          not_multiple.size(), block_, fmt::join(not_multiple, ", "))});
    }
    return changed;
  }

 private:
  static bool inModelGraph(const ir::Graph& graph, const ir::Model& model) {
    const ir::Graph* top = &graph;
    while (top->parentGraph() != nullptr) top = top->parentGraph();
    return top == model.graph.get();
  }

  /// Whether `w` is a weight this pass may quantize: a float, float16 or bfloat16 initializer
  /// (not an overridable graph input) of rank 2 or more.
  static bool isCandidate(const ir::Value& w) {
    if (w.kind() != ir::Value::Kind::kInitializer || w.initializer() == nullptr) return false;
    DataType dt = w.initializer()->dtype();
    return (dt == DataType::kFloat || dt == DataType::kFloat16 || dt == DataType::kBfloat16) &&
           w.initializer()->dims().size() >= 2;
  }

  /// The reduction axis of weight `w` as operand `index` of `n`, when `n` is a product (or, with
  /// embeddings, a Gather) that can read it dequantized; nullopt otherwise (the graph's return
  /// node too: a weight that is a graph output).
  std::optional<int64_t> readerAxis(const ir::Node& n, size_t index, const ir::Value& w) const {
    if (!n.domain().empty()) return std::nullopt;
    auto rank = static_cast<int64_t>(w.initializer()->dims().size());
    if (n.opType() == "MatMul" && index == 1) return rank - 2;
    if (n.opType() == "Gemm" && index == 1 && rank == 2) {
      return pass::attrInt(n, "transB", 0) != 0 ? 1 : 0;
    }
    if (n.opType() == "Gather" && index == 0 && embeddings_ && rank == 2 &&
        pass::attrInt(n, "axis", 0) == 0) {
      return 1;
    }
    return std::nullopt;
  }

  /// The last MatMul or Gemm of the main graph reading an initializer as B (an LLM's lm_head).
  static const ir::Node* lastProduct(const ir::Model& model) {
    for (const ir::Node* m = model.graph->lastNode(); m != nullptr; m = m->prev()) {
      if ((m->opType() == "MatMul" || m->opType() == "Gemm") && m->domain().empty() &&
          m->input(1) != nullptr && m->input(1)->initializer() != nullptr) {
        return m;
      }
    }
    return nullptr;
  }

  Skip skipReason(const ir::Value* w, const std::vector<Reader>& readers) const {
    for (const std::string& p : exclude_) {
      if (globMatch(p, w->name())) return Skip::kExcluded;
      for (const Reader& r : readers) {
        if (globMatch(p, r.node->name())) return Skip::kExcluded;
      }
    }
    for (const Reader& r : readers) {
      if (r.axis == kLmHead) return Skip::kExcluded;
    }
    for (const Reader& r : readers) {
      if (r.axis < 0 || r.axis != readers.front().axis) return Skip::kOtherReaders;
    }
    int64_t k = w->initializer()->dims()[static_cast<size_t>(readers.front().axis)];
    if (k < block_ || k % block_ != 0) return Skip::kNotMultiple;
    return Skip::kNone;
  }

  static Status requireOpset(const ir::Model& model, const ir::Node& reader) {
    int64_t opset = model.opsetVersion("").value_or(0);
    if (opset >= kBlockedOpset) return Status::ok();
    return invalidArgument(
        "node '{}': blocked DequantizeLinear needs ai.onnx opset {} and the "
        "model imports opset {} (add --target-opset {} to raise it first)",
        reader.name().empty() ? reader.output(0)->name() : reader.name(), kBlockedOpset, opset,
        kBlockedOpset);
  }

  /// The first node of `graph` that reads a weight of it through `readers` or holds a subgraph
  /// that does: the dequantized weight must be defined before it.
  static ir::Node* firstReader(const ir::Graph& graph, const std::vector<Reader>& readers) {
    std::set<const ir::Node*> anchors;
    for (const Reader& r : readers) {
      const ir::Node* n = r.node;
      while (n->owningGraph() != &graph) n = n->owningGraph()->parentNode();
      anchors.insert(n);
    }
    for (ir::Node* n : graph) {
      if (anchors.count(n)) return n;
    }
    ONNXOPT_CHECK(false, "quantize-weights: a reader outside the weight's graph");
    return nullptr;
  }

  /// Replaces `w` by DequantizeLinear(q, s[, z]) before its first reader; false when its values
  /// are not all finite (it stays float).
  bool quantizeWeight(ir::Value* w, const std::vector<Reader>& readers, ir::Model& model,
                      rewrite::Rewriter& rw) {
    const ir::Tensor& t = *w->initializer();
    QuantFormat f = formatFor(bits_, symmetric_);
    auto quantized = quantizeBlocks(t, readers.front().axis, block_, f);
    if (!quantized) {
      bump("skipped-not-finite");
      return false;
    }
    ir::Graph& graph = *w->owningGraph();
    std::string base = w->name().empty() ? "weight" : w->name();
    int64_t before = static_cast<int64_t>(t.byteSize());
    int64_t after =
        static_cast<int64_t>(quantized->q.byteSize() + quantized->scale.byteSize()) +
        (quantized->zero_point ? static_cast<int64_t>(quantized->zero_point->byteSize()) : 0);
    std::vector<ir::Value*> inputs = {
        rw.createInitializer(graph, base + "_q", std::move(quantized->q)),
        rw.createInitializer(graph, base + "_scale", std::move(quantized->scale))};
    if (quantized->zero_point) {
      inputs.push_back(
          rw.createInitializer(graph, base + "_zero_point", std::move(*quantized->zero_point)));
    }
    rw.setInsertionPoint(firstReader(graph, readers));
    ir::Node* dq = rw.createNode("DequantizeLinear", "", inputs, std::vector<ir::Type>{w->type()});
    rw.setAttribute(dq, pass::intAttr("axis", readers.front().axis));
    rw.setAttribute(dq, pass::intAttr("block_size", block_));
    rw.replaceAllUsesWith(w, dq->output(0));
    rw.eraseInitializer(w);
    rw.setName(dq->output(0), base);
    model.ir_version = std::max(model.ir_version, kFourBitIrVersion);
    bump("weights-quantized");
    bump("weight-bytes-before", before);
    bump("weight-bytes-after", after);
    return true;
  }

  int bits_ = 0;
  int64_t block_ = 32;
  bool symmetric_ = true;
  std::vector<std::string> exclude_;
  bool lm_head_ = true;
  bool embeddings_ = false;
};

}  // namespace

std::unique_ptr<pass::Pass> createQuantizeWeightsPass() {
  return std::make_unique<QuantizeWeightsPass>();
}

}  // namespace onnxopt::passes
