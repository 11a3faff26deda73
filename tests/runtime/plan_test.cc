// The lowering (runtime/plan.h) and the plan cache (runtime/plan_cache.h): shapes resolved for
// concrete inputs, placements under a fake device that claims a chosen op set, explicit copies,
// views and in-place reuse, dynamic values, input errors, and the arena's invariants on real
// models, whose planned dims are checked against what the reference executor computes.
#include "onnxopt/runtime/plan.h"

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "../../src/runtime/plan/dim_eval.h"
#include "model_feeds.h"
#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/runtime/inputs.h"
#include "onnxopt/runtime/memory_planner.h"
#include "onnxopt/runtime/plan_cache.h"
#include "onnxopt/runtime/reference_executor.h"
#include "test_models.h"

namespace onnxopt::runtime {
namespace {

/// A device that runs exactly the ops it is given.
class FakeDevice final : public kernels::Capabilities {
 public:
  explicit FakeDevice(std::set<std::string> ops) : ops_(std::move(ops)) {}
  const char* name() const override { return "fake"; }
  kernels::Support supports(const kernels::OpQuery& q) const override {
    if (ops_.count(q.op)) return kernels::Support::yes();
    return kernels::Support::no("fake device has no " + q.op);
  }

 private:
  std::set<std::string> ops_;
};

const FakeDevice& everything() {
  static const FakeDevice device({"Add",
                                  "Sub",
                                  "Mul",
                                  "Div",
                                  "Relu",
                                  "Exp",
                                  "Sigmoid",
                                  "Tanh",
                                  "MatMul",
                                  "Gemm",
                                  "Conv",
                                  "MaxPool",
                                  "AveragePool",
                                  "GlobalAveragePool",
                                  "BatchNormalization",
                                  "Softmax",
                                  "LayerNormalization",
                                  "Transpose",
                                  "Concat",
                                  "Gather",
                                  "Slice",
                                  "Expand",
                                  "Cast",
                                  "Where",
                                  "Equal",
                                  "Pow",
                                  "Sqrt",
                                  "ReduceMean",
                                  "Erf",
                                  "Tile",
                                  "ConstantOfShape",
                                  "Range",
                                  "Split",
                                  "Neg",
                                  "Less",
                                  "Greater",
                                  "Not",
                                  "And",
                                  "Trilu",
                                  "Cos",
                                  "Sin",
                                  "Clip"});
  return device;
}

std::unique_ptr<ir::Model> parseInferred(const std::string& text) {
  auto model = test::parse(text);
  if (model == nullptr) return nullptr;
  auto st = ir::inferShapes(*model);
  EXPECT_TRUE(st.isOk()) << st.status().toString();
  return model;
}

/// The summary tells what runs: its counts per placement are those of the nodes the steps run
/// (each node once) and of the folded ones (no step), and it names each fallback with its reason.
void expectSummaryIsWhatRuns(const Plan& plan) {
  std::map<Placement, int64_t> ran;
  std::vector<int> steps_of(plan.nodes.size(), 0);
  for (const Step& st : plan.steps) {
    if (st.kind != Step::Kind::kNode) continue;
    ++steps_of[static_cast<size_t>(st.node)];
    ++ran[plan.nodes[static_cast<size_t>(st.node)].placement];
  }
  int64_t folded = 0;
  std::string summary = plan.summary();
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlannedNode& n = plan.nodes[i];
    EXPECT_EQ(steps_of[i], n.folded ? 0 : 1) << n.name;
    if (n.folded) {
      ++folded;
      ++ran[n.placement];
    }
    if (n.placement == Placement::kCpuFallback) {
      EXPECT_NE(summary.find("fallback: " + n.name + ": " + n.fallback_reason + "\n"),
                std::string::npos)
          << summary;
    }
  }
  std::string head = "plan: " + std::to_string(plan.nodes.size()) +
                     " nodes: " + std::to_string(ran[Placement::kDevice]) + " device, " +
                     std::to_string(ran[Placement::kHost]) + " host (" + std::to_string(folded) +
                     " folded), " + std::to_string(ran[Placement::kCpuFallback]) +
                     " cpu-fallback, " + std::to_string(ran[Placement::kView]) + " view;";
  EXPECT_EQ(summary.rfind(head, 0), 0u) << summary;
}

Plan planOf(const ir::Model& model, const InputShapes& shapes,
            const kernels::Capabilities& device = everything(), PlanOptions options = {}) {
  auto plan = buildPlan(model, shapes, device, options);
  EXPECT_TRUE(plan.isOk()) << plan.status().toString();
  if (!plan.isOk()) return Plan{};
  expectSummaryIsWhatRuns(*plan);
  return std::move(plan).value();
}

const PlannedValue* valueNamed(const Plan& plan, const std::string& name) {
  for (const PlannedValue& v : plan.values) {
    if (v.name == name) return &v;
  }
  ADD_FAILURE() << "no value " << name;
  return nullptr;
}

const PlannedNode* nodeProducing(const Plan& plan, const std::string& name) {
  for (const PlannedNode& n : plan.nodes) {
    for (int id : n.outputs) {
      if (id >= 0 && plan.values[static_cast<size_t>(id)].name == name) return &n;
    }
  }
  ADD_FAILURE() << "no node producing " << name;
  return nullptr;
}

/// Every value's root buffer and the steps during which the buffer is used.
struct BufferUse {
  int root;
  int64_t first, last;
};

/// The arena invariants: two values on different buffers whose lifetimes overlap share no byte;
/// every buffer lies inside its arena; views and in-place outputs carry their base's offset.
void expectValidMemory(const Plan& plan) {
  auto rootOf = [&](int id) {
    while (plan.values[static_cast<size_t>(id)].base >= 0) {
      id = plan.values[static_cast<size_t>(id)].base;
    }
    return id;
  };
  std::vector<int64_t> first(plan.values.size(), -1), last(plan.values.size(), -1);
  auto touch = [&](int id, int64_t s) {
    if (id < 0) return;
    int r = rootOf(id);
    for (int v : {id, r}) {
      auto i = static_cast<size_t>(v);
      if (first[i] < 0 || s < first[i]) first[i] = s;
      last[i] = std::max(last[i], s);
    }
  };
  auto end = static_cast<int64_t>(plan.steps.size());
  for (int64_t s = 0; s < end; ++s) {
    const Step& st = plan.steps[static_cast<size_t>(s)];
    if (st.kind != Step::Kind::kNode) {
      touch(st.src, s);
      touch(st.dst, s);
      continue;
    }
    const PlannedNode& n = plan.nodes[static_cast<size_t>(st.node)];
    EXPECT_FALSE(n.folded) << n.name << " is folded but has a step";
    for (int id : n.inputs) touch(id, s);
    for (int id : n.outputs) touch(id, s);
    for (int id : n.implicit_inputs) touch(id, s);
  }
  for (int id : plan.outputs) touch(id, end);
  int64_t intermediates = 0;
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const PlannedValue& v = plan.values[i];
    if (v.dynamic || (v.location != Location::kArena && v.location != Location::kHost)) continue;
    int r = rootOf(static_cast<int>(i));
    EXPECT_EQ(v.offset, plan.values[static_cast<size_t>(r)].offset) << v.name;
    if (first[i] < 0) continue;
    EXPECT_GE(v.offset, 0) << v.name;
    int64_t limit = v.location == Location::kArena ? plan.arena_bytes : plan.host_arena_bytes;
    EXPECT_LE(v.offset + v.bytes, limit) << v.name;
    for (size_t j = i + 1; j < plan.values.size(); ++j) {
      const PlannedValue& w = plan.values[j];
      if (w.dynamic || w.location != v.location || first[j] < 0) continue;
      if (rootOf(static_cast<int>(j)) == r || v.bytes == 0 || w.bytes == 0) continue;
      auto ri = static_cast<size_t>(r), rj = static_cast<size_t>(rootOf(static_cast<int>(j)));
      if (last[ri] < first[rj] || last[rj] < first[ri]) continue;
      bool disjoint = v.offset + v.bytes <= w.offset || w.offset + w.bytes <= v.offset;
      EXPECT_TRUE(disjoint) << v.name << " and " << w.name << " are live together and overlap";
    }
    if (v.location == Location::kArena && v.base < 0) intermediates += alignedBytes(v.bytes);
  }
  EXPECT_LE(plan.arena_bytes, plan.intermediate_bytes);
  EXPECT_GE(plan.intermediate_bytes, intermediates);
}

