// Indexing and selection reference kernels: TopK, ScatterND, ScatterElements and Scatter (with the
// reductions of opsets 16 and 18), GatherND (batch_dims), Trilu, Compress, ReverseSequence, Unique,
// EyeLike, NonMaxSuppression and TensorScatter.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "ops.h"
#include "visit_numeric.h"

namespace onnxopt::kernels::ref {

namespace {

/// A strict weak order on compute values in which NaN sorts above every number (so sorting with
/// NaNs present stays well defined).
template <typename C>
bool totalLess(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

/// An index into a dimension of size `dim`, negative values counting from the end; nullopt when
/// out of range.
std::optional<int64_t> wrapIndex(int64_t i, int64_t dim) {
  if (i < -dim || i >= dim) return std::nullopt;
  return i < 0 ? i + dim : i;
}

/// Scatter reductions (ScatterND and ScatterElements, opsets 16 and 18).
enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

StatusOr<Reduction> readReduction(const KernelContext& ctx) {
  std::string r = ctx.attrs.getString("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (ctx.opset >= 16 && r == "add") return Reduction::kAdd;
  if (ctx.opset >= 16 && r == "mul") return Reduction::kMul;
  if (ctx.opset >= 18 && r == "max") return Reduction::kMax;
  if (ctx.opset >= 18 && r == "min") return Reduction::kMin;
  return invalidArgument("{}: reduction '{}' is not defined at opset {}", ctx.op, r, ctx.opset);
}

/// Applies `updates` onto `out` (a copy of the data): for each pair (di, ui), out[di] becomes
/// updates[ui] or its reduction with out[di]. Non-numeric types take only the plain copy.
Status scatterApply(const KernelContext& ctx, HostTensor& out, const HostTensor& updates,
                    Reduction red, const std::vector<std::pair<int64_t, int64_t>>& pairs) {
  if (red == Reduction::kNone) {
    size_t eb = elementBytes(out.dtype);
    for (auto [di, ui] : pairs) copyElement(out, di, updates, ui, eb);
    return Status::ok();
  }
  return visitNumeric(ctx, out.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    for (auto [di, ui] : pairs) {
      C a = load<T>(out, di), b = load<T>(updates, ui);
      C r = b;
      switch (red) {
        case Reduction::kAdd:
          if constexpr (kIsInt<T>) {
            r = wrapAdd(a, b);
          } else {
            r = static_cast<C>(a + b);
          }
          break;
        case Reduction::kMul:
          if constexpr (kIsInt<T>) {
            r = wrapMul(a, b);
          } else {
            r = static_cast<C>(a * b);
          }
          break;
        case Reduction::kMax:
          r = std::max(a, b);
          break;
        case Reduction::kMin:
          r = std::min(a, b);
          break;
        case Reduction::kNone:
          break;
      }
      store<T>(out, di, r);
    }
    return Status::ok();
  });
}

}  // namespace

// --- TopK
// ---------------------------------------------------------------------------------------

StatusOr<Outputs> topKKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  int64_t k = 0;
  if (ctx.opset < 10) {
    if (!ctx.attrs.has("k")) return invalidArgument("TopK: attribute 'k' is required");
    k = ctx.attrs.getInt("k", 0);
  } else {
    ASSIGN_OR_RETURN(const HostTensor* k_t, requireInput(ctx, 1));
    ASSIGN_OR_RETURN(k, readIntScalar(*k_t, "k"));
  }
  if (x->rank() == 0) return invalidArgument("TopK: input must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", -1), x->rank()));
  int64_t dim = x->dims[static_cast<size_t>(axis)];
  if (k < 0 || k > dim) return invalidArgument("TopK: k {} is outside [0, {}]", k, dim);
  bool largest = ctx.opset < 11 || ctx.attrs.getInt("largest", 1) != 0;
  Dims out_dims = x->dims;
  out_dims[static_cast<size_t>(axis)] = k;
  HostTensor values, indices;
  RETURN_IF_ERROR(visitNumeric(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if (ctx.opset < 11 && !kIsFloat<T>) return unsupportedType(ctx, x->dtype);
    ASSIGN_OR_RETURN(values, makeOutput(x->dtype, out_dims));
    ASSIGN_OR_RETURN(indices, makeOutput(DataType::kInt64, out_dims));
    // An empty tensor's other dims may multiply past int64: nothing below may run for it.
    if (x->numElements() == 0) return Status::ok();
    const int64_t outer = dimProduct(x->dims, 0, axis);
    const int64_t inner = dimProduct(x->dims, axis + 1, x->rank());
    std::vector<int64_t> order(static_cast<size_t>(dim));
    std::vector<C> row(static_cast<size_t>(dim));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        for (int64_t j = 0; j < dim; ++j) {
          row[static_cast<size_t>(j)] = load<T>(*x, (o * dim + j) * inner + in);
        }
        std::iota(order.begin(), order.end(), int64_t{0});
        // Ties keep the lower index first (a stable order on the value alone).
        auto before = [&](int64_t a, int64_t b) {
          C va = row[static_cast<size_t>(a)], vb = row[static_cast<size_t>(b)];
          return largest ? totalLess(vb, va) : totalLess(va, vb);
        };
        std::stable_sort(order.begin(), order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          int64_t src = order[static_cast<size_t>(j)];
          int64_t dst = (o * k + j) * inner + in;
          store<T>(values, dst, row[static_cast<size_t>(src)]);
          indices.set<int64_t>(dst, src);
        }
      }
    }
    return Status::ok();
  }));
  Outputs out;
  out.push_back(std::move(values));
  out.push_back(std::move(indices));
  return out;
}

