// The recurrent family's host-side checks (kernels/cuda/rnn/rnn.cc), without a GPU: every LSTM/GRU/RNN
// row of ops.def passes canImplement for each claimed type, the output shapes it accepts are the
// reference kernel's (every direction, both layouts), and what it refuses it refuses with a
// reason: other element types, mixed types, int64 sequence_lens, host memory, unknown
// activations, constant sequence lengths out of range, broken attributes and shapes; and
// models/speech_rnn's LSTM and GRU (and tiny_quant's quantize nodes), planned for CUDA, pass it
// as the executor calls them.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/plan.h"
#include "planned_calls.h"

namespace onnxopt::kernels {
namespace {

/// A node's sizes and options; buildCall gives it device views (no memory behind them).
struct Node {
  std::string op = "LSTM";
  int64_t opset = 14;
  DataType dtype = DataType::kFloat;
  int64_t seq = 3, batch = 2, input = 4, hidden = 5;
  std::string direction = "bidirectional";
  int64_t layout = 0;
  KernelAttrs attrs;
};

int64_t gatesOf(const std::string& op) {
  return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
}

/// Host tensors of every input (zeros), sequence_lens int32 of the full length.
std::vector<HostTensor> inputsOf(const Node& n) {
  int64_t d = n.direction == "bidirectional" ? 2 : 1, gh = gatesOf(n.op) * n.hidden;
  bool bf = n.opset >= 14 && n.layout == 1;
  std::vector<int64_t> state =
      bf ? std::vector<int64_t>{n.batch, d, n.hidden} : std::vector<int64_t>{d, n.batch, n.hidden};
  std::vector<HostTensor> in = {
      HostTensor::zeros(n.dtype, bf ? std::vector<int64_t>{n.batch, n.seq, n.input}
                                    : std::vector<int64_t>{n.seq, n.batch, n.input}),
      HostTensor::zeros(n.dtype, {d, gh, n.input}),
      HostTensor::zeros(n.dtype, {d, gh, n.hidden}),
      HostTensor::zeros(n.dtype, {d, 2 * gh}),
      HostTensor::zeros(DataType::kInt32, {n.batch}),
      HostTensor::zeros(n.dtype, state)};
  for (int64_t b = 0; b < n.batch; ++b) in[4].set<int32_t>(b, static_cast<int32_t>(n.seq));
  if (n.op == "LSTM") {
    in.push_back(HostTensor::zeros(n.dtype, state));
    in.push_back(HostTensor::zeros(n.dtype, {d, 3 * n.hidden}));
  }
  return in;
}

KernelAttrs attrsOf(const Node& n) {
  KernelAttrs a = n.attrs;
  a.strings["direction"] = n.direction;
  a.ints["layout"] = n.layout;
  return a;
}

/// The reference kernel's output shapes for the node (float: the reference runs it quickly).
std::vector<std::vector<int64_t>> referenceShapes(const Node& n) {
  Node f = n;
  f.dtype = DataType::kFloat;
  std::vector<HostTensor> in = inputsOf(f);
  std::vector<const HostTensor*> ptrs;
  for (const HostTensor& t : in) ptrs.push_back(&t);
  auto out = runReferenceKernel(n.op, n.opset, ptrs, attrsOf(n), n.op == "LSTM" ? 3 : 2);
  EXPECT_TRUE(out.isOk()) << out.status().toString();
  std::vector<std::vector<int64_t>> dims;
  if (out.isOk()) {
    for (const HostTensor& t : *out) dims.push_back(t.dims);
  }
  return dims;
}

/// A call over views of `in` in device memory (null pointers: canImplement reads no data), with
/// outputs of `out` dims; every input is a constant too, as the executor passes initializers.
struct Call {
  std::vector<HostTensor> in;
  KernelAttrs attrs;
  CudaKernelCall call;

