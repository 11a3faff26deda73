// Host half of RotaryEmbedding (rotary.h): the node's inputs and attributes, the checks of the
// reference kernel (kernels/reference/attention_extra.cc), the launch.
#include "kernels/cuda/attention/rotary.h"

#include <fmt/format.h>

#include "kernels/cuda/attention/rotary_device.h"
#include "kernels/cuda/device.h"

namespace onnxopt::kernels::cuda {

namespace {

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

StatusOr<RotaryDeviceArgs> geometryOf(const RotaryArgs& a) {
  DataType t = a.x.dtype;
  if (!isFloatType(t)) {
    return makeError(StatusCode::kUnimplemented, "RotaryEmbedding: no CUDA kernel for {}",
                     dataTypeName(t));
  }
  if (a.cos.dtype != t || a.sin.dtype != t || a.y.dtype != t) {
    return makeError(StatusCode::kUnimplemented,
                     "RotaryEmbedding: the CUDA kernel takes X, the caches and Y of one type");
  }
  const auto& xd = a.x.dims;
  if (xd.size() != 3 && xd.size() != 4) {
    return invalidArgument("RotaryEmbedding: input must be 3-D or 4-D");
  }
  if (a.num_heads < 0) {
    return invalidArgument("RotaryEmbedding: num_heads {} is negative", a.num_heads);
  }
  RotaryDeviceArgs d{};
  d.dtype = t;
  d.four_d = xd.size() == 4;
  d.seq = xd[d.four_d ? 2 : 1];
  if (d.four_d) {
    d.heads = xd[1];
    d.head = xd[3];
    if (a.num_heads != 0 && a.num_heads != d.heads) {
      return invalidArgument("RotaryEmbedding: num_heads {} contradicts the input's {} heads",
                             a.num_heads, d.heads);
    }
  } else {
    if (a.num_heads == 0) return invalidArgument("RotaryEmbedding: 3-D input needs num_heads");
    if (xd[2] % a.num_heads != 0) {
      return invalidArgument("RotaryEmbedding: hidden size {} is not a multiple of {} heads", xd[2],
                             a.num_heads);
    }
    d.heads = a.num_heads;
    d.head = xd[2] / a.num_heads;
  }
  int64_t rot = a.rotary_dim == 0 ? d.head : a.rotary_dim;
  if (rot < 0 || rot > d.head || rot % 2 != 0) {
    return invalidArgument(
        "RotaryEmbedding: rotary_embedding_dim {} must be even and at most the head size {}", rot,
        d.head);
  }
  d.half = rot / 2;
  if (a.cos.dims != a.sin.dims) {
    return invalidArgument("RotaryEmbedding: cos_cache and sin_cache shapes differ");
  }
  int64_t batch = xd[0];
  if (a.positions.dtype != DataType::kUndefined) {
    if (a.cos.dims.size() != 2 || a.cos.dims[1] != d.half) {
      return invalidArgument("RotaryEmbedding: with position_ids the caches must be [max_pos, {}]",
                             d.half);
    }
    if (a.positions.dtype != DataType::kInt64 ||
        a.positions.dims != std::vector<int64_t>{batch, d.seq}) {
      return invalidArgument("RotaryEmbedding: position_ids must be int64 of shape [{}, {}]", batch,
                             d.seq);
    }
    d.cache_rows = a.cos.dims[0];
    if (a.position_values != nullptr) {
      for (int64_t i = 0; i < a.position_values->numElements(); ++i) {
        int64_t p = a.position_values->get<int64_t>(i);
        if (p < 0 || p >= d.cache_rows) {
          return invalidArgument("RotaryEmbedding: position id {} is outside the cache of {} rows",
                                 p, d.cache_rows);
        }
      }
    }
    d.positions = static_cast<const int64_t*>(a.positions.data);
  } else if (a.cos.dims != std::vector<int64_t>{batch, d.seq, d.half}) {
    return invalidArgument("RotaryEmbedding: without position_ids the caches must be [{}, {}, {}]",
                           batch, d.seq, d.half);
  }
  if (a.y.dims != xd) {
    return invalidArgument("RotaryEmbedding: the output must have the input's shape");
  }
  d.count = a.x.numElements();
  d.interleaved = a.interleaved;
  d.x = a.x.data;
  d.cos = a.cos.data;
  d.sin = a.sin.data;
  d.y = a.y.data;
  return d;
}

}  // namespace

template <>
StatusOr<RotaryArgs> argsFromCall<RotaryArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 3, 4, 1));
  const KernelAttrs& attrs = attrsOf(call);
  RotaryArgs a;
  a.op = call.op;
  a.x = call.inputs[0];
  a.cos = call.inputs[1];
  a.sin = call.inputs[2];
  a.positions = inputOf(call, 3);
  if (a.positions.dtype != DataType::kUndefined) a.position_values = constantInput(call, 3);
  a.y = call.outputs[0];
  a.interleaved = attrs.getInt("interleaved", 0) != 0;
  a.num_heads = attrs.getInt("num_heads", 0);
  a.rotary_dim = attrs.getInt("rotary_embedding_dim", 0);
  return a;
}

Support canImplement(const RotaryArgs& args) {
  StatusOr<RotaryDeviceArgs> d = geometryOf(args);
  if (!d.isOk()) return Support::no(d.status().message());
  const std::pair<const ConstTensorView*, const char*> views[] = {
      {&args.x, "X"},
      {&args.cos, "cos_cache"},
      {&args.sin, "sin_cache"},
      {&args.positions, "position_ids"}};
  for (const auto& [view, what] : views) {
    if (Support s = requireDenseDevice(args.op, *view, what); !s) return s;
  }
  return requireDenseDevice(args.op, args.y, "Y", /*output=*/true);
}

size_t workspaceBytes(const RotaryArgs&) {
  return 0;
}

Status launch(const RotaryArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(RotaryDeviceArgs d, geometryOf(args));
  ONNXOPT_CUDA_CHECK(launchRotary(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
