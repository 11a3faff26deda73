// PassManager under verify_each (opt --verify-each, on in every lit test): a pass that leaves an
// invalid model fails the run with one error naming the pass and what the verifier found; without
// it the same run succeeds (the model is checked again only before export).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/builder.h"
#include "onnxopt/pass/pass_manager.h"

namespace onnxopt {
namespace {

constexpr char kModel[] = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[2] y) <float[2] w = {1.0, 2.0}> { y = Add(x, w) }
)";

/// Retypes the first initializer of the main graph to int64, which its float data contradicts:
/// the kind of slip the Rewriter prevents and a raw ir::Builder does not.
class CorruptInitializerPass final : public pass::Pass {
 public:
  std::string id() const override { return "test-corrupt-initializer"; }
  std::string summary() const override { return "retype an initializer against its data"; }
  StatusOr<bool> run(ir::Model& model, pass::PassContext& /*ctx*/) override {
    ir::Value* w = model.graph->initializers().front();
    ir::Builder::setType(w, ir::Type::tensor(DataType::kInt64, w->type().shape));
    return true;
  }
};

/// Runs the corrupting pass alone.
StatusOr<bool> runCorrupting(ir::Model& model, bool verify_each) {
  std::vector<pass::PipelineEntry> entries(1);
  entries[0].pass = std::make_unique<CorruptInitializerPass>();
  pass::Instrumentation inst;
  inst.verify_each = verify_each;
  pass::PassManager manager(std::move(entries), pass::PassContext{}, inst);
  return manager.run(model);
}

TEST(VerifyEach, NamesThePassThatLeftAnInvalidModel) {
  auto model = io::parseModelText(kModel);
  ASSERT_TRUE(model.isOk()) << model.status().message();
  auto ran = runCorrupting(**model, /*verify_each=*/true);
  ASSERT_FALSE(ran.isOk());
  EXPECT_NE(ran.status().message().find(
                "pass 'test-corrupt-initializer' left an invalid model: initializer 'w' holds "
                "float data but its type says int64"),
            std::string::npos)
      << ran.status().message();
}

TEST(VerifyEach, OffRunsThrough) {
  auto model = io::parseModelText(kModel);
  ASSERT_TRUE(model.isOk()) << model.status().message();
  auto ran = runCorrupting(**model, /*verify_each=*/false);
  ASSERT_TRUE(ran.isOk()) << ran.status().message();
  EXPECT_TRUE(*ran);
}

}  // namespace
}  // namespace onnxopt
