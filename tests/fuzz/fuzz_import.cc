// libFuzzer target: the protobuf importer on arbitrary bytes. Any input must end in a model or a
// Status; an imported model must pass the verifier and export again (tools/fuzz.sh runs this).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxopt;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // External data resolves against a folder that does not exist: only in-memory data is read.
  auto model = io::parseModelBinary(bytes, "/nonexistent/onnxopt-fuzz");
  if (!model.isOk()) {
    if (model.status().code() == StatusCode::kInternal) {
      std::fprintf(stderr, "internal error on import: %s\n", model.status().message().c_str());
      std::abort();
    }
    return 0;
  }
  Status verified = ir::verifyModel(**model);
  if (!verified.isOk()) {
    std::fprintf(stderr, "imported model fails the verifier: %s\n", verified.message().c_str());
    std::abort();
  }
  auto out = io::serializeModel(**model);
  if (!out.isOk() && out.status().code() == StatusCode::kInternal) {
    std::fprintf(stderr, "internal error on export: %s\n", out.status().message().c_str());
    std::abort();
  }
  return 0;
}
