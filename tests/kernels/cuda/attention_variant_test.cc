// Attention's variant table (kernels/cuda/attention/attention_variants.h) without a device: the rows, the
// environment's overrides mapped onto them, and the variant each geometry takes, named as the
// dispatch before the table chose it (flash where it applies: split-key on grids smaller than the
// SMs, mma.sync on aligned operands, else WMMA; then cuBLASLt; then the fused kernel).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/cuda/attention/attention_variants.h"

namespace onnxopt::kernels::cuda {
namespace {

using Dims = std::vector<int64_t>;

constexpr int kH100Sms = 132;

/// One Attention node's geometry, 4-D [B, H, S, D] throughout.
struct Geometry {
  DataType dtype = DataType::kFloat16;
  int64_t batch = 16, q_heads = 16, kv_heads = 16, q_seq = 512, kv_seq = 512;
  int64_t qk_size = 64, v_size = 64;
  bool causal = false;
  DataType mask = DataType::kUndefined;
  int64_t past = 0;  ///< past_key/past_value length (0: none) and the present outputs
  float softcap = 0.0f;
  bool qk_output = false;
  bool nonpad = false;
  uintptr_t q_address = 0x10000;  ///< an address not 16-byte aligned turns mma.sync off
};

/// AttentionArgs of `g` (views without data: only their addresses matter to the choice).
struct Node {
  std::vector<Dims> dims;
  AttentionArgs args;

