// Host half of ScatterND and ScatterElements (scatter.h): the reduction, the shape and index
// checks, the data copy and the scatter launch.
#include "kernels/cuda/movement/scatter.h"

#include <fmt/format.h>

#include <cstdint>

#include "kernels/cuda/device.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

namespace {

StatusOr<ScatterReduction> readReduction(const CudaKernelCall& call) {
  if (call.op == "Scatter") return ScatterReduction::kNone;
  std::string r = attrsOf(call).getString("reduction", "none");
  if (r == "none") return ScatterReduction::kNone;
  if (call.opset >= 16 && r == "add") return ScatterReduction::kAdd;
  if (call.opset >= 16 && r == "mul") return ScatterReduction::kMul;
  if (call.opset >= 18 && r == "max") return ScatterReduction::kMax;
  if (call.opset >= 18 && r == "min") return ScatterReduction::kMin;
  return invalidArgument("{}: reduction '{}' is not defined at opset {}", call.op, r, call.opset);
}

/// The checks both scatters share: the updates' type and memory, the output is the data's shape,
/// the reduction exists for the type (and, for 1-byte types, the output owns its 4-byte words).
Support scatterSupport(const IndexingArgs& args, const ConstTensorView& updates,
                       ScatterReduction reduction) {
  if (Support s = indexingSupport(args, false, false); !s) return s;
  if (updates.dtype != args.data.dtype) {
    return Support::no(fmt::format("{}: the updates are {}, the data {}", args.op,
                                   dataTypeName(updates.dtype), dataTypeName(args.data.dtype)));
  }
  if (Support s = requireDevice(args.op, updates, "the updates"); !s) return s;
  if (args.out.dims != args.data.dims) {
    return Support::no(fmt::format("{}: the output is {}, the data {}", args.op,
                                   dimsText(args.out.dims), dimsText(args.data.dims)));
  }
  if (!scatterKernelExists(reduction, args.data.dtype)) {
    return Support::no(
        fmt::format("{}: no CUDA reduction for {}", args.op, dataTypeName(args.data.dtype)));
  }
  if (reduction != ScatterReduction::kNone && movableElementBytes(args.data.dtype) == 1 &&
      (reinterpret_cast<uintptr_t>(args.out.data) % 4 != 0 || args.out.numElements() % 4 != 0)) {
    return Support::no(fmt::format(
        "{}: a {} reduction needs an output of whole 4-byte words (4-aligned, a multiple of 4 "
        "elements)",
        args.op, dataTypeName(args.data.dtype)));
  }
  return copyViewSupport(args.op, args.data, args.out);
}

/// The output starts as the data (no copy when the node runs in place).
Status copyData(const IndexingArgs& args, CudaStream stream) {
  if (args.out.data == args.data.data && args.data.isContiguous()) return Status::ok();
  return copyView(args.op, args.data, args.out, stream);
}

std::vector<int64_t> scatterNDUpdateDims(const IndexingArgs& args, int64_t depth) {
  std::vector<int64_t> dims(args.indices.dims.begin(), args.indices.dims.end() - 1);
  dims.insert(dims.end(), args.data.dims.begin() + depth, args.data.dims.end());
  return dims;
}

}  // namespace

// --- ScatterND ------------------------------------------------------------------------------------

template <>
StatusOr<ScatterNDArgs> argsFromCall<ScatterNDArgs>(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(IndexingArgs base, parseIndexing(call, 3, false));
  ScatterNDArgs args{std::move(base), call.inputs[2], ScatterReduction::kNone};
  ASSIGN_OR_RETURN(args.reduction, readReduction(call));
  return args;
}

Support canImplement(const ScatterNDArgs& args) {
  if (Support s = scatterSupport(args, args.updates, args.reduction); !s) return s;
  StatusOr<IndexTuples> tuples =
      planIndexTuples(args.op, args.data, args.indices, 0, args.index_values);
  if (!tuples.isOk()) return Support::no(tuples.status().message());
  std::vector<int64_t> dims = scatterNDUpdateDims(args, tuples->depth);
  if (args.updates.dims != dims) {
    return Support::no(fmt::format("{}: the updates are {}; the indices and data need {}", args.op,
                                   dimsText(args.updates.dims), dimsText(dims)));
  }
  if (!args.updates.isContiguous()) {
    return Support::no(fmt::format("{}: the updates view is not contiguous", args.op));
  }
  return Support::yes();
}

size_t workspaceBytes(const ScatterNDArgs&) {
  return 0;
}

Status launch(const ScatterNDArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(IndexTuples tuples,
                   planIndexTuples(args.op, args.data, args.indices, 0, args.index_values));
  RETURN_IF_ERROR(copyData(args, stream));
  ScatterNDDeviceArgs d;
  d.dtype = args.data.dtype;
  d.reduction = args.reduction;
  d.tuples = tuples;
  d.slice = 1;
  for (size_t i = static_cast<size_t>(tuples.depth); i < args.data.dims.size(); ++i) {
    d.slice *= args.data.dims[i];
  }
  d.count = args.updates.numElements();
  d.index = args.indices.data;
  d.updates = args.updates.data;
  d.out = args.out.data;
  ONNXOPT_CUDA_CHECK(launchScatterND(d, streamOf(stream)), args.op);
  return Status::ok();
}

// --- ScatterElements ------------------------------------------------------------------------------

template <>
StatusOr<ScatterElementsArgs> argsFromCall<ScatterElementsArgs>(const CudaKernelCall& call) {
  ASSIGN_OR_RETURN(IndexingArgs base, parseIndexing(call, 3, true));
  ScatterElementsArgs args{std::move(base), call.inputs[2], ScatterReduction::kNone};
  ASSIGN_OR_RETURN(args.reduction, readReduction(call));
  if (args.indices.rank() != args.data.rank() || args.updates.dims != args.indices.dims) {
    return invalidArgument("{}: the indices and updates must have the data's rank and one shape",
                           call.op);
  }
  return args;
}

Support canImplement(const ScatterElementsArgs& args) {
  if (Support s = scatterSupport(args, args.updates, args.reduction); !s) return s;
  if (Support s = indexingSupport(args, false, true); !s) return s;
  for (size_t d = 0; d < args.data.dims.size(); ++d) {
    if (static_cast<int64_t>(d) != args.axis && args.indices.dims[d] > args.data.dims[d]) {
      return Support::no(fmt::format("{}: the indices {} exceed the data {} in dim {}", args.op,
                                     dimsText(args.indices.dims), dimsText(args.data.dims), d));
    }
  }
  return Support::yes();
}

size_t workspaceBytes(const ScatterElementsArgs&) {
  return 0;
}

Status launch(const ScatterElementsArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  RETURN_IF_ERROR(copyData(args, stream));
  ScatterElementsDeviceArgs d;
  d.dtype = args.data.dtype;
  d.reduction = args.reduction;
  d.int64_indices = args.indices.dtype == DataType::kInt64;
  d.rank = static_cast<int>(args.data.rank());
  d.axis = static_cast<int>(args.axis);
  d.axis_dim = args.data.dims[static_cast<size_t>(args.axis)];
  d.count = args.updates.numElements();
  for (int i = 0; i < d.rank; ++i) {
    auto u = static_cast<size_t>(i);
    d.dims[i] = args.indices.dims[u];
    d.index_strides[i] = args.indices.strides[u];
    d.update_strides[i] = args.updates.strides[u];
    d.out_strides[i] = args.out.strides[u];
  }
  d.index = args.indices.data;
  d.updates = args.updates.data;
  d.out = args.out.data;
  ONNXOPT_CUDA_CHECK(launchScatterElements(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
