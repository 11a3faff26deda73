// Where on CUDA: out = cond ? x : y, three-way multidirectional broadcasting up to rank 8, for
// every element type of 1, 2, 4 or 8 bytes (it only moves elements). Host half (this header,
// where.cc); device half: where.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/elementwise/broadcast.h"
#include "kernels/cuda/elementwise/elementwise_device.h"

namespace onnxopt::kernels::cuda {

struct WhereArgs {
  std::string op = "Where";
  ConstTensorView cond;
  ConstTensorView x;
  ConstTensorView y;
  TensorView out;
};

template <>
StatusOr<WhereArgs> argsFromCall<WhereArgs>(const CudaKernelCall& call);

Support canImplement(const WhereArgs& args);
size_t workspaceBytes(const WhereArgs& args);
Status launch(const WhereArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
