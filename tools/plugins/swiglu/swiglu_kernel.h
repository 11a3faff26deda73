// The swiglu plugin's CUDA kernel (swiglu_kernel.cu) as plain C++: no onnxopt or CUDA headers, so
// that nvcc compiles the device file alone (onnxopt's headers bring fmt, which nvcc's front end
// does not take) and the host glue (swiglu_cuda.cc) compiles without CUDA headers.
#pragma once

#include <cstdint>

namespace swiglu {

enum class ElemType { kFloat, kFloat16, kBfloat16 };

/// Enqueues y[r, j] = Silu(sum_i x[r, i] W1[i, j]) * sum_i x[r, i] W3[i, j] on `stream` (a
/// cudaStream_t) for contiguous x [rows, k], W1 and W3 [k, n], y [rows, n]. Returns nullptr, or
/// CUDA's reason when the launch failed.
const char* launchSwiGluKernel(ElemType type, const void* x, const void* w1, const void* w3,
                               void* y, int64_t rows, int64_t k, int64_t n, void* stream);

}  // namespace swiglu
