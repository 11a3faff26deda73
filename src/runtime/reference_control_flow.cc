// Control flow in the reference interpreter: If, Loop, Scan (8 and 9+) and SequenceMap run their
// bodies as graphs, within the run's iteration and memory budget.
#include "reference_interpreter.h"

namespace onnxopt::runtime::detail {

Status Interpreter::runIf(const ir::Node& n) {
  auto c = tensorOf(n, 0);
  if (!c.isOk()) return c.status();
  if ((*c)->bytes.empty()) {
    return makeError(StatusCode::kInvalidArgument, "{}: no condition value", describeNode(n));
  }
  bool cond = (*c)->bytes[0] != 0;
  const ir::Graph* branch = bodyOf(n, cond ? "then_branch" : "else_branch");
  if (branch == nullptr) {
    return makeError(StatusCode::kInvalidArgument, "{}: missing branch", describeNode(n));
  }
  RETURN_IF_ERROR(runGraph(*branch));
  for (size_t i = 0; i < n.numOutputs() && i < branch->numOutputs(); ++i) {
    setOutput(n, i, values_.at(branch->output(i)));
  }
  return Status::ok();
}

Status Interpreter::reserveLoop(const ir::Node& n, const ir::Graph& body, uint64_t trips,
                                size_t first_scan) {
  uint64_t each = saturatingAdd(1, certainIterations(body, opset_));
  RETURN_IF_ERROR(budget_.reserveIterations(n, saturatingMul(trips, each)));
  uint64_t bytes = 0;
  for (size_t k = first_scan; k < body.numOutputs(); ++k) {
    bytes = saturatingAdd(bytes, saturatingMul(trips, staticBytes(*body.output(k))));
  }
  return budget_.reserveMemory(n, "its scan outputs", bytes);
}

Status Interpreter::reserveSlices(const ir::Node& n, uint64_t more,
                                  const std::vector<std::vector<kernels::HostTensor>>& gathered) {
  uint64_t bytes = 0;
  for (const auto& slices : gathered) {
    if (!slices.empty()) bytes = saturatingAdd(bytes, saturatingMul(more, hostBytes(slices[0])));
  }
  return budget_.reserveMemory(n, "its scan outputs", bytes);
}

StatusOr<std::vector<RtValue>> Interpreter::runBody(const ir::Node& n, const ir::Graph& body,
                                                    std::vector<RtValue> args) {
  const auto& ins = body.inputs();
  if (ins.size() != args.size()) {
    return invalidArgument("{}: the body takes {} inputs, but {} are given", describeNode(n),
                           ins.size(), args.size());
  }
  for (size_t i = 0; i < ins.size(); ++i) store(ins[i], std::move(args[i]));
  Status st = runGraph(body);
  if (!st.isOk()) return st.withContext(describeNode(n));
  std::vector<RtValue> outs;
  for (size_t i = 0; i < body.numOutputs(); ++i) {
    auto it = values_.find(body.output(i));
    if (it == values_.end()) {
      return invalidArgument("{}: body output '{}' was not computed", describeNode(n),
                             body.output(i)->name());
    }
    outs.push_back(it->second);
  }
  return outs;
}

Status Interpreter::runLoop(const ir::Node& n) {
  const ir::Graph* body = bodyOf(n, "body");
  if (body == nullptr) return invalidArgument("{}: no body graph", describeNode(n));
  if (n.numInputs() < 2) return invalidArgument("{}: Loop takes M and cond", describeNode(n));
  size_t num_carried = n.numInputs() - 2;
  if (body->numOutputs() < num_carried + 1 || body->inputs().size() != num_carried + 2) {
    return invalidArgument("{}: the body has {} inputs and {} outputs for {} loop-carried values",
                           describeNode(n), body->inputs().size(), body->numOutputs(), num_carried);
  }
  size_t num_scan = body->numOutputs() - 1 - num_carried;
  if (n.numOutputs() > num_carried + num_scan) {
    return invalidArgument("{}: {} outputs, but the body makes {}", describeNode(n), n.numOutputs(),
                           num_carried + num_scan);
  }
  std::optional<int64_t> trip;
  if (n.input(0) != nullptr) {
    auto t = tensorOf(n, 0);
    if (!t.isOk()) return t.status();
    auto m = readIndexScalar(**t, "trip count M");
    if (!m.isOk()) return m.status().withContext(describeNode(n));
    trip = *m;
  }
  bool cond = true;
  if (n.input(1) != nullptr) {
    auto t = tensorOf(n, 1);
    if (!t.isOk()) return t.status();
    auto c = readBoolScalar(**t, "condition");
    if (!c.isOk()) return c.status().withContext(describeNode(n));
    cond = *c;
  }
  std::vector<RtValue> carried;
  for (size_t i = 0; i < num_carried; ++i) {
    auto v = valueOf(n, i + 2);
    if (!v.isOk()) return v.status();
    carried.push_back(**v);
  }
  std::vector<std::vector<kernels::HostTensor>> scans(num_scan);
  // A trip count that the condition cannot cut short is what the loop will run: checked first.
  const bool exact = trip && cond && loopNeverStopsEarly(*body);
  const uint64_t trips = exact ? static_cast<uint64_t>(std::max<int64_t>(*trip, 0)) : 0;
  if (exact) RETURN_IF_ERROR(reserveLoop(n, *body, trips, 1 + num_carried));
  for (int64_t iter = 0; cond && (!trip || iter < *trip); ++iter) {
    RETURN_IF_ERROR(budget_.iterate(n));
    std::vector<RtValue> args;
    args.push_back(RtValue::ofTensor(scalarTensor(DataType::kInt64, iter)));
    args.push_back(RtValue::ofTensor(scalarTensor(DataType::kBool, 1)));
    for (auto& v : carried) args.push_back(std::move(v));
    auto outs = runBody(n, *body, std::move(args));
    if (!outs.isOk()) return outs.status();
    if ((*outs)[0].kind != RtValue::Kind::kTensor) {
      return invalidArgument("{}: the body's condition output is not a tensor", describeNode(n));
    }
    auto c = readBoolScalar((*outs)[0].tensor, "the body's condition output");
    if (!c.isOk()) return c.status().withContext(describeNode(n));
    cond = *c;
    carried.assign(outs->begin() + 1, outs->begin() + 1 + static_cast<std::ptrdiff_t>(num_carried));
    for (size_t k = 0; k < num_scan; ++k) {
      RtValue& s = (*outs)[1 + num_carried + k];
      if (s.kind != RtValue::Kind::kTensor) {
        return invalidArgument("{}: scan output {} is {}, not a tensor", describeNode(n), k,
                               s.kindName());
      }
      gather(scans[k], std::move(s.tensor));
    }
    if (exact && iter == 0) RETURN_IF_ERROR(reserveSlices(n, trips - 1, scans));
  }
  for (size_t i = 0; i < num_carried; ++i) setOutput(n, i, std::move(carried[i]));
  for (size_t k = 0; k < num_scan; ++k) {
    auto [type, dims] = staticTensorType(body->output(1 + num_carried + k));
    auto stacked = stackAxis(scans[k], 0, type, dims);
    for (const kernels::HostTensor& t : scans[k]) budget_.release(hostBytes(t));
    if (!stacked.isOk()) {
      return stacked.status().withContext(fmt::format("{}: scan output {}", describeNode(n), k));
    }
    setOutput(n, num_carried + k, RtValue::ofTensor(std::move(stacked).value()));
  }
  return Status::ok();
}

Status Interpreter::runScan(const ir::Node& n) {
  auto st = scanOnce(n, 0, n.numInputs());
  if (!st.isOk()) return st.status();
  for (size_t i = 0; i < st->size(); ++i) setOutput(n, i, RtValue::ofTensor((*st)[i]));
  return Status::ok();
}

StatusOr<std::vector<kernels::HostTensor>> Interpreter::scanOnce(
    const ir::Node& n, size_t first, size_t end, const std::vector<kernels::HostTensor>* given) {
  const ir::Graph* body = bodyOf(n, "body");
  if (body == nullptr) return invalidArgument("{}: no body graph", describeNode(n));
  std::vector<kernels::HostTensor> ins;
  if (given != nullptr) {
    ins = *given;
  } else {
    for (size_t i = first; i < end; ++i) {
      auto t = tensorOf(n, i);
      if (!t.isOk()) return t.status();
      ins.push_back(**t);
    }
  }
  int64_t num_scan_in = intAttr(n, "num_scan_inputs", -1);
  if (num_scan_in < 1 || static_cast<size_t>(num_scan_in) > ins.size()) {
    return invalidArgument("{}: num_scan_inputs {} does not fit {} inputs", describeNode(n),
                           num_scan_in, ins.size());
  }
  size_t m = static_cast<size_t>(num_scan_in);
  size_t num_state = ins.size() - m;
  if (body->inputs().size() != ins.size() || body->numOutputs() < num_state) {
    return invalidArgument("{}: the body has {} inputs and {} outputs for {} inputs",
                           describeNode(n), body->inputs().size(), body->numOutputs(), ins.size());
  }
  size_t k_out = body->numOutputs() - num_state;
  bool batch8 = given != nullptr;  // opset 8: axes are fixed (0 once the batch is sliced)
  std::vector<int64_t> in_axes = batch8 ? std::vector<int64_t>{} : intsAttr(n, "scan_input_axes");
  std::vector<int64_t> in_dirs = intsAttr(n, batch8 ? "directions" : "scan_input_directions");
  std::vector<int64_t> out_axes = batch8 ? std::vector<int64_t>{} : intsAttr(n, "scan_output_axes");
  std::vector<int64_t> out_dirs =
      batch8 ? std::vector<int64_t>{} : intsAttr(n, "scan_output_directions");
  auto checkLen = [&](const std::vector<int64_t>& v, size_t want, const char* what) -> Status {
    if (!v.empty() && v.size() != want) {
      return invalidArgument("{}: {} has {} entries for {} values", describeNode(n), what, v.size(),
                             want);
    }
    return Status::ok();
  };
  RETURN_IF_ERROR(checkLen(in_axes, m, "scan_input_axes"));
  RETURN_IF_ERROR(checkLen(in_dirs, m, "scan_input_directions"));
  RETURN_IF_ERROR(checkLen(out_axes, k_out, "scan_output_axes"));
  RETURN_IF_ERROR(checkLen(out_dirs, k_out, "scan_output_directions"));
  int64_t len = -1;
  std::vector<size_t> axes(m);
  for (size_t j = 0; j < m; ++j) {
    const kernels::HostTensor& t = ins[num_state + j];
    auto axis = axisIn(in_axes.empty() ? 0 : in_axes[j], t.rank(), "scan input axis");
    if (!axis.isOk()) return axis.status().withContext(describeNode(n));
    axes[j] = *axis;
    int64_t l = t.dims[*axis];
    if (len >= 0 && l != len) {
      return invalidArgument("{}: scan inputs have lengths {} and {}", describeNode(n), len, l);
    }
    len = l;
  }
  RETURN_IF_ERROR(
      reserveLoop(n, *body, static_cast<uint64_t>(std::max<int64_t>(len, 0)), num_state));
  std::vector<kernels::HostTensor> state(ins.begin(),
                                         ins.begin() + static_cast<std::ptrdiff_t>(num_state));
  std::vector<std::vector<kernels::HostTensor>> slices(k_out);
  for (int64_t it = 0; it < len; ++it) {
    RETURN_IF_ERROR(budget_.iterate(n));
    std::vector<RtValue> args;
    for (auto& s : state) args.push_back(RtValue::ofTensor(std::move(s)));
    for (size_t j = 0; j < m; ++j) {
      int64_t idx = !in_dirs.empty() && in_dirs[j] == 1 ? len - 1 - it : it;
      auto slice = sliceAxis(ins[num_state + j], axes[j], idx, 1, true);
      if (!slice.isOk()) return slice.status().withContext(describeNode(n));
      args.push_back(RtValue::ofTensor(std::move(slice).value()));
    }
    auto outs = runBody(n, *body, std::move(args));
    if (!outs.isOk()) return outs.status();
    state.clear();
    for (size_t i = 0; i < outs->size(); ++i) {
      if ((*outs)[i].kind != RtValue::Kind::kTensor) {
        return invalidArgument("{}: body output {} is {}, not a tensor", describeNode(n), i,
                               (*outs)[i].kindName());
      }
      if (i < num_state) {
        state.push_back(std::move((*outs)[i].tensor));
      } else {
        gather(slices[i - num_state], std::move((*outs)[i].tensor));
      }
    }
    if (it == 0) RETURN_IF_ERROR(reserveSlices(n, static_cast<uint64_t>(len - 1), slices));
  }
  std::vector<kernels::HostTensor> result = std::move(state);
  for (size_t k = 0; k < k_out; ++k) {
    auto [type, dims] = staticTensorType(body->output(num_state + k));
    if (!slices[k].empty()) dims = slices[k][0].dims;
    if (!out_dirs.empty() && out_dirs[k] == 1) std::reverse(slices[k].begin(), slices[k].end());
    int64_t rank = static_cast<int64_t>(dims.size()) + 1;
    auto axis = axisIn(out_axes.empty() ? 0 : out_axes[k], rank, "scan output axis");
    if (!axis.isOk()) return axis.status().withContext(describeNode(n));
    auto stacked = stackAxis(slices[k], *axis, type, dims);
    for (const kernels::HostTensor& t : slices[k]) budget_.release(hostBytes(t));
    if (!stacked.isOk()) {
      return stacked.status().withContext(fmt::format("{}: scan output {}", describeNode(n), k));
    }
    result.push_back(std::move(stacked).value());
  }
  return result;
}

Status Interpreter::runScan8(const ir::Node& n) {
  if (n.numInputs() < 1) return invalidArgument("{}: no inputs", describeNode(n));
  std::vector<kernels::HostTensor> ins;
  for (size_t i = 1; i < n.numInputs(); ++i) {
    auto t = tensorOf(n, i);
    if (!t.isOk()) return t.status();
    ins.push_back(**t);
  }
  if (ins.empty() || ins[0].rank() < 1) {
    return invalidArgument("{}: inputs need a batch axis", describeNode(n));
  }
  int64_t batch = ins[0].dims[0];
  for (const auto& t : ins) {
    if (t.rank() < 1 || t.dims[0] != batch) {
      return invalidArgument("{}: inputs disagree on the batch size {}", describeNode(n), batch);
    }
  }
  int64_t num_scan_in = intAttr(n, "num_scan_inputs", -1);
  if (n.input(0) != nullptr) {
    auto lens = tensorOf(n, 0);
    if (!lens.isOk()) return lens.status();
    size_t first_scan = ins.size() - static_cast<size_t>(std::max<int64_t>(num_scan_in, 0));
    int64_t full =
        first_scan < ins.size() && ins[first_scan].rank() > 1 ? ins[first_scan].dims[1] : -1;
    if ((*lens)->dtype != DataType::kInt32 || (*lens)->numElements() != batch) {
      return invalidArgument("{}: sequence_lens must be int32[{}]", describeNode(n), batch);
    }
    for (int64_t b = 0; b < batch; ++b) {
      if ((*lens)->get<int32_t>(b) != full) {
        return makeError(StatusCode::kUnimplemented,
                         "{}: sequence_lens shorter than the scan length (the padding of the "
                         "outputs is left to the runtime)",
                         describeNode(n));
      }
    }
  }
  std::vector<std::vector<kernels::HostTensor>> per_batch;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<kernels::HostTensor> slice;
    for (const auto& t : ins) {
      auto s = sliceAxis(t, 0, b, 1, true);
      if (!s.isOk()) return s.status().withContext(describeNode(n));
      slice.push_back(std::move(s).value());
    }
    auto outs = scanOnce(n, 0, 0, &slice);
    if (!outs.isOk()) return outs.status();
    per_batch.push_back(std::move(outs).value());
  }
  size_t num_out = per_batch.empty() ? 0 : per_batch[0].size();
  if (batch == 0) return invalidArgument("{}: an empty batch", describeNode(n));
  for (size_t i = 0; i < num_out; ++i) {
    std::vector<kernels::HostTensor> parts;
    for (auto& p : per_batch) parts.push_back(std::move(p[i]));
    auto stacked = stackAxis(parts, 0, parts[0].dtype, parts[0].dims);
    if (!stacked.isOk()) return stacked.status().withContext(describeNode(n));
    setOutput(n, i, RtValue::ofTensor(std::move(stacked).value()));
  }
  return Status::ok();
}