// --- Scatter family
// -------------------------------------------------------------------------------

StatusOr<Outputs> scatterNDKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* data, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* ind_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* updates, requireInput(ctx, 2));
  RETURN_IF_ERROR(checkMovable(ctx, data->dtype));
  RETURN_IF_ERROR(checkSameType(ctx, {data, updates}));
  ASSIGN_OR_RETURN(Reduction red, readReduction(ctx));
  ASSIGN_OR_RETURN(Dims idx, readInts(*ind_t, "indices"));
  int64_t r = data->rank(), q = ind_t->rank();
  if (q < 1) return invalidArgument("ScatterND: indices must have rank >= 1");
  int64_t k = ind_t->dims.back();
  if (k > r) return invalidArgument("ScatterND: index depth {} exceeds the data rank {}", k, r);
  Dims expected(ind_t->dims.begin(), ind_t->dims.end() - 1);
  expected.insert(expected.end(), data->dims.begin() + k, data->dims.end());
  if (updates->dims != expected) return invalidArgument("ScatterND: updates have the wrong shape");
  const int64_t slice = dimProduct(data->dims, k, r);
  const int64_t tuples = dimProduct(ind_t->dims, 0, q - 1);
  Dims strides = contiguousStrides(data->dims);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(static_cast<size_t>(tuples * slice));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t dim = data->dims[static_cast<size_t>(d)];
      auto i = wrapIndex(idx[static_cast<size_t>(t * k + d)], dim);
      if (!i) return invalidArgument("ScatterND: index out of range for dimension {}", dim);
      base += *i * strides[static_cast<size_t>(d)];
    }
    for (int64_t s = 0; s < slice; ++s) pairs.emplace_back(base + s, t * slice + s);
  }
  HostTensor out = *data;
  RETURN_IF_ERROR(scatterApply(ctx, out, *updates, red, pairs));
  return single(std::move(out));
}

