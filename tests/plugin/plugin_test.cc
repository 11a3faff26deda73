// The plugin registry (include/onnxopt/plugin/plugin.h): what a registration adds to each layer's
// registry, and every refusal (ABI version, entry point, file, reserved domain, incomplete items).
// Registrations last for the process: each case uses its own domain and counts what it adds, so
// the cases hold in one process as under ctest (one process each).
#include "onnxopt/plugin/plugin.h"

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/passes/registry.h"

namespace onnxopt {
namespace {

void inferSame(ir::InferenceContext& ctx) {
  if (auto t = ctx.inputType(0)) ctx.setOutputType(0, *t);
}

StatusOr<std::vector<kernels::HostTensor>> negate(const std::vector<const kernels::HostTensor*>& in,
                                                  const kernels::KernelAttrs&, size_t) {
  kernels::HostTensor y = *in[0];
  for (int64_t i = 0; i < y.numElements(); ++i) y.set<float>(i, -y.get<float>(i));
  std::vector<kernels::HostTensor> out;
  out.push_back(std::move(y));
  return out;
}

Status noLaunch(const kernels::CudaKernelCall&, kernels::CudaStream) {
  return Status::ok();
}

void registerGood(plugin::Registry& r) {
  plugin::OpSchema s;
  s.domain = "test.plugin";
  s.op = "Negate";
  s.infer = &inferSame;
  s.function_body = R"(<domain: "test.plugin", opset_import: ["" : 18]>
Negate (x) => (y) {
  y = Neg(x)
})";
  r.addOpSchema(s);
  kernels::ReferencePluginKernel k;
  k.domain = "test.plugin";
  k.op = "Negate";
  k.inputs = {{DataType::kFloat}};
  k.run = &negate;
  r.addReferenceKernel(k);
  kernels::CudaPluginKernel c;
  c.domain = "test.plugin";
  c.op = "Negate";
  c.inputs = {{DataType::kFloat}};
  c.launch = &noLaunch;
  r.addCudaKernel(c);
}

TEST(PluginRegistry, RegistrationReachesEveryRegistry) {
  OnnxoptPluginInfo info{ONNXOPT_PLUGIN_ABI_VERSION, "good", "1", &registerGood};
  const size_t before = plugin::loadedPlugins().size();
  auto loaded = plugin::registerPlugin(info);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_EQ(loaded->ops, std::vector<std::string>{"test.plugin.Negate"});
  EXPECT_EQ(loaded->kernels,
            (std::vector<std::string>{"reference:test.plugin.Negate", "cuda:test.plugin.Negate"}));
  ASSERT_EQ(plugin::loadedPlugins().size(), before + 1);

  // The reference kernel runs, and the capability query knows its types.
  EXPECT_TRUE(kernels::hasReferenceKernel("test.plugin.Negate", 1));
  kernels::HostTensor x = kernels::HostTensor::zeros(DataType::kFloat, {2});
  x.set<float>(0, 1.5f);
  auto y = kernels::runReferenceKernel("test.plugin.Negate", 1, {&x}, {}, 1);
  ASSERT_TRUE(y.isOk()) << y.status().message();
  EXPECT_EQ((*y)[0].get<float>(0), -1.5f);
  kernels::OpQuery q{"test.plugin", "Negate", 1, {DataType::kInt32}, {}, kernels::Layout::kAny};
  EXPECT_FALSE(kernels::referenceCapabilities().supports(q));
  q.inputs = {DataType::kFloat};
  EXPECT_TRUE(kernels::referenceCapabilities().supports(q));
  EXPECT_TRUE(kernels::cudaCapabilities().supports(q))
      << kernels::cudaCapabilities().supports(q).reason;

  // Shape inference runs the plugin's function; the function body reaches a model calling the op.
  auto model = io::parseModelText(R"(<ir_version: 9, opset_import: ["" : 18, "test.plugin" : 1]>
g (float[3] a) => (float[3] b) {
  b = test.plugin.Negate(a)
})");
  ASSERT_TRUE(model.isOk()) << model.status().message();
  ASSERT_TRUE(ir::inferShapes(**model).isOk());
  EXPECT_EQ((*model)->graph->output(0)->type().elem_type, DataType::kFloat);
  auto added = passes::attachRegisteredFunctions(**model);
  ASSERT_TRUE(added.isOk());
  EXPECT_EQ(*added, 1);
  ASSERT_EQ((*model)->functions.size(), 1u);
  EXPECT_EQ((*model)->functions[0]->name, "Negate");
  auto twice = passes::attachRegisteredFunctions(**model);
  ASSERT_TRUE(twice.isOk());
  EXPECT_EQ(*twice, 0);  // present: not added twice

  // Registering the same ops again is refused, naming the item.
  auto again = plugin::registerPlugin(info);
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.status().message().find("registered twice"), std::string::npos)
      << again.status().message();
}

