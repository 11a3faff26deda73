// Neural-network reference kernels: activations with attributes (LeakyRelu Elu Selu Celu
// HardSigmoid HardSwish Softplus Softsign Mish ThresholdedRelu Gelu PRelu), Softmax and LogSoftmax
// (coerce-to-2D before opset 13, one axis from 13), Dropout (training mode with numpy's legacy
// generator, mt19937.h), Conv, MaxPool, ConvTranspose, AveragePool, GlobalAveragePool,
// GlobalMaxPool and BatchNormalization (training mode, and spatial=0 before opset 9).
//
// Conv and the pools share one window geometry (kernel, strides, dilations, pads or auto_pad,
// ceil_mode):
//   out = floor((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1   (ceil with ceil_mode, and
//         one less when the last window would start inside the end padding)
//   SAME_UPPER/SAME_LOWER: out = ceil(in / s), the odd pad at the end / the beginning
// Floats compute in their compute type (float for float16/bfloat16, rounded once on store).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "float_out.h"
#include "mt19937.h"
#include "onnxopt/kernels/window.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

// --- activations
// ------------------------------------------------------------------------------------

enum class Act {
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kHardSigmoid,
  kHardSwish,
  kSoftplus,
  kSoftsign,
  kMish,
  kThresholdedRelu,
  kGelu,
  kGeluTanh
};

template <typename C>
C softplus(C x) {
  // log(1 + exp(x)) without overflow for large x.
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <typename C>
C activate(Act kind, C x, C alpha, C beta, C gamma) {
  switch (kind) {
    case Act::kLeakyRelu:
      return x < C(0) ? alpha * x : x;
    case Act::kElu:
      return x < C(0) ? alpha * (std::exp(x) - C(1)) : x;
    case Act::kSelu:
      return x > C(0) ? gamma * x : gamma * (alpha * std::exp(x) - alpha);
    case Act::kCelu:
      return std::max(C(0), x) + std::min(C(0), alpha * (std::exp(x / alpha) - C(1)));
    case Act::kHardSigmoid:
      return std::max(C(0), std::min(C(1), alpha * x + beta));
    case Act::kHardSwish:
      return x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5)));
    case Act::kSoftplus:
      return softplus(x);
    case Act::kSoftsign:
      return x / (C(1) + std::fabs(x));
    case Act::kMish:
      return x * std::tanh(softplus(x));
    case Act::kThresholdedRelu:
      return x > alpha ? x : C(0);
    case Act::kGelu:
      return C(0.5) * x * (C(1) + std::erf(x / std::sqrt(C(2))));
    case Act::kGeluTanh: {
      const C k = std::sqrt(C(2) / C(3.14159265358979323846));
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
  }
  return x;
}

// Softmax and LogSoftmax over rows of length n at stride inner (max-subtracted).
template <typename T>
void softmaxRows(const HostTensor& x, HostTensor& out, int64_t outer, int64_t n, int64_t inner,
                 bool log) {
  using C = Compute<T>;
  std::vector<C> row(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t base = o * n * inner + i;
      C mx = -std::numeric_limits<C>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        row[static_cast<size_t>(j)] = load<T>(x, base + j * inner);
        mx = std::max(mx, row[static_cast<size_t>(j)]);
      }
      C sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(row[static_cast<size_t>(j)] - mx);
      for (int64_t j = 0; j < n; ++j) {
        C v = row[static_cast<size_t>(j)] - mx;
        store<T>(out, base + j * inner, log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  }
}

}  // namespace

