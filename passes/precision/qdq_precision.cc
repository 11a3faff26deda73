// Quantization under convert-precision:
//
//   Q(x, s), DQ(q, s)  at opset >= 19   s -> round_T(s), kept when round_T(s) <= 0, infinite, or
//                                       |round_T(s) - s| > 2 u_T s  (u_T: 2^-11 float16, 2^-8
//                                       bfloat16), or (DQ) max|q - zp| * max s > T's largest
//   DQ -> op -> Q      below 19         op float32 with its Q/DQ (a QDQ region)
//   Mul(Cast<to=FLOAT>(MatMulInteger(..)), s)   float32: int32 sums pass float16's range
//   Mul(DynamicQuantizeLinear(x)[1], s)        float32: a product of scales may underflow
#include "qdq_precision.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "onnxopt/ir/constants.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/support/half.h"

namespace onnxopt::passes {
namespace {

/// The largest |q - zp| a quantized type holds (0: not known).
double quantizedSpan(DataType t) {
  switch (t) {
    case DataType::kInt4:
    case DataType::kUint4:
      return 15.0;
    case DataType::kInt8:
    case DataType::kUint8:
      return 255.0;
    case DataType::kInt16:
    case DataType::kUint16:
      return 65535.0;
    case DataType::kInt32:
      return 4294967295.0;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
      return 448.0;
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
      return 57344.0;
    default:
      return 0.0;
  }
}

/// The largest |v| of a constant tensor (nullopt: not a constant of numbers).
std::optional<double> largestMagnitude(const ir::Value* v) {
  std::optional<ir::Tensor> t = ir::constantTensor(v);
  if (!t) return std::nullopt;
  std::optional<int64_t> n = t->numElements();
  if (!n) return std::nullopt;
  double out = 0.0;
  for (int64_t i = 0; i < *n; ++i) {
    std::optional<double> e = pass::elementAsDouble(*t, static_cast<size_t>(i));
    if (!e) return std::nullopt;
    out = std::max(out, std::fabs(*e));
  }
  return out;
}

/// The bound of |q - zp| for DequantizeLinear's input `q` and zero point `zp`: from the
/// constants where they are, else the quantized type's span.
double dequantizedSpan(const ir::Node& dq) {
  const ir::Value* q = dq.input(0);
  std::optional<double> q_max = largestMagnitude(q);
  if (!q_max) return quantizedSpan(q->type().elem_type);
  const ir::Value* zp = dq.numInputs() > 2 ? dq.input(2) : nullptr;
  std::optional<double> zp_max = zp == nullptr ? std::optional<double>(0.0) : largestMagnitude(zp);
  return zp_max ? *q_max + *zp_max : quantizedSpan(q->type().elem_type);
}

constexpr const char* kRuntimeScale = "a quantization scale computed at run time";

/// Why a Q/DQ keeps its scale float32 (empty: it converts).
std::string qdqScaleReason(const ir::Node& n, DataType target) {
  const ir::Value* s = n.numInputs() > 1 ? n.input(1) : nullptr;
  if (s == nullptr || s->type().elem_type != DataType::kFloat) return "";
  std::optional<ir::Tensor> scale = ir::constantTensor(s);
  if (!scale) return kRuntimeScale;
  std::optional<std::vector<double>> values = pass::floatValues(*scale);
  if (!values) return kRuntimeScale;
  const double unit = target == DataType::kFloat16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  double largest = 0.0;
  for (double v : *values) {
    const double r = fromLowPrecision(toLowPrecision(static_cast<float>(v), target, false), target);
    // Zero or infinity would divide by zero or dequantize to zero; a subnormal far down keeps a
    // few bits only, and each dequantized value would be off by its error.
    if (!(r > 0.0) || !std::isfinite(r) || std::fabs(r - v) > 2.0 * unit * v) {
      return kUnrepresentableScale;
    }
    largest = std::max(largest, r);
  }
  if (n.opType() == "DequantizeLinear" && dequantizedSpan(n) * largest > largestFinite(target)) {
    return kDequantizedRange;
  }
  return "";
}

bool isIntegerProduct(const ir::Node* n) {
  return n != nullptr && (n->domain().empty() || n->domain() == "ai.onnx") &&
         (n->opType() == "MatMulInteger" || n->opType() == "ConvInteger");
}

/// A Cast to float of an integer product's int32 sums.
bool castsIntegerSums(const ir::Node* n) {
  return n != nullptr && n->opType() == "Cast" && n->numInputs() == 1 &&
         isIntegerProduct(n->input(0)->producer());
}

/// DynamicQuantizeLinear's y_scale.
bool isDynamicScale(const ir::Value* v) {
  const ir::Node* p = v->producer();
  return p != nullptr && p->opType() == "DynamicQuantizeLinear" && p->numOutputs() > 1 &&
         p->output(1) == v;
}

bool isFloatValue(const ir::Value* v) {
  return v != nullptr && v->type().isTensor() && v->type().elem_type == DataType::kFloat;
}

}  // namespace

bool computeHeavy(const std::string& op) {
  static const std::set<std::string> ops = {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum",
                                            "LSTM",   "GRU",  "RNN",  "Attention"};
  return ops.count(op) > 0;
}

bool isQdq(const ir::Node& n) {
  return (n.domain().empty() || n.domain() == "ai.onnx") &&
         (n.opType() == "QuantizeLinear" || n.opType() == "DequantizeLinear");
}

std::string quantizedKeepReason(const ir::Node& n, DataType target) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return "";
  if (isQdq(n)) return qdqScaleReason(n, target);
  if (n.opType() == "QLinearMatMul") return "a quantized op: its scales stay float32";
  if (castsIntegerSums(&n)) return "an integer product's sums";
  if (n.opType() == "Mul") {
    for (const ir::Value* v : n.inputs()) {
      if (v != nullptr && castsIntegerSums(v->producer())) return "an integer product's sums";
      // A product of scales can fall under float16's normals (0.02 * 0.001).
      if (v != nullptr && isDynamicScale(v)) return "a dynamic quantization scale";
    }
  }
  return "";
}

