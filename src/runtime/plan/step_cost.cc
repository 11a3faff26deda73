// The roofline cost of a plan step (step_cost.h). Products by family, from the planned dims:
//   matrix products   2 * |Y| * K              K: A's reduced dim (Gemm: transA decides)
//   convolutions      2 * |Y| * |W| / W[0]     each output element: C/group * kernel window MACs
//   transposed conv   2 * |X| * |W| / W[0]     each input element scattered over the window
//   attention         4 * |Y| * L              QK^T and PV over L keys (heads and dims in |Y|)
//   LSTM / GRU / RNN  2 * steps * batch * (|W| + |R|)   the gate products of every step
#include "onnxopt/runtime/step_cost.h"

#include <set>
#include <string_view>

namespace onnxopt::runtime {
namespace {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const PlannedValue* at(const Plan& plan, const std::vector<int>& ids, size_t i) {
  if (i >= ids.size() || ids[i] < 0) return nullptr;
  const PlannedValue& v = plan.values[static_cast<size_t>(ids[i])];
  return v.dynamic || !v.rank_known ? nullptr : &v;
}

bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool isMatrixProduct(std::string_view op) {
  return op == "MatMul" || op == "Gemm" || op == "FusedMatMul" || op == "MatMulInteger" ||
         op == "QLinearMatMul" || op.starts_with("MatMulBias");
}

bool isConvolution(std::string_view op) {
  return op == "Conv" || op == "FusedConv" || op == "ConvInteger" || op == "QLinearConv" ||
         op.starts_with("NhwcConv");
}

/// The keys each query attends to: K's sequence dim (4-D [B, H, L, D] or 3-D [B, L, E]), the
/// present cache's when there is one; the packed forms attend over their own sequence.
int64_t attendedKeys(const Plan& plan, const PlannedNode& n, const PlannedValue& y) {
  if (n.op == "SeqFirstPackedAttention") return y.dims.empty() ? 0 : y.dims[0];
  if (endsWith(n.op, "PackedAttention")) return y.dims.size() < 2 ? 0 : y.dims[1];
  if (const PlannedValue* present = at(plan, n.outputs, 1); present && present->dims.size() == 4) {
    return present->dims[2];
  }
  const PlannedValue* k = at(plan, n.inputs, 1);
  if (k == nullptr || k->dims.size() < 3) return 0;
  return k->dims.size() == 4 ? k->dims[2] : k->dims[1];
}

double productFlops(const Plan& plan, const PlannedNode& n, DataType* dtype) {
  const PlannedValue* a = at(plan, n.inputs, 0);
  const PlannedValue* y = at(plan, n.outputs, 0);
  if (a == nullptr || y == nullptr || a->dims.empty()) return 0;
  *dtype = a->dtype;
  auto ydims = static_cast<double>(product(y->dims));
  if (isMatrixProduct(n.op)) {
    bool trans_a = n.op == "Gemm" && n.attrs.getInt("transA", 0) != 0;
    int64_t k = trans_a || a->dims.size() == 1 ? a->dims.front() : a->dims.back();
    return 2 * ydims * static_cast<double>(k);
  }
  bool transposed = n.op == "ConvTranspose";
  if (isConvolution(n.op) || transposed) {
    const PlannedValue* w = at(plan, n.inputs, n.op == "QLinearConv" ? 3 : 1);
    if (w == nullptr || w->dims.empty() || w->dims[0] == 0) return 0;
    double window = static_cast<double>(product(w->dims) / w->dims[0]);
    return 2 * (transposed ? static_cast<double>(product(a->dims)) : ydims) * window;
  }
  if (endsWith(n.op, "Attention"))
    return 4 * ydims * static_cast<double>(attendedKeys(plan, n, *y));
  if (n.op == "LSTM" || n.op == "GRU" || n.op == "RNN") {
    const PlannedValue* w = at(plan, n.inputs, 1);
    const PlannedValue* r = at(plan, n.inputs, 2);
    if (w == nullptr || r == nullptr || a->dims.size() != 3) return 0;
    bool batch_first = n.attrs.getInt("layout", 0) != 0;
    double steps = static_cast<double>(a->dims[batch_first ? 1 : 0]);
    double batch = static_cast<double>(a->dims[batch_first ? 0 : 1]);
    return 2 * steps * batch * static_cast<double>(product(w->dims) + product(r->dims));
  }
  *dtype = DataType::kUndefined;
  return 0;
}

}  // namespace

StepCost stepCost(const Plan& plan, const Step& step) {
  StepCost cost;
  if (step.kind != Step::Kind::kNode) {
    cost.bytes = plan.values[static_cast<size_t>(step.src)].bytes;
    return cost;
  }
  const PlannedNode& n = plan.nodes[static_cast<size_t>(step.node)];
  std::set<int> seen;
  for (const std::vector<int>* ids : {&n.inputs, &n.outputs}) {
    for (size_t i = 0; i < ids->size(); ++i) {
      if ((*ids)[i] < 0 || !seen.insert((*ids)[i]).second) continue;
      const PlannedValue* v = at(plan, *ids, i);
      if (v == nullptr) return StepCost{};  // shaped at run time: nothing to say
      cost.bytes += v->bytes;
    }
  }
  cost.flops = productFlops(plan, n, &cost.dtype);
  return cost;
}

}  // namespace onnxopt::runtime
