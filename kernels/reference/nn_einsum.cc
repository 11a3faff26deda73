// Einsum reference kernel: "ij,jk->ik" style equations with '...' (numpy-broadcast batch dims),
// repeated labels within one operand (diagonals), and the implicit output (the ellipsis dims,
// then the labels used once, in character order). Every label gets an extent; the kernel walks
// the product of all extents once, summing over the labels absent from the output:
//   Y[out labels] = sum over the other labels of prod_k X_k[labels of k]
// Floats accumulate in their compute type (float for float16/bfloat16), integers wrap.
#include <algorithm>
#include <cctype>
#include <map>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

// Labels 0..51 are letters; kEllipsisLabel + k is the k-th broadcast ellipsis dim.
constexpr int kEllipsisLabel = 52;
constexpr int64_t kMaxEinsumWork = int64_t{1} << 36;

struct Term {
  std::vector<int> letters;  // letter labels in order, with -1 where the ellipsis stands
  bool has_ellipsis = false;
};

int letterLabel(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -1;
}

StatusOr<Term> parseTerm(const std::string& text) {
  Term t;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '.') {
      if (t.has_ellipsis || text.compare(i, 3, "...") != 0) {
        return invalidArgument("Einsum: bad ellipsis in '{}'", text);
      }
      t.has_ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
      continue;
    }
    int label = letterLabel(text[i]);
    if (label < 0) return invalidArgument("Einsum: bad character '{}' in the equation", text[i]);
    t.letters.push_back(label);
  }
  return t;
}

template <typename T>
using Acc = std::conditional_t<kIsFloat<T>, Compute<T>, T>;

}  // namespace