StatusOr<Outputs> scatterElementsKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* data, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* ind_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* updates, requireInput(ctx, 2));
  RETURN_IF_ERROR(checkMovable(ctx, data->dtype));
  RETURN_IF_ERROR(checkSameType(ctx, {data, updates}));
  Reduction red = Reduction::kNone;
  if (ctx.op == "ScatterElements") {
    ASSIGN_OR_RETURN(red, readReduction(ctx));
  }
  ASSIGN_OR_RETURN(Dims idx, readInts(*ind_t, "indices"));
  int64_t r = data->rank();
  if (r == 0) return invalidArgument("{}: data must have rank >= 1", ctx.op);
  if (ind_t->rank() != r || updates->dims != ind_t->dims) {
    return invalidArgument("{}: indices and updates must have the data's rank and one shape",
                           ctx.op);
  }
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", 0), r));
  Dims data_strides = contiguousStrides(data->dims);
  const Dims& idims = ind_t->dims;
  int64_t n = ind_t->numElements();
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(static_cast<size_t>(n));
  Dims counter(static_cast<size_t>(r), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int64_t d = 0; d < r; ++d) {
      int64_t c = counter[static_cast<size_t>(d)];
      if (d == axis) {
        int64_t dim = data->dims[static_cast<size_t>(d)];
        auto i = wrapIndex(idx[static_cast<size_t>(e)], dim);
        if (!i) return invalidArgument("{}: index out of range for dimension {}", ctx.op, dim);
        c = *i;
      } else if (c >= data->dims[static_cast<size_t>(d)]) {
        return invalidArgument("{}: indices are larger than the data off the axis", ctx.op);
      }
      off += c * data_strides[static_cast<size_t>(d)];
    }
    pairs.emplace_back(off, e);
    for (int64_t d = r; d-- > 0;) {
      if (++counter[static_cast<size_t>(d)] < idims[static_cast<size_t>(d)]) break;
      counter[static_cast<size_t>(d)] = 0;
    }
  }
  HostTensor out = *data;
  RETURN_IF_ERROR(scatterApply(ctx, out, *updates, red, pairs));
  return single(std::move(out));
}

// --- GatherND
// -------------------------------------------------------------------------------------

StatusOr<Outputs> gatherNDKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* data, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* ind_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, data->dtype));
  ASSIGN_OR_RETURN(Dims idx, readInts(*ind_t, "indices"));
  int64_t r = data->rank(), q = ind_t->rank();
  int64_t b = ctx.opset >= 12 ? ctx.attrs.getInt("batch_dims", 0) : 0;
  if (r < 1 || q < 1) return invalidArgument("GatherND: data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    return invalidArgument("GatherND: batch_dims {} out of range", b);
  for (int64_t d = 0; d < b; ++d) {
    if (data->dims[static_cast<size_t>(d)] != ind_t->dims[static_cast<size_t>(d)]) {
      return invalidArgument("GatherND: batch dimensions of data and indices differ");
    }
  }
  int64_t k = ind_t->dims.back();
  if (k < 1 || k > r - b) return invalidArgument("GatherND: index depth {} out of range", k);
  Dims out_dims(ind_t->dims.begin(), ind_t->dims.end() - 1);
  out_dims.insert(out_dims.end(), data->dims.begin() + b + k, data->dims.end());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(data->dtype, out_dims));
  if (out.numElements() == 0) return single(std::move(out));
  const int64_t batches = dimProduct(data->dims, 0, b);
  const int64_t per_batch_tuples = dimProduct(ind_t->dims, b, q - 1);
  const int64_t slice = dimProduct(data->dims, b + k, r);
  const int64_t batch_stride = dimProduct(data->dims, b, r);
  Dims strides = contiguousStrides(data->dims);
  size_t eb = elementBytes(data->dtype);
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < per_batch_tuples; ++t) {
      int64_t tuple = bi * per_batch_tuples + t;
      int64_t base = bi * batch_stride;
      for (int64_t d = 0; d < k; ++d) {
        int64_t dim = data->dims[static_cast<size_t>(b + d)];
        auto i = wrapIndex(idx[static_cast<size_t>(tuple * k + d)], dim);
        if (!i) return invalidArgument("GatherND: index out of range for dimension {}", dim);
        base += *i * strides[static_cast<size_t>(b + d)];
      }
      copyElements(out, tuple * slice, *data, base, slice, eb);
    }
  }
  return single(std::move(out));
}

// --- Trilu, Compress, ReverseSequence, EyeLike
// -----------------------------------------------------

