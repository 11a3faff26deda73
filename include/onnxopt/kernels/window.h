// The window geometry of Conv and the pools, one implementation for the reference kernels and the
// CUDA kernels' host code: kernel, strides, dilations, the begin and end pads (explicit or from
// auto_pad) and the output size per spatial dim, computed from the node's attributes:
//   out = floor((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1   (ceil with ceil_mode, and
//         one less when the last window would start inside the end padding)
//   SAME_UPPER/SAME_LOWER: out = ceil(in / s), the odd pad at the end / the beginning
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxopt/kernels/host_tensor.h"
#include "onnxopt/support/status.h"

namespace onnxopt::kernels {

/// Attribute values are bounded so that the geometry stays far from int64 overflow.
inline constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;
inline constexpr int64_t kMaxSpatialDim = int64_t{1} << 40;

struct Window {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;

  /// Whether pad_begin == pad_end in every dim (what cuDNN's descriptors express).
  bool symmetric() const { return pad_begin == pad_end; }
  /// Elements of one spatial input, output, and taps of the kernel (windowOf bounds each dim, so
  /// the products of realistic shapes fit; the reference kernels check their work besides).
  int64_t inVolume() const { return product(in); }
  int64_t outVolume() const { return product(out); }
  int64_t kernelVolume() const { return product(kernel); }

 private:
  static int64_t product(const std::vector<int64_t>& dims) {
    int64_t p = 1;
    for (int64_t d : dims) p *= d;
    return p;
  }
};

/// The geometry of a window of `kernel` over spatial dims `in`: kInvalidArgument naming `op` for
/// attributes of the wrong length or range, an unknown auto_pad, or a window larger than the
/// padded input.
StatusOr<Window> windowOf(const std::string& op, const KernelAttrs& attrs,
                          const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                          bool ceil_mode);

/// An integer-list attribute of `count` values, each at least `min` (`fallback` repeated when the
/// node omits it).
StatusOr<std::vector<int64_t>> windowAttr(const std::string& op, const KernelAttrs& attrs,
                                          const char* name, size_t count, int64_t fallback,
                                          int64_t min);

/// auto_pad, checked: NOTSET (also for ""), VALID, SAME_UPPER or SAME_LOWER.
StatusOr<std::string> autoPadOf(const std::string& op, const KernelAttrs& attrs);

}  // namespace onnxopt::kernels
