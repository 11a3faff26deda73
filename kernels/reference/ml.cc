// Kernels of the ai.onnx.ml domain (registered as "ai.onnx.ml.<Op>", opsets of that domain):
//   Binarizer(X)[i] = X[i] > threshold ? 1 : 0                                  (ml 1)
//   ArrayFeatureExtractor(X, Y)[..., j] = X[..., Y[j]]  (X [C] gives [1, |Y|])    (ml 1)
//   LabelEncoder(X)[i] = values[k] where keys[k] == X[i], else the default       (ml 1, 2, 4)
//   TreeEnsemble(X)[n, t] = aggregate over the trees of the weights of the leaves that X[n]
//     reaches with target t, then post_transform                                 (ml 5)
//   Normalizer(X)[n, :] = X[n, :] / max, sum |.| or sqrt(sum squares) of the row  (ml 1)
//   Scaler(X)[..., c] = (X[..., c] - offset[c]) * scale[c]                       (ml 1)
//   Imputer(X)[n, c] = X[n, c] == replaced (or NaN) ? imputed[c] : X[n, c]       (ml 1)
//   OneHotEncoder(X)[..., k] = X[...] == cats[k]                                 (ml 1)
//   FeatureVectorizer(X0, X1, ...)[n, :] = X0[n, :d0] ++ X1[n, :d1] ++ ...       (ml 1)
//   LinearRegressor(X)[n, t] = post_transform(X[n, :] . coefficients[t, :] + intercepts[t])
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

/// Tree nodes one TreeEnsemble call may visit (rows * trees * depth).
constexpr int64_t kMaxTreeWork = int64_t{1} << 36;

bool isOneOf(DataType t, std::initializer_list<DataType> types) {
  return std::find(types.begin(), types.end(), t) != types.end();
}

/// A lookup key for element i of t: equal numbers give equal keys across float widths (NaN equals
/// NaN, -0 equals 0), strings are themselves.
std::string keyOf(const HostTensor& t, int64_t i) {
  if (t.dtype == DataType::kString) return t.strings[static_cast<size_t>(i)];
  std::string key;
  // Only the types kLabelTypes admits get here: the context names no op.
  static const std::string kNoOp;
  static const std::vector<const HostTensor*> kNoInputs;
  static const KernelAttrs kNoAttrs;
  KernelContext none{kNoOp, 0, kNoInputs, kNoAttrs, 0};
  (void)visitType(none, t.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      double v = load<T>(t, i);
      if (std::isnan(v)) {
        key = "fnan";
        return Status::ok();
      }
      if (v == 0) v = 0;  // -0 matches 0
      key.assign(sizeof(double) + 1, 'f');
      std::memcpy(key.data() + 1, &v, sizeof(double));
    } else {
      // Integers: their exact value, apart from every float key.
      key = "i" + std::to_string(static_cast<int64_t>(load<T>(t, i)));
    }
    return Status::ok();
  });
  return key;
}

