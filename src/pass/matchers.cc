#include "onnxopt/pass/matchers.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "onnxopt/support/bytes.h"

#include "onnxopt/support/half.h"

namespace onnxopt::pass {

std::optional<std::vector<int64_t>> constantInts(const ir::Value* value) {
  auto t = ir::constantTensor(value);
  if (!t || (t->dtype() != ir::DataType::kInt64 && t->dtype() != ir::DataType::kInt32)) {
    return std::nullopt;
  }
  auto n = t->numElements();
  if (!n) return std::nullopt;
  auto ints = ir::tensorInts(*t);
  if (static_cast<int64_t>(ints.size()) != *n) return std::nullopt;
  return ints;
}

std::optional<double> elementAsDouble(const ir::Tensor& t, size_t i) {
  const uint8_t* p = t.data();
  auto within = [&](size_t width) { return (i + 1) * width <= t.byteSize(); };
  switch (t.dtype()) {
    case ir::DataType::kFloat:
      if (within(4)) return loadUnaligned<float>(p + 4 * i);
      break;
    case ir::DataType::kDouble:
      if (within(8)) return loadUnaligned<double>(p + 8 * i);
      break;
    case ir::DataType::kFloat16:
      if (within(2)) return halfToFloat(loadUnaligned<uint16_t>(p + 2 * i));
      break;
    case ir::DataType::kBfloat16:
      if (within(2)) return bfloat16ToFloat(loadUnaligned<uint16_t>(p + 2 * i));
      break;
    case ir::DataType::kInt8:
      if (within(1)) return loadUnaligned<int8_t>(p + i);
      break;
    case ir::DataType::kUint8:
      if (within(1)) return loadUnaligned<uint8_t>(p + i);
      break;
    case ir::DataType::kBool:
      if (within(1)) return loadUnaligned<uint8_t>(p + i);
      break;
    case ir::DataType::kInt16:
      if (within(2)) return loadUnaligned<int16_t>(p + 2 * i);
      break;
    case ir::DataType::kUint16:
      if (within(2)) return loadUnaligned<uint16_t>(p + 2 * i);
      break;
    case ir::DataType::kInt32:
      if (within(4)) return loadUnaligned<int32_t>(p + 4 * i);
      break;
    case ir::DataType::kUint32:
      if (within(4)) return loadUnaligned<uint32_t>(p + 4 * i);
      break;
    case ir::DataType::kInt64:
      if (within(8)) return static_cast<double>(loadUnaligned<int64_t>(p + 8 * i));
      break;
    case ir::DataType::kUint64:
      if (within(8)) return static_cast<double>(loadUnaligned<uint64_t>(p + 8 * i));
      break;
    default:
      break;
  }
  return std::nullopt;
}

bool allElementsEqual(const ir::Tensor& t, double x) {
  auto n = t.numElements();
  if (!n || *n == 0) return false;
  for (int64_t i = 0; i < *n; ++i) {
    auto v = elementAsDouble(t, static_cast<size_t>(i));
    if (!v || *v != x) return false;
  }
  return true;
}

bool allSignedZeros(const ir::Tensor& t, bool negative) {
  auto n = t.numElements();
  if (!n || *n == 0) return false;
  for (int64_t i = 0; i < *n; ++i) {
    auto v = elementAsDouble(t, static_cast<size_t>(i));
    if (!v || *v != 0.0 || std::signbit(*v) != negative) return false;
  }
  return true;
}

bool attributesEqual(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.name != b.name || a.kind != b.kind || a.ref_attr_name != b.ref_attr_name) return false;
  if (!a.graphs.empty() || !b.graphs.empty()) return false;
  if (!a.sparse_tensors.empty() || !b.sparse_tensors.empty()) return false;
  if (a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (!tensorsEqual(a.tensors[i], b.tensors[i])) return false;
  }
  // Floats compare bitwise: NaN attributes are equal to themselves, -0 differs from 0.
  auto same_bits = [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  if (!same_bits(a.f, b.f) || a.floats.size() != b.floats.size()) return false;
  for (size_t i = 0; i < a.floats.size(); ++i) {
    if (!same_bits(a.floats[i], b.floats[i])) return false;
  }
  return a.i == b.i && a.s == b.s && a.ints == b.ints && a.strings == b.strings &&
         a.types == b.types;
}

std::optional<std::vector<int64_t>> staticShape(const ir::Value* value) {
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : *value->type().shape) {
    if (!d.isKnown()) return std::nullopt;
    dims.push_back(d.value);
  }
  return dims;
}

bool sameKnownShape(const ir::Value* a, const ir::Value* b) {
  if (a == nullptr || b == nullptr || !a->type().isTensor() || !b->type().isTensor()) return false;
  const ir::Shape& sa = a->type().shape;
  const ir::Shape& sb = b->type().shape;
  if (!sa || !sb || sa->size() != sb->size()) return false;
  for (size_t i = 0; i < sa->size(); ++i) {
    const ir::Dim& x = (*sa)[i];
    const ir::Dim& y = (*sb)[i];
    bool same =
        (x.isKnown() && y.isKnown() && x.value == y.value) ||
        (x.kind == ir::Dim::Kind::kParam && y.kind == ir::Dim::Kind::kParam && x.param == y.param);
    if (!same) return false;
  }
  return true;
}