  Call(const Node& n, std::vector<HostTensor> inputs, const std::vector<std::vector<int64_t>>& out)
      : in(std::move(inputs)), attrs(attrsOf(n)) {
    call.op = n.op;
    call.opset = n.opset;
    call.attrs = &attrs;
    for (const HostTensor& t : in) {
      call.inputs.emplace_back(t.dtype, t.dims, contiguousStrides(t.dims), nullptr,
                               MemoryKind::kDevice);
      call.constant_inputs.push_back(&t);
    }
    for (const auto& d : out) {
      call.outputs.emplace_back(n.dtype, d, contiguousStrides(d), nullptr, MemoryKind::kDevice);
    }
  }
  Call(const Call&) = delete;
};

std::string refusal(const Call& c) {
  Support s = cudaCanImplement(c.call);
  EXPECT_FALSE(s) << c.call.op << " was accepted";
  return s.reason;
}

class RnnHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  }
};

TEST_F(RnnHostTest, EveryClaimPassesCanImplement) {
  int checked = 0;
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    if (std::string(row.family) != "Rnn") continue;
    for (DataType t : row.inputs.at(0).types()) {
      Node n;
      n.op = row.op;
      n.opset = row.since;
      n.dtype = t;
      std::vector<HostTensor> in = inputsOf(n);
      std::vector<DataType> types;
      for (const HostTensor& x : in) types.push_back(x.dtype);
      Support q = cudaCapabilities().supports(OpQuery{"", n.op, n.opset, types, {t}});
      EXPECT_TRUE(q) << n.op << ": " << q.reason;
      Call c(n, std::move(in), referenceShapes(n));
      Support s = cudaCanImplement(c.call);
      EXPECT_TRUE(s) << n.op << " opset " << n.opset << " " << dataTypeName(t) << ": " << s.reason;
      auto bytes = cudaWorkspaceBytes(c.call);
      ASSERT_TRUE(bytes.isOk()) << bytes.status().toString();
      EXPECT_GT(*bytes, size_t{0});
      ++checked;
    }
  }
  EXPECT_EQ(checked, 18);  // LSTM, GRU, RNN x two opset ranges x three float types
}

TEST_F(RnnHostTest, OutputShapesAreTheReferences) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (int64_t layout : {0, 1}) {
        for (int64_t opset : {7, 14}) {
          Node n;
          n.op = op;
          n.opset = opset;
          n.direction = dir;
          n.layout = layout;  // ignored before opset 14
          std::vector<std::vector<int64_t>> out = referenceShapes(n);
          ASSERT_FALSE(out.empty());
          {
            Call c(n, inputsOf(n), out);
            Support s = cudaCanImplement(c.call);
            EXPECT_TRUE(s) << op << " " << dir << " layout " << layout << ": " << s.reason;
          }
          // Y with its first two dims swapped: refused, naming Y.
          std::swap(out[0][0], out[0][1]);
          if (out[0][0] == out[0][1]) continue;
          Call c(n, inputsOf(n), out);
          EXPECT_NE(refusal(c).find("Y is ["), std::string::npos) << op << " " << dir;
        }
      }
    }
  }
}

TEST_F(RnnHostTest, OptionalInputsAndOutputsMayBeLeftOut) {
  Node n;
  std::vector<std::vector<int64_t>> out = referenceShapes(n);
  std::vector<HostTensor> in = inputsOf(n);
  in.resize(3);  // X, W, R only
  {
    Call c(n, std::move(in), out);
    EXPECT_TRUE(cudaCanImplement(c.call)) << cudaCanImplement(c.call).reason;
  }
  // B and sequence_lens left out in the middle, Y and Y_c not asked for.
  Call c(n, inputsOf(n), out);
  c.call.inputs[3] = ConstTensorView{};
  c.call.inputs[4] = ConstTensorView{};
  c.call.constant_inputs[3] = nullptr;
  c.call.constant_inputs[4] = nullptr;
  c.call.outputs[0] = TensorView{};
  c.call.outputs[2] = TensorView{};
  EXPECT_TRUE(cudaCanImplement(c.call)) << cudaCanImplement(c.call).reason;
  // sequence_lens computed at run time (not a constant): read on the device, still accepted.
  Call runtime(n, inputsOf(n), out);
  runtime.call.constant_inputs[4] = nullptr;
  EXPECT_TRUE(cudaCanImplement(runtime.call)) << cudaCanImplement(runtime.call).reason;
}

