// The real DeviceApi: one CUDA device and one stream (copies, launches, graph capture), through
// include/onnxopt/kernels/cuda.h. Part of the CUDA provider, libonnxopt_cuda.so (provider.h).
#include "device_api.h"
#include "provider.h"

#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace onnxopt::runtime::cuda_detail {
namespace {

struct Graph : CapturedGraph {
  explicit Graph(kernels::DeviceGraph g) : graph(std::move(g)) {}
  kernels::DeviceGraph graph;
};

class CudaDeviceApi : public DeviceApi {
 public:
  CudaDeviceApi(int device_id, kernels::DeviceStream stream,
                std::unique_ptr<kernels::CudaDeviceContext> context)
      : device_id_(device_id), stream_(std::move(stream)), context_(std::move(context)) {}

  StatusOr<kernels::CudaDeviceInfo> probe() override {
    return kernels::probeCudaDevice(device_id_);
  }
  StatusOr<void*> allocate(size_t bytes) override {
    ASSIGN_OR_RETURN(kernels::DeviceBuffer buffer, kernels::DeviceBuffer::allocate(bytes));
    void* data = buffer.data();
    if (data != nullptr) buffers_.emplace(data, std::move(buffer));
    return data;
  }
  void release(void* data) override { buffers_.erase(data); }
  StatusOr<void*> allocateHost(size_t bytes) override {
    ASSIGN_OR_RETURN(kernels::PinnedBuffer buffer, kernels::PinnedBuffer::allocate(bytes));
    void* data = buffer.data();
    if (data != nullptr) pinned_.emplace(data, std::move(buffer));
    return data;
  }
  void releaseHost(void* data) override { pinned_.erase(data); }
  Status copyToDevice(void* dst, const void* src, size_t bytes) override {
    return kernels::copyToDevice(dst, src, bytes, stream_.get());
  }
  Status copyToHost(void* dst, const void* src, size_t bytes) override {
    return kernels::copyToHost(dst, src, bytes, stream_.get());
  }
  Status fill(void* dst, int value, size_t bytes) override {
    return kernels::fillDevice(dst, value, bytes, stream_.get());
  }
  Status copyOnDevice(void* dst, const void* src, size_t bytes) override {
    return kernels::copyOnDevice(dst, src, bytes, stream_.get());
  }
  void* nativeStream() override { return stream_.get(); }
  Status synchronize(const std::string& what) override { return stream_.synchronize(what); }
  kernels::Support canImplement(const kernels::CudaKernelCall& call) override {
    return kernels::cudaCanImplement(call);
  }
  StatusOr<std::unique_ptr<kernels::PreparedCudaKernel>> prepare(
      const kernels::CudaKernelCall& call) override {
    return kernels::prepareCudaKernel(call, *context_);
  }
  Status launch(const kernels::PreparedCudaKernel& kernel) override {
    return kernel.run(*context_);
  }
  StatusOr<size_t> recordMarker() override {
    // Events are kept across runs (created once, recorded again).
    if (next_marker_ == events_.size()) {
      ASSIGN_OR_RETURN(kernels::DeviceEvent event, kernels::DeviceEvent::create());
      events_.push_back(std::move(event));
    }
    RETURN_IF_ERROR(events_[next_marker_].record(stream_.get()));
    return next_marker_++;
  }
  StatusOr<double> elapsedMs(size_t from, size_t to) override {
    if (from >= next_marker_ || to >= next_marker_) {
      return makeError(StatusCode::kInternal, "cuda: marker {} or {} was not recorded", from, to);
    }
    return kernels::DeviceEvent::elapsedMs(events_[from], events_[to]);
  }
  void clearMarkers() override { next_marker_ = 0; }
  Status beginCapture() override { return kernels::beginStreamCapture(stream_.get()); }
  StatusOr<std::unique_ptr<CapturedGraph>> endCapture() override {
    ASSIGN_OR_RETURN(kernels::DeviceGraph graph, kernels::endStreamCapture(stream_.get()));
    return std::unique_ptr<CapturedGraph>(std::make_unique<Graph>(std::move(graph)));
  }
  Status replay(const CapturedGraph& graph) override {
    return static_cast<const Graph&>(graph).graph.launch(stream_.get());
  }

 private:
  int device_id_;
  // Buffers and the context's handles go before the stream (members are destroyed in reverse
  // order).
  kernels::DeviceStream stream_;
  std::unique_ptr<kernels::CudaDeviceContext> context_;
  std::unordered_map<void*, kernels::DeviceBuffer> buffers_;
  std::unordered_map<void*, kernels::PinnedBuffer> pinned_;
  std::vector<kernels::DeviceEvent> events_;
  size_t next_marker_ = 0;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceApi>> createNativeCudaDeviceApi(
    int device_id, const kernels::CudaContextOptions& options) {
  auto device = kernels::probeCudaDevice(device_id);
  if (!device.isOk()) {
    return device.status().withContext(
        fmt::format("cuda runner: no usable CUDA device {}", device_id));
  }
  auto stream = kernels::DeviceStream::create();
  if (!stream.isOk()) return stream.status().withContext("cuda runner: creating a stream");
  auto context = kernels::CudaDeviceContext::create(stream->get(), options);
  if (!context.isOk()) return context.status().withContext("cuda runner: the device context");
  return std::unique_ptr<DeviceApi>(std::make_unique<CudaDeviceApi>(
      device_id, std::move(stream).value(), std::move(context).value()));
}

}  // namespace onnxopt::runtime::cuda_detail
