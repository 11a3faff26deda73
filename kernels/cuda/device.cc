// The device layer (CUDA builds): probing devices, streams, allocations (device and pinned host),
// copies, events, stream capture into CUDA graphs, and the translation of CUDA errors into Status
// (device.h).
#include "kernels/cuda/device.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <fmt/format.h>

#include <utility>

namespace onnxopt::kernels {

namespace cuda {

Status toStatus(cudaError_t error, const char* call, const std::string& op) {
  if (error == cudaSuccess) return Status::ok();
  StatusCode code = StatusCode::kInternal;
  if (error == cudaErrorMemoryAllocation) code = StatusCode::kResourceExhausted;
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
      error == cudaErrorNotSupported || error == cudaErrorInitializationError) {
    code = StatusCode::kUnimplemented;
  }
  return makeError(code, "{}: {} failed: {} ({})", op.empty() ? "cuda" : op, call,
                   cudaGetErrorName(error), cudaGetErrorString(error));
}

Status toStatus(cublasStatus_t status, const char* call, const std::string& op) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  StatusCode code = StatusCode::kInternal;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) code = StatusCode::kResourceExhausted;
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
    code = StatusCode::kUnimplemented;
  }
  return makeError(code, "{}: {} failed: {} ({})", op.empty() ? "cuda" : op, call,
                   cublasLtGetStatusName(status), cublasLtGetStatusString(status));
}

}  // namespace cuda

bool cudaKernelsBuilt() {
  return true;
}

StatusOr<int> cudaDeviceCount() {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::toStatus(error, "cudaGetDeviceCount", "cuda");
  }
  if (count == 0) return makeError(StatusCode::kUnimplemented, "cuda: no CUDA device");
  return count;
}

StatusOr<CudaDeviceInfo> probeCudaDevice(int id) {
  ASSIGN_OR_RETURN(int count, cudaDeviceCount());
  if (id < 0 || id >= count) {
    return invalidArgument("cuda: device {} does not exist ({} device(s))", id, count);
  }
  ONNXOPT_CUDA_CHECK(cudaSetDevice(id), "cuda");
  cudaDeviceProp prop{};
  ONNXOPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, id), "cuda");
  CudaDeviceInfo info;
  info.id = id;
  info.name = prop.name;
  info.major = prop.major;
  info.minor = prop.minor;
  info.total_bytes = prop.totalGlobalMem;
  info.multiprocessors = prop.multiProcessorCount;
  return info;
}

StatusOr<DeviceStream> DeviceStream::create() {
  cudaStream_t stream = nullptr;
  ONNXOPT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cuda");
  DeviceStream out;
  out.stream_ = stream;
  return out;
}

DeviceStream::DeviceStream(DeviceStream&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)) {}

DeviceStream& DeviceStream::operator=(DeviceStream&& other) noexcept {
  if (this != &other) {
    if (stream_ != nullptr) (void)cudaStreamDestroy(cuda::streamOf(stream_));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

DeviceStream::~DeviceStream() {
  if (stream_ != nullptr) (void)cudaStreamDestroy(cuda::streamOf(stream_));
}

Status DeviceStream::synchronize(const std::string& what) const {
  ONNXOPT_CUDA_CHECK(cudaStreamSynchronize(cuda::streamOf(stream_)), what);
  return Status::ok();
}

StatusOr<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer out;
  if (bytes == 0) return out;
  void* data = nullptr;
  cudaError_t error = cudaMalloc(&data, bytes);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::toStatus(error, "cudaMalloc", "cuda")
        .withContext(fmt::format("allocating {} bytes of device memory", bytes));
  }
  out.data_ = data;
  out.size_ = bytes;
  return out;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

Status copyToDevice(void* device_dst, const void* host_src, size_t bytes, CudaStream stream) {
  if (bytes == 0) return Status::ok();
  ONNXOPT_CUDA_CHECK(
      cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, cuda::streamOf(stream)),
      "copy to device");
  return Status::ok();
}

