// Tests of the executor seam (runtime/executor.h): the runner registry (built-in and registered
// runners, unknown names), and the reference executor behind the interface.
#include "onnxopt/runtime/executor.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/runtime/reference_executor.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

using test::floats;
using test::parse;

constexpr const char* kModel = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[2,3] y, int64[2] s) <float[3] b = {1.0, -2.0, 3.0}> {
  a = Add(x, b)
  y = Relu(a)
  s = Shape(y)
}
)";

/// A runner that answers every run with one fixed output, counting its runs.
class FixedExecutor final : public Executor {
 public:
  FixedExecutor(std::string name, int* runs) : name_(std::move(name)), runs_(runs) {}
  std::string name() const override { return name_; }
  StatusOr<ExecutionResult> run(const Feeds&, const ExecutionOptions&) override {
    ++*runs_;
    ExecutionResult r;
    r.names = {"y"};
    r.outputs = {floats({1}, {42})};
    return r;
  }

 private:
  std::string name_;
  int* runs_;
};

TEST(RunnerRegistry, ReferenceIsBuiltIn) {
  std::vector<std::string> names = runnerNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0], "reference");
  EXPECT_TRUE(hasRunner("reference"));
  auto model = parse(kModel);
  auto exec = createExecutor("reference", *model);
  ASSERT_TRUE(exec.isOk()) << exec.status().toString();
  EXPECT_EQ((*exec)->name(), "reference");
}

TEST(RunnerRegistry, UnknownNameListsTheRunners) {
  auto model = parse(kModel);
  auto exec = createExecutor("no-such-runner", *model);
  ASSERT_FALSE(exec.isOk());
  EXPECT_EQ(exec.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(exec.status().message().find("unknown runner 'no-such-runner' (use reference"),
            std::string::npos)
      << exec.status().message();
  EXPECT_FALSE(hasRunner("no-such-runner"));
}

TEST(RunnerRegistry, RegisteredRunnerIsCreatedByName) {
  int runs = 0;
  std::string seen_path;
  ASSERT_TRUE(registerRunner("test-fixed", [&](const ExecutorSource& source) {
                seen_path = source.model_path;
                return StatusOr<std::unique_ptr<Executor>>(
                    std::make_unique<FixedExecutor>("test-fixed", &runs));
              }).isOk());
  EXPECT_TRUE(hasRunner("test-fixed"));
  std::vector<std::string> names = runnerNames();
  EXPECT_EQ(names.front(), "reference");  // built-ins first
  EXPECT_NE(std::find(names.begin(), names.end(), "test-fixed"), names.end());

  auto model = parse(kModel);
  auto exec = createExecutor("test-fixed", {model.get(), "m.onnx"});
  ASSERT_TRUE(exec.isOk()) << exec.status().toString();
  EXPECT_EQ(seen_path, "m.onnx");
  EXPECT_EQ((*exec)->name(), "test-fixed");
  auto result = (*exec)->run({}, {});
  ASSERT_TRUE(result.isOk());
  EXPECT_EQ(result->names, std::vector<std::string>{"y"});
  EXPECT_EQ(runs, 1);

  // The unknown-runner message now lists it too.
  auto unknown = createExecutor("nope", *model);
  EXPECT_NE(unknown.status().message().find("test-fixed"), std::string::npos);

  // Registering the name again replaces the factory (and keeps its place in the list).
  ASSERT_TRUE(registerRunner("test-fixed", [](const ExecutorSource&) {
                return StatusOr<std::unique_ptr<Executor>>(
                    makeError(StatusCode::kUnimplemented, "test-fixed: no device"));
              }).isOk());
  EXPECT_EQ(runnerNames().size(), names.size());
  auto failed = createExecutor("test-fixed", *model);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.status().message(), "test-fixed: no device");
}

