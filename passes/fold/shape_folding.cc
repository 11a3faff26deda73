// Shape folding for fold-constants (shape_folding.h has the rules as algebra).
#include "shape_folding.h"

#include <algorithm>
#include <cstring>

#include "onnxopt/ir/constants.h"
#include "onnxopt/pass/matchers.h"

namespace onnxopt::passes::shapefold {
namespace {

kernels::HostTensor int64Host(const std::vector<int64_t>& values, std::vector<int64_t> dims) {
  kernels::HostTensor t;
  t.dtype = DataType::kInt64;
  t.dims = std::move(dims);
  t.bytes.assign(reinterpret_cast<const char*>(values.data()), values.size() * 8);
  return t;
}

/// The dims Shape(x)<start, end> yields, each known or not.
std::optional<std::vector<std::optional<int64_t>>> shapeElements(const ir::Node& shape) {
  const ir::Value* x = shape.input(0);
  if (x == nullptr || !x->type().isTensor() || !x->type().shape) return std::nullopt;
  const auto& dims = *x->type().shape;
  auto rank = static_cast<int64_t>(dims.size());
  auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  int64_t start = clampIndex(pass::attrInt(shape, "start", 0));
  int64_t end = clampIndex(pass::attrInt(shape, "end", rank));
  std::vector<std::optional<int64_t>> out;
  for (int64_t i = start; i < end; ++i) {
    const ir::Dim& d = dims[static_cast<size_t>(i)];
    out.push_back(d.isKnown() ? std::optional<int64_t>(d.value) : std::nullopt);
  }
  return out;
}

/// The positions of Shape(x)'s elements that Gather/Slice `n` picks, and the result's dims.
std::optional<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pickedElements(
    const ir::Node& n, int64_t count) {
  std::vector<int64_t> picked;
  std::vector<int64_t> out_dims;
  if (n.opType() == "Gather") {
    if (n.numInputs() < 2) return std::nullopt;
    auto indices = pass::constantInts(n.input(1));
    auto rank = pass::rankOf(n.input(1));
    if (!indices || !rank || *rank > 1) return std::nullopt;
    for (int64_t i : *indices) {
      if (i < -count || i >= count) return std::nullopt;
      picked.push_back(i < 0 ? i + count : i);
    }
    if (*rank == 1) out_dims = {static_cast<int64_t>(picked.size())};
    return std::pair{picked, out_dims};
  }
  if (n.numInputs() < 3) return std::nullopt;
  auto starts = pass::constantInts(n.input(1));
  auto ends = pass::constantInts(n.input(2));
  auto axes = n.numInputs() > 3 && n.input(3) != nullptr ? pass::constantInts(n.input(3))
                                                         : std::vector<int64_t>{0};
  auto steps = n.numInputs() > 4 && n.input(4) != nullptr ? pass::constantInts(n.input(4))
                                                          : std::vector<int64_t>{1};
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 ||
      axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1) ||
      *steps != std::vector<int64_t>{1})
    return std::nullopt;
  auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + count : i, int64_t{0}, count); };
  for (int64_t i = clampIndex((*starts)[0]); i < clampIndex((*ends)[0]); ++i) picked.push_back(i);
  out_dims = {static_cast<int64_t>(picked.size())};
  return std::pair{picked, out_dims};
}

