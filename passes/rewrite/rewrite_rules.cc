// rewrite-rules: the user's declarative rules (include/onnxopt/passes/rewrite_rules.h), each a
// pattern graph and its replacement:
//
//   pattern P(w1..wn) => (p1..pk),  replacement R(w..) => (r1..rk)
//   G ⊇ P[w := v]  (every value inside P read only inside it)   ==>   G[p_i := R[w := v].r_i]
//
// The match is anchored on the producer of p1 and walks the pattern backwards, input by input,
// binding wildcards and attribute parameters; commutative binary ops try both operand orders
// (backtracking over the whole pattern). The replacement is built before the anchor; the
// matched nodes go. A replacement op of the user's own domain gets a model-local function (its
// body from the rules file, or the pattern itself) so that any ONNX runtime still runs the file.
#include "rewrite_rules_internal.h"

#include "onnxopt/ir/op_traits.h"

namespace onnxopt::passes {

using rules_detail::canonical;
using rules_detail::sinceVersion;

namespace {

bool isCommutative(const ir::Node& n) {
  return n.numInputs() == 2 &&
         ir::hasTrait(canonical(n.domain()), n.opType(), ir::OpTrait::kCommutative);
}

/// The number of inputs up to the last present one.
size_t presentInputs(const ir::Node& n) {
  size_t k = n.numInputs();
  while (k > 0 && n.input(k - 1) == nullptr) --k;
  return k;
}

bool sameAttributeValue(const ir::Attribute& a, const ir::Attribute& b) {
  ir::Attribute x = rewrite::copyPlainAttribute(a, "v");
  ir::Attribute y = rewrite::copyPlainAttribute(b, "v");
  x.doc_string.clear();
  y.doc_string.clear();
  return pass::attributesEqual(x, y);
}

const ir::Attribute* findIn(const std::vector<ir::Attribute>& list, const std::string& name) {
  for (const ir::Attribute& a : list) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace

namespace {

using Rule = RuleSet::Rule;

/// One attempt's bindings: pattern value -> graph value, pattern node -> graph node, attribute
/// parameter -> graph attribute (nullptr: the node leaves it out).
struct Bindings {
  std::unordered_map<const ir::Value*, ir::Value*> values;
  std::unordered_map<const ir::Node*, ir::Node*> nodes;
  std::unordered_set<const ir::Node*> taken;
  std::map<std::string, const ir::Attribute*> attrs;
};

bool constantMatches(const Rule::Constant& c, const ir::Value* value) {
  std::optional<ir::Tensor> t = ir::constantTensor(value);
  if (!t || t->dims() != c.value.dims()) return false;
  bool pattern_float = pass::isFloatType(c.value.dtype());
  if (pattern_float != pass::isFloatType(t->dtype())) return false;
  auto n = t->numElements();
  if (!n) return false;
  // A low-precision constant is its value as closely as its type holds it.
  double own = t->dtype() == ir::DataType::kFloat16    ? std::ldexp(1.0, -11)
               : t->dtype() == ir::DataType::kBfloat16 ? std::ldexp(1.0, -8)
                                                       : 0.0;
  for (int64_t i = 0; i < *n; ++i) {
    auto want = pass::elementAsDouble(c.value, static_cast<size_t>(i));
    auto got = pass::elementAsDouble(*t, static_cast<size_t>(i));
    if (!want || !got) return false;
    double tol = c.atol + std::max(c.rtol, own) * std::fabs(*want);
    if (std::isnan(*want) ? !std::isnan(*got) : std::fabs(*got - *want) > tol) return false;
  }
  return true;
}

class RulePattern final : public rewrite::Pattern {
 public:
  explicit RulePattern(const Rule& rule)
      : Pattern(rule.name, rule.anchor->opType(), canonical(rule.anchor->domain())), rule_(rule) {}

  bool matchAndRewrite(ir::Node* node, rewrite::PatternContext& ctx) const override {
    Bindings b;
    b.nodes[rule_.anchor] = node;
    b.taken.insert(node);
    for (size_t j = 0; j < rule_.anchor->numOutputs(); ++j) {
      if (rule_.anchor->output(j) != nullptr) b.values[rule_.anchor->output(j)] = node->output(j);
    }
    std::string why;
    if (!matchFrom(0, b, why)) return ctx.fail("{}", why);
    if (!finalChecks(b, why)) return ctx.fail("{}", why);
    rewrite(node, b, ctx.rewriter());
    return true;
  }

 private:
  bool matchFrom(size_t k, Bindings& b, std::string& why) const {
    if (k == rule_.order.size()) return true;
    const ir::Node* p = rule_.order[k];
    ir::Node* g = b.nodes.at(p);
    if (!nodeMatches(*p, *g, b, why)) return false;
    std::vector<std::vector<size_t>> orders;
    std::vector<size_t> identity(p->numInputs());
    for (size_t i = 0; i < identity.size(); ++i) identity[i] = i;
    orders.push_back(identity);
    if (isCommutative(*p)) orders.push_back({1, 0});
    for (const auto& order : orders) {
      Bindings trial = b;
      if (bindInputs(*p, *g, order, trial, why) && matchFrom(k + 1, trial, why)) {
        b = std::move(trial);
        return true;
      }
    }
    return false;
  }

  bool nodeMatches(const ir::Node& p, const ir::Node& g, Bindings& b, std::string& why) const {
    auto label = [&] {
      return fmt::format("{} '{}'", g.opType(), g.output(0) ? g.output(0)->name() : g.name());
    };
    if (g.opType() != p.opType() || canonical(g.domain()) != canonical(p.domain())) {
      why = fmt::format("{} is not a {}", label(), p.opType());
      return false;
    }
    if (presentInputs(g) != presentInputs(p)) {
      why = fmt::format("{} has {} inputs, the pattern's {}", label(), presentInputs(g),
                        presentInputs(p));
      return false;
    }
    const std::vector<ir::Attribute>* defaults = rule_.file->defaultsOf(p);
    static const std::vector<ir::Attribute> kNone;
    if (defaults == nullptr) defaults = &kNone;
    std::set<std::string> names;
    for (const auto& a : p.attributes()) names.insert(a.name);
    for (const auto& a : g.attributes()) names.insert(a.name);
    for (const auto& a : *defaults) names.insert(a.name);
    for (const std::string& name : names) {
      const ir::Attribute* pa = p.findAttribute(name);
      const ir::Attribute* ga = g.findAttribute(name);
      const ir::Attribute* def = findIn(*defaults, name);
      if (ga != nullptr &&
          (ga->kind == ir::Attribute::Kind::kGraph || ga->kind == ir::Attribute::Kind::kGraphs)) {
        why = fmt::format("{} holds a subgraph", label());
        return false;
      }
      if (ga == nullptr) ga = def;
      if (pa != nullptr && !pa->ref_attr_name.empty()) {
        auto [it, inserted] = b.attrs.emplace(pa->ref_attr_name, ga);
        if (!inserted) {
          bool same = (it->second == nullptr) == (ga == nullptr) &&
                      (ga == nullptr || sameAttributeValue(*it->second, *ga));
          if (!same) {
            why = fmt::format("@{} is bound to two different values", pa->ref_attr_name);
            return false;
          }
        }
        continue;
      }
      if (pa == nullptr) pa = def;
      if ((pa == nullptr) != (ga == nullptr) || (pa != nullptr && !sameAttributeValue(*pa, *ga))) {
        why = fmt::format("{}: attribute '{}' differs from the pattern's", label(), name);
        return false;
      }
    }
    return true;
  }

  bool bindInputs(const ir::Node& p, const ir::Node& g, const std::vector<size_t>& order,
                  Bindings& b, std::string& why) const {
    for (size_t i = 0; i < p.numInputs(); ++i) {
      const ir::Value* pv = p.input(i);
      ir::Value* gv = g.input(order[i]);
      if (pv == nullptr) {
        if (gv != nullptr) {
          why = fmt::format("input {} of {} is present where the pattern has none", order[i],
                            g.opType());
          return false;
        }
        continue;
      }
      if (gv == nullptr) {
        why = fmt::format("input {} of {} is absent", order[i], g.opType());
        return false;
      }
      const ir::Node* q = pv->producer();
      auto c = q == nullptr ? rule_.constants.end() : rule_.constants.find(q);
      if (c != rule_.constants.end()) {
        if (!constantMatches(c->second, gv)) {
          why = fmt::format("'{}' is not the pattern's constant '{}'", gv->name(), pv->name());
          return false;
        }
        continue;
      }
      auto [it, inserted] = b.values.emplace(pv, gv);
      if (!inserted && it->second != gv) {
        why = fmt::format("'{}' would be both '{}' and '{}'", pv->name(), it->second->name(),
                          gv->name());
        return false;
      }
      if (q == nullptr) continue;  // a wildcard
      ir::Node* m = gv->producer();
      if (m == nullptr || gv->outputIndex() != pv->outputIndex() || m->opType() != q->opType() ||
          canonical(m->domain()) != canonical(q->domain())) {
        why = fmt::format("'{}' is not the output of a {}", gv->name(), q->opType());
        return false;
      }
      auto [nit, fresh] = b.nodes.emplace(q, m);
      if (fresh) {
        if (!b.taken.insert(m).second) {
          why = fmt::format("{} '{}' would match two pattern nodes", m->opType(), gv->name());
          return false;
        }
      } else if (nit->second != m) {
        why = fmt::format("'{}' is not the pattern's {}", gv->name(), q->opType());
        return false;
      }
    }
    return true;
  }

  /// Values inside the match are read only inside it; outputs of the pattern after the first
  /// are read only after the anchor (where the replacement is built).
  bool finalChecks(const Bindings& b, std::string& why) const {
    std::set<const ir::Value*> pattern_outputs;
    for (const ir::Value* out : rule_.pattern->body->outputs()) pattern_outputs.insert(out);
    for (const auto& [p, g] : b.nodes) {
      for (size_t j = 0; j < g->numOutputs(); ++j) {
        const ir::Value* gv = g->output(j);
        if (gv == nullptr) continue;
        const ir::Value* pv = j < p->numOutputs() ? p->output(j) : nullptr;
        if (pv != nullptr && pattern_outputs.count(pv) > 0) continue;
        size_t inside = pv == nullptr ? 0 : pv->uses().size();
        bool outside_use = gv->isGraphOutput() || gv->uses().size() != inside;
        for (const ir::Use& u : gv->uses()) outside_use |= b.taken.count(u.user) == 0;
        if (outside_use) {
          why = fmt::format("'{}' is also read outside the pattern", gv->name());
          return false;
        }
      }
    }
    for (const ir::Value* w : rule_.pattern->body->inputs()) {
      auto it = b.values.find(w);
      if (it != b.values.end() && it->second->producer() != nullptr &&
          b.taken.count(it->second->producer()) > 0) {
        why = fmt::format("wildcard '{}' is a value inside the match", w->name());
        return false;
      }
    }
    const auto& outs = rule_.pattern->body->outputs();
    if (outs.size() > 1) {
      ir::Node* anchor = b.nodes.at(rule_.anchor);
      std::unordered_set<const ir::Node*> before;
      for (ir::Node* n = anchor->prev(); n != nullptr; n = n->prev()) before.insert(n);
      for (size_t k = 1; k < outs.size(); ++k) {
        for (const ir::Use& u : b.values.at(outs[k])->uses()) {
          if (b.taken.count(u.user) == 0 && before.count(u.user) > 0) {
            why = fmt::format("output '{}' of the pattern is read before its anchor",
                              outs[k]->name());
            return false;
          }
        }
      }
    }
    return true;
  }

  void rewrite(ir::Node* anchor, const Bindings& b, rewrite::Rewriter& rw) const {
    rw.setInsertionPoint(anchor);
    const ir::Graph& rbody = *rule_.replacement->body;
    std::unordered_map<const ir::Value*, ir::Value*> map;
    for (const ir::Value* in : rbody.inputs()) {
      const ir::Value* w = rule_.wildcard_of.at(in);
      auto it = b.values.find(w);
      map[in] = it == b.values.end() ? nullptr : it->second;
    }
    // Node names unique in the graph (onnxruntime requires it): after the rule and the value the
    // anchor computed, which no other node computes.
    std::string base = rule_.name + "/" + anchor->output(0)->name();
    size_t index = 0;
    std::unordered_set<const ir::Value*> created;
    for (const ir::Node* n : rbody) {
      std::vector<ir::Value*> inputs;
      for (const ir::Value* v : n->inputs()) inputs.push_back(v == nullptr ? nullptr : map.at(v));
      ir::Node* c = rw.createNode(n->opType(), n->domain(), inputs, n->numOutputs());
      rw.setName(c, rbody.numNodes() == 1 ? base : fmt::format("{}/{}", base, index++));
      for (const ir::Attribute& a : n->attributes()) {
        if (a.ref_attr_name.empty()) {
          rw.setAttribute(c, rewrite::copyPlainAttribute(a, a.name));
          continue;
        }
        const ir::Attribute* bound = b.attrs.at(a.ref_attr_name);
        if (bound != nullptr) rw.setAttribute(c, rewrite::copyPlainAttribute(*bound, a.name));
      }
      for (size_t j = 0; j < n->numOutputs(); ++j) {
        if (n->output(j) == nullptr) continue;
        map[n->output(j)] = c->output(j);
        created.insert(c->output(j));
        // Named after the rule (a value taking a replaced one's place takes its name below:
        // replaceAllUsesWith).
        rw.setName(c->output(j), rewrite::uniqueValueName(*anchor->owningGraph(),
                                                          rule_.name + "/" + n->output(j)->name()));
      }
    }
    // A created value takes the type and (through replaceAllUsesWith) the name of the value it
    // replaces: per-layer checks compare by name.
    const auto& pouts = rule_.pattern->body->outputs();
    for (size_t k = 0; k < pouts.size(); ++k) {
      ir::Value* old = b.values.at(pouts[k]);
      ir::Value* now = map.at(rbody.output(k));
      if (created.count(now) > 0) rw.setType(now, old->type());
      rw.replaceAllUsesWith(old, now);
    }
    // Users before producers: the pattern body is in topological order.
    std::vector<ir::Node*> dead;
    std::vector<const ir::Node*> body(rule_.pattern->body->begin(), rule_.pattern->body->end());
    for (auto it = body.rbegin(); it != body.rend(); ++it) {
      auto m = b.nodes.find(*it);
      if (m != b.nodes.end()) dead.push_back(m->second);
    }
    rw.eraseDeadNodes(dead);
  }

  const Rule& rule_;
};

/// Why `rule` cannot apply to a model of default-domain opset `opset` ("" when it can).
std::string opsetConflict(const Rule& rule, int64_t opset) {
  for (const auto& [op, since] : rule.ops) {
    int64_t have = sinceVersion(op, opset);
    if (have != since) {
      return have == 0 ? fmt::format("{} does not exist at opset {}", op, opset)
                       : fmt::format(
                             "{} is {}-{} at the model's opset {} but {}-{} at the "
                             "rules' opset {}",
                             op, op, have, opset, op, since, rule.rules_opset);
    }
  }
  return {};
}

class RewriteRulesPass final : public pass::Pass {
 public:
  std::string id() const override { return "rewrite-rules"; }
  std::string summary() const override {
    return "Apply declarative rewrite rules (opt --rewrite-rules FILE)";
  }
  std::string description() const override {
    return "Replaces every non-overlapping match of each rule's pattern graph by its replacement "
           "graph (docs/rewrite_rules.md). A replacement op of the user's own domain gets a "
           "model-local function, so other runtimes still run the output.";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"function-bodies", "bool", "true",
             "write a model-local function for each op of the user's domains a rule creates"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "function-bodies") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(function_bodies_, parseBool(name, value));
    return Status::ok();
  }
  void setRules(std::vector<std::shared_ptr<const RuleSet>> rules) { rules_ = std::move(rules); }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    std::vector<std::unique_ptr<rewrite::Pattern>> owned;
    std::vector<const rewrite::Pattern*> patterns;
    std::map<std::string, const Rule*> by_name;
    int64_t opset = model.opsetVersion("").value_or(0);
    for (const auto& set : rules_) {
      for (const auto& rule : set->rules()) {
        std::string conflict = opsetConflict(*rule, opset);
        if (!conflict.empty()) {
          setStat("skipped." + rule->name, 1);
          report(ctx.diagnostics,
                 {Severity::kWarning, "",
                  fmt::format("rewrite rule '{}' ({}) does not apply to this model: {}", rule->name,
                              rule->location, conflict)});
          continue;
        }
        owned.push_back(std::make_unique<RulePattern>(*rule));
        patterns.push_back(owned.back().get());
        by_name[rule->name] = rule.get();
      }
    }
    if (patterns.empty()) return false;
    ASSIGN_OR_RETURN(rewrite::DriverResult result,
                     rewrite::applyPatternsGreedily(model, patterns, ctx.driver));
    for (const auto& [name, count] : result.applied) bump("applied." + name, count);
    if (!result.converged) {
      report(ctx.diagnostics,
             {Severity::kWarning, "",
              fmt::format("pass 'rewrite-rules' did not converge in {} rounds; still applying: "
                          "{} (does a replacement match its own pattern?)",
                          result.rounds, fmt::join(result.last_round_patterns, ", "))});
    }
    if (!result.changed) return false;
    rewrite::Rewriter rw;
    for (const auto& [name, count] : result.applied) {
      if (count == 0) continue;
      const Rule* rule = by_name.at(name);
      for (const auto& [domain, version] : rule->domains) rw.addOpsetImport(model, domain, version);
      if (!function_bodies_) continue;
      for (const ir::Function* body : rule->bodies) {
        bool present = std::any_of(
            model.functions.begin(), model.functions.end(),
            [&](const auto& f) { return f->domain == body->domain && f->name == body->name; });
        if (present) continue;
        std::vector<ir::Value*> outs = body->body->outputs();
        auto fn = rewrite::copyToFunction(
            *body->body, body->domain, body->name,
            {body->body->inputs().begin(), body->body->inputs().end()}, {outs.begin(), outs.end()},
            body->attribute_names, body->opset_imports);
        fn->doc_string = body->doc_string;
        // The body's ops resolve to the same versions at the model's opset (opsetConflict).
        for (auto& imp : fn->opset_imports) {
          if (canonical(imp.domain).empty() && opset > 0) imp.version = opset;
        }
        rw.addFunction(model, std::move(fn));
        bump("functions-added");
      }
    }
    RETURN_IF_ERROR(attachTargetFunctions(model).status());
    return true;
  }

 private:
  std::vector<std::shared_ptr<const RuleSet>> rules_;
  bool function_bodies_ = true;
};

}  // namespace

std::unique_ptr<pass::Pass> createRewriteRulesPass() {
  return std::make_unique<RewriteRulesPass>();
}

void setRewriteRules(std::vector<pass::PipelineEntry>& pipeline,
                     const std::vector<std::shared_ptr<const RuleSet>>& rules) {
  for (pass::PipelineEntry& e : pipeline) {
    if (e.isFixpoint()) {
      setRewriteRules(e.group, rules);
    } else if (auto* p = dynamic_cast<RewriteRulesPass*>(e.pass.get())) {
      p->setRules(rules);
    }
  }
}

}  // namespace onnxopt::passes
