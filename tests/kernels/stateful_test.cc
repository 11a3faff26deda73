// Tests of DeformConv (kernels/reference/deform_conv.cc), CausalConvWithState and LinearAttention
// (stateful.cc): hand-worked values over their float types where the node tests leave gaps (3-D
// DeformConv, fractional and out-of-bounds offsets, state carried from prefill to decode, GQA with
// a float32 state under float16 activations), and the contract errors (kInvalidArgument) and
// refused types (kUnimplemented).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/compare.h"
#include "test_tensors.h"

namespace onnxopt::kernels {
namespace {

using Dims = std::vector<int64_t>;
using Values = std::vector<double>;
using Inputs = std::vector<std::optional<HostTensor>>;

constexpr DataType kF = DataType::kFloat;
constexpr DataType kHalfTypes[] = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};

StatusOr<std::vector<HostTensor>> call(const std::string& op, int64_t opset, const Inputs& inputs,
                                       const KernelAttrs& attrs, size_t outputs) {
  std::vector<const HostTensor*> ptrs;
  for (const auto& in : inputs) ptrs.push_back(in ? &*in : nullptr);
  return runReferenceKernel(op, opset, ptrs, attrs, outputs);
}

StatusCode codeOf(const std::string& op, int64_t opset, const Inputs& inputs,
                  const KernelAttrs& attrs, size_t outputs) {
  auto r = call(op, opset, inputs, attrs, outputs);
  return r.isOk() ? StatusCode::kOk : r.status().code();
}

void expectNear(const HostTensor& t, const Dims& dims, const Values& want) {
  EXPECT_EQ(t.dims, dims);
  auto got = runtime::tensorAsDoubles(t);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), want.size());
  double tol = t.dtype == DataType::kFloat ? 1e-5 : 1e-2;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR((*got)[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << "at " << i << " of " << dataTypeName(t.dtype);
  }
}

// --- DeformConv
// -------------------------------------------------------------------------------------

