// Shape and data-movement reference kernels: Shape, Size, Identity, Reshape, Flatten, Squeeze,
// Unsqueeze, Transpose, Concat, Split, Slice, Gather, GatherElements, Expand, Tile, Pad. They move
// elements without interpreting them, so they work for every byte-sized type and for strings.
#include <algorithm>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

HostTensor int64Vector(const Dims& values) {
  HostTensor t = HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.set<int64_t>(static_cast<int64_t>(i), values[i]);
  return t;
}

/// Same data, new dims (the element count is unchanged).
HostTensor reshaped(const HostTensor& x, Dims dims) {
  HostTensor out = x;
  out.dims = std::move(dims);
  return out;
}

/// Axes from the attribute before `input_opset`, from input `index` after.
StatusOr<std::optional<Dims>> axesParam(const KernelContext& ctx, int64_t input_opset,
                                        size_t index) {
  if (ctx.opset < input_opset) return ctx.attrs.getInts("axes");
  const HostTensor* t = ctx.input(index);
  if (t == nullptr) return std::optional<Dims>();
  ASSIGN_OR_RETURN(Dims axes, readInts(*t, "axes"));
  return std::optional<Dims>(std::move(axes));
}

}  // namespace

StatusOr<Outputs> shapeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  int64_t rank = x->rank();
  auto clampIndex = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clampIndex(ctx.attrs.getInt("start", 0));
  int64_t end = clampIndex(ctx.attrs.getInt("end", rank));
  Dims dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x->dims[static_cast<size_t>(i)]);
  return single(int64Vector(dims));
}

StatusOr<Outputs> sizeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  HostTensor t = HostTensor::zeros(DataType::kInt64, {});
  t.set<int64_t>(0, x->numElements());
  return single(std::move(t));
}

StatusOr<Outputs> identityKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  return single(*x);
}

StatusOr<Outputs> reshapeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* shape_t, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(Dims shape, readInts(*shape_t, "shape"));
  if (shape_t->rank() != 1) return invalidArgument("Reshape: shape must be 1-D");
  bool allowzero = ctx.opset >= 14 && ctx.attrs.getInt("allowzero", 0) != 0;
  int64_t infer = -1;
  int64_t known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& d = shape[i];
    if (d == -1) {
      if (infer >= 0) return invalidArgument("Reshape: more than one -1 in shape");
      infer = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1) return invalidArgument("Reshape: invalid dimension {}", d);
    if (d == 0) {
      has_zero = true;
      if (!allowzero) {
        if (i >= x->dims.size()) return invalidArgument("Reshape: 0 copies a missing dimension");
        d = x->dims[i];
      }
    }
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d) {
      return invalidArgument("Reshape: shape overflows");
    }
    known *= d;
  }
  if (allowzero && has_zero && infer >= 0) {
    return invalidArgument("Reshape: allowzero with both 0 and -1 in shape");
  }
  int64_t n = x->numElements();
  if (infer >= 0) {
    if (known == 0 || n % known != 0) {
      return invalidArgument("Reshape: cannot infer -1 for {} elements", n);
    }
    shape[static_cast<size_t>(infer)] = n / known;
  } else if (known != n) {
    return invalidArgument("Reshape: shape has {} elements, input has {}", known, n);
  }
  return single(reshaped(*x, std::move(shape)));
}

StatusOr<Outputs> flattenKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  int64_t rank = x->rank();
  int64_t axis = ctx.attrs.getInt("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return invalidArgument("Flatten: axis out of range");
  const int64_t outer = dimProduct(x->dims, 0, axis);
  const int64_t inner = dimProduct(x->dims, axis, rank);
  return single(reshaped(*x, {outer, inner}));
}