StatusOr<Outputs> einsumKernel(const KernelContext& ctx) {
  if (ctx.numInputs() == 0) return invalidArgument("Einsum: no inputs");
  std::vector<const HostTensor*> xs;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, i));
    xs.push_back(x);
  }
  RETURN_IF_ERROR(checkSameType(ctx, xs));
  std::string equation;
  for (char ch : ctx.attrs.getString("equation", "")) {
    if (!std::isspace(static_cast<unsigned char>(ch))) equation.push_back(ch);
  }
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<Term> terms;
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    ASSIGN_OR_RETURN(Term t, parseTerm(lhs.substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != xs.size()) {
    return invalidArgument("Einsum: the equation has {} operands, {} inputs given", terms.size(),
                           xs.size());
  }
  // The ellipsis: each operand's share of the broadcast batch dims, right-aligned.
  int64_t ell_rank = 0;
  std::vector<int64_t> ell_ranks(xs.size(), 0);
  for (size_t k = 0; k < xs.size(); ++k) {
    int64_t letters =
        static_cast<int64_t>(terms[k].letters.size()) - (terms[k].has_ellipsis ? 1 : 0);
    int64_t extra = xs[k]->rank() - letters;
    if (extra < 0 || (extra > 0 && !terms[k].has_ellipsis)) {
      return invalidArgument("Einsum: operand {} has rank {} for {} labels", k, xs[k]->rank(),
                             letters);
    }
    ell_ranks[k] = extra;
    ell_rank = std::max(ell_rank, extra);
  }
  // Each operand's dims as labels, and every label's extent.
  std::map<int, int64_t> extent;
  std::vector<std::vector<int>> dim_labels(xs.size());
  std::map<int, int> uses;
  for (size_t k = 0; k < xs.size(); ++k) {
    for (int l : terms[k].letters) {
      if (l >= 0) {
        dim_labels[k].push_back(l);
        ++uses[l];
        continue;
      }
      for (int64_t j = 0; j < ell_ranks[k]; ++j) {
        dim_labels[k].push_back(kEllipsisLabel + static_cast<int>(ell_rank - ell_ranks[k] + j));
      }
    }
    for (size_t d = 0; d < dim_labels[k].size(); ++d) {
      int l = dim_labels[k][d];
      int64_t size = xs[k]->dims[d];
      auto [it, fresh] = extent.emplace(l, size);
      if (fresh || it->second == size) continue;
      // Ellipsis dims broadcast numpy-style; letters must agree.
      if (l >= kEllipsisLabel && (size == 1 || it->second == 1)) {
        if (it->second == 1) it->second = size;  // 1 broadcasts to anything, 0 included
        continue;
      }
      return invalidArgument("Einsum: label extents differ ({} vs {})", it->second, size);
    }
  }
  std::vector<int> out_labels;
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < ell_rank; ++j)
      out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
    for (const auto& [l, n] : uses) {
      if (n == 1) out_labels.push_back(l);  // std::map: character order (uppercase after here)
    }
    std::stable_sort(out_labels.begin() + ell_rank, out_labels.end(), [](int a, int b) {
      // Character order: 'A'-'Z' (26..51) before 'a'-'z' (0..25).
      auto key = [](int l) { return l >= 26 ? l - 26 : l + 26; };
      return key(a) < key(b);
    });
  } else {
    ASSIGN_OR_RETURN(Term out, parseTerm(equation.substr(arrow + 2)));
    for (int l : out.letters) {
      if (l < 0) {
        for (int64_t j = 0; j < ell_rank; ++j) {
          out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
        }
      } else {
        if (!extent.count(l)) return invalidArgument("Einsum: output label not in any input");
        if (std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end()) {
          return invalidArgument("Einsum: output label repeated");
        }
        out_labels.push_back(l);
      }
    }
  }
  // All labels: the output's first, then the summed ones.
  std::vector<int> labels = out_labels;
  for (const auto& [l, size] : extent) {
    if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  }
  std::map<int, size_t> position;
  Dims sizes;
  for (size_t i = 0; i < labels.size(); ++i) {
    position[labels[i]] = i;
    sizes.push_back(extent.at(labels[i]));
  }
  Dims out_dims(sizes.begin(), sizes.begin() + static_cast<int64_t>(out_labels.size()));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(xs[0]->dtype, out_dims));
  // Strides of each operand per label (summed for repeated labels: the diagonal), 0 where
  // broadcast.
  std::vector<Dims> strides(xs.size(), Dims(labels.size(), 0));
  for (size_t k = 0; k < xs.size(); ++k) {
    if (xs[k]->numElements() == 0) break;  // nothing is read; the strides may not fit int64
    Dims s = contiguousStrides(xs[k]->dims);
    for (size_t d = 0; d < dim_labels[k].size(); ++d) {
      if (xs[k]->dims[d] == 1 && extent.at(dim_labels[k][d]) != 1) continue;
      strides[k][position.at(dim_labels[k][d])] += s[d];
    }
  }
  bool any_empty = std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s == 0; });
  int64_t work = 1;
  if (!any_empty) {
    for (int64_t s : sizes) {
      if (__builtin_mul_overflow(work, s, &work) || work > kMaxEinsumWork) {
        return makeError(StatusCode::kResourceExhausted, "Einsum: too much work");
      }
    }
  }
  RETURN_IF_ERROR(visitType(ctx, xs[0]->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, xs[0]->dtype);
    } else {
      if (out.numElements() == 0) return Status::ok();
      std::vector<Acc<T>> acc(static_cast<size_t>(out.numElements()), Acc<T>(0));
      if (!any_empty) {
        Dims out_strides = contiguousStrides(out_dims);
        out_strides.resize(labels.size(), 0);
        std::vector<Dims> all = strides;
        all.push_back(out_strides);
        forEachBroadcast(sizes, all, [&](int64_t, const int64_t* off) {
          Acc<T> p = Acc<T>(1);
          for (size_t k = 0; k < xs.size(); ++k) {
            Acc<T> v = load<T>(*xs[k], off[k]);
            if constexpr (kIsInt<T>) {
              p = wrapMul<T>(p, v);
            } else {
              p = p * v;
            }
          }
          Acc<T>& a = acc[static_cast<size_t>(off[xs.size()])];
          if constexpr (kIsInt<T>) {
            a = wrapAdd<T>(a, p);
          } else {
            a = a + p;
          }
        });
      }
      for (size_t i = 0; i < acc.size(); ++i) store<T>(out, static_cast<int64_t>(i), acc[i]);
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
