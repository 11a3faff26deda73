// The CUDA Attention kernels (kernels/cuda/attention/attention.cu, attention_flash.cu, attention.cc) against
// the reference kernel, for float, float16 and bfloat16: 3-D and 4-D inputs, grouped-query
// attention (4:2, 4:1, 12:4), decoding (Sq 1), key counts that are not a multiple of the tile,
// head sizes 8 to 256 and a V head size that differs, bool and float masks broadcast from
// [Sq, T], [B, 1, Sq, T], [B, 1, 1, T] and [Hq, Sq, T], a mask shorter than the keys, is_causal
// with and without past, softcap, scale, the present outputs and nonpad_kv_seqlen (opset 24), rows
// with every key masked, qk_matmul_output in its four modes; and ai.onnxopt.SafeAttention (its
// NaN guard) against its function body. Which path a case takes: fp16/bf16 with head sizes 64 or
// 128 and no past, present, softcap, nonpad_kv_seqlen or qk_matmul_output the tensor-core flash
// kernel; other cases with as many key/value heads as query heads and none of those the cuBLASLt
// products around a softmax kernel (fp32 among them); the rest the fused kernel. Label gpu.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "device_harness.h"
#include "onnxopt/kernels/reference.h"
#include "random_tensor.h"

namespace onnxopt::kernels {
namespace {

enum class MaskKind {
  kNone,
  kBool2d,      ///< bool [Sq, T]
  kFloat2d,     ///< Q's type [Sq, T]
  kPadding4d,   ///< Q's type [B, 1, 1, T]: a key padding mask, as BERT-style models build
  kFloat4d,     ///< Q's type [B, 1, Sq, T]
  kFloat3d,     ///< float (whatever Q's type) [Hq, Sq, T]
  kShortBool4d  ///< bool [1, Hq, Sq, T - 5]: the last 5 keys masked by padding
};

const char* maskName(MaskKind m) {
  switch (m) {
    case MaskKind::kBool2d:
      return "_maskbool2d";
    case MaskKind::kFloat2d:
      return "_maskfloat2d";
    case MaskKind::kPadding4d:
      return "_maskpadding";
    case MaskKind::kFloat4d:
      return "_maskfloat4d";
    case MaskKind::kFloat3d:
      return "_maskfloat3d";
    case MaskKind::kShortBool4d:
      return "_maskshort";
    default:
      return "";
  }
}

struct AttnCase {
  DataType dtype = DataType::kFloat;
  int64_t batch = 1, q_heads = 1, kv_heads = 1, q_seq = 1, kv_seq = 1, past_seq = 0;
  int64_t qk_size = 8, v_size = 8;
  bool three_d = false;
  MaskKind mask = MaskKind::kNone;
  bool causal = false;
  float softcap = 0.0f;
  std::optional<float> scale = std::nullopt;
  std::vector<int64_t> nonpad = {};  ///< opset 24's nonpad_kv_seqlen, one per batch (empty: none)
  bool presents = false;             ///< ask for present_key and present_value
  int qk_mode = -1;                  ///< ask for qk_matmul_output in this mode (-1: not)
  std::string name = {};
};

void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << c.name;
}

std::string nameOf(const AttnCase& c) {
  std::string name =
      fmt::format("{}_{}d_b{}_h{}kv{}_sq{}_skv{}", dataTypeName(c.dtype), c.three_d ? 3 : 4,
                  c.batch, c.q_heads, c.kv_heads, c.q_seq, c.kv_seq);
  if (c.past_seq > 0) name += fmt::format("_past{}", c.past_seq);
  name += fmt::format("_d{}", c.qk_size);
  if (c.v_size != c.qk_size) name += fmt::format("_dv{}", c.v_size);
  name += maskName(c.mask);
  if (c.causal) name += "_causal";
  if (c.softcap > 0) name += "_softcap";
  if (c.scale) name += "_scale";
  if (!c.nonpad.empty()) name += "_nonpad" + fmt::format("{}", fmt::join(c.nonpad, "x"));
  if (c.presents) name += "_present";
  if (c.qk_mode >= 0) name += fmt::format("_qkmode{}", c.qk_mode);
  return name;
}

/// A case of batch x q heads (kv heads for K and V) x Sq queries x Skv keys, head sizes d and dv.
AttnCase shape(int64_t batch, int64_t q_heads, int64_t kv_heads, int64_t q_seq, int64_t kv_seq,
               int64_t d, int64_t dv = 0) {
  AttnCase c;
  c.batch = batch;
  c.q_heads = q_heads;
  c.kv_heads = kv_heads;
  c.q_seq = q_seq;
  c.kv_seq = kv_seq;
  c.qk_size = d;
  c.v_size = dv > 0 ? dv : d;
  return c;
}

std::vector<AttnCase> attentionCases() {
  std::vector<AttnCase> shapes;
  auto add = [&](AttnCase c, auto&& change) {
    change(c);
    shapes.push_back(c);
  };
  auto as_is = [](AttnCase&) {};
  auto three_d = [](AttnCase& c) { c.three_d = true; };
  const AttnCase small = shape(2, 4, 4, 7, 33, 64);
  const AttnCase gqa = shape(1, 4, 2, 64, 130, 80);  // 4:2, Skv not a multiple of the tile
  // Shapes: decoding a single key, GQA 4:2 and 4:1, Dv != D, D 128 to 256 (8 output dims per
  // lane above 128, more than 48 KiB of shared memory), 3-D.
  add(shape(1, 1, 1, 1, 1, 8), as_is);
  add(small, as_is);
  add(gqa, as_is);
  add(shape(2, 4, 1, 65, 130, 64), three_d);
  add(shape(2, 2, 2, 7, 33, 64, 80), as_is);
  add(shape(1, 2, 1, 17, 40, 128), as_is);
  add(shape(1, 2, 2, 17, 40, 256), as_is);
  add(shape(2, 2, 1, 9, 35, 64, 160), as_is);
  add(shape(1, 2, 2, 7, 1, 256), [](AttnCase& c) {
    c.past_seq = 40;
    c.causal = c.presents = true;
  });
  add(shape(2, 3, 3, 5, 9, 8, 16), three_d);
  // The tensor-core (flash) kernel's sizes: BERT's heads (12 x 64, 128 tokens, 3-D, a padding
  // mask), a tile and a half of queries and keys at D 128 with is_causal, GQA 4:2 at D 64.
  add(shape(2, 12, 12, 128, 128, 64), [](AttnCase& c) {
    c.three_d = true;
    c.mask = MaskKind::kPadding4d;
  });
  add(shape(1, 2, 2, 100, 100, 128), [](AttnCase& c) { c.causal = true; });
  add(shape(2, 4, 2, 97, 70, 64), [](AttnCase& c) { c.mask = MaskKind::kFloat4d; });
  add(shape(8, 12, 12, 130, 130, 64), [](AttnCase& c) {
    c.three_d = true;
    c.mask = MaskKind::kPadding4d;
  });
  add(shape(12, 12, 4, 100, 100, 128), [](AttnCase& c) { c.causal = true; });
  // Masks.
  add(small, [](AttnCase& c) { c.mask = MaskKind::kBool2d; });
  add(gqa, [](AttnCase& c) {
    c.batch = 2;
    c.mask = MaskKind::kFloat4d;
  });
  add(shape(2, 4, 1, 65, 33, 64), [](AttnCase& c) {
    c.three_d = true;
    c.mask = MaskKind::kFloat3d;
  });
  add(small, [](AttnCase& c) { c.mask = MaskKind::kShortBool4d; });
  add(gqa, [](AttnCase& c) { c.mask = MaskKind::kFloat2d; });
  add(shape(2, 4, 4, 33, 33, 16), [](AttnCase& c) {
    c.three_d = true;
    c.mask = MaskKind::kPadding4d;
  });
  // is_causal, with and without past (the diagonal shifted by the past length), decoding.
  add(gqa, [](AttnCase& c) { c.causal = true; });
  add(shape(2, 2, 2, 65, 33, 64), [](AttnCase& c) { c.causal = true; });
  add(shape(2, 4, 2, 1, 1, 64), [](AttnCase& c) {
    c.past_seq = 129;
    c.causal = c.presents = true;
  });
  add(shape(2, 4, 2, 7, 7, 64), [](AttnCase& c) {
    c.past_seq = 33;
    c.three_d = c.causal = c.presents = true;
  });
  add(shape(1, 4, 4, 7, 7, 64), [](AttnCase& c) {
    c.past_seq = 26;
    c.mask = MaskKind::kBool2d;
    c.causal = c.presents = true;
  });
  add(shape(2, 4, 1, 1, 1, 80), [](AttnCase& c) {
    c.past_seq = 32;
    c.presents = true;
  });
  // softcap and scale.
  add(small, [](AttnCase& c) {
    c.softcap = 2.0f;
    c.scale = 0.3f;
  });
  add(gqa, [](AttnCase& c) {
    c.mask = MaskKind::kFloat4d;
    c.causal = true;
    c.softcap = 1.5f;
  });
  // nonpad_kv_seqlen (opset 24): valid keys per batch, the causal diagonal ending at the last
  // valid key; 3 valid keys for 7 queries leave rows 0 to 3 with nothing to attend (Y = 0).
  add(shape(2, 2, 2, 7, 33, 64), [](AttnCase& c) { c.nonpad = {20, 33}; });
  add(shape(2, 2, 1, 7, 33, 64), [](AttnCase& c) {
    c.causal = true;
    c.nonpad = {3, 33};
  });
  add(small, [](AttnCase& c) {
    c.mask = MaskKind::kBool2d;
    c.nonpad = {17, 30};
  });
  // qk_matmul_output in each mode (the reference's: 0 and 1 the scaled, softcapped scores, 2 with
  // the bias, 3 the probabilities), with and without the present outputs.
  for (int mode = 0; mode < 4; ++mode) {
    add(small, [mode](AttnCase& c) {
      c.mask = MaskKind::kShortBool4d;
      c.qk_mode = mode;
    });
  }
  add(shape(2, 4, 2, 7, 7, 64), [](AttnCase& c) {
    c.past_seq = 33;
    c.three_d = c.causal = c.presents = true;
    c.softcap = 2.0f;
    c.qk_mode = 1;
  });
  add(gqa, [](AttnCase& c) {
    c.mask = MaskKind::kFloat4d;
    c.causal = true;
    c.qk_mode = 3;
  });
  add(shape(2, 2, 1, 7, 33, 64), [](AttnCase& c) {
    c.causal = true;
    c.nonpad = {3, 33};
    c.qk_mode = 3;
  });
  add(shape(2, 2, 1, 7, 33, 64), [](AttnCase& c) {
    c.nonpad = {5, 33};
    c.qk_mode = 2;
  });

  std::vector<AttnCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (AttnCase c : shapes) {
      c.dtype = t;
      c.name = nameOf(c);
      out.push_back(c);
    }
  }
  return out;
}

