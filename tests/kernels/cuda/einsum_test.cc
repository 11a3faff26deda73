// Einsum on CUDA (kernels/cuda/gemm/einsum.cc: strided copies around one cuBLASLt GEMM, or a row sum)
// against the reference kernel, for float, float16 and bfloat16: matrix products with every
// operand layout (transposed operands, batch labels, attention's QK^T and PV), '...' with
// broadcast batch dims (missing and size 1), the implicit output, outer and inner products, labels
// summed in one operand only, and one-operand transposes and sums; the direct kernel for
// diagonals, three operands, double and the integer types. Label gpu.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "device_harness.h"
#include "onnxopt/kernels/reference.h"
#include "random_tensor.h"

namespace onnxopt::kernels {
namespace {

struct EinsumCase {
  std::string equation;
  std::vector<std::vector<int64_t>> shapes;
  DataType dtype = DataType::kFloat;
  std::string name = {};
};

void PrintTo(const EinsumCase& c, std::ostream* os) {
  *os << c.name;
}

/// The equation as a test name: letters kept, "..." as "ell", ',' as "_", "->" as "_to_".
std::string equationName(const std::string& eq) {
  std::string out;
  for (size_t i = 0; i < eq.size(); ++i) {
    if (eq.compare(i, 3, "...") == 0) {
      out += "ell";
      i += 2;
    } else if (eq.compare(i, 2, "->") == 0) {
      out += "_to_";
      ++i;
    } else if (eq[i] == ' ') {
      continue;
    } else if (eq[i] == ',') {
      out += "_";
    } else {
      out += eq[i];
    }
  }
  return out;
}

std::vector<EinsumCase> einsumCases() {
  const std::vector<EinsumCase> equations = {
      {"ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {{33, 17}, {17, 9}}},  // implicit output: ik
      {"ij,kj->ik", {{3, 4}, {5, 4}}},
      {"ji,jk->ik", {{4, 3}, {4, 5}}},
      {"ij,jk->ki", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bij,jk->bik", {{2, 3, 4}, {4, 5}}},
      {"bhqd,bhkd->bhqk", {{2, 3, 7, 8}, {2, 3, 9, 8}}},
      {"bhqk,bhkd->bhqd", {{2, 3, 7, 9}, {2, 3, 9, 8}}},
      {"bqhd,bkhd->bhqk", {{2, 7, 3, 8}, {2, 9, 3, 8}}},
      {"...ij,...jk->...ik", {{2, 3, 4, 5}, {3, 5, 6}}},
      {"...ij,...jk->...ik", {{2, 1, 4, 5}, {3, 5, 6}}},
      {"ij,ij->i", {{5, 7}, {5, 7}}},
      {"i,i->", {{33}, {33}}},
      {"i,j->ij", {{3}, {4}}},
      {"ij,jk->k", {{3, 4}, {4, 5}}},  // i summed in A alone
      {"bn,anm->bam", {{2, 3}, {4, 3, 5}}},
      {"ijk,ikl->jl", {{3, 4, 5}, {3, 5, 2}}},
      {"ij->ji", {{3, 5}}},
      {"abc->cba", {{2, 3, 4}}},
      {"ij->i", {{4, 33}}},
      {"ij->j", {{4, 33}}},
      {"ij->", {{7, 9}}},
      {"...ij->...j", {{2, 3, 4}}},
      // Sizes of several blocks: the copies' grid-stride loops, the row sum's warps.
      {"bhqd,bhkd->bhqk", {{2, 4, 65, 64}, {2, 4, 130, 64}}},
      {"bqhd,bkhd->bqhk", {{2, 33, 4, 16}, {2, 70, 4, 16}}},
      {"ij->i", {{300, 70}}},
      {"abc->cab", {{64, 48, 33}}},
  };
  // The direct kernel: diagonals, three operands (every type), and the GEMM equations in double
  // and the integer types (as the ONNX node tests, which are double).
  const std::vector<EinsumCase> direct = {
      {"...ii->...i", {{3, 5, 5}}},
      {"ii->i", {{4, 4}}},
      {"ii", {{5, 5}}},  // implicit output: the trace
      {"ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"bij,bjk,bk->bi", {{2, 3, 4}, {2, 4, 5}, {2, 5}}},
      {"ij,jj->i", {{3, 4}, {4, 4}}},
  };
  const std::vector<EinsumCase> gemm_in_other_types = {
      {"bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"i,i", {{5}, {5}}},
      {"ij->i", {{3, 4}}},
      {"ij->ji", {{3, 4}}},
      {"...ij,...jk->...ik", {{2, 1, 4, 5}, {3, 5, 6}}},
      {" -> ", {{}}},  // a scalar, as the node test writes it
  };
  std::vector<EinsumCase> out;
  auto add = [&](const std::vector<EinsumCase>& list, std::vector<DataType> types) {
    for (DataType t : types) {
      for (EinsumCase c : list) {
        c.dtype = t;
        c.name = dataTypeName(t) + "_" + equationName(c.equation);
        for (const auto& s : c.shapes) c.name += "_" + fmt::format("{}", fmt::join(s, "x"));
        out.push_back(c);
      }
    }
  };
  add(equations, {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16});
  add(direct, {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16, DataType::kDouble,
               DataType::kInt32, DataType::kInt64});
  add(gemm_in_other_types, {DataType::kDouble, DataType::kInt32, DataType::kInt64});
  return out;
}

test::Tolerance einsumTolerance(DataType t) {
  // Float accumulation in another order than the reference's.
  if (t == DataType::kFloat) return {1e-4, 1e-4};
  if (t == DataType::kFloat16) return {2e-3, 2e-3};
  if (t == DataType::kBfloat16) return {1.6e-2, 1e-2};
  if (t == DataType::kDouble) return {1e-12, 1e-12};
  return {0, 0};  // integers: exact
}

/// test::expectClose, and for double (which it does not read) the same comparison here.
void expectNear(const HostTensor& want, const HostTensor& got, test::Tolerance tol) {
  if (want.dtype != DataType::kDouble) return test::expectClose(want, got, tol);
  ASSERT_EQ(got.dtype, want.dtype);
  ASSERT_EQ(got.dims, want.dims);
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double e = want.get<double>(i), a = got.get<double>(i);
    ASSERT_LE(std::fabs(e - a), tol.atol + tol.rtol * std::fabs(e))
        << "element " << i << ": cuda " << a << ", reference " << e;
  }
}

class EinsumTest : public test::CudaTest, public ::testing::WithParamInterface<EinsumCase> {};

TEST_P(EinsumTest, MatchesReference) {
  const EinsumCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(c.name)));
  KernelAttrs attrs;
  attrs.strings["equation"] = c.equation;
  std::vector<HostTensor> host;
  std::vector<const HostTensor*> ptrs;
  bool integer = c.dtype == DataType::kInt32 || c.dtype == DataType::kInt64;
  for (const auto& dims : c.shapes) {
    host.push_back(test::randomTensor(c.dtype, dims, rng, integer ? -5 : -1, integer ? 5 : 1));
  }
  for (const HostTensor& t : host) ptrs.push_back(&t);
  auto want = runReferenceKernel("Einsum", 12, ptrs, attrs, 1);
  ASSERT_TRUE(want.isOk()) << want.status().toString();
  auto got = test::runOnDevice("Einsum", 12, host, attrs, want->at(0).dtype, want->at(0).dims);
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  expectNear(want->at(0), *got, einsumTolerance(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(Lowered, EinsumTest, ::testing::ValuesIn(einsumCases()),
                         [](const ::testing::TestParamInfo<EinsumCase>& p) {
                           return p.param.name;
                         });

}  // namespace
}  // namespace onnxopt::kernels
