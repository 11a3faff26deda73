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
#include "onnxopt/passes/rewrite_rules.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "../opset/op_versions.h"
#include "onnxopt/ir/constants.h"
#include "onnxopt/ir/op_traits.h"
#include "onnxopt/pass/matchers.h"
#include "onnxopt/passes/target_ops.h"
#include "onnxopt/rewrite/pattern.h"

namespace onnxopt::passes {

namespace {

constexpr const char* kPatternDomain = "pattern";
constexpr const char* kReplacementDomain = "replacement";

std::string canonical(const std::string& domain) {
  return domain == "ai.onnx" ? "" : domain;
}

/// Domains whose ops need no function body: ONNX's own, and ours (attachTargetFunctions).
bool isStandardDomain(const std::string& domain) {
  std::string d = canonical(domain);
  return d.empty() || d == "ai.onnx.ml" || d == "ai.onnx.preview.training" ||
         d == "ai.onnx.preview" || d == kTargetDomain;
}

/// The since-version a default-domain `op` resolves to at `opset`; 0 when the op does not exist
/// there (or the table does not know it).
int64_t sinceVersion(const std::string& op, int64_t opset) {
  const OpVersion* v = resolveOpVersion(op, opset);
  return v == nullptr ? 0 : v->since;
}

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

std::string where(const ir::FunctionFile& file, int line) {
  return line > 0 ? fmt::format("{}:{}", file.path, line) : file.path;
}

}  // namespace

/// A compiled rule: the pattern in match order, its constants and the replacement.
struct RuleSet::Rule {
  std::string name;
  std::string location;  ///< "rules.onnxtxt:12"
  const ir::FunctionFile* file = nullptr;
  const ir::Function* pattern = nullptr;
  const ir::Function* replacement = nullptr;
  /// Pattern nodes that match graph nodes (not Constants), in the order the match visits them:
  /// the anchor first, then each node's producers.
  std::vector<const ir::Node*> order;
  const ir::Node* anchor = nullptr;
  struct Constant {
    ir::Tensor value;
    double rtol = 0;
    double atol = 0;
  };
  std::unordered_map<const ir::Node*, Constant> constants;
  /// Pattern input (wildcard) of each replacement input.
  std::unordered_map<const ir::Value*, const ir::Value*> wildcard_of;
  /// Default-domain ops of both sides with their since-version at the rules' opset: the rule
  /// applies to a model whose opset resolves every one to the same version.
  std::vector<std::pair<std::string, int64_t>> ops;
  int64_t rules_opset = 0;
  /// Function bodies for the replacement's ops of the user's domains, and those domains' versions.
  std::vector<const ir::Function*> bodies;
  std::vector<std::unique_ptr<ir::Function>> derived_bodies;
  std::map<std::string, int64_t> domains;
};

RuleSet::~RuleSet() = default;

std::vector<std::string> RuleSet::names() const {
  std::vector<std::string> out;
  for (const auto& r : rules_) out.push_back(r->name);
  return out;
}

const std::vector<std::string>& ruleFileExtraAttributes() {
  static const std::vector<std::string> extra = {"Constant.rtol", "Constant.atol"};
  return extra;
}

namespace {

/// `src`'s body (a pattern) as function `domain`.`name` with formal inputs `inputs` (pattern
/// wildcards, in the call's order) and outputs `outputs`; attribute references renamed by
/// `attr_names` (pattern parameter -> the call's attribute); the pattern-only attributes (a
/// Constant's rtol/atol) dropped.
std::unique_ptr<ir::Function> copyAsFunction(const ir::Function& src, const std::string& domain,
                                             const std::string& name,
                                             const std::vector<const ir::Value*>& inputs,
                                             const std::vector<const ir::Value*>& outputs,
                                             const std::map<std::string, std::string>& attr_names) {
  std::vector<std::string> attributes;
  for (const auto& [param, attr] : attr_names) attributes.push_back(attr);
  auto fn = rewrite::copyToFunction(
      *src.body, domain, name, inputs, outputs, attributes, src.opset_imports, attr_names,
      [](const ir::Node& n, const ir::Attribute& a) {
        return n.opType() == "Constant" && (a.name == "rtol" || a.name == "atol");
      });
  fn->doc_string = fmt::format("the subgraph that rewrite rule '{}' replaced", src.name);
  return fn;
}

class RuleCompiler {
 public:
  RuleCompiler(const ir::FunctionFile& file, const ir::Function& pattern,
               const ir::Function& replacement, const std::vector<const ir::Function*>& others)
      : file_(file), pattern_(pattern), replacement_(replacement), others_(others) {}

