// The CUDA provider: the device half of the runner "cuda" (kernels/cuda and the real DeviceApi) as
// a shared library of its own, libonnxopt_cuda.so, loaded on the first use of the runner (as
// onnxruntime builds its execution providers). The optimizer, opt and the runtime core link no
// CUDA library, so a run that never touches the GPU does not load cudart, cuDNN and cuBLASLt
// (~200 MB mapped, a tenth of a second). docs/cuda_runtime.md says how the library is found.
//
// The boundary is one C entry point returning a function table. What crosses it is C++ (the
// DeviceApi interface, Status, kernels::CudaKernelCall and PreparedCudaKernel), whose layout changes between versions of
// onnxopt: the table carries an ABI number and the onnxopt version, and the loader refuses a
// library whose either differs from its own.
#pragma once

#include <cstdint>
#include <memory>

#include "device_api.h"
#include "onnxopt/support/status.h"

namespace onnxopt::runtime::cuda_detail {

/// Bump on any change to DeviceApi, CudaKernelCall, PreparedCudaKernel, CudaDeviceContext,
/// CudaDeviceInfo or this table. 2: kernels prepared once per plan (DeviceApi::prepare), run with
/// the provider's device context. 3: the context's TF32 policy (create_device_api's argument).
/// 4: CudaContextOptions (TF32 and the tuning cache file) instead of the policy alone.
inline constexpr uint32_t kCudaProviderAbi = 4;
inline constexpr const char* kCudaProviderFile = "libonnxopt_cuda.so";
inline constexpr const char* kCudaProviderEntry = "onnxopt_cuda_provider_v1";
/// Names the provider file to load instead of searching for it.
inline constexpr const char* kCudaProviderEnv = "ONNXOPT_CUDA_PROVIDER";

struct CudaProviderV1 {
  uint32_t abi = 0;
  const char* onnxopt_version = nullptr;
  /// The CUDA device `device_id` with a stream of its own (createCudaDeviceApi's contract).
  StatusOr<std::unique_ptr<DeviceApi>> (*create_device_api)(
      int device_id, const kernels::CudaContextOptions& options) = nullptr;
};

/// The device behind the provider's table, without plugin kernels (the provider's own copy of the
/// plugin kernel registry is empty: plugins register into the process's, see provider_loader.cc).
StatusOr<std::unique_ptr<DeviceApi>> createNativeCudaDeviceApi(
    int device_id, const kernels::CudaContextOptions& options);

/// Loads the provider (once per process; a failure is retried at the next call): the file named
/// by $ONNXOPT_CUDA_PROVIDER, else the first libonnxopt_cuda.so that exists beside the object
/// holding this code or in ../lib from there, else the name on the dynamic linker's path. Errors say "the CUDA runtime could not be
/// loaded: " and why (dlerror's text, a missing entry point, another version).
StatusOr<const CudaProviderV1*> loadCudaProvider();

}  // namespace onnxopt::runtime::cuda_detail

extern "C" {
/// The provider's entry point (kCudaProviderEntry): a table that lives as long as the library.
using OnnxoptCudaProviderEntry = const onnxopt::runtime::cuda_detail::CudaProviderV1* (*)();
}
