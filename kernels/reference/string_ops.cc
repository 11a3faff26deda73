// String kernels: StringConcat (20), StringSplit (20), StringNormalizer (10) and RegexFullMatch
// (20, with std::regex's ECMAScript grammar standing in for RE2 on the patterns both accept).
//   StringConcat(X, Y)[i] = X[i] + Y[i]              (numpy broadcasting)
//   StringSplit(X) -> Y[..., k] = k-th part of X[...] (padded with ""), Z[...] = number of parts
//   StringNormalizer(X[C] or X[1, C]) = X without stopwords, then LOWER / UPPER / NONE
//   RegexFullMatch(X)[i] = whether `pattern` matches all of X[i]
#include <algorithm>
#include <regex>
#include <set>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

/// Bytes of string data one kernel may produce (the output cap, counted on the characters).
constexpr uint64_t kMaxStringBytes = kMaxOutputBytes;

Status requireStrings(const KernelContext& ctx, const HostTensor& t) {
  return t.dtype == DataType::kString ? Status::ok() : unsupportedType(ctx, t.dtype);
}

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/// Python's str.split(): with an empty delimiter on runs of whitespace (none at either end),
/// else on each delimiter; at most `maxsplit` splits when it is non-negative.
std::vector<std::string> splitString(const std::string& s, const std::string& delim,
                                     int64_t maxsplit) {
  std::vector<std::string> parts;
  int64_t splits = 0;
  if (delim.empty()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && isSpace(s[i])) ++i;
      if (i == s.size()) break;
      if (maxsplit >= 0 && splits == maxsplit) {
        parts.push_back(s.substr(i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !isSpace(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      ++splits;
      i = j;
    }
    return parts;
  }
  size_t start = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    size_t at = s.find(delim, start);
    if (at == std::string::npos) break;
    parts.push_back(s.substr(start, at - start));
    start = at + delim.size();
    ++splits;
  }
  parts.push_back(s.substr(start));
  return parts;
}

std::string changeCase(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace

StatusOr<Outputs> stringConcatKernel(const KernelContext& ctx) {
  auto x = requireInput(ctx, 0);
  if (!x.isOk()) return x.status();
  auto y = requireInput(ctx, 1);
  if (!y.isOk()) return y.status();
  RETURN_IF_ERROR(requireStrings(ctx, **x));
  RETURN_IF_ERROR(requireStrings(ctx, **y));
  auto dims = broadcastShapes({&(*x)->dims, &(*y)->dims});
  if (!dims.isOk()) return dims.status().withContext(ctx.op);
  auto out = makeOutput(DataType::kString, *dims);
  if (!out.isOk()) return out.status();
  uint64_t total = 0;
  Status st = Status::ok();
  mapBroadcast({*x, *y}, *dims, [&](int64_t i, const int64_t* o) {
    if (!st.isOk()) return;
    const std::string& a = (*x)->strings[static_cast<size_t>(o[0])];
    const std::string& b = (*y)->strings[static_cast<size_t>(o[1])];
    total += a.size() + b.size();
    if (total > kMaxStringBytes) {
      st = makeError(StatusCode::kResourceExhausted, "{}: the output exceeds {} bytes", ctx.op,
                     kMaxStringBytes);
      return;
    }
    out->strings[static_cast<size_t>(i)] = a + b;
  });
  RETURN_IF_ERROR(st);
  return single(std::move(out).value());
}

StatusOr<Outputs> stringSplitKernel(const KernelContext& ctx) {
  auto x = requireInput(ctx, 0);
  if (!x.isOk()) return x.status();
  RETURN_IF_ERROR(requireStrings(ctx, **x));
  std::string delim = ctx.attrs.getString("delimiter", "");
  int64_t maxsplit = ctx.attrs.getInt("maxsplit", -1);
  if (maxsplit < -1) maxsplit = -1;  // any negative value means no limit, as in Python
  const HostTensor& in = **x;
  std::vector<std::vector<std::string>> parts(in.strings.size());
  size_t width = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i] = splitString(in.strings[i], delim, maxsplit);
    width = std::max(width, parts[i].size());
  }
  Dims dims = in.dims;
  dims.push_back(static_cast<int64_t>(width));
  auto y = makeOutput(DataType::kString, dims);
  if (!y.isOk()) return y.status();
  auto z = makeOutput(DataType::kInt64, in.dims);
  if (!z.isOk()) return z.status();
  for (size_t i = 0; i < parts.size(); ++i) {
    for (size_t k = 0; k < parts[i].size(); ++k) {
      y->strings[i * width + k] = std::move(parts[i][k]);
    }
    z->set<int64_t>(static_cast<int64_t>(i), static_cast<int64_t>(parts[i].size()));
  }
  Outputs out;
  out.push_back(std::move(y).value());
  out.push_back(std::move(z).value());
  return out;
}