  StatusOr<std::unique_ptr<RuleSet::Rule>> compile() {
    auto rule = std::make_unique<RuleSet::Rule>();
    rule->name = pattern_.name;
    rule->location = where(file_, file_.lineOf(pattern_));
    rule->file = &file_;
    rule->pattern = &pattern_;
    rule->replacement = &replacement_;
    for (const auto& imp : pattern_.opset_imports) {
      if (canonical(imp.domain).empty()) rule->rules_opset = imp.version;
    }
    const ir::Graph& body = *pattern_.body;
    if (body.empty()) return fail(pattern_, "the pattern has no node");
    if (body.numOutputs() == 0) return fail(pattern_, "the pattern has no output");
    std::set<std::string> params(pattern_.attribute_names.begin(), pattern_.attribute_names.end());
    std::set<std::string> bound_params;
    for (const ir::Node* n : body) {
      for (const ir::Attribute& a : n->attributes()) {
        if (a.kind == ir::Attribute::Kind::kGraph || a.kind == ir::Attribute::Kind::kGraphs) {
          return failAt(*n, "pattern nodes cannot hold subgraphs ('{}')", a.name);
        }
        if (!a.ref_attr_name.empty()) {
          if (params.count(a.ref_attr_name) == 0) {
            return failAt(*n, "attribute '{}' refers to @{}, which the pattern does not declare",
                          a.name, a.ref_attr_name);
          }
          bound_params.insert(a.ref_attr_name);
        }
      }
      if (n->opType() == "Constant" && canonical(n->domain()).empty()) {
        ASSIGN_OR_RETURN(RuleSet::Rule::Constant c, constant(*n));
        rule->constants.emplace(n, std::move(c));
      } else if (canonical(n->domain()).empty()) {
        rule->ops.emplace_back(n->opType(), sinceVersion(n->opType(), rule->rules_opset));
      }
    }
    for (const ir::Value* out : body.outputs()) {
      if (out->producer() == nullptr || out->isGraphInput()) {
        return fail(pattern_, "output '{}' is a wildcard, not a node's output", out->name());
      }
      if (rule->constants.count(out->producer()) > 0) {
        return fail(pattern_, "output '{}' is a constant", out->name());
      }
    }
    // Match order: from the anchor (the first output's producer) through producers.
    rule->anchor = body.output(0)->producer();
    std::unordered_set<const ir::Node*> seen{rule->anchor};
    rule->order.push_back(rule->anchor);
    for (size_t k = 0; k < rule->order.size(); ++k) {
      for (const ir::Value* in : rule->order[k]->inputs()) {
        const ir::Node* p = in == nullptr ? nullptr : in->producer();
        if (p == nullptr || rule->constants.count(p) > 0 || !seen.insert(p).second) continue;
        rule->order.push_back(p);
      }
    }
    for (const ir::Node* n : body) {
      if (seen.count(n) == 0 && rule->constants.count(n) == 0) {
        return failAt(*n,
                      "node '{}' ({}) does not lead to the pattern's first output '{}': every "
                      "pattern node must feed it",
                      n->output(0) != nullptr ? n->output(0)->name() : n->name(), n->opType(),
                      body.output(0)->name());
      }
    }
    RETURN_IF_ERROR(compileReplacement(*rule, bound_params));
    return rule;
  }

 private:
  template <typename... Args>
  Status fail(const ir::Function& fn, fmt::format_string<Args...> format, Args&&... args) {
    return invalidArgument("{}: rule '{}' ({}): {}", where(file_, file_.lineOf(fn)), fn.name,
                           fn.domain, fmt::format(format, std::forward<Args>(args)...));
  }
  template <typename... Args>
  Status failAt(const ir::Node& n, fmt::format_string<Args...> format, Args&&... args) {
    const ir::Function& fn = n.owningGraph() == replacement_.body.get() ? replacement_ : pattern_;
    int line = file_.lineOf(n);
    return invalidArgument("{}: rule '{}' ({}): {}", where(file_, line ? line : file_.lineOf(fn)),
                           fn.name, fn.domain, fmt::format(format, std::forward<Args>(args)...));
  }

