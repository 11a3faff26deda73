#include "onnxopt/runtime/precision_analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "onnxopt/bridge/kernel_bridge.h"
#include "onnxopt/kernels/reference.h"
#include "onnxopt/runtime/compare.h"
#include "onnxopt/support/half.h"

namespace onnxopt::runtime {
namespace {

double maxFinite(DataType t) {
  return largestFinite(t);
}

/// `f` stored as `t` and read back; `saturate` clamps finite values past the range first.
float roundTo(float f, DataType t, bool saturate) {
  return fromLowPrecision(toLowPrecision(f, t, saturate), t);
}

/// A float32 tensor with every element stored as `t` and read back (others unchanged).
kernels::HostTensor rounded(const kernels::HostTensor& x, DataType t, bool saturate) {
  kernels::HostTensor out = x;
  if (x.dtype != DataType::kFloat) return out;
  for (int64_t i = 0; i < x.numElements(); ++i)
    out.set<float>(i, roundTo(x.get<float>(i), t, saturate));
  return out;
}

/// Largest finite magnitude of a float tensor, and whether it holds an infinity ({0, false} for
/// other types: the conversion leaves them alone).
std::pair<double, bool> magnitudeOf(const kernels::HostTensor& t) {
  if (t.dtype != DataType::kFloat && t.dtype != DataType::kDouble) return {0, false};
  double most = 0;
  bool inf = false;
  for (double v : tensorAsDoubles(t).value_or(std::vector<double>{})) {
    if (std::isinf(v)) inf = true;
    if (std::isfinite(v)) most = std::max(most, std::fabs(v));
  }
  return {most, inf};
}

/// Runs `n`'s reference kernel on `inputs` (nullptr for omitted ones), float32 compute.
StatusOr<std::vector<kernels::HostTensor>> evaluate(
    const ir::Model& model, const ir::Node& n,
    const std::vector<const kernels::HostTensor*>& inputs) {
  int64_t opset = model.opsetVersion(n.domain()).value_or(1);
  return kernels::runReferenceKernel(kernels::referenceOpName(n.domain(), n.opType()), opset,
                                     inputs, bridge::toKernelAttrs(n), n.numOutputs());
}

bool sameBits(const kernels::HostTensor& a, const kernels::HostTensor& b) {
  return a.dtype == b.dtype && a.dims == b.dims && a.bytes == b.bytes;
}

/// One node's error in the target type (Analyzer::measure).
struct Measure {
  double error = 0;
  double magnitude = 0;
  std::string failed;
};

/// The analysis of one float32 run of a model: the run's recorded values, the masks that
/// saturating constants make, and the four steps that fill a PrecisionAnalysis in order.
class Analyzer {
 public:
  Analyzer(const ir::Model& model, const Feeds& feeds, const ExecutionResult& ran,
           const PrecisionAnalysisOptions& options)
      : model_(model),
        ran_(ran),
        options_(options),
        target_(options.target),
        lim_(maxFinite(target_)),
        limit_(options.range_fraction * lim_),
        tolerance_(options.tolerance > 0 ? options.tolerance
                                         : (target_ == DataType::kFloat16 ? 0x1p-7 : 0x1p-4)) {
    for (const RecordedValue& r : ran.intermediates) {
      recorded_[r.name] = &r.value;
    }
    for (const auto& [name, t] : feeds) recorded_.emplace(name, &t);
  }

  void findSaturating(PrecisionAnalysis& out);
  void propagateMasks();
  void findPastRange(PrecisionAnalysis& out);
  void measureOthers(PrecisionAnalysis& out);

 private:
  const kernels::HostTensor* valueOf(const ir::Value* v, bool with_masks);
  bool isFloat(const ir::Value* v);
  bool beyondRange(const ir::Value* v);
  bool measured(const ir::Node& n);
  Measure measure(const ir::Node& n, bool with_masks);
  std::string describe(double error) const {
    return std::isinf(error) ? std::string("not finite in the type")
                             : fmt::format("error {:.2g} past {:.2g}", error, tolerance_);
  }

