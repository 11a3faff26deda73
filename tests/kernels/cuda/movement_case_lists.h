// The data-movement GPU cases (movement_test.cc), shared with the host test that runs the copy
// families' copy jobs on host memory (movement_host_test.cc): per op, shapes of ranks 0 to 6,
// negative axes, empty tensors, every element type class, constant and runtime operands.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "movement_cases.h"

namespace onnxopt::kernels::test {

inline uint32_t seedOf(const std::string& name) {
  return static_cast<uint32_t>(std::hash<std::string>{}(name));
}

inline bool isSizeClass(DataType t) {
  for (DataType c : sizeClassTypes()) {
    if (c == t) return true;
  }
  return false;
}

/// The types a shape case runs for: all of them on the first shape, the size classes after.
inline std::vector<DataType> typesFor(size_t shape_index) {
  return shape_index == 0 ? movableTypes() : sizeClassTypes();
}

// --- Transpose ------------------------------------------------------------------------------------

inline std::vector<MoveCase> transposeCases() {
  struct Shape {
    std::vector<int64_t> dims;
    std::vector<int64_t> perm;  ///< empty: the default (reversed dims)
  };
  const std::vector<Shape> shapes = {
      {{37}, {}},
      {{7, 33}, {}},
      {{64, 65}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{4, 1, 5, 6}, {0, 2, 1, 3}},    // a size-1 dim moves: one copy run
      {{2, 8, 16, 32}, {0, 2, 1, 3}},  // the attention head split
      {{2, 3, 20, 20}, {0, 2, 3, 1}},  // NCHW -> NHWC of an image: a short innermost dim
      {{2, 5, 300}, {0, 2, 1}},        // a short innermost dim over more than one block
      // 2-byte elements in 4-byte pairs (64 x 64 tiles): partial tiles, an odd edge on either
      // side, and odd strides, which keep the 32 x 32 tiles.
      {{130, 66}, {1, 0}},
      {{3, 65, 130}, {0, 2, 1}},
      {{2, 66, 67}, {0, 2, 1}},
      {{3, 2, 4, 2, 5}, {4, 2, 0, 3, 1}},
      {{2, 3, 2, 3, 2, 3}, {5, 4, 3, 2, 1, 0}},
      {{2, 3, 4}, {0, 1, 2}},  // the identity: one memcpy
      {{2, 0, 4}, {2, 1, 0}},  // empty
      {{}, {}},                // a scalar
  };
  std::vector<MoveCase> out;
  // The reference kernels start at opset 7 (the CUDA row at 1: the op has not changed since).
  for (int64_t opset : {7, 13}) {
    for (DataType t : movableTypes()) {
      for (const Shape& s : shapes) {
        // Every type on a few shapes, every shape on the size classes.
        bool small_sweep = s.dims.size() == 2 || s.dims.size() == 4;
        if (!small_sweep && !isSizeClass(t)) continue;
        if (opset == 7 && t == DataType::kBfloat16) continue;  // bfloat16 is opset 13's
        MoveCase c;
        c.op = "Transpose";
        c.opset = opset;
        if (!s.perm.empty()) c.attrs.int_lists["perm"] = s.perm;
        c.name = fmt::format("Transpose_{}_{}_perm_{}_opset{}", dataTypeName(t), dimsName(s.dims),
                             s.perm.empty() ? "default" : listName(s.perm), opset);
        c.inputs = {randomTensor(t, s.dims, seedOf(c.name))};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- Concat ---------------------------------------------------------------------------------------

inline std::vector<MoveCase> concatCases() {
  struct Shape {
    std::vector<std::vector<int64_t>> inputs;
    int64_t axis;
  };
  const std::vector<Shape> shapes = {
      {{{2, 3}, {2, 5}}, 1},
      {{{4}, {1}, {7}}, 0},
      {{{2, 3, 4}, {1, 3, 4}, {3, 3, 4}}, 0},
      {{{2, 3, 4}, {2, 3, 1}}, -1},  // a negative axis
      {{{2, 1, 3, 2, 2}, {2, 4, 3, 2, 2}}, -4},
      {{{2, 3, 1, 2, 1, 2}, {2, 3, 2, 2, 1, 2}}, 2},
      {{{3, 0}, {3, 4}, {3, 0}}, 1},  // empty inputs
      {{{0, 2}, {0, 2}}, 0},          // an empty output
      {{{5, 7}}, 0},                  // one input
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (int64_t opset : {11, 13}) {
        if (opset == 11 && t == DataType::kBfloat16) continue;
        MoveCase c;
        c.op = "Concat";
        c.opset = opset;
        c.attrs.ints["axis"] = s.axis;
        c.name = fmt::format("Concat_{}_axis{}", dataTypeName(t), listName({s.axis}));
        for (const auto& d : s.inputs) c.name += "_" + dimsName(d);
        c.name += fmt::format("_opset{}", opset);
        for (size_t k = 0; k < s.inputs.size(); ++k) {
          c.inputs.push_back(randomTensor(t, s.inputs[k], seedOf(c.name) + k));
        }
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- Slice ----------------------------------------------------------------------------------------

inline std::vector<MoveCase> sliceCases() {
  struct Shape {
    std::vector<int64_t> dims;
    std::vector<int64_t> starts, ends, axes, steps;  ///< empty axes/steps: the input is omitted
  };
  const int64_t kBig = INT64_MAX;
  const std::vector<Shape> shapes = {
      {{20, 10}, {1, 2}, {15, 8}, {}, {}},
      {{20}, {-5}, {kBig}, {0}, {}},                   // from the end, clamped end
      {{20, 10}, {0, 9}, {20, -11}, {0, 1}, {3, -2}},  // steps, a negative one to before 0
      {{6, 5, 4}, {-1}, {-kBig}, {-2}, {-1}},          // a reversed axis, a negative axis
      {{4, 6, 8, 3}, {1, 1}, {3, 7}, {-1, 2}, {2, 3}},
      {{2, 3, 4, 5, 6}, {0, 1, 0}, {1, 3, 6}, {0, 2, 4}, {1, 1, 4}},
      {{2, 3, 2, 3, 2, 4}, {3, -1}, {1, 0}, {5, 3}, {-1, -1}},
      {{10, 4}, {5}, {2}, {0}, {}},      // empty: start after end
      {{0, 4}, {0}, {2}, {1}, {}},       // an empty input
      {{8, 8}, {-100}, {100}, {1}, {}},  // clamped both ways
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (DataType index : {DataType::kInt64, DataType::kInt32}) {
        if (index == DataType::kInt32 && i % 3 != 0) continue;
        if (index == DataType::kInt32 &&
            (s.starts[0] == kBig || s.ends[0] == kBig || s.ends[0] == -kBig)) {
          continue;
        }
        MoveCase c;
        c.op = "Slice";
        c.opset = 13;
        c.name = fmt::format("Slice_{}_{}_starts_{}_ends_{}_axes_{}_steps_{}_{}", dataTypeName(t),
                             dimsName(s.dims), listName(s.starts), listName(s.ends),
                             listName(s.axes), listName(s.steps), dataTypeName(index));
        for (char& ch : c.name) {
          if (ch == '-') ch = 'm';
        }
        c.inputs = {randomTensor(t, s.dims, seedOf(c.name)), intTensor(s.starts, {-1}, index),
                    intTensor(s.ends, {-1}, index)};
        if (!s.axes.empty() || !s.steps.empty()) {
          c.inputs.push_back(s.axes.empty() ? HostTensor() : intTensor(s.axes, {-1}, index));
        }
        if (!s.steps.empty()) c.inputs.push_back(intTensor(s.steps, {-1}, index));
        out.push_back(std::move(c));
      }
    }
  }
  // Opset 9: starts, ends and axes as attributes.
  for (DataType t : sizeClassTypes()) {
    MoveCase c;
    c.op = "Slice";
    c.opset = 9;
    c.attrs.int_lists["starts"] = {1, -3};
    c.attrs.int_lists["ends"] = {4, 1000};
    c.attrs.int_lists["axes"] = {0, 2};
    c.name = fmt::format("Slice_{}_5x3x6_attributes_opset9", dataTypeName(t));
    c.inputs = {randomTensor(t, {5, 3, 6}, seedOf(c.name))};
    out.push_back(std::move(c));
  }
  return out;
}

// --- Expand ---------------------------------------------------------------------------------------

inline std::vector<MoveCase> expandCases() {
  struct Shape {
    std::vector<int64_t> dims, shape;
  };
  const std::vector<Shape> shapes = {
      {{3, 1}, {3, 4}},
      {{1}, {2, 3, 5}},
      {{4}, {2, 1, 4}},
      {{2, 1, 3}, {1, 4, 1}},  // both ways: [2, 4, 3]
      {{3, 4}, {1}},           // the shape is smaller: the input's dims
      {{1, 1, 1, 5, 1, 2}, {2, 3, 1, 5, 4, 2}},
      {{}, {6, 7}},                     // a scalar
      {{2, 1}, {2, 0}},                 // empty
      {{2, 0, 3, 0}, {1, 1, 1, 1, 1}},  // empty in and out (polygraphy's empty_tensor_expand)
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (bool runtime_shape : {false, true}) {
        if (runtime_shape && i % 2 == 1) continue;
        MoveCase c;
        c.op = "Expand";
        c.opset = 13;
        c.name = fmt::format("Expand_{}_{}_to_{}{}", dataTypeName(t), dimsName(s.dims),
                             dimsName(s.shape), runtime_shape ? "_runtime_shape" : "");
        c.inputs = {randomTensor(t, s.dims, seedOf(c.name)), intTensor(s.shape)};
        if (runtime_shape) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- Split ----------------------------------------------------------------------------------------

inline std::vector<MoveCase> splitCases() {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis;
    std::vector<int64_t> split;  ///< empty: equal parts
    size_t outputs;
    int64_t opset;
    bool runtime_split = false;
  };
  const std::vector<Shape> shapes = {
      {{6, 4}, 1, {1, 3}, 2, 13},
      {{6, 4}, 0, {}, 3, 13},                  // equal parts
      {{2, 9, 3}, -2, {2, 0, 7}, 3, 13},       // an empty output, a negative axis
      {{2, 9, 3}, 1, {4, 5}, 2, 13, true},     // a runtime split input
      {{7, 2}, 0, {}, 3, 18},                  // 3, 3, 1 (num_outputs)
      {{3, 2, 4, 2, 6}, 4, {1, 2, 3}, 3, 11},  // the attribute
      {{2, 2, 2, 3, 2, 4}, -1, {}, 2, 11},
      {{12}, 0, {}, 4, 2},
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      if (s.opset < 13 && t == DataType::kBfloat16) continue;
      MoveCase c;
      c.op = "Split";
      c.opset = std::max<int64_t>(s.opset, 7);
      c.outputs = s.outputs;
      c.attrs.ints["axis"] = s.axis;
      c.name = fmt::format("Split_{}_{}_axis{}_split_{}_outputs{}_opset{}{}", dataTypeName(t),
                           dimsName(s.dims), listName({s.axis}), listName(s.split), s.outputs,
                           c.opset, s.runtime_split ? "_runtime_split" : "");
      c.inputs = {randomTensor(t, s.dims, seedOf(c.name))};
      if (s.opset >= 18) c.attrs.ints["num_outputs"] = static_cast<int64_t>(s.outputs);
      if (!s.split.empty() && c.opset >= 13) c.inputs.push_back(intTensor(s.split));
      if (!s.split.empty() && c.opset < 13) c.attrs.int_lists["split"] = s.split;
      if (s.runtime_split) c.runtime_inputs = {1};
      out.push_back(std::move(c));
    }
  }
  return out;
}

// --- Pad ------------------------------------------------------------------------------------------

inline std::vector<MoveCase> padCases() {
  struct Shape {
    std::vector<int64_t> dims, pads, axes;  ///< empty axes: the input is omitted
    std::vector<std::string> modes;
    bool runtime_value = false;
  };
  const std::vector<std::string> kAll = {"constant", "reflect", "edge", "wrap"};
  const std::vector<Shape> shapes = {
      {{3, 4}, {1, 2, 0, 1}, {}, kAll},
      {{5}, {3, 4}, {}, kAll},             // pads beyond the input: reflected twice
      {{6, 5}, {-1, 2, -2, 1}, {}, kAll},  // negative pads crop
      {{2, 3, 4}, {2, 1}, {-1}, kAll},     // axes (opset 18)
      {{2, 3, 4}, {1, 0, 0, 2}, {0, 2}, {"constant"}, true},  // a runtime constant_value
      {{2, 1, 2, 3, 1, 2}, {1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1}, {}, {"constant", "edge"}},
      {{0, 3}, {0, 1, 0, 1}, {}, {"constant"}},  // empty
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (const std::string& mode : s.modes) {
        MoveCase c;
        c.op = "Pad";
        c.opset = mode == "wrap" ? 19 : 18;
        c.attrs.strings["mode"] = mode;
        c.name = fmt::format("Pad_{}_{}_{}_pads_{}_axes_{}{}", mode, dataTypeName(t),
                             dimsName(s.dims), listName(s.pads), listName(s.axes),
                             s.runtime_value ? "_runtime_value" : "");
        c.inputs = {randomTensor(t, s.dims, seedOf(c.name)), intTensor(s.pads)};
        if (mode == "constant") {
          c.inputs.push_back(tensorOf(t, {}, {t == DataType::kUint8 ? 200.0 : 1.0}));
        }
        if (!s.axes.empty()) {
          if (c.inputs.size() == 2) c.inputs.emplace_back();  // no constant_value
          c.inputs.push_back(intTensor(s.axes));
        }
        if (s.runtime_value) c.runtime_inputs = {2};
        out.push_back(std::move(c));
      }
    }
  }
  // Opset 7: pads and value as attributes; opset 13 without constant_value (zeros).
  for (DataType t : sizeClassTypes()) {
    MoveCase c;
    c.op = "Pad";
    c.opset = 7;
    c.attrs.int_lists["pads"] = {0, 2, 1, 1};
    c.attrs.floats["value"] = -2.5f;
    c.name = fmt::format("Pad_constant_{}_3x4_attributes_opset7", dataTypeName(t));
    c.inputs = {randomTensor(t, {3, 4}, seedOf(c.name))};
    if (t != DataType::kBfloat16) out.push_back(c);
    c.opset = 13;
    c.attrs = {};
    c.name = fmt::format("Pad_constant_{}_3x4_zeros_opset13", dataTypeName(t));
    c.inputs.push_back(intTensor({1, 1, 1, 1}));
    out.push_back(std::move(c));
  }
  return out;
}

// --- Tile -----------------------------------------------------------------------------------------

inline std::vector<MoveCase> tileCases() {
  struct Shape {
    std::vector<int64_t> dims, repeats;
  };
  const std::vector<Shape> shapes = {
      {{3, 4}, {2, 3}},
      {{5}, {4}},
      {{2, 1, 3}, {1, 5, 1}},
      {{2, 3, 2, 2}, {2, 1, 3, 2}},
      {{2, 1, 2, 1, 2, 3}, {2, 2, 2, 2, 2, 2}},  // rank 6, every dim repeated: a rank-12 copy
      {{3, 2}, {0, 2}},                          // empty output
      {{0, 2}, {3, 2}},                          // empty input
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (bool runtime : {false, true}) {
        if (runtime && i % 2 == 1) continue;
        MoveCase c;
        c.op = "Tile";
        c.opset = 13;
        c.name = fmt::format("Tile_{}_{}_repeats_{}{}", dataTypeName(t), dimsName(s.dims),
                             listName(s.repeats), runtime ? "_runtime" : "");
        c.inputs = {randomTensor(t, s.dims, seedOf(c.name)), intTensor(s.repeats)};
        if (runtime) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- DepthToSpace / SpaceToDepth ------------------------------------------------------------------

inline std::vector<MoveCase> depthSpaceCases() {
  struct Shape {
    std::string op;
    std::vector<int64_t> dims;
    int64_t blocksize;
    std::string mode;  ///< empty: the default
  };
  const std::vector<Shape> shapes = {
      {"DepthToSpace", {1, 8, 2, 3}, 2, "DCR"}, {"DepthToSpace", {2, 18, 3, 2}, 3, "CRD"},
      {"DepthToSpace", {1, 4, 5, 5}, 2, ""},    {"DepthToSpace", {1, 3, 2, 2}, 1, "CRD"},
      {"SpaceToDepth", {1, 2, 4, 6}, 2, ""},    {"SpaceToDepth", {2, 3, 6, 3}, 3, ""},
      {"DepthToSpace", {0, 4, 2, 2}, 2, "DCR"},  // empty
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      MoveCase c;
      c.op = s.op;
      c.opset = 13;
      c.attrs.ints["blocksize"] = s.blocksize;
      if (!s.mode.empty()) c.attrs.strings["mode"] = s.mode;
      c.name = fmt::format("{}_{}_{}_{}_blocksize{}", s.op, s.mode.empty() ? "default" : s.mode,
                           dataTypeName(t), dimsName(s.dims), s.blocksize);
      c.inputs = {randomTensor(t, s.dims, seedOf(c.name))};
      out.push_back(std::move(c));
    }
  }
  return out;
}

// --- Trilu ----------------------------------------------------------------------------------------

inline std::vector<MoveCase> triluCases() {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t k;  ///< kNone: no k input
    bool runtime_k = false;
  };
  const int64_t kNone = INT64_MIN;
  const std::vector<Shape> shapes = {
      {{5, 7}, kNone},
      {{4, 6}, 2},
      {{2, 3, 6, 4}, -1, true},  // a runtime k
      {{3, 3}, 100},             // beyond the matrix: all kept (upper) or all zero (lower)
      {{2, 1, 5, 5}, -100, true},
      {{2, 0, 3}, 1},  // empty
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (int64_t upper : {1, 0}) {
        MoveCase c;
        c.op = "Trilu";
        c.opset = 14;
        c.attrs.ints["upper"] = upper;
        c.name = fmt::format("Trilu_{}_{}_{}_k_{}{}", upper ? "upper" : "lower", dataTypeName(t),
                             dimsName(s.dims), s.k == kNone ? "none" : listName({s.k}),
                             s.runtime_k ? "_runtime" : "");
        c.inputs = {randomTensor(t, s.dims, seedOf(c.name))};
        if (s.k != kNone) c.inputs.push_back(intTensor({s.k}, {}));
        if (s.runtime_k) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- EyeLike --------------------------------------------------------------------------------------

inline std::vector<MoveCase> eyeLikeCases() {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t k;
  };
  const std::vector<Shape> shapes = {
      {{3, 4}, 0}, {{4, 3}, 1}, {{5, 5}, -2}, {{2, 6}, 10}, {{0, 3}, 0},
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (bool cast : {false, true}) {
        if (cast && i % 2 == 1) continue;
        MoveCase c;
        c.op = "EyeLike";
        c.opset = 9;
        c.attrs.ints["k"] = s.k;
        // The dtype attribute: an int32 input gives the case's type.
        if (cast) c.attrs.ints["dtype"] = static_cast<int64_t>(t);
        c.name = fmt::format("EyeLike_{}_{}_k_{}{}", dataTypeName(t), dimsName(s.dims),
                             listName({s.k}), cast ? "_from_int32" : "");
        c.inputs = {randomTensor(cast ? DataType::kInt32 : t, s.dims, seedOf(c.name))};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

}  // namespace onnxopt::kernels::test
