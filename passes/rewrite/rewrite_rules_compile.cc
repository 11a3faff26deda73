// rewrite-rules, compiling: a rules file's pattern and replacement functions checked and turned
// into Rules (rewrite_rules.cc says what a rule means and how it is applied).
#include "rewrite_rules_internal.h"

namespace onnxopt::passes {

using rules_detail::canonical;
using rules_detail::kPatternDomain;
using rules_detail::kReplacementDomain;
using rules_detail::sinceVersion;

namespace {

/// Domains whose ops need no function body: ONNX's own, and ours (attachTargetFunctions).
bool isStandardDomain(const std::string& domain) {
  std::string d = canonical(domain);
  return d.empty() || d == "ai.onnx.ml" || d == "ai.onnx.preview.training" ||
         d == "ai.onnx.preview" || d == kTargetDomain;
}

std::string where(const ir::FunctionFile& file, int line) {
  return line > 0 ? fmt::format("{}:{}", file.path, line) : file.path;
}

}  // namespace

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

}  // namespace onnxopt::passes
