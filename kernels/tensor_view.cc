#include "onnxopt/kernels/tensor_view.h"

namespace onnxopt::kernels {

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

TensorView viewOf(HostTensor& tensor) {
  void* data = tensor.dtype == DataType::kString ? static_cast<void*>(tensor.strings.data())
                                                 : static_cast<void*>(tensor.bytes.data());
  return TensorView(tensor.dtype, tensor.dims, contiguousStrides(tensor.dims), data);
}

ConstTensorView viewOf(const HostTensor& tensor) {
  const void* data = tensor.dtype == DataType::kString
                         ? static_cast<const void*>(tensor.strings.data())
                         : static_cast<const void*>(tensor.bytes.data());
  return ConstTensorView(tensor.dtype, tensor.dims, contiguousStrides(tensor.dims), data);
}

}  // namespace onnxopt::kernels
