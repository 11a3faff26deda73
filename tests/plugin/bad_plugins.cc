// Libraries that plugin_test.cc loads to see each refusal: built once per variant
// (BAD_PLUGIN_KIND): an entry point of another ABI version, none at all, one that registers an op
// of ONNX's own domain.
#include "onnxopt/plugin/plugin.h"

#if BAD_PLUGIN_KIND == 1
extern "C" __attribute__((visibility("default"))) const OnnxoptPluginInfo* onnxopt_plugin_entry() {
  static const OnnxoptPluginInfo info{ONNXOPT_PLUGIN_ABI_VERSION + 1, "future", "9", nullptr};
  return &info;
}
#elif BAD_PLUGIN_KIND == 2
extern "C" __attribute__((visibility("default"))) int not_a_plugin() {
  return 0;
}
#else
namespace {
void inferNothing(onnxopt::ir::InferenceContext& /*ctx*/) {}
void registerBad(onnxopt::plugin::Registry& r) {
  onnxopt::plugin::OpSchema s;
  s.domain = "";
  s.op = "Relu";
  s.infer = &inferNothing;
  r.addOpSchema(s);
}
}  // namespace
ONNXOPT_DEFINE_PLUGIN("bad_domain", "1", registerBad)
#endif
