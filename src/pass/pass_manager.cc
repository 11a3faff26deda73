#include "onnxopt/pass/pass_manager.h"

#include <algorithm>
#include <cctype>

#include "onnxopt/ir/printer.h"
#include "onnxopt/ir/stats.h"
#include "onnxopt/ir/verifier.h"

namespace onnxopt::pass {
namespace {

class Parser {
 public:
  Parser(const std::string& text, PassFactory factory) : text_(text), factory_(factory) {}

  StatusOr<std::vector<PipelineEntry>> parse() {
    ASSIGN_OR_RETURN(auto entries, list());
    skipSpace();
    if (pos_ != text_.size()) return error("unexpected '{}'", text_[pos_]);
    return entries;
  }

 private:
  template <typename... Args>
  Status error(fmt::format_string<Args...> format, Args&&... args) {
    return invalidArgument("pipeline '{}', at {}: {}", text_, pos_,
                           fmt::format(format, std::forward<Args>(args)...));
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string word() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '-' ||
            text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  StatusOr<std::vector<PipelineEntry>> list() {
    std::vector<PipelineEntry> entries;
    skipSpace();
    if (pos_ == text_.size()) return entries;  // the empty pipeline
    do {
      ASSIGN_OR_RETURN(PipelineEntry e, entry());
      entries.push_back(std::move(e));
    } while (eat(','));
    return entries;
  }

  StatusOr<PipelineEntry> entry() {
    std::string id = word();
    if (id.empty()) return error("expected a pass id or fixpoint(...)");
    PipelineEntry e;
    if (id == "fixpoint") {
      if (!eat('(')) return error("expected '(' after fixpoint");
      ASSIGN_OR_RETURN(e.group, list());
      if (!eat(')')) return error("expected ')' to close fixpoint(");
      if (e.group.empty()) return error("fixpoint() needs at least one pass");
      return e;
    }
    e.pass = factory_(id);
    if (e.pass == nullptr) return error("unknown pass '{}' (see --list-passes)", id);
    if (eat('{')) {
      do {
        std::string key = word();
        if (key.empty()) return error("expected an option name");
        std::string value;
        if (eat('=')) {
          // A value of word characters, or one in double quotes (names with '/', ',' or ':').
          if (eat('"')) {
            size_t end = text_.find('"', pos_);
            if (end == std::string::npos) return error("expected '\"' to close a quoted value");
            value = text_.substr(pos_, end - pos_);
            pos_ = end + 1;
          } else {
            value = word();
          }
        }
        RETURN_IF_ERROR(e.pass->setOption(key, value));
        e.options.emplace_back(key, value);
      } while (eat(','));
      if (!eat('}')) return error("expected '}}' to close the options of '{}'", id);
    }
    return e;
  }

  const std::string& text_;
  PassFactory factory_;
  size_t pos_ = 0;
};

void appendPipeline(const std::vector<PipelineEntry>& entries, std::string& out) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += ",";
    if (entries[i].isFixpoint()) {
      out += "fixpoint(";
      appendPipeline(entries[i].group, out);
      out += ")";
    } else {
      out += entries[i].pass->id();
      const auto& options = entries[i].options;
      for (size_t k = 0; k < options.size(); ++k) {
        out += k == 0 ? "{" : ",";
        out += options[k].first;
        const std::string& value = options[k].second;
        bool plain = std::all_of(value.begin(), value.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
        });
        if (!value.empty()) out += "=" + (plain ? value : "\"" + value + "\"");
      }
      if (!options.empty()) out += "}";
    }
  }
}

int64_t countNodes(const ir::Model& model) {
  return static_cast<int64_t>(ir::computeStats(model).nodes);
}

}  // namespace

StatusOr<std::vector<PipelineEntry>> parsePipeline(const std::string& text, PassFactory factory) {
  return Parser(text, factory).parse();
}

std::string pipelineToString(const std::vector<PipelineEntry>& pipeline) {
  std::string out;
  appendPipeline(pipeline, out);
  return out;
}

PassRecord& PassManager::record(const std::string& id) {
  for (PassRecord& r : records_) {
    if (r.id == id) return r;
  }
  records_.push_back(PassRecord{id});
  return records_.back();
}

StatusOr<bool> PassManager::runPass(Pass& pass, ir::Model& model) {
  PassRecord& rec = record(pass.id());
  bool measure = inst_.time_passes || inst_.count_nodes;
  int64_t before = measure ? countNodes(model) : 0;
  auto start = std::chrono::steady_clock::now();
  auto changed = pass.run(model, ctx_);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!changed.isOk()) return changed.status().withContext(fmt::format("pass '{}'", pass.id()));
  ++rec.runs;
  rec.seconds += secs;
  if (*changed) ++rec.changed_runs;
  if (measure) {
    if (rec.runs == 1) rec.nodes_before = before;
    rec.nodes_after = countNodes(model);
  }
  if (inst_.verify_each) {
    Status st = ir::verifyModel(model);
    if (!st.isOk()) {
      return makeError(StatusCode::kInternal, "pass '{}' left an invalid model: {}", pass.id(),
                       st.message());
    }
  }
  if (inst_.ir_out != nullptr &&
      (inst_.print_ir_after_all || (inst_.print_ir_after_change && *changed))) {
    *inst_.ir_out << "// ----- IR after " << pass.id() << (*changed ? "" : " (unchanged)")
                  << " -----\n"
                  << ir::printModel(model, ir::PrintOptions{16});
  }
  return *changed;
}

