// Host half of Gather, GatherElements and GatherND (gather.h): attributes, shape and index
// checks, the device arguments.
#include "kernels/cuda/movement/gather.h"

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/device.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

namespace {

bool isIndexType(DataType t) {
  return t == DataType::kInt32 || t == DataType::kInt64;
}

Support requireContiguous(const std::string& op, const ConstTensorView& v, const char* what) {
  if (v.isContiguous()) return Support::yes();
  return Support::no(fmt::format("{}: the {} view is not contiguous", op, what));
}

Support outputIs(const std::string& op, const TensorView& out, const std::vector<int64_t>& dims) {
  if (out.dims == dims) return Support::yes();
  return Support::no(fmt::format("{}: the output is {}; the gather is {}", op, dimsText(out.dims),
                                 dimsText(dims)));
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= dims[i];
  return n;
}

}  // namespace

StatusOr<IndexingArgs> parseIndexing(const CudaKernelCall& call, size_t inputs, bool axis_attr) {
  RETURN_IF_ERROR(checkArity(call, inputs, inputs, 1));
  IndexingArgs args{call.op, call.inputs[0], call.inputs[1], call.outputs[0], 0, std::nullopt};
  if (args.data.rank() == 0) return invalidArgument("{}: the data must have rank >= 1", call.op);
  if (axis_attr) {
    ASSIGN_OR_RETURN(args.axis,
                     normalizedAxis(call.op, attrsOf(call).getInt("axis", 0), args.data.rank()));
  }
  if (constantInput(call, 1) != nullptr) {
    ASSIGN_OR_RETURN(args.index_values, constantInts(call, 1, "indices"));
  }
  return args;
}

Support indexingSupport(const IndexingArgs& args, bool contiguous_data, bool check_axis_range) {
  if (Support s = movableSupport(args.op, args.data, args.out); !s) return s;
  if (!isIndexType(args.indices.dtype)) {
    return Support::no(fmt::format("{}: the indices are {}, not int32 or int64", args.op,
                                   dataTypeName(args.indices.dtype)));
  }
  if (Support s = requireDevice(args.op, args.indices, "the indices"); !s) return s;
  if (Support s = requireContiguous(args.op, args.indices, "indices"); !s) return s;
  if (contiguous_data) {
    if (Support s = requireContiguous(args.op, args.data, "data"); !s) return s;
  }
  if (Support s = requireContiguous(args.op, args.out, "output"); !s) return s;
  if (check_axis_range && args.index_values.has_value()) {
    int64_t dim = args.data.dims[static_cast<size_t>(args.axis)];
    for (int64_t i : *args.index_values) {
      if (Support s = indexInRange(args.op, i, dim); !s) return s;
    }
  }
  return Support::yes();
}

Support indexInRange(const std::string& op, int64_t index, int64_t dim) {
  if (index >= -dim && index < dim) return Support::yes();
  return Support::no(fmt::format(
      "{}: index {} is out of range [-{}, {}) (the CPU kernel reports it)", op, index, dim, dim));
}

StatusOr<IndexTuples> planIndexTuples(const std::string& op, const ConstTensorView& data,
                                      const ConstTensorView& indices, int64_t batch_dims,
                                      const std::optional<std::vector<int64_t>>& values) {
  int64_t r = data.rank(), q = indices.rank();
  if (q < 1) return invalidArgument("{}: the indices must have rank >= 1", op);
  int64_t k = indices.dims.back();
  if (k < 1 || k > r - batch_dims) {
    return invalidArgument("{}: index depth {} is out of range for data of rank {}", op, k, r);
  }
  IndexTuples t;
  t.int64_indices = indices.dtype == DataType::kInt64;
  t.depth = static_cast<int>(k);
  auto b = static_cast<size_t>(batch_dims);
  t.per_batch = product(indices.dims, b, static_cast<size_t>(q - 1));
  t.batch_stride = product(data.dims, b, static_cast<size_t>(r));
  std::vector<int64_t> strides = contiguousStrides(data.dims);
  for (int64_t d = 0; d < k; ++d) {
    t.dims[d] = data.dims[b + static_cast<size_t>(d)];
    t.strides[d] = strides[b + static_cast<size_t>(d)];
  }
  if (values.has_value()) {
    for (size_t i = 0; i < values->size(); ++i) {
      Support s = indexInRange(op, (*values)[i], t.dims[i % static_cast<size_t>(k)]);
      if (!s) return Status(StatusCode::kUnimplemented, s.reason);
    }
  }
  return t;
}

// --- Gather ---------------------------------------------------------------------------------------

