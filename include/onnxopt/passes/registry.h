// The pass registry (one list: passes/registry.def) and the -O pipelines (passes/pipelines.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onnxopt/pass/pass.h"
#include "onnxopt/pass/pass_manager.h"
#include "onnxopt/support/status.h"

namespace onnxopt::passes {

using PassFactory = std::unique_ptr<pass::Pass> (*)();

/// Adds a pass beyond the built-in list (passes/registry.def), for this process: tests register
/// their test-only passes so, and plugins will. Registering a factory twice has no effect.
void registerPass(PassFactory factory);

/// Marks the registered pass `id` to run in the -O1 and higher pipelines, after the cleanup where
/// the rewrite rules run (a plugin's fusion; withRewriteRules places them). In registration order.
void registerPipelinePass(const std::string& id);
/// The ids registerPipelinePass marked.
std::vector<std::string> pipelinePasses();

/// Adds the function body of an op of a plugin's domain (its decomposition into standard ops) for
/// this process: attachRegisteredFunctions writes it into models that call the op. An op that
/// has one already is kInvalidArgument.
Status registerOpFunction(std::shared_ptr<const ir::Function> fn);
/// For each op with a registered function that a graph of `model` calls and that has no function
/// in the model yet: adds the function (its "" import set to the model's opset) and imports the
/// op's domain. Returns how many functions were added.
StatusOr<int64_t> attachRegisteredFunctions(ir::Model& model);

/// Creates the pass registered under `id`; nullptr when unknown.
std::unique_ptr<pass::Pass> createPass(const std::string& id);

/// Every registered pass, in registry order (id, summary and options via the instance).
std::vector<std::unique_ptr<pass::Pass>> allPasses();

/// The textual pipeline of optimization level 0..3 (-O0 .. -O3).
StatusOr<std::string> pipelineForLevel(int level);

/// An option for every entry of one pass in a pipeline: `opt --fold-qdq` is
/// {"fold-constants", "fold-qdq", "true"}.
struct PassOptionSetting {
  std::string pass;
  std::string option;
  std::string value;
};

/// Sets each setting on every entry of its pass in `pipeline` (inside fixpoint groups too) that
/// does not set that option itself: an option written in the pipeline text wins. The settings
/// join the entries' options, so pipelineToString shows them. A pass the pipeline does not run is
/// no error (the setting has nothing to act on, as under -O0); a value the pass refuses is.
Status applyPassOptions(std::vector<pass::PipelineEntry>& pipeline,
                        const std::vector<PassOptionSetting>& settings);

/// Removes every entry of the passes `ids` from `pipeline` (inside fixpoint groups too; a group
/// left empty goes as well), as `opt --disable-pass` does: an id that names no pass is
/// kInvalidArgument, one the pipeline does not run is no error (as applyPassOptions).
Status removePasses(std::vector<pass::PipelineEntry>& pipeline,
                    const std::vector<std::string>& ids);

/// The pipeline for `level`, raising the default-domain opset to `target_opset` first when it is
/// positive, with the rewrites of execution target `target` ("" is portable ONNX; "cuda" adds its
/// fusions at level 3), and `settings` applied as applyPassOptions does.
StatusOr<std::string> pipelineFor(int level, int target_opset, const std::string& target,
                                  const std::vector<PassOptionSetting>& settings = {});

/// `pipeline` with convert-precision{to=precision, ...} where its types must be final: after
/// -O1's cleanup when the pipeline starts with it (so the fusions see the converted types; at -O2
/// and up after the weight absorption of fuse-pad and fuse-conv-affine, done in float32), else
/// first, after infer-shapes (a --passes pipeline, -O0); then a fixed point of
/// merge-consecutive, cse and dce (Cast pairs, the float32 initializers no longer read).
StatusOr<std::string> withPrecision(const std::string& pipeline, const std::string& precision,
                                    bool keep_io_types, const std::vector<std::string>& keep_ops,
                                    const std::vector<std::string>& keep_nodes,
                                    const std::vector<std::string>& keep_values = {},
                                    const std::vector<std::string>& safe_values = {});

/// Weight-only quantization as the front ends ask for it (`opt --quantize weights=int4`): the
/// options of the quantize-weights pass.
struct WeightQuantization {
  std::string weights;  ///< "int4" or "int8"; "" quantizes nothing
  int64_t block_size = 32;
  bool symmetric = true;
  std::vector<std::string> exclude;  ///< globs of node or weight names left float
  bool lm_head = true;               ///< the main graph's last MatMul/Gemm too
  bool embeddings = false;           ///< Gather embedding tables too
};

/// `pipeline` with quantize-weights{...} where the weights are final: after every portable
/// rewrite (absorbed scalings, folded constants, a --precision conversion: the scales take the
/// weights' type), before -O3's target rewrites (their fused products then read the dequantized
/// weights), at the end of any other pipeline. kInvalidArgument for a type other than int4 or
/// int8, or an exclude pattern that is empty or holds ',' or '"'.
StatusOr<std::string> withQuantize(const std::string& pipeline, const WeightQuantization& q);

/// Whether convert-precision keeps `node` float32 by default only for a reason a measurement can
/// lift (an accumulation-sensitive op; the Exp/Pow/Log feeding one follows it): opt's precision
/// analysis measures these and passes the safe ones as safe-values.
bool precisionMeasurable(const ir::Node& node);

/// Whether onnx's schema of default-domain `op` at `opset` allows `type` where it allows float:
/// a pass creating an op after convert-precision asks it for float16 and bfloat16 (true for any
/// other type, and for an op without a float tensor).
bool precisionAllows(const std::string& op, int64_t opset, DataType type);

/// `pipeline` with the opset upgrade in front when `target_opset` is positive. The upgrade comes
/// first (after shape inference, which its Softmax rule reads), so every later pass sees the new
/// opset.
std::string withTargetOpset(const std::string& pipeline, int target_opset);

}  // namespace onnxopt::passes