StatusOr<Outputs> squeezeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(std::optional<Dims> axes, axesParam(ctx, 13, 1));
  std::vector<bool> drop(x->dims.size(), false);
  if (axes.has_value()) {
    ASSIGN_OR_RETURN(Dims norm, normalizeAxes(*axes, x->rank()));
    for (int64_t a : norm) {
      if (x->dims[static_cast<size_t>(a)] != 1) {
        return invalidArgument("Squeeze: dimension {} is not 1", a);
      }
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (size_t i = 0; i < drop.size(); ++i) drop[i] = x->dims[i] == 1;
  }
  Dims dims;
  for (size_t i = 0; i < drop.size(); ++i) {
    if (!drop[i]) dims.push_back(x->dims[i]);
  }
  return single(reshaped(*x, std::move(dims)));
}

StatusOr<Outputs> unsqueezeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(std::optional<Dims> axes, axesParam(ctx, 13, 1));
  if (!axes.has_value()) return invalidArgument("Unsqueeze: axes are required");
  int64_t out_rank = x->rank() + static_cast<int64_t>(axes->size());
  ASSIGN_OR_RETURN(Dims norm, normalizeAxes(*axes, out_rank));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : norm) inserted[static_cast<size_t>(a)] = true;
  Dims dims;
  size_t next = 0;
  for (size_t i = 0; i < inserted.size(); ++i) dims.push_back(inserted[i] ? 1 : x->dims[next++]);
  return single(reshaped(*x, std::move(dims)));
}

StatusOr<Outputs> transposeKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  int64_t rank = x->rank();
  Dims perm;
  if (auto p = ctx.attrs.getInts("perm")) {
    perm = *p;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return invalidArgument("Transpose: perm has {} entries for rank {}", perm.size(), rank);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return invalidArgument("Transpose: perm is not a permutation");
    }
    seen[static_cast<size_t>(p)] = true;
  }
  Dims in_strides = contiguousStrides(x->dims);
  Dims dims, strides;
  for (int64_t p : perm) {
    dims.push_back(x->dims[static_cast<size_t>(p)]);
    strides.push_back(in_strides[static_cast<size_t>(p)]);
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  size_t eb = elementBytes(x->dtype);
  forEachBroadcast(dims, {strides},
                   [&](int64_t i, const int64_t* off) { copyElement(out, i, *x, off[0], eb); });
  return single(std::move(out));
}