StatusOr<Outputs> triluKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  int64_t k = 0;
  if (const HostTensor* k_t = ctx.input(1)) {
    ASSIGN_OR_RETURN(k, readIntScalar(*k_t, "k"));
  }
  if (x->rank() < 2) return invalidArgument("Trilu: input must have rank >= 2");
  bool upper = ctx.attrs.getInt("upper", 1) != 0;
  // Beyond +-(rows + cols) every k selects the same elements; clamping keeps j - i - k exact.
  k = std::clamp<int64_t>(k, -(x->dims[x->dims.size() - 2] + x->dims.back()),
                          x->dims[x->dims.size() - 2] + x->dims.back());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  if (out.numElements() == 0) return single(std::move(out));
  const int64_t rows = x->dims[x->dims.size() - 2], cols = x->dims.back();
  const int64_t mats = dimProduct(x->dims, 0, x->rank() - 2);
  size_t eb = elementBytes(x->dtype);
  for (int64_t m = 0; m < mats; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep) continue;
        int64_t e = (m * rows + i) * cols + j;
        copyElement(out, e, *x, e, eb);
      }
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> compressKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* cond, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (cond->dtype != DataType::kBool) {
    return invalidArgument("Compress: condition must be bool, not {}", dataTypeName(cond->dtype));
  }
  if (cond->rank() != 1) return invalidArgument("Compress: condition must be 1-D");
  bool flat = !ctx.attrs.has("axis");
  Dims dims = flat ? Dims{x->numElements()} : x->dims;
  int64_t axis = 0;
  if (!flat) {
    if (ctx.opset < 11 && ctx.attrs.getInt("axis", 0) < 0) {
      return invalidArgument("Compress: negative axis needs opset 11");
    }
    ASSIGN_OR_RETURN(axis, normalizeAxis(ctx.attrs.getInt("axis", 0), x->rank()));
  }
  int64_t dim = dims[static_cast<size_t>(axis)];
  int64_t len = cond->numElements();
  if (len > dim) {
    return invalidArgument("Compress: condition has {} entries for a dimension of {}", len, dim);
  }
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < len; ++i) {
    if (cond->get<uint8_t>(i) != 0) keep.push_back(i);
  }
  Dims out_dims = dims;
  out_dims[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, out_dims));
  if (out.numElements() == 0) return single(std::move(out));
  const int64_t outer = dimProduct(dims, 0, axis);
  const int64_t inner = dimProduct(dims, axis + 1, static_cast<int64_t>(dims.size()));
  const int64_t kept = static_cast<int64_t>(keep.size());
  size_t eb = elementBytes(x->dtype);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < kept; ++j) {
      copyElements(out, (o * kept + j) * inner, *x,
                   (o * dim + keep[static_cast<size_t>(j)]) * inner, inner, eb);
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> reverseSequenceKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* lens_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (lens_t->dtype != DataType::kInt64) {
    return invalidArgument("ReverseSequence: sequence_lens must be int64");
  }
  ASSIGN_OR_RETURN(Dims lens, readInts(*lens_t, "sequence_lens"));
  if (x->rank() < 2) return invalidArgument("ReverseSequence: input must have rank >= 2");
  int64_t batch_axis = ctx.attrs.getInt("batch_axis", 1);
  int64_t time_axis = ctx.attrs.getInt("time_axis", 0);
  if (!((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0))) {
    return invalidArgument("ReverseSequence: batch_axis and time_axis must be 0 and 1");
  }
  int64_t batch = x->dims[static_cast<size_t>(batch_axis)];
  int64_t steps = x->dims[static_cast<size_t>(time_axis)];
  if (lens_t->rank() != 1 || static_cast<int64_t>(lens.size()) != batch) {
    return invalidArgument("ReverseSequence: sequence_lens must have shape [{}]", batch);
  }
  for (int64_t l : lens) {
    if (l < 0 || l > steps) return invalidArgument("ReverseSequence: sequence length {}", l);
  }
  HostTensor out = *x;
  if (out.numElements() == 0) return single(std::move(out));
  const int64_t inner = dimProduct(x->dims, 2, x->rank());
  size_t eb = elementBytes(x->dtype);
  for (int64_t bi = 0; bi < batch; ++bi) {
    int64_t len = lens[static_cast<size_t>(bi)];
    for (int64_t t = 0; t < len; ++t) {
      int64_t src_t = len - 1 - t;
      auto offset = [&](int64_t step) {
        int64_t i0 = batch_axis == 0 ? bi : step, i1 = batch_axis == 0 ? step : bi;
        return (i0 * x->dims[1] + i1) * inner;
      };
      copyElements(out, offset(t), *x, offset(src_t), inner, eb);
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> eyeLikeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (x->rank() != 2) return invalidArgument("EyeLike: input must be 2-D");
  DataType type = x->dtype;
  if (ctx.attrs.has("dtype")) {
    int64_t code = ctx.attrs.getInt("dtype", 0);
    if (code < 1 || code > kMaxKnownDataType) return invalidArgument("EyeLike: bad dtype {}", code);
    type = static_cast<DataType>(code);
  }
  int64_t k = ctx.attrs.getInt("k", 0);
  HostTensor out;
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [](auto) { return Status::ok(); }));
  RETURN_IF_ERROR(visitType(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    ASSIGN_OR_RETURN(out, makeOutput(type, x->dims));
    const int64_t rows = x->dims[0], cols = x->dims[1];
    for (int64_t i = 0; i < rows; ++i) {
      // Column i + k, without overflow for any k.
      if ((k >= 0 && i >= cols - std::min(k, cols)) || (k < 0 && i < -std::max(k, -rows))) {
        continue;
      }
      store<T>(out, i * cols + i + k, convertNumber<Compute<T>>(1));
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

// --- Unique
// ---------------------------------------------------------------------------------------

namespace {

/// Unique over `count` slices of `len` consecutive values each: fills the outputs' index data
/// (first occurrences, inverse indices, counts) and returns the chosen slices in output order.
template <typename V, typename Less>
std::vector<int64_t> uniqueSlices(const std::vector<V>& vals, int64_t count, int64_t len,
                                  bool sorted, Less less, std::vector<int64_t>& inverse,
                                  std::vector<int64_t>& counts) {
  auto slice_less = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < len; ++j) {
      const V& va = vals[static_cast<size_t>(a * len + j)];
      const V& vb = vals[static_cast<size_t>(b * len + j)];
      if (less(va, vb)) return true;
      if (less(vb, va)) return false;
    }
    return false;
  };
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), slice_less);
  // Groups of equal slices, in sorted order; the first of each group is its first occurrence.
  std::vector<int64_t> group_of(static_cast<size_t>(count));
  std::vector<int64_t> firsts;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || slice_less(order[i - 1], order[i])) firsts.push_back(order[i]);
    group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(firsts.size()) - 1;
  }
  // rank[g]: the output position of group g.
  std::vector<int64_t> rank(firsts.size());
  std::vector<int64_t> chosen = firsts;
  if (sorted) {
    std::iota(rank.begin(), rank.end(), int64_t{0});
  } else {
    std::vector<int64_t> by_first(firsts.size());
    std::iota(by_first.begin(), by_first.end(), int64_t{0});
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
      return firsts[static_cast<size_t>(a)] < firsts[static_cast<size_t>(b)];
    });
    for (size_t p = 0; p < by_first.size(); ++p) {
      rank[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
      chosen[p] = firsts[static_cast<size_t>(by_first[p])];
    }
  }
  inverse.assign(static_cast<size_t>(count), 0);
  counts.assign(firsts.size(), 0);
  for (int64_t s = 0; s < count; ++s) {
    int64_t pos = rank[static_cast<size_t>(group_of[static_cast<size_t>(s)])];
    inverse[static_cast<size_t>(s)] = pos;
    ++counts[static_cast<size_t>(pos)];
  }
  return chosen;
}