StatusOr<Outputs> activationKernel(const KernelContext& ctx) {
  static const std::map<std::string, Act> kinds = {
      {"LeakyRelu", Act::kLeakyRelu},
      {"Elu", Act::kElu},
      {"Selu", Act::kSelu},
      {"Celu", Act::kCelu},
      {"HardSigmoid", Act::kHardSigmoid},
      {"HardSwish", Act::kHardSwish},
      {"Softplus", Act::kSoftplus},
      {"Softsign", Act::kSoftsign},
      {"Mish", Act::kMish},
      {"ThresholdedRelu", Act::kThresholdedRelu},
      {"Gelu", Act::kGelu},
  };
  auto it = kinds.find(ctx.op);
  if (it == kinds.end()) return unimplemented(ctx, "unknown activation");
  Act kind = it->second;
  float alpha = 0, beta = 0, gamma = 0;
  switch (kind) {
    case Act::kLeakyRelu:
      alpha = ctx.attrs.getFloat("alpha", 0.01f);
      break;
    case Act::kElu:
    case Act::kCelu:
    case Act::kThresholdedRelu:
      alpha = ctx.attrs.getFloat("alpha", 1.0f);
      break;
    case Act::kSelu:
      alpha = ctx.attrs.getFloat("alpha", 1.67326319217681884765625f);
      gamma = ctx.attrs.getFloat("gamma", 1.05070102214813232421875f);
      break;
    case Act::kHardSigmoid:
      alpha = ctx.attrs.getFloat("alpha", 0.2f);
      beta = ctx.attrs.getFloat("beta", 0.5f);
      break;
    case Act::kGelu: {
      std::string approx = ctx.attrs.getString("approximate", "none");
      if (approx == "tanh") {
        kind = Act::kGeluTanh;
      } else if (approx != "none") {
        return invalidArgument("Gelu: approximate must be none or tanh, not '{}'", approx);
      }
      break;
    }
    default:
      break;
  }
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    int64_t n = x->numElements();
    for (int64_t i = 0; i < n; ++i) {
      store<T>(out, i, activate<C>(kind, load<T>(*x, i), C(alpha), C(beta), C(gamma)));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> preluKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* slope, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkSameType(ctx, {x, slope}));
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes({&x->dims, &slope->dims}));
  if (dims != x->dims) return invalidArgument("PRelu: slope cannot be broadcast to X");
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      mapBroadcast({x, slope}, dims, [&](int64_t i, const int64_t* off) {
        C v = load<T>(*x, off[0]);
        C s = load<T>(*slope, off[1]);
        if constexpr (kIsInt<T>) {
          store<T>(out, i, v < C(0) ? wrapMul<C>(v, s) : v);
        } else {
          store<T>(out, i, v < C(0) ? v * s : v);
        }
      });
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> softmaxKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  bool log = ctx.op == "LogSoftmax";
  int64_t rank = x->rank();
  ASSIGN_OR_RETURN(int64_t axis,
                   normalizeAxis(ctx.attrs.getInt("axis", ctx.opset < 13 ? 1 : -1), rank));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  // An empty tensor's other dims may multiply past int64: nothing below may run for it.
  if (out.numElements() == 0) return single(std::move(out));
  // Before opset 13 the input is read as a 2-D matrix [prod(dims[:axis]), prod(dims[axis:])].
  int64_t outer = dimProduct(x->dims, 0, axis);
  int64_t n = ctx.opset < 13 ? dimProduct(x->dims, axis, rank) : x->dims[static_cast<size_t>(axis)];
  int64_t inner = ctx.opset < 13 ? 1 : dimProduct(x->dims, axis + 1, rank);
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    softmaxRows<typename decltype(tag)::type>(*x, out, outer, n, inner, log);
    return Status::ok();
  }));
  return single(std::move(out));
}

// --- Dropout in training mode
// ----------------------------------------------------------------------

namespace {

// mask = uniform(0, 1) >= ratio, drawn in row-major order from numpy's legacy generator seeded with
// the `seed` attribute (what ONNX's reference implementation does, so seeded runs reproduce its
// outputs); y = mask * x * (1 / (1 - ratio)), computed in x's compute type. Without a seed the
// generator is seeded from std::random_device: fold-constants never folds such a node
// (pass::isNondeterministicNode).
StatusOr<Outputs> dropoutTraining(const KernelContext& ctx, const HostTensor& x, double ratio,
                                  bool double_ratio) {
  if (!(ratio >= 0.0 && ratio < 1.0)) {
    return invalidArgument("Dropout: ratio {} is outside [0, 1) in training mode", ratio);
  }
  uint32_t seed;
  if (ctx.attrs.has("seed")) {
    int64_t s = ctx.attrs.getInt("seed", 0);
    if (s < 0 || s > int64_t{0xffffffff}) {
      return invalidArgument("Dropout: seed {} is outside [0, 2^32)", s);
    }
    seed = static_cast<uint32_t>(s);
  } else {
    seed = std::random_device{}();
  }
  RETURN_IF_ERROR(visitFloat(ctx, x.dtype, [](auto) { return Status::ok(); }));
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(x.dtype, x.dims));
  ASSIGN_OR_RETURN(HostTensor mask, makeOutput(DataType::kBool, x.dims));
  Mt19937 rng(seed);
  for (int64_t i = 0; i < x.numElements(); ++i) mask.set<uint8_t>(i, rng.nextDouble() >= ratio);
  RETURN_IF_ERROR(visitFloat(ctx, x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    // The scale is computed in the ratio's precision, as numpy does (1 / (1 - r) in float32 for
    // a float32 ratio); m * x keeps the sign of a dropped x (-0), as numpy's product does.
    C scale = double_ratio ? static_cast<C>(1.0 / (1.0 - ratio))
                           : static_cast<C>(1.0f / (1.0f - static_cast<float>(ratio)));
    for (int64_t i = 0; i < x.numElements(); ++i) {
      C m = mask.get<uint8_t>(i) != 0 ? C(1) : C(0);
      store<T>(y, i, m * load<T>(x, i) * scale);
    }
    return Status::ok();
  }));
  Outputs outs;
  outs.push_back(std::move(y));
  if (ctx.num_outputs == 2) outs.push_back(std::move(mask));
  return outs;
}

}  // namespace