TEST(RunnerRegistry, RegistrationErrors) {
  auto factory = [](const ExecutorSource& s) {
    return StatusOr<std::unique_ptr<Executor>>(createReferenceExecutor(*s.model));
  };
  EXPECT_EQ(registerRunner("", factory).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registerRunner("reference", factory).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registerRunner("test-empty", ExecutorFactory()).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(hasRunner("test-empty"));
  auto no_model = createExecutor("reference", ExecutorSource{});
  ASSERT_FALSE(no_model.isOk());
  EXPECT_EQ(no_model.status().code(), StatusCode::kInvalidArgument);
}

TEST(ReferenceExecutor, SameOutputsAsRunModel) {
  auto model = parse(kModel);
  Feeds feeds{{"x", floats({2, 3}, {1, 2, 3, -4, 5, -6})}};
  ExecutionOptions record;
  record.record_intermediates = true;
  auto direct = runModel(*model, feeds, record);
  ASSERT_TRUE(direct.isOk()) << direct.status().toString();
  auto exec = createExecutor("reference", *model);
  ASSERT_TRUE(exec.isOk());
  for (int run = 0; run < 2; ++run) {  // created once, run any number of times
    auto through = (*exec)->run(feeds, record);
    ASSERT_TRUE(through.isOk()) << through.status().toString();
    EXPECT_EQ(through->names, direct->names);
    ASSERT_EQ(through->outputs.size(), direct->outputs.size());
    for (size_t i = 0; i < direct->outputs.size(); ++i) {
      EXPECT_EQ(through->outputs[i].dtype, direct->outputs[i].dtype);
      EXPECT_EQ(through->outputs[i].dims, direct->outputs[i].dims);
      EXPECT_EQ(through->outputs[i].bytes, direct->outputs[i].bytes);
    }
    ASSERT_EQ(through->intermediates.size(), 3u);
    EXPECT_EQ(through->intermediates[0].name, "a");
    EXPECT_EQ(through->intermediates[0].op, "Add");
    EXPECT_EQ(through->intermediates[2].op, "Shape");
  }
  EXPECT_EQ(direct->outputs[0].get<float>(0), 2.0f);  // 1 + 1
  EXPECT_EQ(direct->outputs[0].get<float>(1), 0.0f);  // Relu(2 - 2)
  EXPECT_EQ(direct->outputs[1].get<int64_t>(1), 3);
  // Without recording, no intermediates.
  auto plain = (*exec)->run(feeds, {});
  ASSERT_TRUE(plain.isOk());
  EXPECT_TRUE(plain->intermediates.empty());
}

TEST(ReferenceExecutor, ErrorsThroughTheInterface) {
  auto model = parse(kModel);
  auto exec = createExecutor("reference", *model);
  ASSERT_TRUE(exec.isOk());
  auto missing = (*exec)->run({}, {});
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(), "no value given for graph input 'x'");
  auto unknown = (*exec)->run({{"x", floats({2, 3}, {})}, {"z", floats({1}, {})}}, {});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().message(), "'z' is not a graph input");
}

// FlexAttention's score_mod and prob_mod run in the executor on the whole score and probability
// tensors: one query, two keys of equal score; score_mod adds log(3) to key 1 (probabilities
// 1/4, 3/4) and prob_mod doubles them. Two query heads share the one K/V head (GQA).
TEST(ReferenceExecutor, FlexAttentionModifiers) {
  auto model = parse(R"(
<ir_version: 10, opset_import: ["" : 21, "ai.onnx.preview" : 1]>
g (float[1,2,1,1] q, float[1,1,2,1] k, float[1,1,2,1] v) => (float[1,2,1,1] y, float[1,2,1,1] p) {
  y = ai.onnx.preview.FlexAttention <
    score_mod = s (float[1,2,1,2] scores) => (float[1,2,1,2] out)
        <float[2] bias = {0.0, 1.0986122886681098}> { out = Add(scores, bias) },
    prob_mod = m (float[1,2,1,2] probs) => (float[1,2,1,2] twice) { twice = Add(probs, probs) }
  > (q, k, v)
  p = ai.onnx.preview.FlexAttention (q, k, v)
}
)");
  ASSERT_NE(model, nullptr);
  Feeds feeds{{"q", floats({1, 2, 1, 1}, {0, 0})},
              {"k", floats({1, 1, 2, 1}, {1, 2})},
              {"v", floats({1, 1, 2, 1}, {4, 8})}};
  auto out = runModel(*model, feeds, {});
  ASSERT_TRUE(out.isOk()) << out.status().toString();
  ASSERT_EQ(out->outputs.size(), 2u);
  EXPECT_EQ(out->outputs[0].dims, (std::vector<int64_t>{1, 2, 1, 1}));
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_NEAR(out->outputs[0].get<float>(h), 2 * (0.25 * 4 + 0.75 * 8), 1e-5);
    EXPECT_NEAR(out->outputs[1].get<float>(h), 6, 1e-5);  // no modifiers: the mean of V
  }
}

}  // namespace
}  // namespace onnxopt::runtime