TEST(DeformConv, ZeroOffsetsAreConv) {
  // 1x1x3x3 image, 2x2 kernel of ones, zero offsets: each output is the sum of a 2x2 window.
  HostTensor x = test::tensorOf(kF, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  HostTensor w = test::tensorOf(kF, {1, 1, 2, 2}, {1, 1, 1, 1});
  HostTensor off = test::tensorOf(kF, {1, 8, 2, 2}, {});
  auto r = call("DeformConv", 22, {x, w, off}, {}, 1);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  expectNear(r.value()[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(DeformConv, FractionalAndOutsideOffsets) {
  for (DataType type : kHalfTypes) {
    // A 1x1 kernel over a 1x1x2x2 image with 1x1 output: the tap moves by the offset.
    HostTensor x = test::tensorOf(type, {1, 1, 2, 2}, {1, 2, 3, 4});
    HostTensor w = test::tensorOf(type, {1, 1, 1, 1}, {1});
    auto at = [&](double dy, double dx) {
      HostTensor off = test::tensorOf(type, {1, 2, 1, 1}, {dy, dx});
      KernelAttrs a;
      a.int_lists["strides"] = {2, 2};
      auto r = call("DeformConv", 22, {x, w, off}, a, 1);
      EXPECT_TRUE(r.isOk()) << r.status().toString();
      return r.isOk() ? runtime::tensorAsDoubles(r.value()[0])->at(0) : 0.0;
    };
    EXPECT_NEAR(at(0.5, 0.5), 2.5, 1e-2);   // the centre: the mean
    EXPECT_NEAR(at(0, 0.25), 1.25, 1e-2);   // along the first row
    EXPECT_NEAR(at(-0.5, 0), 0.5, 1e-2);    // half outside: the missing row counts as zero
    EXPECT_NEAR(at(-1.0, 0), 0.0, 1e-2);    // a whole cell outside
    EXPECT_NEAR(at(1.5, 1.0), 2.0, 1e-2);   // past the last row: half of 4
    EXPECT_NEAR(at(7.0, -9.0), 0.0, 1e-2);  // far outside
  }
}

TEST(DeformConv, ThreeDimensionalWithMaskAndBias) {
  // 1x1x2x2x2 volume, 1x1x1 kernel, offsets (0.5, 0.5, 0.5): the mean of all 8 (4.5), times the
  // mask 2, plus the bias 1.
  Values vol = {1, 2, 3, 4, 5, 6, 7, 8};
  HostTensor x = test::tensorOf(kF, {1, 1, 2, 2, 2}, vol);
  HostTensor w = test::tensorOf(kF, {1, 1, 1, 1, 1}, {1});
  HostTensor off = test::tensorOf(kF, {1, 3, 1, 1, 1}, {0.5, 0.5, 0.5});
  HostTensor b = test::tensorOf(kF, {1}, {1});
  HostTensor mask = test::tensorOf(kF, {1, 1, 1, 1, 1}, {2});
  KernelAttrs a;
  a.int_lists["strides"] = {2, 2, 2};
  auto r = call("DeformConv", 19, {x, w, off, b, mask}, a, 1);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  expectNear(r.value()[0], {1, 1, 1, 1, 1}, {10});
}

TEST(DeformConv, GroupsAndOffsetGroups) {
  // Two channels, group 2 (one output per channel), offset_group 2: channel 0 is sampled at its
  // own position, channel 1 one column to the right (so from 4 it reads 0 outside).
  HostTensor x = test::tensorOf(kF, {1, 2, 1, 2}, {1, 2, 3, 4});
  HostTensor w = test::tensorOf(kF, {2, 1, 1, 1}, {10, 100});
  HostTensor off = test::tensorOf(kF, {1, 4, 1, 2}, {0, 0, 0, 0, 0, 0, 1, 1});
  KernelAttrs a;
  a.ints["group"] = 2;
  a.ints["offset_group"] = 2;
  auto r = call("DeformConv", 22, {x, w, off}, a, 1);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  expectNear(r.value()[0], {1, 2, 1, 2}, {10, 20, 400, 0});
}

TEST(DeformConv, BadInputsAreRefused) {
  HostTensor x = test::tensorOf(kF, {1, 2, 3, 3}, {});
  HostTensor w = test::tensorOf(kF, {1, 2, 2, 2}, {});
  HostTensor off = test::tensorOf(kF, {1, 8, 2, 2}, {});
  auto bad = [&](Inputs in, KernelAttrs a = {}) { return codeOf("DeformConv", 22, in, a, 1); };
  EXPECT_EQ(bad({x, w, off}), StatusCode::kOk);
  // offset of the wrong channel count, or of a spatial size other than the output's
  EXPECT_EQ(bad({x, w, test::tensorOf(kF, {1, 6, 2, 2}, {})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, w, test::tensorOf(kF, {1, 8, 3, 3}, {})}), StatusCode::kInvalidArgument);
  // mask of the wrong shape; bias of the wrong length
  EXPECT_EQ(bad({x, w, off, std::nullopt, test::tensorOf(kF, {1, 4, 2, 3}, {})}),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, w, off, test::tensorOf(kF, {2}, {})}), StatusCode::kInvalidArgument);
  // offset_group that does not divide the channels; group that does not fit W
  KernelAttrs og;
  og.ints["offset_group"] = 3;
  EXPECT_EQ(bad({x, w, off}, og), StatusCode::kInvalidArgument);
  KernelAttrs g;
  g.ints["group"] = 2;
  EXPECT_EQ(bad({x, w, off}, g), StatusCode::kInvalidArgument);
  // negative pads, zero strides, kernel_shape that contradicts W, a kernel larger than the input
  KernelAttrs pads;
  pads.int_lists["pads"] = {-1, 0, 0, 0};
  EXPECT_EQ(bad({x, w, off}, pads), StatusCode::kInvalidArgument);
  KernelAttrs strides;
  strides.int_lists["strides"] = {0, 1};
  EXPECT_EQ(bad({x, w, off}, strides), StatusCode::kInvalidArgument);
  KernelAttrs ks;
  ks.int_lists["kernel_shape"] = {3, 3};
  EXPECT_EQ(bad({x, w, off}, ks), StatusCode::kInvalidArgument);
  HostTensor big_w = test::tensorOf(kF, {1, 2, 4, 4}, {});
  EXPECT_EQ(bad({x, big_w, test::tensorOf(kF, {1, 32, 0, 0}, {})}), StatusCode::kInvalidArgument);
  // rank 2, mixed types, integers
  EXPECT_EQ(bad({test::tensorOf(kF, {1, 2}, {}), w, off}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, test::tensorOf(DataType::kDouble, {1, 2, 2, 2}, {}), off}),
            StatusCode::kInvalidArgument);
  HostTensor xi = test::tensorOf(DataType::kInt32, {1, 2, 3, 3}, {});
  EXPECT_EQ(bad({xi, w, off}), StatusCode::kUnimplemented);
}

// --- CausalConvWithState
// ----------------------------------------------------------------------------

TEST(CausalConvWithState, PrefillThenDecodeMatchesOneRun) {
  for (DataType type : kHalfTypes) {
    // One channel, kernel [1, 2, 3] (k = 3): y[t] = x[t-2] + 2 x[t-1] + 3 x[t].
    HostTensor w = test::tensorOf(type, {1, 1, 3}, {1, 2, 3});
    HostTensor full = test::tensorOf(type, {1, 1, 4}, {1, 2, 3, 4});
    auto whole = call("CausalConvWithState", 27, {full, w}, {}, 2);
    ASSERT_TRUE(whole.isOk()) << whole.status().toString();
    expectNear(whole.value()[0], {1, 1, 4}, {3, 8, 14, 20});
    expectNear(whole.value()[1], {1, 1, 2}, {3, 4});
    // The first three steps, then the fourth with the carried state.
    auto prefill =
        call("CausalConvWithState", 27, {test::tensorOf(type, {1, 1, 3}, {1, 2, 3}), w}, {}, 2);
    ASSERT_TRUE(prefill.isOk());
    expectNear(prefill.value()[1], {1, 1, 2}, {2, 3});
    auto step =
        call("CausalConvWithState", 27,
             {test::tensorOf(type, {1, 1, 1}, {4}), w, std::nullopt, prefill.value()[1]}, {}, 2);
    ASSERT_TRUE(step.isOk()) << step.status().toString();
    expectNear(step.value()[0], {1, 1, 1}, {20});
    expectNear(step.value()[1], {1, 1, 2}, {3, 4});
  }
}

TEST(CausalConvWithState, BiasSiluAndShortInput) {
  // k = 3 but one step: the state keeps the zero padding before the new value.
  HostTensor w = test::tensorOf(kF, {1, 1, 3}, {1, 1, 1});
  HostTensor x = test::tensorOf(kF, {1, 1, 1}, {2});
  HostTensor b = test::tensorOf(kF, {1}, {-1});
  KernelAttrs silu;
  silu.strings["activation"] = "silu";
  auto r = call("CausalConvWithState", 27, {x, w, b}, silu, 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  expectNear(r.value()[0], {1, 1, 1}, {1.0 / (1.0 + std::exp(-1.0))});
  expectNear(r.value()[1], {1, 1, 2}, {0, 2});
  // Kernel size one: the state is empty.
  auto k1 = call("CausalConvWithState", 27, {x, test::tensorOf(kF, {1, 1, 1}, {3})}, {}, 2);
  ASSERT_TRUE(k1.isOk());
  expectNear(k1.value()[0], {1, 1, 1}, {6});
  EXPECT_EQ(k1.value()[1].dims, (Dims{1, 1, 0}));
}

TEST(CausalConvWithState, BadInputsAreRefused) {
  HostTensor x = test::tensorOf(kF, {2, 3, 4}, {});
  HostTensor w = test::tensorOf(kF, {3, 1, 2}, {});
  auto bad = [&](Inputs in, KernelAttrs a = {}) {
    return codeOf("CausalConvWithState", 27, in, a, 2);
  };
  EXPECT_EQ(bad({x, w}), StatusCode::kOk);
  EXPECT_EQ(bad({test::tensorOf(kF, {3, 4}, {}), w}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, test::tensorOf(kF, {2, 1, 2}, {})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, test::tensorOf(kF, {3, 2, 2}, {})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, test::tensorOf(kF, {3, 1, 0}, {})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, w, test::tensorOf(kF, {2}, {})}), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, w, std::nullopt, test::tensorOf(kF, {2, 3, 2}, {})}),
            StatusCode::kInvalidArgument);
  KernelAttrs relu;
  relu.strings["activation"] = "relu";
  EXPECT_EQ(bad({x, w}, relu), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({x, test::tensorOf(DataType::kFloat16, {3, 1, 2}, {})}),
            StatusCode::kInvalidArgument);
  // double is outside the op's types
  EXPECT_EQ(bad({test::tensorOf(DataType::kDouble, {2, 3, 4}, {}),
                 test::tensorOf(DataType::kDouble, {3, 1, 2}, {})}),
            StatusCode::kUnimplemented);
}

