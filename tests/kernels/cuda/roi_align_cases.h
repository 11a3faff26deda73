// RoiAlign cases for the CUDA kernel's tests (roi_align_test.cc on the GPU, roi_align_host_test.cc
// on the host): float, float16 and bfloat16; avg and max; opset 10 (output_half_pixel) and 16's
// two coordinate modes; the adaptive grid and a fixed sampling_ratio; regions inside the image,
// across its borders, outside it, smaller than a pixel and inverted; batch_indices constant or read
// on the device only.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "movement_cases.h"

namespace onnxopt::kernels::test {

struct RoiAlignShape {
  std::vector<int64_t> x;  ///< [N, C, H, W]
  int64_t rois, out_h, out_w;
  float scale;
};

/// `count` regions over an image of `h` x `w` at `scale` (in input coordinates, x1 y1 x2 y2): the
/// first few fixed (inside, across the borders, outside, under a pixel, inverted), the rest random.
inline HostTensor roiBoxes(DataType type, int64_t count, int64_t h, int64_t w, float scale,
                           uint32_t seed) {
  const double sh = static_cast<double>(h) / scale, sw = static_cast<double>(w) / scale;
  std::vector<double> v = {0.1 * sw,  0.2 * sh,  0.7 * sw,       0.9 * sh,  // inside
                           -0.3 * sw, -0.2 * sh, 0.4 * sw,       1.3 * sh,  // across the borders
                           1.2 * sw,  1.1 * sh,  1.5 * sw,       1.6 * sh,  // outside
                           0.5 * sw,  0.5 * sh,  0.5 * sw + 0.3, 0.5 * sh + 0.2,  // under a pixel
                           0.8 * sw,  0.7 * sh,  0.2 * sw,       0.3 * sh};       // inverted
  std::mt19937 rng(seed);
  std::uniform_real_distribution<> u(-0.1, 1.1);
  v.resize(static_cast<size_t>(count * 4));
  for (size_t i = 20; i < v.size(); i += 4) {
    double x1 = u(rng) * sw, y1 = u(rng) * sh;
    v[i] = x1;
    v[i + 1] = y1;
    v[i + 2] = x1 + u(rng) * sw * 0.6;
    v[i + 3] = y1 + u(rng) * sh * 0.6;
  }
  return tensorOf(type, {count, 4}, v);
}

/// The node of one configuration: X random in [-8, 8), batch indices cycling over N.
inline MoveCase roiAlignCase(DataType type, const RoiAlignShape& s, int64_t opset,
                             const std::string& coord, const std::string& mode, int64_t sampling,
                             bool runtime_batch) {
  MoveCase c;
  c.op = "RoiAlign";
  c.opset = opset;
  c.name = fmt::format("{}_x{}_r{}_o{}x{}_opset{}_{}_{}_s{}{}", dataTypeName(type), dimsName(s.x),
                       s.rois, s.out_h, s.out_w, opset, coord.empty() ? "default" : coord, mode,
                       sampling, runtime_batch ? "_runtime" : "");
  const uint32_t seed = static_cast<uint32_t>(std::hash<std::string>{}(c.name));
  std::vector<int64_t> batch;
  for (int64_t r = 0; r < s.rois; ++r) batch.push_back((r * 7 + 3) % s.x[0]);
  c.inputs = {randomTensor(type, s.x, seed), roiBoxes(type, s.rois, s.x[2], s.x[3], s.scale, seed),
              intTensor(batch)};
  if (runtime_batch) c.runtime_inputs = {1, 2};
  c.attrs.strings["mode"] = mode;
  if (!coord.empty()) c.attrs.strings["coordinate_transformation_mode"] = coord;
  c.attrs.ints["output_height"] = s.out_h;
  c.attrs.ints["output_width"] = s.out_w;
  c.attrs.ints["sampling_ratio"] = sampling;
  c.attrs.floats["spatial_scale"] = s.scale;
  return c;
}

/// Every configuration on a small image; the adaptive and fixed grids of a detector's head
/// (256 channels, 7x7 bins at 1/16) on the float types.
inline std::vector<MoveCase> roiAlignCases() {
  std::vector<MoveCase> out;
  const RoiAlignShape small{{2, 3, 10, 12}, 9, 3, 4, 0.5f};
  const RoiAlignShape head{{1, 256, 25, 38}, 24, 7, 7, 0.0625f};
  struct Coord {
    int64_t opset;
    const char* coord;
  };
  const Coord coords[] = {{10, ""}, {16, ""}, {16, "half_pixel"}, {16, "output_half_pixel"}};
  int i = 0;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (const Coord& co : coords) {
      for (const char* mode : {"avg", "max"}) {
        for (int64_t sampling : {0, 2}) {
          out.push_back(roiAlignCase(t, small, co.opset, co.coord, mode, sampling, ++i % 2 == 0));
        }
      }
    }
    for (int64_t sampling : {0, 2}) {
      out.push_back(roiAlignCase(t, head, 16, "", "avg", sampling, false));
      out.push_back(roiAlignCase(t, head, 16, "output_half_pixel", "max", sampling, true));
    }
  }
  return out;
}

}  // namespace onnxopt::kernels::test
