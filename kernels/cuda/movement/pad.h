// Pad on CUDA: opsets 2-10 (pads, value and mode attributes) and 11+ (pads input, optional
// constant_value input, axes input from 18, wrap mode from 19), modes constant, reflect, edge and
// wrap, negative pads (cropping) too. pads and axes are read when planning (constants only, else
// the node runs on the CPU); constant_value may stay on the device (the kernel reads it). Every
// element type of 1, 2, 4 or 8 bytes; rank up to 8; any input strides. Host half (this header,
// pad.cc); device half: pad.cu.
#pragma once

#include <string>

#include "kernels/cuda/args.h"
#include "kernels/cuda/movement/indexing_device.h"

namespace onnxopt::kernels::cuda {

struct PadArgs {
  std::string op = "Pad";
  ConstTensorView x;
  TensorView y;
  PadDeviceArgs device;  ///< planned by argsFromCall: dims, mapping, value (pointers filled too)
  std::vector<int64_t> dims;  ///< the padded dims, as the reference computes them
  std::string mode;
  ConstTensorView value;  ///< a constant_value the kernel reads on the device (else absent)
};

template <>
StatusOr<PadArgs> argsFromCall<PadArgs>(const CudaKernelCall& call);

Support canImplement(const PadArgs& args);
size_t workspaceBytes(const PadArgs& args);
Status launch(const PadArgs& args, CudaStream stream);

}  // namespace onnxopt::kernels::cuda
