// numpy's legacy generator (numpy.random.RandomState), which ONNX's reference implementation uses
// for Dropout, RandomUniform(Like), RandomNormal(Like) and Bernoulli: MT19937 as published by
// Matsumoto and Nishimura (init_genrand, genrand_int32, genrand_res53), plus numpy's legacy
// polar-method gauss and its binomial(1, p) by inversion. RandomState(seed) with an integer seed
// in [0, 2^32) runs init_genrand(seed); uniform(0, 1) and rand() are genrand_res53.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace onnxopt::kernels::ref {

class Mt19937 {
 public:
  static constexpr int kN = 624;

  explicit Mt19937(uint32_t seed) { seedWith(seed); }

  /// init_genrand.
  void seedWith(uint32_t seed) {
    state_[0] = seed;
    for (int i = 1; i < kN; ++i) {
      uint32_t prev = state_[static_cast<size_t>(i - 1)];
      state_[static_cast<size_t>(i)] =
          1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
    }
    pos_ = kN;
    has_gauss_ = false;
  }

  /// genrand_int32.
  uint32_t nextU32() {
    if (pos_ >= kN) twist();
    uint32_t y = state_[static_cast<size_t>(pos_++)];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  /// genrand_res53: uniform in [0, 1) with 53 bits.
  double nextDouble() {
    uint32_t a = nextU32() >> 5, b = nextU32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  /// numpy's legacy standard normal (polar Box-Muller, the second value kept for the next call).
  double nextGauss() {
    if (has_gauss_) {
      has_gauss_ = false;
      return gauss_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * nextDouble() - 1.0;
      x2 = 2.0 * nextDouble() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

  /// numpy's legacy binomial(1, p) for p in [0, 1]: inversion on the smaller of p and 1 - p (the
  /// legacy path draws for p == 0 too, unlike numpy's Generator).
  int nextBernoulli(double p) {
    if (p <= 0.5) return inversion1(p);
    return 1 - inversion1(1.0 - p);
  }

 private:
  // numpy's binomial inversion with n = 1: the search bound is 1, so a second step past it
  // redraws (px after one step is p * q / q, evaluated as numpy does).
  int inversion1(double p) {
    double q = 1.0 - p;
    double px1 = (1.0 * p * q) / (1.0 * q);
    for (;;) {
      double u = nextDouble();
      if (!(u > q)) return 0;
      if (!(u - q > px1)) return 1;
    }
  }

  void twist() {
    constexpr int kM = 397;
    constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;
    for (int i = 0; i < kN; ++i) {
      auto k = static_cast<size_t>(i);
      uint32_t y = (state_[k] & kUpper) | (state_[static_cast<size_t>((i + 1) % kN)] & kLower);
      state_[k] =
          state_[static_cast<size_t>((i + kM) % kN)] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
    }
    pos_ = 0;
  }

  std::array<uint32_t, kN> state_{};
  int pos_ = kN;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace onnxopt::kernels::ref
