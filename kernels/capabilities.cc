#include "onnxopt/kernels/capabilities.h"

namespace onnxopt::kernels {

const char* layoutName(Layout layout) {
  switch (layout) {
    case Layout::kNCHW:
      return "NCHW";
    case Layout::kNHWC:
      return "NHWC";
    case Layout::kAny:
      break;
  }
  return "any";
}

std::vector<DataType> TypeSet::types() const {
  std::vector<DataType> out;
  for (int32_t code = 1; code < 64; ++code) {
    if ((bits_ >> code) & 1) out.push_back(static_cast<DataType>(code));
  }
  return out;
}

std::string TypeSet::toString() const {
  std::string out;
  for (DataType t : types()) out += (out.empty() ? "" : ", ") + dataTypeName(t);
  return out.empty() ? "no type" : out;
}

}  // namespace onnxopt::kernels