  const ir::Model& model_;
  const ExecutionResult& ran_;
  const PrecisionAnalysisOptions& options_;
  const DataType target_;
  const double lim_;
  const double limit_;
  const double tolerance_;
  /// The float32 run's values by name; `masked_` overrides some (findSaturating).
  std::map<std::string, const kernels::HostTensor*> recorded_;
  std::map<const ir::Value*, kernels::HostTensor> initializers_;  // converted on first use
  std::map<std::string, kernels::HostTensor> masked_;
  std::set<const ir::Node*> saturating_;
  std::set<std::string> past_;
};

const kernels::HostTensor* Analyzer::valueOf(const ir::Value* v, bool with_masks) {
  if (with_masks) {
    if (auto it = masked_.find(v->name()); it != masked_.end()) return &it->second;
  }
  if (auto it = recorded_.find(v->name()); it != recorded_.end()) return it->second;
  if (v->initializer() == nullptr) return nullptr;
  auto [it, fresh] = initializers_.try_emplace(v);
  if (fresh) it->second = bridge::toHost(*v->initializer());
  return &it->second;
}

// By the recorded value (a model's intermediate types may be undeclared before shape
// inference).
bool Analyzer::isFloat(const ir::Value* v) {
  if (v == nullptr) return false;
  const kernels::HostTensor* t = valueOf(v, false);
  return t != nullptr ? t->dtype == DataType::kFloat
                      : v->type().isTensor() && v->type().elem_type == DataType::kFloat;
}

// A constant (initializer or Constant output) with a finite float past the type's range.
bool Analyzer::beyondRange(const ir::Value* v) {
  if (v == nullptr) return false;
  bool constant = v->initializer() != nullptr ||
                  (v->producer() != nullptr && v->producer()->opType() == "Constant");
  if (!constant) return false;
  const kernels::HostTensor* t = valueOf(v, false);
  return t != nullptr && magnitudeOf(*t).first > lim_;
}

bool Analyzer::measured(const ir::Node& n) {
  if (n.numOutputs() == 0 || n.output(0) == nullptr || !n.subgraphs().empty()) return false;
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  return std::any_of(n.outputs().begin(), n.outputs().end(),
                     [this](const ir::Value* v) { return isFloat(v); });
}

// One node on its own recorded inputs rounded to the type (constants saturated): the largest
// error of its float outputs against the recorded ones clipped to the type's range, relative
// to their largest magnitude; infinity where the type's result is not finite and float32's is.
// Elements infinite or NaN in float32 are left out. A string: why it was not evaluated.
Measure Analyzer::measure(const ir::Node& n, bool with_masks) {
  Measure m;
  std::vector<kernels::HostTensor> inputs;
  inputs.reserve(n.numInputs());
  for (const ir::Value* v : n.inputs()) {
    if (v == nullptr) continue;
    const kernels::HostTensor* t = valueOf(v, with_masks);
    if (t == nullptr) {
      m.failed = "an input was not recorded";
      return m;
    }
    inputs.push_back(rounded(*t, target_, true));
  }
  std::vector<const kernels::HostTensor*> ptrs;  // nullptr for omitted inputs
  size_t next = 0;
  for (const ir::Value* v : n.inputs()) ptrs.push_back(v == nullptr ? nullptr : &inputs[next++]);
  auto result = evaluate(model_, n, ptrs);
  if (!result.isOk()) {
    m.failed = "not evaluated: " + result.status().message();
    return m;
  }
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    const ir::Value* o = n.output(i);
    if (o == nullptr || (*result)[i].dtype != DataType::kFloat) continue;
    const kernels::HostTensor* ref = valueOf(o, with_masks);
    if (ref == nullptr || ref->dtype != DataType::kFloat ||
        ref->numElements() != (*result)[i].numElements()) {
      m.failed = "its float32 output was not recorded";
      return m;
    }
    double scale = 0, err = 0;
    for (int64_t k = 0; k < ref->numElements(); ++k) {
      double y = ref->get<float>(k);
      if (!std::isfinite(y)) continue;
      scale = std::max(scale, std::min(std::fabs(y), lim_));
      double got = roundTo((*result)[i].get<float>(k), target_, false);
      err = std::isfinite(got) ? std::max(err, std::fabs(got - std::clamp(y, -lim_, lim_)))
                               : INFINITY;
    }
    m.magnitude = std::max(m.magnitude, scale);
    m.error = std::max(m.error, scale > 0 ? err / scale : (err > 0 ? INFINITY : 0));
  }
  return m;
}

// 1. Nodes reading a constant past the range, on the float32 run: with the constant saturated,
// is the output the float32 one clipped to the type's range?
void Analyzer::findSaturating(PrecisionAnalysis& out) {
  for (const ir::Node* n : *model_.graph) {
    if (!measured(*n) || std::none_of(n->inputs().begin(), n->inputs().end(),
                                      [this](const ir::Value* v) { return beyondRange(v); }))
      continue;
    saturating_.insert(n);
    Measure m = measure(*n, false);
    PrecisionFinding f{n->output(0)->name(), n->opType(), m.magnitude, false, m.error, "", {}};
    if (m.failed.empty() && m.error <= tolerance_) {
      out.safe.push_back(f);
      // Where the float32 output is past the range it is a mask: -inf (or inf) there from now
      // on, so what it reaches downstream reads as masked, not as a value past the range.
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        const ir::Value* o = n->output(i);
        const kernels::HostTensor* t = o != nullptr ? valueOf(o, false) : nullptr;
        if (t == nullptr || t->dtype != DataType::kFloat) continue;
        kernels::HostTensor mask = *t;
        for (int64_t k = 0; k < mask.numElements(); ++k) {
          float y = mask.get<float>(k);
          if (std::isfinite(y) && std::fabs(y) > lim_)
            mask.set<float>(k, std::copysign(INFINITY, y));
        }
        masked_[o->name()] = std::move(mask);
      }
    } else {
      f.reason =
          m.failed.empty() ? "its constant does not saturate: " + describe(m.error) : m.failed;
      out.unsafe.push_back(f);
    }
  }
}