StatusOr<Outputs> concatKernel(const KernelContext& ctx) {
  std::vector<const HostTensor*> ins;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    ASSIGN_OR_RETURN(const HostTensor* t, requireInput(ctx, i));
    ins.push_back(t);
  }
  if (ins.empty()) return invalidArgument("Concat: needs at least one input");
  if (!ctx.attrs.has("axis")) return invalidArgument("Concat: axis is required");
  RETURN_IF_ERROR(checkSameType(ctx, ins));
  RETURN_IF_ERROR(checkMovable(ctx, ins[0]->dtype));
  int64_t rank = ins[0]->rank();
  if (rank == 0) return invalidArgument("Concat: inputs must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", 0), rank));
  Dims dims = ins[0]->dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (const HostTensor* t : ins) {
    if (t->rank() != rank) return invalidArgument("Concat: inputs have different ranks");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t->dims[static_cast<size_t>(d)] != dims[static_cast<size_t>(d)]) {
        return invalidArgument("Concat: inputs differ in dimension {}", d);
      }
    }
    dims[static_cast<size_t>(axis)] += t->dims[static_cast<size_t>(axis)];
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(ins[0]->dtype, dims));
  const int64_t outer = dimProduct(dims, 0, axis);
  const int64_t inner = dimProduct(dims, axis + 1, rank);
  size_t eb = elementBytes(out.dtype);
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* t : ins) {
      int64_t chunk = t->dims[static_cast<size_t>(axis)] * inner;
      copyElements(out, pos, *t, o * chunk, chunk, eb);
      pos += chunk;
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> splitKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (x->rank() == 0) return invalidArgument("Split: input must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", 0), x->rank()));
  int64_t dim = x->dims[static_cast<size_t>(axis)];
  int64_t n = static_cast<int64_t>(ctx.num_outputs);
  Dims sizes;
  std::optional<Dims> split;
  if (ctx.opset < 13) {
    split = ctx.attrs.getInts("split");
  } else if (const HostTensor* s = ctx.input(1)) {
    ASSIGN_OR_RETURN(split, readInts(*s, "split"));
  }
  if (split.has_value() && !split->empty()) {
    sizes = *split;
    if (static_cast<int64_t>(sizes.size()) != n) {
      return invalidArgument("Split: {} sizes for {} outputs", sizes.size(), n);
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0 || s > dim) return invalidArgument("Split: invalid size {}", s);
      total += s;
    }
    if (total != dim) return invalidArgument("Split: sizes sum to {}, dimension is {}", total, dim);
  } else {
    if (ctx.opset >= 18 && ctx.attrs.has("num_outputs") &&
        ctx.attrs.getInt("num_outputs", 0) != n) {
      return invalidArgument("Split: num_outputs differs from the number of outputs");
    }
    if (dim % n == 0) {
      sizes.assign(static_cast<size_t>(n), dim / n);
    } else {
      if (ctx.opset < 18) return invalidArgument("Split: {} is not divisible by {}", dim, n);
      int64_t chunk = (dim + n - 1) / n;
      int64_t last = dim - chunk * (n - 1);
      if (last < 0) return invalidArgument("Split: cannot split {} into {} outputs", dim, n);
      sizes.assign(static_cast<size_t>(n), chunk);
      sizes.back() = last;
    }
  }
  const int64_t outer = dimProduct(x->dims, 0, axis);
  const int64_t inner = dimProduct(x->dims, axis + 1, x->rank());
  size_t eb = elementBytes(x->dtype);
  Outputs outs;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    Dims dims = x->dims;
    dims[static_cast<size_t>(axis)] = s;
    ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
    for (int64_t o = 0; o < outer; ++o) {
      copyElements(out, o * s * inner, *x, (o * dim + begin) * inner, s * inner, eb);
    }
    begin += s;
    outs.push_back(std::move(out));
  }
  return outs;
}