  explicit Node(const Geometry& g) {
    auto in = [&](DataType t, const Dims& d, uintptr_t at = 0x10000) {
      return ConstTensorView(t, d, contiguousStrides(d), reinterpret_cast<const void*>(at),
                             MemoryKind::kDevice);
    };
    auto out = [&](DataType t, const Dims& d) {
      return TensorView(t, d, contiguousStrides(d), reinterpret_cast<void*>(0x20000),
                        MemoryKind::kDevice);
    };
    const int64_t total = g.past + g.kv_seq;
    args.opset = g.nonpad ? 24 : 23;
    args.q = in(g.dtype, {g.batch, g.q_heads, g.q_seq, g.qk_size}, g.q_address);
    args.k = in(g.dtype, {g.batch, g.kv_heads, g.kv_seq, g.qk_size});
    args.v = in(g.dtype, {g.batch, g.kv_heads, g.kv_seq, g.v_size});
    args.y = out(g.dtype, {g.batch, g.q_heads, g.q_seq, g.v_size});
    if (g.mask != DataType::kUndefined) args.mask = in(g.mask, {g.q_seq, total});
    if (g.past > 0) {
      args.past_key = in(g.dtype, {g.batch, g.kv_heads, g.past, g.qk_size});
      args.past_value = in(g.dtype, {g.batch, g.kv_heads, g.past, g.v_size});
      args.present_key = out(g.dtype, {g.batch, g.kv_heads, total, g.qk_size});
      args.present_value = out(g.dtype, {g.batch, g.kv_heads, total, g.v_size});
    }
    if (g.qk_output) args.qk_output = out(g.dtype, {g.batch, g.q_heads, g.q_seq, total});
    if (g.nonpad) args.nonpad = in(DataType::kInt64, {g.batch});
    args.causal = g.causal;
    args.softcap = g.softcap;
  }
};

std::string chosen(const Geometry& g, int sms = kH100Sms, const AttentionOverride& o = {}) {
  Node node(g);
  StatusOr<AttentionDeviceArgs> d = attentionDeviceArgs(node.args);
  EXPECT_TRUE(d.isOk()) << d.status().message();
  if (!d.isOk()) return "(invalid)";
  StatusOr<const AttentionVariant*> v = chooseAttentionVariant(*d, AttentionDevice{sms}, o);
  EXPECT_TRUE(v.isOk()) << v.status().message();
  return v.isOk() ? (*v)->name : "(none)";
}

TEST(AttentionVariants, RowsHaveUniqueKebabNamesAndEveryPart) {
  std::set<std::string> names;
  for (const AttentionVariant& v : attentionVariants()) {
    std::string name = v.name;
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_FALSE(name.empty());
    for (char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '-') << name;
    EXPECT_NE(v.applies, nullptr) << name;
    EXPECT_NE(v.workspace, nullptr) << name;
    EXPECT_NE(v.launch, nullptr) << name;
    EXPECT_EQ(findAttentionVariant(name), &v);
  }
  EXPECT_EQ(findAttentionVariant("no-such-variant"), nullptr);
  // The order is the preference; the last row runs whatever canImplement accepts.
  std::vector<std::string> in_order;
  for (const AttentionVariant& v : attentionVariants()) in_order.emplace_back(v.name);
  EXPECT_EQ(in_order, (std::vector<std::string>{"flash-split", "flash-mma", "flash-wmma",
                                                "cublaslt-gemm", "fused"}));
  EXPECT_EQ(attentionVariants().back().worthwhile, nullptr);
}

struct Case {
  const char* what;
  Geometry g;
  const char* expect;
  int sms = kH100Sms;
};

Geometry with(Geometry g, auto&& edit) {
  edit(g);
  return g;
}

/// fp32 [1, 16, 4096, 32] queries against `keys` keys: 2^30 bytes of float scores at 4096 keys.
Geometry scores(int64_t keys) {
  Geometry g;
  g.dtype = DataType::kFloat;
  g.batch = 1;
  g.qk_size = g.v_size = 32;
  g.q_seq = 4096;
  g.kv_seq = keys;
  return g;
}

TEST(AttentionVariants, EachGeometryTakesTheRowTheOldDispatchTook) {
  const Geometry big;  // fp16 [16, 16, 512, 64]: 16 * 16 * 8 = 2048 flash blocks
  const Geometry small = with(big, [](Geometry& g) {
    g.batch = 1;
    g.q_heads = g.kv_heads = 8;
    g.q_seq = g.kv_seq = 128;
  });  // 16 blocks
  const std::vector<Case> cases = {
      {"fp16 d64, small grid", small, "flash-split"},
      {"fp16 d64, small grid, SMs unknown", small, "flash-mma", 0},
      {"fp16 d64, small grid, 16 SMs", small, "flash-mma", 16},
      {"fp16 d64, small grid, 17 SMs", small, "flash-split", 17},
      {"fp16 d64, big grid", big, "flash-mma"},
      {"fp16 d64, Q not 16-byte aligned", with(big, [](Geometry& g) { g.q_address += 2; }),
       "flash-wmma"},
      {"fp16 d64, Q 16-byte aligned", with(big, [](Geometry& g) { g.q_address += 16; }),
       "flash-mma"},
      {"bf16 d128 causal bool mask",
       with(big,
            [](Geometry& g) {
              g.dtype = DataType::kBfloat16;
              g.qk_size = g.v_size = 128;
              g.causal = true;
              g.mask = DataType::kBool;
            }),
       "flash-mma"},
      {"bf16 d128 float mask, small grid",
       with(small,
            [](Geometry& g) {
              g.dtype = DataType::kBfloat16;
              g.qk_size = g.v_size = 128;
              g.mask = DataType::kBfloat16;
            }),
       "flash-split"},
      {"fp16 GQA d64", with(big, [](Geometry& g) { g.kv_heads = 4; }), "flash-mma"},
      {"fp16 GQA d32", with(big, [](Geometry& g) { g.kv_heads = 4, g.qk_size = g.v_size = 32; }),
       "fused"},
      {"fp32 d64", with(big, [](Geometry& g) { g.dtype = DataType::kFloat; }), "cublaslt-gemm"},
      {"fp32 d64 causal float mask",
       with(small,
            [](Geometry& g) {
              g.dtype = DataType::kFloat;
              g.causal = true;
              g.mask = DataType::kFloat;
            }),
       "cublaslt-gemm"},
      {"fp16 d32", with(big, [](Geometry& g) { g.qk_size = g.v_size = 32; }), "cublaslt-gemm"},
      {"fp16 d256", with(small, [](Geometry& g) { g.qk_size = g.v_size = 256; }), "cublaslt-gemm"},
      {"fp16 d64, V d32", with(big, [](Geometry& g) { g.v_size = 32; }), "cublaslt-gemm"},
      {"fp16 d64 past", with(small, [](Geometry& g) { g.past = 7; }), "fused"},
      {"fp32 d64 past", with(small, [](Geometry& g) { g.dtype = DataType::kFloat, g.past = 7; }),
       "fused"},
      {"fp16 d64 softcap", with(big, [](Geometry& g) { g.softcap = 30.0f; }), "fused"},
      {"fp16 d64 qk_matmul_output", with(small, [](Geometry& g) { g.qk_output = true; }), "fused"},
      {"bf16 d64 nonpad_kv_seqlen",
       with(small,
            [](Geometry& g) {
              g.dtype = DataType::kBfloat16;
              g.nonpad = true;
            }),
       "fused"},
      {"fp32 d32, scores of exactly 1 GiB", scores(4096), "cublaslt-gemm"},
      {"fp32 d32, scores over 1 GiB", scores(4097), "fused"},
  };
  for (const Case& c : cases) EXPECT_EQ(chosen(c.g, c.sms), c.expect) << c.what;
}

TEST(AttentionVariants, OverridesPickRowsByName) {
  const Geometry big;
  Geometry small = big;
  small.batch = 1;
  small.q_seq = small.kv_seq = 64;
  Geometry fp32 = big;
  fp32.dtype = DataType::kFloat;
  EXPECT_EQ(chosen(big, kH100Sms, {"flash-split", {}}), "flash-split");
  EXPECT_EQ(chosen(big, kH100Sms, {"flash-wmma", {}}), "flash-wmma");
  EXPECT_EQ(chosen(big, kH100Sms, {"cublaslt-gemm", {}}), "cublaslt-gemm");
  EXPECT_EQ(chosen(big, kH100Sms, {"fused", {}}), "fused");
  // A preferred row that does not apply leaves the walk as it was.
  EXPECT_EQ(chosen(fp32, kH100Sms, {"flash-mma", {}}), "cublaslt-gemm");
  EXPECT_EQ(chosen(small, kH100Sms, {"", {"flash-split"}}), "flash-mma");
  EXPECT_EQ(chosen(big, kH100Sms, {"", {"flash-mma"}}), "flash-wmma");
  EXPECT_EQ(chosen(small, kH100Sms, {"flash-split", {"flash-mma"}}), "flash-split");

  Node node(big);
  StatusOr<AttentionDeviceArgs> d = attentionDeviceArgs(node.args);
  ASSERT_TRUE(d.isOk());
  StatusOr<const AttentionVariant*> bad =
      chooseAttentionVariant(*d, AttentionDevice{kH100Sms}, {"flash", {}});
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("no variant 'flash'"), std::string::npos);
}

/// Sets (or unsets, for nullopt) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

AttentionOverride overrideWith(std::optional<std::string> variant, std::optional<std::string> split,
                               std::optional<std::string> mma) {
  ScopedEnv a("ONNXOPT_ATTENTION_VARIANT", std::move(variant));
  ScopedEnv b("ONNXOPT_FLASH_SPLIT", std::move(split));
  ScopedEnv c("ONNXOPT_FLASH_MMA", std::move(mma));
  return attentionOverrideFromEnv();
}

TEST(AttentionVariants, EnvironmentVariablesMapOntoRows) {
  using Skip = std::vector<std::string>;
  AttentionOverride none = overrideWith(std::nullopt, std::nullopt, std::nullopt);
  EXPECT_EQ(none.prefer, "");
  EXPECT_EQ(none.skip, Skip{});
  EXPECT_EQ(overrideWith("fused", std::nullopt, std::nullopt).prefer, "fused");
  EXPECT_EQ(overrideWith(std::nullopt, "1", std::nullopt).prefer, "flash-split");
  AttentionOverride no_split = overrideWith(std::nullopt, "0", std::nullopt);
  EXPECT_EQ(no_split.prefer, "");
  EXPECT_EQ(no_split.skip, Skip{"flash-split"});
  // As before, any value but one that starts with 1 turns the split-key kernel off.
  EXPECT_EQ(overrideWith(std::nullopt, "yes", std::nullopt).skip, Skip{"flash-split"});
  EXPECT_EQ(overrideWith(std::nullopt, "", std::nullopt).skip, Skip{});
  EXPECT_EQ(overrideWith(std::nullopt, std::nullopt, "0").skip, Skip{"flash-mma"});
  EXPECT_EQ(overrideWith(std::nullopt, std::nullopt, "1").skip, Skip{});
  AttentionOverride both = overrideWith("cublaslt-gemm", "1", "0");
  EXPECT_EQ(both.prefer, "cublaslt-gemm");
  EXPECT_EQ(both.skip, Skip{"flash-mma"});
  for (const AttentionOverride& o : {overrideWith("flash-wmma", std::nullopt, std::nullopt),
                                     overrideWith(std::nullopt, "1", "0")}) {
    EXPECT_NE(findAttentionVariant(o.prefer), nullptr) << o.prefer;
    for (const std::string& s : o.skip) EXPECT_NE(findAttentionVariant(s), nullptr) << s;
  }
}

TEST(AttentionVariants, WorkspaceAndNameFollowTheChosenRow) {
  Geometry fp32;
  fp32.dtype = DataType::kFloat;
  fp32.batch = 2;
  fp32.q_heads = fp32.kv_heads = 4;
  fp32.q_seq = fp32.kv_seq = 64;
  Node gemm(fp32);
  ScopedEnv variant("ONNXOPT_ATTENTION_VARIANT", std::nullopt);
  ScopedEnv split("ONNXOPT_FLASH_SPLIT", std::nullopt);
  StatusOr<AttentionDeviceArgs> d = attentionDeviceArgs(gemm.args);
  ASSERT_TRUE(d.isOk());
  EXPECT_EQ(workspaceBytes(gemm.args), gemmAttentionWorkspace(*d));
  EXPECT_GT(workspaceBytes(gemm.args), size_t{2 * 4 * 64 * 64 * 4});
  EXPECT_EQ(variantName(gemm.args), "cublaslt-gemm");
  Node flash{Geometry{}};
  EXPECT_EQ(workspaceBytes(flash.args), 0u);
  EXPECT_TRUE(variantName(flash.args).starts_with("flash-")) << variantName(flash.args);
  fp32.past = 3;
  Node fused(fp32);
  EXPECT_EQ(workspaceBytes(fused.args), 0u);
  EXPECT_EQ(variantName(fused.args), "fused");
  {
    ScopedEnv forced("ONNXOPT_ATTENTION_VARIANT", "fused");
    EXPECT_EQ(workspaceBytes(gemm.args), 0u);
    EXPECT_EQ(variantName(gemm.args), "fused");
  }
  Geometry invalid = fp32;
  invalid.kv_heads = 3;
  EXPECT_EQ(variantName(Node(invalid).args), "");
}

}  // namespace
}  // namespace onnxopt::kernels::cuda
