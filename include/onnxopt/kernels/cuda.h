// The CUDA kernel library as the rest of onnxopt sees it, without CUDA headers: the capability
// table (host C++, in every build, so that planning and the CUDA target's passes work on a
// machine without a GPU or nvcc), the kernel list it comes from (kernels/cuda/ops.def), the
// device basics (probe, stream, buffers, copies, graph capture) and one entry point that launches the kernel of a
// node described by tensor views. Without CUDA (ONNXOPT_HAVE_CUDA off) the device and launch
// functions exist and return kUnimplemented ("onnxopt was built without CUDA"), so callers and
// tests link in both builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/kernels/tensor_view.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels {

// --- what the CUDA kernels run (host C++, always built) -----------------------------------------

/// One row of kernels/cuda/ops.def.
struct CudaKernelInfo {
  const char* domain;  ///< "" for the default domain
  const char* op;
  int64_t since;       ///< first opset of `domain` the row covers
  int64_t until;       ///< last one (kCudaOpenOpset: every later one)
  const char* family;  ///< the kernel family ("Unary", "Binary", ...): kernels/cuda/<family>.cu
  int min_inputs;
  int max_inputs;
  int same_from;  ///< inputs from this index on share one element type; -1: no such rule
  std::vector<TypeSet> inputs;   ///< per input position (the last repeats)
  std::vector<TypeSet> outputs;  ///< per output position; empty: outputs follow the inputs
  Layout layout;
};

/// The `until` of a row that covers every later opset.
inline constexpr int64_t kCudaOpenOpset = INT64_MAX;

/// Every row of ops.def, in file order.
const std::vector<CudaKernelInfo>& cudaKernelTable();

/// One CUDA_VALUE_INPUTS row of ops.def: the value operands (Capabilities::valueInputs) of the
/// op's kernel at opsets since..until.
struct CudaValueInputs {
  const char* domain;  ///< "" for the default domain
  const char* op;
  int64_t since;
  int64_t until;
  std::vector<size_t> inputs;
};

/// Every CUDA_VALUE_INPUTS row of ops.def, in file order.
const std::vector<CudaValueInputs>& cudaValueInputTable();

/// The CUDA kernels' capabilities (name "cuda"), answered from cudaKernelTable() (and its value
/// operands from cudaValueInputTable()). Attribute- and
/// shape-dependent limits (rank above 8, a Gelu `approximate` it does not know) are left to
/// cudaCanImplement, which the plan asks per node.
const Capabilities& cudaCapabilities();

/// Whether this build has the CUDA kernels (ONNXOPT_HAVE_CUDA). When false, every device and
/// launch function below returns kUnimplemented.
bool cudaKernelsBuilt();

// --- device basics (kernels/cuda/device.cc) -------------------------------------------------------

/// A CUDA stream as an opaque handle (a cudaStream_t); nullptr is the legacy default stream.
using CudaStream = void*;

struct CudaDeviceInfo {
  int id = 0;
  std::string name;  ///< "NVIDIA H200"
  int major = 0;     ///< compute capability
  int minor = 0;
  size_t total_bytes = 0;
  int multiprocessors = 0;
};

/// How many CUDA devices there are. No driver, or no device, is an error (kUnimplemented, with
/// CUDA's reason), never an abort.
StatusOr<int> cudaDeviceCount();

/// The properties of device `id` (also selects it for the calling thread).
StatusOr<CudaDeviceInfo> probeCudaDevice(int id = 0);

/// An owned CUDA stream (non-blocking with respect to the default stream).
class DeviceStream {
 public:
  static StatusOr<DeviceStream> create();
  DeviceStream() = default;
  DeviceStream(DeviceStream&& other) noexcept;
  DeviceStream& operator=(DeviceStream&& other) noexcept;
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;
  ~DeviceStream();

  CudaStream get() const { return stream_; }
  /// Waits for the stream's work; an asynchronous kernel fault shows up here, named after `what`.
  Status synchronize(const std::string& what = "stream") const;

 private:
  CudaStream stream_ = nullptr;
};