// --- shapes -----------------------------------------------------------------------------------

constexpr const char* kReshapeChain = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,2,2] y) <int64[1] zero = {0}, int64[2] tail = {2, 2}> {
  s = Shape(x)
  n = Gather(s, zero)
  t = Concat<axis = 0>(n, tail)
  r = Reshape(x, t)
  y = Relu(r)
}
)";

TEST(Plan, ShapeSubgraphIsFoldedAndReshapeIsAView) {
  auto model = parseInferred(kReshapeChain);
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {3, 4}}}});
  const PlannedValue* t = valueNamed(plan, "t");
  ASSERT_TRUE(t && t->host_value);
  EXPECT_EQ(t->location, Location::kConstant);
  std::vector<int64_t> target;
  for (int64_t i = 0; i < 3; ++i) target.push_back(t->host_value->get<int64_t>(i));
  EXPECT_EQ(target, (std::vector<int64_t>{3, 2, 2}));
  for (const char* name : {"s", "n", "t"}) {
    const PlannedNode* n = nodeProducing(plan, name);
    ASSERT_TRUE(n);
    EXPECT_EQ(n->placement, Placement::kHost) << name;
    EXPECT_TRUE(n->folded) << name;
  }
  const PlannedNode* reshape = nodeProducing(plan, "r");
  ASSERT_TRUE(reshape);
  EXPECT_EQ(reshape->placement, Placement::kView);
  const PlannedValue* r = valueNamed(plan, "r");
  EXPECT_EQ(r->dims, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(plan.values[static_cast<size_t>(r->base)].name, "x");
  EXPECT_EQ(r->location, Location::kInput);
  EXPECT_EQ(valueNamed(plan, "y")->dims, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(nodeProducing(plan, "y")->placement, Placement::kDevice);
  // Only the Reshape (a view, no kernel) and the Relu run: the shape arithmetic was folded.
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.arena_bytes, alignedBytes(3 * 4 * 4));
  EXPECT_EQ(plan.weight_bytes, 0);  // the shape constants are never uploaded
  expectValidMemory(plan);
}

TEST(Plan, SameModelAtAnotherBatch) {
  auto model = parseInferred(kReshapeChain);
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {7, 4}}}});
  EXPECT_EQ(valueNamed(plan, "y")->dims, (std::vector<int64_t>{7, 2, 2}));
  EXPECT_EQ(valueNamed(plan, "y")->bytes, 7 * 4 * 4);
}