using test::randomTensor;

/// The node's inputs (an omitted one has dtype kUndefined) and attributes.
struct AttnNode {
  std::vector<HostTensor> inputs;
  KernelAttrs attrs;
  int64_t opset = 23;
  size_t outputs = 1;
};

AttnNode buildNode(const AttnCase& c, std::mt19937& rng) {
  AttnNode n;
  int64_t total = c.past_seq + c.kv_seq;
  auto heads = [&](int64_t h, int64_t s, int64_t d) {
    return c.three_d ? std::vector<int64_t>{c.batch, s, h * d}
                     : std::vector<int64_t>{c.batch, h, s, d};
  };
  n.inputs.push_back(randomTensor(c.dtype, heads(c.q_heads, c.q_seq, c.qk_size), rng));
  n.inputs.push_back(randomTensor(c.dtype, heads(c.kv_heads, c.kv_seq, c.qk_size), rng));
  n.inputs.push_back(randomTensor(c.dtype, heads(c.kv_heads, c.kv_seq, c.v_size), rng));
  HostTensor mask;
  auto boolMask = [&](const std::vector<int64_t>& dims) {
    HostTensor m = randomTensor(DataType::kFloat, dims, rng, 0, 1);
    std::vector<double> bits;
    for (int64_t i = 0; i < m.numElements(); ++i) bits.push_back(m.get<float>(i) < 0.8 ? 1 : 0);
    return test::tensorOf(DataType::kBool, dims, bits);
  };
  auto floatMask = [&](DataType t, const std::vector<int64_t>& dims) {
    HostTensor m = randomTensor(DataType::kFloat, dims, rng, 0, 1);
    std::vector<double> bias;
    for (int64_t i = 0; i < m.numElements(); ++i) {
      double u = m.get<float>(i);
      bias.push_back(u < 0.1 ? -std::numeric_limits<double>::infinity() : -3 * u);
    }
    return test::tensorOf(t, dims, bias);
  };
  switch (c.mask) {
    case MaskKind::kBool2d:
      mask = boolMask({c.q_seq, total});
      break;
    case MaskKind::kFloat2d:
      mask = floatMask(c.dtype, {c.q_seq, total});
      break;
    case MaskKind::kPadding4d:
      mask = floatMask(c.dtype, {c.batch, 1, 1, total});
      break;
    case MaskKind::kFloat4d:
      mask = floatMask(c.dtype, {c.batch, 1, c.q_seq, total});
      break;
    case MaskKind::kFloat3d:
      mask = floatMask(DataType::kFloat, {c.q_heads, c.q_seq, total});
      break;
    case MaskKind::kShortBool4d:
      mask = boolMask({1, c.q_heads, c.q_seq, total - 5});
      break;
    case MaskKind::kNone:
      break;
  }
  n.inputs.push_back(mask);
  if (c.past_seq > 0) {
    n.inputs.push_back(randomTensor(c.dtype, {c.batch, c.kv_heads, c.past_seq, c.qk_size}, rng));
    n.inputs.push_back(randomTensor(c.dtype, {c.batch, c.kv_heads, c.past_seq, c.v_size}, rng));
  } else {
    n.inputs.emplace_back();
    n.inputs.emplace_back();
  }
  if (!c.nonpad.empty()) {
    std::vector<double> lens(c.nonpad.begin(), c.nonpad.end());
    n.inputs.push_back(test::tensorOf(DataType::kInt64, {c.batch}, lens));
    n.opset = 24;
  }
  while (!n.inputs.empty() && n.inputs.back().dtype == DataType::kUndefined) n.inputs.pop_back();
  if (c.three_d) {
    n.attrs.ints["q_num_heads"] = c.q_heads;
    n.attrs.ints["kv_num_heads"] = c.kv_heads;
  }
  if (c.causal) n.attrs.ints["is_causal"] = 1;
  if (c.softcap > 0) n.attrs.floats["softcap"] = c.softcap;
  if (c.scale) n.attrs.floats["scale"] = *c.scale;
  n.outputs = c.qk_mode >= 0 ? 4 : c.presents ? 3 : 1;
  if (c.qk_mode >= 0) n.attrs.ints["qk_matmul_output_mode"] = c.qk_mode;
  return n;
}