HostTensor stringTensor(const std::vector<std::string>& values) {
  HostTensor t = HostTensor::zeros(DataType::kString, {static_cast<int64_t>(values.size())});
  t.strings = values;
  return t;
}
HostTensor int64Tensor(const std::vector<int64_t>& values) {
  HostTensor t = HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), values[i]);
  return t;
}
HostTensor floatTensor(const std::vector<float>& values) {
  HostTensor t = HostTensor::zeros(DataType::kFloat, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.set<float>(static_cast<int64_t>(i), values[i]);
  return t;
}

/// The keys or values of a LabelEncoder: from `<what>_strings`, `_int64s`, `_floats` or
/// `_tensor`; exactly one must be given.
StatusOr<HostTensor> labelList(const KernelContext& ctx, const std::string& what) {
  const KernelAttrs& a = ctx.attrs;
  std::vector<HostTensor> found;
  if (auto it = a.string_lists.find(what + "_strings"); it != a.string_lists.end()) {
    found.push_back(stringTensor(it->second));
  }
  if (auto it = a.int_lists.find(what + "_int64s"); it != a.int_lists.end()) {
    found.push_back(int64Tensor(it->second));
  }
  if (auto it = a.float_lists.find(what + "_floats"); it != a.float_lists.end()) {
    found.push_back(floatTensor(it->second));
  }
  if (ctx.opset >= 4) {
    if (const HostTensor* t = a.getTensor(what + "_tensor")) found.push_back(*t);
  }
  if (found.size() != 1) {
    return invalidArgument("{}: exactly one {}_* attribute is required, {} given", ctx.op, what,
                           found.size());
  }
  return std::move(found[0]);
}

/// A one-element tensor of `type` holding the default LabelEncoder value of that type.
StatusOr<HostTensor> labelDefault(const KernelContext& ctx, DataType type) {
  const KernelAttrs& a = ctx.attrs;
  if (ctx.opset >= 4) {
    if (const HostTensor* t = a.getTensor("default_tensor")) {
      if (t->dtype != type || t->numElements() != 1) {
        return invalidArgument("{}: default_tensor must be one {} value", ctx.op,
                               dataTypeName(type));
      }
      return *t;
    }
  }
  if (type == DataType::kString) return stringTensor({a.getString("default_string", "_Unused")});
  if (type == DataType::kInt64) return int64Tensor({a.getInt("default_int64", -1)});
  if (type == DataType::kFloat) return floatTensor({a.getFloat("default_float", -0.0f)});
  // Other value types come from values_tensor: -1 for integers, -0 for floats.
  HostTensor t = HostTensor::zeros(type, {1});
  Status st = visitType(ctx, type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsFloat<T>) {
      store<T>(t, 0, static_cast<Compute<T>>(-0.0));
    } else if constexpr (kIsSignedInt<T>) {
      store<T>(t, 0, static_cast<Compute<T>>(-1));
    } else {
      return unsupportedType(ctx, type);
    }
    return Status::ok();
  });
  RETURN_IF_ERROR(st);
  return t;
}

constexpr std::initializer_list<DataType> kLabelTypes = {DataType::kString, DataType::kInt64,
                                                         DataType::kFloat,  DataType::kInt32,
                                                         DataType::kInt16,  DataType::kDouble};

/// The inverse of the standard normal CDF at p in (0, 1): sqrt(2) * erfinv(2p - 1).
double probit(double p) {
  // Outside [0, 1] no probability: NaN, as onnxruntime gives.
  if (!(p >= 0 && p <= 1)) return std::numeric_limits<double>::quiet_NaN();
  double y = 2 * p - 1;
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  // Start from Giles' single-precision approximation, then polish with Newton steps on erf.
  double w = -std::log((1 - y) * (1 + y));
  double x;
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941}) {
      x = c + x * w;
    }
  } else {
    w = std::sqrt(w) - 3;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682}) {
      x = c + x * w;
    }
  }
  x *= y;
  for (int k = 0; k < 3; ++k) {
    double err = std::erf(x) - y;
    x -= err / (2 / std::sqrt(M_PI) * std::exp(-x * x));
  }
  return std::sqrt(2.0) * x;
}

/// Applies an ML post_transform to one row of scores (by name: NONE, SOFTMAX, LOGISTIC,
/// SOFTMAX_ZERO, PROBIT). TreeEnsemble numbers them as its spec does (1 SOFTMAX, 2 LOGISTIC);
/// onnxruntime 1.32 reads 1 as LOGISTIC and 2 as SOFTMAX.
void postTransform(const std::string& how, std::vector<double>& row) {
  if (how == "LOGISTIC") {
    for (double& v : row) v = 1 / (1 + std::exp(-v));
  } else if (how == "PROBIT") {
    for (double& v : row) v = probit(v);
  } else if (how == "SOFTMAX" || how == "SOFTMAX_ZERO") {
    // SOFTMAX_ZERO leaves zero scores at zero and normalizes the others among themselves.
    bool zero = how == "SOFTMAX_ZERO";
    double top = -std::numeric_limits<double>::infinity();
    for (double v : row) {
      if (!zero || v != 0) top = std::max(top, v);
    }
    double sum = 0;
    for (double& v : row) {
      if (zero && v == 0) continue;
      v = std::exp(v - top);
      sum += v;
    }
    for (double& v : row) {
      if (sum > 0) v /= sum;
    }
  }
}