// Weights are named by handle (their place among the graph's initializers), the same in every
// plan of the model, and their data comes from the plan's PlanHost: an executor reads no IR.
TEST(Plan, WeightsAreHandlesThePlanHostReads) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) <float[4] a = {1, 2, 3, 4}, float[4] b = {5, 6, 7, 8}> {
  t = Add(x, b)
  y = Mul(t, a)
}
)");
  ASSERT_TRUE(model);
  PlanOptions options;
  options.max_host_elements = 0;  // no host copy in the plan: the data comes from the host
  Plan two = planOf(*model, {{"x", {DataType::kFloat, {2, 4}}}}, everything(), options);
  Plan five = planOf(*model, {{"x", {DataType::kFloat, {5, 4}}}}, everything(), options);
  ASSERT_NE(two.host, nullptr);
  for (const char* name : {"a", "b"}) {
    const PlannedValue* v = valueNamed(two, name);
    ASSERT_NE(v, nullptr);
    EXPECT_FALSE(v->host_value) << name;
    EXPECT_GE(v->weight, 0) << name;
    EXPECT_EQ(valueNamed(five, name)->weight, v->weight) << name;
    auto data = two.host->weightData(v->weight);
    ASSERT_TRUE(data.isOk()) << data.status().toString();
    EXPECT_EQ(data->dims, (std::vector<int64_t>{4}));
    EXPECT_EQ(data->get<float>(0), name[0] == 'a' ? 1.f : 5.f);
  }
  EXPECT_NE(valueNamed(two, "a")->weight, valueNamed(two, "b")->weight);
  EXPECT_EQ(valueNamed(two, "x")->weight, -1);
  EXPECT_EQ(valueNamed(two, "t")->weight, -1);
  EXPECT_FALSE(two.host->weightData(7).isOk());
}

TEST(Plan, UnnamedInputDimsResolveThroughHostEvaluation) {
  // x's first dim has no name: inference knows nothing of it, but Shape(x) is concrete when
  // planning, so the Reshape target is too, and the Relu after it.
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[?,4] x) => (float[?,2,2] y) <int64[1] zero = {0}, int64[2] tail = {2, 2}> {
  s = Shape(x)
  n = Gather(s, zero)
  t = Concat<axis = 0>(n, tail)
  r = Reshape(x, t)
  y = Relu(r)
}
)");
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {3, 4}}}});
  EXPECT_EQ(valueNamed(plan, "r")->dims, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_EQ(valueNamed(plan, "y")->dims, (std::vector<int64_t>{3, 2, 2}));
  EXPECT_FALSE(plan.has_dynamic) << plan.summary();
}

TEST(Plan, SymbolicExpressionsEvaluate) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[B,S] a, float[B,T] b) => (float[B,?] c, float[B,?] d) {
  c = Concat<axis = 1>(a, b)
  d = Concat<axis = 1>(c, a)
}
)");
  Plan plan =
      planOf(*model, {{"a", {DataType::kFloat, {2, 3}}}, {"b", {DataType::kFloat, {2, 5}}}});
  EXPECT_EQ(valueNamed(plan, "c")->dims, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(valueNamed(plan, "d")->dims, (std::vector<int64_t>{2, 11}));
  EXPECT_FALSE(plan.has_dynamic);
}

TEST(DimEval, CanonicalTextEvaluates) {
  plan_detail::Bindings b = {{"N", 3}, {"S", 5}, {"L", 7}, {"seq-len", 4}};
  using plan_detail::evalExprText;
  EXPECT_EQ(evalExprText("2*N*S + N + 1", b), 34);
  EXPECT_EQ(evalExprText("-N + 5", b), 2);
  EXPECT_EQ(evalExprText("N*N - S", b), 4);
  EXPECT_EQ(evalExprText("floor(L/2)", b), 3);
  EXPECT_EQ(evalExprText("floor(-L/2)", b), -4);
  EXPECT_EQ(evalExprText("mod(L, 4)", b), 3);
  EXPECT_EQ(evalExprText("min(N, S) + max(N, S)", b), 8);
  EXPECT_EQ(evalExprText("floor(L + 1/N)", b), 2);
  EXPECT_EQ(evalExprText("seq-len*2", b), 8);
  EXPECT_EQ(evalExprText("unbound + 1", b), std::nullopt);
  EXPECT_EQ(evalExprText("floor(N/0)", {{"N", 1}}), std::nullopt);
  EXPECT_EQ(evalExprText("N*N*N", {{"N", int64_t{1} << 40}}), std::nullopt);
  EXPECT_EQ(evalExprText("N +", b), std::nullopt);
}

TEST(Plan, UnnamedDimsResolveByTheNodesOwnInference) {
  // Every input dim is unnamed, so the model's inference leaves them open; the plan infers each
  // node alone on its inputs' concrete dims and known data. MatMul, Transpose, Slice and Conv had
  // no rule in the lowering before it used the IR's inference.
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[?,?,?] x, bool[?,?] m) => (float[?,?,?] add, float[?,?,?] sel, float[?,?,?] ex,
    float[?,?,?] cos, float[?,?,?] tile, float[?,?,?] top, float[?,?,?] cat, float[?,?,?] rs,
    float[?,?,?] re, float[?,?,?] mm, float[?,?,?] tr, float[?,?,?] sl, float[?,?,?,?] cv,
    float[?,?,?] sm)
  <float[3,1] b = {1,2,3}, int64[1] k = {3}, int64[3] target = {0,-1,2}, float[3] scales = {1,1,2.5},
   float[4,5] w = {1,1,1,1,1, 1,1,1,1,1, 1,1,1,1,1, 1,1,1,1,1}, int64[1] one = {1},
   int64[1] two = {2}, int64[1] axis = {2}, float[1,1,1,1] kern = {1}> {
  s = Shape(x)
  add = Add(x, b)
  sel = Where(m, x, b)
  ex = Expand(b, s)
  cos = ConstantOfShape(s)
  tile = Tile(x, s)
  top, idx = TopK<axis = 2>(x, k)
  cat = Concat<axis = -1>(x, x)
  rs = Reshape(x, target)
  re = Resize(x, , scales)
  mm = MatMul(x, w)
  tr = Transpose<perm = [2, 0, 1]>(x)
  sl = Slice(x, one, two, axis)
  x4 = Unsqueeze(x, one)
  cv = Conv(x4, kern)
  sm = Softmax(x)
}
)");
  ASSERT_NE(model, nullptr);
  Plan plan =
      planOf(*model, {{"x", {DataType::kFloat, {2, 1, 4}}}, {"m", {DataType::kBool, {3, 1}}}});
  using Dims = std::vector<int64_t>;
  std::map<std::string, Dims> expected = {
      {"add", {2, 3, 4}},   {"sel", {2, 3, 4}},   {"ex", {2, 3, 4}},  {"cos", {2, 1, 4}},
      {"tile", {4, 1, 16}}, {"top", {2, 1, 3}},   {"idx", {2, 1, 3}}, {"cat", {2, 1, 8}},
      {"rs", {2, 2, 2}},    {"re", {2, 1, 10}},   {"mm", {2, 1, 5}},  {"tr", {4, 2, 1}},
      {"sl", {2, 1, 1}},    {"cv", {2, 1, 1, 4}}, {"sm", {2, 1, 4}}};
  for (const auto& [name, dims] : expected) {
    const PlannedValue* v = valueNamed(plan, name);
    ASSERT_NE(v, nullptr);
    EXPECT_FALSE(v->dynamic) << name;
    EXPECT_EQ(v->dims, dims) << name;
  }
  EXPECT_FALSE(plan.has_dynamic) << plan.summary();
}

