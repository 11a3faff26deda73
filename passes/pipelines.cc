// The optimization levels, in one place, with the reason for each ordering decision.
#include "onnxopt/passes/registry.h"
#include "onnxopt/passes/rewrite_rules.h"

#include <algorithm>
#include <functional>

namespace onnxopt::passes {

namespace {

// -O1: cleanup, standard ONNX only.
//  - freeze-initializer-inputs first: weights listed as graph inputs (IR 3 required it; old
//    PyTorch exports kept it) are constants for every later pass, unless keep-overridable
//    (--keep-initializer-inputs) keeps them overridable.
//  - inline-functions next: calls of model-local functions become their bodies (onnxruntime
//    inlines them when it loads a model too), so that shape inference and every pattern see
//    standard ops; functions no one calls any more go in dce.
//  - lift-constants next: Constant nodes become initializers, so every later pattern sees one
//    kind of constant, and CSE can merge equal constants by content. It reads no types.
//  - infer-shapes after it: no-op and merge patterns decide on element types and shapes
//    (a Cast to the type it already has, a Reshape to the shape it already has). After the lift,
//    not before: an inference made before a changing pass is made again (fold-constants reads
//    the values of the graph it folds), and on exports full of Constant nodes the lift always
//    changes the graph.
//  - fold-constant-if before the loop: a constant condition usually comes from an initializer,
//    and inlining the branch exposes its nodes to every cleanup that follows.
//  - then to a fixed point: constant folding first (it turns Shape chains over static shapes
//    into constants, which no-op patterns then read); no-op elimination and merging of
//    consecutive ops expose duplicates (CSE) and dead producers (DCE); CSE makes nodes dead;
//    DCE last in each round so the next round starts from a graph without garbage.
constexpr const char* kLevel1 =
    "freeze-initializer-inputs,inline-functions,lift-constants,infer-shapes,fold-constant-if,"
    "fixpoint(fold-constants,eliminate-noop,merge-consecutive,fold-constant-if,cse,dce)";

}  // namespace

StatusOr<std::string> pipelineForLevel(int level) {
  switch (level) {
    case 0:
      return std::string();  // -O0: import, verify, export; nothing else.
    case 1:
      return std::string(kLevel1);
    case 2:
    case 3:
      // -O2 (default): -O1, then fusions to standard ONNX operators.
      //  - After cleanup, so patterns see Identity-free chains and constants as initializers.
      //  - fuse-pad before fuse-conv-affine: both rewrite Conv, and a padded Conv absorbs a
      //    following BatchNormalization just the same.
      //  - fuse-layernorm (opset 17+), fuse-gelu (opset 20+), fuse-rmsnorm and fuse-attention
      //    (opset 23+) after cleanup has removed Identity/Cast noise from the chains they match.
      //    fuse-attention after the normalizations: neither reads into the other's chain.
      //  - fuse-rotary (opset 23+) before fuse-attention: RoPE sits between Q's and K's head
      //    split and the attention, which then reads RotaryEmbedding's results as its Q and K.
      //  - eliminate-noop with strict-signed-zero=false: x + 0 -> x may turn a -0 into +0. -O2
      //    already accepts float reassociation (absorbed weights, fused kernels); signed zeros
      //    compare equal, and only 1/x, atan2 and copysign see the difference. -O1 stays strict.
      //  - einsum-to-matmul in the fusion fixed point: a MatMul may sum its products in another
      //    order than the Einsum kernel (-O2's float reassociation), and the MatMul it makes is
      //    what fuse-gemm and fuse-matmul-scale read.
      //  - fuse-scale-chain after the fusions: they match scalings by exact constants (Gelu's
      //    0.5 and 1/sqrt(2), attention's 1/sqrt(d)) that a merged constant would hide. It
      //    reassociates x*a*b into x*(a*b) (last-place rounding), an -O2 licence like the others.
      //  - fold-constants and dce in the same fixed point: absorbed weights are new initializers
      //    whose predecessors (the old weights) become dead.
      //  - fuse-matmul-scale after that fixed point: fuse-attention reads the scalings of Q and
      //    K^T as its scale, and fuse-scale-chain merges a chain of them first; what is left
      //    (attention the fusion refused) moves into the projection weights. dce drops the old
      //    weights.
      //  - optimize-transposes after the fusions, in a fixed point with merge-consecutive
      //    (which merges or cancels the Transpose pairs it brings together), fold-constants
      //    (constants it permutes) and dce: the fusions' patterns read Transposes where the
      //    exporters put them (fuse-attention's head split and K^T), so they see that graph first.
      //  - share-transposed-weight in that fixed point, before fold-constants: it leaves a tied
      //    embedding's Transpose<1,0> as the table's only reader, which fold-constants then
      //    stores in its place (in the same round, before optimize-transposes could move that
      //    Transpose through the new column Gather and undo it).
      //  - all of it in a fixed point: cancelling Transposes exposes chains to the fusions that a
      //    Transpose hid (tf2onnx's NHWC Conv -> Transpose -> Add(bias): fuse-conv-affine takes
      //    the Add once the Transposes are gone), so the fusions run again on that graph, and
      //    -O2 of an -O2 result changes nothing. Each round runs the fusions to their own fixed
      //    point before fuse-matmul-scale and the Transposes move, so the first round sees the
      //    exporter's graph (attention fuses there, as before) and a later one only what the
      //    transposes exposed; the transpose fixed point does not undo a fusion. infer-shapes
      //    opens each round: values that folding made static had no rank when shapes were
      //    first inferred (ONNX's expanded AffineGrid), and optimize-transposes needs the rank.
      // -O3 without a target is -O2: its rewrites are target-specific (pipelineFor).
      return std::string(kLevel1) +
             ",fixpoint(infer-shapes,fixpoint(einsum-to-matmul,fuse-pad,fuse-conv-affine,fuse-gemm,"
             "fuse-layernorm,fuse-rmsnorm,fuse-rotary,"
             "fuse-gelu,fuse-activations,fuse-attention,fuse-scale-chain,fold-constants,"
             "eliminate-noop{strict-signed-zero=false},cse,dce),fuse-matmul-scale,dce,"
             "fixpoint(optimize-transposes,share-transposed-weight,merge-consecutive,"
             "fold-constants,dce))";
    default:
      return invalidArgument("unknown optimization level {} (use 0 to 3)", level);
  }
}

StatusOr<std::string> withPrecision(const std::string& pipeline, const std::string& precision,
                                    bool keep_io_types, const std::vector<std::string>& keep_ops,
                                    const std::vector<std::string>& keep_nodes,
                                    const std::vector<std::string>& keep_values,
                                    const std::vector<std::string>& safe_values) {
  if (precision != "fp16" && precision != "bf16") {
    return invalidArgument("unknown precision '{}' (fp16 or bf16)", precision);
  }
  auto joined = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
    return "\"" + s + "\"";
  };
  for (const auto& list : {keep_ops, keep_nodes, keep_values, safe_values}) {
    for (const std::string& x : list) {
      if (x.find_first_of(",\"") != std::string::npos || x.empty()) {
        return invalidArgument(
            "--keep-op/--keep-node '{}': an empty name, or one with ',' or "
            "'\"', cannot be passed to the pass",
            x);
      }
    }
  }
  std::string step = "convert-precision{to=" + precision;
  if (!keep_io_types) step += ",keep-io-types=false";
  // Lists joined with ',' in quotes (a quoted value may hold any character but '"').
  if (!keep_ops.empty()) step += ",keep-ops=" + joined(keep_ops);
  if (!keep_nodes.empty()) step += ",keep-nodes=" + joined(keep_nodes);
  if (!keep_values.empty()) step += ",keep-values=" + joined(keep_values);
  if (!safe_values.empty()) step += ",safe-values=" + joined(safe_values);
  step += "},fixpoint(merge-consecutive,cse,dce)";
  const std::string level1(kLevel1);
  if (pipeline.rfind(level1, 0) == 0) {
    // Weight absorption first where the pipeline fuses: a BatchNormalization folds into its
    // Conv in float32, rounded once after, and a Conv kept in float32 (bfloat16 below opset 22)
    // would otherwise be cut from its BatchNormalization by a Cast.
    std::string absorb = pipeline.find("fuse-conv-affine") != std::string::npos
                             ? "fixpoint(fuse-pad,fuse-conv-affine,fold-constants,dce),"
                             : "";
    return level1 + "," + absorb + step + pipeline.substr(level1.size());
  }
  return "infer-shapes," + step + (pipeline.empty() ? "" : "," + pipeline);
}

