// Tile (opsets 6+) on CUDA: the output seen as [r0, n0, r1, n1, ...] (repeat, then input dim) and
// filled by the strided copy (copy.h) from the input with stride 0 over each repeat. The output's
// dims (from shape inference) give the repeats; a constant repeats input is checked against them,
// a runtime one needs no host read. Every element type of 1, 2, 4 or 8 bytes; rank up to 8.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/copy.h"

namespace onnxopt::kernels::cuda {

struct TileArgs {
  std::string op = "Tile";
  ConstTensorView x;
  TensorView y;
  std::optional<std::vector<int64_t>> repeats;  ///< when the repeats input is a constant
};

template <>
StatusOr<TileArgs> argsFromCall<TileArgs>(const CudaKernelCall& call);

/// The copies launch runs (copy.h), or why the node is not one.
StatusOr<std::vector<CopyJob>> copyJobs(const TileArgs& args);

Support canImplement(const TileArgs& args);
size_t workspaceBytes(const TileArgs& args);
Status launch(const TileArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