// --- placements and copies ----------------------------------------------------------------------

constexpr const char* kMlp = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (float[N,4] y) <float[4,4] w = {1,0,0,0, 0,1,0,0, 0,0,1,0, 0,0,0,1}> {
  h = MatMul(x, w)
  a = Tanh(h)
  y = Relu(a)
}
)";

TEST(Plan, UnsupportedOpFallsBackWithCopiesAsSteps) {
  auto model = parseInferred(kMlp);
  FakeDevice device({"MatMul", "Relu"});
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {2, 4}}}}, device);
  const PlannedNode* tanh = nodeProducing(plan, "a");
  ASSERT_TRUE(tanh);
  EXPECT_EQ(tanh->placement, Placement::kCpuFallback);
  EXPECT_EQ(tanh->fallback_reason, "fake device has no Tanh");
  // MatMul, copy h to the host, Tanh, copy a back, Relu.
  ASSERT_EQ(plan.steps.size(), 5u);
  EXPECT_EQ(plan.steps[1].kind, Step::Kind::kCopyToHost);
  EXPECT_EQ(plan.values[static_cast<size_t>(plan.steps[1].src)].name, "h");
  EXPECT_EQ(plan.values[static_cast<size_t>(plan.steps[1].dst)].location, Location::kHost);
  EXPECT_EQ(plan.steps[3].kind, Step::Kind::kCopyToDevice);
  EXPECT_EQ(tanh->inputs[0], plan.steps[1].dst);  // the fallback reads the host copy
  const PlannedNode* relu = nodeProducing(plan, "y");
  EXPECT_EQ(relu->inputs[0], plan.steps[3].dst);
  EXPECT_EQ(valueNamed(plan, "a")->location, Location::kHost);
  EXPECT_EQ(valueNamed(plan, "w")->upload, true);
  EXPECT_EQ(plan.weight_bytes, 64);
  EXPECT_GT(plan.host_arena_bytes, 0);
  std::string summary = plan.summary();
  EXPECT_NE(summary.find("1 cpu-fallback"), std::string::npos) << summary;
  EXPECT_NE(summary.find("fallback: node Tanh producing 'a': fake device has no Tanh"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("weights 64 bytes"), std::string::npos) << summary;
  expectValidMemory(plan);
}

TEST(Plan, KernelRefusalAtTheseShapesIsDecidedWhenPlanning) {
  // The device's capabilities admit Tanh, but its kernel takes at most 8 elements: at batch 1
  // Tanh runs on the device, at batch 4 on the CPU, and the plan (its summary) says so.
  auto model = parseInferred(kMlp);
  PlanOptions options;
  options.check_node = [](const Plan& plan, const PlannedNode& pn) {
    for (const std::vector<int>* ids : {&pn.inputs, &pn.outputs}) {
      for (int id : *ids) {
        for (int64_t d : plan.values[static_cast<size_t>(id)].dims) EXPECT_GE(d, 0) << pn.name;
      }
    }
    const PlannedValue& out = plan.values[static_cast<size_t>(pn.outputs[0])];
    if (pn.op == "Tanh" && out.bytes > 8 * 4) return kernels::Support::no("Tanh: at most 8");
    return kernels::Support::yes();
  };
  Plan small = planOf(*model, {{"x", {DataType::kFloat, {1, 4}}}}, everything(), options);
  EXPECT_EQ(nodeProducing(small, "a")->placement, Placement::kDevice);
  EXPECT_EQ(small.countPlacement(Placement::kCpuFallback), 0) << small.summary();

  Plan big = planOf(*model, {{"x", {DataType::kFloat, {4, 4}}}}, everything(), options);
  const PlannedNode* tanh = nodeProducing(big, "a");
  ASSERT_NE(tanh, nullptr);
  EXPECT_EQ(tanh->placement, Placement::kCpuFallback);
  EXPECT_EQ(tanh->fallback_reason, "Tanh: at most 8");
  EXPECT_NE(big.summary().find("Tanh: at most 8"), std::string::npos) << big.summary();
  EXPECT_EQ(valueNamed(big, "a")->location, Location::kHost);
  int64_t copies = 0;
  for (const Step& st : big.steps) copies += st.kind != Step::Kind::kNode;
  EXPECT_EQ(copies, 2) << big.summary();  // h down to the host, a up for Relu
  expectValidMemory(big);
}

TEST(Plan, EverythingOnTheDeviceNeedsNoCopies) {
  auto model = parseInferred(kMlp);
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {2, 4}}}});
  EXPECT_EQ(plan.countPlacement(Placement::kDevice), 3);
  for (const Step& s : plan.steps) EXPECT_EQ(s.kind, Step::Kind::kNode);
  EXPECT_EQ(plan.host_arena_bytes, 0);
}

