// Signal-processing reference kernels: the window functions, DFT, STFT and MelWeightMatrix.
//   Hann:     w[n] = sin^2(pi n / N)
//   Hamming:  w[n] = 25/46 - 21/46 cos(2 pi n / N)
//   Blackman: w[n] = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
//             with N = size (periodic) or size - 1 (symmetric)
//   DFT:      Y[k] = sum_t X[t] e^(-+2 pi i k t / L)  (1/L for the inverse)
//   STFT:     Y[b, f, k] = sum_n x[b, f * step + n] w[n] e^(-2 pi i k n / L)
// The transforms are direct sums in double (no FFT): reference numbers, not speed. They refuse
// more than 2^36 complex multiply-adds (kResourceExhausted).
#include <cmath>
#include <numbers>

#include "low_precision.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

constexpr int64_t kMaxSignalWork = int64_t{1} << 36;

/// The output element type named by `output_datatype` (float by default).
StatusOr<DataType> outputType(const KernelContext& ctx) {
  int64_t code = ctx.attrs.getInt("output_datatype", static_cast<int64_t>(DataType::kFloat));
  if (code < 0 || code > kMaxKnownDataType) {
    return invalidArgument("{}: bad output_datatype {}", ctx.op, code);
  }
  auto t = static_cast<DataType>(code);
  bool ok = t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
            t == DataType::kBfloat16 ||
            (elementBytes(t) > 0 && t != DataType::kBool && t != DataType::kComplex64 &&
             t != DataType::kComplex128 && !isLowPrecision(t));
  if (!ok) return unsupportedType(ctx, t);
  return t;
}

Status storeDouble(const KernelContext& ctx, HostTensor& t, int64_t i, double v) {
  Num n;
  n.is_float = true;
  n.f = v;
  storeNum(ctx, t, i, n);
  return Status::ok();
}

Status checkWork(const KernelContext& ctx, int64_t lines, int64_t a, int64_t b) {
  double work = static_cast<double>(lines) * static_cast<double>(a) * static_cast<double>(b);
  if (work > static_cast<double>(kMaxSignalWork)) {
    return makeError(StatusCode::kResourceExhausted, "{}: {} multiply-adds are too many", ctx.op,
                     work);
  }
  return Status::ok();
}

/// e^(sign 2 pi i k t / L), with k t reduced mod L first so that long transforms stay exact; the
/// quarter turns (1, i, -1, -i) are exact rather than cos/sin of a rounded angle.
inline void twiddle(int64_t k, int64_t t, int64_t len, double sign, double& re, double& im) {
  uint64_t kk = static_cast<uint64_t>(k % len), tt = static_cast<uint64_t>(t % len), p = 0;
  double r;
  if (__builtin_mul_overflow(kk, tt, &p)) {
    r = std::fmod(static_cast<double>(kk) * static_cast<double>(tt), static_cast<double>(len));
  } else {
    uint64_t rr = p % static_cast<uint64_t>(len);
    if (len < (int64_t{1} << 60) && (rr * 4) % static_cast<uint64_t>(len) == 0) {
      static constexpr double kRe[] = {1, 0, -1, 0}, kIm[] = {0, 1, 0, -1};
      uint64_t quarter = rr * 4 / static_cast<uint64_t>(len);
      re = kRe[quarter];
      im = sign * kIm[quarter];
      return;
    }
    r = static_cast<double>(rr);
  }
  double a = sign * 2.0 * std::numbers::pi * r / static_cast<double>(len);
  re = std::cos(a);
  im = std::sin(a);
}

/// Loads a [.., 1 or 2] float tensor's elements as doubles.
StatusOr<std::vector<double>> loadSignal(const KernelContext& ctx, const HostTensor& x) {
  return readFloats<double>(ctx, x);
}

}  // namespace

StatusOr<Outputs> windowKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* size_t_in, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(int64_t size, readIntScalar(*size_t_in, "size"));
  if (size < 0) return invalidArgument("{}: negative size {}", ctx.op, size);
  ASSIGN_OR_RETURN(DataType type, outputType(ctx));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, {size}));
  bool periodic = ctx.attrs.getInt("periodic", 1) != 0;
  auto n_den = static_cast<double>(periodic ? size : size - 1);
  const double pi = std::numbers::pi;
  for (int64_t i = 0; i < size; ++i) {
    double x = static_cast<double>(i) / n_den;
    double w;
    if (ctx.op == "HannWindow") {
      double s = std::sin(pi * x);
      w = s * s;
    } else if (ctx.op == "HammingWindow") {
      w = 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(2 * pi * x);
    } else {
      w = 0.42 - 0.5 * std::cos(2 * pi * x) + 0.08 * std::cos(4 * pi * x);
    }
    RETURN_IF_ERROR(storeDouble(ctx, out, i, w));
  }
  return single(std::move(out));
}

