// Host half of the fused Attention kernel (attention.h): the node's inputs and attributes, the
// geometry (heads, sequences, head sizes, element strides of each tensor as [B, H, S, D]) checked
// the way the reference kernel checks it, and the launch.
#include "kernels/cuda/attention/attention.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "kernels/cuda/attention/attention_variants.h"
#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

bool present(const ConstTensorView& v) {
  return v.dtype != DataType::kUndefined;
}

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

/// One of Q, K, V as [batch, heads, seq, size] with its element strides.
struct HeadView {
  int64_t batch = 0, heads = 0, seq = 0, size = 0;
  HeadStrides strides;
};

StatusOr<HeadView> headView(const ConstTensorView& t, int64_t heads, const char* what) {
  HeadView h;
  const auto& d = t.dims;
  if (d.size() == 4) {
    h = {d[0], d[1], d[2], d[3], {d[1] * d[2] * d[3], d[2] * d[3], d[3]}};
    return h;
  }
  if (heads < 1 || d[2] % heads != 0) {
    return invalidArgument("Attention: {} hidden size {} is not a multiple of {} heads", what, d[2],
                           heads);
  }
  // [B, S, H * D]: head h of row s starts at s * row + h * D, row the view's row stride (H * D
  // when contiguous; 3 H D for a part of a packed QKV).
  const auto& st = t.strides;
  const bool strided = st.size() == 3 && st[2] == 1;
  h = {d[0],
       heads,
       d[1],
       d[2] / heads,
       {strided ? st[0] : d[1] * d[2], d[2] / heads, strided ? st[1] : d[2]}};
  return h;
}

/// Q, K and V of one float type and rank, non-empty, with the attributes 3-D inputs need.
Status checkOperands(const AttentionArgs& a) {
  DataType t = a.q.dtype;
  if (!isFloatType(t)) {
    return makeError(StatusCode::kUnimplemented, "Attention: no CUDA kernel for {}",
                     dataTypeName(t));
  }
  if (a.k.dtype != t || a.v.dtype != t) {
    return makeError(StatusCode::kUnimplemented,
                     "Attention: the CUDA kernel takes Q, K and V of one type, not {}, {}, {}",
                     dataTypeName(t), dataTypeName(a.k.dtype), dataTypeName(a.v.dtype));
  }
  size_t rank = a.q.dims.size();
  if ((rank != 3 && rank != 4) || a.k.dims.size() != rank || a.v.dims.size() != rank) {
    return invalidArgument("Attention: Q, K and V must all be 3-D or all 4-D");
  }
  if (a.q.numElements() == 0 || a.k.numElements() == 0 || a.v.numElements() == 0) {
    return makeError(StatusCode::kUnimplemented, "Attention: empty Q, K or V");
  }
  if (rank == 3 && (!a.has_q_heads || !a.has_kv_heads)) {
    return invalidArgument("Attention: 3-D inputs need q_num_heads and kv_num_heads");
  }
  if (a.softcap < 0) return invalidArgument("Attention: softcap must not be negative");
  if (a.qk_matmul_output_mode < 0 || a.qk_matmul_output_mode > 3) {
    return invalidArgument("Attention: qk_matmul_output_mode {}", a.qk_matmul_output_mode);
  }
  return Status::ok();
}

/// Q, K and V as [B, H, S, D], checked against each other and the kernel's head-size limit.
struct QkvViews {
  HeadView q, k, v;
};