template <>
StatusOr<GatherArgs> argsFromCall<GatherArgs>(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(IndexingArgs args, parseIndexing(call, 2, true));
  return GatherArgs{std::move(args)};
}

Support canImplement(const GatherArgs& args) {
  if (Support s = indexingSupport(args, true, true); !s) return s;
  std::vector<int64_t> dims(args.data.dims.begin(), args.data.dims.begin() + args.axis);
  dims.insert(dims.end(), args.indices.dims.begin(), args.indices.dims.end());
  dims.insert(dims.end(), args.data.dims.begin() + args.axis + 1, args.data.dims.end());
  return outputIs(args.op, args.out, dims);
}

size_t workspaceBytes(const GatherArgs&) {
  return 0;
}

namespace {

/// The widest word (16, 8 or 4 bytes; at least the element) that a run of `elements` elements
/// of `element_bytes` divides into, where every pointer is aligned to it: Gather and GatherND
/// move their slices in it (an embedding row of 768 fp16 elements: 96 words of 16 bytes, one
/// index read and one division per word instead of per element).
int sliceWordBytes(int element_bytes, int64_t elements, std::initializer_list<const void*> ptrs) {
  for (int word : {16, 8, 4}) {
    if (word <= element_bytes) break;
    if ((elements * element_bytes) % word != 0) continue;
    bool aligned = true;
    for (const void* p : ptrs) aligned = aligned && reinterpret_cast<uintptr_t>(p) % word == 0;
    if (aligned) return word;
  }
  return element_bytes;
}

}  // namespace

Status launch(const GatherArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  auto axis = static_cast<size_t>(args.axis);
  // One constant index (a scalar or [1]: ViT's q/k/v selects) is a slice: a strided copy, moved
  // 16 bytes at a time or by cudaMemcpyAsync, instead of the per-element gather.
  if (args.index_values && args.index_values->size() == 1) {
    const int64_t dim = args.data.dims[axis];
    int64_t i = (*args.index_values)[0];
    if (i < 0) i += dim;
    if (i >= 0 && i < dim) {
      ConstTensorView src = narrowed(args.data, args.axis, i, 1);
      TensorView dst(args.out.dtype, src.dims, contiguousStrides(src.dims), args.out.data,
                     args.out.memory);
      return copyView(args.op, src, dst, stream);
    }
  }
  GatherDeviceArgs d;
  d.element_bytes = movableElementBytes(args.data.dtype);
  d.int64_indices = args.indices.dtype == DataType::kInt64;
  d.outer = product(args.data.dims, 0, axis);
  d.axis_dim = args.data.dims[axis];
  d.inner = product(args.data.dims, axis + 1, args.data.dims.size());
  d.indices = args.indices.numElements();
  d.data = args.data.data;
  d.index = args.indices.data;
  d.out = args.out.data;
  const int word = sliceWordBytes(d.element_bytes, d.inner, {d.data, d.out});
  d.inner = d.inner * d.element_bytes / word;
  d.element_bytes = word;
  ONNXOPT_CUDA_CHECK(launchGather(d, streamOf(stream)), args.op);
  return Status::ok();
}

// --- GatherElements -------------------------------------------------------------------------------

template <>
StatusOr<GatherElementsArgs> argsFromCall<GatherElementsArgs>(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(IndexingArgs args, parseIndexing(call, 2, true));
  if (args.indices.rank() != args.data.rank()) {
    return invalidArgument("{}: the indices have rank {}, the data {}", call.op,
                           args.indices.rank(), args.data.rank());
  }
  return GatherElementsArgs{std::move(args)};
}

Support canImplement(const GatherElementsArgs& args) {
  if (Support s = indexingSupport(args, false, true); !s) return s;
  if (Support s = outputIs(args.op, args.out, args.indices.dims); !s) return s;
  auto axis = static_cast<size_t>(args.axis);
  for (size_t d = 0; d < args.data.dims.size(); ++d) {
    if (d != axis && args.indices.dims[d] > args.data.dims[d]) {
      return Support::no(fmt::format("{}: the indices {} exceed the data {} in dim {}", args.op,
                                     dimsText(args.indices.dims), dimsText(args.data.dims), d));
    }
  }
  return Support::yes();
}

size_t workspaceBytes(const GatherElementsArgs&) {
  return 0;
}

