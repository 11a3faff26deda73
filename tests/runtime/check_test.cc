// Tests of the library's model comparison (runtime/check.h) and input generation
// (runtime/inputs.h): what `opt check` does, called as the Python package will call it.
#include "onnxopt/runtime/check.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/reference_executor.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

using test::floats;
using test::parse;

/// y = (Relu(x @ W) - b) * 2, z = Sigmoid(x); `sub` is the Sub's operand order.
std::string model(const char* sub = "r, b") {
  return std::string(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[batch,2] x) => (float[batch,2] y, float[batch,2] z)
    <float[2,2] W = {1.0, -1.0, 0.5, 2.0}, float[2] b = {0.25, -0.5}, float two = {2.0}> {
  m = MatMul(x, W)
  r = Relu(m)
  s = Sub()") +
         sub + R"()
  y = Mul(s, two)
  z = Sigmoid(x)
}
)";
}

TEST(CompareRuns, OutputsAndLayers) {
  ExecutionResult a, b;
  a.names = b.names = {"y", "z"};
  a.outputs = {floats({2}, {1, 2}), floats({1}, {3})};
  b.outputs = {floats({2}, {1, 2.5f}), floats({1}, {3})};
  a.intermediates = {{"m", "MatMul", floats({1}, {1})}, {"s", "Sub", floats({1}, {5})}};
  b.intermediates = {{"m", "MatMul", floats({1}, {1})},
                     {"only_b", "Relu", floats({1}, {0})},
                     {"s", "Sub", floats({1}, {-5})}};
  CompareOptions options;
  ModelComparison c = compareRuns(a, b, options);
  EXPECT_FALSE(c.passed);
  ASSERT_EQ(c.outputs.size(), 2u);
  EXPECT_FALSE(c.outputs[0].passed);
  EXPECT_TRUE(c.outputs[1].passed);
  EXPECT_TRUE(c.layers.empty());  // not asked for

  options.atol = 1.0;  // 0.5 is within it
  EXPECT_TRUE(compareRuns(a, b, options).passed);

  options = {};
  options.per_layer = true;
  c = compareRuns(a, b, options);
  ASSERT_EQ(c.layers.size(), 2u);  // the values both recorded, in the actual run's order
  EXPECT_EQ(c.layers[0].name, "m");
  EXPECT_TRUE(c.layers[0].passed);
  EXPECT_EQ(c.first_failing_layer, "s");
  EXPECT_EQ(c.first_failing_op, "Sub");

  b.names = {"z"};
  b.outputs = {floats({1}, {3})};
  c = compareRuns(a, b, {});
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.outputs[0].problem, "missing from the optimized model");
}

TEST(CompareModels, ExecutorsOnTheSameFeeds) {
  auto original = parse(model());
  auto swapped = parse(model("b, r"));
  Feeds feeds{{"x", floats({2, 2}, {1, 2, -3, 4})}};
  CompareOptions options;
  options.per_layer = true;
  auto a = createReferenceExecutor(*original);
  auto same = createReferenceExecutor(*original);
  auto bad = createReferenceExecutor(*swapped);
  auto ok = compareModels(*a, *same, feeds, options);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_TRUE(ok->passed);
  EXPECT_TRUE(ok->first_failing_layer.empty());
  auto failed = compareModels(*a, *bad, feeds, options);
  ASSERT_TRUE(failed.isOk()) << failed.status().toString();
  EXPECT_FALSE(failed->passed);
  EXPECT_FALSE(failed->outputs[0].passed);  // y
  EXPECT_TRUE(failed->outputs[1].passed);   // z
  EXPECT_EQ(failed->first_failing_layer, "s");
  EXPECT_EQ(failed->first_failing_op, "Sub");

  auto no_input = compareModels(*a, *same, {}, options);
  ASSERT_FALSE(no_input.isOk());
  EXPECT_EQ(no_input.status().message(),
            "the original model (the reference runner): no value given for graph input 'x'");
}

TEST(CheckModels, RandomInputsAndVerdict) {
  auto original = parse(model());
  auto swapped = parse(model("b, r"));
  CheckOptions options;
  options.seed = 3;
  auto same = checkModels(*original, *original, options);
  ASSERT_TRUE(same.isOk()) << same.status().toString();
  EXPECT_TRUE(same->passed);
  EXPECT_EQ(same->runner, "reference");
  EXPECT_EQ(same->seed, 3u);
  ASSERT_EQ(same->inputs.size(), 1u);
  EXPECT_EQ(same->inputs[0].name, "x");
  EXPECT_EQ(same->inputs[0].value.dims, (std::vector<int64_t>{2, 2}));  // batch: a named dim, 2
  EXPECT_EQ(same->inputs[0].dynamic_dims, std::vector<std::string>{"batch=2"});

  options.compare.per_layer = true;
  auto bad = checkModels(*original, *swapped, options);
  ASSERT_TRUE(bad.isOk()) << bad.status().toString();
  EXPECT_FALSE(bad->passed);
  EXPECT_EQ(bad->first_failing_layer, "s");
  EXPECT_EQ(bad->first_failing_op, "Sub");
  // The inputs the report shows are the ones both models ran on: the same seed, the same values.
  auto again = checkModels(*original, *swapped, options);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again->inputs[0].value.bytes, bad->inputs[0].value.bytes);
}