StatusOr<QkvViews> qkvViews(const AttentionArgs& a) {
  ASSIGN_OR_RETURN(HeadView q, headView(a.q, a.q_num_heads, "Q"));
  ASSIGN_OR_RETURN(HeadView k, headView(a.k, a.kv_num_heads, "K"));
  ASSIGN_OR_RETURN(HeadView v, headView(a.v, a.kv_num_heads, "V"));
  if (a.q.dims.size() == 4 && ((a.has_q_heads && a.q_num_heads != q.heads) ||
                               (a.has_kv_heads && a.kv_num_heads != k.heads))) {
    return invalidArgument("Attention: q_num_heads/kv_num_heads contradict the input shapes");
  }
  if (k.batch != q.batch || v.batch != q.batch || k.heads != v.heads || k.seq != v.seq) {
    return invalidArgument("Attention: Q, K and V shapes do not match");
  }
  if (k.size != q.size) {
    return invalidArgument("Attention: Q head size {} differs from K head size {}", q.size, k.size);
  }
  if (q.heads % k.heads != 0) {
    return invalidArgument("Attention: {} query heads are not a multiple of {} key/value heads",
                           q.heads, k.heads);
  }
  if (q.size > kAttentionMaxHeadSize || v.size > kAttentionMaxHeadSize) {
    return makeError(StatusCode::kUnimplemented,
                     "Attention: head sizes {} (Q, K) and {} (V); the CUDA kernel takes at most {}",
                     q.size, v.size, kAttentionMaxHeadSize);
  }
  return QkvViews{q, k, v};
}

/// The device arguments Q, K, V and the attributes give (no caches, mask or outputs yet).
AttentionDeviceArgs qkvDeviceArgs(const AttentionArgs& a, const QkvViews& s) {
  AttentionDeviceArgs d{};
  d.dtype = a.q.dtype;
  d.batch = s.q.batch;
  d.q_heads = s.q.heads;
  d.kv_heads = s.k.heads;
  d.q_seq = s.q.seq;
  d.kv_seq = s.k.seq;
  d.qk_size = s.q.size;
  d.v_size = s.v.size;
  d.q = a.q.data;
  d.k = a.k.data;
  d.v = a.v.data;
  d.q_strides = s.q.strides;
  d.k_strides = s.k.strides;
  d.v_strides = s.v.strides;
  d.causal = a.causal;
  d.nan_guard = a.nan_guard;
  d.scale = a.has_scale ? a.scale : 1.0f / std::sqrt(static_cast<float>(s.q.size));
  d.softcap = a.softcap;
  return d;
}

/// past_key/past_value: 4-D [B, Hkv, P, D] of Q's type, together or not at all.
Status addPast(const AttentionArgs& a, const QkvViews& s, AttentionDeviceArgs& d) {
  if (present(a.past_key) != present(a.past_value)) {
    return invalidArgument("Attention: past_key and past_value go together");
  }
  if (!present(a.past_key)) return Status::ok();
  for (const ConstTensorView* p : {&a.past_key, &a.past_value}) {
    if (p->dtype != d.dtype || p->dims.size() != 4) {
      return invalidArgument("Attention: past_key/past_value must be 4-D of Q's type");
    }
  }
  const auto& pk = a.past_key.dims;
  const auto& pv = a.past_value.dims;
  if (pk != std::vector<int64_t>{s.q.batch, s.k.heads, pk[2], s.q.size} ||
      pv != std::vector<int64_t>{s.q.batch, s.k.heads, pk[2], s.v.size}) {
    return invalidArgument("Attention: past_key {} and past_value {} do not match the keys/values",
                           dimsText(pk), dimsText(pv));
  }
  d.past_seq = pk[2];
  d.past_key = a.past_key.data;
  d.past_value = a.past_value.data;
  return Status::ok();
}

