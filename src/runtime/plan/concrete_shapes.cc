// Concrete shape rules (concrete_shapes.h), each the ONNX definition of the op's output shape.
#include "concrete_shapes.h"

#include <algorithm>
#include <cmath>

#include "onnxopt/ir/op_traits.h"

namespace onnxopt::runtime::plan_detail {
namespace {

using Dims = std::vector<int64_t>;

bool isOneOf(const std::string& op, std::initializer_list<const char*> ops) {
  return std::any_of(ops.begin(), ops.end(), [&](const char* o) { return op == o; });
}

}  // namespace

bool isUnaryElementwise(const std::string& op) {
  // Cast too is elementwise, but its output may have another element size: it keeps input 0's
  // shape (keepsShape) without being offered an input's buffer.
  const ir::OpTraits* t = ir::opTraits("", op);
  return t != nullptr && t->elementwise == ir::Elementwise::kUnary &&
         !t->has(ir::OpTrait::kConverts);
}

bool broadcasts(const std::string& op) {
  return ir::broadcasts("", op);
}

bool isElementwise(const std::string& op) {
  return isUnaryElementwise(op) || broadcasts(op);
}

namespace {

/// Ops whose output 0 has input 0's shape: the unary elementwise ones and these.
bool keepsShape(const std::string& op) {
  return ir::isElementwise("", op, ir::Elementwise::kUnary) ||
         isOneOf(op, {"CastLike", "Identity", "Dropout", "Softmax", "LogSoftmax", "Hardmax",
                      "LayerNormalization", "RMSNormalization", "SimplifiedLayerNormalization",
                      "BatchNormalization", "InstanceNormalization", "GroupNormalization",
                      "LpNormalization", "CumSum", "QuantizeLinear", "DequantizeLinear"});
}

std::optional<Dims> broadcast(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()), 1);
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t x = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    int64_t y = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[k] = x == 1 ? y : x;
  }
  return out;
}

