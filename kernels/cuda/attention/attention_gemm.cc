// cublaslt-gemm, the tensor-core path of Attention (attention_variants.h): S = scale Q K^T in float
// and Y = P V as cuBLASLt batched GEMMs (fp16/bf16 on tensor cores, float accumulation), between
// them the softmax kernel of attention.cu over S with the mask and is_causal (P in Q's type), S
// and P in the workspace.
#include <cstdint>

#include "kernels/cuda/attention/attention_variants.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_context.h"
#include "kernels/cuda/gemm/cublas_lt.h"

namespace onnxopt::kernels::cuda {

namespace {

constexpr size_t kAlign = 256;
constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;
constexpr int64_t kMaxScoreBytes = int64_t{1} << 30;

size_t alignUp(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

int64_t scoreCount(const AttentionDeviceArgs& d) {
  return d.batch * d.q_heads * d.q_seq * d.kv_seq;
}

}  // namespace

bool gemmAttentionApplies(const AttentionDeviceArgs& d) {
  return d.past_key == nullptr && d.present_key == nullptr && d.present_value == nullptr &&
         d.qk_output == nullptr && d.nonpad == nullptr && d.softcap == 0.0f &&
         d.q_heads == d.kv_heads && scoreCount(d) * 4 <= kMaxScoreBytes;
}

/// S (float), P (Q's type), then cuBLASLt's scratch.
size_t gemmAttentionWorkspace(const AttentionDeviceArgs& d) {
  auto n = static_cast<size_t>(scoreCount(d));
  return alignUp(n * sizeof(float)) + alignUp(n * static_cast<size_t>(dataTypeBits(d.dtype) / 8)) +
         kLtWorkspaceBytes;
}

namespace {

/// One cuBLASLt product D = alpha op(A) B, column-major, `batch` matrices each operand's stride
/// apart: op(A) is m x k (A stored k x m when transposed), B k x n, D m x n.
struct LtProduct {
  bool trans_a = false;
  int64_t m = 0, n = 0, k = 0;
  cudaDataType_t ab_type = CUDA_R_32F, d_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  const void* a = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* b = nullptr;
  int64_t ldb = 0, stride_b = 0;
  void* d = nullptr;
  int64_t ldd = 0, stride_d = 0;
  int32_t batch = 1;
  float alpha = 1.0f;
};

/// The largest power of two up to 256 dividing every address a product touches first (pointers,
/// leading dims and batch strides in bytes): what cuBLASLt may assume of its operands.
uint32_t alignmentOf(const void* p, int64_t ld, int64_t stride, int64_t bytes) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(ld * bytes) |
                  static_cast<uint64_t>(stride * bytes) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

Status runProduct(const LtProduct& g, void* scratch, const std::string& op, cublasLtHandle_t handle,
                  cudaStream_t stream) {
  cublasLtMatmulDesc_t raw_desc = nullptr;
  ONNXOPT_CUDA_CHECK(cublasLtMatmulDescCreate(&raw_desc, g.compute, CUDA_R_32F), op);
  LtDesc desc(raw_desc);
  cublasOperation_t ta = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmulDescSetAttribute(raw_desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), op);
  ASSIGN_OR_RETURN(LtLayout la, makeLayout(g.ab_type, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k,
                                           g.lda, g.batch, g.stride_a, op));
  ASSIGN_OR_RETURN(LtLayout lb, makeLayout(g.ab_type, g.k, g.n, g.ldb, g.batch, g.stride_b, op));
  ASSIGN_OR_RETURN(LtLayout ld, makeLayout(g.d_type, g.m, g.n, g.ldd, g.batch, g.stride_d, op));
  cublasLtMatmulPreference_t raw_pref = nullptr;
  ONNXOPT_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&raw_pref), op);
  LtPreference pref(raw_pref);
  size_t scratch_bytes = kLtWorkspaceBytes;
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &scratch_bytes, sizeof scratch_bytes),
      op);
  const int64_t ab_bytes = g.ab_type == CUDA_R_32F ? 4 : 2,
                d_bytes = g.d_type == CUDA_R_32F ? 4 : 2;
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignmentOf(g.a, g.lda, g.stride_a, ab_bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignmentOf(g.b, g.ldb, g.stride_b, ab_bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignmentOf(g.d, g.ldd, g.stride_d, d_bytes)},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignmentOf(g.d, g.ldd, g.stride_d, d_bytes)}};
  for (const auto& [attr, bytes] : alignments) {
    ONNXOPT_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(raw_pref, attr, &bytes, sizeof bytes),
                       op);
  }
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  ONNXOPT_CUDA_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, raw_desc, la.get(), lb.get(), ld.get(),
                                                    ld.get(), raw_pref, 1, &heuristic, &found),
                     op);
  if (found == 0) {
    return makeError(StatusCode::kUnimplemented,
                     "{}: cuBLASLt has no algorithm for a {} x {} x {} product", op, g.m, g.k, g.n);
  }
  const float beta = 0.0f;
  ONNXOPT_CUDA_CHECK(
      cublasLtMatmul(handle, raw_desc, &g.alpha, g.a, la.get(), g.b, lb.get(), &beta, g.d, ld.get(),
                     g.d, ld.get(), &heuristic.algo, scratch, scratch_bytes, stream),
      op);
  return Status::ok();
}

