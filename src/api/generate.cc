#include "onnxopt/api/generate.h"

#include <utility>

#include "onnxopt/api/run.h"

namespace onnxopt {

StatusOr<GenerateResult> generate(ir::Model& model, const GenerateRequest& request,
                                  const runtime::TokenCallback& callback) {
  auto context = [&](const Status& s) {
    return request.model_path.empty() ? s : s.withContext(request.model_path);
  };
  // The model is checked as a decoder before the runner prepares or loads anything.
  if (auto signature = runtime::decoderSignature(*model.graph); !signature.isOk()) {
    return context(signature.status());
  }
  if (Status s = prepareForRunner(model, request.runner); !s.isOk()) return context(s);
  auto executor = runtime::createExecutor(request.runner, {&model, request.model_path});
  if (!executor.isOk()) return context(executor.status());
  ASSIGN_OR_RETURN(std::unique_ptr<runtime::Generator> generator,
                   runtime::Generator::create(model, std::move(executor).value(), request.options,
                                              request.model_path));
  GenerateResult result;
  ASSIGN_OR_RETURN(result.sequences, generator->generate(request.prompt, callback));
  result.stats = generator->stats();
  return result;
}

}  // namespace onnxopt
