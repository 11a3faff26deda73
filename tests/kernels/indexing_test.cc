// Tests of the indexing and extra math reference kernels (kernels/reference/indexing.cc,
// math_extra.cc) where ONNX's node cases leave gaps: ties, negative indices, reductions, empty
// inputs, and bad inputs refused with kInvalidArgument.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
constexpr DataType kF = DataType::kFloat;
constexpr DataType kI64 = DataType::kInt64;

HostTensor t(DataType type, Dims dims, std::vector<double> values) {
  return test::tensorOf(type, std::move(dims), values);
}

StatusOr<std::vector<HostTensor>> run(const std::string& op, int64_t opset,
                                      const std::vector<const HostTensor*>& ins,
                                      const KernelAttrs& attrs = {}, size_t outputs = 1) {
  return runReferenceKernel(op, opset, ins, attrs, outputs);
}

std::vector<int64_t> ints(const HostTensor& h) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < h.numElements(); ++i) v.push_back(h.get<int64_t>(i));
  return v;
}
std::vector<float> floats(const HostTensor& h) {
  std::vector<float> v;
  for (int64_t i = 0; i < h.numElements(); ++i) v.push_back(h.get<float>(i));
  return v;
}

void expectInvalid(const StatusOr<std::vector<HostTensor>>& r) {
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().toString();
}

TEST(TopK, TiesKeepTheLowerIndexAndSmallestWorks) {
  HostTensor x = t(kF, {5}, {3, 1, 3, 1, 2});
  HostTensor k = t(kI64, {1}, {3});
  auto largest = run("TopK", 11, {&x, &k}, {}, 2);
  ASSERT_TRUE(largest.isOk()) << largest.status().toString();
  EXPECT_EQ(floats((*largest)[0]), (std::vector<float>{3, 3, 2}));
  EXPECT_EQ(ints((*largest)[1]), (std::vector<int64_t>{0, 2, 4}));
  KernelAttrs smallest;
  smallest.ints["largest"] = 0;
  auto r = run("TopK", 11, {&x, &k}, smallest, 2);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(ints((*r)[1]), (std::vector<int64_t>{1, 3, 4}));
}

TEST(TopK, RefusesKBeyondTheAxis) {
  HostTensor x = t(kF, {2}, {1, 2});
  HostTensor k = t(kI64, {1}, {3});
  expectInvalid(run("TopK", 11, {&x, &k}, {}, 2));
  HostTensor neg = t(kI64, {1}, {-1});
  expectInvalid(run("TopK", 11, {&x, &neg}, {}, 2));
}

TEST(ScatterND, ReductionsAndNegativeIndices) {
  HostTensor data = t(kF, {4}, {1, 2, 3, 4});
  HostTensor idx = t(kI64, {2, 1}, {-1, 0});
  HostTensor upd = t(kF, {2}, {10, 20});
  auto plain = run("ScatterND", 18, {&data, &idx, &upd});
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  EXPECT_EQ(floats((*plain)[0]), (std::vector<float>{20, 2, 3, 10}));
  KernelAttrs mul;
  mul.strings["reduction"] = "mul";
  auto r = run("ScatterND", 18, {&data, &idx, &upd}, mul);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{20, 2, 3, 40}));
  KernelAttrs max;
  max.strings["reduction"] = "max";
  expectInvalid(run("ScatterND", 16, {&data, &idx, &upd}, max));  // max arrives in opset 18
}

TEST(ScatterND, RefusesOutOfRangeIndicesAndBadShapes) {
  HostTensor data = t(kF, {2}, {1, 2});
  HostTensor idx = t(kI64, {1, 1}, {2});
  HostTensor upd = t(kF, {1}, {5});
  expectInvalid(run("ScatterND", 18, {&data, &idx, &upd}));
  HostTensor ok_idx = t(kI64, {1, 1}, {0});
  HostTensor bad_upd = t(kF, {2}, {5, 6});
  expectInvalid(run("ScatterND", 18, {&data, &ok_idx, &bad_upd}));
}

TEST(ScatterElements, AddAlongAxis1AndOutOfRange) {
  HostTensor data = t(kF, {2, 2}, {1, 2, 3, 4});
  HostTensor idx = t(kI64, {2, 1}, {1, -2});
  HostTensor upd = t(kF, {2, 1}, {10, 20});
  KernelAttrs add;
  add.ints["axis"] = 1;
  add.strings["reduction"] = "add";
  auto r = run("ScatterElements", 18, {&data, &idx, &upd}, add);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{1, 12, 23, 4}));
  HostTensor far = t(kI64, {2, 1}, {2, 0});
  expectInvalid(run("ScatterElements", 18, {&data, &far, &upd}, add));
}

