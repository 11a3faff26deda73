// TfIdfVectorizer (opset 9): counts the n-grams of the pool in each row of X and weighs them.
//   pool n-gram g (of length n, min_gram_length <= n <= max_gram_length) occurs in row r at
//   start s with skip k (0 <= k <= max_skip_count; unigrams once) when
//   X[r, s + j * (k + 1)] == g[j] for j < n
//   count[r, ngram_indexes[g]] = number of such occurrences
//   Y = count (TF), [count > 0] * w (IDF), count * w (TFIDF); w = weights, or 1 without them
// X is [C] (Y is [W]) or [B, C] (Y is [B, W]), W = max(ngram_indexes) + 1. The pool holds
// ngram_counts[n-1] .. ngram_counts[n] - 1 as the n-grams of length n (the last up to its end).
#include <algorithm>
#include <map>
#include <variant>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

/// Pool lookups one call may make (rows * C * n-gram lengths * skips).
constexpr int64_t kMaxTfIdfWork = int64_t{1} << 36;

/// The pool n-grams of the lengths counted, each mapped to its output column.
template <typename Key>
using NgramTable = std::map<std::vector<Key>, int64_t>;

template <typename Key>
StatusOr<NgramTable<Key>> buildTable(const KernelContext& ctx, const std::vector<Key>& pool,
                                     const Dims& counts, const Dims& indexes, int64_t min_len,
                                     int64_t max_len) {
  NgramTable<Key> table;
  const auto total = static_cast<int64_t>(pool.size());
  size_t ngram_id = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    int64_t begin = counts[i];
    int64_t end = i + 1 < counts.size() ? counts[i + 1] : total;
    if (begin < 0 || end < begin || end > total) {
      return invalidArgument("{}: ngram_counts [{}] do not split a pool of {} items", ctx.op,
                             fmt::join(counts, ","), total);
    }
    const auto n = static_cast<int64_t>(i + 1);
    if ((end - begin) % n != 0) {
      return invalidArgument("{}: {} pool items of {}-grams are not a whole number of them", ctx.op,
                             end - begin, n);
    }
    for (int64_t s = begin; s < end; s += n) {
      if (ngram_id >= indexes.size()) {
        return invalidArgument("{}: ngram_indexes has {} entries, the pool has more n-grams",
                               ctx.op, indexes.size());
      }
      int64_t column = indexes[ngram_id++];
      if (n < min_len || n > max_len) continue;
      table[std::vector<Key>(pool.begin() + s, pool.begin() + s + n)] = column;
    }
  }
  return table;
}

template <typename Key>
void countRow(const std::vector<Key>& row, const NgramTable<Key>& table, int64_t min_len,
              int64_t max_len, int64_t max_skip, int64_t* counts) {
  const auto c = static_cast<int64_t>(row.size());
  std::vector<Key> gram;
  for (int64_t n = min_len; n <= max_len && n <= c; ++n) {
    // Unigrams do not depend on the skip; longer n-grams need their span inside the row.
    int64_t skips = n == 1 ? 0 : std::min(max_skip, (c - 1) / (n - 1) - 1);
    for (int64_t k = 0; k <= skips; ++k) {
      int64_t span = (n - 1) * (k + 1);
      for (int64_t s = 0; s + span < c; ++s) {
        gram.clear();
        for (int64_t j = 0; j < n; ++j) gram.push_back(row[static_cast<size_t>(s + j * (k + 1))]);
        if (auto it = table.find(gram); it != table.end()) ++counts[it->second];
      }
    }
  }
}

template <typename Key>
StatusOr<std::vector<int64_t>> countAll(const KernelContext& ctx, const std::vector<Key>& x,
                                        int64_t rows, int64_t c, const std::vector<Key>& pool,
                                        const Dims& counts, const Dims& indexes, int64_t width) {
  int64_t min_len = ctx.attrs.getInt("min_gram_length", 0);
  int64_t max_len = ctx.attrs.getInt("max_gram_length", 0);
  int64_t max_skip = ctx.attrs.getInt("max_skip_count", 0);
  if (min_len < 1 || max_len < min_len) {
    return invalidArgument("{}: min_gram_length {} and max_gram_length {} are not 1 <= min <= max",
                           ctx.op, min_len, max_len);
  }
  if (max_skip < 0) return invalidArgument("{}: max_skip_count {} is negative", ctx.op, max_skip);
  ASSIGN_OR_RETURN(NgramTable<Key> table, buildTable(ctx, pool, counts, indexes, min_len, max_len));
  // Lengths past the pool's longest n-gram or the row never match: bound the work by them.
  int64_t longest = std::min({max_len, static_cast<int64_t>(counts.size()), c});
  int64_t skips = std::min(max_skip, c) + 1;
  if (rows > 0 && c > 0 && longest > 0 &&
      static_cast<double>(rows) * static_cast<double>(c) * static_cast<double>(longest) *
              static_cast<double>(skips) >
          static_cast<double>(kMaxTfIdfWork)) {
    return makeError(StatusCode::kResourceExhausted, "{}: more than {} n-gram lookups", ctx.op,
                     kMaxTfIdfWork);
  }
  std::vector<int64_t> freq(static_cast<size_t>(rows * width), 0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<Key> row(x.begin() + r * c, x.begin() + (r + 1) * c);
    countRow(row, table, min_len, std::min(max_len, longest), max_skip, freq.data() + r * width);
  }
  return freq;
}

}  // namespace

