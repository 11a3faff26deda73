// Bundled models for the CUDA executor tests: loaded with inferred types (what the executor plans
// from), seeded random feeds as `opt run` makes them (named dims sized where asked), and the
// comparison of an executor's outputs with the reference executor's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/runtime/cuda_executor.h"
#include "onnxopt/runtime/executor.h"
#include "onnxopt/runtime/inputs.h"
#include "onnxopt/runtime/reference_executor.h"

namespace onnxopt::runtime::test {

/// models/... under the source tree, with ir::inferShapes run (nullptr and a failure if not).
inline std::unique_ptr<ir::Model> loadInferred(const std::string& rel) {
  std::string path = std::string(ONNXOPT_SOURCE_DIR) + "/" + rel;
  auto model = io::loadModel(path);
  EXPECT_TRUE(model.isOk()) << model.status().toString();
  if (!model.isOk()) return nullptr;
  auto st = ir::inferShapes(**model);
  EXPECT_TRUE(st.isOk()) << st.status().toString();
  return st.isOk() ? std::move(model).value() : nullptr;
}

/// Random feeds for every input without a default; `symbols` sizes named dims ("batch": 2).
inline Feeds randomFeeds(const ir::Model& model, uint64_t seed,
                         const std::map<std::string, int64_t>& symbols = {}) {
  const ir::Graph& graph = *model.graph;
  RandomInputOptions options;
  options.seed = seed;
  options.spatial = spatialInputSizes(graph);
  options.symbols = symbolSizes(graph, options);
  for (const auto& [name, size] : symbols) options.symbols[name] = size;
  options.int_ranges = inferIntRanges(graph, options);
  Feeds feeds;
  for (const ir::Value* in : graph.inputs()) {
    if (in->initializer() != nullptr) continue;
    auto t = randomInput(*in, options);
    EXPECT_TRUE(t.isOk()) << in->name() << ": " << t.status().toString();
    if (t.isOk()) feeds[in->name()] = std::move(t).value();
  }
  return feeds;
}

/// Runs `feeds` on `executor` and on the reference executor and compares every output at
/// `opt check`'s tolerances (runtime::defaultTolerance).
inline void expectMatchesReference(Executor& executor, const ir::Model& model, const Feeds& feeds) {
  auto expected = runModel(model, feeds);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  auto actual = executor.run(feeds);
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  ASSERT_EQ(actual->names, expected->names);
  ASSERT_EQ(actual->outputs.size(), expected->outputs.size());
  for (size_t i = 0; i < expected->outputs.size(); ++i) {
    const kernels::HostTensor& e = expected->outputs[i];
    TensorComparison c =
        compareTensors(expected->names[i], e, actual->outputs[i], defaultTolerance(e.dtype));
    EXPECT_TRUE(c.passed) << c.name << ": " << c.problem << " " << c.mismatches << " of "
                          << c.elements << " past tolerance, max abs " << c.max_abs;
  }
}

/// Runs both with record_intermediates: the same values, in the same order, alike.
inline void expectIntermediatesMatchReference(Executor& executor, const ir::Model& model,
                                              const Feeds& feeds) {
  ExecutionOptions options;
  options.record_intermediates = true;
  auto expected = runModel(model, feeds, options);
  ASSERT_TRUE(expected.isOk()) << expected.status().toString();
  auto actual = executor.run(feeds, options);
  ASSERT_TRUE(actual.isOk()) << actual.status().toString();
  EXPECT_FALSE(expected->intermediates.empty());
  ASSERT_EQ(actual->intermediates.size(), expected->intermediates.size());
  for (size_t i = 0; i < expected->intermediates.size(); ++i) {
    const RecordedValue& e = expected->intermediates[i];
    const RecordedValue& a = actual->intermediates[i];
    ASSERT_EQ(a.name, e.name);
    EXPECT_EQ(a.op, e.op) << e.name;
    TensorComparison c = compareTensors(e.name, e.value, a.value, defaultTolerance(e.value.dtype));
    EXPECT_TRUE(c.passed) << c.name << " (" << e.op << "): " << c.problem << " " << c.mismatches
                          << " of " << c.elements << " past tolerance, max abs " << c.max_abs;
  }
}

/// Runs `model` with its symbolic dims bound to `first`, then `second` (two plan cache misses),
/// then `first` again (a hit) in one session, each matching the reference executor.
inline void expectSizesShareASession(CudaExecutor& cuda, const ir::Model& model,
                                     const std::map<std::string, int64_t>& first,
                                     const std::map<std::string, int64_t>& second) {
  int64_t misses = cuda.planMisses(), hits = cuda.planHits();
  expectMatchesReference(cuda, model, randomFeeds(model, 1, first));
  expectMatchesReference(cuda, model, randomFeeds(model, 2, second));
  EXPECT_EQ(cuda.planMisses() - misses, 2);
  EXPECT_EQ(cuda.planHits() - hits, 0);
  expectMatchesReference(cuda, model, randomFeeds(model, 3, first));
  EXPECT_EQ(cuda.planMisses() - misses, 2);
  EXPECT_EQ(cuda.planHits() - hits, 1);
}

/// `model`'s first input has a symbolic batch dim: batch 1, 3, then 1 again in one session.
inline void expectBatchSizesShareASession(CudaExecutor& cuda, const ir::Model& model) {
  const ir::Value* in = model.graph->inputs()[0];
  ASSERT_TRUE(in->type().shape && !in->type().shape->empty());
  const ir::Dim& batch = (*in->type().shape)[0];
  ASSERT_EQ(batch.kind, ir::Dim::Kind::kParam) << "the batch dim is not symbolic";
  expectSizesShareASession(cuda, model, {{batch.param, 1}}, {{batch.param, 3}});
}

/// The bundled transformers with dynamic batch and sequence dims (input_ids: int64[batch,seq]).
inline const std::vector<std::string>& dynamicSequenceModels() {
  static const std::vector<std::string> models = {"models/transformers/bert_legacy/model.onnx",
                                                  "models/transformers/gpt2_legacy/model.onnx"};
  return models;
}

// Device kernels (MatMul, Add, Relu, Add), views (Reshape of an input, Unsqueeze of an arena
// value), a CPU fallback (Det has no CUDA kernel and is not planned to get one: its input is
// copied down), a graph output that is a view of an input, and shape arithmetic folded on the
// host.
inline constexpr const char* kMixed = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,3] y, float[N,2,2] v, float[N] p)
  <float[4,3] w = {1, -2, 3, 0.5, 1, -1, 2, 0, 1, -1, 1, 1}, float[3] b = {0.25, -0.5, 1},
   float[3,3] c = {2, 0.5, -1, 0, 1.5, 1, -0.5, 1, 3},
   int64[2] tail = {2, 2}, int64[1] zero = {0}, int64[1] last = {2}> {
  h = MatMul(x, w)
  a = Add(h, b)
  y = Relu(a)
  s = Shape(x)
  n = Gather(s, zero)
  t = Concat<axis = 0>(n, tail)
  v = Reshape(x, t)
  u = Unsqueeze(a, last)
  m = Add(u, c)
  p = Det(m)
}
)";