TEST(Plan, ShapeArithmeticIsEvaluatedWhenPlanning) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N] x) => (int64[1] m) <int64[1] one = {1}> {
  s = Shape(x)
  m = Add(s, one)
}
)");
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {5}}}});
  const PlannedNode* add = nodeProducing(plan, "m");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->placement, Placement::kHost);
  EXPECT_TRUE(add->folded);
  EXPECT_EQ(valueNamed(plan, "m")->host_value->get<int64_t>(0), 6);
  EXPECT_TRUE(plan.steps.empty());
}

TEST(Plan, HostNodeOverARunTimeHostValue) {
  // The fallback's int64 output is host data at run time: the Mul on it stays on the host and
  // is not folded.
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (int64[2] k) => (int64[2] m) <int64[2] two = {2, 2}> {
  a = Neg(k)
  m = Mul(a, two)
}
)");
  FakeDevice device({});
  Plan plan = planOf(*model, {{"k", {DataType::kInt64, {2}}}}, device);
  EXPECT_EQ(nodeProducing(plan, "a")->placement, Placement::kCpuFallback);
  const PlannedNode* mul = nodeProducing(plan, "m");
  EXPECT_EQ(mul->placement, Placement::kHost);
  EXPECT_FALSE(mul->folded);
  EXPECT_EQ(valueNamed(plan, "m")->location, Location::kHost);
  // k is copied to the host once, for the fallback; nothing goes back to the device.
  int copies = 0;
  for (const Step& s : plan.steps) copies += s.kind != Step::Kind::kNode;
  EXPECT_EQ(copies, 1);
  expectValidMemory(plan);
}

// --- views and in-place -------------------------------------------------------------------------

TEST(Plan, ElementwiseChainRunsInPlace) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[64] x) => (float[64] y) {
  s = Sigmoid(x)
  e = Exp(s)
  y = Relu(e)
}
)");
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {64}}}});
  const PlannedValue* s = valueNamed(plan, "s");
  EXPECT_LT(s->base, 0);  // x is a graph input: never overwritten
  EXPECT_EQ(plan.values[static_cast<size_t>(valueNamed(plan, "e")->base)].name, "s");
  EXPECT_EQ(plan.values[static_cast<size_t>(valueNamed(plan, "y")->base)].name, "s");
  EXPECT_EQ(nodeProducing(plan, "e")->in_place_input, 0);
  EXPECT_EQ(plan.arena_bytes, 256);
  EXPECT_EQ(plan.intermediate_bytes, 3 * 256);
  EXPECT_NE(plan.summary().find("arena 256 bytes, intermediates 768 bytes (saved 67%)"),
            std::string::npos)
      << plan.summary();
  expectValidMemory(plan);

  PlanOptions no_reuse;
  no_reuse.in_place = false;
  Plan separate = planOf(*model, {{"x", {DataType::kFloat, {64}}}}, everything(), no_reuse);
  EXPECT_EQ(separate.arena_bytes, 2 * 256);  // a chain still needs two buffers
  expectValidMemory(separate);
}

// An optional output nothing reads (LayerNormalization's Mean and InvStdDev here) is planned
// absent on a device that runs the node: no value, no buffer, and the kernel is handed none.
// One that a later node reads, or a graph output, stays; so does every output of a node the
// device falls back on (the fallback's kernels write what the node has).
TEST(Plan, UnreadOptionalOutputsAreNotPlanned) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4, 8] x, float[8] scale, float[8] b) => (float[4, 8] y, float[4, 1] inv) {
  y, mean, inv = LayerNormalization(x, scale, b)
}
)");
  ASSERT_NE(model, nullptr);
  InputShapes shapes = {{"x", {DataType::kFloat, {4, 8}}},
                        {"scale", {DataType::kFloat, {8}}},
                        {"b", {DataType::kFloat, {8}}}};
  Plan plan = planOf(*model, shapes);
  const PlannedNode* ln = nodeProducing(plan, "y");
  ASSERT_NE(ln, nullptr);
  ASSERT_EQ(ln->outputs.size(), 3u);
  EXPECT_EQ(ln->outputs[1], -1);  // mean: read by nothing
  ASSERT_GE(ln->outputs[2], 0);   // inv: a graph output
  EXPECT_EQ(plan.values[static_cast<size_t>(ln->outputs[2])].name, "inv");
  for (const PlannedValue& v : plan.values) EXPECT_NE(v.name, "mean");
  expectValidMemory(plan);

  Plan fallback = planOf(*model, shapes, FakeDevice({}));
  const PlannedNode* cpu = nodeProducing(fallback, "y");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->placement, Placement::kCpuFallback);
  EXPECT_GE(cpu->outputs[1], 0);
}

// A value named in shaped_at_run_time (its declared dims a run contradicted) is planned with
// nothing assumed of its dims, and so is its consumer; without the option both are static.
TEST(Plan, ShapedAtRunTimeDropsTheDeclaredDims) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,3] x) => (float[2,3] y) {
  a = Relu(x)
  y = Neg(a)
}
)");
  InputShapes shapes = {{"x", {DataType::kFloat, {2, 3}}}};
  Plan trusted = planOf(*model, shapes);
  ASSERT_NE(valueNamed(trusted, "a"), nullptr);
  EXPECT_FALSE(valueNamed(trusted, "a")->dynamic);
  EXPECT_FALSE(trusted.has_dynamic);
  PlanOptions options;
  options.shaped_at_run_time = {"a"};
  Plan plan = planOf(*model, shapes, everything(), options);
  const PlannedValue* a = valueNamed(plan, "a");
  const PlannedValue* y = valueNamed(plan, "y");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(y, nullptr);
  EXPECT_TRUE(a->dynamic);
  EXPECT_FALSE(a->rank_known);
  EXPECT_TRUE(plan.has_dynamic);
  EXPECT_NE(plan.summary().find("dynamic: node Neg producing 'y'"), std::string::npos)
      << plan.summary();
}

