// Tests of the indexing and extra math reference kernels (kernels/reference/indexing.cc,
// math_extra.cc) where ONNX's node cases leave gaps: ties, negative indices, reductions, empty
// inputs, and bad inputs refused with kInvalidArgument.
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
