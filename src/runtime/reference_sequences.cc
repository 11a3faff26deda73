// Sequence ops in the reference interpreter: SequenceConstruct/Insert/Erase/At/Length and friends,
// SplitToSequence and ConcatFromSequence.
#include "reference_interpreter.h"

namespace onnxopt::runtime::detail {

StatusOr<size_t> Interpreter::position(const ir::Node& n, size_t input, int64_t fallback,
                                       size_t size, int64_t extra) {
  int64_t pos = fallback;
  if (input < n.numInputs() && n.input(input) != nullptr) {
    auto t = tensorOf(n, input);
    if (!t.isOk()) return t.status();
    auto p = readIndexScalar(**t, "position");
    if (!p.isOk()) return p.status();
    pos = *p;
  }
  int64_t s = static_cast<int64_t>(size);
  if (pos < -s || pos >= s + extra) {
    return invalidArgument("position {} is out of range for a sequence of {}", pos, s);
  }
  return static_cast<size_t>(pos < 0 ? pos + s : pos);
}

Status Interpreter::runSequenceOp(const ir::Node& n) {
  const std::string& op = n.opType();
  if (op == "SequenceEmpty") {
    DataType type =
        static_cast<DataType>(intAttr(n, "dtype", static_cast<int64_t>(DataType::kFloat)));
    setOutput(n, 0, RtValue::ofSequence({}, type));
    return Status::ok();
  }
  if (op == "SequenceConstruct") {
    std::vector<kernels::HostTensor> ts;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      auto t = tensorOf(n, i);
      if (!t.isOk()) return t.status();
      if (!ts.empty() && (*t)->dtype != ts[0].dtype) {
        return invalidArgument("inputs are {} and {}", dataTypeName(ts[0].dtype),
                               dataTypeName((*t)->dtype));
      }
      ts.push_back(**t);
    }
    if (ts.empty()) return invalidArgument("SequenceConstruct takes at least one tensor");
    DataType type = ts[0].dtype;
    setOutput(n, 0, RtValue::ofSequence(std::move(ts), type));
    return Status::ok();
  }
  if (op == "Optional") {
    if (n.numInputs() > 0 && n.input(0) != nullptr) {
      auto v = valueOf(n, 0);
      if (!v.isOk()) return v.status();
      setOutput(n, 0, **v);
    } else {
      setOutput(n, 0, RtValue::none());
    }
    return Status::ok();
  }
  if (op == "OptionalHasElement") {
    bool has = false;
    if (n.numInputs() > 0 && n.input(0) != nullptr) {
      auto v = valueOf(n, 0);
      if (!v.isOk()) return v.status();
      has = (*v)->kind != RtValue::Kind::kNone;
    }
    setOutput(n, 0, RtValue::ofTensor(scalarTensor(DataType::kBool, has ? 1 : 0)));
    return Status::ok();
  }
  if (op == "OptionalGetElement") {
    auto v = valueOf(n, 0);
    if (!v.isOk()) return v.status();
    if ((*v)->kind == RtValue::Kind::kNone) return invalidArgument("the optional is empty");
    setOutput(n, 0, **v);
    return Status::ok();
  }
  if (op == "SplitToSequence") return splitToSequence(n);
  if (op == "ConcatFromSequence") return concatFromSequence(n);
  auto seq = sequenceOf(n, 0);
  if (!seq.isOk()) return seq.status();
  const RtValue& s = **seq;
  if (op == "SequenceLength") {
    setOutput(
        n, 0,
        RtValue::ofTensor(scalarTensor(DataType::kInt64, static_cast<int64_t>(s.sequence.size()))));
    return Status::ok();
  }
  if (op == "SequenceAt") {
    auto pos = position(n, 1, 0, s.sequence.size(), 0);
    if (!pos.isOk()) return pos.status();
    setOutput(n, 0, RtValue::ofTensor(s.sequence[*pos]));
    return Status::ok();
  }
  if (op == "SequenceErase") {
    auto pos = position(n, 1, -1, s.sequence.size(), 0);
    if (!pos.isOk()) return pos.status();
    RtValue out = s;
    out.sequence.erase(out.sequence.begin() + static_cast<std::ptrdiff_t>(*pos));
    setOutput(n, 0, std::move(out));
    return Status::ok();
  }
  if (op == "SequenceInsert") {
    auto t = tensorOf(n, 1);
    if (!t.isOk()) return t.status();
    if (s.seq_type != DataType::kUndefined && (*t)->dtype != s.seq_type) {
      return invalidArgument("inserting {} into a sequence of {}", dataTypeName((*t)->dtype),
                             dataTypeName(s.seq_type));
    }
    auto pos = position(n, 2, static_cast<int64_t>(s.sequence.size()), s.sequence.size(), 1);
    if (!pos.isOk()) return pos.status();
    RtValue out = s;
    out.seq_type = (*t)->dtype;
    out.sequence.insert(out.sequence.begin() + static_cast<std::ptrdiff_t>(*pos), **t);
    setOutput(n, 0, std::move(out));
    return Status::ok();
  }
  return makeError(StatusCode::kUnimplemented, "no reference implementation of {}", op);
}

