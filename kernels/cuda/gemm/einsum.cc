// Host half of the Einsum lowering (einsum.h): the equation parsed the way the reference kernel
// parses it (letters, '...' right-aligned and broadcast, the implicit output: the ellipsis dims,
// then the labels used once in character order), the labels classified and laid out, and the
// launches: strided copies, one cuBLASLt GEMM (matmul.h) or a row sum.
#include "kernels/cuda/gemm/einsum.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "kernels/cuda/device.h"
#include "kernels/cuda/gemm/einsum_device.h"
#include "kernels/cuda/gemm/matmul.h"

namespace onnxopt::kernels::cuda {

namespace {

constexpr int kEllipsisLabel = 52;  ///< + j: the j-th broadcast ellipsis dim
constexpr size_t kAlign = 256;

bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

int letterLabel(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -1;
}

/// One term's labels in order, -1 where the ellipsis stands.
StatusOr<std::vector<int>> parseTerm(const std::string& text) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '.') {
      if (ellipsis || text.compare(i, 3, "...") != 0) {
        return invalidArgument("Einsum: bad ellipsis in '{}'", text);
      }
      ellipsis = true;
      labels.push_back(-1);
      i += 2;
      continue;
    }
    int label = letterLabel(text[i]);
    if (label < 0) return invalidArgument("Einsum: bad character '{}' in the equation", text[i]);
    labels.push_back(label);
  }
  return labels;
}

/// A strided walk: `dims` (label extents, in the target's order) read through `strides` (element
/// strides of the source; 0 where it broadcasts).
struct Walk {
  std::vector<int64_t> dims, strides;

  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  /// Whether the walk reads the source in its own contiguous order (no copy needed).
  bool identity() const {
    std::vector<int64_t> c = contiguousStrides(dims);
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] != 1 && strides[i] != c[i]) return false;
    }
    return true;
  }
};

/// The lowering of one node.
struct EinsumPlan {
  DataType dtype = DataType::kFloat;
  std::vector<int64_t> out_dims;
  bool direct = false;           ///< the direct kernel, not the GEMM lowering
  EinsumDirectArgs direct_args;  ///< its arguments (inputs and output set at launch)
  bool one_operand = false;
  bool sums = false;  ///< one operand: some label is summed
  int64_t batch = 1, m = 1, n = 1, k = 1;
  Walk a, b;  ///< two operands: A as [batch, M, K], B as [batch, K, N]; one: A as [out, summed]
  Walk out;   ///< the product [batch, M, N] read in the output's order
  size_t a_bytes = 0, b_bytes = 0, c_bytes = 0;  ///< workspace for the copies that are needed
  size_t gemm_bytes = 0;
};