StatusOr<Outputs> dropoutKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (ctx.num_outputs > 2) return invalidArgument("Dropout: at most two outputs");
  if (ctx.opset >= 12) {
    const HostTensor* ratio_t = ctx.input(1);
    const HostTensor* training_t = ctx.input(2);
    bool training = false;
    if (training_t != nullptr) {
      if (training_t->dtype != DataType::kBool || training_t->numElements() != 1) {
        return invalidArgument("Dropout: training_mode must be a bool scalar");
      }
      training = training_t->get<uint8_t>(0) != 0;
    }
    double ratio = 0.5;
    bool double_ratio = false;
    if (ratio_t != nullptr) {
      double_ratio = ratio_t->dtype == DataType::kDouble;
      if (ratio_t->numElements() != 1) return invalidArgument("Dropout: ratio must be a scalar");
      ASSIGN_OR_RETURN(std::vector<double> r, readFloats<double>(ctx, *ratio_t));
      ratio = r[0];
    }
    // Training with ratio 0 keeps everything; any other ratio draws random numbers.
    if (training && ratio != 0.0) return dropoutTraining(ctx, *x, ratio, double_ratio);
  }
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (x->dtype == DataType::kString) return unsupportedType(ctx, x->dtype);
  Outputs outs;
  outs.push_back(*x);
  if (ctx.num_outputs == 2) {
    // The mask is bool from opset 10; before, it had X's type. Either way every element is kept
    // (ones, as ONNX's reference implementation gives; onnxruntime writes zeros before opset 10).
    if (ctx.opset < 10) {
      ASSIGN_OR_RETURN(HostTensor mask, makeOutput(x->dtype, x->dims));
      RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        if constexpr (kIsFloat<T>) {
          for (int64_t i = 0; i < mask.numElements(); ++i) store<T>(mask, i, 1);
          return Status::ok();
        } else {
          return unsupportedType(ctx, x->dtype);
        }
      }));
      outs.push_back(std::move(mask));
    } else {
      ASSIGN_OR_RETURN(HostTensor mask, makeOutput(DataType::kBool, x->dims));
      std::fill(mask.bytes.begin(), mask.bytes.end(), '\1');
      outs.push_back(std::move(mask));
    }
  }
  return outs;
}

// --- Conv and pooling
// -------------------------------------------------------------------------------

namespace {

// A reference kernel that would run for hours is refused (kResourceExhausted) rather than hang:
// at most this many multiply-adds, and this many kernel taps per window.
constexpr int64_t kMaxWork = int64_t{1} << 40;
constexpr int64_t kMaxKernelVolume = int64_t{1} << 24;

/// Fails unless the product of `factors` stays within kMaxWork.
Status checkWork(const KernelContext& ctx, std::initializer_list<int64_t> factors) {
  int64_t work = 1;
  for (int64_t f : factors) {
    if (f == 0) return Status::ok();
  }
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(work, f, &work) || work > kMaxWork) {
      return makeError(StatusCode::kResourceExhausted, "{}: too much work for a reference kernel",
                       ctx.op);
    }
  }
  return Status::ok();
}

StatusOr<Dims> windowAttr(const KernelContext& ctx, const char* name, size_t count,
                          int64_t fallback, int64_t min) {
  return kernels::windowAttr(ctx.op, ctx.attrs, name, count, fallback, min);
}

/// The window geometry of Conv and the pools over spatial dims `in` with `kernel`
/// (onnxopt/kernels/window.h), and at most kMaxKernelVolume taps.
StatusOr<Window> makeWindow(const KernelContext& ctx, const Dims& in, const Dims& kernel,
                            bool ceil_mode) {
  ASSIGN_OR_RETURN(Window w, windowOf(ctx.op, ctx.attrs, in, kernel, ceil_mode));
  ASSIGN_OR_RETURN(int64_t kv, checkedNumElements(kernel));
  if (kv > kMaxKernelVolume) {
    return makeError(StatusCode::kResourceExhausted, "{}: the kernel has {} taps", ctx.op, kv);
  }
  return w;
}

