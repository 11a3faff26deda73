// The cuDNN layer of kernels/cuda (host code, CUDA builds): cudnnStatus_t as Status (the
// ONNXOPT_CUDA_CHECK overload device.h promises), RAII owners of the descriptors, and the cuDNN
// data type of an element type (the handle is the device context's: device_context.h). The conv
// and pool families reach cuDNN only through here.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

/// OK for CUDNN_STATUS_SUCCESS; otherwise "OP: CALL failed: CUDNN_STATUS_X (cuDNN's last error
/// message)": kUnimplemented for the NOT_SUPPORTED category, kResourceExhausted for an allocation
/// failure, kInvalidArgument for BAD_PARAM, kInternal otherwise.
Status toStatus(cudnnStatus_t status, const char* call, const std::string& op);

/// float, float16 and bfloat16 (the conv family's types); CUDNN_DATA_FLOAT otherwise.
cudnnDataType_t cudnnTypeOf(DataType t);

namespace detail {
struct CudnnDestroy {
  void operator()(cudnnTensorStruct* d) const { (void)cudnnDestroyTensorDescriptor(d); }
  void operator()(cudnnFilterStruct* d) const { (void)cudnnDestroyFilterDescriptor(d); }
  void operator()(cudnnConvolutionStruct* d) const { (void)cudnnDestroyConvolutionDescriptor(d); }
};
}  // namespace detail

using TensorDesc = std::unique_ptr<cudnnTensorStruct, detail::CudnnDestroy>;
using FilterDesc = std::unique_ptr<cudnnFilterStruct, detail::CudnnDestroy>;
using ConvDesc = std::unique_ptr<cudnnConvolutionStruct, detail::CudnnDestroy>;

/// A tensor descriptor of `dims` (4 or 5 of them, each fitting int) with `strides` (contiguous
/// when empty).
StatusOr<TensorDesc> makeTensorDesc(DataType t, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& strides, const std::string& op);
/// A filter descriptor of `dims` (4 or 5, in [M, C, spatial...] order) whose memory is laid out
/// as `format` says: CUDNN_TENSOR_NCHW ([M, C, kH, kW] row-major) or CUDNN_TENSOR_NHWC
/// ([M, kH, kW, C]).
StatusOr<FilterDesc> makeFilterDesc(DataType t, const std::vector<int64_t>& dims,
                                    const std::string& op,
                                    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);

/// A cross-correlation descriptor over the spatial dims (2 or 3) with float compute, `group`
/// groups and `math` (CUDNN_FMA_MATH: no tensor cores, no TF32).
StatusOr<ConvDesc> makeConvDesc(const std::vector<int64_t>& pads,
                                const std::vector<int64_t>& strides,
                                const std::vector<int64_t>& dilations, int64_t group,
                                cudnnMathType_t math, const std::string& op);

}  // namespace onnxopt::kernels::cuda
