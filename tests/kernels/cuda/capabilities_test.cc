// The CUDA capability table (kernels/cuda/ops.def through kernels::cudaCapabilities()): what it
// claims and refuses for op/type/opset combinations, and that it claims nothing the launch table
// lacks: every row has a launch entry, and in a CUDA build every claimed combination passes the
// kernel family's own host-side canImplement (the types its device code instantiates). Runs
// without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kernel_cases.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/kernels/reference.h"

namespace onnxopt::kernels {
namespace {

Support ask(const std::string& op, int64_t opset, std::vector<DataType> inputs,
            std::vector<DataType> outputs = {}) {
  return cudaCapabilities().supports(OpQuery{"", op, opset, std::move(inputs), std::move(outputs)});
}

TEST(CudaCapabilities, NameIsCuda) {
  EXPECT_STREQ(cudaCapabilities().name(), "cuda");
}

TEST(CudaCapabilities, ClaimsElementwiseTypes) {
  EXPECT_TRUE(ask("Add", 14, {DataType::kFloat16, DataType::kFloat16}));
  EXPECT_TRUE(ask("Add", 14, {DataType::kInt64, DataType::kInt64}));
  EXPECT_TRUE(ask("Mul", 13, {DataType::kBfloat16, DataType::kBfloat16}));
  EXPECT_TRUE(ask("Where", 16, {DataType::kBool, DataType::kInt8, DataType::kInt8}));
  EXPECT_TRUE(ask("Cast", 19, {DataType::kFloat}, {DataType::kFloat16}));
  EXPECT_TRUE(ask("Equal", 13, {DataType::kBool, DataType::kBool}, {DataType::kBool}));
  EXPECT_TRUE(ask("Clip", 13, {DataType::kInt32, DataType::kInt32, DataType::kUndefined}));
}

TEST(CudaCapabilities, RefusesWithAReason) {
  Support s = ask("Add", 14, {DataType::kDouble, DataType::kDouble});
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason,
            "Add: input 0 is double; the CUDA kernel takes float, uint8, int8, int32, "
            "int64, float16, bfloat16");
  s = ask("Det", 11, {DataType::kFloat, DataType::kFloat});
  EXPECT_FALSE(s);
  EXPECT_EQ(s.reason, "no CUDA kernel for Det");
  s = ask("Exp", 13, {DataType::kInt32});
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("input 0 is int32"), std::string::npos) << s.reason;
}

TEST(CudaCapabilities, OpsetRangesSelectTheRow) {
  // Relu takes integers from opset 14 only.
  EXPECT_FALSE(ask("Relu", 13, {DataType::kInt32}));
  EXPECT_TRUE(ask("Relu", 13, {DataType::kFloat}));
  EXPECT_TRUE(ask("Relu", 14, {DataType::kInt32}));
  // Gelu exists from opset 20.
  Support s = ask("Gelu", 19, {DataType::kFloat});
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("opset 19"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("20+"), std::string::npos) << s.reason;
  // Clip: min/max inputs from 11, integers from 12.
  EXPECT_FALSE(ask("Clip", 10, {DataType::kFloat, DataType::kFloat}));
  EXPECT_TRUE(ask("Clip", 11, {DataType::kFloat, DataType::kFloat, DataType::kFloat}));
  EXPECT_FALSE(ask("Clip", 11, {DataType::kInt64}));
  EXPECT_TRUE(ask("Clip", 12, {DataType::kInt64}));
}

TEST(CudaCapabilities, InputCountAndSharedTypes) {
  Support s = ask("Add", 13, {DataType::kFloat, DataType::kFloat, DataType::kFloat});
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("2 to 2 inputs, not 3"), std::string::npos) << s.reason;
  // Max and Min are variadic (1 to 8 inputs).
  EXPECT_TRUE(ask("Max", 13, {DataType::kFloat, DataType::kFloat, DataType::kFloat}));
  EXPECT_TRUE(ask("Min", 13, {DataType::kInt8}));
  s = ask("Max", 13, std::vector<DataType>(9, DataType::kFloat));
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("1 to 8 inputs, not 9"), std::string::npos) << s.reason;
  s = ask("Add", 14, {DataType::kFloat, DataType::kFloat16});
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("one type"), std::string::npos) << s.reason;
  EXPECT_FALSE(ask("Where", 16, {DataType::kBool, DataType::kFloat, DataType::kInt32}));
  EXPECT_FALSE(ask("Where", 16, {DataType::kFloat, DataType::kFloat, DataType::kFloat}));
}

