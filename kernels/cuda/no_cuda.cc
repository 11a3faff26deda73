// The device and launch half of include/onnxopt/kernels/cuda.h in a build without CUDA
// (ONNXOPT_HAVE_CUDA off): every call is kUnimplemented, so the runtime and the tests link and
// report "built without CUDA" instead of failing to build.
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/tuning_cache.h"

namespace onnxopt::kernels {

namespace {

Status notBuilt() {
  return Status(StatusCode::kUnimplemented, "cuda: onnxopt was built without CUDA");
}

}  // namespace

bool cudaKernelsBuilt() {
  return false;
}

StatusOr<int> cudaDeviceCount() {
  return notBuilt();
}

StatusOr<CudaDeviceInfo> probeCudaDevice(int) {
  return notBuilt();
}

StatusOr<DeviceStream> DeviceStream::create() {
  return notBuilt();
}
DeviceStream::DeviceStream(DeviceStream&&) noexcept = default;
DeviceStream& DeviceStream::operator=(DeviceStream&&) noexcept = default;
DeviceStream::~DeviceStream() = default;
Status DeviceStream::synchronize(const std::string&) const {
  return notBuilt();
}

StatusOr<DeviceBuffer> DeviceBuffer::allocate(size_t) {
  return notBuilt();
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;
DeviceBuffer::~DeviceBuffer() = default;

Status copyToDevice(void*, const void*, size_t, CudaStream) {
  return notBuilt();
}
Status copyToHost(void*, const void*, size_t, CudaStream) {
  return notBuilt();
}
Status copyOnDevice(void*, const void*, size_t, CudaStream) {
  return notBuilt();
}
Status fillDevice(void*, int, size_t, CudaStream) {
  return notBuilt();
}

StatusOr<PinnedBuffer> PinnedBuffer::allocate(size_t) {
  return notBuilt();
}
PinnedBuffer::PinnedBuffer(PinnedBuffer&&) noexcept = default;
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&&) noexcept = default;
PinnedBuffer::~PinnedBuffer() = default;

DeviceGraph::DeviceGraph(DeviceGraph&&) noexcept = default;
DeviceGraph& DeviceGraph::operator=(DeviceGraph&&) noexcept = default;
DeviceGraph::~DeviceGraph() = default;
Status DeviceGraph::launch(CudaStream) const {
  return notBuilt();
}
StatusOr<DeviceEvent> DeviceEvent::create() {
  return notBuilt();
}
DeviceEvent::DeviceEvent(DeviceEvent&&) noexcept = default;
DeviceEvent& DeviceEvent::operator=(DeviceEvent&&) noexcept = default;
DeviceEvent::~DeviceEvent() = default;
Status DeviceEvent::record(CudaStream) const {
  return notBuilt();
}
StatusOr<double> DeviceEvent::elapsedMs(const DeviceEvent&, const DeviceEvent&) {
  return notBuilt();
}
Status beginStreamCapture(CudaStream) {
  return notBuilt();
}
StatusOr<DeviceGraph> endStreamCapture(CudaStream) {
  return notBuilt();
}

struct CudaDeviceContext::Libraries {};
CudaDeviceContext::CudaDeviceContext(CudaStream stream, int device, int sm_count, Tf32 tf32,
                                     std::unique_ptr<TuningCache> tuning)
    : stream_(stream),
      device_(device),
      sm_count_(sm_count),
      tf32_(tf32),
      tuning_(std::move(tuning)) {}
CudaDeviceContext::~CudaDeviceContext() = default;
StatusOr<std::unique_ptr<CudaDeviceContext>> CudaDeviceContext::create(CudaStream,
                                                                       const CudaContextOptions&) {
  return notBuilt();
}
StatusOr<std::unique_ptr<PreparedCudaKernel>> prepareCudaKernel(const CudaKernelCall&,
                                                                CudaDeviceContext&) {
  return notBuilt();
}
Status launchCudaKernel(const CudaKernelCall&, CudaDeviceContext&) {
  return notBuilt();
}

bool hasCudaLaunch(const std::string&, const std::string&, int64_t) {
  return false;
}
Support cudaCanImplement(const CudaKernelCall&) {
  return Support::no("cuda: onnxopt was built without CUDA");
}
StatusOr<size_t> cudaWorkspaceBytes(const CudaKernelCall&) {
  return notBuilt();
}
Status launchCudaKernel(const CudaKernelCall&, CudaStream) {
  return notBuilt();
}
std::string cudaKernelVariant(const CudaKernelCall&) {
  return {};
}

}  // namespace onnxopt::kernels
