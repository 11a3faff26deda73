// Host-side checks of the reduction-like CUDA families (Reduce*, ArgMax/ArgMin, CumSum, TopK,
// Range, ConstantOfShape):
// every (row, type) kernels/cuda/ops.def claims passes the family's canImplement at a shape of
// its own, and what the kernels cannot run is refused with a reason naming the op, so that the
// executor runs it on the CPU. Runs without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "../test_tensors.h"
#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels {
namespace {

ConstTensorView deviceInput(DataType t, const std::vector<int64_t>& dims) {
  return ConstTensorView(t, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
}

TensorView deviceOutput(DataType t, const std::vector<int64_t>& dims) {
  return TensorView(t, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice);
}

/// A node and what its call points at (attributes, constant inputs).
struct Node {
  KernelAttrs attrs;
  std::vector<std::unique_ptr<HostTensor>> constants;
  CudaKernelCall call;

  Node(const std::string& op, int64_t opset) {
    call.op = op;
    call.opset = opset;
    call.attrs = &attrs;
  }
  Node(const Node&) = delete;

  void input(DataType t, const std::vector<int64_t>& dims) {
    call.inputs.push_back(deviceInput(t, dims));
    call.constant_inputs.push_back(nullptr);
  }
  /// An int64 input known when planning.
  void constant(const std::vector<int64_t>& dims, const std::vector<double>& values) {
    constants.push_back(
        std::make_unique<HostTensor>(test::tensorOf(DataType::kInt64, dims, values)));
    call.inputs.push_back(deviceInput(DataType::kInt64, dims));
    call.constant_inputs.push_back(constants.back().get());
  }
  void output(DataType t, const std::vector<int64_t>& dims) {
    call.outputs.push_back(deviceOutput(t, dims));
  }
  Support check() const { return cudaCanImplement(call); }
};

/// Reduce over axis 1 of [2, 3, 4] keeping dims, axes as the opset takes them.
std::unique_ptr<Node> reduceNode(const std::string& op, int64_t opset, bool axes_input,
                                 DataType t) {
  auto n = std::make_unique<Node>(op, opset);
  n->input(t, {2, 3, 4});
  if (axes_input) {
    n->constant({1}, {1});
  } else {
    n->attrs.int_lists["axes"] = {1};
  }
  n->output(t, {2, 1, 4});
  return n;
}

bool isOwnFamily(const std::string& family) {
  return family == "Reduce" || family == "ArgReduce" || family == "CumSum" || family == "TopK" ||
         family == "Range" || family == "ConstantOfShape" || family == "Variadic";
}

/// TopK of 3 along the last axis of [2, 5].
std::unique_ptr<Node> topKNode(int64_t opset, DataType t) {
  auto n = std::make_unique<Node>("TopK", opset);
  n->input(t, {2, 5});
  if (opset >= 10) {
    n->constant({1}, {3});
  } else {
    n->attrs.ints["k"] = 3;
  }
  n->output(t, {2, 3});
  n->output(DataType::kInt64, {2, 3});
  return n;
}

/// A valid node of the row for input type `t`.
std::unique_ptr<Node> claimNode(const CudaKernelInfo& row, DataType t) {
  std::string family = row.family;
  if (family == "Reduce") return reduceNode(row.op, row.since, row.max_inputs == 2, t);
  if (family == "TopK") return topKNode(row.since, t);
  auto n = std::make_unique<Node>(row.op, row.since);
  if (family == "CumSum") {
    n->input(t, {2, 3, 4});
    n->constant({}, {1});
    n->output(t, {2, 3, 4});
    return n;
  }
  if (family == "Range") {
    n->input(t, {});
    n->input(t, {});
    n->input(t, {});
    n->output(t, {7});  // start, limit and delta are not constants: the plan's length
    return n;
  }
  if (family == "Variadic") {
    n->input(t, {2, 1, 4});
    n->input(t, {3, 1});
    n->input(t, {});
    n->output(t, {2, 3, 4});
    return n;
  }
  if (family == "ConstantOfShape") {
    // `t` is the shape's type; the value takes each output type in claimOutputNodes.
    n->constant({2}, {2, 3});
    n->output(DataType::kFloat, {2, 3});
    return n;
  }
  n->input(t, {2, 3, 4});
  n->attrs.ints["axis"] = -1;
  n->attrs.ints["keepdims"] = 0;
  n->output(DataType::kInt64, {2, 3});
  return n;
}

TEST(ReduceFamilies, EveryClaimPassesCanImplement) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  int checked = 0;
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    if (!isOwnFamily(row.family)) continue;
    for (DataType t : row.inputs.at(0).types()) {
      std::unique_ptr<Node> n = claimNode(row, t);
      Support s = n->check();
      EXPECT_TRUE(s) << row.op << " at opset " << row.since << " for " << dataTypeName(t) << ": "
                     << s.reason;
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);
}

TEST(ReduceFamilies, ConstantOfShapeTakesEveryClaimedValueType) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    if (std::string(row.family) != "ConstantOfShape") continue;
    for (DataType t : row.outputs.at(0).types()) {
      Node n(row.op, row.since);
      n.constant({2}, {2, 3});
      n.output(t, {2, 3});
      n.attrs.tensors["value"] = test::tensorOf(t, {1}, {1});
      EXPECT_TRUE(n.check()) << dataTypeName(t) << ": " << n.check().reason;
    }
  }
}