/// Runs the node's CUDA kernel with every output poisoned first (0xA5 bytes), the inputs also
/// given as host constants, as test::runOnDevice does for one output.
StatusOr<std::vector<HostTensor>> runAttention(const AttnNode& node,
                                               const std::vector<HostTensor>& expected,
                                               const std::string& op = "Attention",
                                               const std::string& domain = "") {
  ASSIGN_OR_RETURN(DeviceStream stream, DeviceStream::create());
  std::vector<test::DeviceTensor> inputs;
  CudaKernelCall call;
  call.op = op;
  call.domain = domain;
  call.opset = node.opset;
  call.attrs = &node.attrs;
  for (const HostTensor& t : node.inputs) {
    if (t.dtype == DataType::kUndefined) {
      inputs.emplace_back();
      continue;
    }
    ASSIGN_OR_RETURN(test::DeviceTensor d, test::upload(t, stream.get()));
    inputs.push_back(std::move(d));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    call.inputs.push_back(node.inputs[i].dtype == DataType::kUndefined ? ConstTensorView{}
                                                                       : inputs[i].view());
    call.constant_inputs.push_back(node.inputs[i].dtype == DataType::kUndefined ? nullptr
                                                                                : &node.inputs[i]);
  }
  std::vector<HostTensor> got;
  std::vector<test::DeviceTensor> outputs;
  for (const HostTensor& e : expected) {
    if (e.dtype == DataType::kUndefined) {  // not asked for
      got.emplace_back();
      outputs.emplace_back();
      call.outputs.emplace_back();
      continue;
    }
    got.push_back(HostTensor::zeros(e.dtype, e.dims));
    ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(e.bytes.size()));
    RETURN_IF_ERROR(fillDevice(buffer.data(), 0xA5, e.bytes.size(), stream.get()));
    outputs.push_back(test::DeviceTensor{std::move(buffer), e.dims, e.dtype});
    call.outputs.push_back(outputs.back().mutableView());
  }
  Support support = cudaCanImplement(call);
  if (!support) return Status(StatusCode::kUnimplemented, support.reason);
  // The tensor-core path's scores and probabilities (the fused kernel asks for none).
  ASSIGN_OR_RETURN(size_t workspace_bytes, cudaWorkspaceBytes(call));
  ASSIGN_OR_RETURN(DeviceBuffer workspace, DeviceBuffer::allocate(workspace_bytes));
  call.workspace = workspace.data();
  call.workspace_bytes = workspace.size();
  RETURN_IF_ERROR(launchCudaKernel(call, stream.get()));
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].dtype == DataType::kUndefined) continue;
    RETURN_IF_ERROR(copyToHost(got[i].bytes.data(), outputs[i].buffer.data(), got[i].bytes.size(),
                               stream.get()));
  }
  RETURN_IF_ERROR(stream.synchronize("Attention"));
  return got;
}