/// nonpad_kv_seqlen (opset 24): int64 [B], each constant value within the keys.
Status addNonpad(const AttentionArgs& a, int64_t total, AttentionDeviceArgs& d) {
  if (!present(a.nonpad)) return Status::ok();
  if (a.opset < 24) return invalidArgument("Attention: nonpad_kv_seqlen needs opset 24");
  if (present(a.past_key)) {
    return invalidArgument("Attention: nonpad_kv_seqlen cannot be combined with past_key");
  }
  if (a.nonpad.dtype != DataType::kInt64 || a.nonpad.dims != std::vector<int64_t>{d.batch}) {
    return invalidArgument("Attention: nonpad_kv_seqlen must be int64 of shape [{}]", d.batch);
  }
  if (a.nonpad_values != nullptr) {
    for (int64_t b = 0; b < d.batch; ++b) {
      int64_t n = a.nonpad_values->get<int64_t>(b);
      if (n < 0 || n > total) {
        return invalidArgument("Attention: nonpad_kv_seqlen {} is outside [0, {}]", n, total);
      }
    }
  }
  d.nonpad = static_cast<const int64_t*>(a.nonpad.data);
  return Status::ok();
}

/// attn_mask: rank 2 to 4, bool or float, broadcast to [B, Hq, Sq, <= total].
Status addMask(const AttentionArgs& a, int64_t total, AttentionDeviceArgs& d) {
  if (!present(a.mask)) return Status::ok();
  const auto& md = a.mask.dims;
  if (md.size() < 2 || md.size() > 4) {
    return invalidArgument("Attention: attn_mask must have rank 2 to 4");
  }
  if (a.mask.dtype != DataType::kBool && !isFloatType(a.mask.dtype)) {
    return makeError(StatusCode::kUnimplemented, "Attention: no CUDA kernel for a {} attn_mask",
                     dataTypeName(a.mask.dtype));
  }
  d.mask_len = md.back();
  if (d.mask_len > total) {
    return invalidArgument("Attention: attn_mask has {} columns for {} keys", d.mask_len, total);
  }
  // The leading mask dims, right-aligned to [B, Hq, Sq], broadcast (size 1: stride 0).
  const int64_t target[3] = {d.batch, d.q_heads, d.q_seq};
  int64_t strides[3] = {0, 0, 0};
  int64_t stride = d.mask_len;
  for (size_t i = md.size() - 1; i-- > 0;) {
    size_t slot = 3 - (md.size() - 1 - i);
    if (md[i] != 1 && md[i] != target[slot]) {
      return invalidArgument("Attention: attn_mask {} cannot be broadcast to [{}, {}, {}, {}]",
                             dimsText(md), d.batch, d.q_heads, d.q_seq, total);
    }
    strides[slot] = md[i] == 1 ? 0 : stride;
    stride *= md[i];
  }
  d.mask = a.mask.data;
  d.mask_dtype = a.mask.dtype;
  d.mask_strides = {strides[0], strides[1], strides[2]};
  return Status::ok();
}

/// Y as the inputs' layout (3-D rows may be strided: SeqFirstPackedAttention's [S, B, E] seen as
/// [B, S, E]).
Status addY(const AttentionArgs& a, const QkvViews& s, AttentionDeviceArgs& d) {
  const HeadView& q = s.q;
  const int64_t v_size = s.v.size;
  const bool three_d = a.q.dims.size() == 3;
  std::vector<int64_t> y_dims = three_d ? std::vector<int64_t>{q.batch, q.seq, q.heads * v_size}
                                        : std::vector<int64_t>{q.batch, q.heads, q.seq, v_size};
  if (a.y.dims != y_dims || a.y.dtype != d.dtype) {
    return invalidArgument("Attention: Y is {} {}; the op writes {} {}", dataTypeName(a.y.dtype),
                           dimsText(a.y.dims), dataTypeName(d.dtype), dimsText(y_dims));
  }
  d.y = a.y.data;
  const bool y_rows = three_d && a.y.strides.size() == 3 && a.y.strides[2] == 1;
  d.y_strides = three_d ? HeadStrides{y_rows ? a.y.strides[0] : q.seq * q.heads * v_size, v_size,
                                      y_rows ? a.y.strides[1] : q.heads * v_size}
                        : HeadStrides{q.heads * q.seq * v_size, q.seq * v_size, v_size};
  return Status::ok();
}

