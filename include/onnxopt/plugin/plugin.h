// Plugins: shared libraries that add to onnxopt, for this process, what the built-in lists hold:
// passes (and the patterns inside them), op schemas of the plugin's own domain (shape and type
// inference, a function body for portable output), CPU reference kernels and CUDA kernels.
// docs/plugins.md walks through writing one (tools/plugins/swiglu is the worked example).
//
// A plugin defines one entry point with ONNXOPT_DEFINE_PLUGIN:
//
//   void registerSwiGlu(onnxopt::plugin::Registry& r) {
//     r.addOpSchema({.domain = "example", .op = "SwiGLU", .infer = &inferSwiGlu,
//                    .function_body = kSwiGluBody});
//     r.addReferenceKernel({.domain = "example", .op = "SwiGLU", .run = &runSwiGlu});
//     r.addCudaKernel({.domain = "example", .op = "SwiGLU", ..., .launch = &launchSwiGlu});
//     r.addPass(&createFuseSwiGluPass, /*in_default_pipeline=*/true);
//   }
//   ONNXOPT_DEFINE_PLUGIN("swiglu", "1.0", registerSwiGlu)
//
// and is loaded with `opt --plugin libswiglu.so` or onnxopt::plugin::loadPlugin(path). The entry
// point returns a C struct whose first field is the ABI version the plugin was built with; the
// host reads it before anything else and refuses a plugin of another version. Past that check the
// plugin and the host share C++ types (std::string, Status, the IR), so a plugin is built with the
// same compiler and onnxopt headers as the host; its symbols resolve against the host process
// (opt exports them), so it does not link the onnxopt libraries itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/passes/registry.h"
#include "onnxopt/support/status.h"

/// The plugin ABI: raised whenever a type a plugin shares with the host changes layout.
#define ONNXOPT_PLUGIN_ABI_VERSION 1u

namespace onnxopt::plugin {

class Registry;

}  // namespace onnxopt::plugin

extern "C" {
/// What a plugin's entry point returns (a static object). `abi_version` is read first and alone.
struct OnnxoptPluginInfo {
  uint32_t abi_version;  ///< ONNXOPT_PLUGIN_ABI_VERSION as the plugin was built
  const char* name;
  const char* version;
  /// Registers everything the plugin adds; called once, after the version check.
  void (*register_plugin)(onnxopt::plugin::Registry& registry);
};
}

/// The name of the entry point: `extern "C" const OnnxoptPluginInfo* onnxopt_plugin_entry()`.
#define ONNXOPT_PLUGIN_ENTRY_POINT "onnxopt_plugin_entry"

/// Defines the entry point of a plugin named NAME (a string) at VERSION whose registration
/// function is FN (void FN(onnxopt::plugin::Registry&)).
#define ONNXOPT_DEFINE_PLUGIN(NAME, VERSION, FN)                                         \
  extern "C" __attribute__((visibility("default"))) const OnnxoptPluginInfo*             \
  onnxopt_plugin_entry() {                                                               \
    static const OnnxoptPluginInfo info{ONNXOPT_PLUGIN_ABI_VERSION, NAME, VERSION, &FN}; \
    return &info;                                                                        \
  }

namespace onnxopt::plugin {

/// An op of the plugin's own domain.
struct OpSchema {
  std::string domain;  ///< not ONNX's ("", ai.onnx, ai.onnx.ml, ...) nor ai.onnxopt
  std::string op;
  int since_version = 1;  ///< of `domain`; the model imports the domain at this version or later
  /// Shape and type inference (ir::InferenceContext: input types and shapes in, output ones out).
  ir::InferFn infer = nullptr;
  /// The op's decomposition into standard ops, as one function in ONNX textual syntax
  /// (`<domain: "example", opset_import: ["" : 18]> SwiGLU (x, w1, w3) => (y) { ... }`): written
  /// into every optimized model that calls the op (unless opt --no-function-bodies), so that
  /// other runtimes still run it. "" for none.
  std::string function_body;
};

/// What a plugin's registration function is given. Registration does not fail on the spot: the
/// host checks everything after the function returns and refuses the whole plugin, naming the
/// item, if one part is wrong.
class Registry {
 public:
  virtual ~Registry() = default;
  /// A pass (its id must be new); `in_default_pipeline` runs it at -O1 and up after the cleanup,
  /// where the rewrite rules run (else only when a --passes pipeline names it).
  virtual void addPass(passes::PassFactory factory, bool in_default_pipeline) = 0;
  virtual void addOpSchema(OpSchema schema) = 0;
  virtual void addReferenceKernel(kernels::ReferencePluginKernel kernel) = 0;
  virtual void addCudaKernel(kernels::CudaPluginKernel kernel) = 0;
};

/// A plugin this process has loaded.
struct PluginInfo {
  std::string path;  ///< the library, or "(linked)" for registerPlugin
  std::string name;
  std::string version;
  std::vector<std::string> passes;   ///< pass ids
  std::vector<std::string> ops;      ///< "domain.op" of its schemas
  std::vector<std::string> kernels;  ///< "reference:domain.op", "cuda:domain.op"
};

/// Loads the shared library at `path` and registers what it adds. Errors: a file that does not
/// load (the loader's reason, e.g. an undefined symbol), one without the entry point ("not an
/// onnxopt plugin"), one built for another ABI version, or a registration the host refuses.
/// Loading the same library again is a no-op returning its first result.
StatusOr<PluginInfo> loadPlugin(const std::string& path);

/// Registers a plugin linked into the program (its entry point called directly), as loadPlugin
/// does after loading: the library API's way to take the same registration.
StatusOr<PluginInfo> registerPlugin(const OnnxoptPluginInfo& info,
                                    const std::string& origin = "(linked)");

/// Every plugin registered so far, in order.
std::vector<PluginInfo> loadedPlugins();

}  // namespace onnxopt::plugin