std::optional<int64_t> rankOf(const ir::Value* value) {
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return std::nullopt;
  return static_cast<int64_t>(value->type().shape->size());
}

std::optional<ir::DataType> elemTypeOf(const ir::Value* value) {
  if (value == nullptr || !value->type().isTensor() ||
      value->type().elem_type == ir::DataType::kUndefined) {
    return std::nullopt;
  }
  return value->type().elem_type;
}

int64_t attrInt(const ir::Node& node, const std::string& name, int64_t fallback) {
  const ir::Attribute* a = node.findAttribute(name);
  return a != nullptr && a->kind == ir::Attribute::Kind::kInt ? a->i : fallback;
}

std::optional<std::vector<int64_t>> attrInts(const ir::Node& node, const std::string& name) {
  const ir::Attribute* a = node.findAttribute(name);
  if (a == nullptr || a->kind != ir::Attribute::Kind::kInts) return std::nullopt;
  return a->ints;
}

float attrFloat(const ir::Node& node, const std::string& name, float fallback) {
  const ir::Attribute* a = node.findAttribute(name);
  return a != nullptr && a->kind == ir::Attribute::Kind::kFloat ? a->f : fallback;
}

ir::Node* singleUseProducer(const ir::Value* value, const char* op) {
  if (value == nullptr || value->producer() == nullptr || value->producer()->opType() != op ||
      !value->producer()->domain().empty() || !hasSingleUse(value)) {
    return nullptr;
  }
  return value->producer();
}

std::optional<double> scalarConstant(const ir::Value* value) {
  auto t = constantTensor(value);
  if (!t || t->numElements().value_or(0) != 1) return std::nullopt;
  return elementAsDouble(*t, 0);
}

bool isNondeterministicOp(const std::string& op) {
  // Asked of every node by several passes: most ops fail the first letter.
  if (op.empty() || (op[0] != 'R' && op[0] != 'M' && op[0] != 'B')) return false;
  return op == "RandomNormal" || op == "RandomNormalLike" || op == "RandomUniform" ||
         op == "RandomUniformLike" || op == "Multinomial" || op == "Bernoulli";
}

bool isNondeterministicNode(const ir::Node& node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (isNondeterministicOp(node.opType())) return true;
  if (node.opType() != "Dropout") return false;
  if (node.numInputs() < 3 || node.input(2) == nullptr) return false;  // inference mode
  std::optional<double> training = scalarConstant(node.input(2));
  if (training && *training == 0) return false;
  std::optional<double> ratio = node.input(1) != nullptr ? scalarConstant(node.input(1)) : 0.5;
  return !(ratio && *ratio == 0);  // ratio 0 keeps every element
}

bool hasSingleUse(const ir::Value* value) {
  return value->uses().size() == 1 && !value->isGraphOutput();
}

bool onlyUsedBy(const ir::Value* value, const ir::Node* user) {
  if (value->uses().empty()) return false;
  for (const ir::Use& u : value->uses()) {
    if (u.user != user) return false;
  }
  return true;
}

bool isFloatType(ir::DataType t) {
  return t == ir::DataType::kFloat || t == ir::DataType::kDouble || t == ir::DataType::kFloat16 ||
         t == ir::DataType::kBfloat16;
}

std::optional<std::vector<double>> floatValues(const ir::Tensor& t) {
  if (!isFloatType(t.dtype())) return std::nullopt;
  auto n = t.numElements();
  if (!n || t.byteSize() != t.expectedByteSize().value_or(~uint64_t{0})) return std::nullopt;
  std::vector<double> out(static_cast<size_t>(*n));
  std::string_view bytes = t.bytes();
  if (t.dtype() == ir::DataType::kFloat && bytes.size() == out.size() * 4) {
    // The common case without the per-element type dispatch (weights of a few MB).
    for (size_t i = 0; i < out.size(); ++i) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      out[i] = f;
    }
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) out[i] = *elementAsDouble(t, i);
  return out;
}

ir::Tensor makeFloatTensor(ir::DataType dtype, std::vector<int64_t> dims,
                           const std::vector<double>& values) {
  ir::Tensor t(dtype, std::move(dims));
  size_t width = static_cast<size_t>(ir::dataTypeBits(dtype) / 8);
  std::string bytes(values.size() * width, '\0');
  if (dtype == ir::DataType::kFloat) {
    for (size_t i = 0; i < values.size(); ++i) {
      float f = static_cast<float>(values[i]);
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    }
    t.setBytes(std::move(bytes));
    return t;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    char* p = bytes.data() + i * width;
    switch (dtype) {
      case ir::DataType::kFloat: {
        float f = static_cast<float>(values[i]);
        std::memcpy(p, &f, 4);
        break;
      }
      case ir::DataType::kDouble:
        std::memcpy(p, &values[i], 8);
        break;
      case ir::DataType::kFloat16: {
        uint16_t h = floatToHalf(static_cast<float>(values[i]));
        std::memcpy(p, &h, 2);
        break;
      }
      case ir::DataType::kBfloat16: {
        uint16_t h = floatToBfloat16(static_cast<float>(values[i]));
        std::memcpy(p, &h, 2);
        break;
      }
      default:
        break;
    }
  }
  t.setBytes(std::move(bytes));
  return t;
}