StatusOr<Outputs> sliceKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  Dims starts, ends, steps;
  std::optional<Dims> axes;
  if (ctx.opset < 10) {
    auto s = ctx.attrs.getInts("starts");
    auto e = ctx.attrs.getInts("ends");
    if (!s || !e) return invalidArgument("Slice: starts and ends are required");
    starts = *s;
    ends = *e;
    axes = ctx.attrs.getInts("axes");
  } else {
    ASSIGN_OR_RETURN(const HostTensor* s, requireInput(ctx, 1));
    ASSIGN_OR_RETURN(const HostTensor* e, requireInput(ctx, 2));
    ASSIGN_OR_RETURN(starts, readInts(*s, "starts"));
    ASSIGN_OR_RETURN(ends, readInts(*e, "ends"));
    if (const HostTensor* a = ctx.input(3)) {
      ASSIGN_OR_RETURN(axes, readInts(*a, "axes"));
    }
    if (const HostTensor* st = ctx.input(4)) {
      ASSIGN_OR_RETURN(steps, readInts(*st, "steps"));
    }
  }
  size_t k = starts.size();
  if (ends.size() != k) return invalidArgument("Slice: starts and ends differ in length");
  if (!axes.has_value()) {
    axes = Dims();
    for (size_t i = 0; i < k; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (axes->size() != k) return invalidArgument("Slice: axes and starts differ in length");
  if (steps.empty()) steps.assign(k, 1);
  if (steps.size() != k) return invalidArgument("Slice: steps and starts differ in length");
  ASSIGN_OR_RETURN(Dims norm_axes, normalizeAxes(*axes, x->rank()));
  size_t rank = x->dims.size();
  Dims start_of(rank, 0), step_of(rank, 1), dims = x->dims;
  for (size_t i = 0; i < k; ++i) {
    size_t a = static_cast<size_t>(norm_axes[i]);
    int64_t dim = x->dims[a];
    int64_t step = steps[i];
    if (step == 0) return invalidArgument("Slice: step is 0");
    int64_t start = starts[i];
    int64_t end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      uint64_t mag = static_cast<uint64_t>(step);
      count = end > start
                  ? static_cast<int64_t>((static_cast<uint64_t>(end - start) + mag - 1) / mag)
                  : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      uint64_t mag = 0 - static_cast<uint64_t>(step);
      count = start > end
                  ? static_cast<int64_t>((static_cast<uint64_t>(start - end) + mag - 1) / mag)
                  : 0;
    }
    start_of[a] = start;
    step_of[a] = step;
    dims[a] = count;
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  Dims in_strides = contiguousStrides(x->dims);
  Dims strides(rank);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] == 0) break;  // empty output: nothing is read
    base += start_of[d] * in_strides[d];
    strides[d] = step_of[d] * in_strides[d];
  }
  size_t eb = elementBytes(x->dtype);
  // Runs of consecutive elements: the trailing axes the slice takes whole at step 1, and the axis
  // before them if its step is 1, are one contiguous run in both tensors (a slice of a weight's
  // rows copies each row at once, not element by element).
  size_t outer = rank;
  int64_t run = 1;
  while (outer > 0 && step_of[outer - 1] == 1) {
    --outer;
    run *= dims[outer];
    if (dims[outer] != x->dims[outer]) break;  // a partial axis ends the run
  }
  if (run == 0) return single(std::move(out));
  Dims outer_dims(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(outer));
  Dims outer_strides(strides.begin(), strides.begin() + static_cast<std::ptrdiff_t>(outer));
  forEachBroadcast(outer_dims, {outer_strides}, [&](int64_t i, const int64_t* off) {
    copyElements(out, i * run, *x, base + off[0], run, eb);
  });
  return single(std::move(out));
}

StatusOr<Outputs> gatherKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* idx_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  if (x->rank() == 0) return invalidArgument("Gather: data must have rank >= 1");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", 0), x->rank()));
  ASSIGN_OR_RETURN(Dims indices, readInts(*idx_t, "indices"));
  int64_t dim = x->dims[static_cast<size_t>(axis)];
  for (int64_t& i : indices) {
    if (i < -dim || i >= dim)
      return invalidArgument("Gather: index {} out of range [-{}, {})", i, dim, dim);
    if (i < 0) i += dim;
  }
  Dims dims(x->dims.begin(), x->dims.begin() + axis);
  dims.insert(dims.end(), idx_t->dims.begin(), idx_t->dims.end());
  dims.insert(dims.end(), x->dims.begin() + axis + 1, x->dims.end());
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  const int64_t outer = dimProduct(x->dims, 0, axis);
  const int64_t inner = dimProduct(x->dims, axis + 1, x->rank());
  size_t eb = elementBytes(x->dtype);
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i : indices) {
      copyElements(out, pos, *x, (o * dim + i) * inner, inner, eb);
      pos += inner;
    }
  }
  return single(std::move(out));
}