/// An owned device allocation (cudaMalloc). Out of memory is kResourceExhausted naming the size.
class DeviceBuffer {
 public:
  static StatusOr<DeviceBuffer> allocate(size_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

/// Asynchronous copies and fill on `stream` (host memory need not be pinned; pageable copies are
/// synchronous with respect to the host).
Status copyToDevice(void* device_dst, const void* host_src, size_t bytes, CudaStream stream);
Status copyToHost(void* host_dst, const void* device_src, size_t bytes, CudaStream stream);
/// Device to device on the same GPU (inputs handed over as device memory, e.g. through DLPack).
Status copyOnDevice(void* device_dst, const void* device_src, size_t bytes, CudaStream stream);
/// Sets `bytes` bytes at `device_dst` to `value` (tests poison outputs with it).
Status fillDevice(void* device_dst, int value, size_t bytes, CudaStream stream);

/// Page-locked host memory (cudaMallocHost): copies between it and the device are asynchronous
/// with respect to the host, so the source or destination must stay untouched until the stream
/// has passed the copy. Out of memory is kResourceExhausted naming the size.
class PinnedBuffer {
 public:
  static StatusOr<PinnedBuffer> allocate(size_t bytes);
  PinnedBuffer() = default;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

/// A CUDA graph captured from a stream and instantiated (an owned cudaGraphExec_t): launching it
/// replays the captured kernels with the pointers and arguments they were captured with.
class DeviceGraph {
 public:
  DeviceGraph() = default;
  DeviceGraph(DeviceGraph&& other) noexcept;
  DeviceGraph& operator=(DeviceGraph&& other) noexcept;
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;
  ~DeviceGraph();

  /// Launches the graph on `stream` (asynchronously, ordered after the stream's earlier work).
  Status launch(CudaStream stream) const;

 private:
  friend StatusOr<DeviceGraph> endStreamCapture(CudaStream stream);
  void* exec_ = nullptr;
};

/// An owned CUDA event with timing (cudaEventCreate): recorded on a stream, it marks the point the
/// stream's work has reached; two recorded events give the device time between them.
class DeviceEvent {
 public:
  static StatusOr<DeviceEvent> create();
  DeviceEvent() = default;
  DeviceEvent(DeviceEvent&& other) noexcept;
  DeviceEvent& operator=(DeviceEvent&& other) noexcept;
  DeviceEvent(const DeviceEvent&) = delete;
  DeviceEvent& operator=(const DeviceEvent&) = delete;
  ~DeviceEvent();

  Status record(CudaStream stream) const;
  /// Milliseconds between `start` and `end`, both recorded and completed (synchronize first).
  static StatusOr<double> elapsedMs(const DeviceEvent& start, const DeviceEvent& end);

 private:
  void* event_ = nullptr;
};

/// Starts capturing the work submitted to `stream` (thread-local mode: a call on this thread that
/// cannot be captured, such as cudaMalloc or a synchronization, fails and invalidates the capture;
/// other threads are not affected). Nothing submitted during a capture runs until the graph is
/// launched.
Status beginStreamCapture(CudaStream stream);
/// Ends the capture of `stream` and instantiates the graph. A capture that some call invalidated,
/// or an empty one, is an error with CUDA's reason; the stream is out of capture mode either way.
StatusOr<DeviceGraph> endStreamCapture(CudaStream stream);

// --- a device's state for the kernels (kernels/cuda/device_context.cc) ---------------------------

/// What the kernels of one device need besides their operands (IREE's HAL device): the stream
/// they are queued on, the device and its SM count (probed once), and the library handles and
/// caches (cuBLASLt, cuDNN, the convolution algorithm choices), made on first use and owned here,
/// not in statics. One per executor and device; used by one thread at a time (the executor's
/// runs are serialized).
/// Which float32 products may round their operands to TF32 (a 10-bit mantissa, float16's) on
/// tensor cores. kConvolutions is torch's default (torch.backends.cudnn.allow_tf32 on,
/// torch.backends.cuda.matmul.allow_tf32 off); kNone computes float32 in float32 throughout.
/// Float16 and bfloat16 are not affected.
enum class Tf32 { kNone, kConvolutions, kAll };

class TuningCache;

/// How a device context computes and what it remembers across processes.
struct CudaContextOptions {
  Tf32 tf32 = Tf32::kNone;
  /// A tuning cache file (tuning_cache.h) for the timed choices (convolution algorithms and
  /// graph plans); empty: they are timed again in each process.
  std::string tuning_cache;
};

class CudaDeviceContext {
 public:
  /// A context of the calling thread's current device, its work queued on `stream` (not owned:
  /// it must outlive the context). Kernels and tests default to no TF32 (results comparable with
  /// float32 references); the runtime asks for its CudaOptions' policy. A tuning cache file that
  /// cannot be read is an error naming it.
  static StatusOr<std::unique_ptr<CudaDeviceContext>> create(
      CudaStream stream, const CudaContextOptions& options = {});
  ~CudaDeviceContext();
  CudaDeviceContext(const CudaDeviceContext&) = delete;
  CudaDeviceContext& operator=(const CudaDeviceContext&) = delete;

  CudaStream stream() const { return stream_; }
  int device() const { return device_; }
  int smCount() const { return sm_count_; }
  Tf32 tf32() const { return tf32_; }
  /// Whether a float32 convolution, or a float32 matrix product, may use TF32 tensor cores.
  bool tf32Convolutions() const { return tf32_ != Tf32::kNone; }
  bool tf32Matmuls() const { return tf32_ == Tf32::kAll; }
  /// The tuning cache, or nullptr without one.
  TuningCache* tuning() const { return tuning_.get(); }

  /// The library handles and caches (kernels/cuda/device_context.h, CUDA builds).
  struct Libraries;
  Libraries& libraries() { return *libraries_; }

 private:
  CudaDeviceContext(CudaStream stream, int device, int sm_count, Tf32 tf32,
                    std::unique_ptr<TuningCache> tuning);
  CudaStream stream_ = nullptr;
  int device_ = 0;
  int sm_count_ = 0;
  Tf32 tf32_ = Tf32::kNone;
  std::unique_ptr<TuningCache> tuning_;
  std::unique_ptr<Libraries> libraries_;
};

// --- launching a node's kernel (kernels/cuda/launch_table.cc) ------------------------------------

/// A node as the kernels see it: the op, its opset, device views of its inputs and outputs (shapes
/// already inferred: outputs are allocated by the caller) and its attributes. An omitted optional
/// input is a view with dtype kUndefined.
struct CudaKernelCall {
  std::string domain;  ///< "" or "ai.onnx" for the default domain
  std::string op;
  int64_t opset = 0;
  std::vector<ConstTensorView> inputs;
  std::vector<TensorView> outputs;
  const KernelAttrs* attrs = nullptr;  ///< nullptr: no attributes
  /// Per input: its data on the host when the input is a constant known when planning (an
  /// initializer, a Constant, a folded shape value), nullptr otherwise (or a shorter vector).
  /// Kernels read small operands here (Slice starts, Reduce axes, Resize scales) instead of
  /// copying them from the device; when such an operand is not constant, canImplement refuses and
  /// the node runs on the CPU.
  std::vector<const HostTensor*> constant_inputs;
  void* workspace = nullptr;  ///< cudaWorkspaceBytes(call) bytes of device memory
  size_t workspace_bytes = 0;
};

/// A CUDA kernel of an op in a plugin's own domain (include/onnxopt/plugin/plugin.h), as the
/// built-in families are: capability columns like a row of ops.def, a host-only check, the
/// scratch it needs and the launch.
struct CudaPluginKernel {
  std::string domain;  ///< the plugin's domain: not ONNX's, nor ours
  std::string op;
  int64_t since = 1;
  int64_t until = kCudaOpenOpset;
  int min_inputs = 1;
  int max_inputs = 1;
  std::vector<TypeSet> inputs;   ///< per input position (the last repeats)
  std::vector<TypeSet> outputs;  ///< per output position; empty: follow the inputs
  /// Shapes, ranks, attributes: what the kernel cannot take (no device access; pointers are not
  /// dereferenced). Empty: every call the capability columns admit.
  std::function<Support(const CudaKernelCall& call)> can_implement;
  /// Device scratch bytes (empty: none).
  std::function<StatusOr<size_t>(const CudaKernelCall& call)> workspace_bytes;
  /// Enqueues the kernel on `stream` (captured into CUDA graphs like the built-in ones: no
  /// synchronization, no allocation).
  std::function<Status(const CudaKernelCall& call, CudaStream stream)> launch;
};

/// Adds `kernel` for this process: cudaCapabilities(), cudaCanImplement and launchCudaKernel
/// answer for it from then on (in a build without CUDA the launch functions still refuse). A
/// domain of ONNX or ours, an op already registered, or a missing `launch` is kInvalidArgument.
Status registerCudaKernel(CudaPluginKernel kernel);

/// The registered plugin kernel for the op at this opset, or nullptr.
const CudaPluginKernel* findCudaPluginKernel(const std::string& domain, const std::string& op,
                                             int64_t opset);

/// Whether the launch table has a kernel for the op at this opset (every row of ops.def has one;
/// a build without CUDA has none).
bool hasCudaLaunch(const std::string& domain, const std::string& op, int64_t opset);

/// Host-only check of one node (no device needed): the family's canImplement over the parsed
/// arguments: types, ranks (at most 8), broadcastable shapes, output shapes and types, attributes.
/// The reason names the op. Pointers are not dereferenced.
Support cudaCanImplement(const CudaKernelCall& call);

/// Device scratch memory the node's kernel needs (0 for the elementwise families).
StatusOr<size_t> cudaWorkspaceBytes(const CudaKernelCall& call);

/// The name of the variant the node's kernel runs, for families with several (Attention's
/// table: kernels/cuda/attention/attention_variants.h), or empty. `opt bench --profile` prints it.
std::string cudaKernelVariant(const CudaKernelCall& call);

/// A node's kernel prepared once (CUTLASS's can_implement / initialize / run): the family's
/// arguments parsed from the call, its check and its workspace size asked once, so that a launch
/// only runs it. The pointers of the call's views are kept: a prepared kernel runs on the buffers
/// it was prepared with (the executor's are fixed per plan). The call's attributes and constant
/// inputs must outlive it (the arguments may point at them).
class PreparedCudaKernel {
 public:
  virtual ~PreparedCudaKernel() = default;
  /// The family's canImplement at preparation (a call that does not parse: no, with the reason).
  virtual const Support& support() const = 0;
  /// Device scratch bytes the kernel needs (0 for a refused kernel).
  virtual size_t workspaceBytes() const = 0;
  /// The workspace run() hands the kernel: at least workspaceBytes() bytes of device memory.
  virtual void setWorkspace(void* workspace, size_t bytes) = 0;
  /// The variant the kernel runs, for families with several (cudaKernelVariant), or empty.
  virtual const std::string& variant() const = 0;
  /// Enqueues the kernel on `ctx`'s stream (the context it was prepared with). A refused kernel is
  /// kUnimplemented with its reason.
  virtual Status run(CudaDeviceContext& ctx) const = 0;
};

/// Prepares the node's kernel on `ctx` (a workspace query may need the device: cuDNN's algorithm
/// choice). A node no kernel covers, or one the family refuses, gives a kernel whose support() is
/// no; errors are those of the workspace query.
StatusOr<std::unique_ptr<PreparedCudaKernel>> prepareCudaKernel(const CudaKernelCall& call,
                                                                CudaDeviceContext& ctx);

/// A registered plugin kernel prepared for `call` (its can_implement and workspace_bytes asked
/// once); run() calls its launch on the context's stream. Host C++ in every build: the runtime
/// prepares plugin kernels in the process they registered in.
StatusOr<std::unique_ptr<PreparedCudaKernel>> preparePluginKernel(const CudaPluginKernel& plugin,
                                                                  const CudaKernelCall& call);

/// Prepares and runs the node's kernel on `ctx` (tests and one-off launches; the executor prepares
/// once per plan).
Status launchCudaKernel(const CudaKernelCall& call, CudaDeviceContext& ctx);

/// The same on `stream`, with a device context made for this call (its handles and caches last as
/// long as the call: for tests and plugins; repeated launches keep a context).
Status launchCudaKernel(const CudaKernelCall& call, CudaStream stream);

}  // namespace onnxopt::kernels
