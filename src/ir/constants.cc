#include "onnxopt/ir/constants.h"

#include <cstring>

#include "onnxopt/support/bytes.h"

namespace onnxopt::ir {
namespace {

template <typename T>
Tensor scalarOrVector(DataType dtype, const std::vector<T>& values, bool scalar) {
  Tensor t(dtype, scalar ? std::vector<int64_t>{}
                         : std::vector<int64_t>{static_cast<int64_t>(values.size())});
  std::string bytes(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.setBytes(std::move(bytes));
  return t;
}

}  // namespace

std::optional<Tensor> constantNodeTensor(const Node& node) {
  if (node.opType() != "Constant" || !node.domain().empty() || node.attributes().size() != 1) {
    return std::nullopt;
  }
  return constantAttributeTensor(node.attributes()[0]);
}

std::optional<Tensor> constantAttributeTensor(const Attribute& a) {
  if (!a.ref_attr_name.empty()) return std::nullopt;
  if (a.name == "value" && a.tensors.size() == 1) return a.tensors[0];
  if (a.name == "value_float")
    return scalarOrVector(DataType::kFloat, std::vector<float>{a.f}, true);
  if (a.name == "value_floats") return scalarOrVector(DataType::kFloat, a.floats, false);
  if (a.name == "value_int")
    return scalarOrVector(DataType::kInt64, std::vector<int64_t>{a.i}, true);
  if (a.name == "value_ints") return scalarOrVector(DataType::kInt64, a.ints, false);
  if (a.name == "value_string" || a.name == "value_strings") {
    bool scalar = a.name == "value_string";
    Tensor t(DataType::kString, scalar
                                    ? std::vector<int64_t>{}
                                    : std::vector<int64_t>{static_cast<int64_t>(a.strings.size())});
    t.mutableStrings() = scalar ? std::vector<std::string>{a.s} : a.strings;
    return t;
  }
  return std::nullopt;  // sparse_value stays a Constant
}

std::optional<Tensor> constantTensor(const Value* value) {
  if (value == nullptr) return std::nullopt;
  if (value->kind() == Value::Kind::kInitializer && value->initializer() != nullptr) {
    const Tensor& t = *value->initializer();
    if (t.byteSize() == 0 && t.numElements().value_or(0) > 0 && t.dtype() != DataType::kString) {
      return std::nullopt;  // weight-stripped: the values are unknown
    }
    return t;
  }
  if (value->producer() != nullptr) return constantNodeTensor(*value->producer());
  return std::nullopt;
}

std::vector<int64_t> tensorInts(const Tensor& t) {
  std::vector<int64_t> out;
  auto n = static_cast<size_t>(t.numElements().value_or(0));
  if (t.dtype() == DataType::kInt64 && t.byteSize() == n * 8) {
    for (size_t i = 0; i < n; ++i) out.push_back(loadUnaligned<int64_t>(t.data() + 8 * i));
  } else if (t.dtype() == DataType::kInt32 && t.byteSize() == n * 4) {
    for (size_t i = 0; i < n; ++i) out.push_back(loadUnaligned<int32_t>(t.data() + 4 * i));
  }
  return out;
}

}  // namespace onnxopt::ir