// --- LinearAttention
// --------------------------------------------------------------------------------

KernelAttrs heads(int64_t q, int64_t kv, const std::string& rule) {
  KernelAttrs a;
  a.ints["q_num_heads"] = q;
  a.ints["kv_num_heads"] = kv;
  a.strings["update_rule"] = rule;
  return a;
}

TEST(LinearAttention, GatedDeltaByHand) {
  // d_k = d_v = 1, one head, scale 1: S1 = e^0 * 0 + 1 * k * (v - 0) = 2 * 3 = 6, o1 = q * S1 = 6.
  // Step 2: S' = e^{ln 0.5} * 6 = 3, v' = 0.5 * (1 - 3 * 1) = -1, S2 = 3 + 1 * -1 = 2, o2 = 2 * 2.
  HostTensor q = test::tensorOf(kF, {1, 2, 1}, {1, 2});
  HostTensor k = test::tensorOf(kF, {1, 2, 1}, {2, 1});
  HostTensor v = test::tensorOf(kF, {1, 2, 1}, {3, 1});
  HostTensor g = test::tensorOf(kF, {1, 2, 1}, {0, std::log(0.5)});
  HostTensor beta = test::tensorOf(kF, {1, 2, 1}, {1, 0.5});
  KernelAttrs a = heads(1, 1, "gated_delta");
  a.floats["scale"] = 1.0f;
  auto r = call("LinearAttention", 27, {q, k, v, std::nullopt, g, beta}, a, 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  expectNear(r.value()[0], {1, 2, 1}, {6, 4});
  expectNear(r.value()[1], {1, 1, 1, 1}, {2});
}

TEST(LinearAttention, GqaWithFloatStateUnderHalfActivations) {
  // Two query heads share one KV head (d_k = 1, d_v = 2); the float32 past state stays float32.
  HostTensor q = test::tensorOf(DataType::kFloat16, {1, 1, 2}, {1, -1});
  HostTensor k = test::tensorOf(DataType::kFloat16, {1, 1, 1}, {1});
  HostTensor v = test::tensorOf(DataType::kFloat16, {1, 1, 2}, {1, 2});
  HostTensor past = test::tensorOf(kF, {1, 1, 1, 2}, {10, 20});
  KernelAttrs a = heads(2, 1, "linear");
  a.floats["scale"] = 0.5f;
  auto r = call("LinearAttention", 27, {q, k, v, past}, a, 2);
  ASSERT_TRUE(r.isOk()) << r.status().toString();
  EXPECT_EQ(r.value()[0].dtype, DataType::kFloat16);
  EXPECT_EQ(r.value()[1].dtype, kF);
  expectNear(r.value()[0], {1, 1, 4}, {5.5, 11, -5.5, -11});
  expectNear(r.value()[1], {1, 1, 1, 2}, {11, 22});
}

TEST(LinearAttention, BadInputsAreRefused) {
  HostTensor q = test::tensorOf(kF, {1, 2, 4}, {});
  HostTensor k = test::tensorOf(kF, {1, 2, 4}, {});
  HostTensor v = test::tensorOf(kF, {1, 2, 6}, {});
  HostTensor g = test::tensorOf(kF, {1, 2, 2}, {});
  HostTensor beta = test::tensorOf(kF, {1, 2, 1}, {});
  auto bad = [&](Inputs in, KernelAttrs a) { return codeOf("LinearAttention", 27, in, a, 2); };
  KernelAttrs gd = heads(2, 2, "gated_delta");
  EXPECT_EQ(bad({q, k, v, std::nullopt, g, beta}, gd), StatusCode::kOk);
  // decay and beta required, or forbidden, by the rule
  EXPECT_EQ(bad({q, k, v, std::nullopt, std::nullopt, beta}, gd), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v, std::nullopt, g}, gd), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v, std::nullopt, g}, heads(2, 2, "linear")), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v}, heads(2, 2, "retention")), StatusCode::kInvalidArgument);
  // head counts: missing, not a multiple, not dividing the hidden size
  KernelAttrs no_heads;
  no_heads.strings["update_rule"] = "linear";
  EXPECT_EQ(bad({q, k, v}, no_heads), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v}, heads(3, 2, "linear")), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, test::tensorOf(kF, {1, 2, 5}, {})}, heads(2, 2, "linear")),
            StatusCode::kInvalidArgument);
  // shapes: key's width, mismatched sequence, decay and beta widths, past_state
  EXPECT_EQ(bad({q, test::tensorOf(kF, {1, 2, 3}, {}), v}, heads(2, 2, "linear")),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, test::tensorOf(kF, {1, 3, 4}, {}), v}, heads(2, 2, "linear")),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v, std::nullopt, test::tensorOf(kF, {1, 2, 3}, {}), beta}, gd),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v, std::nullopt, g, test::tensorOf(kF, {1, 2, 3}, {})}, gd),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v, test::tensorOf(kF, {1, 2, 2, 2}, {})}, heads(2, 2, "linear")),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, k, v, test::tensorOf(kF, {1, 2, 2, 3}, {})}, heads(2, 2, "linear")),
            StatusCode::kOk);
  // rank, mixed activation types, double
  EXPECT_EQ(bad({test::tensorOf(kF, {2, 4}, {}), k, v}, heads(2, 2, "linear")),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(bad({q, test::tensorOf(DataType::kFloat16, {1, 2, 4}, {}), v}, heads(2, 2, "linear")),
            StatusCode::kInvalidArgument);
  HostTensor qd = test::tensorOf(DataType::kDouble, {1, 2, 4}, {});
  EXPECT_EQ(bad({qd, qd, test::tensorOf(DataType::kDouble, {1, 2, 6}, {})}, heads(2, 2, "linear")),
            StatusCode::kUnimplemented);
}

TEST(LinearAttention, HugeStateIsRefused) {
  // 2^15 x 2^15 per head from 64 KiB inputs: the state would take 8 GiB in double.
  HostTensor qk = test::tensorOf(DataType::kFloat16, {1, 1, 1 << 15}, {});
  EXPECT_EQ(codeOf("LinearAttention", 27, {qk, qk, qk}, heads(1, 1, "linear"), 2),
            StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace onnxopt::kernels