Status launch(const GatherElementsArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  GatherElementsDeviceArgs d;
  d.element_bytes = movableElementBytes(args.data.dtype);
  d.int64_indices = args.indices.dtype == DataType::kInt64;
  d.rank = static_cast<int>(args.data.rank());
  d.axis = static_cast<int>(args.axis);
  d.axis_dim = args.data.dims[static_cast<size_t>(args.axis)];
  d.count = args.out.numElements();
  for (int i = 0; i < d.rank; ++i) {
    auto u = static_cast<size_t>(i);
    d.dims[i] = args.indices.dims[u];
    d.data_strides[i] = args.data.strides[u];
    d.index_strides[i] = args.indices.strides[u];
  }
  d.data = args.data.data;
  d.index = args.indices.data;
  d.out = args.out.data;
  ONNXOPT_CUDA_CHECK(launchGatherElements(d, streamOf(stream)), args.op);
  return Status::ok();
}

// --- GatherND -------------------------------------------------------------------------------------

template <>
StatusOr<GatherNDArgs> argsFromCall<GatherNDArgs>(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(IndexingArgs args, parseIndexing(call, 2, false));
  args.axis = call.opset >= 12 ? attrsOf(call).getInt("batch_dims", 0) : 0;
  int64_t r = args.data.rank(), q = args.indices.rank();
  if (q < 1) return invalidArgument("{}: the indices must have rank >= 1", call.op);
  if (args.axis < 0 || args.axis >= std::min(r, q)) {
    return invalidArgument("{}: batch_dims {} is out of range", call.op, args.axis);
  }
  return GatherNDArgs{std::move(args)};
}

Support canImplement(const GatherNDArgs& args) {
  if (Support s = indexingSupport(args, true, false); !s) return s;
  auto b = static_cast<size_t>(args.axis);
  for (size_t d = 0; d < b; ++d) {
    if (args.data.dims[d] != args.indices.dims[d]) {
      return Support::no(fmt::format("{}: the batch dims of the data {} and the indices {} differ",
                                     args.op, dimsText(args.data.dims),
                                     dimsText(args.indices.dims)));
    }
  }
  StatusOr<IndexTuples> tuples =
      planIndexTuples(args.op, args.data, args.indices, args.axis, args.index_values);
  if (!tuples.isOk()) return Support::no(tuples.status().message());
  std::vector<int64_t> dims(args.indices.dims.begin(), args.indices.dims.end() - 1);
  dims.insert(dims.end(), args.data.dims.begin() + args.axis + tuples->depth, args.data.dims.end());
  return outputIs(args.op, args.out, dims);
}

size_t workspaceBytes(const GatherNDArgs&) {
  return 0;
}

Status launch(const GatherNDArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(IndexTuples tuples,
                   planIndexTuples(args.op, args.data, args.indices, args.axis, args.index_values));
  GatherNDDeviceArgs d;
  d.element_bytes = movableElementBytes(args.data.dtype);
  d.tuples = tuples;
  d.slice =
      product(args.data.dims, static_cast<size_t>(args.axis + tuples.depth), args.data.dims.size());
  d.count = args.out.numElements();
  d.data = args.data.data;
  d.index = args.indices.data;
  d.out = args.out.data;
  // A tuple's offset is a multiple of the slice (the trailing dims it spans), so of the word.
  const int word = sliceWordBytes(d.element_bytes, d.slice, {d.data, d.out});
  d.word_ratio = word / d.element_bytes;
  d.slice /= d.word_ratio;
  d.count /= d.word_ratio;
  d.element_bytes = word;
  ONNXOPT_CUDA_CHECK(launchGatherND(d, streamOf(stream)), args.op);
  return Status::ok();
}

// --- ReverseSequence ------------------------------------------------------------------------------

template <>
StatusOr<ReverseSequenceArgs> argsFromCall<ReverseSequenceArgs>(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(IndexingArgs base, parseIndexing(call, 2, false));
  ReverseSequenceArgs args{std::move(base), false};
  const KernelAttrs& attrs = attrsOf(call);
  int64_t batch_axis = attrs.getInt("batch_axis", 1), time_axis = attrs.getInt("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0))) {
    return invalidArgument("{}: batch_axis and time_axis must be 0 and 1", call.op);
  }
  if (args.data.rank() < 2) return invalidArgument("{}: the input must have rank >= 2", call.op);
  args.batch_first = batch_axis == 0;
  return args;
}