StatusOr<Outputs> gatherElementsKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* idx_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  int64_t rank = x->rank();
  if (rank == 0) return invalidArgument("GatherElements: data must have rank >= 1");
  if (idx_t->rank() != rank) return invalidArgument("GatherElements: ranks differ");
  ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.attrs.getInt("axis", 0), rank));
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && idx_t->dims[static_cast<size_t>(d)] > x->dims[static_cast<size_t>(d)]) {
      return invalidArgument("GatherElements: indices exceed data in dimension {}", d);
    }
  }
  ASSIGN_OR_RETURN(Dims indices, readInts(*idx_t, "indices"));
  int64_t dim = x->dims[static_cast<size_t>(axis)];
  for (int64_t& i : indices) {
    if (i < -dim || i >= dim) return invalidArgument("GatherElements: index {} out of range", i);
    if (i < 0) i += dim;
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, idx_t->dims));
  Dims strides = contiguousStrides(x->dims);
  Dims walk = strides;
  walk[static_cast<size_t>(axis)] = 0;  // the axis coordinate comes from the index
  int64_t axis_stride = strides[static_cast<size_t>(axis)];
  size_t eb = elementBytes(x->dtype);
  forEachBroadcast(idx_t->dims, {walk}, [&](int64_t i, const int64_t* off) {
    copyElement(out, i, *x, off[0] + indices[static_cast<size_t>(i)] * axis_stride, eb);
  });
  return single(std::move(out));
}

StatusOr<Outputs> expandKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* shape_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  ASSIGN_OR_RETURN(Dims shape, readInts(*shape_t, "shape"));
  for (int64_t d : shape) {
    if (d < 0) return invalidArgument("Expand: negative dimension {}", d);
  }
  ASSIGN_OR_RETURN(Dims dims, broadcastShapes({&x->dims, &shape}));
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  size_t eb = elementBytes(x->dtype);
  mapBroadcast({x}, out.dims,
               [&](int64_t i, const int64_t* off) { copyElement(out, i, *x, off[0], eb); });
  return single(std::move(out));
}

StatusOr<Outputs> tileKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* rep_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  ASSIGN_OR_RETURN(Dims repeats, readInts(*rep_t, "repeats"));
  if (static_cast<int64_t>(repeats.size()) != x->rank()) {
    return invalidArgument("Tile: {} repeats for rank {}", repeats.size(), x->rank());
  }
  Dims dims = x->dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0) return invalidArgument("Tile: negative repeat {}", repeats[d]);
    if (repeats[d] != 0 && dims[d] > std::numeric_limits<int64_t>::max() / repeats[d]) {
      return makeError(StatusCode::kResourceExhausted, "Tile: output too large");
    }
    dims[d] *= repeats[d];
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  int64_t n = out.numElements();
  if (n == 0) return single(std::move(out));
  Dims in_strides = contiguousStrides(x->dims);
  size_t rank = dims.size();
  Dims counter(rank, 0);
  size_t eb = elementBytes(x->dtype);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (counter[d] % x->dims[d]) * in_strides[d];
    copyElement(out, i, *x, off, eb);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < dims[d]) break;
      counter[d] = 0;
    }
  }
  return single(std::move(out));
}

namespace {

/// The input coordinate that output coordinate `j` (relative to the kept input range [0, m)) reads
/// in a non-constant pad mode.
int64_t padSource(const std::string& mode, int64_t j, int64_t m) {
  if (j >= 0 && j < m) return j;
  if (mode == "edge") return j < 0 ? 0 : m - 1;
  if (mode == "wrap") return ((j % m) + m) % m;
  if (m == 1) return 0;  // reflect
  int64_t period = 2 * (m - 1);
  j = ((j % period) + period) % period;
  return j >= m ? period - j : j;
}

}  // namespace

