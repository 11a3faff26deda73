// The reference kernels of our own ops (kernels/reference/target_ops.cc) give what their function
// bodies give: the standard ops' kernels run in order, in the element type (float16 rounding after
// each op included), and refuse what the ops' contracts exclude.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using test::tensorOf;

HostTensor one(StatusOr<std::vector<HostTensor>> out, size_t i = 0) {
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  return out.isOk() ? (*out)[i] : HostTensor{};
}

TEST(TargetOps, MatMulBiasFamilyIsItsBody) {
  for (DataType t : {DataType::kFloat, DataType::kFloat16}) {
    HostTensor a = tensorOf(t, {2, 3, 4}, {1, -2, 3, -4, 5, -6, 7, -8, 9, -1, 2, -3,
                                           4, -5, 6, -7, 8, -9, 1, -2, 3, -4, 5, -6});
    HostTensor b = tensorOf(t, {4, 2}, {0.5, -1, 1.5, -2, 2.5, -3, 3.5, -4});
    HostTensor bias = tensorOf(t, {2}, {10, -0.25});
    HostTensor product = one(runReferenceKernel("MatMul", 13, {&a, &b}, {}, 1));
    HostTensor biased = one(runReferenceKernel("Add", 14, {&product, &bias}, {}, 1));
    HostTensor got = one(runReferenceKernel("ai.onnxopt.MatMulBias", 1, {&a, &b, &bias}, {}, 1));
    EXPECT_EQ(got.dims, (std::vector<int64_t>{2, 3, 2}));
    EXPECT_EQ(got.bytes, biased.bytes) << dataTypeName(t);
    HostTensor relu = one(runReferenceKernel("Relu", 14, {&biased}, {}, 1));
    EXPECT_EQ(one(runReferenceKernel("ai.onnxopt.MatMulBiasRelu", 1, {&a, &b, &bias}, {}, 1)).bytes,
              relu.bytes);
    for (const char* approximate : {"none", "tanh"}) {
      KernelAttrs attrs;
      attrs.strings["approximate"] = approximate;
      HostTensor gelu = one(runReferenceKernel("Gelu", 20, {&biased}, attrs, 1));
      EXPECT_EQ(
          one(runReferenceKernel("ai.onnxopt.MatMulBiasGelu", 1, {&a, &b, &bias}, attrs, 1)).bytes,
          gelu.bytes)
          << approximate;
    }
  }
}

TEST(TargetOps, SkipLayerNormalizationIsItsBody) {
  HostTensor x = tensorOf(DataType::kFloat, {2, 3}, {1, 2, 3, -1, 0, 4});
  HostTensor skip = tensorOf(DataType::kFloat, {2, 3}, {0.5, -0.5, 1, 2, 2, -2});
  HostTensor scale = tensorOf(DataType::kFloat, {3}, {1, 2, 0.5});
  HostTensor bias = tensorOf(DataType::kFloat, {3}, {0, 1, -1});
  HostTensor sum = one(runReferenceKernel("Add", 14, {&x, &skip}, {}, 1));
  KernelAttrs attrs;
  attrs.floats["epsilon"] = 1e-3f;
  HostTensor y = one(runReferenceKernel("LayerNormalization", 17, {&sum, &scale, &bias}, attrs, 1));
  auto got = runReferenceKernel("ai.onnxopt.SkipLayerNormalization", 1, {&x, &skip, &scale, &bias},
                                attrs, 2);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0].bytes, y.bytes);
  EXPECT_EQ((*got)[1].bytes, sum.bytes);
}

TEST(TargetOps, SkipRMSNormalizationIsItsBody) {
  for (DataType t : {DataType::kFloat, DataType::kFloat16}) {
    HostTensor x = tensorOf(t, {2, 3}, {1, 2, 3, -1, 0, 4});
    HostTensor skip = tensorOf(t, {2, 3}, {0.5, -0.5, 1, 2, 2, -2});
    HostTensor scale = tensorOf(t, {3}, {1, 2, 0.5});
    HostTensor sum = one(runReferenceKernel("Add", 14, {&x, &skip}, {}, 1));
    KernelAttrs attrs;
    attrs.floats["epsilon"] = 1e-3f;
    HostTensor y = one(runReferenceKernel("RMSNormalization", 23, {&sum, &scale}, attrs, 1));
    auto got =
        runReferenceKernel("ai.onnxopt.SkipRMSNormalization", 1, {&x, &skip, &scale}, attrs, 2);
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    ASSERT_EQ(got->size(), 2u);
    EXPECT_EQ((*got)[0].bytes, y.bytes);
    EXPECT_EQ((*got)[1].bytes, sum.bytes);
  }
}

TEST(TargetOps, GatedActivationsAreTheirBodies) {
  for (DataType t : {DataType::kFloat, DataType::kFloat16}) {
    HostTensor a = tensorOf(t, {2, 4}, {1, -2, 3.5, -0.25, 0.5, 6, -7, 2});
    HostTensor g = tensorOf(t, {2, 2}, {1, -2, 0.5, 6});
    HostTensor u = tensorOf(t, {2, 2}, {3.5, -0.25, -7, 2});
    HostTensor s = one(runReferenceKernel("Sigmoid", 13, {&g}, {}, 1));
    HostTensor silu = one(runReferenceKernel("Mul", 14, {&g, &s}, {}, 1));
    HostTensor swiglu = one(runReferenceKernel("Mul", 14, {&silu, &u}, {}, 1));
    EXPECT_EQ(one(runReferenceKernel("ai.onnxopt.SwiGlu", 1, {&a}, {}, 1)).bytes, swiglu.bytes);
    KernelAttrs tanh;
    tanh.strings["approximate"] = "tanh";
    HostTensor gelu = one(runReferenceKernel("Gelu", 20, {&g}, tanh, 1));
    HostTensor geglu = one(runReferenceKernel("Mul", 14, {&gelu, &u}, {}, 1));
    EXPECT_EQ(one(runReferenceKernel("ai.onnxopt.GeGlu", 1, {&a}, tanh, 1)).bytes, geglu.bytes);
  }
  HostTensor odd = tensorOf(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto refused = runReferenceKernel("ai.onnxopt.SwiGlu", 1, {&odd}, {}, 1);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("even last dim"), std::string::npos);
}

TEST(TargetOps, ContractsAreChecked) {
  HostTensor a = tensorOf(DataType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor b = tensorOf(DataType::kFloat, {3, 2}, {1, 2, 3, 4, 5, 6});
  auto no_bias = runReferenceKernel("ai.onnxopt.MatMulBias", 1, {&a, &b}, {}, 1);
  ASSERT_FALSE(no_bias.isOk());
  EXPECT_NE(no_bias.status().message().find("bias"), std::string::npos);
  HostTensor scale = tensorOf(DataType::kFloat, {3}, {1, 1, 1});
  HostTensor skip = tensorOf(DataType::kFloat, {3}, {1, 1, 1});  // not X's shape
  auto bad_skip =
      runReferenceKernel("ai.onnxopt.SkipLayerNormalization", 1, {&a, &skip, &scale}, {}, 1);
  ASSERT_FALSE(bad_skip.isOk());
  EXPECT_NE(bad_skip.status().message().find("Skip"), std::string::npos);
}

}  // namespace
}  // namespace onnxopt::kernels