TEST(GatherND, BatchDimsAndNegativeIndices) {
  HostTensor data = t(kF, {2, 2}, {1, 2, 3, 4});
  HostTensor idx = t(kI64, {2, 1}, {-1, 0});
  KernelAttrs b;
  b.ints["batch_dims"] = 1;
  auto r = run("GatherND", 13, {&data, &idx}, b);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->at(0).dims, (Dims{2}));
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{2, 3}));
  HostTensor deep = t(kI64, {1, 3}, {0, 0, 0});
  expectInvalid(run("GatherND", 13, {&data, &deep}));
}

TEST(Trilu, HugeKAndLower) {
  HostTensor x = t(kF, {2, 2}, {1, 2, 3, 4});
  HostTensor k = t(kI64, {}, {-9000000000000000000.0});
  auto all = run("Trilu", 14, {&x, &k});
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(floats((*all)[0]), (std::vector<float>{1, 2, 3, 4}));
  KernelAttrs lower;
  lower.ints["upper"] = 0;
  HostTensor zero = t(kI64, {}, {0});
  auto r = run("Trilu", 14, {&x, &zero}, lower);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{1, 0, 3, 4}));
  HostTensor v = t(kF, {2}, {1, 2});
  expectInvalid(run("Trilu", 14, {&v}));
}

TEST(Compress, RefusesALongCondition) {
  HostTensor x = t(kF, {2}, {1, 2});
  HostTensor cond = t(DataType::kBool, {3}, {1, 0, 1});
  expectInvalid(run("Compress", 11, {&x, &cond}));
}

TEST(Unique, UnsortedAxisAndEmpty) {
  HostTensor x = t(kF, {3, 2}, {2, 1, 0, 0, 2, 1});
  KernelAttrs a;
  a.ints["sorted"] = 0;
  a.ints["axis"] = 0;
  auto r = run("Unique", 11, {&x}, a, 4);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r->at(0).dims, (Dims{2, 2}));
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{2, 1, 0, 0}));
  EXPECT_EQ(ints((*r)[1]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ints((*r)[2]), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(ints((*r)[3]), (std::vector<int64_t>{2, 1}));
  HostTensor empty = t(kF, {0}, {});
  auto e = run("Unique", 11, {&empty}, {}, 4);
  ASSERT_TRUE(e.isOk());
  EXPECT_EQ(e->at(0).numElements(), 0);
}

TEST(NonMaxSuppression, RefusesMismatchedShapes) {
  HostTensor boxes = t(kF, {1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  HostTensor scores = t(kF, {1, 1, 3}, {1, 2, 3});
  expectInvalid(run("NonMaxSuppression", 11, {&boxes, &scores}));
}

/// ONNX NonMaxSuppression written as the spec reads (every candidate against every kept box), for
/// one batch of [y1, x1, y2, x2] boxes and one class: the kernel's indexed search must agree.
std::vector<int64_t> fullScanNms(const std::vector<double>& b, const std::vector<double>& s,
                                 double iou, int64_t max_out) {
  auto box = [&](int64_t i) {
    const double* p = b.data() + i * 4;
    return std::array<double, 4>{std::min(p[1], p[3]), std::min(p[0], p[2]), std::max(p[1], p[3]),
                                 std::max(p[0], p[2])};
  };
  auto over = [&](const std::array<double, 4>& a, const std::array<double, 4>& c) {
    double ix = std::min(a[2], c[2]) - std::max(a[0], c[0]);
    double iy = std::min(a[3], c[3]) - std::max(a[1], c[1]);
    if (!(ix > 0) || !(iy > 0)) return false;
    double inter = ix * iy, aa = (a[2] - a[0]) * (a[3] - a[1]), ac = (c[2] - c[0]) * (c[3] - c[1]);
    double uni = aa + ac - inter;
    return aa > 0 && ac > 0 && uni > 0 && inter / uni > iou;
  };
  std::vector<int64_t> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
  std::vector<int64_t> kept;
  for (int64_t i : order) {
    if (static_cast<int64_t>(kept.size()) >= max_out) break;
    if (std::none_of(kept.begin(), kept.end(), [&](int64_t k) { return over(box(i), box(k)); }))
      kept.push_back(i);
  }
  return kept;
}

// The kernel compares a candidate only with kept boxes that reach its x extent; over boxes spread
// as torchvision's batched NMS spreads them (each class offset apart), clustered boxes, flipped
// corners, a huge box, non-finite coordinates and negative thresholds it keeps what the full
// scan keeps.
TEST(NonMaxSuppression, IndexedSearchKeepsWhatTheFullScanKeeps) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = 1 + trial * 7;
    std::vector<double> boxes, scores;
    for (int64_t i = 0; i < n; ++i) {
      double offset = trial % 3 == 0 ? 400.0 * static_cast<double>(i % 9) : 0;
      double y = 100 * u(rng), x = 100 * u(rng) + offset, h = 30 * u(rng), w = 30 * u(rng);
      if (trial % 4 == 1) std::swap(x, w);  // flipped corners (x2 < x1) on some boxes
      boxes.insert(boxes.end(), {y, x, y + h, x + w});
      scores.push_back(std::floor(u(rng) * 20));  // ties: the stable order matters
    }
    if (trial % 5 == 2) boxes[1] = -1e6, boxes[3] = 1e6;  // one huge box (widest width)
    if (trial % 7 == 3) boxes[1] = std::nan("");          // the full-scan fallback
    if (trial % 11 == 4) boxes[3] = std::numeric_limits<double>::infinity();
    double iou = trial % 6 == 5 ? -0.5 : 0.1 + 0.1 * (trial % 5);
    int64_t max_out = trial % 8 == 7 ? n / 2 : n;
    std::vector<double> bf(boxes.begin(), boxes.end());
    HostTensor b = t(DataType::kDouble, {1, n, 4}, boxes);
    HostTensor sc = t(DataType::kDouble, {1, 1, n}, scores);
    HostTensor m = t(kI64, {1}, {static_cast<double>(max_out)});
    HostTensor th = t(DataType::kDouble, {1}, {iou});
    auto r = run("NonMaxSuppression", 11, {&b, &sc, &m, &th});
    ASSERT_TRUE(r.isOk()) << r.status().message();
    std::vector<int64_t> got;
    std::vector<int64_t> triples = ints(r->at(0));
    for (size_t i = 2; i < triples.size(); i += 3) got.push_back(triples[i]);
    EXPECT_EQ(got, fullScanNms(bf, scores, iou, max_out)) << "trial " << trial;
  }
}

TEST(ReverseSequence, RefusesALengthBeyondTheTimeAxis) {
  HostTensor x = t(kF, {2, 1}, {1, 2});
  HostTensor lens = t(kI64, {1}, {3});
  expectInvalid(run("ReverseSequence", 10, {&x, &lens}));
}

TEST(BitShift, ShiftByTheWidthEmpties) {
  HostTensor a = t(DataType::kUint8, {2}, {255, 3});
  HostTensor b = t(DataType::kUint8, {2}, {8, 1});
  KernelAttrs left;
  left.strings["direction"] = "LEFT";
  auto r = run("BitShift", 11, {&a, &b}, left);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->at(0).get<uint8_t>(0), 0);
  EXPECT_EQ(r->at(0).get<uint8_t>(1), 6);
  expectInvalid(run("BitShift", 11, {&a, &b}));  // direction is required
}

