#include "onnxopt/api/generate.h"

#include <utility>

#include "onnxopt/api/run.h"

namespace onnxopt {

StatusOr<std::unique_ptr<runtime::Generator>> createGenerator(
    ir::Model& model, const std::string& runner, const runtime::GenerationOptions& options,
    const std::string& model_path) {
  auto context = [&](const Status& s) {
    return model_path.empty() ? s : s.withContext(model_path);
  };
  // The model is checked as a decoder before the runner prepares or loads anything.
  if (auto signature = runtime::decoderSignature(*model.graph); !signature.isOk()) {
    return context(signature.status());
  }
  if (Status s = prepareForRunner(model, runner); !s.isOk()) return context(s);
  auto executor = runtime::createExecutor(runner, {&model, model_path});
  if (!executor.isOk()) return context(executor.status());
  return runtime::Generator::create(model, std::move(executor).value(), options, model_path);
}

StatusOr<GenerateResult> generate(ir::Model& model, const GenerateRequest& request,
                                  const runtime::TokenCallback& callback) {
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::Generator> generator,
                   createGenerator(model, request.runner, request.options, request.model_path));
  GenerateResult result;
  ASSIGN_OR_RETURN(result.sequences, generator->generate(request.prompt, callback));
  result.stats = generator->stats();
  return result;
}

}  // namespace onnxopt