TEST(CudaCapabilities, OutputTypes) {
  EXPECT_FALSE(ask("Less", 13, {DataType::kFloat, DataType::kFloat}, {DataType::kFloat}));
  EXPECT_TRUE(ask("Less", 13, {DataType::kFloat, DataType::kFloat}, {DataType::kBool}));
  Support s = ask("Cast", 19, {DataType::kFloat}, {DataType::kDouble});
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("output 0 is double"), std::string::npos) << s.reason;
}

TEST(CudaCapabilities, DefaultDomainSpellings) {
  EXPECT_TRUE(cudaCapabilities().supports(OpQuery{"ai.onnx", "Relu", 14, {DataType::kFloat}, {}}));
  EXPECT_FALSE(
      cudaCapabilities().supports(OpQuery{"com.microsoft", "Relu", 14, {DataType::kFloat}, {}}));
}

TEST(CudaKernelTable, EveryRowHasALaunchEntry) {
  ASSERT_FALSE(cudaKernelTable().empty());
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    EXPECT_EQ(hasCudaLaunch(row.domain, row.op, row.since), cudaKernelsBuilt())
        << row.op << " at opset " << row.since;
    if (row.until != kCudaOpenOpset) {
      EXPECT_EQ(hasCudaLaunch(row.domain, row.op, row.until), cudaKernelsBuilt())
          << row.op << " at opset " << row.until;
    }
  }
  EXPECT_FALSE(hasCudaLaunch("", "Det", 11));
}

// A value operand is an input of a kernel row at every opset its row covers.
TEST(CudaKernelTable, ValueInputsAreInputsOfAKernelRow) {
  ASSERT_FALSE(cudaValueInputTable().empty());
  for (const CudaValueInputs& v : cudaValueInputTable()) {
    ASSERT_FALSE(v.inputs.empty()) << v.op;
    for (int64_t opset : {v.since, v.until == kCudaOpenOpset ? int64_t{30} : v.until}) {
      const CudaKernelInfo* row = nullptr;
      for (const CudaKernelInfo& k : cudaKernelTable()) {
        if (std::string(k.op) == v.op && std::string(k.domain) == v.domain && k.since <= opset &&
            opset <= k.until) {
          row = &k;
        }
      }
      ASSERT_NE(row, nullptr) << v.op << " has no kernel at opset " << opset;
      for (size_t i : v.inputs) {
        EXPECT_LT(i, static_cast<size_t>(row->max_inputs)) << v.op << " input " << i;
      }
      EXPECT_EQ(cudaCapabilities().valueInputs(v.domain, v.op, opset), v.inputs) << v.op;
    }
  }
  EXPECT_EQ(cudaCapabilities().valueInputs("", "Slice", 13), (std::vector<size_t>{1, 2, 3, 4}));
  EXPECT_TRUE(cudaCapabilities().valueInputs("", "Slice", 9).empty());  // attributes then
  EXPECT_TRUE(cudaCapabilities().valueInputs("", "Gather", 13).empty());
}

TEST(CudaKernelTable, RowsDoNotOverlap) {
  const auto& table = cudaKernelTable();
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_LE(table[i].since, table[i].until) << table[i].op;
    for (size_t j = i + 1; j < table.size(); ++j) {
      if (std::string(table[i].op) != table[j].op ||
          std::string(table[i].domain) != table[j].domain) {
        continue;
      }
      EXPECT_TRUE(table[i].until < table[j].since || table[j].until < table[i].since)
          << table[i].op << " has two rows for one opset";
    }
  }
}