Status copyToHost(void* host_dst, const void* device_src, size_t bytes, CudaStream stream) {
  if (bytes == 0) return Status::ok();
  ONNXOPT_CUDA_CHECK(
      cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, cuda::streamOf(stream)),
      "copy to host");
  return Status::ok();
}

Status copyOnDevice(void* device_dst, const void* device_src, size_t bytes, CudaStream stream) {
  if (bytes == 0) return Status::ok();
  ONNXOPT_CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice,
                                     cuda::streamOf(stream)),
                     "copy on device");
  return Status::ok();
}

Status fillDevice(void* device_dst, int value, size_t bytes, CudaStream stream) {
  if (bytes == 0) return Status::ok();
  ONNXOPT_CUDA_CHECK(cudaMemsetAsync(device_dst, value, bytes, cuda::streamOf(stream)), "fill");
  return Status::ok();
}

StatusOr<PinnedBuffer> PinnedBuffer::allocate(size_t bytes) {
  PinnedBuffer out;
  if (bytes == 0) return out;
  void* data = nullptr;
  cudaError_t error = cudaMallocHost(&data, bytes);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::toStatus(error, "cudaMallocHost", "cuda")
        .withContext(fmt::format("allocating {} bytes of pinned host memory", bytes));
  }
  out.data_ = data;
  out.size_ = bytes;
  return out;
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) (void)cudaFreeHost(data_);
}

DeviceGraph::DeviceGraph(DeviceGraph&& other) noexcept
    : exec_(std::exchange(other.exec_, nullptr)) {}

DeviceGraph& DeviceGraph::operator=(DeviceGraph&& other) noexcept {
  if (this != &other) {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

DeviceGraph::~DeviceGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
}

Status DeviceGraph::launch(CudaStream stream) const {
  if (exec_ == nullptr) return makeError(StatusCode::kInternal, "cuda: launch of an empty graph");
  ONNXOPT_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), cuda::streamOf(stream)),
                     "cuda graph");
  return Status::ok();
}

StatusOr<DeviceEvent> DeviceEvent::create() {
  cudaEvent_t event = nullptr;
  ONNXOPT_CUDA_CHECK(cudaEventCreate(&event), "cuda event");
  DeviceEvent out;
  out.event_ = event;
  return out;
}

DeviceEvent::DeviceEvent(DeviceEvent&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)) {}

DeviceEvent& DeviceEvent::operator=(DeviceEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

DeviceEvent::~DeviceEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

Status DeviceEvent::record(CudaStream stream) const {
  ONNXOPT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), cuda::streamOf(stream)),
                     "cuda event");
  return Status::ok();
}

StatusOr<double> DeviceEvent::elapsedMs(const DeviceEvent& start, const DeviceEvent& end) {
  float ms = 0;
  ONNXOPT_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.event_),
                                          static_cast<cudaEvent_t>(end.event_)),
                     "cuda event");
  return static_cast<double>(ms);
}

Status beginStreamCapture(CudaStream stream) {
  ONNXOPT_CUDA_CHECK(
      cudaStreamBeginCapture(cuda::streamOf(stream), cudaStreamCaptureModeThreadLocal),
      "cuda graph");
  return Status::ok();
}

StatusOr<DeviceGraph> endStreamCapture(CudaStream stream) {
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(cuda::streamOf(stream), &graph);
  // An invalidated capture leaves its error as the last error too: clear it (not sticky).
  (void)cudaGetLastError();
  if (ended != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    return cuda::toStatus(ended, "cudaStreamEndCapture", "cuda graph");
  }
  if (graph == nullptr) return makeError(StatusCode::kInternal, "cuda graph: nothing was captured");
  cudaGraphExec_t exec = nullptr;
  cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaError_t destroyed = cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) {
    (void)cudaGetLastError();
    return cuda::toStatus(instantiated, "cudaGraphInstantiate", "cuda graph");
  }
  DeviceGraph out;
  out.exec_ = exec;
  ONNXOPT_CUDA_CHECK(destroyed, "cuda graph");
  return out;
}

}  // namespace onnxopt::kernels