size_t aligned(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

/// An Einsum equation read against its operands: each operand's dims as labels (the ellipsis
/// right-aligned), every label's extent, and the output's labels.
struct EinsumLabels {
  std::vector<std::vector<int>> dim_labels;
  std::map<int, int64_t> extent;
  std::vector<int> out_labels;
  bool repeated = false;  ///< a label twice in one operand: a diagonal
};

/// The output's labels: the equation's right-hand side, or without one the ellipsis dims and then
/// the labels used once, in character order.
StatusOr<std::vector<int>> outputLabelsOf(const std::string& equation, size_t arrow,
                                          int64_t ell_rank, const std::map<int, int>& uses,
                                          const std::map<int, int64_t>& extent) {
  std::vector<int> out_labels;
  for (int64_t j = 0; j < ell_rank && arrow == std::string::npos; ++j) {
    out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
  }
  if (arrow == std::string::npos) {
    std::vector<int> once;
    for (const auto& [l, count] : uses) {
      if (count == 1) once.push_back(l);
    }
    // Character order: 'A'-'Z' (26..51) before 'a'-'z' (0..25).
    std::sort(once.begin(), once.end(), [](int x, int y) {
      auto key = [](int l) { return l >= 26 ? l - 26 : l + 26; };
      return key(x) < key(y);
    });
    out_labels.insert(out_labels.end(), once.begin(), once.end());
  } else {
    ASSIGN_OR_RETURN(std::vector<int> out, parseTerm(equation.substr(arrow + 2)));
    for (int l : out) {
      if (l < 0) {
        for (int64_t j = 0; j < ell_rank; ++j) {
          out_labels.push_back(kEllipsisLabel + static_cast<int>(j));
        }
        continue;
      }
      if (extent.count(l) == 0) return invalidArgument("Einsum: output label not in any input");
      if (std::count(out_labels.begin(), out_labels.end(), l) > 0) {
        return invalidArgument("Einsum: output label repeated");
      }
      out_labels.push_back(l);
    }
  }
  return out_labels;
}

StatusOr<EinsumLabels> labelsOf(const std::string& text, const std::vector<ConstTensorView>& xs) {
  std::string equation;
  for (char ch : text) {
    if (!std::isspace(static_cast<unsigned char>(ch))) equation.push_back(ch);
  }
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    ASSIGN_OR_RETURN(std::vector<int> t, parseTerm(lhs.substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != xs.size()) {
    return invalidArgument("Einsum: the equation has {} operands, {} inputs given", terms.size(),
                           xs.size());
  }
  // Each operand's dims as labels (the ellipsis right-aligned), every label's extent.
  std::vector<int64_t> ell_ranks;
  int64_t ell_rank = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    bool has_ellipsis = std::count(terms[i].begin(), terms[i].end(), -1) > 0;
    auto letters = static_cast<int64_t>(terms[i].size()) - (has_ellipsis ? 1 : 0);
    int64_t extra = static_cast<int64_t>(xs[i].dims.size()) - letters;
    if (extra < 0 || (extra > 0 && !has_ellipsis)) {
      return invalidArgument("Einsum: operand {} has rank {} for {} labels", i, xs[i].dims.size(),
                             letters);
    }
    ell_ranks.push_back(extra);
    ell_rank = std::max(ell_rank, extra);
  }
  std::map<int, int64_t> extent;
  std::map<int, int> uses;
  std::vector<std::vector<int>> dim_labels(xs.size());
  bool repeated = false;  // a label twice in one operand: a diagonal
  for (size_t i = 0; i < xs.size(); ++i) {
    for (int l : terms[i]) {
      if (l >= 0) {
        dim_labels[i].push_back(l);
        ++uses[l];
        continue;
      }
      for (int64_t j = 0; j < ell_ranks[i]; ++j) {
        dim_labels[i].push_back(kEllipsisLabel + static_cast<int>(ell_rank - ell_ranks[i] + j));
      }
    }
    for (size_t d = 0; d < dim_labels[i].size(); ++d) {
      int l = dim_labels[i][d];
      repeated = repeated || std::count(dim_labels[i].begin(), dim_labels[i].end(), l) > 1;
      int64_t size = xs[i].dims[d];
      auto [it, fresh] = extent.emplace(l, size);
      if (fresh || it->second == size) continue;
      if (l >= kEllipsisLabel && (size == 1 || it->second == 1)) {
        if (it->second == 1) it->second = size;
        continue;
      }
      return invalidArgument("Einsum: label extents differ ({} vs {})", it->second, size);
    }
  }
  EinsumLabels labels{std::move(dim_labels), std::move(extent), {}, repeated};
  ASSIGN_OR_RETURN(labels.out_labels,
                   outputLabelsOf(equation, arrow, ell_rank, uses, labels.extent));
  return labels;
}

/// The direct kernel's arguments: every label's extent, the output's first, and each operand's
/// stride per label (a repeated label adds up: the diagonal).
void planDirect(const std::vector<ConstTensorView>& xs, const EinsumLabels& labels_of,
                EinsumPlan& p) {
  const auto& dim_labels = labels_of.dim_labels;
  const auto& extent = labels_of.extent;
  const auto& out_labels = labels_of.out_labels;
  std::vector<int> labels = out_labels;
  for (const auto& [l, size] : extent) {
    if (std::count(labels.begin(), labels.end(), l) == 0) labels.push_back(l);
  }
  EinsumDirectArgs& d = p.direct_args;
  p.direct = true;
  d.dtype = p.dtype;
  d.operands = static_cast<int>(xs.size());
  d.out_rank = static_cast<int>(out_labels.size());
  d.sum_rank = static_cast<int>(labels.size() - out_labels.size());
  d.out_count = d.sum_count = 1;
  for (size_t j = 0; j < labels.size(); ++j) {
    d.dims[j] = extent.at(labels[j]);
    (static_cast<int>(j) < d.out_rank ? d.out_count : d.sum_count) *= d.dims[j];
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    std::vector<int64_t> strides = contiguousStrides(xs[i].dims);
    for (size_t dim = 0; dim < dim_labels[i].size(); ++dim) {
      int l = dim_labels[i][dim];
      if (xs[i].dims[dim] == 1 && extent.at(l) != 1) continue;  // broadcast
      auto j = std::find(labels.begin(), labels.end(), l) - labels.begin();
      d.strides[i][j] += strides[dim];  // a repeated label adds up: the diagonal
    }
  }
}

/// The GEMM lowering of one or two float operands: the copies that bring each operand (and the
/// product) into GEMM order, and the GEMM's sizes.
void planGemm(const std::vector<ConstTensorView>& xs, const EinsumLabels& labels_of,
              EinsumPlan& p) {
  const auto& dim_labels = labels_of.dim_labels;
  const auto& extent = labels_of.extent;
  const auto& out_labels = labels_of.out_labels;
  // Operand i's element stride for label l: 0 where it lacks l or broadcasts it (size 1).
  auto strideOf = [&](size_t i, int l) -> int64_t {
    auto it = std::find(dim_labels[i].begin(), dim_labels[i].end(), l);
    if (it == dim_labels[i].end()) return 0;
    auto d = static_cast<size_t>(it - dim_labels[i].begin());
    if (xs[i].dims[d] == 1 && extent.at(l) != 1) return 0;
    return contiguousStrides(xs[i].dims)[d];
  };
  auto walkOf = [&](size_t i, const std::vector<int>& labels) {
    Walk w;
    for (int l : labels) {
      w.dims.push_back(extent.at(l));
      w.strides.push_back(strideOf(i, l));
    }
    return w;
  };
  auto product = [&](const std::vector<int>& labels) {
    int64_t n = 1;
    for (int l : labels) n *= extent.at(l);
    return n;
  };
  auto has = [&](size_t i, int l) {
    return std::find(dim_labels[i].begin(), dim_labels[i].end(), l) != dim_labels[i].end();
  };
  auto kept = [&](int l) {
    return std::find(out_labels.begin(), out_labels.end(), l) != out_labels.end();
  };
  size_t bytes = static_cast<size_t>(dataTypeBits(p.dtype) / 8);

  if (xs.size() == 1) {
    p.one_operand = true;
    std::vector<int> summed;
    for (int l : dim_labels[0]) {
      if (!kept(l)) summed.push_back(l);
    }
    std::vector<int> order = out_labels;
    order.insert(order.end(), summed.begin(), summed.end());
    p.a = walkOf(0, order);
    p.m = product(out_labels);
    p.k = product(summed);
    p.sums = !summed.empty();
    if (p.sums && !p.a.identity()) p.a_bytes = aligned(static_cast<size_t>(p.a.count()) * bytes);
    return;
  }

  // Two operands: batch (both, kept), M (A's own kept), N (B's own kept) in the output's order;
  // K (summed) in order of appearance.
  std::vector<int> batch, m, n, k;
  for (int l : out_labels) {
    bool in_a = has(0, l), in_b = has(1, l);
    (in_a && in_b ? batch : in_a ? m : n).push_back(l);
  }
  for (size_t i = 0; i < 2; ++i) {
    for (int l : dim_labels[i]) {
      if (!kept(l) && std::count(k.begin(), k.end(), l) == 0) k.push_back(l);
    }
  }
  auto join = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  p.a = walkOf(0, join(batch, m, k));
  p.b = walkOf(1, join(batch, k, n));
  p.batch = product(batch);
  p.m = product(m);
  p.n = product(n);
  p.k = product(k);
  // The product [batch, M, N] read in the output's order.
  std::vector<int> c_labels = join(batch, m, n);
  std::vector<int64_t> c_dims;
  for (int l : c_labels) c_dims.push_back(extent.at(l));
  std::vector<int64_t> c_strides = contiguousStrides(c_dims);
  for (int l : out_labels) {
    auto pos =
        static_cast<size_t>(std::find(c_labels.begin(), c_labels.end(), l) - c_labels.begin());
    p.out.dims.push_back(extent.at(l));
    p.out.strides.push_back(c_strides[pos]);
  }
  if (!p.a.identity()) p.a_bytes = aligned(static_cast<size_t>(p.a.count()) * bytes);
  if (!p.b.identity()) p.b_bytes = aligned(static_cast<size_t>(p.b.count()) * bytes);
  if (!p.out.identity()) p.c_bytes = aligned(static_cast<size_t>(p.batch * p.m * p.n) * bytes);
  p.gemm_bytes = workspaceBytes(MatMulArgs{});
}

StatusOr<EinsumPlan> planOf(const EinsumArgs& args) {
  const auto& xs = args.inputs;
  if (xs.empty()) return invalidArgument("Einsum: no inputs");
  if (xs.size() > static_cast<size_t>(kEinsumDirectMaxOperands)) {
    return makeError(StatusCode::kUnimplemented, "Einsum: {} operands; the CUDA kernel takes {}",
                     xs.size(), kEinsumDirectMaxOperands);
  }
  EinsumPlan p;
  p.dtype = xs[0].dtype;
  if (!einsumDirectTypeExists(p.dtype)) {
    return makeError(StatusCode::kUnimplemented, "Einsum: no CUDA kernel for {}",
                     dataTypeName(p.dtype));
  }
  for (const ConstTensorView& x : xs) {
    if (x.dtype != p.dtype) return invalidArgument("Einsum: the inputs must share one type");
  }
  ASSIGN_OR_RETURN(EinsumLabels labels, labelsOf(args.equation, xs));
  const auto& extent = labels.extent;
  const auto& out_labels = labels.out_labels;
  for (int l : out_labels) p.out_dims.push_back(extent.at(l));
  if (extent.size() > static_cast<size_t>(kEinsumDirectMaxLabels)) {
    return makeError(StatusCode::kUnimplemented,
                     "Einsum: {} distinct labels; the CUDA kernel takes at most {}", extent.size(),
                     kEinsumDirectMaxLabels);
  }
  // The GEMM lowering takes one or two float operands without diagonals; the rest (double and
  // integers, diagonals, three or more operands) runs on the direct kernel.
  if (!isFloatType(p.dtype) || xs.size() > 2 || labels.repeated ||
      extent.size() > static_cast<size_t>(kEinsumMaxRank)) {
    planDirect(xs, labels, p);
    return p;
  }
  planGemm(xs, labels, p);
  return p;
}

Status stridedCopy(const Walk& w, DataType dtype, const void* in, void* out, CudaStream stream) {
  StridedCopyArgs c;
  c.element_bytes = dataTypeBits(dtype) / 8;
  c.rank = static_cast<int>(w.dims.size());
  for (size_t d = 0; d < w.dims.size(); ++d) {
    c.dims[d] = w.dims[d];
    c.in_strides[d] = w.strides[d];
  }
  c.count = w.count();
  c.in = in;
  c.out = out;
  ONNXOPT_CUDA_CHECK(launchStridedCopy(c, streamOf(stream)), "Einsum");
  return Status::ok();
}

}  // namespace