TEST(Plan, InPlaceOnlyWhereLegal) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[64] x, float[1] b) => (float[64] y, float[64] o) <int64[2] shape = {8, 8}> {
  a = Sigmoid(x)
  e = Exp(a)
  v = Reshape(a, shape)
  f = Add(e, b)
  g1 = Relu(v)
  o = Sigmoid(f)
  y = Exp(o)
}
)");
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {64}}}, {"b", {DataType::kFloat, {1}}}});
  // a is read again through its view v after Exp: e needs its own buffer.
  EXPECT_LT(valueNamed(plan, "e")->base, 0);
  EXPECT_EQ(nodeProducing(plan, "v")->placement, Placement::kView);
  // Add(e, b): e dies here and has the output's size; b is a graph input.
  EXPECT_EQ(nodeProducing(plan, "f")->in_place_input, 0);
  // o is a graph output: Exp(o) must not overwrite it.
  EXPECT_LT(valueNamed(plan, "y")->base, 0);
  EXPECT_EQ(nodeProducing(plan, "y")->in_place_input, -1);
  expectValidMemory(plan);
}

TEST(Plan, BroadcastInputIsNotReused) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x, float[3,4] z) => (float[3,4] y) {
  a = Relu(x)
  y = Add(a, z)
}
)");
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {4}}}, {"z", {DataType::kFloat, {3, 4}}}});
  EXPECT_EQ(nodeProducing(plan, "y")->in_place_input, -1);
  EXPECT_LT(valueNamed(plan, "y")->base, 0);
}

TEST(Plan, ValuesASubgraphReadsLiveUntilItsNode) {
  // a is read only inside the If's branches: it must stay live (and be copied to the host for
  // the fallback If) until the If runs, though no operand names it.
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[64] x, bool c) => (float[64] y, float[64] z) {
  a = Relu(x)
  b = Sigmoid(x)
  z = Exp(b)
  y = If (c) <then_branch = t () => (float[64] t1) { t1 = Exp(a) },
              else_branch = e () => (float[64] e1) { e1 = Neg(a) }>
}
)");
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {64}}}, {"c", {DataType::kBool, {}}}});
  const PlannedNode* if_node = nodeProducing(plan, "y");
  ASSERT_TRUE(if_node);
  EXPECT_EQ(if_node->placement, Placement::kCpuFallback);
  ASSERT_EQ(if_node->implicit_inputs.size(), 1u);
  const PlannedValue& read = plan.values[static_cast<size_t>(if_node->implicit_inputs[0])];
  EXPECT_EQ(read.name, "a@host");
  EXPECT_EQ(read.location, Location::kHost);
  // a lives across Sigmoid and Exp: b and z cannot take its bytes.
  const PlannedValue* a = valueNamed(plan, "a");
  EXPECT_NE(a->offset, valueNamed(plan, "b")->offset);
  EXPECT_NE(a->offset, valueNamed(plan, "z")->offset);
  expectValidMemory(plan);
}

// --- dynamic values -----------------------------------------------------------------------------

TEST(Plan, NonZeroMakesTheRestDynamic) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N] x) => (float[?] y, float[N] z, int64[2] s) <int64[1] minus_one = {-1}> {
  z = Relu(x)
  nz = NonZero(z)
  flat = Reshape(nz, minus_one)
  y = Gather(z, flat)
  s = Shape(nz)
}
)");
  FakeDevice device({"Relu", "NonZero", "Gather"});
  Plan plan = planOf(*model, {{"x", {DataType::kFloat, {6}}}}, device);
  EXPECT_TRUE(plan.has_dynamic);
  const PlannedValue* nz = valueNamed(plan, "nz");
  EXPECT_TRUE(nz->dynamic);
  EXPECT_EQ(nz->dims.size(), 2u);
  EXPECT_EQ(nz->dims[0], 1);  // rank and the known dim are kept
  EXPECT_EQ(nz->dims[1], -1);
  EXPECT_EQ(nz->offset, -1);
  EXPECT_TRUE(nodeProducing(plan, "nz")->dynamic);
  EXPECT_EQ(nodeProducing(plan, "flat")->placement, Placement::kView);
  EXPECT_TRUE(valueNamed(plan, "flat")->dynamic);
  EXPECT_EQ(plan.values[static_cast<size_t>(valueNamed(plan, "flat")->base)].name, "nz");
  EXPECT_TRUE(nodeProducing(plan, "y")->dynamic);
  EXPECT_FALSE(nodeProducing(plan, "z")->dynamic);
  EXPECT_FALSE(valueNamed(plan, "z")->dynamic);
  // The shape of a dynamic value is read when it runs: a host step, reading nz's dims only (no
  // copy of its data).
  const PlannedNode* shape = nodeProducing(plan, "s");
  EXPECT_EQ(shape->placement, Placement::kHost);
  EXPECT_FALSE(shape->folded);
  EXPECT_EQ(valueNamed(plan, "s")->dims, (std::vector<int64_t>{2}));
  EXPECT_FALSE(valueNamed(plan, "s")->dynamic);
  EXPECT_EQ(plan.values[static_cast<size_t>(shape->inputs[0])].name, "nz");
  for (const Step& st : plan.steps) EXPECT_EQ(st.kind, Step::Kind::kNode);
  EXPECT_GE(valueNamed(plan, "z")->offset, 0);
  std::string summary = plan.summary();
  EXPECT_NE(summary.find("dynamic: node NonZero producing 'nz'"), std::string::npos) << summary;
  expectValidMemory(plan);
}

// --- input errors -------------------------------------------------------------------------------

