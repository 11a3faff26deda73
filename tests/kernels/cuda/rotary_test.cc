// RotaryEmbedding on CUDA (kernels/cuda/attention/rotary.cu) against the reference kernel, for float,
// float16 and bfloat16: 4-D and 3-D inputs, halves and interleaved pairs, a partial
// rotary_embedding_dim, caches read at position_ids or per token. Label gpu; and (host) what
// canImplement refuses.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "device_harness.h"
#include "onnxopt/kernels/reference.h"
#include "random_tensor.h"

namespace onnxopt::kernels {
namespace {

struct RotaryCase {
  DataType dtype = DataType::kFloat;
  bool four_d = true, interleaved = false, positions = true;
  int64_t batch = 2, heads = 3, seq = 5, head = 16, rot = 0;  ///< rot 0: the head size
  std::string name = {};
};

void PrintTo(const RotaryCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<RotaryCase> rotaryCases() {
  std::vector<RotaryCase> out;
  for (DataType t : {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16}) {
    for (int variant = 0; variant < 6; ++variant) {
      RotaryCase c;
      c.dtype = t;
      c.four_d = variant % 2 == 0;
      c.interleaved = variant >= 2 && variant < 4;
      c.positions = variant != 5;
      c.rot = variant == 4 || variant == 5 ? 8 : 0;
      if (variant == 1) c.seq = 67;  // several blocks
      c.name = fmt::format("{}_{}d_s{}_{}_rot{}_{}", dataTypeName(t), c.four_d ? 4 : 3, c.seq,
                           c.interleaved ? "interleaved" : "halves", c.rot,
                           c.positions ? "positions" : "pertoken");
      out.push_back(c);
    }
  }
  return out;
}

struct RotaryNode {
  std::vector<HostTensor> inputs;
  KernelAttrs attrs;
};

RotaryNode buildNode(const RotaryCase& c, std::mt19937& rng) {
  RotaryNode n;
  int64_t half = (c.rot == 0 ? c.head : c.rot) / 2, max_pos = 40;
  std::vector<int64_t> x = c.four_d ? std::vector<int64_t>{c.batch, c.heads, c.seq, c.head}
                                    : std::vector<int64_t>{c.batch, c.seq, c.heads * c.head};
  std::vector<int64_t> cache = c.positions
                                   ? std::vector<int64_t>{std::max<int64_t>(max_pos, c.seq), half}
                                   : std::vector<int64_t>{c.batch, c.seq, half};
  n.inputs.push_back(test::randomTensor(c.dtype, x, rng));
  n.inputs.push_back(test::randomTensor(c.dtype, cache, rng));
  n.inputs.push_back(test::randomTensor(c.dtype, cache, rng));
  if (c.positions) {
    HostTensor p = test::randomTensor(DataType::kFloat, {c.batch, c.seq}, rng, 0, cache[0]);
    std::vector<double> ids;
    for (int64_t i = 0; i < p.numElements(); ++i)
      ids.push_back(static_cast<int64_t>(p.get<float>(i)));
    n.inputs.push_back(test::tensorOf(DataType::kInt64, {c.batch, c.seq}, ids));
  }
  if (!c.four_d) n.attrs.ints["num_heads"] = c.heads;
  if (c.interleaved) n.attrs.ints["interleaved"] = 1;
  if (c.rot != 0) n.attrs.ints["rotary_embedding_dim"] = c.rot;
  return n;
}

class RotaryTest : public test::CudaTest, public ::testing::WithParamInterface<RotaryCase> {};

TEST_P(RotaryTest, MatchesReference) {
  const RotaryCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  RotaryNode n = buildNode(c, rng);
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : n.inputs) ptrs.push_back(&t);
  auto want = runReferenceKernel("RotaryEmbedding", 23, ptrs, n.attrs, 1);
  ASSERT_TRUE(want.isOk()) << want.status().toString();
  auto got = test::runOnDevice("RotaryEmbedding", 23, n.inputs, n.attrs, want->at(0).dtype,
                               want->at(0).dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  test::expectClose(want->at(0), *got, test::toleranceFor(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(Rotated, RotaryTest, ::testing::ValuesIn(rotaryCases()),
                         [](const ::testing::TestParamInfo<RotaryCase>& p) {
                           return p.param.name;
                         });

/// Host: every case above passes canImplement; a position beyond the cache, an odd rotary dim and
/// mixed types are refused with the reference's reasons.
TEST(CudaRotary, CanImplement) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  auto ask = [](const RotaryNode& n) {
    CudaKernelCall call;
    call.op = "RotaryEmbedding";
    call.opset = 23;
    call.attrs = &n.attrs;
    for (const HostTensor& t : n.inputs) {
      call.inputs.emplace_back(t.dtype, t.dims, contiguousStrides(t.dims), nullptr,
                               MemoryKind::kDevice);
      call.constant_inputs.push_back(&t);
    }
    const HostTensor& x = n.inputs[0];
    call.outputs.emplace_back(x.dtype, x.dims, contiguousStrides(x.dims), nullptr,
                              MemoryKind::kDevice);
    return cudaCanImplement(call);
  };
  std::mt19937 rng(7);
  for (const RotaryCase& c : rotaryCases()) {
    Support s = ask(buildNode(c, rng));
    EXPECT_TRUE(s) << c.name << ": " << s.reason;
  }
  RotaryCase c;
  RotaryNode n = buildNode(c, rng);
  n.inputs[3].set<int64_t>(0, 40);
  EXPECT_NE(ask(n).reason.find("position id 40 is outside the cache of 40 rows"), std::string::npos)
      << ask(n).reason;
  n = buildNode(c, rng);
  n.attrs.ints["rotary_embedding_dim"] = 7;
  EXPECT_NE(ask(n).reason.find("must be even"), std::string::npos) << ask(n).reason;
  n = buildNode(c, rng);
  n.inputs[1] = HostTensor::zeros(DataType::kFloat16, n.inputs[1].dims);
  EXPECT_NE(ask(n).reason.find("of one type"), std::string::npos) << ask(n).reason;
}

}  // namespace
}  // namespace onnxopt::kernels
