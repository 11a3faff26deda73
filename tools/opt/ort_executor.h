// The runner "onnxruntime": runs a model in onnxruntime through tools/opt/ort_runner.py in a
// Python subprocess. It lives in the tool, not the library (which never needs Python), and opt
// registers it into the runner registry at startup.
#pragma once

#include <string>

namespace onnxopt::tools {

/// Where the runner finds ort_runner.py and the Python that runs it when the environment
/// (ONNXOPT_ORT_RUNNER, ONNXOPT_PYTHON) does not say: the Python package sets its own copy and
/// sys.executable. Empty keeps the built-in defaults (the installed or source copy; python3).
void setOnnxruntimeRunnerDefaults(const std::string& script, const std::string& python);

/// Registers "onnxruntime" in the runtime's runner registry (runtime/executor.h).
void registerOnnxruntimeRunner();

}  // namespace onnxopt::tools