std::string planError(const ir::Model& model, const InputShapes& shapes) {
  auto plan = buildPlan(model, shapes, everything());
  EXPECT_FALSE(plan.isOk());
  return plan.isOk() ? "" : plan.status().message();
}

TEST(Plan, BadInputsAreRefusedBeforePlanning) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x, float[N] b) => (float[N,4] y) {
  y = Relu(x)
}
)");
  const InputShape b3{DataType::kFloat, {3}};
  EXPECT_EQ(planError(*model, {{"b", b3}}), "no shape given for graph input 'x'");
  EXPECT_EQ(planError(*model, {{"x", {DataType::kFloat, {3, 4}}}, {"b", b3}, {"c", b3}}),
            "'c' is not a graph input");
  EXPECT_EQ(planError(*model, {{"x", {DataType::kFloat, {3, 4, 1}}}, {"b", b3}}),
            "input 'x' has rank 2, but dims [3,4,1] were given");
  EXPECT_EQ(planError(*model, {{"x", {DataType::kFloat, {3, 5}}}, {"b", b3}}),
            "input 'x': dim 1 is 4, but 5 was given");
  EXPECT_EQ(planError(*model, {{"x", {DataType::kInt64, {3, 4}}}, {"b", b3}}),
            "input 'x' is float, but int64 was given");
  EXPECT_EQ(planError(*model, {{"x", {DataType::kFloat, {3, 4}}}, {"b", {DataType::kFloat, {2}}}}),
            "input 'b': dim 0 ('N') is 2, but another input binds 'N' to 3");
}

TEST(Plan, FailingHostEvaluationNamesTheNode) {
  auto model = parseInferred(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,4] x) => (int64[1] y) <int64[1] nine = {9}> {
  s = Shape(x)
  y = Gather(s, nine)
}
)");
  std::string message = planError(*model, {{"x", {DataType::kFloat, {2, 4}}}});
  EXPECT_NE(message.find("Gather producing 'y'"), std::string::npos) << message;
}

// --- real models --------------------------------------------------------------------------------

using test::loadInferred;