/// Calls f(o, taps, padded) for each output position o (flat over the spatial dims), where
/// taps[k] is the flat input index under kernel tap k or -1 where the tap falls into padding, and
/// padded counts the taps inside the padded input (for count_include_pad).
template <typename F>
void forEachWindow(const Window& w, F&& f) {
  size_t rank = w.in.size();
  int64_t n_out = w.outVolume(), n_k = w.kernelVolume();
  Dims in_strides = contiguousStrides(w.in);
  std::vector<int64_t> taps(static_cast<size_t>(n_k));
  // One buffer for the three per-dim counters (GCC 12 warns wrongly, -Wfree-nonheap-object, about
  // three separate vectors here).
  std::vector<int64_t> counters(3 * rank + 1, 0);
  int64_t* oc = counters.data();
  int64_t* kc = oc + rank;
  int64_t* start = kc + rank;
  for (int64_t o = 0; o < n_out; ++o) {
    for (size_t d = 0; d < rank; ++d) start[d] = oc[d] * w.strides[d] - w.pad_begin[d];
    std::fill(kc, kc + rank, 0);
    int64_t padded = 0;
    for (int64_t k = 0; k < n_k; ++k) {
      int64_t idx = 0;
      bool inside = true, in_pad = true;
      for (size_t d = 0; d < rank; ++d) {
        int64_t p = start[d] + kc[d] * w.dilations[d];
        if (p < 0 || p >= w.in[d]) {
          inside = false;
        } else {
          idx += p * in_strides[d];
        }
        if (p < -w.pad_begin[d] || p >= w.in[d] + w.pad_end[d]) in_pad = false;
      }
      taps[static_cast<size_t>(k)] = inside ? idx : -1;
      if (in_pad) ++padded;
      for (size_t d = rank; d-- > 0;) {
        if (++kc[d] < w.kernel[d]) break;
        kc[d] = 0;
      }
    }
    f(o, static_cast<const std::vector<int64_t>&>(taps), padded);
    for (size_t d = rank; d-- > 0;) {
      if (++oc[d] < w.out[d]) break;
      oc[d] = 0;
    }
  }
}

Dims spatialOf(const Dims& dims) {
  return Dims(dims.begin() + 2, dims.end());
}

Dims withSpatial(int64_t n, int64_t c, const Dims& spatial) {
  Dims d = {n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

}  // namespace

StatusOr<Outputs> convKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* wt, requireInput(ctx, 1));
  const HostTensor* b = ctx.input(2);
  RETURN_IF_ERROR(checkSameType(ctx, {x, wt}));
  if (b != nullptr && b->dtype != x->dtype) return invalidArgument("Conv: B has a different type");
  if (x->rank() < 3) return invalidArgument("Conv: X must have rank 3 or more, not {}", x->rank());
  if (wt->rank() != x->rank()) {
    return invalidArgument("Conv: W has rank {}, X has rank {}", wt->rank(), x->rank());
  }
  int64_t group = ctx.attrs.getInt("group", 1);
  int64_t n = x->dims[0], c = x->dims[1], m = wt->dims[0], cg = wt->dims[1];
  if (group < 1 || group > c || c % group != 0 || cg != c / group) {
    return invalidArgument("Conv: group {} does not fit {} input channels and W's {} per group",
                           group, c, cg);
  }
  if (m % group != 0) {
    return invalidArgument("Conv: group {} does not divide the {} output channels", group, m);
  }
  if (b != nullptr && (b->rank() != 1 || b->dims[0] != m)) {
    return invalidArgument("Conv: B must have shape [{}]", m);
  }
  Dims kernel = spatialOf(wt->dims);
  if (auto ks = ctx.attrs.getInts("kernel_shape"); ks && *ks != kernel) {
    return invalidArgument("Conv: kernel_shape does not match W");
  }
  if (std::find(kernel.begin(), kernel.end(), 0) != kernel.end()) {
    return invalidArgument("Conv: W has an empty kernel");
  }
  ASSIGN_OR_RETURN(Window w, makeWindow(ctx, spatialOf(x->dims), kernel, false));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, withSpatial(n, m, w.out)));
  // Empty: X's spatial volume may not fit int64 (a zero batch lets any dims through).
  if (out.numElements() == 0 || x->numElements() == 0) {
    RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
    return single(std::move(out));
  }
  RETURN_IF_ERROR(checkWork(ctx, {n, m, cg, w.outVolume(), w.kernelVolume()}));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    std::vector<C> xv = loadAll<T>(*x), wv = loadAll<T>(*wt);
    std::vector<C> bv =
        b != nullptr ? loadAll<T>(*b) : std::vector<C>(static_cast<size_t>(m), C(0));
    int64_t s_in = w.inVolume(), s_out = w.outVolume(), k_n = w.kernelVolume(), mg = m / group;
    std::vector<C> result(static_cast<size_t>(out.numElements()));
    forEachWindow(w, [&](int64_t o, const std::vector<int64_t>& taps, int64_t) {
      for (int64_t ni = 0; ni < n; ++ni) {
        for (int64_t mi = 0; mi < m; ++mi) {
          int64_t g = mi / mg;
          C acc = bv[static_cast<size_t>(mi)];
          for (int64_t ci = 0; ci < cg; ++ci) {
            const C* xp = xv.data() + (ni * c + g * cg + ci) * s_in;
            const C* wp = wv.data() + (mi * cg + ci) * k_n;
            for (int64_t k = 0; k < k_n; ++k) {
              int64_t t = taps[static_cast<size_t>(k)];
              if (t >= 0) acc += xp[t] * wp[k];
            }
          }
          result[static_cast<size_t>((ni * m + mi) * s_out + o)] = acc;
        }
      }
    });
    storeAll<T>(out, result);
    return Status::ok();
  }));
  return single(std::move(out));
}