  StatusOr<RuleSet::Rule::Constant> constant(const ir::Node& n) {
    RuleSet::Rule::Constant c;
    std::optional<ir::Tensor> t;
    int values = 0;
    for (const ir::Attribute& a : n.attributes()) {
      if (a.name == "rtol" || a.name == "atol") {
        double v = a.kind == ir::Attribute::Kind::kFloat ? a.f
                   : a.kind == ir::Attribute::Kind::kInt ? static_cast<double>(a.i)
                                                         : -1.0;
        if (!(v >= 0)) return failAt(n, "Constant's {} must be a number >= 0", a.name);
        (a.name == "rtol" ? c.rtol : c.atol) = v;
      } else if (!a.ref_attr_name.empty()) {
        return failAt(n, "a pattern Constant's value cannot be a parameter (@{})", a.ref_attr_name);
      } else {
        ++values;
        t = ir::constantAttributeTensor(a);
      }
    }
    if (!t || values != 1 || t->dtype() == ir::DataType::kString) {
      return failAt(n,
                    "a pattern Constant takes value, value_float(s) or value_int(s) (and rtol, "
                    "atol)");
    }
    c.value = std::move(*t);
    return c;
  }

  Status compileReplacement(RuleSet::Rule& rule, const std::set<std::string>& bound_params) {
    const ir::Graph& rbody = *replacement_.body;
    const ir::Graph& pbody = *pattern_.body;
    if (rbody.numOutputs() != pbody.numOutputs()) {
      return fail(replacement_, "has {} outputs but its pattern has {}", rbody.numOutputs(),
                  pbody.numOutputs());
    }
    for (const ir::Value* in : rbody.inputs()) {
      auto it = std::find_if(pbody.inputs().begin(), pbody.inputs().end(),
                             [&](const ir::Value* p) { return p->name() == in->name(); });
      if (it == pbody.inputs().end()) {
        return fail(replacement_, "input '{}' is not an input of the pattern", in->name());
      }
      if (in->hasUses() && !(*it)->hasUses()) {
        return fail(replacement_,
                    "input '{}' is read, but the pattern does not read it (so it "
                    "binds nothing)",
                    in->name());
      }
      rule.wildcard_of[in] = *it;
    }
    for (const ir::Value* out : rbody.outputs()) {
      if (out->isGraphInput()) continue;  // the replacement is a wildcard itself
      if (out->producer() == nullptr) {
        return fail(replacement_, "output '{}' is not computed", out->name());
      }
    }
    for (const ir::Node* n : rbody) {
      for (const ir::Attribute& a : n->attributes()) {
        if (a.kind == ir::Attribute::Kind::kGraph || a.kind == ir::Attribute::Kind::kGraphs) {
          return failAt(*n, "replacement nodes cannot hold subgraphs ('{}')", a.name);
        }
        if (!a.ref_attr_name.empty() && bound_params.count(a.ref_attr_name) == 0) {
          return failAt(*n, "attribute '{}' refers to @{}, which the pattern does not bind", a.name,
                        a.ref_attr_name);
        }
      }
      if (canonical(n->domain()).empty()) {
        rule.ops.emplace_back(n->opType(), sinceVersion(n->opType(), rule.rules_opset));
      }
      if (isStandardDomain(n->domain())) continue;
      for (const auto& imp : replacement_.opset_imports) {
        if (imp.domain == n->domain()) rule.domains[imp.domain] = imp.version;
      }
      RETURN_IF_ERROR(bodyFor(rule, *n));
    }
    for (const auto& [op, since] : rule.ops) {
      if (since == 0) {
        return fail(pattern_, "op '{}' does not exist at the rules' opset {}", op,
                    rule.rules_opset);
      }
    }
    return Status::ok();
  }