std::string withUserRewrites(const std::string& pipeline, bool rules,
                             const std::vector<std::string>& plugin_passes) {
  // The user's rules and plugins' passes see the graph after -O1's cleanup (folded constants,
  // no Identity or Cast noise, inferred shapes), as the built-in fusions do, and before them: a
  // rule says what the user wants done with a chain that a fusion could otherwise take first.
  // cse and dce then drop constants and producers that only the replaced subgraphs read.
  auto named = [&](const std::string& id) {
    auto entries = pass::parsePipeline(pipeline, &createPass);
    if (!entries.isOk()) return pipeline.find(id) != std::string::npos;
    std::function<bool(const std::vector<pass::PipelineEntry>&)> has = [&](const auto& list) {
      for (const auto& e : list) {
        if (e.isFixpoint() ? has(e.group) : e.pass->id() == id) return true;
      }
      return false;
    };
    return has(*entries);
  };
  std::string step;
  if (rules && !named("rewrite-rules")) step = "rewrite-rules";
  for (const std::string& id : plugin_passes) {
    if (!named(id)) step += (step.empty() ? "" : ",") + id;
  }
  if (step.empty()) return pipeline;
  step += ",fixpoint(cse,dce)";
  const std::string level1(kLevel1);
  if (pipeline.rfind(level1, 0) == 0) {
    return level1 + "," + step + pipeline.substr(level1.size());
  }
  return "infer-shapes," + step + (pipeline.empty() ? "" : "," + pipeline);
}