TEST_F(RnnHostTest, RefusesWithAReason) {
  Node n;
  std::vector<std::vector<int64_t>> out = referenceShapes(n);
  {
    Node d = n;
    d.dtype = DataType::kDouble;
    Call c(d, inputsOf(d), out);
    EXPECT_NE(refusal(c).find("LSTM: no CUDA kernel for double"), std::string::npos);
  }
  {
    std::vector<HostTensor> in = inputsOf(n);
    in[1] = HostTensor::zeros(DataType::kFloat16, in[1].dims);
    Call c(n, std::move(in), out);
    EXPECT_NE(refusal(c).find("W is float16, X float"), std::string::npos) << refusal(c);
  }
  {
    std::vector<HostTensor> in = inputsOf(n);
    in[4] = HostTensor::zeros(DataType::kInt64, in[4].dims);
    Call c(n, std::move(in), out);
    EXPECT_NE(refusal(c).find("sequence_lens is int64, not int32"), std::string::npos)
        << refusal(c);
    std::vector<DataType> types(8, DataType::kFloat);
    types[4] = DataType::kInt64;
    EXPECT_FALSE(cudaCapabilities().supports(OpQuery{"", "LSTM", 14, types, {}}));
  }
  {
    Call c(n, inputsOf(n), out);
    c.call.inputs[2].memory = MemoryKind::kHost;
    EXPECT_NE(refusal(c).find("R is in host memory"), std::string::npos) << refusal(c);
  }
  {
    std::vector<HostTensor> in = inputsOf(n);
    in[4].set<int32_t>(1, 4);  // seq is 3
    Call c(n, std::move(in), out);
    EXPECT_NE(refusal(c).find("sequence length 4 outside [0, 3]"), std::string::npos) << refusal(c);
  }
  {
    std::vector<HostTensor> in = inputsOf(n);
    in[1] = HostTensor::zeros(DataType::kFloat, {2, 20, 5});  // input size 4
    Call c(n, std::move(in), out);
    EXPECT_NE(refusal(c).find("W is [2, 20, 5]; the node's sizes make it [2, 20, 4]"),
              std::string::npos)
        << refusal(c);
  }
  {
    Call c(n, inputsOf(n), out);
    c.call.outputs[1].dtype = DataType::kFloat16;
    EXPECT_NE(refusal(c).find("Y_h is float16, X float"), std::string::npos) << refusal(c);
  }
  {
    Call c(n, inputsOf(n), out);
    c.call.outputs[0].strides = {1, 1, 1, 1};
    EXPECT_NE(refusal(c).find("contiguous Y"), std::string::npos) << refusal(c);
  }
}

TEST_F(RnnHostTest, AttributesAreChecked) {
  Node base;
  std::vector<std::vector<int64_t>> out = referenceShapes(base);
  auto reasonWith = [&](const char* what, auto set) {
    Node n = base;
    set(n.attrs);
    Call c(n, inputsOf(n), out);
    SCOPED_TRACE(what);
    return refusal(c);
  };
  EXPECT_NE(reasonWith("activation",
                       [](KernelAttrs& a) {
                         a.string_lists["activations"] = {"Sigmoid", "Gelu", "Tanh"};
                       })
                .find("activation 'Gelu' has no CUDA kernel"),
            std::string::npos);
  EXPECT_NE(reasonWith("activation count",
                       [](KernelAttrs& a) {
                         a.string_lists["activations"] = {"Sigmoid", "Tanh"};
                       })
                .find("2 activations given, 6 expected"),
            std::string::npos);
  EXPECT_NE(reasonWith("hidden_size", [](KernelAttrs& a) { a.ints["hidden_size"] = 6; })
                .find("hidden_size 6 does not match R's last dimension 5"),
            std::string::npos);
  EXPECT_NE(reasonWith("clip", [](KernelAttrs& a) { a.floats["clip"] = 0.0f; })
                .find("clip must be positive"),
            std::string::npos);
  {
    Node n = base;
    Call c(n, inputsOf(n), out);
    c.attrs.strings["direction"] = "sideways";
    EXPECT_NE(refusal(c).find("unknown direction 'sideways'"), std::string::npos);
  }
  // The activations the spec lists, case-insensitive, one direction's list for both.
  Node n = base;
  n.attrs.string_lists["activations"] = {"hardsigmoid", "ScaledTanh", "softplus"};
  n.attrs.float_lists["activation_alpha"] = {0.3f, 0.5f};
  Call c(n, inputsOf(n), out);
  EXPECT_TRUE(cudaCanImplement(c.call)) << cudaCanImplement(c.call).reason;
  // No kernel before opset 7 (LSTM-1 has other attributes).
  Node old = base;
  old.opset = 6;
  Call o(old, inputsOf(old), out);
  EXPECT_NE(refusal(o).find("no CUDA kernel for LSTM at opset 6"), std::string::npos);
}