/// A few long groups are split across blocks: one 8-byte partial result per chunk in the
/// workspace; many outputs, short groups and LogSumExp run in one pass without one.
TEST(ReduceFamilies, SplitReductionWorkspace) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  auto bytes = [](const std::string& op, std::vector<int64_t> in, std::vector<int64_t> out) {
    Node n(op, 18);
    n.input(DataType::kFloat, in);
    n.output(DataType::kFloat, out);
    StatusOr<size_t> b = cudaWorkspaceBytes(n.call);
    EXPECT_TRUE(b.isOk()) << b.status().toString();
    return b.isOk() ? *b : size_t{0};
  };
  EXPECT_EQ(bytes("ReduceSum", {100000}, {1}), 12u * 8);        // 100000 / 8192 chunks
  EXPECT_EQ(bytes("ReduceMean", {3, 40000}, {1, 1}), 14u * 8);  // all 120000 elements
  EXPECT_EQ(bytes("ReduceSum", {20000}, {1}), 0u);              // short enough for one block
  EXPECT_EQ(bytes("ReduceLogSumExp", {100000}, {1}), 0u);
}

class ReduceRefusals : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  }
  static void expectRefused(const Node& n, const std::string& reason) {
    Support s = n.check();
    EXPECT_FALSE(s) << n.call.op;
    EXPECT_EQ(s.reason, reason);
  }
};

/// Axes known only at run time: the output's shape (the plan's, made with them) tells them, or the
/// node is refused.
TEST_F(ReduceRefusals, AxesInputNotConstant) {
  auto n = reduceNode("ReduceSum", 13, true, DataType::kFloat);
  n->call.constant_inputs[1] = nullptr;
  EXPECT_TRUE(n->check()) << n->check().reason;  // [2, 3, 4] -> [2, 1, 4]: axis 1
  n->attrs.ints["keepdims"] = 0;
  n->call.outputs[0] = deviceOutput(DataType::kFloat, {2, 4});
  EXPECT_TRUE(n->check()) << n->check().reason;
  Node square("ReduceMean", 18);
  square.input(DataType::kFloat, {3, 3});
  square.input(DataType::kInt64, {1});
  square.output(DataType::kFloat, {3});
  square.attrs.ints["keepdims"] = 0;
  expectRefused(square,
                "ReduceMean: axes is not a constant (the CUDA kernel reads it when planning); the "
                "output shape [3] of input [3, 3] does not tell them");
  // Dropping either of two dims of 1 is the same reduction.
  Node ones("ReduceMean", 18);
  ones.input(DataType::kFloat, {1, 4, 1});
  ones.input(DataType::kInt64, {1});
  ones.output(DataType::kFloat, {4, 1});
  ones.attrs.ints["keepdims"] = 0;
  EXPECT_TRUE(ones.check()) << ones.check().reason;
  // With noop_with_empty_axes an unchanged shape is a copy or a reduction over dims of 1: the
  // same for ReduceSum, not for ReduceL2 (|x|).
  Node noop("ReduceL2", 18);
  noop.input(DataType::kFloat, {1, 4});
  noop.input(DataType::kInt64, {1});
  noop.output(DataType::kFloat, {1, 4});
  noop.attrs.ints["noop_with_empty_axes"] = 1;
  expectRefused(noop,
                "ReduceL2: axes is not a constant (the CUDA kernel reads it when planning); with "
                "noop_with_empty_axes the output shape does not tell a copy from a reduction over "
                "dims of 1");
  noop.call.op = "ReduceSum";
  EXPECT_TRUE(noop.check()) << noop.check().reason;
}