/// The elements of an integer attribute given as a tensor (uint8 or int32/int64) or int list.
StatusOr<Dims> intsAttr(const KernelContext& ctx, const std::string& name) {
  if (const HostTensor* t = ctx.attrs.getTensor(name)) {
    if (t->dtype == DataType::kUint8) {
      Dims v(static_cast<size_t>(t->numElements()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(t->bytes[i]);
      return v;
    }
    return readInts(*t, name.c_str());
  }
  return ctx.attrs.getInts(name).value_or(Dims{});
}

/// The elements of a float attribute given as a tensor of any float type, or as a float list.
StatusOr<std::vector<double>> floatsAttr(const KernelContext& ctx, const std::string& name) {
  if (const HostTensor* t = ctx.attrs.getTensor(name)) return readFloats<double>(ctx, *t);
  std::vector<double> v;
  if (auto it = ctx.attrs.float_lists.find(name); it != ctx.attrs.float_lists.end()) {
    v.assign(it->second.begin(), it->second.end());
  }
  return v;
}

struct TreeNode {
  int64_t mode;
  int64_t feature;
  double split;
  std::vector<double> members;  // sorted, for mode 6 (BRANCH_MEMBER)
  bool missing_true;
  int64_t next[2];  // true, false: node or leaf index
  bool leaf[2];
};

bool branchTrue(const TreeNode& n, double x) {
  if (std::isnan(x) && n.missing_true) return true;
  switch (n.mode) {
    case 0:
      return x <= n.split;
    case 1:
      return x < n.split;
    case 2:
      return x >= n.split;
    case 3:
      return x > n.split;
    case 4:
      return x == n.split;
    case 5:
      return x != n.split;
    default:
      return std::binary_search(n.members.begin(), n.members.end(), x);
  }
}

/// The numeric types the feature-preprocessing ops take.
constexpr std::initializer_list<DataType> kFeatureTypes = {DataType::kFloat, DataType::kDouble,
                                                           DataType::kInt64, DataType::kInt32};

/// X of a feature op as [rows, C] doubles (a vector is one row), after checking its type.
struct Features {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
};
StatusOr<Features> readFeatures(const KernelContext& ctx, const HostTensor& x, bool matrix_only) {
  if (!isOneOf(x.dtype, kFeatureTypes)) return unsupportedType(ctx, x.dtype);
  if (x.rank() == 0 || x.rank() > 2 || (matrix_only && x.rank() != 2)) {
    return invalidArgument("{}: X must be {}, got [{}]", ctx.op,
                           matrix_only ? "[N, C]" : "[C] or [N, C]", fmt::join(x.dims, ","));
  }
  Features f;
  f.rows = x.rank() == 2 ? x.dims[0] : 1;
  f.cols = x.dims.back();
  f.v.resize(static_cast<size_t>(x.numElements()));
  RETURN_IF_ERROR(visitType(ctx, x.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < f.v.size(); ++i) {
      f.v[i] = static_cast<double>(load<T>(x, static_cast<int64_t>(i)));
    }
    return Status::ok();
  }));
  return f;
}

/// A float list attribute of length 1 (broadcast) or `cols`.
StatusOr<std::vector<double>> perColumn(const KernelContext& ctx, const std::string& name,
                                        int64_t cols, double fallback) {
  std::vector<double> v;
  if (auto it = ctx.attrs.float_lists.find(name); it != ctx.attrs.float_lists.end()) {
    v.assign(it->second.begin(), it->second.end());
  }
  if (v.empty()) v.push_back(fallback);
  if (v.size() != 1 && static_cast<int64_t>(v.size()) != cols) {
    return invalidArgument("{}: {} has {} values for {} columns", ctx.op, name, v.size(), cols);
  }
  if (v.size() == 1) v.assign(static_cast<size_t>(cols), v[0]);
  return v;
}

StatusOr<HostTensor> floatOutput(const Dims& dims, const std::vector<double>& v) {
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kFloat, dims));
  for (size_t i = 0; i < v.size(); ++i)
    out.set<float>(static_cast<int64_t>(i), static_cast<float>(v[i]));
  return out;
}

}  // namespace