TEST_F(RnnHostTest, WorkspaceHoldsEveryStepsGates) {
  Node n;
  Call short_seq(n, inputsOf(n), referenceShapes(n));
  n.seq = 300;
  Call long_seq(n, inputsOf(n), referenceShapes(n));
  auto a = cudaWorkspaceBytes(short_seq.call), b = cudaWorkspaceBytes(long_seq.call);
  ASSERT_TRUE(a.isOk() && b.isOk());
  // 297 more steps of X W^T in float (batch 2, 2 directions, 4 gates of 5), less the 256-byte
  // rounding of the short one.
  EXPECT_GE(*b - *a, size_t{297 * 2 * 2 * 20 * 4 - 256});
}

// models/speech_rnn (a bidirectional LSTM and GRU with a run-time sequence_lens, outputs left out):
// planned for the CUDA kernels, each recurrent node's call as the executor builds it (device
// views of the planned values, host data of the constants) passes canImplement, so the model runs
// them on the GPU rather than falling back silently.
TEST_F(RnnHostTest, SpeechRnnRunsItsRecurrentNodesOnTheDevice) {
  auto model = test::loadSourceModel("models/speech_rnn/model.onnx");
  ASSERT_TRUE(model);
  runtime::InputShapes shapes = {{"feats", {DataType::kFloat, {10, 3, 16}}},
                                 {"seq_lens", {DataType::kInt32, {3}}}};
  auto plan = runtime::buildPlan(*model, shapes, cudaCapabilities());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  int checked = 0;
  for (const runtime::PlannedNode& pn : plan->nodes) {
    if (pn.op != "LSTM" && pn.op != "GRU") continue;
    SCOPED_TRACE(pn.name);
    EXPECT_EQ(pn.placement, runtime::Placement::kDevice) << pn.fallback_reason;
    CudaKernelCall call = test::plannedCall(*plan, pn);
    EXPECT_EQ(call.constant_inputs.at(4), nullptr);  // seq_lens: a graph input
    Support s = cudaCanImplement(call);
    EXPECT_TRUE(s) << s.reason;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// models/tiny_quant's QuantizeLinear, DequantizeLinear (per tensor, and per axis on the weights)
// and DynamicQuantizeLinear nodes that the plan puts on the device pass canImplement too.
TEST_F(RnnHostTest, TinyQuantRunsItsQuantizeNodesOnTheDevice) {
  auto model = test::loadSourceModel("models/tiny_quant/model.onnx");
  ASSERT_TRUE(model);
  auto plan =
      runtime::buildPlan(*model, {{"x", {DataType::kFloat, {1, 2, 4, 4}}}}, cudaCapabilities());
  ASSERT_TRUE(plan.isOk()) << plan.status().toString();
  int checked = 0;
  for (const runtime::PlannedNode& pn : plan->nodes) {
    if (pn.op.find("uantizeLinear") == std::string::npos) continue;
    if (pn.placement != runtime::Placement::kDevice) continue;  // folded: constant weights
    SCOPED_TRACE(pn.name);
    Support s = cudaCanImplement(test::plannedCall(*plan, pn));
    EXPECT_TRUE(s) << s.reason;
    ++checked;
  }
  EXPECT_GE(checked, 4) << plan->summary();
}

}  // namespace
}  // namespace onnxopt::kernels
