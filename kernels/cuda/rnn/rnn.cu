// Device code of the recurrent family (rnn_device.h): the state setup, the per-step gate kernels
// (one thread per direction, batch entry and hidden unit; the matrix products are cuBLASLt's,
// driven by rnn.cc) and the final states. Arithmetic is float; T is the storage type.
#include "kernels/cuda/element_types.cuh"
#include "kernels/cuda/rnn/rnn_device.h"

namespace onnxopt::kernels::cuda {

namespace {

__device__ __forceinline__ float sigmoidOf(float x) {
  if (x >= 0) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

__device__ __forceinline__ float activate(const RnnActivation& a, float x) {
  switch (a.kind) {
    case RnnActivationKind::kRelu:
      return x > 0 ? x : 0.0f;
    case RnnActivationKind::kTanh:
      return tanhf(x);
    case RnnActivationKind::kSigmoid:
      return sigmoidOf(x);
    case RnnActivationKind::kAffine:
      return a.alpha * x + a.beta;
    case RnnActivationKind::kLeakyRelu:
      return x >= 0 ? x : a.alpha * x;
    case RnnActivationKind::kThresholdedRelu:
      return x > a.alpha ? x : 0.0f;
    case RnnActivationKind::kScaledTanh:
      return a.alpha * tanhf(a.beta * x);
    case RnnActivationKind::kHardSigmoid:
      return fminf(fmaxf(a.alpha * x + a.beta, 0.0f), 1.0f);
    case RnnActivationKind::kElu:
      return x >= 0 ? x : a.alpha * (expf(x) - 1.0f);
    case RnnActivationKind::kSoftsign:
      return x / (1.0f + fabsf(x));
    case RnnActivationKind::kSoftplus:
      return x > 30.0f ? x : log1pf(expf(x));
  }
  return x;
}

/// Where thread `i` works: direction d, batch entry b, hidden unit j, and its state's index.
struct Unit {
  int64_t d, b, j, state;
};

__device__ __forceinline__ Unit unitOf(const RnnDeviceArgs& a, int64_t i) {
  Unit u;
  u.j = i % a.hidden;
  int64_t rest = i / a.hidden;
  u.b = rest % a.batch;
  u.d = rest / a.batch;
  u.state = i;
  return u;
}

__device__ __forceinline__ int64_t lengthOf(const RnnDeviceArgs& a, int64_t b) {
  if (a.seq_lens == nullptr) return a.seq;
  int64_t len = a.seq_lens[b];
  return len < 0 ? 0 : len > a.seq ? a.seq : len;
}

/// The element offset of (d, b, j) in a state tensor of the node's layout (initial_h, Y_h).
__device__ __forceinline__ int64_t stateOffset(const RnnDeviceArgs& a, const Unit& u) {
  return a.batch_first ? (u.b * a.dirs + u.d) * a.hidden + u.j
                       : (u.d * a.batch + u.b) * a.hidden + u.j;
}

/// The time step `step` stands for in direction d of batch entry b, and whether it is within the
/// entry's sequence (else the state is kept and Y at time `step` is zeroed).
struct Time {
  int64_t t;
  bool active;
};

__device__ __forceinline__ Time timeOf(const RnnDeviceArgs& a, const Unit& u, int64_t step) {
  int64_t len = lengthOf(a, u.b);
  if (step >= len) return {step, false};
  bool reverse = a.reverse_only || u.d == 1;
  return {reverse ? len - 1 - step : step, true};
}

/// Where unit u's pre-activations at time t start: its rows of xw and hr (gate 0) and the offset
/// of its Wb (Rb is G*H further). hr rows hold `hr_gates` blocks (GRU with linear_before_reset 0:
/// z and r only).
struct Gates {
  const float* xw;
  const float* hr;
  int64_t bias;
};

__device__ __forceinline__ Gates gatesOf(const RnnDeviceArgs& a, const Unit& u, int64_t t,
                                         int64_t gates, int64_t hr_gates) {
  int64_t gh = gates * a.hidden;
  int64_t row = a.batch_first ? u.b * a.seq + t : t * a.batch + u.b;
  return {a.xw + (row * a.dirs + u.d) * gh, a.hr + (u.d * a.batch + u.b) * hr_gates * a.hidden,
          u.d * 2 * gh + u.j};
}

template <typename T>
__device__ __forceinline__ float biasOf(const RnnDeviceArgs& a, int64_t offset) {
  return a.bias != nullptr ? load(static_cast<const T*>(a.bias), offset) : 0.0f;
}

__device__ __forceinline__ float clipped(const RnnDeviceArgs& a, float x) {
  return a.clipped ? fminf(fmaxf(x, -a.clip), a.clip) : x;
}

/// X W^T + Wb + H R^T + Rb of gate block `gate` (of `gates`) for unit j.
template <typename T>
__device__ __forceinline__ float preActivation(const RnnDeviceArgs& a, const Gates& g, int64_t j,
                                               int64_t gate, int64_t gates) {
  int64_t at = gate * a.hidden + j;
  return g.xw[at] + biasOf<T>(a, g.bias + gate * a.hidden) + g.hr[at] +
         biasOf<T>(a, g.bias + (gates + gate) * a.hidden);
}

template <typename T>
__global__ void rnnInitKernel(RnnDeviceArgs a) {
  int64_t count = a.dirs * a.batch * a.hidden;
  ONNXOPT_GRID_STRIDE(i, count) {
    Unit u = unitOf(a, i);
    int64_t at = stateOffset(a, u);
    float h = a.initial_h != nullptr ? load(static_cast<const T*>(a.initial_h), at) : 0.0f;
    a.hf[i] = h;
    store(static_cast<T*>(a.h), i, h);
    if (a.c != nullptr) {
      a.c[i] = a.initial_c != nullptr ? load(static_cast<const T*>(a.initial_c), at) : 0.0f;
    }
  }
}

template <typename T>
__global__ void rnnResetKernel(RnnDeviceArgs a, int64_t step) {
  const int64_t h_size = a.hidden;
  int64_t count = a.dirs * a.batch * h_size;
  ONNXOPT_GRID_STRIDE(i, count) {
    Unit u = unitOf(a, i);
    Time tm = timeOf(a, u, step);
    float rh = 0.0f;
    if (tm.active) {
      const RnnActivation* act = a.acts + u.d * 2;
      Gates g = gatesOf(a, u, tm.t, 3, 2);
      float r = activate(act[0], clipped(a, preActivation<T>(a, g, u.j, 1, 3)));
      rh = r * a.hf[i];
    }
    store(static_cast<T*>(a.rh), i, rh);
  }
}

template <typename T>
__device__ __forceinline__ void writeY(const RnnDeviceArgs& a, const Unit& u, int64_t t, float v) {
  if (a.y == nullptr) return;
  int64_t at = a.batch_first ? ((u.b * a.seq + t) * a.dirs + u.d) * a.hidden + u.j
                             : ((t * a.dirs + u.d) * a.batch + u.b) * a.hidden + u.j;
  store(static_cast<T*>(a.y), at, v);
}

template <typename T>
__global__ void rnnStepKernel(RnnDeviceArgs a, int64_t step) {
  const int64_t hs = a.hidden;
  int64_t count = a.dirs * a.batch * hs;
  ONNXOPT_GRID_STRIDE(i, count) {
    Unit u = unitOf(a, i);
    Time tm = timeOf(a, u, step);
    if (!tm.active) {
      writeY<T>(a, u, tm.t, 0.0f);
      continue;
    }
    float h_prev = a.hf[i];
    float h_new;
    if (a.cell == RnnCell::kRnn) {
      Gates g = gatesOf(a, u, tm.t, 1, 1);
      const RnnActivation* act = a.acts + u.d;
      h_new = activate(act[0], clipped(a, preActivation<T>(a, g, u.j, 0, 1)));
    } else if (a.cell == RnnCell::kGru) {
      const RnnActivation* act = a.acts + u.d * 2;
      // linear_before_reset 0: hr holds z and r ([D, B, 2H]), hn the candidate's (r . H) Rh^T.
      Gates g = gatesOf(a, u, tm.t, 3, a.linear_before_reset ? 3 : 2);
      float z = activate(act[0], clipped(a, preActivation<T>(a, g, u.j, 0, 3)));
      float cand;
      if (a.linear_before_reset) {
        float r = activate(act[0], clipped(a, preActivation<T>(a, g, u.j, 1, 3)));
        cand = r * (g.hr[2 * hs + u.j] + biasOf<T>(a, g.bias + 5 * hs));
      } else {
        cand = a.hn[i] + biasOf<T>(a, g.bias + 5 * hs);
      }
      float n =
          activate(act[1], clipped(a, g.xw[2 * hs + u.j] + biasOf<T>(a, g.bias + 2 * hs) + cand));
      h_new = (1.0f - z) * n + z * h_prev;
    } else {
      // LSTM gates iofc; P is iof.
      Gates g = gatesOf(a, u, tm.t, 4, 4);
      const RnnActivation* act = a.acts + u.d * 3;
      auto pre = [&](int64_t gate) { return preActivation<T>(a, g, u.j, gate, 4); };
      const T* p = static_cast<const T*>(a.peephole);
      int64_t p0 = u.d * 3 * hs + u.j;
      float pi = p != nullptr ? load(p, p0) : 0.0f;
      float po = p != nullptr ? load(p, p0 + hs) : 0.0f;
      float pf = p != nullptr ? load(p, p0 + 2 * hs) : 0.0f;
      float c_prev = a.c[i];
      float ig = activate(act[0], clipped(a, pre(0) + pi * c_prev));
      float fg = a.input_forget ? 1.0f - ig : activate(act[0], clipped(a, pre(2) + pf * c_prev));
      float cand = activate(act[1], clipped(a, pre(3)));
      float c_new = fg * c_prev + ig * cand;
      float og = activate(act[0], clipped(a, pre(1) + po * c_new));
      h_new = og * activate(act[2], c_new);
      a.c[i] = c_new;
    }
    a.hf[i] = h_new;
    store(static_cast<T*>(a.h), i, h_new);
    writeY<T>(a, u, tm.t, h_new);
  }
}

template <typename T>
__global__ void rnnFinalKernel(RnnDeviceArgs a) {
  int64_t count = a.dirs * a.batch * a.hidden;
  ONNXOPT_GRID_STRIDE(i, count) {
    Unit u = unitOf(a, i);
    bool ran = lengthOf(a, u.b) > 0;
    int64_t at = stateOffset(a, u);
    if (a.y_h != nullptr) store(static_cast<T*>(a.y_h), at, ran ? a.hf[i] : 0.0f);
    if (a.y_c != nullptr) store(static_cast<T*>(a.y_c), at, ran ? a.c[i] : 0.0f);
  }
}

template <typename T>
__global__ void rnnProductKernel(RnnProductArgs p) {
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  ONNXOPT_GRID_STRIDE(i, p.batch * p.m * p.n) {
    int64_t col = i % p.n, rest = i / p.n;
    int64_t row = rest % p.m, mat = rest / p.m;
    const T* ar = a + mat * p.stride_a + row * p.k;
    const T* br = b + mat * p.stride_b + col * p.k;
    float sum = 0.0f;
    for (int64_t q = 0; q < p.k; ++q) sum += load(ar, q) * load(br, q);
    p.d[mat * p.stride_d + row * p.n + col] = sum;
  }
}

/// Calls launch(TypeTag<T>{}, blocks) for `dtype`'s storage type, for `count` threads.
template <typename Launch>
cudaError_t launchTyped(DataType dtype, int64_t count, Launch&& launch) {
  if (count == 0) return cudaSuccess;
  unsigned blocks = blocksFor(count);
  switch (dtype) {
    case DataType::kFloat:
      launch(TypeTag<float>{}, blocks);
      break;
    case DataType::kFloat16:
      launch(TypeTag<__half>{}, blocks);
      break;
    case DataType::kBfloat16:
      launch(TypeTag<__nv_bfloat16>{}, blocks);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

/// One thread per direction, batch entry and hidden unit.
template <typename Launch>
cudaError_t launchFor(const RnnDeviceArgs& a, Launch&& launch) {
  return launchTyped(a.dtype, a.dirs * a.batch * a.hidden, launch);
}

}  // namespace

bool rnnKernelExists(DataType dtype) {
  return dtype == DataType::kFloat || dtype == DataType::kFloat16 || dtype == DataType::kBfloat16;
}

cudaError_t launchRnnInit(const RnnDeviceArgs& args, cudaStream_t stream) {
  return launchFor(args, [&](auto tag, unsigned blocks) {
    using T = typename decltype(tag)::type;
    rnnInitKernel<T><<<blocks, kThreads, 0, stream>>>(args);
  });
}

cudaError_t launchRnnReset(const RnnDeviceArgs& args, int64_t step, cudaStream_t stream) {
  return launchFor(args, [&](auto tag, unsigned blocks) {
    using T = typename decltype(tag)::type;
    rnnResetKernel<T><<<blocks, kThreads, 0, stream>>>(args, step);
  });
}

cudaError_t launchRnnStep(const RnnDeviceArgs& args, int64_t step, cudaStream_t stream) {
  return launchFor(args, [&](auto tag, unsigned blocks) {
    using T = typename decltype(tag)::type;
    rnnStepKernel<T><<<blocks, kThreads, 0, stream>>>(args, step);
  });
}

cudaError_t launchRnnProduct(const RnnProductArgs& args, cudaStream_t stream) {
  return launchTyped(args.dtype, args.batch * args.m * args.n, [&](auto tag, unsigned blocks) {
    using T = typename decltype(tag)::type;
    rnnProductKernel<T><<<blocks, kThreads, 0, stream>>>(args);
  });
}

cudaError_t launchRnnFinal(const RnnDeviceArgs& args, cudaStream_t stream) {
  return launchFor(args, [&](auto tag, unsigned blocks) {
    using T = typename decltype(tag)::type;
    rnnFinalKernel<T><<<blocks, kThreads, 0, stream>>>(args);
  });
}

}  // namespace onnxopt::kernels::cuda