  /// Finds or derives the function body of `call`, a replacement node of the user's domain.
  Status bodyFor(RuleSet::Rule& rule, const ir::Node& call) {
    for (const ir::Function* f : others_) {
      if (f->domain == call.domain() && f->name == call.opType()) {
        rule.bodies.push_back(f);
        return Status::ok();
      }
    }
    const ir::Graph& rbody = *replacement_.body;
    bool only = rbody.numNodes() == 1 && call.numOutputs() == rbody.numOutputs();
    for (size_t j = 0; only && j < call.numOutputs(); ++j) {
      only = call.output(j) == rbody.output(j);
    }
    if (!only) {
      return failAt(call,
                    "{}.{} needs a function body for portable output: give one in this file (a "
                    "function of domain '{}' named '{}'), or make the op the replacement's only "
                    "node (the pattern then is its body)",
                    call.domain(), call.opType(), call.domain(), call.opType());
    }
    std::vector<const ir::Value*> inputs;
    for (const ir::Value* v : call.inputs()) {
      if (v == nullptr || !v->isGraphInput()) {
        return failAt(call,
                      "{}.{}: to take the pattern as its body, every input must be one of "
                      "the pattern's inputs",
                      call.domain(), call.opType());
      }
      const ir::Value* w = rule.wildcard_of.at(v);
      if (std::find(inputs.begin(), inputs.end(), w) != inputs.end()) {
        return failAt(call, "{}.{} reads '{}' twice: a function's inputs are distinct",
                      call.domain(), call.opType(), v->name());
      }
      inputs.push_back(w);
    }
    for (const ir::Value* w : pattern_.body->inputs()) {
      if (w->hasUses() && std::find(inputs.begin(), inputs.end(), w) == inputs.end()) {
        return failAt(call,
                      "{}.{} does not take pattern input '{}', which its body (the pattern) "
                      "reads",
                      call.domain(), call.opType(), w->name());
      }
    }
    std::map<std::string, std::string> attr_names;  // pattern parameter -> call attribute
    for (const ir::Attribute& a : call.attributes()) {
      if (!a.ref_attr_name.empty()) attr_names[a.ref_attr_name] = a.name;
    }
    for (const ir::Node* n : *pattern_.body) {
      for (const ir::Attribute& a : n->attributes()) {
        if (!a.ref_attr_name.empty() && attr_names.count(a.ref_attr_name) == 0) {
          return failAt(call, "{}.{} does not pass @{} on, which its body (the pattern) reads",
                        call.domain(), call.opType(), a.ref_attr_name);
        }
      }
    }
    std::vector<ir::Value*> pattern_outputs = pattern_.body->outputs();
    std::vector<const ir::Value*> outputs(pattern_outputs.begin(), pattern_outputs.end());
    rule.derived_bodies.push_back(
        copyAsFunction(pattern_, call.domain(), call.opType(), inputs, outputs, attr_names));
    rule.bodies.push_back(rule.derived_bodies.back().get());
    return Status::ok();
  }

  const ir::FunctionFile& file_;
  const ir::Function& pattern_;
  const ir::Function& replacement_;
  const std::vector<const ir::Function*>& others_;
};

}  // namespace

StatusOr<std::shared_ptr<const RuleSet>> compileRewriteRules(ir::FunctionFile file) {
  std::shared_ptr<RuleSet> set(new RuleSet());
  set->path_ = file.path;
  set->file_ = std::move(file);
  const ir::FunctionFile& f = set->file_;
  std::map<std::string, const ir::Function*> patterns, replacements;
  std::vector<const ir::Function*> others;
  for (const auto& fn : f.model->functions) {
    if (fn->domain != kPatternDomain && fn->domain != kReplacementDomain) {
      others.push_back(fn.get());
      continue;
    }
    auto& table = fn->domain == kPatternDomain ? patterns : replacements;
    if (!table.emplace(fn->name, fn.get()).second) {
      return invalidArgument("{}: rule '{}' has two {} functions", where(f, f.lineOf(*fn)),
                             fn->name, fn->domain);
    }
  }
  for (const auto& [name, fn] : replacements) {
    if (patterns.count(name) == 0) {
      return invalidArgument(
          "{}: replacement '{}' has no pattern (a function of domain "
          "\"pattern\" named '{}')",
          where(f, f.lineOf(*fn)), name, name);
    }
  }
  // File order.
  std::vector<const ir::Function*> ordered;
  for (const auto& fn : f.model->functions) {
    if (fn->domain == kPatternDomain) ordered.push_back(fn.get());
  }
  if (ordered.empty()) {
    return invalidArgument(
        "{}: no rule (a rule is a function of domain \"pattern\" and one of "
        "domain \"replacement\" with the same name)",
        f.path);
  }
  for (const ir::Function* p : ordered) {
    auto r = replacements.find(p->name);
    if (r == replacements.end()) {
      return invalidArgument(
          "{}: pattern '{}' has no replacement (a function of domain "
          "\"replacement\" named '{}')",
          where(f, f.lineOf(*p)), p->name, p->name);
    }
    RuleCompiler compiler(f, *p, *r->second, others);
    ASSIGN_OR_RETURN(auto rule, compiler.compile());
    set->rules_.push_back(std::move(rule));
  }
  return std::shared_ptr<const RuleSet>(std::move(set));
}

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