test::Tolerance attentionTolerance(DataType t) {
  // Float accumulation in another order than the reference's double; one rounding of the output.
  if (t == DataType::kFloat) return {1e-4, 2e-5};
  if (t == DataType::kFloat16) return {4e-3, 1e-3};
  return {2e-2, 4e-3};
}

/// test::expectClose, with equal infinities equal too (qk_matmul_output's masked scores are -inf
/// in mode 2, and -inf - -inf is NaN).
void expectCloseOrEqual(const HostTensor& want, const HostTensor& got, test::Tolerance tol) {
  ASSERT_EQ(want.dtype, got.dtype);
  ASSERT_EQ(want.dims, got.dims);
  int reported = 0;
  for (int64_t i = 0; i < want.numElements() && reported < 5; ++i) {
    double e = test::valueAt(want, i), a = test::valueAt(got, i);
    if (e == a || (std::isnan(e) && std::isnan(a)) ||
        std::fabs(e - a) <= tol.atol + tol.rtol * std::fabs(e))
      continue;
    ADD_FAILURE() << "element " << i << ": cuda " << a << ", reference " << e;
    ++reported;
  }
}

class AttentionTest : public test::CudaTest, public ::testing::WithParamInterface<AttnCase> {};

TEST_P(AttentionTest, MatchesReference) {
  const AttnCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  AttnNode node = buildNode(c, rng);
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : node.inputs) {
    ptrs.push_back(t.dtype == DataType::kUndefined ? nullptr : &t);
  }
  auto expected = runReferenceKernel("Attention", node.opset, ptrs, node.attrs, node.outputs);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  if (c.qk_mode >= 0 && !c.presents) {  // outputs 1 and 2 omitted, as the node tests do
    (*expected)[1] = HostTensor{};
    (*expected)[2] = HostTensor{};
  }
  auto got = runAttention(node, *expected);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  for (size_t i = 0; i < got->size(); ++i) {
    if (got->at(i).dtype == DataType::kUndefined) continue;
    SCOPED_TRACE(fmt::format("output {}", i));
    expectCloseOrEqual(expected->at(i), got->at(i), attentionTolerance(c.dtype));
  }
}