StatusOr<Outputs> normalizerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(Features f, readFeatures(ctx, *x, false));
  std::string norm = ctx.attrs.getString("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") {
    return invalidArgument("{}: norm '{}' is not MAX, L1 or L2", ctx.op, norm);
  }
  for (int64_t r = 0; r < f.rows; ++r) {
    double* row = f.v.data() + r * f.cols;
    double d = norm == "MAX" ? -std::numeric_limits<double>::infinity() : 0;
    for (int64_t c = 0; c < f.cols; ++c) {
      if (norm == "MAX") d = std::max(d, row[c]);
      if (norm == "L1") d += std::abs(row[c]);
      if (norm == "L2") d += row[c] * row[c];
    }
    if (norm == "L2") d = std::sqrt(d);
    // A row of zeros (a zero divisor) stays as it is.
    if (d == 0) continue;
    for (int64_t c = 0; c < f.cols; ++c) row[c] /= d;
  }
  ASSIGN_OR_RETURN(HostTensor out, floatOutput(x->dims, f.v));
  return single(std::move(out));
}

StatusOr<Outputs> scalerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(Features f, readFeatures(ctx, *x, false));
  ASSIGN_OR_RETURN(std::vector<double> offset, perColumn(ctx, "offset", f.cols, 0));
  ASSIGN_OR_RETURN(std::vector<double> scale, perColumn(ctx, "scale", f.cols, 1));
  for (size_t i = 0; i < f.v.size(); ++i) {
    size_t c = i % static_cast<size_t>(f.cols);
    f.v[i] = (f.v[i] - offset[c]) * scale[c];
  }
  ASSIGN_OR_RETURN(HostTensor out, floatOutput(x->dims, f.v));
  return single(std::move(out));
}