// ConvTranspose scatters each input element through the kernel:
//   Y[n, g*Mg + m, i*s - pad_begin + k*d] += X[n, g*Cg + c, i] * W[g*Cg + c, m, k]
// out = s * (in - 1) + output_padding + (k - 1) * d + 1 - pad_begin - pad_end, or output_shape /
// SAME_*: out = in * s, with the total padding split as the spec says (odd half at the end for
// SAME_UPPER, at the beginning otherwise).
StatusOr<Outputs> convTransposeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* wt, requireInput(ctx, 1));
  const HostTensor* b = ctx.input(2);
  RETURN_IF_ERROR(checkSameType(ctx, {x, wt}));
  if (b != nullptr && b->dtype != x->dtype) {
    return invalidArgument("ConvTranspose: B has a different type");
  }
  if (x->rank() < 3) return invalidArgument("ConvTranspose: X must have rank 3 or more");
  if (wt->rank() != x->rank()) {
    return invalidArgument("ConvTranspose: W has rank {}, X has rank {}", wt->rank(), x->rank());
  }
  size_t rank = static_cast<size_t>(x->rank() - 2);
  int64_t group = ctx.attrs.getInt("group", 1);
  int64_t n = x->dims[0], c = x->dims[1];
  if (wt->dims[0] != c) {
    return invalidArgument("ConvTranspose: W has {} input channels, X has {}", wt->dims[0], c);
  }
  if (group < 1 || group > c || c % group != 0) {
    return invalidArgument("ConvTranspose: group {} does not divide {} channels", group, c);
  }
  int64_t mg = wt->dims[1], cg = c / group;
  if (mg > std::numeric_limits<int64_t>::max() / group) {
    return invalidArgument("ConvTranspose: too many output channels");
  }
  int64_t m = mg * group;
  if (b != nullptr && (b->rank() != 1 || b->dims[0] != m)) {
    return invalidArgument("ConvTranspose: B must have shape [{}]", m);
  }
  Dims kernel = spatialOf(wt->dims);
  if (auto ks = ctx.attrs.getInts("kernel_shape"); ks && *ks != kernel) {
    return invalidArgument("ConvTranspose: kernel_shape does not match W");
  }
  for (int64_t k : kernel) {
    if (k < 1 || k > kMaxWindowAttr) return invalidArgument("ConvTranspose: kernel size {}", k);
  }
  Dims in = spatialOf(x->dims);
  for (int64_t d : in) {
    if (d > kMaxSpatialDim) return invalidArgument("ConvTranspose: spatial dimension {}", d);
  }
  ASSIGN_OR_RETURN(Dims strides, windowAttr(ctx, "strides", rank, 1, 1));
  ASSIGN_OR_RETURN(Dims dilations, windowAttr(ctx, "dilations", rank, 1, 1));
  ASSIGN_OR_RETURN(Dims pads, windowAttr(ctx, "pads", 2 * rank, 0, 0));
  ASSIGN_OR_RETURN(Dims out_pad, windowAttr(ctx, "output_padding", rank, 0, 0));
  std::string auto_pad = ctx.attrs.getString("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return invalidArgument("ConvTranspose: unknown auto_pad '{}'", auto_pad);
  }
  auto out_shape = ctx.attrs.getInts("output_shape");
  if (out_shape) {
    // Either the spatial dims or the full shape.
    if (out_shape->size() == rank + 2) out_shape->erase(out_shape->begin(), out_shape->begin() + 2);
    if (out_shape->size() != rank)
      return invalidArgument("ConvTranspose: output_shape has the wrong rank");
    for (int64_t d : *out_shape) {
      if (d < 0 || d > kMaxSpatialDim) return invalidArgument("ConvTranspose: output_shape {}", d);
    }
  }
  Dims pad_begin(rank, 0), out(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    // Bounded by 2^40 * 2^31 * 2 < 2^72: too large for int64, so checked.
    int64_t full = 0, scaled = 0;
    if (__builtin_mul_overflow(strides[d], std::max<int64_t>(in[d], 1), &scaled) ||
        scaled > kMaxSpatialDim) {
      return invalidArgument("ConvTranspose: the output would be too large");
    }
    full = scaled - strides[d] + out_pad[d] + (kernel[d] - 1) * dilations[d] + 1;
    if (out_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out[d] = out_shape ? (*out_shape)[d] : in[d] * strides[d];  // <= scaled
      int64_t total = full - out[d];
      // A larger output_shape makes total negative: halve with floor division, as the spec does.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
    } else {
      if (auto_pad == "NOTSET") pad_begin[d] = pads[d];
      int64_t pad_end = auto_pad == "NOTSET" ? pads[d + rank] : 0;
      out[d] = full - pad_begin[d] - pad_end;
      if (out[d] < 0) return invalidArgument("ConvTranspose: pads exceed the output size");
    }
  }
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(x->dtype, withSpatial(n, m, out)));
  if (y.numElements() == 0) return single(std::move(y));
  ASSIGN_OR_RETURN(int64_t k_n, checkedNumElements(kernel));
  if (k_n > kMaxKernelVolume) {
    return makeError(StatusCode::kResourceExhausted, "ConvTranspose: the kernel has {} taps", k_n);
  }
  RETURN_IF_ERROR(checkWork(ctx, {n, c, mg, dimProduct(in, 0, static_cast<int64_t>(rank)), k_n}));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    std::vector<C> xv = loadAll<T>(*x), wv = loadAll<T>(*wt);
    int64_t s_in = dimProduct(in, 0, static_cast<int64_t>(rank));
    int64_t s_out = dimProduct(out, 0, static_cast<int64_t>(rank));
    Dims out_strides = contiguousStrides(out);
    std::vector<C> result(static_cast<size_t>(y.numElements()), C(0));
    if (b != nullptr) {
      std::vector<C> bv = loadAll<T>(*b);
      for (int64_t i = 0; i < n * m; ++i) {
        std::fill_n(result.begin() + i * s_out, s_out, bv[static_cast<size_t>(i % m)]);
      }
    }
    std::vector<int64_t> targets(static_cast<size_t>(k_n));
    Dims ic(rank, 0), kc(rank, 0);
    for (int64_t i = 0; i < s_in; ++i) {
      std::fill(kc.begin(), kc.end(), 0);
      for (int64_t k = 0; k < k_n; ++k) {
        int64_t t = 0;
        for (size_t d = 0; d < rank && t >= 0; ++d) {
          int64_t o = ic[d] * strides[d] - pad_begin[d] + kc[d] * dilations[d];
          t = o < 0 || o >= out[d] ? -1 : t + o * out_strides[d];
        }
        targets[static_cast<size_t>(k)] = t;
        for (size_t d = rank; d-- > 0;) {
          if (++kc[d] < kernel[d]) break;
          kc[d] = 0;
        }
      }
      for (int64_t ni = 0; ni < n; ++ni) {
        for (int64_t ci = 0; ci < c; ++ci) {
          int64_t g = ci / cg;
          C xval = xv[static_cast<size_t>((ni * c + ci) * s_in + i)];
          for (int64_t mi = 0; mi < mg; ++mi) {
            C* yp = result.data() + (ni * m + g * mg + mi) * s_out;
            const C* wp = wv.data() + (ci * mg + mi) * k_n;
            for (int64_t k = 0; k < k_n; ++k) {
              int64_t t = targets[static_cast<size_t>(k)];
              if (t >= 0) yp[t] += xval * wp[k];
            }
          }
        }
      }
      for (size_t d = rank; d-- > 0;) {
        if (++ic[d] < in[d]) break;
        ic[d] = 0;
      }
    }
    storeAll<T>(y, result);
    return Status::ok();
  }));
  return single(std::move(y));
}