/// present_key/present_value (4-D [B, Hkv, total, D]) and qk_matmul_output ([B, Hq, Sq, total]).
Status addCachesAndScores(const AttentionArgs& a, const QkvViews& s, int64_t total,
                          AttentionDeviceArgs& d) {
  const std::pair<const TensorView*, int64_t> caches[] = {{&a.present_key, s.q.size},
                                                          {&a.present_value, s.v.size}};
  for (const auto& [view, size] : caches) {
    if (view->dtype == DataType::kUndefined) continue;
    std::vector<int64_t> want = {s.q.batch, s.k.heads, total, size};
    if (view->dims != want || view->dtype != d.dtype) {
      return invalidArgument("Attention: a present output is {} {}; the op writes {} {}",
                             dataTypeName(view->dtype), dimsText(view->dims), dataTypeName(d.dtype),
                             dimsText(want));
    }
  }
  if (present(a.qk_output)) {
    std::vector<int64_t> want = {s.q.batch, s.q.heads, s.q.seq, total};
    if (a.qk_output.dims != want || a.qk_output.dtype != d.dtype) {
      return invalidArgument("Attention: qk_matmul_output is {} {}; the op writes {} {}",
                             dataTypeName(a.qk_output.dtype), dimsText(a.qk_output.dims),
                             dataTypeName(d.dtype), dimsText(want));
    }
    d.qk_output = a.qk_output.data;
    d.qk_mode = static_cast<int>(a.qk_matmul_output_mode);
  }
  d.present_key = a.present_key.dtype != DataType::kUndefined ? a.present_key.data : nullptr;
  d.present_value = a.present_value.dtype != DataType::kUndefined ? a.present_value.data : nullptr;
  return Status::ok();
}

/// The device arguments the node asks for (pointers copied, never dereferenced), or why the
/// kernel cannot run it: the steps above in the order the reference kernel checks.
StatusOr<AttentionDeviceArgs> geometryOf(const AttentionArgs& a) {
  RETURN_IF_ERROR(checkOperands(a));
  ASSIGN_OR_RETURN(QkvViews s, qkvViews(a));
  AttentionDeviceArgs d = qkvDeviceArgs(a, s);
  RETURN_IF_ERROR(addPast(a, s, d));
  const int64_t total = d.past_seq + d.kv_seq;
  RETURN_IF_ERROR(addNonpad(a, total, d));
  RETURN_IF_ERROR(addMask(a, total, d));
  RETURN_IF_ERROR(addY(a, s, d));
  RETURN_IF_ERROR(addCachesAndScores(a, s, total, d));
  int64_t q_blocks = (s.q.seq + 15) / 16;
  if (s.q.batch * s.q.heads > std::numeric_limits<int32_t>::max() / q_blocks) {
    return makeError(StatusCode::kUnimplemented,
                     "Attention: {} x {} x {} query rows exceed the CUDA grid", s.q.batch,
                     s.q.heads, s.q.seq);
  }
  return d;
}

}  // namespace