Status Interpreter::runSequenceMap(const ir::Node& n) {
  const ir::Graph* body = bodyOf(n, "body");
  if (body == nullptr) return invalidArgument("{}: no body graph", describeNode(n));
  auto first = sequenceOf(n, 0);
  if (!first.isOk()) return first.status();
  size_t len = (*first)->sequence.size();
  std::vector<const RtValue*> ins;
  for (size_t i = 0; i < n.numInputs(); ++i) {
    auto v = valueOf(n, i);
    if (!v.isOk()) return v.status();
    if ((*v)->kind == RtValue::Kind::kSequence && (*v)->sequence.size() != len) {
      return invalidArgument("{}: sequence inputs have lengths {} and {}", describeNode(n), len,
                             (*v)->sequence.size());
    }
    if ((*v)->kind == RtValue::Kind::kNone) {
      return invalidArgument("{}: input {} is an empty optional", describeNode(n), i);
    }
    ins.push_back(*v);
  }
  std::vector<std::vector<kernels::HostTensor>> outs(body->numOutputs());
  RETURN_IF_ERROR(reserveLoop(n, *body, len, 0));
  for (size_t it = 0; it < len; ++it) {
    RETURN_IF_ERROR(budget_.iterate(n));
    std::vector<RtValue> args;
    for (const RtValue* v : ins) {
      args.push_back(v->kind == RtValue::Kind::kSequence ? RtValue::ofTensor(v->sequence[it]) : *v);
    }
    auto res = runBody(n, *body, std::move(args));
    if (!res.isOk()) return res.status();
    for (size_t k = 0; k < res->size(); ++k) {
      if ((*res)[k].kind != RtValue::Kind::kTensor) {
        return invalidArgument("{}: body output {} is {}, not a tensor", describeNode(n), k,
                               (*res)[k].kindName());
      }
      gather(outs[k], std::move((*res)[k].tensor));
    }
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    DataType type = staticTensorType(body->output(k)).first;
    if (!outs[k].empty()) type = outs[k][0].dtype;
    for (const kernels::HostTensor& t : outs[k]) budget_.release(hostBytes(t));
    setOutput(n, k, RtValue::ofSequence(std::move(outs[k]), type));
  }
  return Status::ok();
}

}  // namespace onnxopt::runtime::detail