StatusOr<Outputs> dftKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  int64_t rank = x->rank();
  if (rank < 2) return invalidArgument("DFT: the input needs rank 2 or more");
  int64_t comps = x->dims.back();
  if (comps != 1 && comps != 2) {
    return invalidArgument("DFT: the last dimension must be 1 (real) or 2 (complex), not {}",
                           comps);
  }
  int64_t axis_attr = ctx.opset >= 20 ? -2 : ctx.attrs.getInt("axis", 1);
  if (ctx.opset >= 20) {
    if (const HostTensor* a = ctx.input(2)) {
      ASSIGN_OR_RETURN(axis_attr, readIntScalar(*a, "axis"));
    }
  }
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(axis_attr, rank));
  if (axis == rank - 1) return invalidArgument("DFT: axis cannot be the last dimension");
  bool inverse = ctx.attrs.getInt("inverse", 0) != 0;
  bool onesided = ctx.attrs.getInt("onesided", 0) != 0;
  int64_t n = x->dims[static_cast<size_t>(axis)];
  int64_t len = inverse && onesided ? 2 * (n - 1) : n;
  if (const HostTensor* l = ctx.input(1)) {
    ASSIGN_OR_RETURN(len, readIntScalar(*l, "dft_length"));
  }
  if (len < 1) return invalidArgument("DFT: dft_length must be positive, not {}", len);
  int64_t outer = dimProduct(x->dims, 0, axis), inner = dimProduct(x->dims, axis + 1, rank - 1);
  int64_t out_n = !inverse && onesided ? len / 2 + 1 : len;
  int64_t out_c = inverse && onesided ? 1 : 2;
  Dims dims = x->dims;
  dims[static_cast<size_t>(axis)] = out_n;
  dims.back() = out_c;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  RETURN_IF_ERROR(checkWork(ctx, outer * inner, out_n, std::min(n, len)));
  ASSIGN_OR_RETURN(std::vector<double> v, loadSignal(ctx, *x));
  auto at = [&](int64_t o, int64_t t, int64_t i, int64_t c) -> double {
    if (c >= comps) return 0.0;
    return v[static_cast<size_t>(((o * n + t) * inner + i) * comps + c)];
  };
  double scale = inverse ? 1.0 / static_cast<double>(len) : 1.0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < out_n; ++k) {
        double re = 0, im = 0;
        if (inverse && onesided) {
          // The Hermitian-symmetric spectrum given by its first len/2 + 1 bins; the imaginary
          // parts of the DC and Nyquist bins do not contribute.
          int64_t bins = std::min(n, len / 2 + 1);
          for (int64_t b = 0; b < bins; ++b) {
            double cr, ci;
            twiddle(b, k, len, 1.0, cr, ci);
            double term = at(o, b, i, 0) * cr - at(o, b, i, 1) * ci;
            bool self_conjugate = b == 0 || (len % 2 == 0 && b == len / 2);
            re += self_conjugate ? at(o, b, i, 0) * cr : 2 * term;
          }
        } else {
          double sign = inverse ? 1.0 : -1.0;
          for (int64_t t = 0; t < std::min(n, len); ++t) {
            double cr, ci;
            twiddle(k, t, len, sign, cr, ci);
            double xr = at(o, t, i, 0), xi = at(o, t, i, 1);
            re += xr * cr - xi * ci;
            im += xr * ci + xi * cr;
          }
        }
        int64_t base = ((o * out_n + k) * inner + i) * out_c;
        RETURN_IF_ERROR(storeDouble(ctx, out, base, re * scale));
        if (out_c == 2) RETURN_IF_ERROR(storeDouble(ctx, out, base + 1, im * scale));
      }
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> stftKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* step_t, requireInput(ctx, 1));
  const HostTensor* window = ctx.input(2);
  const HostTensor* length_t = ctx.input(3);
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  if (x->rank() != 3 || (x->dims[2] != 1 && x->dims[2] != 2)) {
    return invalidArgument("STFT: the signal must be [batch, length, 1 or 2]");
  }
  ASSIGN_OR_RETURN(int64_t step, readIntScalar(*step_t, "frame_step"));
  if (step < 1) return invalidArgument("STFT: frame_step must be positive, not {}", step);
  int64_t batch = x->dims[0], length = x->dims[1], comps = x->dims[2];
  int64_t frame = length;
  if (window != nullptr) {
    if (window->rank() != 1) return invalidArgument("STFT: the window must be 1-D");
    frame = window->dims[0];
  }
  if (length_t != nullptr) {
    ASSIGN_OR_RETURN(frame, readIntScalar(*length_t, "frame_length"));
    if (window != nullptr && window->dims[0] != frame) {
      return invalidArgument("STFT: the window length differs from frame_length");
    }
  }
  if (frame < 1 || frame > length) {
    return invalidArgument("STFT: frame length {} does not fit a signal of {}", frame, length);
  }
  std::vector<double> w(static_cast<size_t>(frame), 1.0);
  if (window != nullptr) {
    if (window->dtype != x->dtype) return invalidArgument("STFT: the window's type differs");
    ASSIGN_OR_RETURN(w, readFloats<double>(ctx, *window));
  }
  bool onesided = ctx.attrs.getInt("onesided", 1) != 0;
  int64_t frames = 1 + (length - frame) / step;
  int64_t bins = onesided ? frame / 2 + 1 : frame;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, {batch, frames, bins, 2}));
  RETURN_IF_ERROR(checkWork(ctx, batch * frames, bins, frame));
  ASSIGN_OR_RETURN(std::vector<double> v, loadSignal(ctx, *x));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t k = 0; k < bins; ++k) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < frame; ++t) {
          double cr, ci;
          twiddle(k, t, frame, -1.0, cr, ci);
          size_t at = static_cast<size_t>(((b * length) + f * step + t) * comps);
          double xr = v[at] * w[static_cast<size_t>(t)];
          double xi = comps == 2 ? v[at + 1] * w[static_cast<size_t>(t)] : 0.0;
          re += xr * cr - xi * ci;
          im += xr * ci + xi * cr;
        }
        int64_t base = ((b * frames + f) * bins + k) * 2;
        RETURN_IF_ERROR(storeDouble(ctx, out, base, re));
        RETURN_IF_ERROR(storeDouble(ctx, out, base + 1, im));
      }
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> melWeightMatrixKernel(const KernelContext& ctx) {
  std::vector<const HostTensor*> in(5);
  for (size_t k = 0; k < 5; ++k) {
    ASSIGN_OR_RETURN(in[k], requireInput(ctx, k));
  }
  ASSIGN_OR_RETURN(int64_t mel_bins, readIntScalar(*in[0], "num_mel_bins"));
  ASSIGN_OR_RETURN(int64_t dft_length, readIntScalar(*in[1], "dft_length"));
  ASSIGN_OR_RETURN(int64_t rate, readIntScalar(*in[2], "sample_rate"));
  for (size_t k : {size_t{3}, size_t{4}}) {
    if (in[k]->numElements() != 1) return invalidArgument("MelWeightMatrix: edges must be scalars");
  }
  ASSIGN_OR_RETURN(std::vector<double> lo, readFloats<double>(ctx, *in[3]));
  ASSIGN_OR_RETURN(std::vector<double> hi, readFloats<double>(ctx, *in[4]));
  if (mel_bins < 1 || dft_length < 1 || rate < 1) {
    return invalidArgument(
        "MelWeightMatrix: num_mel_bins, dft_length and sample_rate must be "
        "positive");
  }
  if (!(lo[0] >= 0 && hi[0] > lo[0])) {
    return invalidArgument("MelWeightMatrix: the edges must satisfy 0 <= lower < upper");
  }
  ASSIGN_OR_RETURN(DataType type, outputType(ctx));
  int64_t spec_bins = dft_length / 2 + 1;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(type, {spec_bins, mel_bins}));
  RETURN_IF_ERROR(checkWork(ctx, 1, spec_bins, mel_bins));
  // Mel scale: m = 2595 log10(1 + f / 700); mel_bins + 2 edges evenly spaced on it, each mapped
  // to a spectrogram bin as floor((dft_length + 1) f / sample_rate).
  double lo_mel = 2595 * std::log10(1 + lo[0] / 700), hi_mel = 2595 * std::log10(1 + hi[0] / 700);
  double mel_step = (hi_mel - lo_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * mel_step + lo_mel) / 2595) - 1);
    double b = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
    if (!(b >= 0 && b < static_cast<double>(spec_bins))) {
      return invalidArgument("MelWeightMatrix: upper_edge_hertz is beyond the spectrogram");
    }
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(b);
  }
  std::vector<double> m(static_cast<size_t>(spec_bins * mel_bins), 0.0);
  auto cell = [&](int64_t j, int64_t i) -> double& {
    return m[static_cast<size_t>(j * mel_bins + i)];
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    int64_t left = edge[static_cast<size_t>(i)], center = edge[static_cast<size_t>(i + 1)],
            right = edge[static_cast<size_t>(i + 2)];
    if (center == left) {
      cell(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j) {
        cell(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
    }
    for (int64_t j = center; j < right; ++j) {
      cell(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
  }
  for (size_t k = 0; k < m.size(); ++k) {
    RETURN_IF_ERROR(storeDouble(ctx, out, static_cast<int64_t>(k), m[k]));
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