StatusOr<Outputs> poolKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  bool is_max = ctx.op == "MaxPool";
  if (x->rank() < 3) return invalidArgument("{}: X must have rank 3 or more", ctx.op);
  size_t rank = static_cast<size_t>(x->rank() - 2);
  auto kernel = ctx.attrs.getInts("kernel_shape");
  if (!kernel) return invalidArgument("{}: kernel_shape is required", ctx.op);
  if (kernel->size() != rank) {
    return invalidArgument("{}: kernel_shape has {} values for {} spatial dims", ctx.op,
                           kernel->size(), rank);
  }
  bool is_lp = ctx.op == "LpPool";
  // LpPool's p: a float attribute at opset 1, an int after.
  double p = ctx.attrs.floats.count("p") ? ctx.attrs.getFloat("p", 2) : ctx.attrs.getInt("p", 2);
  if (is_lp && !(p > 0)) return invalidArgument("LpPool: p must be positive");
  if (ctx.op == "AveragePool" && ctx.opset < 19 && ctx.attrs.getInts("dilations")) {
    return invalidArgument("AveragePool: dilations before opset 19");
  }
  bool ceil_mode = ctx.attrs.getInt("ceil_mode", 0) != 0;
  ASSIGN_OR_RETURN(Window w, makeWindow(ctx, spatialOf(x->dims), *kernel, ceil_mode));
  int64_t storage_order = ctx.attrs.getInt("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) {
    return invalidArgument("MaxPool: storage_order must be 0 or 1");
  }
  if (ctx.num_outputs > (is_max ? 2u : 1u)) {
    return invalidArgument("{}: too many outputs ({})", ctx.op, ctx.num_outputs);
  }
  int64_t n = x->dims[0], c = x->dims[1];
  Dims out_dims = withSpatial(n, c, w.out);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  HostTensor indices;
  bool want_indices = ctx.num_outputs == 2;
  if (want_indices) {
    ASSIGN_OR_RETURN(indices, makeOutput(DataType::kInt64, out_dims));
  }
  bool include_pad = ctx.attrs.getInt("count_include_pad", 0) != 0;
  // Empty: X's spatial volume may not fit int64 (a zero batch lets any dims through).
  bool empty = out.numElements() == 0 || x->numElements() == 0;
  if (!empty) RETURN_IF_ERROR(checkWork(ctx, {n, c, w.outVolume(), w.kernelVolume()}));
  int64_t s_in = empty ? 0 : w.inVolume(), s_out = empty ? 0 : w.outVolume();
  // Column-major (storage_order 1) flat index of a row-major spatial index.
  Dims in_strides = empty ? Dims(rank, 1) : contiguousStrides(w.in);
  auto column_major = [&](int64_t idx) {
    int64_t r = 0, stride = 1;
    for (size_t d = 0; d < rank; ++d) {
      int64_t coord = (idx / in_strides[d]) % w.in[d];
      r += coord * stride;
      stride *= w.in[d];
    }
    return r;
  };
  auto body = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, x->dtype);
    } else {
      if (!is_max && !kIsFloat<T>) return unsupportedType(ctx, x->dtype);
      if (empty) return Status::ok();
      forEachWindow(w, [&](int64_t o, const std::vector<int64_t>& taps, int64_t padded) {
        for (int64_t nc = 0; nc < n * c; ++nc) {
          int64_t base = nc * s_in;
          if (is_max) {
            C best = std::numeric_limits<C>::lowest();
            if constexpr (kIsFloat<T>) best = -std::numeric_limits<C>::infinity();
            int64_t best_idx = -1;
            for (int64_t t : taps) {
              if (t < 0) continue;
              C v = load<T>(*x, base + t);
              if (best_idx < 0 || v > best) {
                best = v;
                best_idx = t;
              }
            }
            store<T>(out, nc * s_out + o, best);
            if (want_indices) {
              int64_t idx = best_idx < 0         ? 0
                            : storage_order == 1 ? column_major(best_idx)
                                                 : best_idx;
              indices.set<int64_t>(nc * s_out + o, base + idx);
            }
          } else {
            C sum = 0;
            int64_t count = 0;
            for (int64_t t : taps) {
              if (t < 0) continue;
              C v = load<T>(*x, base + t);
              sum += is_lp ? static_cast<C>(std::pow(std::fabs(v), p)) : v;
              ++count;
            }
            if (is_lp) {  // (sum |x|^p)^(1/p); padding adds zeros
              store<T>(out, nc * s_out + o, static_cast<C>(std::pow(sum, 1.0 / p)));
              continue;
            }
            if (include_pad) count = padded;
            store<T>(out, nc * s_out + o, sum / static_cast<C>(count));
          }
        }
      });
      return Status::ok();
    }
  };
  RETURN_IF_ERROR(visitType(ctx, x->dtype, body));
  Outputs outs;
  outs.push_back(std::move(out));
  if (want_indices) outs.push_back(std::move(indices));
  return outs;
}