int64_t product(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<Dims> intsOf(const kernels::HostTensor* t) {
  if (t == nullptr) return std::nullopt;
  Dims out;
  for (int64_t i = 0; i < t->numElements(); ++i) {
    if (t->dtype == DataType::kInt64) {
      out.push_back(t->get<int64_t>(i));
    } else if (t->dtype == DataType::kInt32) {
      out.push_back(t->get<int32_t>(i));
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<double> scalarOf(const kernels::HostTensor* t) {
  if (t == nullptr || t->numElements() != 1) return std::nullopt;
  switch (t->dtype) {
    case DataType::kInt64:
      return static_cast<double>(t->get<int64_t>(0));
    case DataType::kInt32:
      return t->get<int32_t>(0);
    case DataType::kFloat:
      return t->get<float>(0);
    case DataType::kDouble:
      return t->get<double>(0);
    default:
      return std::nullopt;
  }
}

std::optional<Dims> reshape(const Dims& in, Dims t, bool allowzero) {
  int64_t known = 1;
  int infer = -1;
  for (size_t d = 0; d < t.size(); ++d) {
    if (t[d] == 0 && !allowzero) {
      if (d >= in.size()) return std::nullopt;
      t[d] = in[d];
    }
    if (t[d] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(d);
    } else if (t[d] < 0) {
      return std::nullopt;
    } else {
      known *= t[d];
    }
  }
  if (infer >= 0) {
    if (known == 0 || product(in) % known != 0) return std::nullopt;
    t[static_cast<size_t>(infer)] = product(in) / known;
  }
  if (product(t) != product(in)) return std::nullopt;
  return t;
}

}  // namespace

std::optional<Dims> concreteOutputDims(const std::string& op, const kernels::KernelAttrs& attrs,
                                       const std::vector<KnownInput>& inputs) {
  auto dimsAt = [&](size_t i) -> const Dims* {
    return i < inputs.size() ? inputs[i].dims : nullptr;
  };
  auto valueAt = [&](size_t i) -> const kernels::HostTensor* {
    return i < inputs.size() ? inputs[i].value : nullptr;
  };
  if (keepsShape(op)) {
    if (const Dims* d = dimsAt(0)) return *d;
    return std::nullopt;
  }
  if (broadcasts(op)) {
    if (inputs.empty()) return std::nullopt;
    Dims out;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Dims* d = dimsAt(i);
      if (d == nullptr) return std::nullopt;
      auto b = broadcast(out, *d);
      if (!b) return std::nullopt;
      out = *b;
    }
    return out;
  }
  if (op == "ConstantOfShape") return intsOf(valueAt(0));
  if (op == "Concat") {
    if (inputs.empty() || dimsAt(0) == nullptr) return std::nullopt;
    Dims out = *dimsAt(0);
    auto rank = static_cast<int64_t>(out.size());
    int64_t axis = attrs.getInt("axis", 0);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    auto a = static_cast<size_t>(axis);
    for (size_t i = 1; i < inputs.size(); ++i) {
      const Dims* d = dimsAt(i);
      if (d == nullptr || d->size() != out.size()) return std::nullopt;
      for (size_t k = 0; k < out.size(); ++k) {
        if (k != a && (*d)[k] != out[k]) return std::nullopt;
      }
      out[a] += (*d)[a];
    }
    return out;
  }
  if (op == "Range") {
    auto start = scalarOf(valueAt(0)), limit = scalarOf(valueAt(1)), delta = scalarOf(valueAt(2));
    if (!start || !limit || !delta || *delta == 0) return std::nullopt;
    double n = std::ceil((*limit - *start) / *delta);
    return Dims{static_cast<int64_t>(std::max(n, 0.0))};
  }
  const Dims* in = dimsAt(0);
  if (in == nullptr) return std::nullopt;
  if (op == "Reshape") {
    auto t = intsOf(valueAt(1));
    if (!t) return std::nullopt;
    return reshape(*in, *t, attrs.getInt("allowzero", 0) != 0);
  }
  if (op == "Expand") {
    auto t = intsOf(valueAt(1));
    if (!t) return std::nullopt;
    return broadcast(*in, *t);
  }
  if (op == "Tile") {
    auto r = intsOf(valueAt(1));
    if (!r || r->size() != in->size()) return std::nullopt;
    Dims out = *in;
    for (size_t d = 0; d < out.size(); ++d) out[d] *= (*r)[d];
    return out;
  }
  if (op == "Resize" && !attrs.has("axes") &&
      attrs.getString("keep_aspect_ratio_policy", "stretch") == "stretch") {
    // Inputs X, roi, scales, sizes (opset 10: X, scales): sizes when given, else
    // floor(dim * scale).
    const kernels::HostTensor* sizes = inputs.size() > 3 ? valueAt(3) : nullptr;
    if (auto s = intsOf(sizes); s && s->size() == in->size()) return *s;
    const kernels::HostTensor* scales = valueAt(inputs.size() == 2 ? 1 : 2);
    if (scales == nullptr || scales->dtype != DataType::kFloat ||
        scales->numElements() != static_cast<int64_t>(in->size())) {
      return std::nullopt;
    }
    Dims out = *in;
    for (size_t d = 0; d < out.size(); ++d) {
      float scale = scales->get<float>(static_cast<int64_t>(d));
      if (!(scale > 0)) return std::nullopt;
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(out[d]) * scale));
    }
    return out;
  }
  if (op == "TopK") {
    auto k = intsOf(valueAt(1));
    auto rank = static_cast<int64_t>(in->size());
    int64_t axis = attrs.getInt("axis", -1);
    if (axis < 0) axis += rank;
    if (!k || k->size() != 1 || axis < 0 || axis >= rank || (*k)[0] < 0 ||
        (*k)[0] > (*in)[static_cast<size_t>(axis)]) {
      return std::nullopt;
    }
    Dims out = *in;
    out[static_cast<size_t>(axis)] = (*k)[0];
    return out;
  }
  return std::nullopt;
}

}  // namespace onnxopt::runtime::plan_detail