TEST(CheckModels, GivenInputsAndPinnedShapes) {
  auto original = parse(model());
  CheckOptions options;
  options.inputs["x"] = floats({3, 2}, {1, 1, 1, 1, 1, 1});
  auto given = checkModels(*original, *original, options);
  ASSERT_TRUE(given.isOk()) << given.status().toString();
  EXPECT_EQ(given->inputs[0].value.dims, (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(given->inputs[0].dynamic_dims.empty());
  EXPECT_EQ(given->inputs[0].value.get<float>(5), 1.0f);

  options.inputs["x"] = floats({3, 5}, {});
  auto wrong = checkModels(*original, *original, options);
  ASSERT_FALSE(wrong.isOk());
  EXPECT_NE(wrong.status().message().find("is declared float[batch,2]"), std::string::npos)
      << wrong.status().message();

  options.inputs.clear();
  options.shapes["x"] = {7, 2};
  auto pinned = checkModels(*original, *original, options);
  ASSERT_TRUE(pinned.isOk()) << pinned.status().toString();
  EXPECT_EQ(pinned->inputs[0].value.dims, (std::vector<int64_t>{7, 2}));

  options.shapes["nope"] = {1};
  auto unknown = checkModels(*original, *original, options);
  ASSERT_FALSE(unknown.isOk());
  EXPECT_EQ(unknown.status().message(), "the original model has no input 'nope'");
}

TEST(CheckModels, Errors) {
  auto original = parse(model());
  CheckOptions options;
  options.runner = "no-such-runner";
  auto runner = checkModels(*original, *original, options);
  ASSERT_FALSE(runner.isOk());
  EXPECT_NE(runner.status().message().find("unknown runner 'no-such-runner'"), std::string::npos);

  auto renamed = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,2] w) => (float[2,2] z) { z = Sigmoid(w) }
)");
  options = {};
  options.original_path = "a.onnx";
  options.optimized_path = "b.onnx";
  auto missing = checkModels(*original, *renamed, options);
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(), "b.onnx: input 'x' of a.onnx is missing");

  // A model the runner cannot run: the error names the model, then the caller's note.
  auto unknown = parse(R"(
<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
g (float[1,2] x) => (float[1,2] y) {
  y = com.example.NoKernelOp(x)
}
)");
  options.failure_note = "(a note)";
  ASSERT_NE(unknown, nullptr);
  auto failed = checkModels(*unknown, *unknown, options);
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.status().message().rfind("a.onnx (a note): ", 0), 0u)
      << failed.status().message();
  EXPECT_NE(failed.status().message().find("NoKernelOp"), std::string::npos);

  // A runner that refuses the model as it prepares it (the cuda runner checks the weights then):
  // the error names the model too, on either side.
  ASSERT_TRUE(registerRunner("test-refuses-model", [](const ExecutorSource&) {
                return StatusOr<std::unique_ptr<Executor>>(
                    invalidArgument("initializer 'w' has no data"));
              }).isOk());
  options.failure_note.clear();
  options.against = "test-refuses-model";
  auto refused = checkModels(*original, *original, options);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message(), "a.onnx: initializer 'w' has no data");
  options.against = "reference";
  options.runner = "test-refuses-model";
  refused = checkModels(*original, *original, options);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message(), "b.onnx: initializer 'w' has no data");
}

TEST(MakeInputs, SeededRandomValuesForInputsWithoutDefaults) {
  auto m = parse(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,3] x, int64[N] ids, float[2] d) => (float[N,3] y) <float[2] d = {1.0, 2.0}> { y = Relu(x) }
)");
  ASSERT_NE(m, nullptr);
  RandomInputOptions options;
  options.seed = 1;
  options.symbolic_dim = 4;
  options.int_ranges["ids"] = {5, 6};
  auto inputs = makeInputs(*m->graph, {}, options);
  ASSERT_TRUE(inputs.isOk()) << inputs.status().toString();
  ASSERT_EQ(inputs->size(), 2u);  // d has a default
  EXPECT_EQ((*inputs)[0].value.dims, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ((*inputs)[0].dynamic_dims, std::vector<std::string>{"N=4"});
  for (int64_t i = 0; i < 4; ++i) {
    int64_t id = (*inputs)[1].value.get<int64_t>(i);
    EXPECT_TRUE(id == 5 || id == 6) << id;
  }
  auto again = makeInputs(*m->graph, {}, options);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ((*again)[0].value.bytes, (*inputs)[0].value.bytes);
  options.seed = 2;
  auto other = makeInputs(*m->graph, {}, options);
  ASSERT_TRUE(other.isOk());
  EXPECT_NE((*other)[0].value.bytes, (*inputs)[0].value.bytes);
  auto given = makeInputs(*m->graph, {{"x", floats({1, 3}, {1, 2, 3})}}, options);
  ASSERT_TRUE(given.isOk());
  EXPECT_EQ((*given)[0].value.dims, (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE((*given)[0].dynamic_dims.empty());
}

}  // namespace
}  // namespace onnxopt::runtime
