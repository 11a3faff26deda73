// The runner "onnxruntime": runs a model in onnxruntime through tools/opt/ort_runner.py in a
// Python subprocess. It lives in the tool, not the library (which never needs Python), and opt
// registers it into the runner registry at startup.
#pragma once

namespace onnxopt::tools {

/// Registers "onnxruntime" in the runtime's runner registry (runtime/executor.h).
void registerOnnxruntimeRunner();

}  // namespace onnxopt::tools