/// The Reshape target entries `entries` as constants: numbers, 0 for a dim equal to the input's
/// at that position (allowzero = 0 only: with allowzero = 1 a 0 is an empty dim), and -1 for the
/// one entry left. nullopt when an entry is not settled so.
std::optional<std::vector<int64_t>> settledTarget(const ir::ShapeValue& entries,
                                                  const std::optional<std::vector<ir::Dim>>& in,
                                                  bool allowzero,
                                                  const std::vector<ir::SymExpr>& nonzero) {
  std::vector<int64_t> target;
  std::vector<bool> copied_nonzero(entries.size(), false);
  std::optional<size_t> minus_one;
  std::optional<size_t> open;  // the entry that is neither a number nor a copied dim
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    auto c = e ? e->constantValue() : std::nullopt;
    if (c && *c >= 0) {
      // Kept as it is: a 0 means what it meant (a copied dim, or with allowzero an empty one).
      target.push_back(*c);
    } else if (c && *c == -1 && !minus_one) {
      minus_one = i;  // the other entries keep their values, so it is inferred the same way
      target.push_back(-1);
    } else if (c) {
      return std::nullopt;  // a second -1 or a negative size: the Reshape fails at run time
    } else if (e && !allowzero && in && i < in->size() && (*in)[i].toExpr() == *e) {
      target.push_back(0);  // Reshape copies the input's dim there, whatever its value
      copied_nonzero[i] = std::find(nonzero.begin(), nonzero.end(), *e) != nonzero.end();
    } else if (!open) {
      open = i;
      target.push_back(-1);
    } else {
      return std::nullopt;
    }
  }
  if (open) {
    // -1 stands for the open entry only when the others' product is not 0 in a run that
    // succeeds (a 0 there leaves -1 undefined: onnxruntime refuses it) and no other -1 is there.
    if (minus_one) return std::nullopt;
    for (size_t i = 0; i < target.size(); ++i) {
      if (i != *open && target[i] <= 0 && !copied_nonzero[i]) return std::nullopt;
    }
  }
  return target;
}

/// The inferred output type's dims as a target: known positive dims, one unknown as -1.
std::optional<std::vector<int64_t>> targetFromOutputType(const ir::Value* out) {
  if (out == nullptr || !out->type().isTensor() || !out->type().shape) return std::nullopt;
  std::vector<int64_t> target;
  int unknown = 0;
  for (const ir::Dim& d : *out->type().shape) {
    if (d.isKnown() && d.value > 0) {
      target.push_back(d.value);
    } else if (d.isKnown() || ++unknown > 1) {
      return std::nullopt;  // a 0 would copy (or mean an empty dim); two unknowns are ambiguous
    } else {
      target.push_back(-1);
    }
  }
  return target;
}

/// Adds the dims that Reshape `r` requires nonzero (see nonzeroDims) to `out`.
void provenNonzero(const ir::Node& r, const ShapeValues& values, std::vector<ir::SymExpr>& out) {
  auto it = r.numInputs() > 1 ? values.find(r.input(1)) : values.end();
  if (it == values.end()) return;
  const ir::ShapeValue& t = it->second;
  auto minus_one = [](const std::optional<ir::SymExpr>& e) {
    return e && e->constantValue() == -1;
  };
  if (std::count_if(t.begin(), t.end(), minus_one) != 1) return;
  const bool allowzero = pass::attrInt(r, "allowzero", 0) != 0;
  const ir::Value* x = r.input(0);
  const auto* in =
      x != nullptr && x->type().isTensor() && x->type().shape ? &*x->type().shape : nullptr;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i] || minus_one(t[i])) continue;
    if (t[i]->constantValue() == 0 && !allowzero) {
      auto d = in != nullptr && i < in->size() ? (*in)[i].toExpr() : std::nullopt;
      if (d && !d->isConstant()) out.push_back(*d);  // the dim copied there
    } else if (!t[i]->isConstant()) {
      out.push_back(*t[i]);
    }
  }
}

}  // namespace

std::optional<std::vector<kernels::HostTensor>> foldShapeElements(const ir::Node& n) {
  const ir::Node* shape = n.input(0) != nullptr ? n.input(0)->producer() : nullptr;
  if (shape == nullptr || shape->opType() != "Shape") return std::nullopt;
  auto elems = shapeElements(*shape);
  if (!elems) return std::nullopt;
  auto picked = pickedElements(n, static_cast<int64_t>(elems->size()));
  if (!picked) return std::nullopt;
  std::vector<int64_t> values;
  for (int64_t i : picked->first) {
    const auto& d = (*elems)[static_cast<size_t>(i)];
    if (!d) return std::nullopt;
    values.push_back(*d);
  }
  return std::vector<kernels::HostTensor>{int64Host(values, picked->second)};
}

