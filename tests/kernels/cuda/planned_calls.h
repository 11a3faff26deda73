// What the CUDA executor hands a kernel for a node of a bundled model, without a device: the model
// loaded with inferred types, planned for the CUDA capabilities at given input shapes, and each
// device node's CudaKernelCall as the executor builds it (device views of the planned values with
// no memory behind them, empty views for omitted inputs and outputs, host data of constants). Host
// tests check that the families accept those calls, so a bundled model does not fall back to the
// CPU unnoticed (the GPU tests compare results only).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/kernels/cuda.h"
#include "onnxopt/runtime/plan.h"

namespace onnxopt::kernels::test {

/// models/... under the source tree (ONNXOPT_SOURCE_DIR) with inferred types, or nullptr (and a
/// failure).
inline std::unique_ptr<ir::Model> loadSourceModel(const std::string& rel) {
  auto model = io::loadModel(std::string(ONNXOPT_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(model.isOk()) << model.status().toString();
  if (!model.isOk()) return nullptr;
  auto inferred = ir::inferShapes(**model);
  EXPECT_TRUE(inferred.isOk()) << inferred.status().toString();
  return inferred.isOk() ? std::move(model).value() : nullptr;
}

/// The call the executor builds for planned node `pn` (pointers null: canImplement reads none).
inline CudaKernelCall plannedCall(const runtime::Plan& plan, const runtime::PlannedNode& pn) {
  CudaKernelCall call;
  call.domain = pn.domain;
  call.op = pn.op;
  call.opset = pn.opset;
  call.attrs = &pn.attrs;
  auto value = [&](int id) { return &plan.values[static_cast<size_t>(id)]; };
  auto view = [&](int id) {
    if (id < 0) return TensorView{};
    const runtime::PlannedValue& v = *value(id);
    return TensorView(v.dtype, v.dims, contiguousStrides(v.dims), nullptr, MemoryKind::kDevice);
  };
  for (int id : pn.inputs) {
    call.inputs.push_back(view(id));
    const runtime::PlannedValue* v = id >= 0 ? value(id) : nullptr;
    call.constant_inputs.push_back(v != nullptr && v->host_value ? &*v->host_value : nullptr);
  }
  for (int id : pn.outputs) call.outputs.push_back(view(id));
  return call;
}

}  // namespace onnxopt::kernels::test