std::set<const ir::Node*> qdqRegion(const ir::Graph& g, bool io_float32) {
  std::set<const ir::Node*> region;
  std::set<const ir::Node*> dequantized;  // region nodes reached from a DequantizeLinear
  std::vector<const ir::Node*> order;
  for (const ir::Node* n : g) {
    order.push_back(n);
    if (isQdq(*n) || !n->subgraphs().empty()) continue;
    bool reads = false, inside = true, from_dq = false;
    for (const ir::Value* v : n->inputs()) {
      if (!isFloatValue(v) || ir::constantTensor(v)) continue;
      const ir::Node* p = v->producer();
      const bool dq = p != nullptr && isQdq(*p) && p->opType() == "DequantizeLinear";
      const bool input = p == nullptr && io_float32;
      reads = true;
      from_dq = from_dq || dq || dequantized.count(p) > 0;
      inside = inside && (dq || (!computeHeavy(n->opType()) && (input || region.count(p) > 0)));
    }
    if (!reads || !inside) continue;
    region.insert(n);
    if (from_dq) dequantized.insert(n);
  }
  // Consumers first: a node leaves the region where one of its float outputs is read outside it,
  // or where it neither comes from a DequantizeLinear nor leads to a QuantizeLinear (a float32
  // path between graph inputs and outputs is none of this rule's business).
  std::set<const ir::Node*> quantized;  // region nodes leading to a QuantizeLinear
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Node* n = *it;
    if (region.count(n) == 0) continue;
    bool kept = true, to_q = false;
    for (const ir::Value* o : n->outputs()) {
      if (!isFloatValue(o)) continue;
      if (o->isGraphOutput() && !(io_float32 && dequantized.count(n) > 0)) kept = false;
      for (const ir::Use& u : o->uses()) {
        const bool quantizes = u.user->opType() == "QuantizeLinear" && isQdq(*u.user);
        to_q = to_q || quantizes || quantized.count(u.user) > 0;
        if (!quantizes && region.count(u.user) == 0 && u.user != g.returnNode()) kept = false;
      }
    }
    if (to_q) quantized.insert(n);
    if (!kept || !(to_q || dequantized.count(n) > 0)) region.erase(n);
  }
  return region;
}

}  // namespace onnxopt::passes