StatusOr<Outputs> globalPoolKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  bool is_max = ctx.op == "GlobalMaxPool";
  if (x->rank() < 3) return invalidArgument("{}: X must have rank 3 or more", ctx.op);
  Dims out_dims(x->dims.size(), 1);
  out_dims[0] = x->dims[0];
  out_dims[1] = x->dims[1];
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  int64_t nc = out.numElements();
  if (x->numElements() == 0 && nc > 0) {
    return invalidArgument("{}: empty spatial dimensions", ctx.op);
  }
  int64_t s = nc == 0 ? 0 : x->numElements() / nc;
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    for (int64_t i = 0; i < nc; ++i) {
      C acc = is_max ? -std::numeric_limits<C>::infinity() : C(0);
      for (int64_t j = 0; j < s; ++j) {
        C v = load<T>(*x, i * s + j);
        acc = is_max ? std::max(acc, v) : acc + v;
      }
      store<T>(out, i, is_max ? acc : acc / static_cast<C>(s));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

namespace {

// Training mode, per channel group k over its n * inner elements (population statistics):
//   mean_k = E[x], var_k = E[(x - mean_k)^2], y = (x - mean_k) / sqrt(var_k + eps) * scale_k + B_k
//   running_mean = input_mean * momentum + mean * (1 - momentum) (running_var likewise)
// Outputs from opset 14: y, running_mean, running_var; before: y, running_mean, running_var,
// saved_mean (= mean), saved_var (= var), as ONNX's reference implementation computes them.
StatusOr<Outputs> batchNormTraining(const KernelContext& ctx, const HostTensor& x,
                                    const std::vector<const HostTensor*>& params, int64_t groups,
                                    int64_t inner) {
  int64_t n = x.dims[0];
  int64_t count = n * inner;
  if (count == 0) return invalidArgument("BatchNormalization: no elements for the statistics");
  std::vector<std::vector<double>> pv;
  for (const HostTensor* p : params) {
    ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *p));
    pv.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(std::vector<double> xv, readFloats<double>(ctx, x));
  double eps = ctx.attrs.getFloat("epsilon", 1e-5f);
  double momentum = ctx.attrs.getFloat("momentum", 0.9f);
  auto g = static_cast<size_t>(groups);
  std::vector<double> mean(g, 0.0), var(g, 0.0), y(xv.size());
  auto at = [&](int64_t ni, int64_t k, int64_t j) {
    return static_cast<size_t>((ni * groups + k) * inner + j);
  };
  for (int64_t k = 0; k < groups; ++k) {
    auto kk = static_cast<size_t>(k);
    double sum = 0;
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t j = 0; j < inner; ++j) sum += xv[at(ni, k, j)];
    mean[kk] = sum / static_cast<double>(count);
    double sq = 0;
    for (int64_t ni = 0; ni < n; ++ni) {
      for (int64_t j = 0; j < inner; ++j) {
        double d = xv[at(ni, k, j)] - mean[kk];
        sq += d * d;
      }
    }
    var[kk] = sq / static_cast<double>(count);
    double inv = 1.0 / std::sqrt(var[kk] + eps);
    for (int64_t ni = 0; ni < n; ++ni) {
      for (int64_t j = 0; j < inner; ++j) {
        size_t i = at(ni, k, j);
        y[i] = (xv[i] - mean[kk]) * inv * pv[0][kk] + pv[1][kk];
      }
    }
  }
  std::vector<double> run_mean(g), run_var(g);
  for (size_t k = 0; k < g; ++k) {
    run_mean[k] = pv[2][k] * momentum + mean[k] * (1 - momentum);
    run_var[k] = pv[3][k] * momentum + var[k] * (1 - momentum);
  }
  std::vector<const std::vector<double>*> values = {&y, &run_mean, &run_var, &mean, &var};
  Outputs outs;
  for (size_t i = 0; i < ctx.num_outputs; ++i) {
    const HostTensor& like = i == 0 ? x : *params[i == 1 || i == 3 ? 2 : 3];
    ASSIGN_OR_RETURN(HostTensor t, floatsToTensor(ctx, like.dtype, like.dims, *values[i]));
    outs.push_back(std::move(t));
  }
  return outs;
}

}  // namespace