StatusOr<Outputs> imputerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (!isOneOf(x->dtype, kFeatureTypes)) return unsupportedType(ctx, x->dtype);
  if (x->rank() == 0) return invalidArgument("{}: X must have a rank of at least 1", ctx.op);
  bool floats = x->dtype == DataType::kFloat || x->dtype == DataType::kDouble;
  int64_t cols = x->dims.back();
  std::vector<double> imputed;
  Dims imputed_ints;
  if (floats) {
    ASSIGN_OR_RETURN(imputed, perColumn(ctx, "imputed_value_floats", cols, std::nan("")));
    if (!ctx.attrs.float_lists.count("imputed_value_floats")) {
      return invalidArgument("{}: a float X needs imputed_value_floats", ctx.op);
    }
  } else {
    imputed_ints = ctx.attrs.getInts("imputed_value_int64s").value_or(Dims{});
    if (imputed_ints.size() != 1 && static_cast<int64_t>(imputed_ints.size()) != cols) {
      return invalidArgument("{}: imputed_value_int64s has {} values for {} columns", ctx.op,
                             imputed_ints.size(), cols);
    }
  }
  auto replaced_float = static_cast<double>(ctx.attrs.getFloat("replaced_value_float", 0.0f));
  int64_t replaced_int = ctx.attrs.getInt("replaced_value_int64", 0);
  HostTensor out = *x;
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsNumeric<T>) {
      for (int64_t i = 0; i < x->numElements(); ++i) {
        auto c = static_cast<size_t>(i % cols);
        auto v = load<T>(*x, i);
        if constexpr (kIsFloat<T>) {
          bool hit = std::isnan(replaced_float) ? std::isnan(static_cast<double>(v))
                                                : static_cast<double>(v) == replaced_float;
          if (hit) store<T>(out, i, static_cast<Compute<T>>(imputed[c]));
        } else {
          if (static_cast<int64_t>(v) == replaced_int) {
            store<T>(out, i, static_cast<T>(imputed_ints[imputed_ints.size() == 1 ? 0 : c]));
          }
        }
      }
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> oneHotEncoderKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  bool strings = x->dtype == DataType::kString;
  if (!strings && !isOneOf(x->dtype, kFeatureTypes)) return unsupportedType(ctx, x->dtype);
  HostTensor cats;
  if (strings) {
    auto it = ctx.attrs.string_lists.find("cats_strings");
    if (it == ctx.attrs.string_lists.end() || it->second.empty()) {
      return invalidArgument("{}: a string X needs cats_strings", ctx.op);
    }
    cats = stringTensor(it->second);
  } else {
    Dims ints = ctx.attrs.getInts("cats_int64s").value_or(Dims{});
    if (ints.empty()) return invalidArgument("{}: a numeric X needs cats_int64s", ctx.op);
    cats = int64Tensor(ints);
  }
  bool zeros = ctx.attrs.getInt("zeros", 1) != 0;
  std::map<std::string, int64_t> table;
  for (int64_t k = 0; k < cats.numElements(); ++k) table.emplace(keyOf(cats, k), k);
  int64_t n = cats.numElements();
  Dims dims = x->dims;
  dims.push_back(n);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kFloat, dims));
  HostTensor as_int;
  const HostTensor* keys = x;
  if (!strings && x->dtype != DataType::kInt64) {
    // Numbers match the integer categories by their value truncated to an integer, as
    // onnxruntime does for float inputs.
    ASSIGN_OR_RETURN(Features f, readFeatures(ctx, *x, false));
    std::vector<int64_t> ints(f.v.size());
    for (size_t i = 0; i < ints.size(); ++i) ints[i] = convertNumber<int64_t>(f.v[i]);
    as_int = int64Tensor(ints);
    keys = &as_int;
  }
  for (int64_t i = 0; i < x->numElements(); ++i) {
    auto it = table.find(keyOf(*keys, i));
    if (it != table.end()) {
      out.set<float>(i * n + it->second, 1.0f);
    } else if (!zeros) {
      return invalidArgument("{}: element {} is no category and zeros is 0", ctx.op, i);
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> featureVectorizerKernel(const KernelContext& ctx) {
  Dims widths = ctx.attrs.getInts("inputdimensions").value_or(Dims{});
  if (widths.size() != ctx.numInputs() || widths.empty()) {
    return invalidArgument("{}: inputdimensions has {} entries for {} inputs", ctx.op,
                           widths.size(), ctx.numInputs());
  }
  int64_t rows = -1, total = 0;
  std::vector<Features> parts;
  for (size_t k = 0; k < ctx.numInputs(); ++k) {
    ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, k));
    ASSIGN_OR_RETURN(Features f, readFeatures(ctx, *x, false));
    if (x->rank() == 1) {
      // A vector is a column: one feature per row.
      f.rows = f.cols;
      f.cols = 1;
    }
    if (rows >= 0 && f.rows != rows) {
      return invalidArgument("{}: input {} has {} rows, input 0 has {}", ctx.op, k, f.rows, rows);
    }
    rows = f.rows;
    if (widths[k] < 0 || widths[k] > (int64_t{1} << 40)) {
      return invalidArgument("{}: inputdimensions holds {}", ctx.op, widths[k]);
    }
    total += widths[k];
    parts.push_back(std::move(f));
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(DataType::kFloat, {rows, total}));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = r * total;
    for (size_t k = 0; k < parts.size(); ++k) {
      const Features& f = parts[k];
      // Each input is cut or zero-padded to its width.
      for (int64_t c = 0; c < std::min(widths[k], f.cols); ++c) {
        out.set<float>(at + c, static_cast<float>(f.v[static_cast<size_t>(r * f.cols + c)]));
      }
      at += widths[k];
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> linearRegressorKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(Features f, readFeatures(ctx, *x, false));
  int64_t targets = ctx.attrs.getInt("targets", 1);
  std::vector<double> coef, icpt;
  if (auto it = ctx.attrs.float_lists.find("coefficients"); it != ctx.attrs.float_lists.end()) {
    coef.assign(it->second.begin(), it->second.end());
  }
  if (auto it = ctx.attrs.float_lists.find("intercepts"); it != ctx.attrs.float_lists.end()) {
    icpt.assign(it->second.begin(), it->second.end());
  }
  if (targets < 1 || static_cast<double>(targets) * static_cast<double>(f.cols) !=
                         static_cast<double>(coef.size())) {
    return invalidArgument("{}: {} coefficients for {} targets of {} features", ctx.op, coef.size(),
                           targets, f.cols);
  }
  if (!icpt.empty() && static_cast<int64_t>(icpt.size()) != targets) {
    return invalidArgument("{}: {} intercepts for {} targets", ctx.op, icpt.size(), targets);
  }
  std::string post = ctx.attrs.getString("post_transform", "NONE");
  if (post != "NONE" && post != "SOFTMAX" && post != "LOGISTIC" && post != "SOFTMAX_ZERO" &&
      post != "PROBIT") {
    return invalidArgument("{}: post_transform '{}' is not known", ctx.op, post);
  }
  std::vector<double> y(static_cast<size_t>(f.rows * targets));
  std::vector<double> row(static_cast<size_t>(targets));
  for (int64_t r = 0; r < f.rows; ++r) {
    for (int64_t t = 0; t < targets; ++t) {
      double acc = icpt.empty() ? 0 : icpt[static_cast<size_t>(t)];
      for (int64_t c = 0; c < f.cols; ++c) {
        acc += f.v[static_cast<size_t>(r * f.cols + c)] * coef[static_cast<size_t>(t * f.cols + c)];
      }
      row[static_cast<size_t>(t)] = acc;
    }
    postTransform(post, row);
    std::copy(row.begin(), row.end(), y.begin() + r * targets);
  }
  ASSIGN_OR_RETURN(HostTensor out, floatOutput({f.rows, targets}, y));
  return single(std::move(out));
}

StatusOr<Outputs> binarizerKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (!isOneOf(x->dtype,
               {DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32})) {
    return unsupportedType(ctx, x->dtype);
  }
  auto threshold = static_cast<double>(ctx.attrs.getFloat("threshold", 0.0f));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, x->dims));
  RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsNumeric<T> && !kIsBool<T>) {
      for (int64_t i = 0; i < x->numElements(); ++i) {
        auto v = load<T>(*x, i);
        store<T>(out, i, static_cast<double>(v) > threshold ? Compute<T>(1) : Compute<T>(0));
      }
    }
    return Status::ok();
  }));
  return single(std::move(out));
}