/// The bytes of kMixed's weights read on the device (w, b, c).
inline constexpr int64_t kMixedWeightBytes = (12 + 3 + 9) * 4;

inline kernels::HostTensor ramp(std::vector<int64_t> dims, float scale) {
  kernels::HostTensor t = kernels::HostTensor::zeros(DataType::kFloat, std::move(dims));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    t.set<float>(i, scale * static_cast<float>((i * 7) % 11) - 2.f);
  }
  return t;
}

// Elementwise device ops in a chain: each output may reuse its input's buffer (in place).
inline constexpr const char* kChain = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,8] x) => (float[N,8] y) {
  a = Tanh(x)
  b = Relu(a)
  c = Neg(b)
  y = Sigmoid(c)
}
)";

// NonZero (its output's size is data-dependent) between device ops: the dynamic nodes run on the
// CPU, shaped by their reference kernel; the static ReduceSum output they feed goes back into the
// arena for the device Add. The plan is eager (no CUDA graph) and the results match at two inputs
// with different numbers of non-zeros.
inline constexpr const char* kNonZero = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[6] x) => (float[6] y, int64[1,?] nz) {
  h = Relu(x)
  nz = NonZero(h)
  f = Cast<to = 1>(nz)
  s = ReduceSum<keepdims = 0>(f)
  y = Add(h, s)
}
)";

