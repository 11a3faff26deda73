#include "onnxopt/runtime/compare.h"

#include <cmath>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "onnxopt/support/half.h"

namespace onnxopt::runtime {

std::optional<std::vector<double>> tensorAsDoubles(const kernels::HostTensor& t) {
  int64_t n = t.numElements();
  int bits = dataTypeBits(t.dtype);
  if (t.dtype == DataType::kString || bits == 0 || bits % 8 != 0 ||
      t.bytes.size() != static_cast<size_t>(n) * static_cast<size_t>(bits / 8)) {
    return std::nullopt;
  }
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (t.dtype) {
      case DataType::kFloat:
        v = t.get<float>(i);
        break;
      case DataType::kDouble:
        v = t.get<double>(i);
        break;
      case DataType::kFloat16:
        v = halfToFloat(t.get<uint16_t>(i));
        break;
      case DataType::kBfloat16:
        v = bfloat16ToFloat(t.get<uint16_t>(i));
        break;
      case DataType::kBool:
      case DataType::kUint8:
        v = t.get<uint8_t>(i);
        break;
      case DataType::kInt8:
        v = t.get<int8_t>(i);
        break;
      case DataType::kInt16:
        v = t.get<int16_t>(i);
        break;
      case DataType::kUint16:
        v = t.get<uint16_t>(i);
        break;
      case DataType::kInt32:
        v = t.get<int32_t>(i);
        break;
      case DataType::kUint32:
        v = t.get<uint32_t>(i);
        break;
      case DataType::kInt64:
        v = static_cast<double>(t.get<int64_t>(i));
        break;
      case DataType::kUint64:
        v = static_cast<double>(t.get<uint64_t>(i));
        break;
      default:
        return std::nullopt;
    }
    out[static_cast<size_t>(i)] = v;
  }
  return out;
}

Tolerance defaultTolerance(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return {1e-5, 1e-4};
    case DataType::kFloat16:
      return {1e-3, 1e-2};
    case DataType::kBfloat16:
      return {1e-2, 2e-2};
    case DataType::kDouble:
      return {1e-9, 1e-7};
    default:
      return {0, 0};
  }
}

std::string incomparable(const kernels::HostTensor& expected, const kernels::HostTensor& actual) {
  auto floating = [](DataType t) {
    return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16 ||
           t == DataType::kDouble;
  };
  // Float types compare as numbers across types (a value converted by --precision); others must
  // match.
  if (expected.dtype != actual.dtype && !(floating(expected.dtype) && floating(actual.dtype))) {
    return fmt::format("element type {} != {}", dataTypeName(actual.dtype),
                       dataTypeName(expected.dtype));
  }
  if (expected.dims != actual.dims) {
    return fmt::format("shape [{}] != [{}]", fmt::join(actual.dims, ","),
                       fmt::join(expected.dims, ","));
  }
  return "";
}

TensorComparison compareTensors(const std::string& name, const kernels::HostTensor& expected,
                                const kernels::HostTensor& actual, Tolerance tolerance) {
  TensorComparison c;
  c.name = name;
  c.dtype = expected.dtype;
  c.dims = expected.dims;
  c.tolerance = tolerance;
  c.problem = incomparable(expected, actual);
  if (!c.problem.empty()) return c;
  c.elements = expected.numElements();
  if (expected.dtype == DataType::kString) {
    for (size_t i = 0; i < expected.strings.size() && i < actual.strings.size(); ++i) {
      c.mismatches += expected.strings[i] != actual.strings[i];
    }
    c.passed = c.mismatches == 0;
    c.cosine = c.passed ? 1 : 0;
    return c;
  }
  auto e = tensorAsDoubles(expected);
  auto a = tensorAsDoubles(actual);
  if (!e || !a) {
    c.passed = expected.bytes == actual.bytes;
    c.mismatches = c.passed ? 0 : c.elements;
    if (!c.passed) c.problem = "bytes differ (type without element-wise comparison)";
    return c;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double dot = 0, ne = 0, na = 0, sum_abs = 0;
  for (size_t i = 0; i < e->size(); ++i) {
    double x = (*e)[i], y = (*a)[i];
    double abs_err = 0;
    if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
      bool same = (std::isnan(x) && std::isnan(y)) || x == y;
      abs_err = same ? 0 : kInf;
    } else {
      abs_err = std::fabs(y - x);
      dot += x * y;
      ne += x * x;
      na += y * y;
    }
    sum_abs += abs_err;
    c.max_abs = std::max(c.max_abs, abs_err);
    if (abs_err > 0 && x != 0 && !std::isnan(x))
      c.max_rel = std::max(c.max_rel, abs_err / std::fabs(x));
    if (abs_err > tolerance.atol + tolerance.rtol * (std::isfinite(x) ? std::fabs(x) : 0)) {
      ++c.mismatches;
    }
  }
  c.mean_abs = e->empty() ? 0 : sum_abs / static_cast<double>(e->size());
  if (ne == 0 && na == 0) {
    c.cosine = 1;
  } else if (ne == 0 || na == 0) {
    c.cosine = 0;
  } else {
    c.cosine = dot / (std::sqrt(ne) * std::sqrt(na));
  }
  c.passed = c.mismatches == 0;
  return c;
}

}  // namespace onnxopt::runtime
