// Index maps of view chains (view_index_map.h).
#include "view_index_map.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "target_pattern_pass.h"

#include "onnxopt/ir/constants.h"

namespace onnxopt::passes::view_maps {

IndexMap identityMap(const std::vector<int64_t>& dims) {
  IndexMap m;
  int64_t stride = 1;
  m.dims.resize(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    m.dims[i] = {{dims[i], stride}};
    stride *= dims[i];
  }
  return m;
}

bool isRowMajor(const IndexMap& m) {
  auto strides = m.strides();
  if (!strides || m.offset != 0) return false;
  int64_t expected = 1;
  for (size_t i = m.dims.size(); i-- > 0;) {
    int64_t n = m.extent(i);
    if (n != 1 && (*strides)[i] != expected) return false;
    expected *= n;
  }
  return true;
}

bool reshapeMap(IndexMap& m, const std::vector<int64_t>& dims) {
  std::vector<Digit> digits;
  for (const auto& d : m.dims) {
    for (const Digit& x : d) {
      if (x.extent == 0) return false;
      if (x.extent != 1) digits.push_back(x);
    }
  }
  std::vector<std::vector<Digit>> out(dims.size());
  size_t next = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t need = dims[i];
    if (need <= 0) return false;
    while (need > 1) {
      if (next == digits.size()) return false;
      Digit& d = digits[next];
      if (d.extent <= need) {
        if (need % d.extent != 0) return false;
        out[i].push_back(d);
        need /= d.extent;
        ++next;
      } else {
        if (d.extent % need != 0) return false;
        // The digit's high part ends this dim; its low part starts the next.
        const int64_t low = d.extent / need;
        out[i].push_back({need, d.stride * low});
        d = {low, d.stride};
        need = 1;
      }
    }
  }
  if (next != digits.size()) return false;
  m.dims = std::move(out);
  return true;
}

bool isViewOp(const ir::Node& node) {
  static const std::set<std::string> kOps = {"Reshape",   "Transpose", "Squeeze",
                                             "Unsqueeze", "Flatten",   "Identity",
                                             "Gather",    "Slice",     "Split"};
  return node.domain().empty() && kOps.count(node.opType()) > 0;
}

bool cutDim(IndexMap& m, size_t axis, int64_t start, int64_t length) {
  IndexMap s = m;
  s.simplify();
  const auto& digits = s.dims[axis];
  if (digits.size() > 1) return false;
  const int64_t stride = digits.empty() ? 0 : digits[0].stride;
  m.offset += start * stride;
  m.dims[axis] = {{length, stride}};
  return true;
}

bool applyViewOp(const ir::Node& node, size_t index, IndexMap& m, int64_t opset) {
  auto out = pass::staticShape(node.output(index));
  if (!out) return false;
  const std::string& op = node.opType();
  const auto rank = static_cast<int64_t>(m.dims.size());
  const std::vector<int64_t> in = m.shape();
  if (op == "Identity") return in == *out;
  if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten") {
    return reshapeMap(m, *out);
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm = pass::attrInts(node, "perm").value_or(std::vector<int64_t>());
    if (perm.empty()) {
      for (int64_t i = rank; i-- > 0;) perm.push_back(i);
    }
    if (static_cast<int64_t>(perm.size()) != rank) return false;
    IndexMap t = m;
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] < 0 || perm[i] >= rank) return false;
      t.dims[i] = m.dims[static_cast<size_t>(perm[i])];
    }
    m = std::move(t);
    return m.shape() == *out;
  }
  if (op == "Gather") {
    auto axis = pass::normalizeAxis(pass::attrInt(node, "axis", 0), rank);
    auto index_value = node.numInputs() > 1 ? pass::constantInts(node.input(1)) : std::nullopt;
    auto index_rank = pass::rankOf(node.input(1));
    if (!axis || !index_value || index_value->size() != 1 || !index_rank || *index_rank > 1) {
      return false;
    }
    const auto a = static_cast<size_t>(*axis);
    int64_t i = (*index_value)[0];
    if (i < 0) i += in[a];
    if (i < 0 || i >= in[a]) return false;
    // i's digits, least significant last.
    for (size_t k = m.dims[a].size(); k-- > 0;) {
      m.offset += (i % m.dims[a][k].extent) * m.dims[a][k].stride;
      i /= m.dims[a][k].extent;
    }
    if (*index_rank == 0) {
      m.dims.erase(m.dims.begin() + *axis);
    } else {
      m.dims[a].clear();
    }
    return m.shape() == *out;
  }
  if (op == "Split") {
    auto axis = pass::normalizeAxis(pass::attrInt(node, "axis", 0), rank);
    if (!axis || out->size() != in.size()) return false;
    const auto a = static_cast<size_t>(*axis);
    int64_t start = 0;
    for (size_t i = 0; i < index; ++i) {
      auto part = pass::staticShape(node.output(i));
      if (!part || part->size() != in.size()) return false;
      start += (*part)[a];
    }
    return cutDim(m, a, start, (*out)[a]) && m.shape() == *out;
  }
  if (op == "Slice" && opset >= 10) {
    auto starts = node.numInputs() > 1 ? pass::constantInts(node.input(1)) : std::nullopt;
    std::optional<std::vector<int64_t>> axes, steps;
    if (node.numInputs() > 3 && node.input(3) != nullptr) axes = pass::constantInts(node.input(3));
    if (node.numInputs() > 4 && node.input(4) != nullptr) steps = pass::constantInts(node.input(4));
    if (!starts || out->size() != in.size()) return false;
    if (!axes) {
      axes = std::vector<int64_t>();
      for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
    }
    if (axes->size() != starts->size() || (steps && steps->size() != starts->size())) return false;
    for (size_t i = 0; i < axes->size(); ++i) {
      auto axis = pass::normalizeAxis((*axes)[i], rank);
      if (!axis || (steps && (*steps)[i] != 1)) return false;  // forward, unit steps only
      const auto a = static_cast<size_t>(*axis);
      const int64_t start =
          std::clamp((*starts)[i] < 0 ? (*starts)[i] + in[a] : (*starts)[i], int64_t{0}, in[a]);
      if (start + (*out)[a] > in[a] || !cutDim(m, a, start, (*out)[a])) return false;
    }
    return m.shape() == *out;
  }
  return false;
}

std::optional<std::pair<ir::Value*, IndexMap>> traceView(ir::Value* value, int64_t opset) {
  std::vector<std::pair<const ir::Node*, size_t>> chain;
  ir::Value* base = value;
  while (base->producer() != nullptr && isViewOp(*base->producer()) &&
         base->producer()->numInputs() > 0 && base->producer()->input(0) != nullptr) {
    chain.emplace_back(base->producer(), base->outputIndex());
    base = base->producer()->input(0);
  }
  auto dims = pass::staticShape(base);
  if (!dims) return std::nullopt;
  IndexMap m = identityMap(*dims);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!applyViewOp(*it->first, it->second, m, opset)) return std::nullopt;
  }
  return std::make_pair(base, std::move(m));
}

bool mapIs(const IndexMap& m, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
           int64_t offset) {
  auto s = m.strides();
  if (!s || m.shape() != dims || m.offset != offset) return false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 1 && (*s)[i] != strides[i]) return false;
  }
  return true;
}

}  // namespace onnxopt::passes::view_maps
