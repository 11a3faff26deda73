// Conv and ConvTranspose at cuDNN's level (conv.h): the descriptors cuDNN computes with for one
// node (4-D or 5-D, a 1-D convolution as 2-D with a unit dim), the staging of X (pads cuDNN cannot
// express) or of Y (a ConvTranspose output beyond the adjoint's), the graph path's spec and our
// epilogue kernel's arguments. Host code only; shared by conv.cc and conv_algo.cc.
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/conv/conv.h"
#include "kernels/cuda/conv/conv_device.h"
#include "kernels/cuda/conv/conv_graph.h"
#include "kernels/cuda/conv/cudnn.h"

namespace onnxopt::kernels::cuda::conv_detail {

constexpr size_t kAlign = 256;

/// The largest algorithm workspace accepted; cheaper algorithms are taken over faster ones above.
constexpr size_t kMaxAlgoWorkspace = size_t{256} << 20;

size_t alignUp(size_t n);

bool isFloatType(DataType t);

std::string dimsText(const std::vector<int64_t>& dims);

int64_t product(const std::vector<int64_t>& dims);

size_t elementBytes(DataType t);

std::vector<int64_t> spatialOf(const std::vector<int64_t>& dims);

/// [n, c] followed by `spatial`, with a unit dim appended when `unit` (1-D as 2-D).
std::vector<int64_t> withSpatial(int64_t n, int64_t c, const std::vector<int64_t>& spatial,
                                 bool unit);

std::vector<int64_t> withUnit(std::vector<int64_t> v, bool unit, int64_t value);

/// What cuDNN is asked for one node.
struct Geometry {
  bool transpose = false;
  std::vector<int64_t> x, w, y;  ///< the descriptors cuDNN computes with (staged buffers' dims)
  std::vector<int64_t> x_view, y_view;  ///< X's and Y's own dims (a 1-D conv's with a unit dim)
  std::vector<int64_t> pads, strides, dilations;
  bool staged_x = false;     ///< Conv: X copied into a zero-padded buffer of dims `x`
  bool staged_y = false;     ///< ConvTranspose: computed into a buffer of dims `y`, then copied
  int64_t stage_offset = 0;  ///< elements from the staged buffer's start to X's (the block's) start
  size_t stage_bytes = 0;
  /// ConvTranspose staged: the block of the buffer copied into Y (its dims, with the unit dim),
  /// where it starts in Y (elements), and whether it covers less than Y (the rest is bias only).
  std::vector<int64_t> block;
  int64_t y_offset = 0;
  bool partial = false;
  bool bias_only = false;  ///< ConvTranspose: no element of Y receives a tap (Y is the bias)

  bool channels_last = false;

  std::string key(DataType t, int64_t group) const {
    return fmt::format("{}{}|{}|x{}|w{}|y{}|p{}|s{}|d{}|g{}", transpose ? "bwd" : "fwd",
                       channels_last ? "|nhwc" : "", dataTypeName(t), fmt::join(x, ","),
                       fmt::join(w, ","), fmt::join(y, ","), fmt::join(pads, ","),
                       fmt::join(strides, ","), fmt::join(dilations, ","), group);
  }
};

StatusOr<Geometry> convGeometry(const ConvArgs& args);

// ConvTranspose as the adjoint of the Conv from Y to X. The full scatter has nonzero values at
// [0, E), E = s * (in - 1) + eff, and Y[o] = full[o + pad_begin]. With symmetric pads q and an
// output padding t < s, the adjoint's output (cuDNN's dx) is dx[o'] = full[o' + q] for
// o' < T = E + t - 2q. When q = min(pad_begin, pad_end) and t = output_padding + q - pad_end fit,
// dx is Y itself. Otherwise dx is computed with q = 0 (it then holds every nonzero value) into the
// workspace, and the block of it that Y needs is copied there; the part of Y outside the full
// output (output_shape beyond it, on either side) holds the bias alone.
StatusOr<Geometry> transposeGeometry(const ConvTransposeArgs& args);

StatusOr<Geometry> geometryOf(const ConvArgs& args, bool transpose);

/// The descriptors of one geometry.
struct Descriptors {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};

cudnnMathType_t initialMath(DataType t);

StatusOr<Descriptors> descriptorsOf(const ConvArgs& args, const Geometry& g);

/// The graph path's spec for a channels-last forward convolution (none for the rest, or where
/// convGraphApplies refuses it).
std::optional<ConvGraphSpec> graphSpecOf(const ConvArgs& args, const Geometry& g, bool transpose);

/// The spec less Z and the ReLU (conv + B alone, our epilogue kernel then adding Z and applying
/// the ReLU): cuDNN's heuristics may offer no precompiled engine for conv + B + Z + ReLU (every
/// one listed compiles at run time) where they do for conv + B (docs/gpu_benchmarks.md).
ConvGraphSpec reducedSpec(ConvGraphSpec spec);

/// Our epilogue kernel's arguments over a channels-last Y of `args`' shape: + bias (null: none),
/// + z (null: none), then the ReLU where `args` has one.
ConvEpilogueArgs epilogueOf(const ConvArgs& args, const void* bias, const void* z, void* y);

/// The epilogue on args' own Y and Z (where it has one), with `bias` (null: B is in Y already).
Status launchEpilogue(const ConvArgs& args, const void* bias, CudaDeviceContext& ctx);

/// Whether a launch of `plan` leaves Z or the ReLU to our epilogue kernel.
bool needsEpilogue(const ConvArgs& args, const ConvGraphPlan& plan);

/// B as a [1, M, 1, ...] tensor of Y's rank (as cuDNN sees Y).
StatusOr<TensorDesc> biasDesc(const ConvArgs& args, const Geometry& g);

}  // namespace onnxopt::kernels::cuda::conv_detail