/// The tensor-core path: S = scale Q K^T, P = softmax(S + mask), Y = P V, per (batch, head) as
/// column-major products (S^T = K^T' Q^T', i.e. op(A) = K as stored [Sk, D] rows, B = Q rows;
/// Y^T = V^T P^T the same way). One batched call over every (batch, head) when each tensor's
/// batch stride is its head stride times the heads (4-D inputs), else one per batch.
}  // namespace

Status launchGemmAttention(const AttentionArgs& args, const AttentionDeviceArgs& d,
                           CudaDeviceContext& ctx) {
  const cudaStream_t stream = streamOf(ctx.stream());
  if (args.workspace == nullptr || args.workspace_bytes < gemmAttentionWorkspace(d)) {
    return invalidArgument("Attention: the workspace has {} bytes, {} needed", args.workspace_bytes,
                           gemmAttentionWorkspace(d));
  }
  ASSIGN_OR_RETURN(cublasLtHandle_t handle, ltHandle(ctx, args.op));
  auto n = static_cast<size_t>(scoreCount(d));
  const int64_t elem = dataTypeBits(d.dtype) / 8;
  auto* base = static_cast<char*>(args.workspace);
  auto* scores = reinterpret_cast<float*>(base);
  char* probs = base + alignUp(n * sizeof(float));
  char* scratch = probs + alignUp(n * static_cast<size_t>(elem));
  const int64_t heads = d.q_heads, sq = d.q_seq, sk = d.kv_seq;
  const int64_t s_head = sq * sk;
  auto foldable = [&](const HeadStrides& s) { return s.batch == heads * s.head; };
  bool one_call = foldable(d.q_strides) && foldable(d.k_strides) && foldable(d.v_strides) &&
                  foldable(d.y_strides) && d.batch * heads <= INT32_MAX;
  const int64_t calls = one_call ? 1 : d.batch;
  const auto batch = static_cast<int32_t>(one_call ? d.batch * heads : heads);
  cudaDataType_t type = cudaTypeOf(d.dtype);
  const cublasComputeType_t compute = ltComputeType(ctx, d.dtype);
  const auto* q = static_cast<const char*>(d.q);
  const auto* k = static_cast<const char*>(d.k);
  const auto* v = static_cast<const char*>(d.v);
  auto* y = static_cast<char*>(d.y);
  for (int64_t b = 0; b < calls; ++b) {
    LtProduct qk;
    qk.trans_a = true;
    qk.m = sk;
    qk.n = sq;
    qk.k = d.qk_size;
    qk.ab_type = type;
    qk.d_type = CUDA_R_32F;
    qk.compute = compute;
    qk.a = k + b * d.k_strides.batch * elem;
    qk.lda = d.k_strides.seq;
    qk.stride_a = d.k_strides.head;
    qk.b = q + b * d.q_strides.batch * elem;
    qk.ldb = d.q_strides.seq;
    qk.stride_b = d.q_strides.head;
    qk.d = scores + b * heads * s_head;
    qk.ldd = sk;
    qk.stride_d = s_head;
    qk.batch = batch;
    qk.alpha = d.scale;
    RETURN_IF_ERROR(runProduct(qk, scratch, args.op, handle, stream));
  }
  ONNXOPT_CUDA_CHECK(launchAttentionSoftmax(d, scores, probs, stream), args.op);
  for (int64_t b = 0; b < calls; ++b) {
    LtProduct pv;
    pv.m = d.v_size;
    pv.n = sq;
    pv.k = sk;
    pv.ab_type = type;
    pv.d_type = type;
    pv.compute = compute;
    pv.a = v + b * d.v_strides.batch * elem;
    pv.lda = d.v_strides.seq;
    pv.stride_a = d.v_strides.head;
    pv.b = probs + b * heads * s_head * elem;
    pv.ldb = sk;
    pv.stride_b = s_head;
    pv.d = y + b * d.y_strides.batch * elem;
    pv.ldd = d.y_strides.seq;
    pv.stride_d = d.y_strides.head;
    pv.batch = batch;
    RETURN_IF_ERROR(runProduct(pv, scratch, args.op, handle, stream));
  }
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