// ai.onnxopt.SafeAttention against its reference (its function body): BERT-like 3-D fp16 and
// bf16 with an additive mask where batch 1's last 28 keys are masked and row 5 of batch 0 has
// every key masked (0, not NaN), a NaN in one query (that head's row 0: the guard) and an
// infinite key element at a masked key of batch 1 (a score of +inf + -inf = NaN zeroes the rows
// it meets, as the body decides; -inf ones do not). fp32 takes the cuBLASLt path.
TEST_F(AttentionTest, SafeAttentionMatchesItsBody) {
  for (DataType t : {DataType::kFloat16, DataType::kBfloat16, DataType::kFloat}) {
    SCOPED_TRACE(dataTypeName(t));
    std::mt19937 rng(7);
    const int64_t b = 2, s = 80, h = 4, d = 64;
    AttnNode node;
    node.inputs.push_back(randomTensor(t, {b, s, h * d}, rng));
    node.inputs.push_back(randomTensor(t, {b, s, h * d}, rng));
    node.inputs.push_back(randomTensor(t, {b, s, h * d}, rng));
    std::vector<double> bias(static_cast<size_t>(b * s * s), 0.0);
    const double inf = std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j) {
        if (j >= s - 28) bias[static_cast<size_t>((s + i) * s + j)] = -inf;  // batch 1 padding
        if (i == 5) bias[static_cast<size_t>(i * s + j)] = -inf;             // batch 0 row 5
      }
    }
    node.inputs.push_back(test::tensorOf(t, {b, 1, s, s}, bias));
    auto setAt = [](HostTensor& x, int64_t i, double v) {
      HostTensor one = test::tensorOf(x.dtype, {1}, {v});
      std::copy(one.bytes.begin(), one.bytes.end(),
                x.bytes.begin() + i * static_cast<int64_t>(one.bytes.size()));
    };
    setAt(node.inputs[0], (0 * s + 9) * h * d + 3, std::nan(""));  // batch 0, query 9, head 0
    setAt(node.inputs[1], (1 * s + s - 1) * h * d + 64 + 1, inf);  // batch 1, masked key, head 1
    node.attrs.ints["num_heads"] = h;
    node.attrs.floats["scale"] = 0.125f;
    std::vector<const HostTensor*> ptrs;
    for (const HostTensor& x : node.inputs) ptrs.push_back(&x);
    auto expected = runReferenceKernel("ai.onnxopt.SafeAttention", 1, ptrs, node.attrs, 1);
    ASSERT_TRUE(expected.isOk()) << expected.status().toString();
    auto got = runAttention(node, *expected, "SafeAttention", "ai.onnxopt");
    ASSERT_TRUE(got.isOk()) << got.status().toString();
    expectCloseOrEqual(expected->at(0), got->at(0), attentionTolerance(t));
    // The fully masked row and the NaN query's head are 0, not NaN; its other heads are not.
    auto at = [&](int64_t bb, int64_t i, int64_t e) {
      return test::valueAt(got->at(0), (bb * s + i) * h * d + e);
    };
    EXPECT_EQ(at(0, 5, 0), 0.0);
    EXPECT_EQ(at(0, 9, 0), 0.0);
    EXPECT_TRUE(std::isfinite(at(0, 9, 64)) && at(0, 9, 64) != 0.0);
  }
}