std::optional<std::vector<kernels::HostTensor>> foldShape(const ir::Node& n) {
  auto dims = pass::staticShape(n.input(0));
  if (!dims) return std::nullopt;
  if (n.opType() == "Size") {
    int64_t count = 1;
    for (int64_t d : *dims) {
      if (__builtin_mul_overflow(count, d, &count)) return std::nullopt;  // not an int64
    }
    return std::vector<kernels::HostTensor>{int64Host({count}, {})};
  }
  auto rank = static_cast<int64_t>(dims->size());
  auto clampIndex = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank); };
  int64_t start = clampIndex(pass::attrInt(n, "start", 0));
  int64_t end = clampIndex(pass::attrInt(n, "end", rank));
  std::vector<int64_t> slice(dims->begin() + start, dims->begin() + std::max(start, end));
  return std::vector<kernels::HostTensor>{int64Host(slice, {static_cast<int64_t>(slice.size())})};
}

std::optional<std::vector<ir::Tensor>> foldKnownValues(const ir::Node& n,
                                                       const ShapeValues& values) {
  std::vector<ir::Tensor> out(n.numOutputs());
  bool any = false;
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    const ir::Value* v = n.output(i);
    if (v == nullptr || !v->hasUses()) continue;
    // int64 only: inference tracks int32 contents in int64, where a wrap at run time would not
    // show.
    auto dims = pass::staticShape(v);
    auto it = values.find(v);
    if (pass::elemTypeOf(v) != DataType::kInt64 || !dims || dims->size() > 1 ||
        it == values.end() || (dims->size() == 1 && (*dims)[0] != int64_t(it->second.size())) ||
        (dims->empty() && it->second.size() != 1)) {
      return std::nullopt;
    }
    std::vector<int64_t> ints;
    for (const auto& e : it->second) {
      auto c = e ? e->constantValue() : std::nullopt;
      if (!c) return std::nullopt;
      ints.push_back(*c);
    }
    out[i] = pass::makeInt64Tensor(ints, *dims);
    any = true;
  }
  if (!any) return std::nullopt;
  return out;
}

std::vector<ir::SymExpr> nonzeroDims(const ir::Node& n, const ShapeValues& values) {
  constexpr size_t kMaxAncestors = 64;
  std::vector<const ir::Node*> seen{&n};
  std::vector<ir::SymExpr> out;
  for (size_t next = 0; next < seen.size() && seen.size() < kMaxAncestors; ++next) {
    for (const ir::Value* v : seen[next]->inputs()) {
      const ir::Node* p = v != nullptr ? v->producer() : nullptr;
      if (p == nullptr || std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
      seen.push_back(p);
      if (p->opType() == "Reshape" && p->domain().empty()) provenNonzero(*p, values, out);
    }
  }
  return out;
}

bool foldReshapeTarget(ir::Node* n, const ShapeValues* values, rewrite::Rewriter& rewriter) {
  if (n->numInputs() < 2 || n->input(1) == nullptr || ir::constantTensor(n->input(1))) {
    return false;
  }
  std::optional<std::vector<int64_t>> target;
  if (values != nullptr) {
    auto it = values->find(n->input(1));
    const ir::Value* x = n->input(0);
    auto rank = pass::rankOf(n->input(1));
    if (it != values->end() && rank == 1 && x != nullptr && x->type().isTensor()) {
      target = settledTarget(it->second, x->type().shape, pass::attrInt(*n, "allowzero", 0) != 0,
                             nonzeroDims(*n, *values));
    }
  }
  if (!target) target = targetFromOutputType(n->output(0));
  if (!target) return false;
  ir::Value* shape = rewriter.createInitializer(
      *n->owningGraph(), n->input(1)->name() + "_folded",
      pass::makeInt64Tensor(*target, {static_cast<int64_t>(target->size())}));
  rewriter.setInput(n, 1, shape);
  return true;
}

}  // namespace onnxopt::passes::shapefold
