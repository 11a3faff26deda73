// The CUDA indexing kernels (Gather, GatherElements, GatherND, ScatterND, ScatterElements) against
// the CPU reference kernels: every claimed data type (each size class and bool), int32 and int64
// indices with negative ones, ranks 1 to 6, negative axes, empty tensors, indices known when
// planning and read on the device only; and the documented result of a runtime index out of
// range (zero elements, skipped updates). Exact comparison, except the float reductions of
// ScatterND/ScatterElements with repeated indices (their order is not defined). Label gpu.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "movement_cases.h"

namespace onnxopt::kernels {
namespace {

using test::MoveCase;

uint32_t seedOf(const std::string& name) {
  return static_cast<uint32_t>(std::hash<std::string>{}(name));
}

/// `n` random indices in [-dim, dim) (every one valid, negative ones counting from the end).
std::vector<int64_t> randomIndices(int64_t n, int64_t dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t& v : out) v = std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng);
  return out;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<DataType> typesFor(size_t shape_index) {
  return shape_index == 0 ? test::movableTypes() : test::sizeClassTypes();
}

/// The scatters compute (their reductions): the kCudaAll types.
std::vector<DataType> scatterTypesFor(size_t shape_index) {
  return shape_index == 0 ? test::scatterTypes() : test::sizeClassTypes();
}

// --- Gather and GatherElements -------------------------------------------------------------------

struct AxisShape {
  std::vector<int64_t> data, indices;
  int64_t axis;
};

/// Cases of an op reading data through indices along an axis: every type on the first shape and
/// the size classes on the others; int64 constant indices on each shape, int32 and runtime
/// (device-only) indices on every other one.
std::vector<MoveCase> axisIndexCases(const std::string& op, const std::vector<AxisShape>& shapes) {
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const AxisShape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (DataType index : {DataType::kInt64, DataType::kInt32}) {
        for (bool runtime : {false, true}) {
          if ((index == DataType::kInt32 || runtime) && i % 2 == 1) continue;
          MoveCase c;
          c.op = op;
          c.opset = 13;
          c.attrs.ints["axis"] = s.axis;
          c.name =
              fmt::format("{}_{}_{}_indices_{}_{}_axis{}{}", op, dataTypeName(t),
                          test::dimsName(s.data), test::dimsName(s.indices), dataTypeName(index),
                          test::listName({s.axis}), runtime ? "_runtime" : "");
          auto axis = static_cast<size_t>(s.axis < 0 ? s.axis + static_cast<int64_t>(s.data.size())
                                                     : s.axis);
          c.inputs = {
              test::randomTensor(t, s.data, seedOf(c.name)),
              test::intTensor(randomIndices(product(s.indices), s.data[axis], seedOf(c.name) + 1),
                              s.indices, index)};
          if (runtime) c.runtime_inputs = {1};
          out.push_back(std::move(c));
        }
      }
    }
  }
  return out;
}

std::vector<MoveCase> gatherCases() {
  return axisIndexCases("Gather", {
                                      {{50, 16}, {4, 7}, 0},  // an embedding lookup
                                      {{5, 6, 7}, {3}, 1},
                                      {{5, 6, 7}, {}, -1},     // a scalar index: the axis goes
                                      {{3, 4, 2, 16}, {}, 0},  // ViT's q/k/v select: a slab
                                      {{3, 5, 8}, {1}, 1},     // one index kept as a dim
                                      {{4, 3, 2, 5}, {2, 2}, -3},
                                      {{2, 3, 4, 2, 3}, {6}, 4},
                                      {{3, 4}, {0}, 1},     // no indices: empty output
                                      {{0, 4}, {2, 3}, 1},  // empty data off the axis
                                  });
}

