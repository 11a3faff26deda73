// libFuzzer target: ONNX textual syntax on arbitrary text (onnx::OnnxParser, then our importer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxopt;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto model = io::parseModelText(text, "/nonexistent/onnxopt-fuzz");
  if (!model.isOk()) {
    if (model.status().code() == StatusCode::kInternal) {
      std::fprintf(stderr, "internal error: %s\n", model.status().message().c_str());
      std::abort();
    }
    return 0;
  }
  Status verified = ir::verifyModel(**model);
  if (!verified.isOk()) {
    std::fprintf(stderr, "parsed model fails the verifier: %s\n", verified.message().c_str());
    std::abort();
  }
  return 0;
}
