// Host half of the fused Attention kernel (attention.h): the node's inputs and attributes, the
// geometry (heads, sequences, head sizes, element strides of each tensor as [B, H, S, D]) checked
// the way the reference kernel checks it, and the launch.
#include "attention.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "device.h"

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
  // [B, S, H * D]: head h of row s starts at s * H * D + h * D.
  h = {d[0], heads, d[1], d[2] / heads, {d[1] * d[2], d[2] / heads, d[2]}};
  return h;
}

/// The device arguments the node asks for (pointers copied, never dereferenced), or why the
/// kernel cannot run it.
StatusOr<AttentionDeviceArgs> geometryOf(const AttentionArgs& a) {
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
  ASSIGN_OR_RETURN(HeadView q, headView(a.q, a.q_num_heads, "Q"));
  ASSIGN_OR_RETURN(HeadView k, headView(a.k, a.kv_num_heads, "K"));
  ASSIGN_OR_RETURN(HeadView v, headView(a.v, a.kv_num_heads, "V"));
  if (rank == 4 && ((a.has_q_heads && a.q_num_heads != q.heads) ||
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

  AttentionDeviceArgs d{};
  d.dtype = t;
  d.batch = q.batch;
  d.q_heads = q.heads;
  d.kv_heads = k.heads;
  d.q_seq = q.seq;
  d.kv_seq = k.seq;
  d.qk_size = q.size;
  d.v_size = v.size;
  d.q = a.q.data;
  d.k = a.k.data;
  d.v = a.v.data;
  d.q_strides = q.strides;
  d.k_strides = k.strides;
  d.v_strides = v.strides;

  if (present(a.past_key) != present(a.past_value)) {
    return invalidArgument("Attention: past_key and past_value go together");
  }
  if (present(a.past_key)) {
    for (const ConstTensorView* p : {&a.past_key, &a.past_value}) {
      if (p->dtype != t || p->dims.size() != 4) {
        return invalidArgument("Attention: past_key/past_value must be 4-D of Q's type");
      }
    }
    const auto& pk = a.past_key.dims;
    const auto& pv = a.past_value.dims;
    if (pk != std::vector<int64_t>{q.batch, k.heads, pk[2], q.size} ||
        pv != std::vector<int64_t>{q.batch, k.heads, pk[2], v.size}) {
      return invalidArgument(
          "Attention: past_key {} and past_value {} do not match the keys/values", dimsText(pk),
          dimsText(pv));
    }
    d.past_seq = pk[2];
    d.past_key = a.past_key.data;
    d.past_value = a.past_value.data;
  }
  int64_t total = d.past_seq + d.kv_seq;

  if (present(a.nonpad)) {
    if (a.opset < 24) return invalidArgument("Attention: nonpad_kv_seqlen needs opset 24");
    if (present(a.past_key)) {
      return invalidArgument("Attention: nonpad_kv_seqlen cannot be combined with past_key");
    }
    if (a.nonpad.dtype != DataType::kInt64 || a.nonpad.dims != std::vector<int64_t>{q.batch}) {
      return invalidArgument("Attention: nonpad_kv_seqlen must be int64 of shape [{}]", q.batch);
    }
    if (a.nonpad_values != nullptr) {
      for (int64_t b = 0; b < q.batch; ++b) {
        int64_t n = a.nonpad_values->get<int64_t>(b);
        if (n < 0 || n > total) {
          return invalidArgument("Attention: nonpad_kv_seqlen {} is outside [0, {}]", n, total);
        }
      }
    }
    d.nonpad = static_cast<const int64_t*>(a.nonpad.data);
  }

  if (present(a.mask)) {
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
    const int64_t target[3] = {q.batch, q.heads, q.seq};
    int64_t strides[3] = {0, 0, 0};
    int64_t stride = d.mask_len;
    for (size_t i = md.size() - 1; i-- > 0;) {
      size_t slot = 3 - (md.size() - 1 - i);
      if (md[i] != 1 && md[i] != target[slot]) {
        return invalidArgument("Attention: attn_mask {} cannot be broadcast to [{}, {}, {}, {}]",
                               dimsText(md), q.batch, q.heads, q.seq, total);
      }
      strides[slot] = md[i] == 1 ? 0 : stride;
      stride *= md[i];
    }
    d.mask = a.mask.data;
    d.mask_dtype = a.mask.dtype;
    d.mask_strides = {strides[0], strides[1], strides[2]};
  }

  d.causal = a.causal;
  d.scale = a.has_scale ? a.scale : 1.0f / std::sqrt(static_cast<float>(q.size));
  d.softcap = a.softcap;

  // Outputs: Y as the inputs' layout, the present caches 4-D.
  std::vector<int64_t> y_dims = rank == 3 ? std::vector<int64_t>{q.batch, q.seq, q.heads * v.size}
                                          : std::vector<int64_t>{q.batch, q.heads, q.seq, v.size};
  if (a.y.dims != y_dims || a.y.dtype != t) {
    return invalidArgument("Attention: Y is {} {}; the op writes {} {}", dataTypeName(a.y.dtype),
                           dimsText(a.y.dims), dataTypeName(t), dimsText(y_dims));
  }
  d.y = a.y.data;
  d.y_strides = rank == 3 ? HeadStrides{q.seq * q.heads * v.size, v.size, q.heads * v.size}
                          : HeadStrides{q.heads * q.seq * v.size, q.seq * v.size, v.size};
  const std::pair<const TensorView*, int64_t> caches[] = {{&a.present_key, q.size},
                                                          {&a.present_value, v.size}};
  for (const auto& [view, size] : caches) {
    if (view->dtype == DataType::kUndefined) continue;
    std::vector<int64_t> want = {q.batch, k.heads, total, size};
    if (view->dims != want || view->dtype != t) {
      return invalidArgument("Attention: a present output is {} {}; the op writes {} {}",
                             dataTypeName(view->dtype), dimsText(view->dims), dataTypeName(t),
                             dimsText(want));
    }
  }
  if (present(a.qk_output)) {
    std::vector<int64_t> want = {q.batch, q.heads, q.seq, total};
    if (a.qk_output.dims != want || a.qk_output.dtype != t) {
      return invalidArgument("Attention: qk_matmul_output is {} {}; the op writes {} {}",
                             dataTypeName(a.qk_output.dtype), dimsText(a.qk_output.dims),
                             dataTypeName(t), dimsText(want));
    }
    d.qk_output = a.qk_output.data;
    d.qk_mode = static_cast<int>(a.qk_matmul_output_mode);
  }
  d.present_key = a.present_key.dtype != DataType::kUndefined ? a.present_key.data : nullptr;
  d.present_value = a.present_value.dtype != DataType::kUndefined ? a.present_value.data : nullptr;

  int64_t q_blocks = (q.seq + 15) / 16;
  if (q.batch * q.heads > std::numeric_limits<int32_t>::max() / q_blocks) {
    return makeError(StatusCode::kUnimplemented,
                     "Attention: {} x {} x {} query rows exceed the CUDA grid", q.batch, q.heads,
                     q.seq);
  }
  return d;
}

}  // namespace

template <>
StatusOr<AttentionArgs> argsFromCall<AttentionArgs>(const CudaKernelCall& call) {
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
    if (present(*view) && !view->isContiguous()) {
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
    if (present(*view) && !view->isContiguous()) {
      return Support::no(fmt::format("Attention: the CUDA kernel writes a contiguous {}", what));
    }
  }
  return Support::yes();
}

size_t workspaceBytes(const AttentionArgs&) {
  return 0;
}

Status launch(const AttentionArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(AttentionDeviceArgs d, geometryOf(args));
  ONNXOPT_CUDA_CHECK(launchAttention(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