Status Interpreter::splitToSequence(const ir::Node& n) {
  auto in = tensorOf(n, 0);
  if (!in.isOk()) return in.status();
  const kernels::HostTensor& t = **in;
  auto axis = axisIn(intAttr(n, "axis", 0), t.rank(), "axis");
  if (!axis.isOk()) return axis.status();
  int64_t dim = t.dims[*axis];
  std::vector<int64_t> sizes;
  bool keep = intAttr(n, "keepdims", 1) != 0;
  bool split_given = n.numInputs() > 1 && n.input(1) != nullptr;
  if (!split_given) {
    sizes.assign(static_cast<size_t>(dim), 1);
  } else {
    auto sp = tensorOf(n, 1);
    if (!sp.isOk()) return sp.status();
    const kernels::HostTensor& st = **sp;
    if (st.dtype != DataType::kInt64 && st.dtype != DataType::kInt32) {
      return invalidArgument("split must be int32 or int64, got {}", dataTypeName(st.dtype));
    }
    auto at = [&](int64_t i) {
      return st.dtype == DataType::kInt64 ? st.get<int64_t>(i) : int64_t{st.get<int32_t>(i)};
    };
    if (st.rank() == 0) {
      int64_t chunk = at(0);
      if (chunk <= 0) return invalidArgument("split size {} is not positive", chunk);
      for (int64_t b = 0; b < dim; b += chunk) sizes.push_back(std::min(chunk, dim - b));
    } else if (st.rank() == 1) {
      int64_t sum = 0;
      for (int64_t i = 0; i < st.numElements(); ++i) {
        if (at(i) < 0) return invalidArgument("split size {} is negative", at(i));
        sizes.push_back(at(i));
        sum += at(i);
      }
      if (sum != dim) {
        return invalidArgument("split sizes sum to {}, but the axis has {}", sum, dim);
      }
    } else {
      return invalidArgument("split must be a scalar or 1-D, got rank {}", st.rank());
    }
  }
  if (static_cast<int64_t>(sizes.size()) > kMaxParts) {
    return makeError(StatusCode::kResourceExhausted, "more than {} parts", kMaxParts);
  }
  std::vector<kernels::HostTensor> parts;
  int64_t begin = 0;
  for (int64_t sz : sizes) {
    auto p = sliceAxis(t, *axis, begin, sz, !split_given && !keep);
    if (!p.isOk()) return p.status();
    parts.push_back(std::move(p).value());
    begin += sz;
  }
  setOutput(n, 0, RtValue::ofSequence(std::move(parts), t.dtype));
  return Status::ok();
}

Status Interpreter::concatFromSequence(const ir::Node& n) {
  auto seq = sequenceOf(n, 0);
  if (!seq.isOk()) return seq.status();
  const auto& parts = (*seq)->sequence;
  if (parts.empty()) return invalidArgument("the sequence is empty");
  int64_t axis = intAttr(n, "axis", 0);
  if (intAttr(n, "new_axis", 0) == 1) {
    auto a = axisIn(axis, parts[0].rank() + 1, "axis");
    if (!a.isOk()) return a.status();
    auto out = stackAxis(parts, *a, parts[0].dtype, parts[0].dims);
    if (!out.isOk()) return out.status();
    setOutput(n, 0, RtValue::ofTensor(std::move(out).value()));
    return Status::ok();
  }
  std::vector<const kernels::HostTensor*> ins;
  for (const auto& p : parts) ins.push_back(&p);
  kernels::KernelAttrs attrs;
  attrs.ints["axis"] = axis;
  auto out = kernels::runReferenceKernel("Concat", opset_, ins, attrs, 1);
  if (!out.isOk()) return out.status();
  setOutput(n, 0, RtValue::ofTensor(std::move((*out)[0])));
  return Status::ok();
}

}  // namespace onnxopt::runtime::detail