StatusOr<Outputs> stringNormalizerKernel(const KernelContext& ctx) {
  auto x = requireInput(ctx, 0);
  if (!x.isOk()) return x.status();
  RETURN_IF_ERROR(requireStrings(ctx, **x));
  const HostTensor& in = **x;
  if (!(in.rank() == 1 || (in.rank() == 2 && in.dims[0] == 1))) {
    return invalidArgument("{}: the input must be [C] or [1, C], got [{}]", ctx.op,
                           fmt::join(in.dims, ","));
  }
  std::string action = ctx.attrs.getString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    return invalidArgument("{}: case_change_action '{}' is not NONE, LOWER or UPPER", ctx.op,
                           action);
  }
  bool sensitive = ctx.attrs.getInt("is_case_sensitive", 0) != 0;
  std::set<std::string> stops;
  if (auto it = ctx.attrs.string_lists.find("stopwords"); it != ctx.attrs.string_lists.end()) {
    for (const std::string& w : it->second) stops.insert(sensitive ? w : changeCase(w, false));
  }
  std::vector<std::string> kept;
  for (const std::string& s : in.strings) {
    if (stops.count(sensitive ? s : changeCase(s, false))) continue;
    kept.push_back(action == "NONE" ? s : changeCase(s, action == "UPPER"));
  }
  // Everything removed: one empty string, so that the output is never empty.
  if (kept.empty()) kept.emplace_back();
  Dims dims = in.rank() == 1 ? Dims{static_cast<int64_t>(kept.size())}
                             : Dims{1, static_cast<int64_t>(kept.size())};
  auto out = makeOutput(DataType::kString, dims);
  if (!out.isOk()) return out.status();
  out->strings = std::move(kept);
  return single(std::move(out).value());
}

StatusOr<Outputs> regexFullMatchKernel(const KernelContext& ctx) {
  auto x = requireInput(ctx, 0);
  if (!x.isOk()) return x.status();
  RETURN_IF_ERROR(requireStrings(ctx, **x));
  if (!ctx.attrs.strings.count("pattern")) {
    return invalidArgument("{}: the pattern attribute is required", ctx.op);
  }
  std::string pattern = ctx.attrs.getString("pattern", "");
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    // Not necessarily invalid RE2: only outside what std::regex can stand in for.
    return unimplemented(ctx, fmt::format("pattern '{}' is not one std::regex accepts", pattern));
  }
  auto out = makeOutput(DataType::kBool, (*x)->dims);
  if (!out.isOk()) return out.status();
  for (size_t i = 0; i < (*x)->strings.size(); ++i) {
    bool m = false;
    try {
      m = std::regex_match((*x)->strings[i], re);
    } catch (const std::regex_error&) {
      return makeError(StatusCode::kResourceExhausted, "{}: matching element {} is too complex",
                       ctx.op, i);
    }
    out->bytes[i] = m ? 1 : 0;
  }
  return single(std::move(out).value());
}

}  // namespace onnxopt::kernels::ref
