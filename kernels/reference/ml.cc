// Kernels of the ai.onnx.ml domain.
#include "ops.h"

namespace onnxopt::kernels::ref {}  // namespace onnxopt::kernels::ref
