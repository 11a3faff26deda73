// The CUDA target's passes ask the kernel table of their pass context (PassContext::target_kernels),
// not a process-wide one: a fake table decides whether they rewrite.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "onnxopt/api/optimize.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/kernels/capabilities.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/passes/registry.h"

namespace onnxopt {
namespace {

// MatMul + Add of a per-column bias: fuse-matmul-epilogue's MatMulBias where the table claims it.
constexpr char kModel[] = R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2,4] a) => (float[2,3] y)
  <float[4,3] w = {1,2,3,4,5,6,7,8,9,10,11,12}, float[3] b = {1,2,3}> {
 t = MatMul(a, w)
 y = Add(t, b) }
)";

/// Claims the ops it was given, for any element types, and records what it was asked.
class FakeCapabilities final : public kernels::Capabilities {
 public:
  explicit FakeCapabilities(std::set<std::string> claimed) : claimed_(std::move(claimed)) {}
  const char* name() const override { return "fake"; }
  kernels::Support supports(const kernels::OpQuery& query) const override {
    asked.push_back(query.domain + "." + query.op);
    return claimed_.count(query.op) > 0 ? kernels::Support::yes()
                                        : kernels::Support::no("the fake refuses " + query.op);
  }
  mutable std::vector<std::string> asked;

 private:
  std::set<std::string> claimed_;
};

std::vector<std::string> opsAfter(const kernels::Capabilities* table) {
  auto model = io::parseModelText(kModel);
  EXPECT_TRUE(model.isOk()) << model.status().message();
  OptimizeOptions options;
  options.pipeline = "infer-shapes,fuse-matmul-epilogue";
  options.context.target_kernels = table;
  Status st = optimize(**model, options);
  EXPECT_TRUE(st.isOk()) << st.message();
  std::vector<std::string> ops;
  for (const ir::Node* n : *(*model)->graph) ops.push_back(n->domain() + "." + n->opType());
  return ops;
}

TEST(TargetKernels, ClaimedOpIsFused) {
  FakeCapabilities fake({"MatMulBias"});
  EXPECT_EQ(opsAfter(&fake), std::vector<std::string>{"ai.onnxopt.MatMulBias"});
  EXPECT_EQ(std::set<std::string>(fake.asked.begin(), fake.asked.end()),
            std::set<std::string>{"ai.onnxopt.MatMulBias"});
}

TEST(TargetKernels, RefusedOpStays) {
  FakeCapabilities fake({"MatMulBiasRelu"});
  EXPECT_EQ(opsAfter(&fake), (std::vector<std::string>{".MatMul", ".Add"}));
  EXPECT_EQ(std::set<std::string>(fake.asked.begin(), fake.asked.end()),
            std::set<std::string>{"ai.onnxopt.MatMulBias"});
}

// Without a table in the context (a pipeline run outside onnxopt::optimize), nothing is claimed.
TEST(TargetKernels, NoTableRewritesNothing) {
  auto model = io::parseModelText(kModel);
  ASSERT_TRUE(model.isOk());
  auto pipeline = pass::parsePipeline("infer-shapes,fuse-matmul-epilogue", &passes::createPass);
  ASSERT_TRUE(pipeline.isOk());
  pass::PassManager manager(std::move(pipeline).value(), pass::PassContext{}, {});
  ASSERT_TRUE(manager.run(**model).isOk());
  EXPECT_EQ((*model)->graph->numNodes(), 2u);
}

}  // namespace
}  // namespace onnxopt
