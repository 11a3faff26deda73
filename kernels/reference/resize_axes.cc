// The resized axes of Resize and Upsample (onnxopt/kernels/resize_axes.h).
#include "onnxopt/kernels/resize_axes.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onnxopt::kernels {

namespace {

/// Output extent of an axis of extent `in` scaled by s, floor(in * s), bounded.
StatusOr<int64_t> scaledExtent(const std::string& op, int64_t in, double s) {
  double v = std::floor(static_cast<double>(in) * s);
  if (!(v < 9.0e15)) {
    return makeError(StatusCode::kResourceExhausted, "{}: output extent too large", op);
  }
  return static_cast<int64_t>(v);
}

}  // namespace

StatusOr<std::vector<ResizeAxis>> resizeAxes(
    const std::string& op, int64_t opset, const KernelAttrs& attrs,
    const std::vector<int64_t>& dims, const std::vector<int64_t>& axes,
    const std::vector<double>& roi, const std::vector<double>& scales,
    const std::vector<int64_t>& sizes, bool crop_and_resize) {
  const size_t naxes = axes.size();
  if (!scales.empty() && !sizes.empty()) {
    return invalidArgument("{}: only one of scales and sizes may be given", op);
  }
  if (scales.empty() && sizes.empty()) {
    return invalidArgument("{}: one of scales and sizes is required", op);
  }
  if (scales.size() + sizes.size() != naxes) {
    return invalidArgument("{}: {} scales or sizes for {} axes", op, scales.size() + sizes.size(),
                           naxes);
  }
  for (double s : scales) {
    if (!(s > 0) || !std::isfinite(s)) {
      return invalidArgument("{}: scales must be positive and finite", op);
    }
  }
  if (crop_and_resize && roi.size() != 2 * naxes) {
    return invalidArgument("{}: tf_crop_and_resize needs a roi of {} values, got {}", op, 2 * naxes,
                           roi.size());
  }
  std::vector<ResizeAxis> plans(naxes);
  for (size_t i = 0; i < naxes; ++i) {
    ResizeAxis& a = plans[i];
    a.axis = axes[i];
    a.in = dims[static_cast<size_t>(a.axis)];
    if (roi.size() == 2 * naxes) {
      a.roi_start = roi[i];
      a.roi_end = roi[naxes + i];
    }
    if (!scales.empty()) {
      a.scale = scales[i];
      ASSIGN_OR_RETURN(a.out, scaledExtent(op, a.in, a.scale));
    } else {
      if (sizes[i] < 0) return invalidArgument("{}: negative sizes", op);
      a.out = sizes[i];
      a.scale = a.in == 0 ? 1.0 : static_cast<double>(a.out) / static_cast<double>(a.in);
    }
  }
  std::string policy =
      opset >= 18 ? attrs.getString("keep_aspect_ratio_policy", "stretch") : std::string("stretch");
  if (!sizes.empty() && policy != "stretch") {
    if (policy != "not_larger" && policy != "not_smaller") {
      return invalidArgument("{}: unknown keep_aspect_ratio_policy '{}'", op, policy);
    }
    double s = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (const ResizeAxis& a : plans) {
      s = policy == "not_larger" ? std::min(s, a.scale) : std::max(s, a.scale);
    }
    for (ResizeAxis& a : plans) {
      a.scale = s;
      double v = std::floor(s * static_cast<double>(a.in) + 0.5);
      if (!(v < 9.0e15)) return invalidArgument("{}: output extent too large", op);
      a.out = static_cast<int64_t>(v);
    }
  }
  return plans;
}

}  // namespace onnxopt::kernels