TEST_F(ReduceRefusals, TypesWithoutKernel) {
  expectRefused(*reduceNode("ReduceSum", 13, true, DataType::kDouble),
                "ReduceSum: no CUDA kernel for double");
  expectRefused(*reduceNode("ReduceSum", 13, true, DataType::kUint8),
                "ReduceSum: no CUDA kernel for uint8");
  expectRefused(*reduceNode("ReduceSum", 13, true, DataType::kBool),
                "ReduceSum: no CUDA kernel for bool");
  EXPECT_TRUE(reduceNode("ReduceMin", 20, true, DataType::kBool)->check());
  EXPECT_TRUE(reduceNode("ReduceMax", 18, true, DataType::kUint8)->check());
}

TEST_F(ReduceRefusals, OutputShapeAndType) {
  auto n = reduceNode("ReduceMean", 18, true, DataType::kFloat);
  n->call.outputs[0] = deviceOutput(DataType::kFloat, {2, 4});
  expectRefused(*n, "ReduceMean: output 0 is [2, 4]; the op produces [2, 1, 4]");
  n->attrs.ints["keepdims"] = 0;
  EXPECT_TRUE(n->check()) << n->check().reason;
  n->call.outputs[0] = deviceOutput(DataType::kFloat16, {2, 4});
  expectRefused(*n, "ReduceMean: output 0 is float16; the op produces float");
  n->call.outputs[0] = TensorView(DataType::kFloat, {2, 4}, {1, 2}, nullptr, MemoryKind::kDevice);
  expectRefused(*n,
                "ReduceMean: output 0 is not contiguous; the CUDA kernel writes row-major outputs");
}

TEST_F(ReduceRefusals, AxesOutOfRangeOrRepeated) {
  auto n = reduceNode("ReduceSum", 11, false, DataType::kFloat);
  n->attrs.int_lists["axes"] = {3};
  expectRefused(*n, "ReduceSum: axis 3 is out of range for rank 3");
  n->attrs.int_lists["axes"] = {1, -2};
  expectRefused(*n, "ReduceSum: axis -2 is repeated in [1, -2]");
}

TEST_F(ReduceRefusals, EmptyIntegerMean) {
  Node n("ReduceMean", 18);
  n.input(DataType::kInt32, {0, 3});
  n.constant({1}, {0});
  n.output(DataType::kInt32, {1, 3});
  expectRefused(n, "ReduceMean: the mean of an empty integer group is undefined");
  n.call.inputs[0].dtype = DataType::kFloat;
  n.call.outputs[0].dtype = DataType::kFloat;
  EXPECT_TRUE(n.check()) << n.check().reason;  // NaN, as the reference
}