// ai.onnxopt.SafePackedAttention against its reference: Q, K, V read in place from the three
// parts of one [B, S, 3 H D] tensor (rows 3 H D apart), fp16 and bf16 on the tensor-core kernel
// (batch 1 takes the split-key grid, batch 4 the standard one), fp32 on the cuBLASLt path; the
// mask pads batch 1's last 9 keys.
TEST_F(AttentionTest, SafePackedAttentionMatchesItsBody) {
  for (DataType t : {DataType::kFloat16, DataType::kBfloat16, DataType::kFloat}) {
    for (int64_t b : {1, 4}) {
      SCOPED_TRACE(fmt::format("{} batch {}", dataTypeName(t), b));
      std::mt19937 rng(11);
      const int64_t s = 48, h = 3, d = 64;
      AttnNode node;
      node.inputs.push_back(randomTensor(t, {b, s, 3 * h * d}, rng));
      std::vector<double> bias(static_cast<size_t>(b * s), 0.0);
      if (b > 1) {
        for (int64_t j = s - 9; j < s; ++j) {
          bias[static_cast<size_t>(s + j)] = -std::numeric_limits<double>::infinity();
        }
      }
      node.inputs.push_back(test::tensorOf(t, {b, 1, 1, s}, bias));
      node.attrs.ints["num_heads"] = h;
      node.attrs.floats["scale"] = 0.125f;
      std::vector<const HostTensor*> ptrs;
      for (const HostTensor& x : node.inputs) ptrs.push_back(&x);
      auto expected = runReferenceKernel("ai.onnxopt.SafePackedAttention", 1, ptrs, node.attrs, 1);
      ASSERT_TRUE(expected.isOk()) << expected.status().toString();
      auto got = runAttention(node, *expected, "SafePackedAttention", "ai.onnxopt");
      ASSERT_TRUE(got.isOk()) << got.status().toString();
      expectCloseOrEqual(expected->at(0), got->at(0), attentionTolerance(t));
    }
  }
}