namespace {

/// ai.onnxopt.PackedAttention / SeqFirstPackedAttention as Attention on views of QKV's parts.
StatusOr<AttentionArgs> packedArgs(const CudaKernelCall& call) {
  // ai.onnxopt.PackedAttention(QKV): QKV [B, S, 3E], Y [B, S, E]; SeqFirstPackedAttention:
  // QKV [S, B, 3E], Y [S, B, E], read and written as [B, S, E] views (a batch 3E or E
  // elements on, rows B times that apart). Q, K and V are the three parts of QKV's rows.
  const bool seq_first = call.op == "SeqFirstPackedAttention";
  if (call.inputs.size() != 1 || call.outputs.size() != 1) {
    return invalidArgument("{}: takes QKV and has one output", call.op);
  }
  const ConstTensorView& qkv = call.inputs[0];
  const TensorView& y = call.outputs[0];
  if (qkv.dims.size() != 3 || qkv.dims[2] % 3 != 0 || !qkv.isContiguous()) {
    return invalidArgument("{}: QKV must be a contiguous 3-D [{}, 3E]", call.op,
                           seq_first ? "S, B" : "B, S");
  }
  const int64_t part = qkv.dims[2] / 3;
  if (y.dims != std::vector<int64_t>{qkv.dims[0], qkv.dims[1], part} || !y.isContiguous()) {
    return invalidArgument("{}: Y is {}, not a contiguous [{}, {}, {}]", call.op, dimsText(y.dims),
                           qkv.dims[0], qkv.dims[1], part);
  }
  const int64_t batch = seq_first ? qkv.dims[1] : qkv.dims[0];
  const int64_t seq = seq_first ? qkv.dims[0] : qkv.dims[1];
  // [B, S, E] strides of QKV's rows and of Y's.
  const std::vector<int64_t> rows = seq_first ? std::vector<int64_t>{3 * part, batch * 3 * part, 1}
                                              : std::vector<int64_t>{seq * 3 * part, 3 * part, 1};
  const std::vector<int64_t> y_rows = seq_first ? std::vector<int64_t>{part, batch * part, 1}
                                                : std::vector<int64_t>{seq * part, part, 1};
  const int64_t elem = dataTypeBits(qkv.dtype) / 8;
  CudaKernelCall unpacked = call;
  unpacked.op = "Attention";
  unpacked.inputs.clear();
  for (int64_t i = 0; i < 3; ++i) {
    unpacked.inputs.emplace_back(qkv.dtype, std::vector<int64_t>{batch, seq, part}, rows,
                                 static_cast<const char*>(qkv.data) + i * part * elem, qkv.memory);
  }
  unpacked.outputs = {TensorView(y.dtype, {batch, seq, part}, y_rows, y.data, y.memory)};
  unpacked.constant_inputs.clear();
  ASSIGN_OR_RETURN(AttentionArgs a, argsFromCall<AttentionArgs>(unpacked));
  const KernelAttrs& attrs = attrsOf(call);
  if (!attrs.has("num_heads") || !attrs.has("scale")) {
    return invalidArgument("{}: num_heads and scale are required", call.op);
  }
  a.op = call.op;
  a.has_q_heads = a.has_kv_heads = true;
  a.q_num_heads = a.kv_num_heads = attrs.getInt("num_heads", 0);
  a.has_scale = true;
  a.scale = attrs.getFloat("scale", 1.0f);
  return a;
}

/// ai.onnxopt.SafePackedAttention as SafeAttention on views of QKV's parts.
StatusOr<AttentionArgs> safePackedArgs(const CudaKernelCall& call) {
  // ai.onnxopt.SafePackedAttention(QKV, M): SafeAttention on the three parts of QKV's last dim,
  // each a view of rows 3 H D elements apart (docs/target_ops.md).
  if (call.inputs.size() != 2) {
    return invalidArgument("SafePackedAttention: takes QKV and M, not {} inputs",
                           call.inputs.size());
  }
  const ConstTensorView& qkv = call.inputs[0];
  if (qkv.dims.size() != 3 || qkv.dims[2] % 3 != 0 || qkv.strides.size() != 3 ||
      qkv.strides[2] != 1) {
    return invalidArgument(
        "SafePackedAttention: QKV must be 3-D with a contiguous last dim of 3 parts");
  }
  const int64_t part = qkv.dims[2] / 3, elem = dataTypeBits(qkv.dtype) / 8;
  CudaKernelCall unpacked = call;
  unpacked.op = "SafeAttention";
  unpacked.inputs.clear();
  for (int64_t i = 0; i < 3; ++i) {
    unpacked.inputs.emplace_back(qkv.dtype, std::vector<int64_t>{qkv.dims[0], qkv.dims[1], part},
                                 qkv.strides, static_cast<const char*>(qkv.data) + i * part * elem,
                                 qkv.memory);
  }
  unpacked.inputs.push_back(call.inputs[1]);
  unpacked.constant_inputs.clear();
  ASSIGN_OR_RETURN(AttentionArgs a, argsFromCall<AttentionArgs>(unpacked));
  a.op = call.op;
  return a;
}

/// ai.onnxopt.SafeAttention's contract and attributes over the Attention fields `a` holds.
Status applySafeAttention(const CudaKernelCall& call, const KernelAttrs& attrs, AttentionArgs& a) {
  // ai.onnxopt.SafeAttention<num_heads, scale>(Q, K, V, M): 3-D, a mask, one output, and the
  // NaN guard (docs/target_ops.md).
  if (call.inputs.size() != 4 || call.outputs.size() != 1 || !present(a.mask)) {
    return invalidArgument("SafeAttention: takes Q, K, V and M, and has one output");
  }
  if (a.q.dims.size() != 3 || a.k.dims.size() != 3) {
    return invalidArgument("SafeAttention: Q and K must be 3-D, not rank {} and {}",
                           a.q.dims.size(), a.k.dims.size());
  }
  if (a.mask.dims.empty() || a.mask.dims.back() != a.k.dims[1]) {
    return invalidArgument("SafeAttention: M's last dim must be the {} keys", a.k.dims[1]);
  }
  if (!attrs.has("num_heads") || !attrs.has("scale")) {
    return invalidArgument("SafeAttention: num_heads and scale are required");
  }
  a.has_q_heads = a.has_kv_heads = true;
  a.q_num_heads = a.kv_num_heads = attrs.getInt("num_heads", 0);
  a.causal = false;
  a.nan_guard = true;
  return Status::ok();
}

}  // namespace