template <>
StatusOr<EinsumArgs> argsFromCall<EinsumArgs>(const CudaKernelCall& call) {
  if (call.inputs.empty()) return invalidArgument("Einsum: no inputs");
  if (call.outputs.size() != 1) {
    return invalidArgument("Einsum: {} outputs; the op has 1", call.outputs.size());
  }
  const KernelAttrs& attrs = attrsOf(call);
  if (!attrs.has("equation")) return invalidArgument("Einsum: the equation attribute is required");
  EinsumArgs args;
  args.op = call.op;
  args.equation = attrs.getString("equation", "");
  args.inputs = call.inputs;
  args.y = call.outputs[0];
  args.workspace = call.workspace;
  args.workspace_bytes = call.workspace_bytes;
  return args;
}

Support canImplement(const EinsumArgs& args) {
  StatusOr<EinsumPlan> p = planOf(args);
  if (!p.isOk()) return Support::no(p.status().message());
  if (args.y.dtype != p->dtype || args.y.dims != p->out_dims) {
    return Support::no(fmt::format("Einsum: the output is {} [{}]; the equation gives {} [{}]",
                                   dataTypeName(args.y.dtype), fmt::join(args.y.dims, ", "),
                                   dataTypeName(p->dtype), fmt::join(p->out_dims, ", ")));
  }
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const std::string what = fmt::format("input {}", i);
    if (Support s = requireDevice(args.op, args.inputs[i], what.c_str()); !s) return s;
    if (!args.inputs[i].isContiguous()) {
      return Support::no(fmt::format("Einsum: the CUDA lowering reads a contiguous {}", what));
    }
  }
  if (Support s = requireDevice(args.op, args.y, "output 0"); !s) return s;
  if (!args.y.isContiguous())
    return Support::no("Einsum: the CUDA lowering writes a contiguous output");
  return Support::yes();
}

