// The cuDNN layer (cudnn.h): status translation and the descriptor makers (the handle is the
// device context's: device_context.h).
#include "kernels/cuda/conv/cudnn.h"

#include <fmt/format.h>

#include <climits>

namespace onnxopt::kernels::cuda {

Status toStatus(cudnnStatus_t status, const char* call, const std::string& op) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  StatusCode code = StatusCode::kInternal;
  int category = CUDNN_STATUS_CATEGORY(static_cast<int>(status));
  if (category == CUDNN_STATUS_NOT_SUPPORTED) code = StatusCode::kUnimplemented;
  if (category == CUDNN_STATUS_BAD_PARAM) code = StatusCode::kInvalidArgument;
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    code = StatusCode::kResourceExhausted;
  }
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  return makeError(code, "{}: {} failed: {}{}{}", op.empty() ? "cudnn" : op, call,
                   cudnnGetErrorString(status), detail[0] != 0 ? ": " : "", detail);
}

namespace {

Status checkIntDims(const std::vector<int64_t>& dims, const std::string& op) {
  for (int64_t d : dims) {
    if (d < 0 || d > INT_MAX) {
      return makeError(StatusCode::kUnimplemented, "{}: dimension {} does not fit cuDNN", op, d);
    }
  }
  return Status::ok();
}

std::vector<int> toInts(const std::vector<int64_t>& v) {
  return std::vector<int>(v.begin(), v.end());
}

}  // namespace

cudnnDataType_t cudnnTypeOf(DataType t) {
  switch (t) {
    case DataType::kFloat16:
      return CUDNN_DATA_HALF;
    case DataType::kBfloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

StatusOr<TensorDesc> makeTensorDesc(DataType t, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& strides, const std::string& op) {
  RETURN_IF_ERROR(checkIntDims(dims, op));
  std::vector<int64_t> s = strides.empty() ? contiguousStrides(dims) : strides;
  RETURN_IF_ERROR(checkIntDims(s, op));
  cudnnTensorDescriptor_t raw = nullptr;
  ONNXOPT_CUDA_CHECK(cudnnCreateTensorDescriptor(&raw), op);
  TensorDesc desc(raw);
  std::vector<int> d = toInts(dims), st = toInts(s);
  ONNXOPT_CUDA_CHECK(cudnnSetTensorNdDescriptor(raw, cudnnTypeOf(t), static_cast<int>(d.size()),
                                                d.data(), st.data()),
                     op);
  return desc;
}

StatusOr<FilterDesc> makeFilterDesc(DataType t, const std::vector<int64_t>& dims,
                                    const std::string& op, cudnnTensorFormat_t format) {
  RETURN_IF_ERROR(checkIntDims(dims, op));
  cudnnFilterDescriptor_t raw = nullptr;
  ONNXOPT_CUDA_CHECK(cudnnCreateFilterDescriptor(&raw), op);
  FilterDesc desc(raw);
  std::vector<int> d = toInts(dims);
  ONNXOPT_CUDA_CHECK(
      cudnnSetFilterNdDescriptor(raw, cudnnTypeOf(t), format, static_cast<int>(d.size()), d.data()),
      op);
  return desc;
}

StatusOr<ConvDesc> makeConvDesc(const std::vector<int64_t>& pads,
                                const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dilations, int64_t group,
                                cudnnMathType_t math, const std::string& op) {
  for (const auto* v : {&pads, &strides, &dilations}) RETURN_IF_ERROR(checkIntDims(*v, op));
  if (group < 1 || group > INT_MAX) {
    return makeError(StatusCode::kUnimplemented, "{}: group {} does not fit cuDNN", op, group);
  }
  cudnnConvolutionDescriptor_t raw = nullptr;
  ONNXOPT_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&raw), op);
  ConvDesc desc(raw);
  std::vector<int> p = toInts(pads), s = toInts(strides), d = toInts(dilations);
  ONNXOPT_CUDA_CHECK(
      cudnnSetConvolutionNdDescriptor(raw, static_cast<int>(p.size()), p.data(), s.data(), d.data(),
                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
      op);
  ONNXOPT_CUDA_CHECK(cudnnSetConvolutionGroupCount(raw, static_cast<int>(group)), op);
  ONNXOPT_CUDA_CHECK(cudnnSetConvolutionMathType(raw, math), op);
  return desc;
}

}  // namespace onnxopt::kernels::cuda