template <>
StatusOr<AttentionArgs> argsFromCall<AttentionArgs>(const CudaKernelCall& call) {
  if (call.op == "SeqFirstPackedAttention" || call.op == "PackedAttention") {
    return packedArgs(call);
  }
  if (call.op == "SafePackedAttention") return safePackedArgs(call);
  if (call.inputs.size() < 3 || call.inputs.size() > 7) {
    return invalidArgument("Attention: {} inputs; the op takes 3 to 7", call.inputs.size());
  }
  if (call.outputs.empty() || call.outputs.size() > 4) {
    return invalidArgument("Attention: {} outputs; the op has 1 to 4", call.outputs.size());
  }
  for (size_t i = 0; i < 3; ++i) {
    if (call.inputs[i].dtype == DataType::kUndefined) {
      return invalidArgument("Attention: input {} is required", i);
    }
  }
  const KernelAttrs& attrs = attrsOf(call);
  AttentionArgs a;
  a.op = call.op;
  a.workspace = call.workspace;
  a.workspace_bytes = call.workspace_bytes;
  a.opset = call.opset;
  a.q = call.inputs[0];
  a.k = call.inputs[1];
  a.v = call.inputs[2];
  a.mask = inputOf(call, 3);
  a.past_key = inputOf(call, 4);
  a.past_value = inputOf(call, 5);
  a.nonpad = inputOf(call, 6);
  if (present(a.nonpad)) a.nonpad_values = constantInput(call, 6);
  a.y = call.outputs[0];
  if (call.outputs.size() > 1) a.present_key = call.outputs[1];
  if (call.outputs.size() > 2) a.present_value = call.outputs[2];
  if (call.outputs.size() > 3) a.qk_output = call.outputs[3];
  a.has_q_heads = attrs.has("q_num_heads");
  a.has_kv_heads = attrs.has("kv_num_heads");
  a.q_num_heads = attrs.getInt("q_num_heads", 0);
  a.kv_num_heads = attrs.getInt("kv_num_heads", 0);
  a.causal = attrs.getInt("is_causal", 0) != 0;
  a.has_scale = attrs.has("scale");
  a.scale = attrs.getFloat("scale", 1.0f);
  a.softcap = attrs.getFloat("softcap", 0.0f);
  a.qk_matmul_output_mode = attrs.getInt("qk_matmul_output_mode", 0);
  if (call.op == "SafeAttention") {
    RETURN_IF_ERROR(applySafeAttention(call, attrs, a));
  }
  return a;
}

