// The swiglu plugin's CUDA kernel in the shape of kernels::CudaPluginKernel (swiglu_cuda.cc).
#pragma once

#include "onnxopt/kernels/cuda.h"

namespace swiglu {

/// x [..., K] contiguous, W1 and W3 [K, N], y [..., N], one float type for all.
onnxopt::kernels::Support canImplementSwiGlu(const onnxopt::kernels::CudaKernelCall& call);

/// y = Silu(x W1) * (x W3) on `stream` (swiglu_kernel.cu).
onnxopt::Status launchSwiGlu(const onnxopt::kernels::CudaKernelCall& call,
                             onnxopt::kernels::CudaStream stream);

}  // namespace swiglu
