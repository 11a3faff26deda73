// The (input types, output type) combinations a row of kernels/cuda/ops.def claims, shared by the
// host capability test and the GPU kernel tests, so both walk exactly what the table claims.
#pragma once

#include <string>
#include <vector>

#include "onnxopt/kernels/cuda.h"

namespace onnxopt::kernels::test {

struct TypeCombo {
  std::vector<DataType> inputs;  ///< one per input, up to the row's max_inputs
  DataType output;
};

/// Every combination the row claims: Cast every (from, to) pair; a row whose inputs have
/// independent types and whose output follows input 0 (Pow-12) every pairing; the other families
/// one type for the inputs from same_from on (earlier inputs take their set's first type, Where's
/// bool).
inline std::vector<TypeCombo> claimedCombos(const CudaKernelInfo& row) {
  auto at = [&](size_t i) { return i < row.inputs.size() ? row.inputs[i] : row.inputs.back(); };
  std::vector<TypeCombo> out;
  if (row.same_from < 0 && row.outputs.empty()) {
    // Inputs of independent types, the output input 0's (Pow-12's base and exponent): every
    // pairing of the claimed types.
    out.push_back(TypeCombo{{}, DataType::kUndefined});
    for (int i = 0; i < row.max_inputs; ++i) {
      std::vector<TypeCombo> longer;
      for (const TypeCombo& c : out) {
        for (DataType t : at(static_cast<size_t>(i)).types()) {
          TypeCombo d = c;
          d.inputs.push_back(t);
          d.output = d.inputs[0];
          longer.push_back(d);
        }
      }
      out = std::move(longer);
    }
    return out;
  }
  if (row.same_from < 0) {
    for (DataType from : at(0).types()) {
      for (DataType to : row.outputs.at(0).types()) out.push_back({{from}, to});
    }
    return out;
  }
  for (DataType t : at(static_cast<size_t>(row.same_from)).types()) {
    TypeCombo c;
    for (int i = 0; i < row.max_inputs; ++i) {
      c.inputs.push_back(i < row.same_from ? at(static_cast<size_t>(i)).types().at(0) : t);
    }
    c.output = row.outputs.empty() ? t : row.outputs[0].types().at(0);
    out.push_back(c);
  }
  return out;
}

}  // namespace onnxopt::kernels::test
