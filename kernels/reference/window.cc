// The window geometry of Conv and the pools (onnxopt/kernels/window.h).
#include "onnxopt/kernels/window.h"

#include <algorithm>

namespace onnxopt::kernels {

StatusOr<std::vector<int64_t>> windowAttr(const std::string& op, const KernelAttrs& attrs,
                                          const char* name, size_t count, int64_t fallback,
                                          int64_t min) {
  auto v = attrs.getInts(name);
  if (!v) return std::vector<int64_t>(count, fallback);
  if (v->size() != count) {
    return invalidArgument("{}: {} has {} values, expected {}", op, name, v->size(), count);
  }
  for (int64_t e : *v) {
    if (e < min || e > kMaxWindowAttr) {
      return invalidArgument("{}: {} value {} is out of range", op, name, e);
    }
  }
  return *v;
}

StatusOr<std::string> autoPadOf(const std::string& op, const KernelAttrs& attrs) {
  std::string auto_pad = attrs.getString("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return invalidArgument("{}: unknown auto_pad '{}'", op, auto_pad);
  }
  return auto_pad;
}

StatusOr<Window> windowOf(const std::string& op, const KernelAttrs& attrs,
                          const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                          bool ceil_mode) {
  size_t rank = in.size();
  if (kernel.size() != rank) {
    return invalidArgument("{}: the kernel has {} dims for {} spatial dims", op, kernel.size(),
                           rank);
  }
  Window w;
  w.in = in;
  w.kernel = kernel;
  for (int64_t d : in) {
    if (d > kMaxSpatialDim) return invalidArgument("{}: spatial dimension {} is too large", op, d);
  }
  for (int64_t k : kernel) {
    if (k < 1 || k > kMaxWindowAttr) return invalidArgument("{}: kernel size {} is invalid", op, k);
  }
  ASSIGN_OR_RETURN(w.strides, windowAttr(op, attrs, "strides", rank, 1, 1));
  ASSIGN_OR_RETURN(w.dilations, windowAttr(op, attrs, "dilations", rank, 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, windowAttr(op, attrs, "pads", 2 * rank, 0, 0));
  ASSIGN_OR_RETURN(std::string auto_pad, autoPadOf(op, attrs));
  w.pad_begin.assign(rank, 0);
  w.pad_end.assign(rank, 0);
  w.out.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t s = w.strides[d];
    int64_t eff = (kernel[d] - 1) * w.dilations[d] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      w.out[d] = (in[d] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * s + eff - in[d]);
      int64_t small = total / 2;
      w.pad_begin[d] = auto_pad == "SAME_UPPER" ? small : total - small;
      w.pad_end[d] = total - w.pad_begin[d];
      continue;
    }
    if (auto_pad == "NOTSET") {
      w.pad_begin[d] = pads[d];
      w.pad_end[d] = pads[d + rank];
    }
    int64_t span = in[d] + w.pad_begin[d] + w.pad_end[d] - eff;
    if (span < 0) {
      return invalidArgument(
          "{}: the kernel ({} with dilation) is larger than the padded input ({})", op, eff,
          in[d] + w.pad_begin[d] + w.pad_end[d]);
    }
    if (ceil_mode) {
      w.out[d] = (span + s - 1) / s + 1;
      // The last window must start inside the input or the begin padding.
      if ((w.out[d] - 1) * s >= in[d] + w.pad_begin[d]) --w.out[d];
    } else {
      w.out[d] = span / s + 1;
    }
  }
  return w;
}

}  // namespace onnxopt::kernels