std::vector<MoveCase> gatherElementsCases() {
  return axisIndexCases("GatherElements",
                        {
                            {{4, 5}, {6, 5}, 0},   // more indices than data along the axis
                            {{4, 5}, {3, 2}, -1},  // fewer off the axis
                            {{3, 4, 5}, {3, 4, 2}, 2},
                            {{2, 3, 4, 5, 2, 3}, {2, 3, 1, 5, 2, 3}, 2},
                            {{3, 4}, {3, 0}, 1},  // empty
                        });
}

// --- GatherND -------------------------------------------------------------------------------------

/// Index tuples of depth indices.back() into `data` after `batch` batch dims.
HostTensor tupleIndices(const std::vector<int64_t>& data, const std::vector<int64_t>& indices,
                        int64_t batch, uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t k = indices.back();
  std::vector<int64_t> values(static_cast<size_t>(product(indices)));
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t dim = data[static_cast<size_t>(batch) + i % static_cast<size_t>(k)];
    values[i] = std::uniform_int_distribution<int64_t>(-dim, dim - 1)(rng);
  }
  return test::intTensor(values, indices);
}

std::vector<MoveCase> gatherNDCases() {
  struct Shape {
    std::vector<int64_t> data, indices;
    int64_t batch_dims;
  };
  const std::vector<Shape> shapes = {
      {{4, 5, 6}, {3, 2}, 0},     // slices of 6
      {{4, 5, 6}, {2, 2, 3}, 0},  // single elements
      {{3, 4, 5}, {3, 2, 1}, 1},  // a batch dim
      {{2, 3, 4, 5}, {2, 3, 1, 1}, 2},
      {{2, 3, 2, 2, 3, 2}, {4, 3}, 0},
      {{4, 5}, {0, 2}, 0},  // no tuples
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (bool runtime : {false, true}) {
        MoveCase c;
        c.op = "GatherND";
        c.opset = 13;
        c.attrs.ints["batch_dims"] = s.batch_dims;
        c.name = fmt::format("GatherND_{}_{}_indices_{}_batch{}{}", dataTypeName(t),
                             test::dimsName(s.data), test::dimsName(s.indices), s.batch_dims,
                             runtime ? "_runtime" : "");
        c.inputs = {test::randomTensor(t, s.data, seedOf(c.name)),
                    tupleIndices(s.data, s.indices, s.batch_dims, seedOf(c.name) + 1)};
        if (runtime) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- ScatterND and ScatterElements ---------------------------------------------------------------

/// Distinct index tuples (so that no two updates meet and every reduction is exact): `tuples`
/// tuples of depth `k` into `data`, each coordinate negated (counted from the end) at random.
HostTensor distinctTuples(const std::vector<int64_t>& data, int64_t tuples, int64_t k,
                          uint32_t seed) {
  std::mt19937 rng(seed);
  int64_t total = product(std::vector<int64_t>(data.begin(), data.begin() + k));
  std::vector<int64_t> flat(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) flat[static_cast<size_t>(i)] = i;
  std::shuffle(flat.begin(), flat.end(), rng);
  std::vector<int64_t> values;
  for (int64_t t = 0; t < tuples; ++t) {
    std::vector<int64_t> tuple(static_cast<size_t>(k));
    int64_t rest = flat[static_cast<size_t>(t)];
    for (int64_t d = k; d-- > 0;) {
      int64_t dim = data[static_cast<size_t>(d)];
      tuple[static_cast<size_t>(d)] = rest % dim - (rng() % 2 == 0 ? dim : 0);
      rest /= dim;
    }
    values.insert(values.end(), tuple.begin(), tuple.end());
  }
  return test::intTensor(values, {tuples, k});
}

/// Indices for ScatterElements that are distinct along the axis in every line: a shuffled prefix
/// of [0, dim) per line, negated at random.
HostTensor distinctAlongAxis(const std::vector<int64_t>& data, const std::vector<int64_t>& indices,
                             size_t axis, DataType type, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> values(static_cast<size_t>(product(indices)));
  int64_t inner = 1;
  for (size_t d = axis + 1; d < indices.size(); ++d) inner *= indices[d];
  int64_t len = indices[axis], dim = data[axis];
  for (int64_t line = 0; line < static_cast<int64_t>(values.size()) / std::max<int64_t>(len, 1);
       ++line) {
    std::vector<int64_t> perm(static_cast<size_t>(dim));
    for (int64_t i = 0; i < dim; ++i) perm[static_cast<size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    int64_t outer = line / inner, in = line % inner;
    for (int64_t j = 0; j < len; ++j) {
      int64_t v = perm[static_cast<size_t>(j)] - (rng() % 2 == 0 ? dim : 0);
      values[static_cast<size_t>((outer * len + j) * inner + in)] = v;
    }
  }
  return test::intTensor(values, indices, type);
}

const std::vector<std::string> kReductions = {"none", "add", "mul", "max", "min"};

std::vector<MoveCase> scatterNDCases() {
  struct Shape {
    std::vector<int64_t> data;
    int64_t tuples, depth;
  };
  const std::vector<Shape> shapes = {
      {{8}, 4, 1},         // elements
      {{4, 5, 6}, 3, 1},   // slices of 30
      {{4, 5, 6}, 7, 2},   // slices of 6
      {{3, 4, 2}, 10, 3},  // elements
      {{2, 3, 2, 2, 3, 2}, 5, 2},
      {{4, 3}, 0, 1},  // no updates: the data copied
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : scatterTypesFor(i)) {
      for (const std::string& r : kReductions) {
        if (t == DataType::kBool && r != "none") continue;
        if (i > 0 && r != "none" && r != "add" && t != DataType::kFloat) continue;
        bool runtime = i % 2 == 1;
        MoveCase c;
        c.op = "ScatterND";
        c.opset = 18;
        c.attrs.strings["reduction"] = r;
        c.name = fmt::format("ScatterND_{}_{}_{}_tuples{}_depth{}{}", r, dataTypeName(t),
                             test::dimsName(s.data), s.tuples, s.depth, runtime ? "_runtime" : "");
        std::vector<int64_t> updates = {s.tuples};
        updates.insert(updates.end(), s.data.begin() + s.depth, s.data.end());
        c.inputs = {test::randomTensor(t, s.data, seedOf(c.name)),
                    distinctTuples(s.data, s.tuples, s.depth, seedOf(c.name) + 1),
                    test::randomTensor(t, updates, seedOf(c.name) + 2)};
        if (runtime) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  // Repeated indices: every update meets the others (the float sum in some order).
  for (DataType t : {DataType::kInt32, DataType::kFloat, DataType::kInt8}) {
    for (const char* r : {"add", "mul", "max", "min"}) {
      MoveCase c;
      c.op = "ScatterND";
      c.opset = 18;
      c.attrs.strings["reduction"] = r;
      c.name = fmt::format("ScatterND_{}_{}_repeated_indices", r, dataTypeName(t));
      c.inputs = {test::randomTensor(t, {4, 8}, seedOf(c.name)),
                  test::intTensor({1, -3, 0, 1, 2, 1}, {6, 1}),
                  test::randomTensor(t, {6, 8}, seedOf(c.name) + 1)};
      if (t == DataType::kFloat) c.tolerance = {1e-5, 1e-4};
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<MoveCase> scatterElementsCases() {
  struct Shape {
    std::vector<int64_t> data, indices;
    int64_t axis;
  };
  const std::vector<Shape> shapes = {
      {{4, 5}, {3, 5}, 0},       {{4, 5}, {2, 3}, -1},
      {{3, 4, 5}, {3, 2, 5}, 1}, {{2, 3, 4, 3, 2, 2}, {2, 2, 4, 1, 2, 2}, 2},
      {{3, 4}, {0, 4}, 0},  // no updates
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : scatterTypesFor(i)) {
      for (const std::string& r : kReductions) {
        if (t == DataType::kBool && r != "none") continue;
        if (i > 0 && r != "none" && r != "max" && t != DataType::kFloat16) continue;
        DataType index = i % 2 == 0 ? DataType::kInt64 : DataType::kInt32;
        MoveCase c;
        c.op = "ScatterElements";
        c.opset = 18;
        c.attrs.ints["axis"] = s.axis;
        c.attrs.strings["reduction"] = r;
        c.name = fmt::format("ScatterElements_{}_{}_{}_indices_{}_{}_axis{}", r, dataTypeName(t),
                             test::dimsName(s.data), test::dimsName(s.indices), dataTypeName(index),
                             test::listName({s.axis}));
        auto axis =
            static_cast<size_t>(s.axis < 0 ? s.axis + static_cast<int64_t>(s.data.size()) : s.axis);
        c.inputs = {test::randomTensor(t, s.data, seedOf(c.name)),
                    distinctAlongAxis(s.data, s.indices, axis, index, seedOf(c.name) + 1),
                    test::randomTensor(t, s.indices, seedOf(c.name) + 2)};
        if (index == DataType::kInt32) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  // Repeated indices along the axis, and the deprecated Scatter (opset 10).
  for (DataType t : {DataType::kInt64, DataType::kFloat, DataType::kUint8}) {
    for (const char* r : {"add", "mul", "max", "min"}) {
      MoveCase c;
      c.op = "ScatterElements";
      c.opset = 18;
      c.attrs.ints["axis"] = 1;
      c.attrs.strings["reduction"] = r;
      c.name = fmt::format("ScatterElements_{}_{}_repeated_indices", r, dataTypeName(t));
      c.inputs = {test::randomTensor(t, {2, 4}, seedOf(c.name)),
                  test::intTensor({0, 0, -4, 3, 1, 1, 1, -3}, {2, 4}),
                  test::randomTensor(t, {2, 4}, seedOf(c.name) + 1)};
      if (t == DataType::kFloat) c.tolerance = {1e-5, 1e-4};
      out.push_back(std::move(c));
    }
  }
  MoveCase old;
  old.op = "Scatter";
  old.opset = 10;
  old.attrs.ints["axis"] = 0;
  old.name = "Scatter_float_3x3_opset10";
  old.inputs = {test::randomTensor(DataType::kFloat, {3, 3}, 5),
                test::intTensor({1, 0, 2, 0, 2, 1}, {2, 3}),
                test::randomTensor(DataType::kFloat, {2, 3}, 6)};
  out.push_back(std::move(old));
  return out;
}

// --- OneHot ---------------------------------------------------------------------------------------

std::vector<MoveCase> oneHotCases() {
  struct Shape {
    std::vector<int64_t> indices;
    int64_t depth, axis;
  };
  const std::vector<Shape> shapes = {
      {{5}, 4, -1}, {{2, 3}, 6, 0}, {{2, 3, 2}, 3, 1}, {{4}, 1, 0}, {{0, 2}, 3, -1},
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (DataType index : {DataType::kInt64, DataType::kInt32}) {
        if (index == DataType::kInt32 && i % 2 == 1) continue;
        MoveCase c;
        c.op = "OneHot";
        c.opset = 11;
        c.attrs.ints["axis"] = s.axis;
        c.name = fmt::format("OneHot_{}_indices_{}_{}_depth{}_axis{}", dataTypeName(t),
                             test::dimsName(s.indices), dataTypeName(index), s.depth,
                             test::listName({s.axis}));
        // Indices in [-depth - 1, depth]: negative ones and one past either end (all off).
        std::mt19937 rng(seedOf(c.name));
        std::vector<int64_t> idx(static_cast<size_t>(product(s.indices)));
        for (int64_t& v : idx) {
          v = std::uniform_int_distribution<int64_t>(-s.depth - 1, s.depth)(rng);
        }
        c.inputs = {test::intTensor(idx, s.indices, index), test::intTensor({s.depth}, {}),
                    test::randomTensor(t, {2}, seedOf(c.name) + 1)};
        c.runtime_inputs = {0};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// --- ReverseSequence ------------------------------------------------------------------------------

std::vector<MoveCase> reverseSequenceCases() {
  struct Shape {
    std::vector<int64_t> dims, lens;
    int64_t batch_axis;
  };
  const std::vector<Shape> shapes = {
      {{4, 3}, {4, 2, 0}, 1},
      {{3, 5, 2}, {5, 1, 3}, 0},
      {{6, 2, 2, 3}, {3, 6}, 1},
      {{0, 2}, {0, 0}, 1},  // empty
  };
  std::vector<MoveCase> out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    for (DataType t : typesFor(i)) {
      for (bool runtime : {false, true}) {
        MoveCase c;
        c.op = "ReverseSequence";
        c.opset = 10;
        c.attrs.ints["batch_axis"] = s.batch_axis;
        c.attrs.ints["time_axis"] = 1 - s.batch_axis;
        c.name = fmt::format("ReverseSequence_{}_{}_lens_{}_batch_axis{}{}", dataTypeName(t),
                             test::dimsName(s.dims), test::listName(s.lens), s.batch_axis,
                             runtime ? "_runtime" : "");
        c.inputs = {test::randomTensor(t, s.dims, seedOf(c.name)), test::intTensor(s.lens)};
        if (runtime) c.runtime_inputs = {1};
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

class IndexingTest : public test::CudaTest, public ::testing::WithParamInterface<MoveCase> {};

TEST_P(IndexingTest, MatchesReference) {
  test::expectMatchesReference(GetParam());
}

auto caseName = [](const ::testing::TestParamInfo<MoveCase>& p) { return p.param.name; };

INSTANTIATE_TEST_SUITE_P(Gather, IndexingTest, ::testing::ValuesIn(gatherCases()), caseName);
INSTANTIATE_TEST_SUITE_P(GatherElements, IndexingTest, ::testing::ValuesIn(gatherElementsCases()),
                         caseName);
INSTANTIATE_TEST_SUITE_P(GatherND, IndexingTest, ::testing::ValuesIn(gatherNDCases()), caseName);
INSTANTIATE_TEST_SUITE_P(OneHot, IndexingTest, ::testing::ValuesIn(oneHotCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ReverseSequence, IndexingTest, ::testing::ValuesIn(reverseSequenceCases()),
                         caseName);
INSTANTIATE_TEST_SUITE_P(ScatterND, IndexingTest, ::testing::ValuesIn(scatterNDCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ScatterElements, IndexingTest, ::testing::ValuesIn(scatterElementsCases()),
                         caseName);

/// Host only: every case runs on the reference and passes the CUDA kernel's canImplement.
TEST(IndexingCases, ReferenceRunsAndCudaAcceptsEveryCase) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (const auto& cases : {gatherCases(), gatherElementsCases(), gatherNDCases(), scatterNDCases(),
                            scatterElementsCases(), oneHotCases(), reverseSequenceCases()}) {
    for (const MoveCase& c : cases) test::expectReferenceAndCanImplement(c);
  }
}

// --- runtime indices out of range -----------------------------------------------------------------

class IndexingOutOfRangeTest : public test::CudaTest {};

/// Gather with runtime indices 7 and -9 into a dim of 4: those rows are zeros, the others gathered.
TEST_F(IndexingOutOfRangeTest, GatherWritesZeros) {
  MoveCase c;
  c.op = "Gather";
  c.opset = 13;
  c.attrs.ints["axis"] = 0;
  HostTensor data = test::tensorOf(DataType::kFloat, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  c.inputs = {data, test::intTensor({7, -1, -9, 0}, {4})};
  c.runtime_inputs = {1};
  std::vector<HostTensor> want = {
      test::tensorOf(DataType::kFloat, {4, 2}, {0, 0, 7, 8, 0, 0, 1, 2})};
  auto got = test::runCaseOnDevice(c, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want[0], got->at(0), test::Tolerance{0, 0});
}

TEST_F(IndexingOutOfRangeTest, GatherElementsAndGatherNDWriteZeros) {
  MoveCase e;
  e.op = "GatherElements";
  e.opset = 13;
  e.attrs.ints["axis"] = 1;
  e.inputs = {test::tensorOf(DataType::kInt64, {2, 3}, {1, 2, 3, 4, 5, 6}),
              test::intTensor({2, 3, -4, 0}, {2, 2}, DataType::kInt32)};
  e.runtime_inputs = {1};
  std::vector<HostTensor> want = {test::tensorOf(DataType::kInt64, {2, 2}, {3, 0, 0, 4})};
  auto got = test::runCaseOnDevice(e, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want[0], got->at(0), test::Tolerance{0, 0});

  MoveCase n;
  n.op = "GatherND";
  n.opset = 13;
  n.inputs = {test::tensorOf(DataType::kFloat16, {2, 2}, {1, 2, 3, 4}),
              test::intTensor({1, 0, 2, 0, -1, -1}, {3, 2})};
  n.runtime_inputs = {1};
  want = {test::tensorOf(DataType::kFloat16, {3}, {3, 0, 4})};
  got = test::runCaseOnDevice(n, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want[0], got->at(0), test::Tolerance{0, 0});
}

/// ScatterND and ScatterElements skip an update whose runtime index is out of range.
TEST_F(IndexingOutOfRangeTest, ScattersSkipTheUpdate) {
  MoveCase n;
  n.op = "ScatterND";
  n.opset = 18;
  n.inputs = {test::tensorOf(DataType::kInt32, {4}, {1, 2, 3, 4}),
              test::intTensor({2, 4, -5, -1}, {4, 1}),
              test::tensorOf(DataType::kInt32, {4}, {10, 20, 30, 40})};
  n.runtime_inputs = {1};
  std::vector<HostTensor> want = {test::tensorOf(DataType::kInt32, {4}, {1, 2, 10, 40})};
  auto got = test::runCaseOnDevice(n, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want[0], got->at(0), test::Tolerance{0, 0});

  MoveCase e;
  e.op = "ScatterElements";
  e.opset = 18;
  e.attrs.ints["axis"] = 1;
  e.attrs.strings["reduction"] = "add";
  e.inputs = {test::tensorOf(DataType::kFloat, {2, 2}, {1, 2, 3, 4}),
              test::intTensor({1, 2, -3, 0}, {2, 2}, DataType::kInt32),
              test::tensorOf(DataType::kFloat, {2, 2}, {10, 20, 30, 40})};
  e.runtime_inputs = {1};
  want = {test::tensorOf(DataType::kFloat, {2, 2}, {1, 12, 43, 4})};
  got = test::runCaseOnDevice(e, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want[0], got->at(0), test::Tolerance{0, 0});
}

/// A runtime ReverseSequence length past the steps copies that sequence unreversed.
TEST_F(IndexingOutOfRangeTest, ReverseSequenceCopiesABadLength) {
  MoveCase c;
  c.op = "ReverseSequence";
  c.opset = 10;
  c.attrs.ints["batch_axis"] = 0;
  c.attrs.ints["time_axis"] = 1;
  c.inputs = {test::tensorOf(DataType::kInt32, {2, 3}, {1, 2, 3, 4, 5, 6}),
              test::intTensor({7, 2})};
  c.runtime_inputs = {1};
  std::vector<HostTensor> want = {test::tensorOf(DataType::kInt32, {2, 3}, {1, 2, 3, 5, 4, 6})};
  auto got = test::runCaseOnDevice(c, want);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want[0], got->at(0), test::Tolerance{0, 0});
}

}  // namespace
}  // namespace onnxopt::kernels