size_t workspaceBytes(const EinsumArgs& args) {
  StatusOr<EinsumPlan> p = planOf(args);
  if (!p.isOk()) return 0;
  return p->a_bytes + p->b_bytes + p->c_bytes + p->gemm_bytes;
}

Status launch(const EinsumArgs& args, CudaDeviceContext& ctx) {
  if (Support s = canImplement(args); !s) return refused(s);
  const CudaStream stream = ctx.stream();
  ASSIGN_OR_RETURN(EinsumPlan p, planOf(args));
  size_t copies = p.a_bytes + p.b_bytes + p.c_bytes;
  if (copies > 0 && (args.workspace == nullptr || args.workspace_bytes < copies)) {
    return invalidArgument("Einsum: {} bytes of workspace; its copies need {}",
                           args.workspace_bytes, copies);
  }
  if (args.y.numElements() == 0) return Status::ok();
  if (p.direct) {
    EinsumDirectArgs d = p.direct_args;
    for (size_t i = 0; i < args.inputs.size(); ++i) d.inputs[i] = args.inputs[i].data;
    d.out = args.y.data;
    ONNXOPT_CUDA_CHECK(launchEinsumDirect(d, streamOf(stream)), args.op);
    return Status::ok();
  }
  char* ws = static_cast<char*>(args.workspace);
  const void* a = args.inputs[0].data;
  if (p.a_bytes > 0) {
    RETURN_IF_ERROR(stridedCopy(p.a, p.dtype, a, ws, stream));
    a = ws;
  }
  if (p.one_operand) {
    // A permutation is one copy into the output; a sum reads [kept, summed] rows.
    if (!p.sums) return stridedCopy(p.a, p.dtype, a, args.y.data, stream);
    RowSumArgs r{p.dtype, p.m, p.k, a, args.y.data};
    ONNXOPT_CUDA_CHECK(launchRowSum(r, streamOf(stream)), args.op);
    return Status::ok();
  }
  const void* b = args.inputs[1].data;
  if (p.b_bytes > 0) {
    RETURN_IF_ERROR(stridedCopy(p.b, p.dtype, b, ws + p.a_bytes, stream));
    b = ws + p.a_bytes;
  }
  void* c = p.c_bytes > 0 ? static_cast<void*>(ws + p.a_bytes + p.b_bytes) : args.y.data;
  std::vector<int64_t> a_dims = {p.batch, p.m, p.k}, b_dims = {p.batch, p.k, p.n},
                       c_dims = {p.batch, p.m, p.n};
  MatMulArgs mm;
  mm.op = args.op;
  mm.a = ConstTensorView(p.dtype, a_dims, contiguousStrides(a_dims), a, MemoryKind::kDevice);
  mm.b = ConstTensorView(p.dtype, b_dims, contiguousStrides(b_dims), b, MemoryKind::kDevice);
  mm.y = TensorView(p.dtype, c_dims, contiguousStrides(c_dims), c, MemoryKind::kDevice);
  if (args.workspace != nullptr && args.workspace_bytes > copies) {
    mm.workspace = ws + copies;
    mm.workspace_bytes = args.workspace_bytes - copies;
  }
  RETURN_IF_ERROR(launch(mm, ctx));
  if (p.c_bytes > 0) RETURN_IF_ERROR(stridedCopy(p.out, p.dtype, c, args.y.data, stream));
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