HostTensor int64Vector(const std::vector<int64_t>& v) {
  HostTensor t = HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), v[i]);
  return t;
}

}  // namespace

StatusOr<Outputs> uniqueKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  bool sorted = ctx.attrs.getInt("sorted", 1) != 0;
  bool has_axis = ctx.attrs.has("axis");
  int64_t axis = 0;
  Dims dims = has_axis ? x->dims : Dims{x->numElements()};
  if (has_axis) {
    if (x->rank() == 0) return invalidArgument("Unique: axis given for a scalar input");
    ASSIGN_OR_RETURN(axis, normalizeAxis(ctx.attrs.getInt("axis", 0), x->rank()));
  }
  // Slices along the axis: slice s holds the elements whose axis index is s. An empty input has
  // `count` empty slices, all equal (and other dims whose product may pass int64).
  const int64_t count = dims[static_cast<size_t>(axis)];
  int64_t outer = 0, inner = 1;
  if (x->numElements() > 0) {
    outer = dimProduct(dims, 0, axis);
    inner = dimProduct(dims, axis + 1, static_cast<int64_t>(dims.size()));
  }
  const int64_t len = outer * inner;
  auto source = [&](int64_t s, int64_t j) { return ((j / inner) * count + s) * inner + j % inner; };
  std::vector<int64_t> chosen, inverse, counts;
  auto run = [&](auto load_one, auto less) {
    using V = decltype(load_one(int64_t{0}));
    std::vector<V> vals(static_cast<size_t>(count * len));
    for (int64_t s = 0; s < count; ++s) {
      for (int64_t j = 0; j < len; ++j)
        vals[static_cast<size_t>(s * len + j)] = load_one(source(s, j));
    }
    chosen = uniqueSlices(vals, count, len, sorted, less, inverse, counts);
  };
  if (x->dtype == DataType::kString) {
    run([&](int64_t i) { return x->strings[static_cast<size_t>(i)]; },
        [](const std::string& a, const std::string& b) { return a < b; });
  } else {
    RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = Compute<T>;
      run([&](int64_t i) { return load<T>(*x, i); }, [](C a, C b) { return totalLess(a, b); });
      return Status::ok();
    }));
  }
  Dims y_dims = dims;
  y_dims[static_cast<size_t>(axis)] = static_cast<int64_t>(chosen.size());
  ASSIGN_OR_RETURN(HostTensor y, makeOutput(x->dtype, y_dims));
  size_t eb = elementBytes(x->dtype);
  const int64_t u = static_cast<int64_t>(chosen.size());
  for (int64_t p = 0; p < u; ++p) {
    for (int64_t j = 0; j < len; ++j) {
      int64_t dst = ((j / inner) * u + p) * inner + j % inner;
      copyElement(y, dst, *x, source(chosen[static_cast<size_t>(p)], j), eb);
    }
  }
  Outputs out;
  out.push_back(std::move(y));
  out.push_back(int64Vector(chosen));
  out.push_back(int64Vector(inverse));
  out.push_back(int64Vector(counts));
  out.resize(std::min<size_t>(out.size(), std::max<size_t>(ctx.num_outputs, 1)));
  return out;
}