TEST(BitCast, RefusesDifferentWidths) {
  HostTensor x = t(kF, {1}, {1});
  KernelAttrs to;
  to.ints["to"] = static_cast<int64_t>(DataType::kInt64);
  expectInvalid(run("BitCast", 26, {&x}, to));
  to.ints["to"] = static_cast<int64_t>(DataType::kInt32);
  auto r = run("BitCast", 26, {&x}, to);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r->at(0).get<int32_t>(0), 0x3f800000);
}

TEST(Det, SingularAndPivoting) {
  HostTensor x = t(kF, {2, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4});
  auto r = run("Det", 11, {&x});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{-1, 0}));
  HostTensor rect = t(kF, {2, 3}, {1, 2, 3, 4, 5, 6});
  expectInvalid(run("Det", 11, {&rect}));
}

TEST(NegativeLogLikelihoodLoss, RefusesAnOutOfRangeTarget) {
  HostTensor x = t(kF, {1, 2}, {-1, -2});
  HostTensor target = t(kI64, {1}, {2});
  expectInvalid(run("NegativeLogLikelihoodLoss", 13, {&x, &target}));
  KernelAttrs ignore;
  ignore.ints["ignore_index"] = 2;
  ignore.strings["reduction"] = "sum";
  auto r = run("NegativeLogLikelihoodLoss", 13, {&x, &target}, ignore);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{0}));
}

TEST(LpNormalization, RefusesP3AndZeroNormGivesZero) {
  HostTensor x = t(kF, {2}, {0, 0});
  auto r = run("LpNormalization", 22, {&x});
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{0, 0}));
  KernelAttrs p;
  p.ints["p"] = 3;
  expectInvalid(run("LpNormalization", 22, {&x}, p));
}

}  // namespace
}  // namespace onnxopt::kernels
