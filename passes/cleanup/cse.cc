// cse: common subexpression elimination.
//
//   %a = Op<attrs>(%x, %y); %b = Op<attrs>(%x, %y)   ==>   %a = Op<attrs>(%x, %y); uses of %b -> %a
//   initializers %w1, %w2 with equal type, dims and bytes  ==>   uses of %w2 -> %w1
//
// Same domain, op type, attributes and inputs (operand order matters). Never for nondeterministic
// ops (Random*, Multinomial, Bernoulli), ops with subgraphs, or when merging would rename a model
// output. Initializers that are graph inputs can be overridden by the caller and are never merged.
#include <map>
#include <unordered_map>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

bool isNondeterministic(const ir::Node& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return true;  // unknown semantics: keep
  if (pass::isNondeterministicOp(n.opType())) return true;
  // Dropout in training mode draws a random mask.
  if (n.opType() == "Dropout" && n.numInputs() >= 3 && n.input(2) != nullptr) {
    auto mode = pass::constantTensor(n.input(2));
    if (!mode || !pass::allElementsEqual(*mode, 0.0)) return true;
  }
  return false;
}

size_t hashCombine(size_t seed, size_t v) {
  return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

size_t nodeHash(const ir::Node& n) {
  size_t h = std::hash<std::string>()(n.opType());
  h = hashCombine(h, std::hash<std::string>()(n.domain()));
  for (const ir::Value* v : n.inputs()) h = hashCombine(h, std::hash<const void*>()(v));
  for (const ir::Attribute& a : n.attributes()) {
    h = hashCombine(h, std::hash<std::string>()(a.name));
    h = hashCombine(h, std::hash<int64_t>()(a.i));
  }
  return h;
}

/// A node with the same inputs as another also reads their first input, so that input has two
/// uses or more; a node whose first input has one use has no twin and need not be hashed (most
/// nodes of a large graph: this keeps the table to the few candidates). Nodes without inputs
/// are always candidates.
bool mayHaveTwin(const ir::Node& n) {
  for (const ir::Value* v : n.inputs()) {
    if (v != nullptr) return v->uses().size() >= 2;
  }
  return true;
}

bool sameAttributes(const ir::Node& a, const ir::Node& b) {
  if (a.attributes().size() != b.attributes().size()) return false;
  for (const ir::Attribute& x : a.attributes()) {
    const ir::Attribute* y = b.findAttribute(x.name);
    if (y == nullptr || !pass::attributesEqual(x, *y)) return false;
  }
  return true;
}

bool sameExpression(const ir::Node& a, const ir::Node& b) {
  return a.opType() == b.opType() && a.domain() == b.domain() && a.inputs() == b.inputs() &&
         a.numOutputs() == b.numOutputs() && sameAttributes(a, b);
}

class CommonSubexpressionEliminationPass final : public pass::GraphPass {
 public:
  std::string id() const override { return "cse"; }
  std::string summary() const override {
    return "Merge nodes with the same op, attributes and inputs, and initializers with equal data";
  }

 protected:
  StatusOr<bool> runOnGraph(ir::Graph& graph, ir::Model& /*model*/, rewrite::Rewriter& rewriter,
                            pass::PassContext& /*ctx*/) override {
    bool changed = mergeInitializers(graph, rewriter);
    std::unordered_multimap<size_t, ir::Node*> seen;
    for (ir::Node* n : graph) {
      if (!mayHaveTwin(*n) || !n->subgraphs().empty() || isNondeterministic(*n)) continue;
      size_t h = nodeHash(*n);
      ir::Node* match = nullptr;
      auto [lo, hi] = seen.equal_range(h);
      for (auto it = lo; it != hi; ++it) {
        if (sameExpression(*it->second, *n)) {
          match = it->second;
          break;
        }
      }
      if (match == nullptr) {
        seen.emplace(h, n);
        continue;
      }
      if (!canReplace(rewriter, *n, *match)) continue;
      std::vector<ir::Value*> replacement;
      for (size_t i = 0; i < n->numOutputs(); ++i) replacement.push_back(match->output(i));
      rewriter.replaceNode(n, replacement);
      bump("nodes-merged");
      changed = true;
    }
    return changed;
  }

 private:
  static bool canReplace(const rewrite::Rewriter& rewriter, const ir::Node& dup,
                         const ir::Node& kept) {
    for (size_t i = 0; i < dup.numOutputs(); ++i) {
      const ir::Value* out = dup.output(i);
      if (out == nullptr || !out->hasUses()) continue;
      // The kept node may omit an output that the duplicate's users read.
      if (kept.output(i) == nullptr) return false;
      if (!rewriter.canReplaceWithoutIdentity(out, kept.output(i))) return false;
    }
    return true;
  }

  bool mergeInitializers(ir::Graph& graph, rewrite::Rewriter& rewriter) {
    // Bucket by type and dims first: only tensors that could be equal are hashed (external data is
    // read in chunks for that, never through the mapping).
    std::map<std::pair<int32_t, std::vector<int64_t>>, std::vector<ir::Value*>> buckets;
    for (ir::Value* v : graph.initializers()) {
      const ir::Tensor* t = v->initializer();
      if (t == nullptr || v->kind() != ir::Value::Kind::kInitializer) continue;
      if (t->byteSize() == 0 && t->numElements().value_or(0) > 0) continue;  // no data to compare
      buckets[{static_cast<int32_t>(t->dtype()), t->dims()}].push_back(v);
    }
    std::vector<ir::Value*> merged;  // erased together: each erasure walks the graph's values
    for (auto& [key, values] : buckets) {
      if (values.size() < 2) continue;
      std::unordered_multimap<uint64_t, ir::Value*> seen;
      for (ir::Value* v : values) {
        const ir::Tensor& t = *v->initializer();
        uint64_t h = pass::tensorHash(t);
        ir::Value* match = nullptr;
        auto [lo, hi] = seen.equal_range(h);
        for (auto it = lo; it != hi; ++it) {
          if (pass::tensorsEqual(*it->second->initializer(), t)) {
            match = it->second;
            break;
          }
        }
        if (match == nullptr) {
          seen.emplace(h, v);
          continue;
        }
        // An initializer that is itself an output stays (merging would need an Identity).
        if (!rewriter.canReplaceWithoutIdentity(v, match)) continue;
        if (v->hasUses()) rewriter.replaceAllUsesWith(v, match);
        merged.push_back(v);
        bump("initializers-merged");
      }
    }
    rewriter.eraseInitializers(merged);
    return !merged.empty();
  }
};

}  // namespace

std::unique_ptr<pass::Pass> createCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionEliminationPass>();
}

}  // namespace onnxopt::passes