Support canImplement(const ReverseSequenceArgs& args) {
  if (Support s = indexingSupport(args, true, false); !s) return s;
  if (args.indices.dtype != DataType::kInt64) {
    return Support::no(fmt::format("{}: sequence_lens must be int64", args.op));
  }
  if (args.out.dims != args.data.dims) {
    return Support::no(fmt::format("{}: the output is {}, the input {}", args.op,
                                   dimsText(args.out.dims), dimsText(args.data.dims)));
  }
  int64_t batch = args.data.dims[args.batch_first ? 0 : 1];
  int64_t steps = args.data.dims[args.batch_first ? 1 : 0];
  if (args.indices.dims != std::vector<int64_t>{batch}) {
    return Support::no(fmt::format("{}: sequence_lens must have shape [{}], not {}", args.op, batch,
                                   dimsText(args.indices.dims)));
  }
  if (args.index_values.has_value()) {
    for (int64_t l : *args.index_values) {
      if (l < 0 || l > steps) {
        return Support::no(
            fmt::format("{}: sequence length {} is out of range [0, {}] (the CPU "
                        "kernel reports it)",
                        args.op, l, steps));
      }
    }
  }
  return Support::yes();
}

size_t workspaceBytes(const ReverseSequenceArgs&) {
  return 0;
}

Status launch(const ReverseSequenceArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ReverseSequenceDeviceArgs d;
  d.element_bytes = movableElementBytes(args.data.dtype);
  d.batch_first = args.batch_first;
  d.d0 = args.data.dims[0];
  d.d1 = args.data.dims[1];
  d.inner = product(args.data.dims, 2, args.data.dims.size());
  d.lens = static_cast<const int64_t*>(args.indices.data);
  d.in = args.data.data;
  d.out = args.out.data;
  ONNXOPT_CUDA_CHECK(launchReverseSequence(d, streamOf(stream)), args.op);
  return Status::ok();
}

// --- OneHot ---------------------------------------------------------------------------------------

template <>
StatusOr<OneHotArgs> argsFromCall<OneHotArgs>(const CudaKernelCall& call) {
  RETURN_IF_ERROR(checkArity(call, 3, 3, 1));
  OneHotArgs args;
  args.op = call.op;
  // IndexingArgs' data is the values here (they give the output's type); indices are input 0.
  args.indices = call.inputs[0];
  args.values = call.inputs[2];
  args.data = call.inputs[2];
  args.out = call.outputs[0];
  int64_t rank = args.indices.rank() + 1;
  ASSIGN_OR_RETURN(args.axis, normalizedAxis(call.op, attrsOf(call).getInt("axis", -1), rank));
  if (constantInput(call, 1) != nullptr) {
    const HostTensor* t = constantInput(call, 1);
    if (t->dtype == DataType::kInt32 || t->dtype == DataType::kInt64) {
      ASSIGN_OR_RETURN(std::vector<int64_t> depth, constantInts(call, 1, "depth"));
      if (depth.size() != 1) return invalidArgument("{}: depth must be a scalar", call.op);
      args.depth = depth[0];
    }
  }
  return args;
}

Support canImplement(const OneHotArgs& args) {
  if (Support s = movableSupport(args.op, args.values, args.out); !s) return s;
  if (args.values.numElements() != 2) {
    return Support::no(fmt::format("{}: values must have 2 elements", args.op));
  }
  if (!isIndexType(args.indices.dtype)) {
    return Support::no(fmt::format("{}: the indices are {}; the CUDA kernel takes int32 or int64",
                                   args.op, dataTypeName(args.indices.dtype)));
  }
  if (Support s = requireDevice(args.op, args.indices, "the indices"); !s) return s;
  if (Support s = requireContiguous(args.op, args.indices, "indices"); !s) return s;
  if (Support s = requireContiguous(args.op, args.values, "values"); !s) return s;
  if (Support s = requireContiguous(args.op, args.out, "output"); !s) return s;
  std::vector<int64_t> dims = args.indices.dims;
  int64_t depth = args.out.rank() == args.indices.rank() + 1
                      ? args.out.dims[static_cast<size_t>(args.axis)]
                      : -1;
  if (args.depth.has_value() && *args.depth != depth) {
    return Support::no(fmt::format("{}: depth is {} but the output has {} along axis {}", args.op,
                                   *args.depth, depth, args.axis));
  }
  if (depth < 1) return Support::no(fmt::format("{}: depth must be positive", args.op));
  dims.insert(dims.begin() + args.axis, depth);
  return outputIs(args.op, args.out, dims);
}

size_t workspaceBytes(const OneHotArgs&) {
  return 0;
}

Status launch(const OneHotArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  auto axis = static_cast<size_t>(args.axis);
  OneHotDeviceArgs d;
  d.element_bytes = movableElementBytes(args.values.dtype);
  d.int64_indices = args.indices.dtype == DataType::kInt64;
  d.outer = product(args.indices.dims, 0, axis);
  d.depth = args.out.dims[axis];
  d.inner = product(args.indices.dims, axis, args.indices.dims.size());
  d.index = args.indices.data;
  d.values = args.values.data;
  d.out = args.out.data;
  ONNXOPT_CUDA_CHECK(launchOneHot(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