/// A call with device views for every claimed input: [2, 3] elementwise (scalars for Clip's
/// bounds); [2, 3] x [3, 4] (and a C of [4]) for the matrix products.
CudaKernelCall fakeCall(const CudaKernelInfo& row, const test::TypeCombo& combo,
                        const KernelAttrs& attrs) {
  std::string family = row.family;
  bool product = family == "MatMul" || family == "Gemm" || family == "MatMulBias";
  std::vector<std::vector<int64_t>> shapes = {{2, 3}, {2, 3}, {2, 3}};
  if (std::string(row.op) == "Clip") shapes = {{2, 3}, {}, {}};
  if (product) shapes = {{2, 3}, {3, 4}, {4}};
  std::vector<int64_t> out = product ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{2, 3};
  CudaKernelCall call;
  call.domain = row.domain;
  call.op = row.op;
  call.opset = row.since;
  for (size_t i = 0; i < combo.inputs.size(); ++i) {
    call.inputs.emplace_back(combo.inputs[i], shapes[i], contiguousStrides(shapes[i]), nullptr,
                             MemoryKind::kDevice);
  }
  call.outputs.emplace_back(combo.output, out, contiguousStrides(out), nullptr,
                            MemoryKind::kDevice);
  call.attrs = &attrs;
  return call;
}

TEST(CudaKernelTable, EveryClaimPassesTheKernelsCanImplement) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to compare with";
  int checked = 0;
  for (const CudaKernelInfo& row : cudaKernelTable()) {
    // fakeCall builds elementwise and product shapes; the other families check their claims in
    // their own tests.
    const std::string family = row.family;
    if (family != "Unary" && family != "Binary" && family != "Where" && family != "Cast" &&
        family != "MatMul" && family != "Gemm" && family != "MatMulBias") {
      continue;
    }
    for (const test::TypeCombo& combo : test::claimedCombos(row)) {
      KernelAttrs attrs;
      attrs.ints["to"] = static_cast<int64_t>(combo.output);
      CudaKernelCall call = fakeCall(row, combo, attrs);
      OpQuery q{row.domain, row.op, row.since, combo.inputs, {combo.output}};
      ASSERT_TRUE(cudaCapabilities().supports(q))
          << row.op << ": " << cudaCapabilities().supports(q).reason;
      Support s = cudaCanImplement(call);
      EXPECT_TRUE(s) << "ops.def claims " << row.op << " at opset " << row.since << " for "
                     << dataTypeName(combo.inputs[0]) << " -> " << dataTypeName(combo.output)
                     << ", the kernel refuses: " << s.reason;
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
}

TEST(CudaCanImplement, RefusesWhatTheKernelCannotRun) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  std::vector<int64_t> dims = {2, 3};
  KernelAttrs none;
  CudaKernelCall call{"", "Add", 14, {}, {}, &none, {}};
  call.inputs = {ConstTensorView(DataType::kFloat, dims, contiguousStrides(dims), nullptr,
                                 MemoryKind::kDevice),
                 ConstTensorView(DataType::kFloat, {4}, {1}, nullptr, MemoryKind::kDevice)};
  call.outputs = {
      TensorView(DataType::kFloat, dims, contiguousStrides(dims), nullptr, MemoryKind::kDevice)};
  Support s = cudaCanImplement(call);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("Add: shapes [2, 3] and [4] do not broadcast"), std::string::npos)
      << s.reason;
  call.inputs[1] = ConstTensorView(DataType::kFloat, {3}, {1}, nullptr, MemoryKind::kHost);
  s = cudaCanImplement(call);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("host memory"), std::string::npos) << s.reason;
  call.inputs[1].memory = MemoryKind::kDevice;
  EXPECT_TRUE(cudaCanImplement(call)) << cudaCanImplement(call).reason;
  Status launched = launchCudaKernel(CudaKernelCall{"", "Det", 11, {}, {}, &none, {}}, nullptr);
  EXPECT_EQ(launched.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(launched.message(), "no CUDA kernel for Det at opset 11");
}

TEST(CudaCanImplement, AttributesAreChecked) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  std::vector<int64_t> dims = {4};
  KernelAttrs attrs;
  attrs.strings["approximate"] = "erf";
  CudaKernelCall call{"", "Gelu", 20, {}, {}, &attrs, {}};
  call.inputs = {ConstTensorView(DataType::kFloat, dims, {1}, nullptr, MemoryKind::kDevice)};
  call.outputs = {TensorView(DataType::kFloat, dims, {1}, nullptr, MemoryKind::kDevice)};
  Support s = cudaCanImplement(call);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("approximate must be none or tanh"), std::string::npos) << s.reason;
  attrs.strings["approximate"] = "tanh";
  EXPECT_TRUE(cudaCanImplement(call)) << cudaCanImplement(call).reason;
  // Cast: `to` must name the output's type.
  KernelAttrs cast;
  cast.ints["to"] = static_cast<int64_t>(DataType::kInt32);
  CudaKernelCall c{"", "Cast", 19, {}, {}, &cast, {}};
  c.inputs = call.inputs;
  c.outputs = {TensorView(DataType::kFloat16, dims, {1}, nullptr, MemoryKind::kDevice)};
  s = cudaCanImplement(c);
  EXPECT_FALSE(s);
  EXPECT_NE(s.reason.find("'to' is int32 but the output is float16"), std::string::npos)
      << s.reason;
}