// A Reshape whose target shape is computed at run time from an input (not a constant): the
// Reshape and what reads it are shaped at run time.
inline constexpr const char* kRuntimeReshape = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x, int64[2] k) => (float[?,?] y, float[N,4] z) <int64[2] one = {1, 1}> {
  z = Tanh(x)
  t = Mul(k, one)
  r = Reshape(z, t)
  y = Sigmoid(r)
}
)";

inline kernels::HostTensor boolScalar(bool v) {
  kernels::HostTensor t = kernels::HostTensor::zeros(DataType::kBool, {});
  t.set<uint8_t>(0, v ? 1 : 0);
  return t;
}

inline kernels::HostTensor int64Scalar(int64_t v) {
  kernels::HostTensor t = kernels::HostTensor::zeros(DataType::kInt64, {});
  t.set<int64_t>(0, v);
  return t;
}

// An If whose branches read an outer device value (h) and a weight (b), and a device op after it:
// the If runs on the CPU through the reference executor's interpreter, with h copied down.
inline constexpr const char* kIf = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x, bool c) => (float[N,4] y) <float[4] b = {1, 2, 3, 4}> {
  h = Relu(x)
  r = If(c) <
    then_branch = g1 () => (float[N,4] t) { t = Add(h, b) },
    else_branch = g2 () => (float[N,4] e) { e = Neg(h) }
  >
  y = Sigmoid(r)
}
)";

// A Loop with a run-time trip count carrying a device value, with a scan output (its length is
// the trip count: shaped at run time), then a device op on the carried value.
inline constexpr const char* kLoop = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x, int64 n) => (float[N,4] y, float[?,N,4] s) {
  h = Tanh(x)
  t = Constant <value = bool {1}> ()
  v, s = Loop(n, t, h) <
    body = body (int64 i, bool cin, float[N,4] a) => (bool cout, float[N,4] aout, float[N,4] sc) {
      cout = Identity(cin)
      aout = Mul(a, a)
      sc = Neg(a)
    }
  >
  y = Relu(v)
}
)";

// Sequence and optional values on the host between device ops: SequenceConstruct, SequenceAt,
// ConcatFromSequence, Optional, OptionalHasElement, OptionalGetElement.
inline constexpr const char* kSequenceOptional = R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[2,3] x) => (float[4,3] y, bool has, float[2,3] z) <int64 one = {1}> {
  a = Relu(x)
  b = Neg(x)
  q = SequenceConstruct(a, b)
  e = SequenceAt(q, one)
  c = ConcatFromSequence<axis = 0>(q)
  y = Sigmoid(c)
  o = Optional(e)
  has = OptionalHasElement(o)
  g = OptionalGetElement(o)
  z = Tanh(g)
}
)";

// A 2^36-float intermediate (256 GiB, more than any device has) read by a device node (Relu):
// preparing its plan must fail allocating the arena, before any node (the host Expand) runs.
inline constexpr const char* kHugeIntermediate = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] x) => (float[1] y) <int64[1] big = {68719476736}> {
  e = Expand(x, big)
  r = Relu(e)
  y = ReduceMax<keepdims = 1>(r)
}
)";

/// `text` parsed, with inferred types (what the executor plans from); nullptr on failure.
inline std::unique_ptr<ir::Model> parseInferred(const std::string& text) {
  auto model = io::parseModelText(text);
  EXPECT_TRUE(model.isOk()) << model.status().toString();
  if (!model.isOk()) return nullptr;
  auto st = ir::inferShapes(**model);
  EXPECT_TRUE(st.isOk()) << st.status().toString();
  return st.isOk() ? std::move(model).value() : nullptr;
}

/// Small models that plan for the CUDA device without run-time shapes or subgraph fallbacks.
inline const std::vector<std::string>& cudaTestModels() {
  static const std::vector<std::string> models = {
      "models/tiny_cnn/model.onnx",
      "models/tiny_unet/model.onnx",
      "models/tiny_quant/model.onnx",
      "models/speech_rnn/model.onnx",
      "models/transformers/bert_legacy/model.onnx",
      "models/transformers/gpt2_legacy/model.onnx",
  };
  return models;
}

}  // namespace onnxopt::runtime::test