// --- NonMaxSuppression
// ----------------------------------------------------------------------------

namespace {

/// Box comparisons NonMaxSuppression may make.
constexpr int64_t kMaxNmsWork = int64_t{1} << 36;

struct Box {
  double x_min, y_min, x_max, y_max;
};

Box readBox(const std::vector<double>& b, int64_t i, bool center) {
  const double* p = b.data() + i * 4;
  if (center) {
    return {p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2};
  }
  return {std::min(p[1], p[3]), std::min(p[0], p[2]), std::max(p[1], p[3]), std::max(p[0], p[2])};
}

/// Whether the IoU of a and b exceeds the threshold (boxes without area never suppress).
bool suppresses(const Box& a, const Box& b, double threshold) {
  double ix = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  double iy = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (!(ix > 0) || !(iy > 0)) return false;
  double inter = ix * iy;
  double area_a = (a.x_max - a.x_min) * (a.y_max - a.y_min);
  double area_b = (b.x_max - b.x_min) * (b.y_max - b.y_min);
  double uni = area_a + area_b - inter;
  if (!(area_a > 0) || !(area_b > 0) || !(uni > 0)) return false;
  return inter / uni > threshold;
}

/// One class's kept boxes. A box that does not overlap a kept box in x never suppresses by it
/// (`suppresses`), so where every coordinate is finite the kept boxes are indexed by x_min and a
/// candidate is compared only with those that can reach its x extent: the full scan's result, in
/// O(n log n) where boxes spread out (torchvision's batched NMS offsets each class's boxes apart,
/// so one NMS over thousands of boxes compares each with a few neighbours).
class KeptBoxes {
 public:
  explicit KeptBoxes(bool indexed) : indexed_(indexed) {}

