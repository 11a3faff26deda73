// The swiglu plugin's CUDA kernel as the CUDA runtime sees it (kernels::CudaPluginKernel): the
// host-only check of a call and its launch through swiglu_kernel.cu.
#include "swiglu_cuda.h"

#include <string>

#include "swiglu_kernel.h"

namespace swiglu {

using onnxopt::DataType;
using onnxopt::kernels::CudaKernelCall;
using onnxopt::kernels::Support;

Support canImplementSwiGlu(const CudaKernelCall& call) {
  if (call.inputs.size() != 3 || call.outputs.size() != 1) {
    return Support::no("example.SwiGLU: takes (x, W1, W3) and gives one output");
  }
  const auto& x = call.inputs[0];
  const auto& w1 = call.inputs[1];
  const auto& w3 = call.inputs[2];
  const auto& y = call.outputs[0];
  for (const auto* v : {&x, &w1, &w3}) {
    if (v->dtype != x.dtype || !v->isContiguous()) {
      return Support::no("example.SwiGLU: x, W1, W3 of one type, contiguous");
    }
  }
  if (x.rank() < 1 || w1.rank() != 2 || w1.dims != w3.dims || x.dims.back() != w1.dims[0]) {
    return Support::no("example.SwiGLU: x is [..., K], W1 and W3 [K, N]");
  }
  if (y.dtype != x.dtype || !y.isContiguous() || y.dims.empty() || y.dims.back() != w1.dims[1]) {
    return Support::no("example.SwiGLU: y is [..., N] of x's type");
  }
  if (x.dtype != DataType::kFloat && x.dtype != DataType::kFloat16 &&
      x.dtype != DataType::kBfloat16) {
    return Support::no("example.SwiGLU: float, float16 or bfloat16");
  }
  return Support::yes();
}

onnxopt::Status launchSwiGlu(const CudaKernelCall& call, onnxopt::kernels::CudaStream stream) {
  const auto& x = call.inputs[0];
  const int64_t k = call.inputs[1].dims[0], n = call.inputs[1].dims[1];
  const int64_t rows = k == 0 ? 0 : x.numElements() / k;
  if (rows == 0 || n == 0) return onnxopt::Status::ok();
  ElemType type = x.dtype == DataType::kFloat16    ? ElemType::kFloat16
                  : x.dtype == DataType::kBfloat16 ? ElemType::kBfloat16
                                                   : ElemType::kFloat;
  const char* err = launchSwiGluKernel(type, x.data, call.inputs[1].data, call.inputs[2].data,
                                       call.outputs[0].data, rows, k, n, stream);
  if (err != nullptr) {
    return onnxopt::Status(onnxopt::StatusCode::kInternal,
                           std::string("example.SwiGLU: launch failed: ") + err);
  }
  return onnxopt::Status::ok();
}

}  // namespace swiglu