StatusOr<Outputs> padKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  RETURN_IF_ERROR(checkMovable(ctx, x->dtype));
  int64_t rank = x->rank();
  std::string mode = ctx.attrs.getString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap") {
    return invalidArgument("Pad: unknown mode '{}'", mode);
  }
  if (mode == "wrap" && ctx.opset < 19) return invalidArgument("Pad: wrap mode needs opset 19");
  Dims pads;
  HostTensor value = HostTensor::zeros(x->dtype, {});
  if (ctx.opset < 11) {
    auto p = ctx.attrs.getInts("pads");
    if (!p) return invalidArgument("Pad: pads is required");
    pads = *p;
    float v = ctx.attrs.getFloat("value", 0.0f);
    if (x->dtype != DataType::kString) {
      RETURN_IF_ERROR(visitType(ctx, x->dtype, [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        store<T>(value, 0, convertNumber<Compute<T>>(v));
        return Status::ok();
      }));
    }
  } else {
    ASSIGN_OR_RETURN(const HostTensor* p, requireInput(ctx, 1));
    ASSIGN_OR_RETURN(pads, readInts(*p, "pads"));
    if (const HostTensor* v = ctx.input(2)) {
      if (v->dtype != x->dtype) return invalidArgument("Pad: constant_value has the wrong type");
      if (v->numElements() == 1) {
        value = *v;
        value.dims = {};
      } else if (v->numElements() != 0) {
        return invalidArgument("Pad: constant_value must be a scalar");
      }
    }
  }
  Dims axes;
  const HostTensor* axes_t = ctx.opset >= 18 ? ctx.input(3) : nullptr;
  if (axes_t != nullptr) {
    ASSIGN_OR_RETURN(Dims raw, readInts(*axes_t, "axes"));
    ASSIGN_OR_RETURN(axes, normalizeAxes(raw, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  size_t k = axes.size();
  if (pads.size() != 2 * k) return invalidArgument("Pad: {} pads for {} axes", pads.size(), k);
  Dims begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < k; ++i) {
    begin[static_cast<size_t>(axes[i])] = pads[i];
    end[static_cast<size_t>(axes[i])] = pads[i + k];
  }
  Dims dims(static_cast<size_t>(rank));
  std::vector<Dims> source(static_cast<size_t>(rank));  // per axis: input coordinate or -1
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    int64_t n = x->dims[d];
    int64_t pb = begin[d], pe = end[d];
    if (pb < -n || pe < -n || pb > (int64_t{1} << 40) || pe > (int64_t{1} << 40) ||
        n + pb + pe < 0) {
      return invalidArgument("Pad: invalid pads {}, {} for dimension {}", pb, pe, n);
    }
    dims[d] = n + pb + pe;
    int64_t lo = std::max<int64_t>(0, -pb);
    int64_t m = n - lo - std::max<int64_t>(0, -pe);
    if (mode != "constant" && m <= 0 && dims[d] > 0) {
      return invalidArgument("Pad: {} mode needs a non-empty input along axis {}", mode, d);
    }
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(x->dtype, dims));
  int64_t total = out.numElements();
  if (total == 0) return single(std::move(out));  // also bounds every dims[d] below
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    int64_t n = x->dims[d];
    int64_t lo = std::max<int64_t>(0, -begin[d]);
    int64_t m = n - lo - std::max<int64_t>(0, -end[d]);
    int64_t shift = std::max<int64_t>(0, begin[d]);
    Dims& src = source[d];
    src.resize(static_cast<size_t>(dims[d]));
    for (int64_t o = 0; o < dims[d]; ++o) {
      int64_t j = o - shift;
      if (j >= 0 && j < m) {
        src[static_cast<size_t>(o)] = lo + j;
      } else if (mode == "constant") {
        src[static_cast<size_t>(o)] = -1;
      } else {
        src[static_cast<size_t>(o)] = lo + padSource(mode, j, m);
      }
    }
  }
  Dims in_strides = contiguousStrides(x->dims);
  Dims counter(static_cast<size_t>(rank), 0);
  size_t eb = elementBytes(x->dtype);
  for (int64_t i = 0; i < total; ++i) {
    int64_t off = 0;
    bool pad = false;
    for (size_t d = 0; d < counter.size(); ++d) {
      int64_t s = source[d][static_cast<size_t>(counter[d])];
      if (s < 0) {
        pad = true;
        break;
      }
      off += s * in_strides[d];
    }
    if (pad) {
      copyElement(out, i, value, 0, eb);
    } else {
      copyElement(out, i, *x, off, eb);
    }
    for (size_t d = counter.size(); d-- > 0;) {
      if (++counter[d] < dims[d]) break;
      counter[d] = 0;
    }
  }
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