  bool suppressed(const Box& b, double threshold) const {
    if (!indexed_) {
      return std::any_of(all_.begin(), all_.end(),
                         [&](const Box& k) { return suppresses(b, k, threshold); });
    }
    // k.x_max > b.x_min needs k.x_min > b.x_min - width(k); twice the widest width and a
    // relative margin keep rounding from leaving out a box that overlaps.
    double reach = 2 * widest_ + 1e-9 * std::abs(b.x_min);
    auto end = by_x_min_.lower_bound(b.x_max);
    for (auto it = by_x_min_.lower_bound(b.x_min - reach); it != end; ++it) {
      if (suppresses(b, it->second, threshold)) return true;
    }
    return false;
  }
  void add(const Box& b) {
    ++size_;
    if (!indexed_) {
      all_.push_back(b);
      return;
    }
    widest_ = std::max(widest_, b.x_max - b.x_min);
    by_x_min_.emplace(b.x_min, b);
  }
  int64_t size() const { return size_; }

 private:
  bool indexed_;
  int64_t size_ = 0;
  std::vector<Box> all_;
  std::multimap<double, Box> by_x_min_;
  double widest_ = 0;
};

/// The kept box indices of one batch and class: candidates above the score threshold by
/// descending score (stable), each kept unless a kept box suppresses it, up to max_out.
std::vector<int64_t> selectBoxes(const std::vector<Box>& boxes, bool finite, const double* s,
                                 std::optional<double> score_threshold, double iou,
                                 int64_t max_out) {
  std::vector<int64_t> cand;
  for (int64_t i = 0; i < static_cast<int64_t>(boxes.size()); ++i) {
    if (!score_threshold || s[i] > *score_threshold) cand.push_back(i);
  }
  std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return s[x] > s[y]; });
  KeptBoxes kept(finite);
  std::vector<int64_t> out;
  for (int64_t i : cand) {
    if (kept.size() >= max_out) break;
    const Box& b = boxes[static_cast<size_t>(i)];
    if (kept.suppressed(b, iou)) continue;
    kept.add(b);
    out.push_back(i);
  }
  return out;
}

}  // namespace

StatusOr<Outputs> nonMaxSuppressionKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* boxes_t, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* scores_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(std::vector<double> boxes, readFloats<double>(ctx, *boxes_t));
  ASSIGN_OR_RETURN(std::vector<double> scores, readFloats<double>(ctx, *scores_t));
  int64_t max_out = 0;
  if (const HostTensor* m = ctx.input(2); m != nullptr && m->numElements() > 0) {
    ASSIGN_OR_RETURN(max_out, readIntScalar(*m, "max_output_boxes_per_class"));
  }
  double iou = 0;
  if (const HostTensor* t = ctx.input(3); t != nullptr && t->numElements() > 0) {
    if (t->numElements() != 1) return invalidArgument("NonMaxSuppression: iou_threshold");
    ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *t));
    iou = v[0];
  }
  std::optional<double> score_threshold;
  if (const HostTensor* t = ctx.input(4); t != nullptr && t->numElements() > 0) {
    if (t->numElements() != 1) return invalidArgument("NonMaxSuppression: score_threshold");
    ASSIGN_OR_RETURN(std::vector<double> v, readFloats<double>(ctx, *t));
    score_threshold = v[0];
  }
  int64_t cpb = ctx.attrs.getInt("center_point_box", 0);
  if (cpb != 0 && cpb != 1) return invalidArgument("NonMaxSuppression: center_point_box {}", cpb);
  if (boxes_t->rank() != 3 || boxes_t->dims[2] != 4 || scores_t->rank() != 3 ||
      scores_t->dims[0] != boxes_t->dims[0] || scores_t->dims[2] != boxes_t->dims[1]) {
    return invalidArgument(
        "NonMaxSuppression: boxes must be [batches, boxes, 4] and scores [batches, classes, "
        "boxes]");
  }
  const int64_t batches = boxes_t->dims[0], n_boxes = boxes_t->dims[1];
  const int64_t classes = scores_t->dims[1];
  max_out = std::clamp<int64_t>(max_out, 0, n_boxes);
  // Each candidate is compared with at most max_out kept boxes.
  int64_t work = 0;
  if (__builtin_mul_overflow(batches * classes, n_boxes, &work) ||
      __builtin_mul_overflow(work, std::max<int64_t>(max_out, 1), &work) || work > kMaxNmsWork) {
    return makeError(StatusCode::kResourceExhausted, "NonMaxSuppression: too much work");
  }
  std::vector<int64_t> selected;  // triples
  std::vector<Box> batch_boxes(static_cast<size_t>(n_boxes));
  for (int64_t b = 0; b < batches; ++b) {
    bool finite = true;
    for (int64_t i = 0; i < n_boxes; ++i) {
      const Box& box = batch_boxes[static_cast<size_t>(i)] =
          readBox(boxes, b * n_boxes + i, cpb == 1);
      finite = finite && std::isfinite(box.x_min) && std::isfinite(box.x_max);
    }
    for (int64_t c = 0; c < classes; ++c) {
      const double* s = scores.data() + (b * classes + c) * n_boxes;
      for (int64_t i : selectBoxes(batch_boxes, finite, s, score_threshold, iou, max_out)) {
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  int64_t n_sel = static_cast<int64_t>(selected.size()) / 3;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kInt64, {n_sel, 3}));
  for (size_t i = 0; i < selected.size(); ++i)
    out.set<int64_t>(static_cast<int64_t>(i), selected[i]);
  return single(std::move(out));
}

