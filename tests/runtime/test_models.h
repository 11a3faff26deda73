// Models and tensors for the runtime tests.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxopt/io/model_io.h"
#include "onnxopt/kernels/host_tensor.h"

namespace onnxopt::runtime::test {

/// The model in ONNX textual syntax (nullptr, and a test failure, when it does not parse).
inline std::unique_ptr<ir::Model> parse(const std::string& text) {
  auto model = io::parseModelText(text);
  EXPECT_TRUE(model.isOk()) << model.status().toString();
  return model.isOk() ? std::move(model).value() : nullptr;
}

inline kernels::HostTensor floats(std::vector<int64_t> dims, const std::vector<float>& values) {
  kernels::HostTensor t = kernels::HostTensor::zeros(DataType::kFloat, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) t.set<float>(static_cast<int64_t>(i), values[i]);
  return t;
}

}  // namespace onnxopt::runtime::test