StatusOr<Outputs> arrayFeatureExtractorKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* y, requireInput(ctx, 1));
  if (!isOneOf(x->dtype, {DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32,
                          DataType::kString})) {
    return unsupportedType(ctx, x->dtype);
  }
  if (y->dtype != DataType::kInt64) return unsupportedType(ctx, y->dtype);
  if (x->rank() == 0) return invalidArgument("{}: X must have a rank of at least 1", ctx.op);
  ASSIGN_OR_RETURN(Dims index, readInts(*y, "Y"));
  int64_t c = x->dims.back();
  for (int64_t i : index) {
    if (i < 0 || i >= c) {
      return invalidArgument("{}: index {} is outside [0, {})", ctx.op, i, c);
    }
  }
  auto n = static_cast<int64_t>(index.size());
  Dims dims = x->rank() == 1 ? Dims{1, n} : x->dims;
  dims.back() = n;
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  int64_t rows = c == 0 ? dimProduct(x->dims, 0, x->rank() - 1) : x->numElements() / c;
  size_t bytes = elementBytes(x->dtype);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      copyElement(out, r * n + j, *x, r * c + index[static_cast<size_t>(j)], bytes);
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> labelEncoderKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  bool wide = ctx.opset >= 4;
  if (!(wide ? isOneOf(x->dtype, kLabelTypes)
             : isOneOf(x->dtype, {DataType::kString, DataType::kInt64, DataType::kFloat}))) {
    return unsupportedType(ctx, x->dtype);
  }
  HostTensor keys, values;
  if (ctx.opset == 1) {
    // classes_strings[k] <-> k, in the direction the input's type gives.
    std::vector<std::string> classes;
    if (auto it = ctx.attrs.string_lists.find("classes_strings");
        it != ctx.attrs.string_lists.end()) {
      classes = it->second;
    }
    Dims ids(classes.size());
    for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int64_t>(k);
    if (x->dtype == DataType::kFloat) return unsupportedType(ctx, x->dtype);
    bool from_strings = x->dtype == DataType::kString;
    keys = from_strings ? stringTensor(classes) : int64Tensor(ids);
    values = from_strings ? int64Tensor(ids) : stringTensor(classes);
  } else {
    ASSIGN_OR_RETURN(keys, labelList(ctx, "keys"));
    ASSIGN_OR_RETURN(values, labelList(ctx, "values"));
  }
  if (keys.dtype != x->dtype) {
    return invalidArgument("{}: the keys are {}, the input is {}", ctx.op, dataTypeName(keys.dtype),
                           dataTypeName(x->dtype));
  }
  if (!isOneOf(values.dtype, kLabelTypes)) return unsupportedType(ctx, values.dtype);
  if (keys.numElements() != values.numElements()) {
    return invalidArgument("{}: {} keys for {} values", ctx.op, keys.numElements(),
                           values.numElements());
  }
  ASSIGN_OR_RETURN(HostTensor fallback, labelDefault(ctx, values.dtype));
  std::map<std::string, int64_t> table;
  for (int64_t k = 0; k < keys.numElements(); ++k) table.emplace(keyOf(keys, k), k);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(values.dtype, x->dims));
  size_t bytes = elementBytes(values.dtype);
  for (int64_t i = 0; i < x->numElements(); ++i) {
    auto it = table.find(keyOf(*x, i));
    if (it == table.end()) {
      copyElement(out, i, fallback, 0, bytes);
    } else {
      copyElement(out, i, values, it->second, bytes);
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> treeEnsembleKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  if (!isOneOf(x->dtype, {DataType::kFloat, DataType::kDouble, DataType::kFloat16})) {
    return unsupportedType(ctx, x->dtype);
  }
  if (x->rank() != 2) {
    return invalidArgument("{}: X must be [N, F], got [{}]", ctx.op, fmt::join(x->dims, ","));
  }
  ASSIGN_OR_RETURN(Dims modes, intsAttr(ctx, "nodes_modes"));
  ASSIGN_OR_RETURN(Dims features, intsAttr(ctx, "nodes_featureids"));
  ASSIGN_OR_RETURN(Dims true_ids, intsAttr(ctx, "nodes_truenodeids"));
  ASSIGN_OR_RETURN(Dims false_ids, intsAttr(ctx, "nodes_falsenodeids"));
  ASSIGN_OR_RETURN(Dims true_leafs, intsAttr(ctx, "nodes_trueleafs"));
  ASSIGN_OR_RETURN(Dims false_leafs, intsAttr(ctx, "nodes_falseleafs"));
  ASSIGN_OR_RETURN(Dims missing, intsAttr(ctx, "nodes_missing_value_tracks_true"));
  ASSIGN_OR_RETURN(std::vector<double> splits, floatsAttr(ctx, "nodes_splits"));
  ASSIGN_OR_RETURN(std::vector<double> members, floatsAttr(ctx, "membership_values"));
  ASSIGN_OR_RETURN(Dims leaf_targets, intsAttr(ctx, "leaf_targetids"));
  ASSIGN_OR_RETURN(std::vector<double> leaf_weights, floatsAttr(ctx, "leaf_weights"));
  ASSIGN_OR_RETURN(Dims roots, intsAttr(ctx, "tree_roots"));
  int64_t n_targets = ctx.attrs.getInt("n_targets", -1);
  int64_t aggregate = ctx.attrs.getInt("aggregate_function", 1);
  int64_t post = ctx.attrs.getInt("post_transform", 0);
  const size_t count = modes.size();
  for (const Dims* d : {&features, &true_ids, &false_ids, &true_leafs, &false_leafs}) {
    if (d->size() != count) {
      return invalidArgument("{}: the nodes_* attributes differ in length", ctx.op);
    }
  }
  if (splits.size() != count || (!missing.empty() && missing.size() != count)) {
    return invalidArgument("{}: the nodes_* attributes differ in length", ctx.op);
  }
  if (leaf_targets.size() != leaf_weights.size()) {
    return invalidArgument("{}: {} leaf_targetids for {} leaf_weights", ctx.op, leaf_targets.size(),
                           leaf_weights.size());
  }
  if (n_targets < 1 || n_targets > (int64_t{1} << 31)) {
    return invalidArgument("{}: n_targets {} is not positive", ctx.op, n_targets);
  }
  if (aggregate < 0 || aggregate > 3 || post < 0 || post > 4) {
    return invalidArgument("{}: aggregate_function {} or post_transform {} is out of range", ctx.op,
                           aggregate, post);
  }
  const int64_t num_features = x->dims[1];
  std::vector<TreeNode> nodes(count);
  size_t member_at = 0;
  for (size_t i = 0; i < count; ++i) {
    TreeNode& n = nodes[i];
    n.mode = modes[i];
    n.feature = features[i];
    n.split = splits[i];
    n.missing_true = !missing.empty() && missing[i] != 0;
    if (n.mode < 0 || n.mode > 6) {
      return invalidArgument("{}: node {} has mode {}", ctx.op, i, n.mode);
    }
    if (n.feature < 0 || n.feature >= num_features) {
      return invalidArgument("{}: node {} reads feature {} of {}", ctx.op, i, n.feature,
                             num_features);
    }
    for (int side = 0; side < 2; ++side) {
      n.next[side] = side == 0 ? true_ids[i] : false_ids[i];
      n.leaf[side] = (side == 0 ? true_leafs[i] : false_leafs[i]) != 0;
      auto limit = static_cast<int64_t>(n.leaf[side] ? leaf_weights.size() : count);
      if (n.next[side] < 0 || n.next[side] >= limit) {
        return invalidArgument("{}: node {} branches to {} {} of {}", ctx.op, i,
                               n.leaf[side] ? "leaf" : "node", n.next[side], limit);
      }
    }
    if (n.mode == 6) {
      // Each set-membership node takes the next NaN-terminated run of membership_values.
      while (member_at < members.size() && !std::isnan(members[member_at])) {
        n.members.push_back(members[member_at++]);
      }
      if (member_at == members.size()) {
        return invalidArgument("{}: membership_values lacks the set of node {}", ctx.op, i);
      }
      ++member_at;
      std::sort(n.members.begin(), n.members.end());
    }
  }
  for (int64_t t : leaf_targets) {
    if (t < 0 || t >= n_targets) {
      return invalidArgument("{}: leaf target {} is outside [0, {})", ctx.op, t, n_targets);
    }
  }
  for (int64_t r : roots) {
    if (r < 0 || r >= static_cast<int64_t>(count)) {
      return invalidArgument("{}: tree root {} is not a node", ctx.op, r);
    }
  }
  const int64_t rows = x->dims[0];
  if (static_cast<double>(rows) * static_cast<double>(roots.size()) *
          static_cast<double>(count + 1) >
      static_cast<double>(kMaxTreeWork)) {
    return makeError(StatusCode::kResourceExhausted, "{}: more than {} tree node visits", ctx.op,
                     kMaxTreeWork);
  }
  ASSIGN_OR_RETURN(std::vector<double> xs, readFloats<double>(ctx, *x));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, {rows, n_targets}));
  static const char* const kPost[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
  std::vector<double> row(static_cast<size_t>(n_targets));
  std::vector<char> hit(static_cast<size_t>(n_targets));
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(row.begin(), row.end(), 0.0);
    std::fill(hit.begin(), hit.end(), 0);
    const double* features_of = xs.data() + r * num_features;
    for (int64_t root : roots) {
      int64_t at = root;
      // A path longer than the node count has a cycle.
      size_t steps = 0;
      int64_t leaf = -1;
      while (leaf < 0) {
        if (++steps > count) {
          return invalidArgument("{}: the tree at root {} has a cycle", ctx.op, root);
        }
        const TreeNode& n = nodes[static_cast<size_t>(at)];
        int side = branchTrue(n, features_of[n.feature]) ? 0 : 1;
        if (n.leaf[side]) {
          leaf = n.next[side];
        } else {
          at = n.next[side];
        }
      }
      auto t = static_cast<size_t>(leaf_targets[static_cast<size_t>(leaf)]);
      double w = leaf_weights[static_cast<size_t>(leaf)];
      if (aggregate <= 1) {
        row[t] += w;
      } else if (!hit[t]) {
        row[t] = w;
      } else {
        row[t] = aggregate == 2 ? std::min(row[t], w) : std::max(row[t], w);
      }
      hit[t] = 1;
    }
    if (aggregate == 0 && !roots.empty()) {
      for (double& v : row) v /= static_cast<double>(roots.size());
    }
    postTransform(kPost[post], row);
    RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t t = 0; t < n_targets; ++t) {
        store<T>(out, r * n_targets + t, static_cast<Compute<T>>(row[static_cast<size_t>(t)]));
      }
      return Status::ok();
    }));
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