// ai.onnxopt.SeqFirstPackedAttention and PackedAttention against their references: QKV
// [S, B, 3 H D] (torch's nn.MultiheadAttention) or [B, S, 3 H D] read in place and Y written as
// [S, B, H D] or [B, S, H D] rows; fp16 and bf16 on the tensor-core kernels at head size 64 and
// (S = 197, ViT's) an odd sequence, both grids (batch 1: split keys; batch 24: 96 blocks of 64
// rows, or more SMs' worth with ONNXOPT_FLASH_SPLIT=0); fp32, and head size 32 of any type, on
// the cuBLASLt path.
TEST_F(AttentionTest, PackedAttentionMatchesItsBody) {
  for (const char* op : {"SeqFirstPackedAttention", "PackedAttention"}) {
    for (DataType t : {DataType::kFloat16, DataType::kBfloat16, DataType::kFloat}) {
      for (int64_t b : {1, 24}) {
        for (int64_t d : {64, 32}) {
          SCOPED_TRACE(fmt::format("{} {} batch {} head size {}", op, dataTypeName(t), b, d));
          std::mt19937 rng(13);
          const int64_t s = 197, h = 2;
          const bool seq_first = std::string(op) == "SeqFirstPackedAttention";
          AttnNode node;
          node.inputs.push_back(randomTensor(t,
                                             seq_first ? std::vector<int64_t>{s, b, 3 * h * d}
                                                       : std::vector<int64_t>{b, s, 3 * h * d},
                                             rng));
          node.attrs.ints["num_heads"] = h;
          node.attrs.floats["scale"] = 0.125f;
          std::vector<const HostTensor*> ptrs = {&node.inputs[0]};
          auto expected =
              runReferenceKernel(std::string("ai.onnxopt.") + op, 1, ptrs, node.attrs, 1);
          ASSERT_TRUE(expected.isOk()) << expected.status().toString();
          auto got = runAttention(node, *expected, op, "ai.onnxopt");
          ASSERT_TRUE(got.isOk()) << got.status().toString();
          expectCloseOrEqual(expected->at(0), got->at(0), attentionTolerance(t));
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fused, AttentionTest, ::testing::ValuesIn(attentionCases()),
                         [](const ::testing::TestParamInfo<AttnCase>& p) { return p.param.name; });

}  // namespace
}  // namespace onnxopt::kernels