// --- TensorScatter
// --------------------------------------------------------------------------------

StatusOr<Outputs> tensorScatterKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* past, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* update, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, past->dtype));
  RETURN_IF_ERROR(checkSameType(ctx, {past, update}));
  std::string mode = ctx.attrs.getString("mode", "linear");
  if (mode != "linear" && mode != "circular") {
    return invalidArgument("TensorScatter: mode '{}'", mode);
  }
  int64_t rank = past->rank();
  if (rank < 2 || update->rank() != rank) {
    return invalidArgument("TensorScatter: past_cache and update need one rank >= 2");
  }
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", -2), rank));
  if (axis == 0) return invalidArgument("TensorScatter: axis 0 is the batch axis");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t a = past->dims[static_cast<size_t>(d)], b = update->dims[static_cast<size_t>(d)];
    if (d == axis ? b > a : a != b) {
      return invalidArgument("TensorScatter: update does not fit past_cache in dimension {}", d);
    }
  }
  const int64_t batch = past->dims[0];
  Dims writes(static_cast<size_t>(batch), 0);
  if (const HostTensor* w = ctx.input(2)) {
    ASSIGN_OR_RETURN(writes, readInts(*w, "write_indices"));
    if (static_cast<int64_t>(writes.size()) != batch) {
      return invalidArgument("TensorScatter: write_indices must have shape [{}]", batch);
    }
  }
  HostTensor out = *past;
  if (update->numElements() == 0) return single(std::move(out));
  const int64_t max_seq = past->dims[static_cast<size_t>(axis)];
  const int64_t seq = update->dims[static_cast<size_t>(axis)];
  const int64_t outer = dimProduct(past->dims, 0, axis);
  const int64_t per_batch = outer / batch;
  const int64_t inner = dimProduct(past->dims, axis + 1, rank);
  size_t eb = elementBytes(past->dtype);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t start = writes[static_cast<size_t>(o / per_batch)];
    for (int64_t s = 0; s < seq; ++s) {
      int64_t pos = 0;
      if (mode == "circular") {
        pos = ((start % max_seq + s) % max_seq + max_seq) % max_seq;
      } else if (start < 0 || start > max_seq - seq) {
        return invalidArgument("TensorScatter: write index {} leaves the cache", start);
      } else {
        pos = start + s;
      }
      copyElements(out, (o * max_seq + pos) * inner, *update, (o * seq + s) * inner, inner, eb);
    }
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