StatusOr<bool> PassManager::runPassEntry(PipelineEntry& entry, ir::Model& model) {
  if (entry.clean_at && *entry.clean_at == generation()) {
    ++record(entry.pass->id()).skipped_runs;
    if (inst_.ir_out != nullptr && inst_.print_ir_after_all) {
      *inst_.ir_out << "// ----- " << entry.pass->id()
                    << " skipped: nothing changed since it last changed nothing -----\n";
    }
    return false;
  }
  int64_t before = generation();
  ctx_.graph_changes = changed_runs_;
  ASSIGN_OR_RETURN(bool changed, runPass(*entry.pass, model));
  if (changed) ++changed_runs_;
  entry.clean_at.reset();
  if (!changed && generation() == before) entry.clean_at = before;
  return changed;
}

StatusOr<bool> PassManager::runEntries(std::vector<PipelineEntry>& entries, ir::Model& model) {
  bool changed = false;
  for (PipelineEntry& e : entries) {
    if (!e.isFixpoint()) {
      ASSIGN_OR_RETURN(bool c, runPassEntry(e, model));
      changed |= c;
      continue;
    }
    int rounds = 0;
    bool round_changed = true;
    std::vector<std::string> changers;
    while (round_changed && rounds < ctx_.driver.max_rounds) {
      ++rounds;
      round_changed = false;
      changers.clear();
      for (PipelineEntry& inner : e.group) {
        std::vector<PipelineEntry> single;
        single.push_back(std::move(inner));
        auto inner_changed = runEntries(single, model);
        inner = std::move(single.front());
        if (!inner_changed.isOk()) return inner_changed.status();
        if (*inner_changed) {
          changers.push_back(inner.isFixpoint() ? "fixpoint(...)" : inner.pass->id());
        }
        round_changed |= *inner_changed;
      }
      changed |= round_changed;
    }
    if (round_changed) {
      std::string pipeline;
      appendPipeline(e.group, pipeline);
      if (ctx_.driver.verify_convergence) {
        return makeError(StatusCode::kResourceExhausted,
                         "fixpoint({}) did not converge in {} rounds; still changing: {}", pipeline,
                         ctx_.driver.max_rounds, fmt::join(changers, ", "));
      }
      report(ctx_.diagnostics,
             {Severity::kWarning, "",
              fmt::format("fixpoint({}) did not converge in {} rounds; still changing: {}",
                          pipeline, ctx_.driver.max_rounds, fmt::join(changers, ", "))});
    }
  }
  return changed;
}

namespace {
void forgetCleanRuns(std::vector<PipelineEntry>& entries) {
  for (PipelineEntry& e : entries) {
    e.clean_at.reset();
    forgetCleanRuns(e.group);
  }
}
}  // namespace

StatusOr<bool> PassManager::run(ir::Model& model) {
  forgetCleanRuns(pipeline_);  // what held for another model says nothing of this one
  ctx_.inferred = {};
  return runEntries(pipeline_, model);
}

std::vector<std::pair<std::string, int64_t>> PassManager::statistics() const {
  std::vector<std::pair<std::string, int64_t>> out;
  std::function<void(const std::vector<PipelineEntry>&)> walk =
      [&](const std::vector<PipelineEntry>& entries) {
        for (const PipelineEntry& e : entries) {
          if (e.isFixpoint()) {
            walk(e.group);
            continue;
          }
          for (const auto& [name, value] : e.pass->statistics()) {
            out.emplace_back(e.pass->id() + "." + name, value);
          }
        }
      };
  walk(pipeline_);
  return out;
}

std::string PassManager::timingReport() const {
  double total = 0;
  for (const PassRecord& r : records_) total += r.seconds;
  std::string out =
      fmt::format("{:<28} {:>6} {:>8} {:>10} {:>7} {:>9} {:>9} {:>8}\n", "pass", "runs", "changed",
                  "time (ms)", "%", "nodes in", "nodes out", "skipped");
  for (const PassRecord& r : records_) {
    out += fmt::format("{:<28} {:>6} {:>8} {:>10.3f} {:>6.1f}% {:>9} {:>9} {:>8}\n", r.id, r.runs,
                       r.changed_runs, r.seconds * 1e3, total > 0 ? 100 * r.seconds / total : 0.0,
                       r.nodes_before, r.nodes_after, r.skipped_runs);
  }
  out += fmt::format("{:<28} {:>6} {:>8} {:>10.3f}\n", "total", "", "", total * 1e3);
  return out;
}

}  // namespace onnxopt::pass
