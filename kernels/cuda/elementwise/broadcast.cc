// Host planning of multidirectional broadcasting for the CUDA elementwise kernels (broadcast.h).
#include "kernels/cuda/elementwise/broadcast.h"

#include <fmt/format.h>

#include <algorithm>

namespace onnxopt::kernels::cuda {

namespace {

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

}  // namespace

StatusOr<std::vector<int64_t>> broadcastDims(const std::vector<std::vector<int64_t>>& shapes,
                                             const std::string& op) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t d = s[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : " and ") + dimsText(t);
      return invalidArgument("{}: shapes {} do not broadcast (dim {} is {} and {})", op, all,
                             offset + i, o, d);
    }
  }
  return out;
}

/// Drops size-1 dims and merges neighbours every operand steps through as one.
void coalesceDims(BroadcastPlan& plan) {
  int rank = 0;
  for (int d = 0; d < plan.rank; ++d) {
    if (plan.dims[d] == 1) continue;
    bool merge = rank > 0;
    for (int k = 0; k < plan.operands && merge; ++k) {
      merge = plan.strides[k][rank - 1] == plan.strides[k][d] * plan.dims[d];
    }
    if (merge) {
      plan.dims[rank - 1] *= plan.dims[d];
      for (int k = 0; k < plan.operands; ++k) plan.strides[k][rank - 1] = plan.strides[k][d];
      continue;
    }
    plan.dims[rank] = plan.dims[d];
    for (int k = 0; k < plan.operands; ++k) plan.strides[k][rank] = plan.strides[k][d];
    ++rank;
  }
  for (int d = rank; d < plan.rank; ++d) {
    plan.dims[d] = 0;
    for (int k = 0; k < plan.operands; ++k) plan.strides[k][d] = 0;
  }
  plan.rank = rank;
}

/// Whether every index and offset of the plan fits in 31 bits.
bool fitsIndex32(const BroadcastPlan& plan) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (plan.count >= kLimit) return false;
  for (int k = 0; k < plan.operands; ++k) {
    int64_t reach = 0;  // the largest offset, |stride| * (dim - 1) summed
    for (int d = 0; d < plan.rank; ++d) {
      int64_t s = plan.strides[k][d] < 0 ? -plan.strides[k][d] : plan.strides[k][d];
      if (plan.dims[d] > 1 && s >= kLimit / plan.dims[d]) return false;
      reach += s * (plan.dims[d] - 1);
      if (reach >= kLimit || plan.strides[k][d] < 0) return false;
    }
  }
  return true;
}

StatusOr<BroadcastPlan> planBroadcast(const std::vector<ConstTensorView>& inputs,
                                      const ConstTensorView& output, const std::string& op,
                                      bool coalesce) {
  if (inputs.empty() || inputs.size() > static_cast<size_t>(kMaxOperands)) {
    return invalidArgument("{}: {} inputs; the elementwise kernels read 1 to {}", op, inputs.size(),
                           kMaxOperands);
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const ConstTensorView& in : inputs) {
    if (in.strides.size() != in.dims.size()) {
      return invalidArgument("{}: an input view has {} dims and {} strides", op, in.dims.size(),
                             in.strides.size());
    }
    shapes.push_back(in.dims);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, broadcastDims(shapes, op));
  if (dims != output.dims) {
    return invalidArgument("{}: the output is {}; the inputs broadcast to {}", op,
                           dimsText(output.dims), dimsText(dims));
  }
  if (!output.isContiguous()) return invalidArgument("{}: the output view is not contiguous", op);
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return makeError(StatusCode::kUnimplemented,
                     "{}: rank {}; the CUDA elementwise kernels index at most rank {}", op,
                     dims.size(), kMaxRank);
  }
  BroadcastPlan plan;
  plan.rank = static_cast<int>(dims.size());
  plan.operands = static_cast<int>(inputs.size());
  plan.count = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    plan.dims[i] = dims[i];
    plan.count *= dims[i];
  }
  plan.linear = true;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ConstTensorView& in = inputs[k];
    if (in.dims != dims || !in.isContiguous()) plan.linear = false;
    size_t offset = dims.size() - in.dims.size();
    for (size_t i = 0; i < in.dims.size(); ++i) {
      plan.strides[k][offset + i] = in.dims[i] == 1 ? 0 : in.strides[i];
    }
  }
  if (coalesce) coalesceDims(plan);
  plan.index32 = fitsIndex32(plan);
  return plan;
}

Support broadcastSupport(const std::vector<ConstTensorView>& inputs, const ConstTensorView& output,
                         const std::string& op) {
  StatusOr<BroadcastPlan> plan = planBroadcast(inputs, output, op);
  return plan.isOk() ? Support::yes() : Support::no(plan.status().message());
}

}  // namespace onnxopt::kernels::cuda