StatusOr<Outputs> tfIdfVectorizerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  DataType t = x->dtype;
  if (t != DataType::kString && t != DataType::kInt32 && t != DataType::kInt64) {
    return unsupportedType(ctx, t);
  }
  if (x->rank() > 2 || (x->rank() == 2 && x->dims[0] < 1)) {
    return invalidArgument("{}: X must be [C] or [B, C] with B > 0, got [{}]", ctx.op,
                           fmt::join(x->dims, ","));
  }
  std::string mode = ctx.attrs.getString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") {
    return invalidArgument("{}: mode '{}' is not TF, IDF or TFIDF", ctx.op, mode);
  }
  Dims counts = ctx.attrs.getInts("ngram_counts").value_or(Dims{});
  Dims indexes = ctx.attrs.getInts("ngram_indexes").value_or(Dims{});
  if (indexes.empty()) return invalidArgument("{}: ngram_indexes is required", ctx.op);
  int64_t width = 0;
  for (int64_t i : indexes) {
    if (i < 0 || i >= (int64_t{1} << 40)) {
      return invalidArgument("{}: ngram_indexes holds {}", ctx.op, i);
    }
    width = std::max(width, i + 1);
  }
  std::vector<float> weights;
  if (auto it = ctx.attrs.float_lists.find("weights"); it != ctx.attrs.float_lists.end()) {
    weights = it->second;
  }
  if (!weights.empty() && weights.size() != indexes.size()) {
    return invalidArgument("{}: {} weights for {} n-grams", ctx.op, weights.size(), indexes.size());
  }
  bool has_ints = ctx.attrs.int_lists.count("pool_int64s") > 0;
  bool has_strings = ctx.attrs.string_lists.count("pool_strings") > 0;
  if (has_ints == has_strings) {
    return invalidArgument("{}: exactly one of pool_int64s and pool_strings is required", ctx.op);
  }
  if (has_strings != (t == DataType::kString)) {
    return invalidArgument("{}: a {} input needs {}", ctx.op, dataTypeName(t),
                           has_strings ? "pool_int64s" : "pool_strings");
  }
  int64_t rows = x->rank() == 2 ? x->dims[0] : 1;
  int64_t c = x->rank() == 0 ? 1 : x->dims.back();
  Dims out_dims = x->rank() == 2 ? Dims{rows, width} : Dims{width};
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kFloat, out_dims));

  StatusOr<std::vector<int64_t>> freq = std::vector<int64_t>{};
  if (has_strings) {
    freq = countAll(ctx, x->strings, rows, c, ctx.attrs.string_lists.at("pool_strings"), counts,
                    indexes, width);
  } else {
    std::vector<int64_t> values(static_cast<size_t>(x->numElements()));
    for (size_t i = 0; i < values.size(); ++i) {
      auto k = static_cast<int64_t>(i);
      values[i] = t == DataType::kInt32 ? x->get<int32_t>(k) : x->get<int64_t>(k);
    }
    freq = countAll(ctx, values, rows, c, ctx.attrs.int_lists.at("pool_int64s"), counts, indexes,
                    width);
  }
  if (!freq.isOk()) return freq.status();
  // The weight of an output column: that of the (last) n-gram mapped to it.
  std::vector<float> column_weight(static_cast<size_t>(width), 1.0f);
  for (size_t g = 0; g < weights.size(); ++g) {
    column_weight[static_cast<size_t>(indexes[g])] = weights[g];
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < width; ++j) {
      auto f = static_cast<float>((*freq)[static_cast<size_t>(r * width + j)]);
      float w = column_weight[static_cast<size_t>(j)];
      float y = mode == "TF" ? f : mode == "IDF" ? (f > 0 ? w : 0.0f) : f * w;
      out.set<float>(r * width + j, y);
    }
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
