// Gather (opsets 1+), GatherElements (11+) and GatherND (11+, batch_dims from 12) on CUDA:
// int32 or int64 indices, negative ones counting from the end, every data element type of 1, 2,
// 4 or 8 bytes. Constant indices (known when planning) are checked here: one out of range refuses
// the node, which then runs on the CPU, whose reference kernel reports it. Indices read on the
// device that are out of range give zero elements (indexing_device.h). Host half (this header,
// gather.cc); device half: gather.cu.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/indexing_device.h"

namespace onnxopt::kernels::cuda {

/// What every indexing op's arguments hold (Gather, GatherElements, GatherND, the Scatters).
struct IndexingArgs {
  std::string op;
  ConstTensorView data;
  ConstTensorView indices;
  TensorView out;
  int64_t axis = 0;                                  ///< normalized (GatherND: batch_dims)
  std::optional<std::vector<int64_t>> index_values;  ///< when the indices are a constant
};

struct GatherArgs : IndexingArgs {};
/// ReverseSequence (opset 10+): data is the input, indices the int64 sequence_lens (constant ones
/// are checked here; runtime ones outside [0, steps] copy their sequence unreversed).
struct ReverseSequenceArgs : IndexingArgs {
  bool batch_first = false;
};
/// OneHot (opset 9+; int32/int64 indices): the depth is the output's dim at `axis` (a constant
/// depth input is checked against it); values stay on the device.
struct OneHotArgs : IndexingArgs {
  ConstTensorView values;
  std::optional<int64_t> depth;  ///< the depth input when it is a constant
};
struct GatherElementsArgs : IndexingArgs {};
struct GatherNDArgs : IndexingArgs {};

template <>
StatusOr<GatherArgs> argsFromCall<GatherArgs>(const CudaKernelCall& call);
template <>
StatusOr<GatherElementsArgs> argsFromCall<GatherElementsArgs>(const CudaKernelCall& call);
template <>
StatusOr<GatherNDArgs> argsFromCall<GatherNDArgs>(const CudaKernelCall& call);
template <>
StatusOr<OneHotArgs> argsFromCall<OneHotArgs>(const CudaKernelCall& call);
template <>
StatusOr<ReverseSequenceArgs> argsFromCall<ReverseSequenceArgs>(const CudaKernelCall& call);
Support canImplement(const ReverseSequenceArgs& args);
size_t workspaceBytes(const ReverseSequenceArgs& args);
Status launch(const ReverseSequenceArgs& args, CudaStream stream);
Support canImplement(const OneHotArgs& args);
size_t workspaceBytes(const OneHotArgs& args);
Status launch(const OneHotArgs& args, CudaStream stream);

Support canImplement(const GatherArgs& args);
Support canImplement(const GatherElementsArgs& args);
Support canImplement(const GatherNDArgs& args);
size_t workspaceBytes(const GatherArgs& args);
size_t workspaceBytes(const GatherElementsArgs& args);
size_t workspaceBytes(const GatherNDArgs& args);
Status launch(const GatherArgs& args, CudaStream stream);
Status launch(const GatherElementsArgs& args, CudaStream stream);
Status launch(const GatherNDArgs& args, CudaStream stream);

/// What the indexing families share (gather.cc). parseIndexing: data (input 0, rank >= 1),
/// indices (input 1), output 0, the `axis` attribute (when `axis_attr`) normalized, the indices'
/// values when they are a constant; `inputs` inputs.
StatusOr<IndexingArgs> parseIndexing(const CudaKernelCall& call, size_t inputs, bool axis_attr);
/// The data and output movable, in device memory and (`contiguous_data`) contiguous; the indices
/// int32 or int64, in device memory, contiguous; constant indices within the axis dim.
Support indexingSupport(const IndexingArgs& args, bool contiguous_data, bool check_axis_range);
Support indexInRange(const std::string& op, int64_t index, int64_t dim);

/// The k-deep index tuples of GatherND/ScatterND over `data` (contiguous), after `batch_dims`
/// batch dims of `indices` (its last dim is k), with constant `values` checked.
StatusOr<IndexTuples> planIndexTuples(const std::string& op, const ConstTensorView& data,
                                      const ConstTensorView& indices, int64_t batch_dims,
                                      const std::optional<std::vector<int64_t>>& values);

}  // namespace onnxopt::kernels::cuda