std::string withTargetOpset(const std::string& pipeline, int target_opset) {
  if (target_opset <= 0) return pipeline;
  return fmt::format("infer-shapes,upgrade-opset{{target={}}}{}{}", target_opset,
                     pipeline.empty() ? "" : ",", pipeline);
}

Status applyPassOptions(std::vector<pass::PipelineEntry>& pipeline,
                        const std::vector<PassOptionSetting>& settings) {
  for (pass::PipelineEntry& e : pipeline) {
    if (e.isFixpoint()) {
      RETURN_IF_ERROR(applyPassOptions(e.group, settings));
      continue;
    }
    for (const PassOptionSetting& s : settings) {
      if (s.pass != e.pass->id()) continue;
      auto& options = e.options;
      if (std::any_of(options.begin(), options.end(),
                      [&](const auto& o) { return o.first == s.option; })) {
        continue;
      }
      RETURN_IF_ERROR(e.pass->setOption(s.option, s.value));
      options.emplace_back(s.option, s.value);
    }
  }
  return Status::ok();
}

namespace {

void removeEntries(std::vector<pass::PipelineEntry>& pipeline,
                   const std::vector<std::string>& ids) {
  for (pass::PipelineEntry& e : pipeline) {
    if (e.isFixpoint()) removeEntries(e.group, ids);
  }
  pipeline.erase(std::remove_if(pipeline.begin(), pipeline.end(),
                                [&](const pass::PipelineEntry& e) {
                                  if (e.isFixpoint()) return e.group.empty();
                                  return std::find(ids.begin(), ids.end(), e.pass->id()) !=
                                         ids.end();
                                }),
                 pipeline.end());
}

}  // namespace

Status removePasses(std::vector<pass::PipelineEntry>& pipeline,
                    const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (createPass(id) == nullptr) {
      return invalidArgument("--disable-pass: no pass '{}' (opt --list-passes lists them)", id);
    }
  }
  removeEntries(pipeline, ids);
  return Status::ok();
}