Support canImplement(const AttentionArgs& args) {
  if (!attentionKernelExists(args.q.dtype, args.mask.dtype)) {
    return Support::no(fmt::format("Attention: no CUDA kernel for Q of {} and a mask of {}",
                                   dataTypeName(args.q.dtype), dataTypeName(args.mask.dtype)));
  }
  StatusOr<AttentionDeviceArgs> d = geometryOf(args);
  if (!d.isOk()) return Support::no(d.status().message());
  const std::pair<const ConstTensorView*, const char*> inputs[] = {
      {&args.q, "Q"},
      {&args.k, "K"},
      {&args.v, "V"},
      {&args.mask, "attn_mask"},
      {&args.past_key, "past_key"},
      {&args.past_value, "past_value"},
      {&args.nonpad, "nonpad_kv_seqlen"}};
  for (const auto& [view, what] : inputs) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
    // 3-D Q, K, V may have strided rows (the parts of a packed QKV); the rest is contiguous.
    const bool qkv = view == &args.q || view == &args.k || view == &args.v;
    const bool rows =
        qkv && view->dims.size() == 3 && view->strides.size() == 3 && view->strides[2] == 1;
    if (present(*view) && !view->isContiguous() && !rows) {
      return Support::no(fmt::format("Attention: the CUDA kernel reads a contiguous {}", what));
    }
  }
  const std::pair<const TensorView*, const char*> outputs[] = {
      {&args.y, "Y"},
      {&args.present_key, "present_key"},
      {&args.present_value, "present_value"},
      {&args.qk_output, "qk_matmul_output"}};
  for (const auto& [view, what] : outputs) {
    if (Support s = requireDevice(args.op, *view, what); !s) return s;
    const bool rows = view == &args.y && view->dims.size() == 3 && view->strides.size() == 3 &&
                      view->strides[2] == 1;
    if (present(*view) && !view->isContiguous() && !rows) {
      return Support::no(fmt::format("Attention: the CUDA kernel writes a contiguous {}", what));
    }
  }
  return Support::yes();
}

StatusOr<AttentionDeviceArgs> attentionDeviceArgs(const AttentionArgs& args) {
  return geometryOf(args);
}

size_t workspaceBytes(const AttentionArgs& args) {
  StatusOr<AttentionDeviceArgs> d = geometryOf(args);
  if (!d.isOk()) return 0;
  // The flash rows, the only ones the device decides between, need no workspace: no device query.
  StatusOr<const AttentionVariant*> v =
      chooseAttentionVariant(*d, AttentionDevice{}, attentionOverrideFromEnv());
  return v.isOk() ? (*v)->workspace(*d) : 0;
}

std::string variantName(const AttentionArgs& args, int sm_count) {
  StatusOr<AttentionDeviceArgs> d = geometryOf(args);
  if (!d.isOk()) return {};
  StatusOr<const AttentionVariant*> v =
      chooseAttentionVariant(*d, AttentionDevice{sm_count}, attentionOverrideFromEnv());
  return v.isOk() ? (*v)->name : std::string();
}

Status launch(const AttentionArgs& args, CudaDeviceContext& ctx) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(AttentionDeviceArgs d, geometryOf(args));
  ASSIGN_OR_RETURN(
      const AttentionVariant* v,
      chooseAttentionVariant(d, AttentionDevice{ctx.smCount()}, attentionOverrideFromEnv()));
  return v->launch(args, d, ctx);
}

}  // namespace onnxopt::kernels::cuda
