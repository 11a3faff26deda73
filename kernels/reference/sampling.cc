// GridSample (16, 20, 22), AffineGrid, RoiAlign (10, 16), Col2Im and MaxUnpool.
#include "ops.h"
#include "resample.h"

namespace onnxopt::kernels::ref {}  // namespace onnxopt::kernels::ref
