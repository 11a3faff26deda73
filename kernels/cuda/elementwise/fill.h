// The fills on CUDA: Range (11: float, int32, int64; 27: float16, bfloat16 too; start/limit/delta constant when planning,
// or device scalars read by the kernel, the output's length then planned by the executor) and
// ConstantOfShape (9, 20: the `value` attribute's one element, any type of 1, 2, 4 or 8 bytes;
// the shape input is not read: the output is already shaped). Host half (this header, fill.cc);
// device half: fill.cu.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/cuda/args.h"
#include "kernels/cuda/reduce/reduce_device.h"

namespace onnxopt::kernels::cuda {

struct RangeArgs {
  std::string op = "Range";
  ConstTensorView start;
  ConstTensorView limit;
  ConstTensorView delta;
  /// Inputs 0..2 as constants (nullptr: not known when planning).
  const HostTensor* start_value = nullptr;
  const HostTensor* limit_value = nullptr;
  const HostTensor* delta_value = nullptr;
  TensorView y;
};

template <>
StatusOr<RangeArgs> argsFromCall<RangeArgs>(const CudaKernelCall& call);

/// Host-only: types, scalars, device memory where the kernel reads, the output's length when the
/// inputs are constants.
Support canImplement(const RangeArgs& args);
size_t workspaceBytes(const RangeArgs& args);
Status launch(const RangeArgs& args, CudaStream stream);

struct ConstantOfShapeArgs {
  std::string op = "ConstantOfShape";
  HostTensor value;  ///< one element (float 0 when the attribute is absent)
  /// The shape input as a constant, when known when planning.
  std::optional<std::vector<int64_t>> shape;
  TensorView y;
};

/// kInvalidArgument for a `value` of more than one element.
template <>
StatusOr<ConstantOfShapeArgs> argsFromCall<ConstantOfShapeArgs>(const CudaKernelCall& call);

/// Host-only: the value's type against the output's, its size, the output's shape.
Support canImplement(const ConstantOfShapeArgs& args);
size_t workspaceBytes(const ConstantOfShapeArgs& args);
Status launch(const ConstantOfShapeArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