StatusOr<Outputs> batchNormKernel(const KernelContext& ctx) {
  // From opset 14 the attribute selects training mode; before, asking for the statistics outputs
  // does. Before opset 9, spatial=0 keeps statistics per (channel, spatial position).
  bool training = ctx.opset >= 14 ? ctx.attrs.getInt("training_mode", 0) != 0 : ctx.num_outputs > 1;
  bool spatial = ctx.opset >= 9 || ctx.attrs.getInt("spatial", 1) != 0;
  size_t max_outputs = !training ? 1 : ctx.opset >= 14 ? 3 : 5;
  if (ctx.num_outputs > max_outputs) {
    return invalidArgument("BatchNormalization: at most {} outputs {}", max_outputs,
                           training ? "in training mode" : "without training_mode=1");
  }
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  std::vector<const HostTensor*> params;
  for (size_t i = 1; i <= 4; ++i) {
    ASSIGN_OR_RETURN(const HostTensor* p, requireInput(ctx, i));
    params.push_back(p);
  }
  if (x->rank() < 2) return invalidArgument("BatchNormalization: X must have rank 2 or more");
  int64_t c = x->dims[1];
  Dims param_dims = spatial ? Dims{c} : Dims(x->dims.begin() + 1, x->dims.end());
  for (const HostTensor* p : params) {
    if (p->dims != param_dims) {
      return invalidArgument("BatchNormalization: scale, B, mean and var must have shape [{}]",
                             fmt::join(param_dims, ", "));
    }
  }
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  // An empty tensor's spatial volume may not fit int64: nothing below may multiply its dims.
  int64_t s = x->numElements() == 0 ? 0 : dimProduct(x->dims, 2, x->rank());
  // Element (n, k, j) of X is at (n * groups + k) * inner + j; parameter k applies to it.
  int64_t groups = spatial ? c : c * s;
  int64_t inner = spatial ? s : 1;
  if (training) return batchNormTraining(ctx, *x, params, groups, inner);
  float eps = ctx.attrs.getFloat("epsilon", 1e-5f);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if (x->numElements() == 0) return Status::ok();
    std::vector<std::vector<C>> pv;
    for (const HostTensor* p : params) {
      ASSIGN_OR_RETURN(std::vector<C> v, readFloats<C>(ctx, *p));
      pv.push_back(std::move(v));
    }
    int64_t n = x->dims[0];
    for (int64_t k = 0; k < groups; ++k) {
      auto kk = static_cast<size_t>(k);
      C scale = pv[0][kk] / std::sqrt(pv[3][kk] + C(eps));
      C shift = pv[1][kk] - pv[2][kk] * scale;
      for (int64_t ni = 0; ni < n; ++ni) {
        int64_t base = (ni * groups + k) * inner;
        for (int64_t j = 0; j < inner; ++j)
          store<T>(out, base + j, load<T>(*x, base + j) * scale + shift);
      }
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