/// The CUDA MatMul/Gemm accepts exactly the output shape the reference kernel computes: 1-D
/// promotion, broadcast batch dims, transposes, every C.
TEST(CudaCanImplement, ProductShapesAgreeWithTheReference) {
  if (!cudaKernelsBuilt()) GTEST_SKIP() << "built without CUDA: no kernels to ask";
  struct Shape {
    std::string op;
    std::vector<std::vector<int64_t>> inputs;
    int64_t trans_a = 0, trans_b = 0;
  };
  const std::vector<Shape> shapes = {{"MatMul", {{3, 4}, {4, 5}}},
                                     {"MatMul", {{2, 3, 4}, {4, 5}}},
                                     {"MatMul", {{4}, {4, 5}}},
                                     {"MatMul", {{2, 3, 4}, {4}}},
                                     {"MatMul", {{4}, {4}}},
                                     {"MatMul", {{2, 1, 3, 4}, {1, 3, 4, 5}}},
                                     {"MatMul", {{3, 4}, {5, 4, 6}}},
                                     {"Gemm", {{3, 4}, {4, 5}, {5}}},
                                     {"Gemm", {{4, 3}, {5, 4}, {3, 1}}, 1, 1},
                                     {"Gemm", {{4, 3}, {4, 5}, {}}, 1, 0},
                                     {"Gemm", {{3, 4}, {5, 4}}, 0, 1}};
  for (const Shape& s : shapes) {
    std::vector<HostTensor> host;
    for (const auto& d : s.inputs) host.push_back(HostTensor::zeros(DataType::kFloat, d));
    std::vector<const HostTensor*> ptrs;
    for (const HostTensor& t : host) ptrs.push_back(&t);
    KernelAttrs attrs;
    attrs.ints["transA"] = s.trans_a;
    attrs.ints["transB"] = s.trans_b;
    auto ref = runReferenceKernel(s.op, 13, ptrs, attrs, 1);
    ASSERT_TRUE(ref.isOk()) << ref.status().toString();
    const std::vector<int64_t>& out = ref->at(0).dims;
    CudaKernelCall call{"", s.op, 13, {}, {}, &attrs, {}};
    for (const auto& d : s.inputs) {
      call.inputs.emplace_back(DataType::kFloat, d, contiguousStrides(d), nullptr,
                               MemoryKind::kDevice);
    }
    call.outputs = {
        TensorView(DataType::kFloat, out, contiguousStrides(out), nullptr, MemoryKind::kDevice)};
    Support yes = cudaCanImplement(call);
    EXPECT_TRUE(yes) << s.op << " " << s.inputs.size() << " inputs: " << yes.reason;
    // One more row in the output: refused, naming both shapes.
    std::vector<int64_t> wrong = out;
    wrong.insert(wrong.begin(), 2);
    call.outputs = {TensorView(DataType::kFloat, wrong, contiguousStrides(wrong), nullptr,
                               MemoryKind::kDevice)};
    Support no = cudaCanImplement(call);
    EXPECT_FALSE(no) << s.op;
    EXPECT_NE(no.reason.find("the product is"), std::string::npos) << no.reason;
  }
}

TEST(CudaWithoutBuild, DeviceCallsSayWhy) {
  if (cudaKernelsBuilt()) GTEST_SKIP() << "built with CUDA";
  auto count = cudaDeviceCount();
  ASSERT_FALSE(count.isOk());
  EXPECT_EQ(count.status().message(), "cuda: onnxopt was built without CUDA");
  EXPECT_FALSE(hasCudaLaunch("", "Add", 14));
}

}  // namespace
}  // namespace onnxopt::kernels