// -O3 --target cuda: -O2, then rewrites to ops of our own domain (ai.onnxopt) that the CUDA
// kernel table claims, each written to the model as a function (its decomposition), so the file
// stays portable.
//  - After every portable fusion: the patterns read the chains those leave (MatMul + Add that
//    fuse-gemm kept for rank > 2, Gelu from fuse-gelu).
//  - patch-conv-to-matmul first: a Conv whose windows tile the image (a ViT's patch embedding)
//    becomes reshapes, a Transpose and a MatMul before convert-nhwc would take it (wrapping it in
//    Transposes of its own), and fuse-matmul-epilogue takes its bias.
//  - convert-nhwc next: convolutions and pools to channels-last (tensor cores' layout), each
//    between two Transposes; then the transpose fixed point of -O2 again, which pushes those
//    Transposes through the ReLUs and residual Adds between convolutions and cancels them in
//    pairs (fold-constants permutes the constants they meet; dce drops the NCHW weights).
//  - fuse-matmul-epilogue: MatMul + bias first, then the activation onto it, in one fixed point;
//    fuse-skip-layernorm beside it: the residual Add it takes is not a bias Add (its operands
//    have the sum's full shape), so neither fusion takes the other's chain; fuse-conv-activation
//    too, after the transposes are gone (a Transpose between a convolution and its ReLU hides
//    the pair). dce removes what the fusions leave dead. fuse-gated-mlp before the epilogue
//    fusion: a GELU-gated MLP's Gelu(MatMul) would otherwise become MatMulBiasGelu, hiding the
//    gate (it reads the bias Adds as part of the projections itself). fuse-skip-layernorm takes
//    RMSNormalization's residual Add too.
//  - fuse-attention{nan-guard=true} before them: attention whose softmax has its NaNs made 0
//    (torch's SDPA export, which -O2 leaves: standard Attention propagates those NaNs) becomes
//    ai.onnxopt.SafeAttention on the 3-D projections, so the head splits, the K^T chain, the
//    Softmax, IsNaN and Where and both products run as one tensor-core kernel (its Q scaling,
//    which the transpose fixed point moved between Reshape and Transpose, joins the scale).
//  - fuse-packed-attention last: after the epilogue fusion has made the projections MatMulBias
//    (and left bias-free ones MatMul), SafeAttention reads Q, K and V in place from one packed
//    product: a Split into thirds goes (GPT-2's c_attn), three projections of one input become
//    one GEMM (BERT's query/key/value), and so do Attention-23's (a decoder's, read through
//    RotaryEmbedding, with a Split of their widths). dce drops the three weights that one
//    replaced. Attention
//    on head views of one sequence-first projection (torch's nn.MultiheadAttention) becomes
//    SeqFirstPackedAttention, and, between batch_first's two Transposes, PackedAttention on the
//    rows in batch-first order: a fixed point, as that second step anchors on the first one's
//    ai.onnxopt op, which the pass's function step declares the domain of after the first run.
constexpr const char* kCudaLevel3 =
    ",patch-conv-to-matmul,convert-nhwc,"
    "fixpoint(optimize-transposes,merge-consecutive,fold-constants,dce),"
    "fixpoint(fuse-attention{nan-guard=true},dce),"
    "fixpoint(fuse-conv-activation,fuse-gated-mlp,fuse-matmul-epilogue,fuse-skip-layernorm,dce),"
    "fixpoint(fuse-packed-attention,dce)";

StatusOr<std::string> withQuantize(const std::string& pipeline, const WeightQuantization& q) {
  if (q.weights != "int4" && q.weights != "int8") {
    return invalidArgument("unknown weight quantization '{}' (int4 or int8)", q.weights);
  }
  std::string exclude;
  for (const std::string& x : q.exclude) {
    if (x.find_first_of(",\"") != std::string::npos || x.empty()) {
      return invalidArgument(
          "--quantize-exclude '{}': an empty pattern, or one with ',' or '\"', cannot be passed "
          "to the pass",
          x);
    }
    exclude += (exclude.empty() ? "" : ",") + x;
  }
  std::string step = fmt::format("quantize-weights{{weights={},block-size={},symmetric={}",
                                 q.weights, q.block_size, q.symmetric ? "true" : "false");
  if (!exclude.empty()) step += ",exclude=\"" + exclude + "\"";
  if (!q.lm_head) step += ",lm-head=false";
  if (q.embeddings) step += ",embeddings=true";
  step += "}";
  const std::string cuda(kCudaLevel3);
  if (pipeline.size() >= cuda.size() &&
      pipeline.compare(pipeline.size() - cuda.size(), cuda.size(), cuda) == 0) {
    return pipeline.substr(0, pipeline.size() - cuda.size()) + "," + step + cuda;
  }
  return pipeline.empty() ? step : pipeline + "," + step;
}

StatusOr<std::string> pipelineFor(int level, int target_opset, const std::string& target,
                                  const std::vector<PassOptionSetting>& settings) {
  if (!target.empty() && target != "cuda") {
    return invalidArgument("unknown target '{}' (portable ONNX, the empty target, or cuda)",
                           target);
  }
  ASSIGN_OR_RETURN(std::string pipeline, pipelineForLevel(level));
  // Below -O3 a target changes nothing: -O1 and -O2 stay portable ONNX.
  if (target == "cuda" && level == 3) pipeline += kCudaLevel3;
  pipeline = withTargetOpset(pipeline, target_opset);
  if (settings.empty()) return pipeline;
  ASSIGN_OR_RETURN(auto entries, pass::parsePipeline(pipeline, &createPass));
  RETURN_IF_ERROR(applyPassOptions(entries, settings));
  return pass::pipelineToString(entries);
}

}  // namespace onnxopt::passes
