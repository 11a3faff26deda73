// Constant helpers of pass/matchers.h: floatValues and makeFloatTensor (float32 takes a path of its
// own, which must give what the per-element conversion gives) and the tensor hash and equality CSE
// buckets initializers with.
#include "onnxopt/pass/matchers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "onnxopt/ir/tensor_compare.h"

namespace onnxopt::pass {
namespace {

ir::Tensor floats(const std::vector<float>& v) {
  ir::Tensor t(DataType::kFloat, {static_cast<int64_t>(v.size())});
  std::string bytes(v.size() * 4, '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t.setBytes(std::move(bytes));
  return t;
}

TEST(FloatValues, Float32RoundTripsEveryValueExactly) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v = {0.f,
                          -0.f,
                          1.5f,
                          -3.25e7f,
                          1e-40f /* subnormal */,
                          inf,
                          -inf,
                          std::numeric_limits<float>::quiet_NaN(),
                          0.1f};
  ir::Tensor t = floats(v);
  auto values = floatValues(t);
  ASSERT_TRUE(values);
  ASSERT_EQ(values->size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) {
      EXPECT_TRUE(std::isnan((*values)[i]));
    } else {
      EXPECT_EQ((*values)[i], static_cast<double>(v[i])) << i;
      EXPECT_EQ(std::signbit((*values)[i]), std::signbit(v[i])) << i;
    }
  }
  ir::Tensor back = makeFloatTensor(DataType::kFloat, {static_cast<int64_t>(v.size())}, *values);
  EXPECT_EQ(back.bytes(), t.bytes());  // bit for bit, NaN and -0 included
}

TEST(FloatValues, OtherFloatTypesAndRefusals) {
  ir::Tensor d = makeFloatTensor(DataType::kDouble, {2}, {0.1, -2.0});
  EXPECT_EQ(*floatValues(d), (std::vector<double>{0.1, -2.0}));
  ir::Tensor h = makeFloatTensor(DataType::kFloat16, {2}, {0.5, -1.0});
  EXPECT_EQ(*floatValues(h), (std::vector<double>{0.5, -1.0}));
  ir::Tensor short_data(DataType::kFloat, {3});
  short_data.setBytes(std::string(8, '\0'));
  EXPECT_FALSE(floatValues(short_data));
  ir::Tensor ints(DataType::kInt32, {1});
  ints.setBytes(std::string(4, '\0'));
  EXPECT_FALSE(floatValues(ints));
}

// The hash only buckets: equal tensors hash alike, and tensors that differ in a sampled byte (or
// in type or dims) almost surely not; tensorsEqual decides.
TEST(TensorHash, EqualTensorsHashAlikeAndSampledDifferencesShow) {
  std::vector<float> big(100000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 97) * 0.5f;
  ir::Tensor a = floats(big), b = floats(big);
  EXPECT_EQ(ir::tensorHash(a), ir::tensorHash(b));
  EXPECT_TRUE(ir::tensorsEqual(a, b));
  for (size_t at : {size_t{0}, size_t{3}, big.size() / 2, big.size() - 1}) {
    std::vector<float> c = big;
    c[at] += 1.f;
    EXPECT_NE(ir::tensorHash(floats(c)), ir::tensorHash(a)) << at;
    EXPECT_FALSE(ir::tensorsEqual(floats(c), a)) << at;
  }
  // Outside the sample: the same bucket, but not equal.
  std::vector<float> d = big;
  d[big.size() / 4] += 1.f;
  EXPECT_FALSE(ir::tensorsEqual(floats(d), a));
  std::vector<float> small = {1.f, 2.f, 3.f};
  ir::Tensor s = floats(small);
  std::vector<float> small2 = {1.f, 2.f, 4.f};
  EXPECT_NE(ir::tensorHash(s), ir::tensorHash(floats(small2)));
}

}  // namespace
}  // namespace onnxopt::pass