/// The plan's dims of every static value equal those the reference executor computes.
void expectDimsMatchReference(const ir::Model& model, const Plan& plan, const Feeds& feeds) {
  ExecutionOptions options;
  options.record_intermediates = true;
  auto result = runModel(model, feeds, options);
  ASSERT_TRUE(result.isOk()) << result.status().toString();
  std::map<std::string, std::vector<int64_t>> actual;
  for (const RecordedValue& v : result->intermediates) actual[v.name] = v.value.dims;
  int checked = 0;
  for (const PlannedValue& v : plan.values) {
    auto it = actual.find(v.name);
    if (it == actual.end() || v.dynamic) continue;
    EXPECT_EQ(v.dims, it->second) << v.name;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

InputShapes shapesOf(const Feeds& feeds) {
  InputShapes shapes;
  for (const auto& [name, t] : feeds) shapes[name] = {t.dtype, t.dims};
  return shapes;
}

TEST(PlanRealModels, TinyCnnBatchTwo) {
  auto model = loadInferred("models/tiny_cnn/model.onnx");
  ASSERT_TRUE(model);
  const ir::Value* in = model->graph->inputs()[0];
  InputShapes shapes;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : *in->type().shape) dims.push_back(d.isKnown() ? d.value : 2);
  dims[0] = 2;
  shapes[in->name()] = {in->type().elem_type, dims};
  Plan plan = planOf(*model, shapes);
  EXPECT_FALSE(plan.has_dynamic);
  EXPECT_EQ(plan.countPlacement(Placement::kCpuFallback), 0) << plan.summary();
  EXPECT_GT(plan.countPlacement(Placement::kDevice), 0);
  EXPECT_GT(plan.weight_bytes, 0);
  EXPECT_LT(plan.arena_bytes, plan.intermediate_bytes) << plan.summary();
  expectValidMemory(plan);
  Feeds feeds;
  for (const auto& [name, s] : shapes) {
    feeds[name] = kernels::HostTensor::zeros(s.dtype, s.dims);
  }
  expectDimsMatchReference(*model, plan, feeds);

  // Without Conv on the device, each Conv falls back and says so.
  FakeDevice no_conv({"Relu", "Add", "MaxPool", "GlobalAveragePool", "Gemm", "MatMul"});
  Plan fallback = planOf(*model, shapes, no_conv);
  EXPECT_GT(fallback.countPlacement(Placement::kCpuFallback), 0);
  EXPECT_NE(fallback.summary().find("fake device has no Conv"), std::string::npos)
      << fallback.summary();
  expectValidMemory(fallback);
}

TEST(PlanRealModels, TransformerAtTwoShapes) {
  auto model = loadInferred("models/transformers/bert_legacy/model.onnx");
  ASSERT_TRUE(model);
  for (int64_t seq : {5, 9}) {
    Feeds feeds;
    for (const ir::Value* in : model->graph->inputs()) {
      if (in->initializer() != nullptr) continue;
      std::vector<int64_t> dims;
      for (const ir::Dim& d : *in->type().shape) dims.push_back(d.isKnown() ? d.value : -1);
      if (dims.size() >= 1 && dims[0] < 0) dims[0] = 2;
      if (dims.size() >= 2 && dims[1] < 0) dims[1] = seq;
      for (int64_t& d : dims) d = d < 0 ? 1 : d;
      kernels::HostTensor t = kernels::HostTensor::zeros(in->type().elem_type, dims);
      feeds[in->name()] = std::move(t);  // zeros: valid token ids and a full mask
    }
    Plan plan = planOf(*model, shapesOf(feeds));
    SCOPED_TRACE("seq " + std::to_string(seq) + "\n" + plan.summary());
    EXPECT_FALSE(plan.has_dynamic);
    EXPECT_GT(plan.countPlacement(Placement::kHost), 0);
    EXPECT_LT(plan.arena_bytes, plan.intermediate_bytes);
    expectValidMemory(plan);
    expectDimsMatchReference(*model, plan, feeds);
  }
}

/// Every bundled model plans at seeded random inputs, with a valid arena, and the planned dims of
/// every value equal those the reference executor computes.
class PlanBundledModel : public ::testing::TestWithParam<const char*> {};

TEST_P(PlanBundledModel, DimsMatchTheReferenceExecutor) {
  auto model = loadInferred(GetParam());
  ASSERT_TRUE(model);
  RandomInputOptions options;
  options.seed = 7;
  options.symbolic_dim = 3;
  options.int_ranges = inferIntRanges(*model->graph);
  options.spatial = spatialInputSizes(*model->graph);
  auto inputs = makeInputs(*model->graph, {}, options);
  ASSERT_TRUE(inputs.isOk()) << inputs.status().toString();
  Feeds feeds;
  for (InputValue& in : *inputs) feeds[in.name] = std::move(in.value);
  Plan plan = planOf(*model, shapesOf(feeds));
  SCOPED_TRACE(plan.summary());
  expectValidMemory(plan);
  EXPECT_LE(plan.arena_bytes, plan.intermediate_bytes);
  expectDimsMatchReference(*model, plan, feeds);
}

INSTANTIATE_TEST_SUITE_P(
    Models, PlanBundledModel,
    ::testing::Values(
        "models/tiny_cnn/model.onnx", "models/tiny_unet/model.onnx", "models/tiny_quant/model.onnx",
        "models/speech_rnn/model.onnx", "models/transformers/bert_dynamo/model.onnx",
        "models/transformers/gpt2_legacy/model.onnx", "models/transformers/gpt2_dynamo/model.onnx",
        "models/transformers/llama_legacy/model.onnx",
        "models/transformers/llama_dynamo/model.onnx", "models/transformers/vit_dynamo/model.onnx",
        "models/transformers/mobilenet_legacy/model.onnx"),
    [](const ::testing::TestParamInfo<const char*>& param) {
      std::string name = std::filesystem::path(param.param).parent_path().filename().string();
      return name;
    });

// --- plan cache ---------------------------------------------------------------------------------

/// buildPlan on everything(), its summary checked against its steps when it plans.
StatusOr<Plan> checkedPlan(const ir::Model& model, const InputShapes& shapes) {
  auto plan = buildPlan(model, shapes, everything());
  if (plan.isOk()) expectSummaryIsWhatRuns(*plan);
  return plan;
}

TEST(PlanCache, HitsReuseThePlanAndMissesPlanAgain) {
  auto model = parseInferred(kReshapeChain);
  int builds = 0;
  PlanCache cache(
      [&](const InputShapes& s) {
        ++builds;
        return checkedPlan(*model, s);
      },
      2);
  InputShapes a = {{"x", {DataType::kFloat, {3, 4}}}};
  InputShapes b = {{"x", {DataType::kFloat, {5, 4}}}};
  InputShapes c = {{"x", {DataType::kFloat, {6, 4}}}};
  auto p1 = cache.get(a);
  ASSERT_TRUE(p1.isOk()) << p1.status().toString();
  auto p2 = cache.get(a);
  ASSERT_TRUE(p2.isOk());
  EXPECT_EQ(p1->get(), p2->get());
  EXPECT_EQ(cache.hits(), 1);
  EXPECT_EQ(cache.misses(), 1);
  auto p3 = cache.get(b);
  ASSERT_TRUE(p3.isOk());
  EXPECT_NE(p3->get(), p1->get());
  EXPECT_EQ((*p3)->values.back().dims, (std::vector<int64_t>{5, 2, 2}));
  EXPECT_EQ(cache.misses(), 2);
  // a was used before b: c evicts a (least recently used), and a plans again.
  ASSERT_TRUE(cache.get(b).isOk());
  ASSERT_TRUE(cache.get(c).isOk());
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(builds, 3);
  auto again = cache.get(a);
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(builds, 4);
  EXPECT_EQ(p1->get()->values.size(), (*again)->values.size());  // the old holder keeps its plan
  EXPECT_EQ(cache.hits(), 2);
}

TEST(PlanCache, FailedBuildIsNotCached) {
  auto model = parseInferred(kReshapeChain);
  PlanCache cache([&](const InputShapes& s) { return checkedPlan(*model, s); });
  InputShapes bad = {{"x", {DataType::kFloat, {3, 5}}}};
  EXPECT_FALSE(cache.get(bad).isOk());
  EXPECT_FALSE(cache.get(bad).isOk());
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.capacity(), PlanCache::kDefaultCapacity);
}

TEST(PlanCache, ClearPlansAgainAndKeepsTheCounters) {
  auto model = parseInferred(kReshapeChain);
  int builds = 0;
  PlanCache cache([&](const InputShapes& s) {
    ++builds;
    return checkedPlan(*model, s);
  });
  InputShapes a = {{"x", {DataType::kFloat, {3, 4}}}};
  auto first = cache.get(a);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  cache.clear();
  EXPECT_EQ(cache.size(), 0u);
  auto second = cache.get(a);
  ASSERT_TRUE(second.isOk());
  EXPECT_NE(first->get(), second->get());
  EXPECT_EQ(builds, 2);
  EXPECT_EQ(cache.misses(), 2);
  EXPECT_EQ(cache.hits(), 0);
}

TEST(PlanCache, SignatureCoversDtypeAndDims) {
  EXPECT_EQ(inputSignature({{"x", {DataType::kFloat, {2, 3}}}, {"a", {DataType::kInt64, {}}}}),
            "a:int64[];x:float[2,3];");
  EXPECT_NE(inputSignature({{"x", {DataType::kFloat, {2, 3}}}}),
            inputSignature({{"x", {DataType::kFloat16, {2, 3}}}}));
}

}  // namespace
}  // namespace onnxopt::runtime
