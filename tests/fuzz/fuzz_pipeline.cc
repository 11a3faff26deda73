// libFuzzer target: the whole `opt -O2` pipeline on arbitrary bytes. Property: a model that passes
// the verifier still passes it after the pipeline, exports, and imports again. Folding is capped at
// 64 KiB per tensor so a run stays within the fuzzer's memory limit.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "onnxopt/io/model_io.h"
#include "onnxopt/ir/verifier.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/passes/registry.h"

namespace {

[[noreturn]] void bug(const char* what, const onnxopt::Status& st) {
  std::fprintf(stderr, "%s: %s\n", what, st.message().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxopt;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto model = io::parseModelBinary(bytes, "/nonexistent/onnxopt-fuzz");
  if (!model.isOk() || !ir::verifyModel(**model).isOk()) return 0;
  static const std::string text =
      passes::pipelineFor(2, 0, "", {{"fold-constants", "size-limit", "65536"}}).value();
  auto pipeline = pass::parsePipeline(text, &passes::createPass);
  if (!pipeline.isOk()) bug("pipeline", pipeline.status());
  pass::PassContext ctx;
  ctx.driver.max_rounds = 4;
  pass::PassManager manager(std::move(pipeline).value(), std::move(ctx), pass::Instrumentation{});
  auto ran = manager.run(**model);
  if (!ran.isOk()) {
    // A pass may refuse a model (kUnimplemented, kInvalidArgument, kResourceExhausted); an internal
    // error is a bug.
    if (ran.status().code() == StatusCode::kInternal)
      bug("internal error in the pipeline", ran.status());
    return 0;
  }
  Status after = ir::verifyModel(**model);
  if (!after.isOk()) bug("the pipeline turned a valid model into an invalid one", after);
  auto out = io::serializeModel(**model);
  if (!out.isOk()) {
    if (out.status().code() == StatusCode::kInternal) bug("export", out.status());
    return 0;
  }
  auto again = io::parseModelBinary(*out, "/nonexistent/onnxopt-fuzz");
  if (!again.isOk()) bug("the optimized model does not import again", again.status());
  return 0;
}