void registerOld(plugin::Registry& r) {
  kernels::ReferencePluginKernel k;
  k.domain = "test.old";
  k.op = "Negate";
  k.run = &negate;
  r.addReferenceKernel(k);
}

TEST(PluginRegistry, RefusesAnotherAbiVersion) {
  OnnxoptPluginInfo info{ONNXOPT_PLUGIN_ABI_VERSION + 1, "old", "1", &registerOld};
  auto loaded = plugin::registerPlugin(info, "libold.so");
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find("built for plugin ABI version"), std::string::npos);
  EXPECT_FALSE(kernels::hasReferenceKernel("test.old.Negate", 1));  // nothing registered
}

void registerIncomplete(plugin::Registry& r) {
  kernels::ReferencePluginKernel k;
  k.domain = "test.plugin";
  k.op = "Half";  // no run function
  r.addReferenceKernel(k);
  r.addReferenceKernel({});
}

TEST(PluginRegistry, RefusesIncompleteItemsBeforeRegisteringAny) {
  OnnxoptPluginInfo info{ONNXOPT_PLUGIN_ABI_VERSION, "incomplete", "1", &registerIncomplete};
  const size_t before = plugin::loadedPlugins().size();
  auto loaded = plugin::registerPlugin(info);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find("has no run"), std::string::npos)
      << loaded.status().message();
  EXPECT_EQ(plugin::loadedPlugins().size(), before);
}

TEST(PluginLoader, LoadsTheExamplePlugin) {
  const size_t before = plugin::loadedPlugins().size();
  auto loaded = plugin::loadPlugin(SWIGLU_PLUGIN);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_EQ(loaded->name, "swiglu");
  EXPECT_EQ(loaded->passes, std::vector<std::string>{"fuse-swiglu"});
  EXPECT_NE(passes::createPass("fuse-swiglu"), nullptr);
  EXPECT_EQ(passes::pipelinePasses(), std::vector<std::string>{"fuse-swiglu"});
  EXPECT_TRUE(kernels::hasReferenceKernel("example.SwiGLU", 1));
  // Loading it again is the same plugin, not a second registration.
  auto again = plugin::loadPlugin(SWIGLU_PLUGIN);
  ASSERT_TRUE(again.isOk()) << again.status().message();
  EXPECT_EQ(plugin::loadedPlugins().size(), before + 1);
}

void expectRefused(const std::string& path, const std::string& why) {
  auto loaded = plugin::loadPlugin(path);
  ASSERT_FALSE(loaded.isOk()) << path;
  EXPECT_NE(loaded.status().message().find(why), std::string::npos) << loaded.status().message();
  EXPECT_NE(loaded.status().message().find(path), std::string::npos) << loaded.status().message();
}

TEST(PluginLoader, RefusesAnotherAbiVersion) {
  expectRefused(BAD_ABI_PLUGIN, "built for plugin ABI version");
}
TEST(PluginLoader, RefusesALibraryWithoutTheEntryPoint) {
  expectRefused(NO_ENTRY_PLUGIN, "not an onnxopt plugin");
}
TEST(PluginLoader, RefusesAnOpOfOnnxsDomain) {
  expectRefused(BAD_DOMAIN_PLUGIN, "a plugin adds ops of its own domain");
}
TEST(PluginLoader, RefusesAMissingFileAndANonLibrary) {
  expectRefused("/nonexistent/libx.so", "no such file");
  expectRefused(PLUGIN_TEST_SOURCE, "cannot load it");
}

}  // namespace
}  // namespace onnxopt