TEST_F(ReduceRefusals, RankAndMemory) {
  Node n("ReduceSum", 13);
  n.input(DataType::kFloat, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  n.output(DataType::kFloat, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  expectRefused(n, "ReduceSum: input 0 has rank 9; the CUDA kernel takes at most 8");
  auto h = reduceNode("ReduceSum", 13, true, DataType::kFloat);
  h->call.inputs[0].memory = MemoryKind::kHost;
  expectRefused(*h, "ReduceSum: input 0 is in host memory; the CUDA kernel reads device memory");
}

TEST_F(ReduceRefusals, NoopAndEmptyAxes) {
  // noop_with_empty_axes with no axes: the output is the input.
  Node n("ReduceL2", 18);
  n.input(DataType::kFloat, {2, 3});
  n.output(DataType::kFloat, {2, 3});
  n.attrs.ints["noop_with_empty_axes"] = 1;
  EXPECT_TRUE(n.check()) << n.check().reason;
  n.attrs.ints["noop_with_empty_axes"] = 0;
  expectRefused(n, "ReduceL2: output 0 is [2, 3]; the op produces [1, 1]");
  // Before opset 18 the attribute does not exist: no axes reduce everything.
  Node old("ReduceL2", 13);
  old.input(DataType::kFloat, {2, 3});
  old.output(DataType::kFloat, {2, 3});
  old.attrs.ints["noop_with_empty_axes"] = 1;
  expectRefused(old, "ReduceL2: output 0 is [2, 3]; the op produces [1, 1]");
}

TEST_F(ReduceRefusals, ArgReduce) {
  Node n("ArgMax", 13);
  n.input(DataType::kFloat, {2, 3});
  n.attrs.ints["axis"] = 1;
  n.output(DataType::kInt32, {2, 1});
  expectRefused(n, "ArgMax: output 0 is int32; the op produces int64");
  n.call.outputs[0].dtype = DataType::kInt64;
  EXPECT_TRUE(n.check()) << n.check().reason;
  n.attrs.ints["axis"] = 2;
  expectRefused(n, "ArgMax: axis 2 is out of range for rank 2");
  Node empty("ArgMin", 13);
  empty.input(DataType::kFloat, {0, 3});
  empty.output(DataType::kInt64, {1, 3});
  expectRefused(empty, "ArgMin: axis 0 is empty");
  Node b("ArgMin", 13);
  b.input(DataType::kBool, {3});
  b.output(DataType::kInt64, {1});
  expectRefused(b, "ArgMin: no CUDA kernel for bool");
}

TEST_F(ReduceRefusals, CumSum) {
  Node n("CumSum", 14);
  n.input(DataType::kFloat, {2, 3});
  n.input(DataType::kInt64, {});
  n.output(DataType::kFloat, {2, 3});
  expectRefused(n, "CumSum: axis is not a constant (the CUDA kernel reads it when planning)");
  Node vector("CumSum", 14);  // one axis: the axis need not be known
  vector.input(DataType::kFloat, {6});
  vector.input(DataType::kInt64, {});
  vector.output(DataType::kFloat, {6});
  EXPECT_TRUE(vector.check()) << vector.check().reason;
  Node m("CumSum", 14);
  m.input(DataType::kFloat, {2, 3});
  m.constant({}, {2});
  m.output(DataType::kFloat, {2, 3});
  expectRefused(m, "CumSum: axis 2 is out of range for rank 2");
  Node u("CumSum", 14);
  u.input(DataType::kUint8, {2, 3});
  u.constant({}, {1});
  u.output(DataType::kUint8, {2, 3});
  expectRefused(u, "CumSum: no CUDA kernel for uint8");
}

TEST_F(ReduceRefusals, TopK) {
  // k known only at run time is the outputs' size along the axis.
  auto n = topKNode(11, DataType::kFloat);
  n->call.constant_inputs[1] = nullptr;
  EXPECT_TRUE(n->check()) << n->check().reason;
  expectRefused(*topKNode(10, DataType::kInt32), "TopK: no CUDA kernel for int32 at opset 10");
  EXPECT_TRUE(topKNode(11, DataType::kInt32)->check());
  auto big = std::make_unique<Node>("TopK", 11);
  big->input(DataType::kFloat, {2, 4097});
  big->constant({1}, {257});
  big->output(DataType::kFloat, {2, 257});
  big->output(DataType::kInt64, {2, 257});
  expectRefused(*big,
                "TopK: k is 257 of 4097; the CUDA kernel sorts rows of at most 4096 elements and "
                "selects at most 256 from longer ones");
  big->constants[0]->set<int64_t>(0, 256);
  big->call.outputs[0] = deviceOutput(DataType::kFloat, {2, 256});
  big->call.outputs[1] = deviceOutput(DataType::kInt64, {2, 256});
  EXPECT_TRUE(big->check()) << big->check().reason;
  auto wide = topKNode(11, DataType::kFloat);
  wide->constants[0]->set<int64_t>(0, 6);
  expectRefused(*wide, "TopK: k 6 is outside [0, 5]");
  auto idx = topKNode(11, DataType::kFloat);
  idx->call.outputs[1].dtype = DataType::kInt32;
  expectRefused(*idx, "TopK: output 1 is int32; the op produces int64");
}

TEST_F(ReduceRefusals, Range) {
  Node n("Range", 11);
  n.input(DataType::kFloat, {});
  n.input(DataType::kFloat, {});
  n.input(DataType::kFloat, {2});
  n.output(DataType::kFloat, {7});
  expectRefused(n, "Range: delta must be a scalar of start's type (float)");
  n.call.inputs[2] = deviceInput(DataType::kFloat, {});
  n.call.inputs[0].memory = MemoryKind::kHost;
  expectRefused(n, "Range: start is in host memory; the CUDA kernel reads device memory");
  // Constants: the length is checked against the reference's.
  Node c("Range", 11);
  c.constant({}, {0});
  c.constant({}, {10});
  c.constant({}, {3});
  c.call.inputs[0].memory = MemoryKind::kHost;  // not read: passed by value
  c.output(DataType::kInt64, {4});
  EXPECT_TRUE(c.check()) << c.check().reason;
  c.call.outputs[0] = deviceOutput(DataType::kInt64, {3});
  expectRefused(c, "Range: output 0 is [3]; the op produces [4]");
  c.constants[2]->set<int64_t>(0, 0);
  expectRefused(c, "Range: delta is 0");
  Node d("Range", 11);
  d.input(DataType::kDouble, {});
  d.input(DataType::kDouble, {});
  d.input(DataType::kDouble, {});
  d.output(DataType::kDouble, {7});
  expectRefused(d, "Range: no CUDA kernel for double");
}

TEST_F(ReduceRefusals, ConstantOfShape) {
  Node n("ConstantOfShape", 20);
  n.constant({2}, {2, 3});
  n.output(DataType::kInt32, {2, 3});
  expectRefused(n, "ConstantOfShape: output 0 is int32; the op produces float");  // default value
  n.attrs.tensors["value"] = test::tensorOf(DataType::kInt32, {1}, {4});
  EXPECT_TRUE(n.check()) << n.check().reason;
  n.call.outputs[0] = deviceOutput(DataType::kInt32, {3, 2});
  expectRefused(n, "ConstantOfShape: output 0 is [3, 2]; the op produces [2, 3]");
  n.attrs.tensors["value"] = test::tensorOf(DataType::kInt32, {2}, {4, 5});
  expectRefused(n, "ConstantOfShape: value must have one element, not 2");
  Node s("ConstantOfShape", 20);
  s.constant({1}, {2});
  s.output(DataType::kString, {2});
  s.attrs.tensors["value"] = HostTensor::zeros(DataType::kString, {1});
  expectRefused(s, "ConstantOfShape: no CUDA kernel for string");
  // A shape that is not a constant: the output is as the plan shaped it.
  Node p("ConstantOfShape", 20);
  p.input(DataType::kInt64, {2});
  p.output(DataType::kFloat, {4, 5});
  EXPECT_TRUE(p.check()) << p.check().reason;
}

TEST_F(ReduceRefusals, Variadic) {
  Node n("Sum", 13);
  for (int i = 0; i < 9; ++i) n.input(DataType::kFloat, {3});
  n.output(DataType::kFloat, {3});
  expectRefused(n, "Sum: 9 inputs; the CUDA kernel reads at most 8");
  Node m("Mean", 13);
  m.input(DataType::kInt32, {3});
  m.input(DataType::kInt32, {3});
  m.output(DataType::kInt32, {3});
  expectRefused(m, "Mean: no CUDA kernel for int32");
  Node b("Sum", 13);
  b.input(DataType::kFloat, {3});
  b.input(DataType::kFloat, {4});
  b.output(DataType::kFloat, {4});
  expectRefused(b, "Sum: shapes [3] and [4] do not broadcast (dim 0 is 3 and 4)");
  Node o("Sum", 13);
  o.input(DataType::kFloat, {3, 1});
  o.input(DataType::kFloat, {4});
  o.output(DataType::kFloat, {3});
  expectRefused(o, "Sum: output 0 is [3]; the op produces [3, 4]");
  Node t("Sum", 13);
  t.input(DataType::kFloat, {3});
  t.input(DataType::kFloat16, {3});
  t.output(DataType::kFloat, {3});
  expectRefused(t, "Sum: input 1 is float16, input 0 float; one type needed");
}

}  // namespace
}  // namespace onnxopt::kernels