ir::Tensor makeInt64Tensor(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  ir::Tensor t(ir::DataType::kInt64, std::move(dims));
  std::string bytes(values.size() * 8, '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.setBytes(std::move(bytes));
  return t;
}

}  // namespace onnxopt::pass

namespace onnxopt::pass {

ir::Attribute intAttr(const std::string& name, int64_t v) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}

ir::Attribute floatAttr(const std::string& name, float v) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}

ir::Attribute intsAttr(const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = name;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

ir::Type permutedType(const ir::Type& type, const std::vector<int64_t>& perm) {
  ir::Type t = type;
  if (t.shape && t.shape->size() == perm.size()) {
    std::vector<ir::Dim> dims(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) dims[i] = (*type.shape)[static_cast<size_t>(perm[i])];
    t.shape = std::move(dims);
  }
  return t;
}

ir::Value* createTranspose(rewrite::Rewriter& rw, ir::Value* v, const std::vector<int64_t>& perm) {
  ir::Node* t = rw.createNode("Transpose", "", {v}, {permutedType(v->type(), perm)});
  rw.setAttribute(t, intsAttr("perm", perm));
  return t->output(0);
}

ir::Value* otherOperand(const ir::Node& n, const ir::Value* known) {
  if (n.numInputs() != 2) return nullptr;
  if (n.input(0) == known) return n.input(1);
  if (n.input(1) == known) return n.input(0);
  return nullptr;
}

bool reduceAxesFromInput(const ir::Node& n, int64_t opset) {
  return opset >= 18 || (n.opType() == "ReduceSum" && opset >= 13);
}

std::optional<std::vector<int64_t>> reduceAxes(const ir::Node& n, int64_t opset, int64_t rank,
                                               bool any_keepdims) {
  if (!any_keepdims && attrInt(n, "keepdims", 1) != 1) return std::nullopt;
  bool axes_input = reduceAxesFromInput(n, opset);
  auto axes = !axes_input ? attrInts(n, "axes")
                          : (n.numInputs() > 1 ? constantInts(n.input(1)) : std::nullopt);
  if (!axes || axes->empty()) return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t a : *axes) {
    auto norm = normalizeAxis(a, rank);
    if (!norm) return std::nullopt;
    out.push_back(*norm);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<int64_t>> staticDimsFrom(const ir::Value* value, int64_t axis) {
  if (value == nullptr || !value->type().isTensor() || !value->type().shape) return std::nullopt;
  const auto& shape = *value->type().shape;
  if (axis < 0 || axis > static_cast<int64_t>(shape.size())) return std::nullopt;
  std::vector<int64_t> dims;
  for (size_t i = static_cast<size_t>(axis); i < shape.size(); ++i) {
    if (!shape[i].isKnown()) return std::nullopt;
    dims.push_back(shape[i].value);
  }
  return dims;
}

std::optional<ir::Tensor> broadcastFloatConstant(const ir::Tensor* source, double fill,
                                                 ir::DataType dtype,
                                                 const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  std::vector<double> out(static_cast<size_t>(count), fill);
  if (source != nullptr) {
    auto values = floatValues(*source);
    const std::vector<int64_t>& src = source->dims();
    if (!values || src.size() > dims.size()) return std::nullopt;
    for (size_t k = 0; k < src.size(); ++k) {
      int64_t want = dims[dims.size() - src.size() + k];
      if (src[k] != 1 && src[k] != want) return std::nullopt;
    }
    if (values->size() == 1) {  // a scalar (any rank): the fill
      std::fill(out.begin(), out.end(), (*values)[0]);
      return makeFloatTensor(dtype, dims, out);
    }
    for (int64_t i = 0; i < count; ++i) {
      int64_t rem = i, from = 0, stride = 1;
      for (int64_t k = static_cast<int64_t>(dims.size()) - 1,
                   s = static_cast<int64_t>(src.size()) - 1;
           k >= 0; --k, --s) {
        int64_t idx = rem % dims[static_cast<size_t>(k)];
        rem /= dims[static_cast<size_t>(k)];
        if (s >= 0) {
          int64_t sd = src[static_cast<size_t>(s)];
          from += (sd == 1 ? 0 : idx) * stride;
          stride *= sd;
        }
      }
      out[static_cast<size_t>(i)] = (*values)[static_cast<size_t>(from)];
    }
  }
  return makeFloatTensor(dtype, dims, out);
}

}  // namespace onnxopt::pass