// 2. The masked values carried downstream: each node reading one again on the float32 kernels,
// until its output is the recorded one (a Softmax's exp(lowest) and exp(-inf) are both 0).
void Analyzer::propagateMasks() {
  if (masked_.empty()) return;
  for (const ir::Node* n : *model_.graph) {
    if (saturating_.count(n) > 0 || !n->subgraphs().empty()) continue;
    bool reads = std::any_of(n->inputs().begin(), n->inputs().end(), [&](const ir::Value* v) {
      return v != nullptr && masked_.count(v->name()) > 0;
    });
    if (!reads) continue;
    std::vector<const kernels::HostTensor*> ptrs;
    bool missing = false;
    for (const ir::Value* v : n->inputs()) {
      ptrs.push_back(v == nullptr ? nullptr : valueOf(v, true));
      missing |= v != nullptr && ptrs.back() == nullptr;
    }
    if (missing) continue;
    auto result = evaluate(model_, *n, ptrs);
    if (!result.isOk()) continue;  // its recorded value stands
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      const ir::Value* o = n->output(i);
      if (o == nullptr) continue;
      const kernels::HostTensor* before = valueOf(o, false);
      if (before == nullptr || !sameBits(*before, (*result)[i])) masked_[o->name()] = (*result)[i];
    }
  }
}

// 3. Values past the range (finite ones: an infinity of the float32 run stays one in the type),
// and float16 values wholly under its smallest normal (not all zero): subnormal there, they
// keep few bits or none (bfloat16 has float32's exponent range).
void Analyzer::findPastRange(PrecisionAnalysis& out) {
  const double tiny = target_ == DataType::kFloat16 ? 0x1p-14 : 0.0;
  for (const RecordedValue& r : ran_.intermediates) {
    // Constants are convert-precision's to judge (a constant past the range keeps its readers
    // float32 unless measured to saturate, above; a small one, an epsilon under float16's
    // smallest normal, is its readers' precision to measure, below).
    if (r.op == "Constant") continue;
    auto it = masked_.find(r.name);
    const kernels::HostTensor& v = it != masked_.end() ? it->second : r.value;
    auto [most, inf] = magnitudeOf(v);
    const bool under = v.dtype == DataType::kFloat && most > 0 && most < tiny;
    if (most <= limit_ && !under) continue;
    out.past_range.push_back({r.name, r.op, most, inf, 0, "", {}});
    past_.insert(r.name);
  }
}

// 4. Every other node with a float output, on its own (masked) inputs.
void Analyzer::measureOthers(PrecisionAnalysis& out) {
  auto isPast = [&](const ir::Value* v) { return v != nullptr && past_.count(v->name()) > 0; };
  for (const ir::Node* n : *model_.graph) {
    if (saturating_.count(n) > 0 || !measured(*n)) continue;
    // A node reading or writing a value past the range stays float32 for that already.
    if (std::any_of(n->inputs().begin(), n->inputs().end(), isPast) ||
        std::any_of(n->outputs().begin(), n->outputs().end(), isPast)) {
      continue;
    }
    const bool measurable = options_.measurable && options_.measurable(*n);
    Measure m = measure(*n, true);
    PrecisionFinding f{n->output(0)->name(), n->opType(), m.magnitude, false, m.error, "", {}};
    if (!m.failed.empty()) {
      f.reason = m.failed;
      if (measurable) out.unsafe.push_back(f);
      continue;
    }
    if (m.error <= tolerance_) {
      if (measurable) out.safe.push_back(f);
      continue;
    }
    f.reason = describe(m.error);
    for (const ir::Value* v : n->inputs()) {
      if (isFloat(v) && v->initializer() == nullptr) f.values.push_back(v->name());
    }
    for (const ir::Value* v : n->outputs()) {
      if (isFloat(v)) f.values.push_back(v->name());
    }
    out.imprecise.push_back(f);
  }
}

}  // namespace

StatusOr<PrecisionAnalysis> analyzePrecision(const ir::Model& model, const std::string& source,
                                             const Feeds& feeds,
                                             const PrecisionAnalysisOptions& options) {
  if (options.target != DataType::kFloat16 && options.target != DataType::kBfloat16) {
    return makeError(StatusCode::kInvalidArgument,
                     "precision analysis: the target must be float16 or bfloat16");
  }
  ASSIGN_OR_RETURN(auto runner, createExecutor("reference", {&model, source}));
  ExecutionOptions run_opts;
  run_opts.record_intermediates = true;
  ASSIGN_OR_RETURN(ExecutionResult ran, runner->run(feeds, run_opts));

  Analyzer analyzer(model, feeds, ran, options);
  PrecisionAnalysis out;
  analyzer.findSaturating(out);
  analyzer.propagateMasks();
  analyzer.findPastRange(out);
  analyzer.measureOthers(out);
  return out;
}

}  // namespace onnxopt::runtime
