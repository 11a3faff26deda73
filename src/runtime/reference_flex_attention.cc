// FlexAttention (ai.onnx.preview 1) with score_mod / prob_mod, composed from reference kernels
// (reference_interpreter.h says how).
#include "reference_interpreter.h"

namespace onnxopt::runtime::detail {

StatusOr<kernels::HostTensor> Interpreter::flexCall(
    const ir::Node& n, const std::string& op, int64_t opset,
    const std::vector<const kernels::HostTensor*>& ins, const kernels::KernelAttrs& attrs) {
  auto out = kernels::runReferenceKernel(op, opset, ins, attrs, 1);
  if (!out.isOk()) return out.status().withContext(describeNode(n));
  return std::move((*out)[0]);
}

StatusOr<kernels::HostTensor> Interpreter::flexReshape(const ir::Node& n,
                                                       const kernels::HostTensor& t,
                                                       const std::vector<int64_t>& dims) {
  kernels::HostTensor shape =
      kernels::HostTensor::zeros(DataType::kInt64, {static_cast<int64_t>(dims.size())});
  for (size_t i = 0; i < dims.size(); ++i) shape.set<int64_t>(static_cast<int64_t>(i), dims[i]);
  return flexCall(n, "Reshape", 21, {&t, &shape});
}

StatusOr<kernels::HostTensor> Interpreter::flexCast(const ir::Node& n, const kernels::HostTensor& t,
                                                    DataType to) {
  kernels::KernelAttrs attrs;
  attrs.ints["to"] = static_cast<int64_t>(to);
  return flexCall(n, "Cast", 21, {&t}, attrs);
}

StatusOr<kernels::HostTensor> Interpreter::flexModifier(const ir::Node& n, const char* attr,
                                                        kernels::HostTensor t) {
  const ir::Graph* g = bodyOf(n, attr);
  if (g == nullptr) return t;
  DataType type = t.dtype;
  std::vector<int64_t> dims = t.dims;
  std::vector<RtValue> args;
  args.push_back(RtValue::ofTensor(std::move(t)));
  ASSIGN_OR_RETURN(std::vector<RtValue> outs, runBody(n, *g, std::move(args)));
  if (outs.size() != 1 || outs[0].kind != RtValue::Kind::kTensor || outs[0].tensor.dtype != type ||
      outs[0].tensor.dims != dims) {
    return invalidArgument("{}: {} must give one {}[{}] tensor", describeNode(n), attr,
                           dataTypeName(type), fmt::join(dims, ","));
  }
  return std::move(outs[0].tensor);
}

Status Interpreter::runFlexAttention(const ir::Node& n) {
  if (n.numInputs() != 3 || n.numOutputs() != 1) {
    return invalidArgument("{}: FlexAttention takes Q, K, V and gives Y", describeNode(n));
  }
  std::vector<const kernels::HostTensor*> qkv;
  for (size_t i = 0; i < 3; ++i) {
    ASSIGN_OR_RETURN(const kernels::HostTensor* t, tensorOf(n, i));
    if (t->rank() != 4) return invalidArgument("{}: Q, K and V must be 4-D", describeNode(n));
    qkv.push_back(t);
  }
  const auto &qd = qkv[0]->dims, &kd = qkv[1]->dims, &vd = qkv[2]->dims;
  int64_t batch = qd[0], hq = qd[1], len = qd[2], e = qd[3], hkv = kd[1], s = kd[2];
  if (kd[0] != batch || vd[0] != batch || vd[1] != hkv || vd[2] != s || kd[3] != e || hkv < 1 ||
      hq % hkv != 0 || qkv[1]->dtype != qkv[0]->dtype || qkv[2]->dtype != qkv[0]->dtype) {
    return invalidArgument("{}: Q, K and V shapes or types do not match", describeNode(n));
  }
  int64_t group = hq / hkv, ev = vd[3];
  DataType in_type = qkv[0]->dtype;
  auto compute = static_cast<DataType>(intAttr(
      n, "softmax_precision",
      static_cast<int64_t>(in_type == DataType::kDouble ? DataType::kDouble : DataType::kFloat)));
  if (compute != DataType::kFloat && compute != DataType::kDouble &&
      compute != DataType::kFloat16 && compute != DataType::kBfloat16) {
    return invalidArgument("{}: softmax_precision must be a float type", describeNode(n));
  }
  const ir::Attribute* scale_attr = n.findAttribute("scale");
  double scale = scale_attr != nullptr ? scale_attr->f : 1.0 / std::sqrt(static_cast<double>(e));

  ASSIGN_OR_RETURN(kernels::HostTensor q, flexCast(n, *qkv[0], compute));
  ASSIGN_OR_RETURN(kernels::HostTensor k, flexCast(n, *qkv[1], compute));
  ASSIGN_OR_RETURN(kernels::HostTensor v, flexCast(n, *qkv[2], compute));
  ASSIGN_OR_RETURN(q, flexReshape(n, q, {batch, hkv, group, len, e}));
  ASSIGN_OR_RETURN(k, flexReshape(n, k, {batch, hkv, 1, s, e}));
  ASSIGN_OR_RETURN(v, flexReshape(n, v, {batch, hkv, 1, s, ev}));
  kernels::KernelAttrs perm;
  perm.int_lists["perm"] = {0, 1, 2, 4, 3};
  ASSIGN_OR_RETURN(kernels::HostTensor kt, flexCall(n, "Transpose", 21, {&k}, perm));
  ASSIGN_OR_RETURN(kernels::HostTensor scores, flexCall(n, "MatMul", 13, {&q, &kt}));
  kernels::HostTensor scale_t = kernels::HostTensor::zeros(DataType::kDouble, {});
  scale_t.set<double>(0, scale);
  ASSIGN_OR_RETURN(scale_t, flexCast(n, scale_t, compute));
  ASSIGN_OR_RETURN(scores, flexCall(n, "Mul", 14, {&scores, &scale_t}));
  ASSIGN_OR_RETURN(scores, flexReshape(n, scores, {batch, hq, len, s}));
  ASSIGN_OR_RETURN(scores, flexModifier(n, "score_mod", std::move(scores)));
  kernels::KernelAttrs last_axis;
  last_axis.ints["axis"] = -1;
  ASSIGN_OR_RETURN(kernels::HostTensor probs, flexCall(n, "Softmax", 13, {&scores}, last_axis));
  ASSIGN_OR_RETURN(probs, flexModifier(n, "prob_mod", std::move(probs)));
  ASSIGN_OR_RETURN(probs, flexReshape(n, probs, {batch, hkv, group, len, s}));
  ASSIGN_OR_RETURN(kernels::HostTensor y, flexCall(n, "MatMul", 13, {&probs, &v}));
  ASSIGN_OR_RETURN(y, flexReshape(n, y, {batch, hq, len, ev}));
  ASSIGN_OR_RETURN(y, flexCast(n, y, in_type));
  setOutput(n, 0, RtValue::ofTensor(std::move(y)));
  return Status::ok();
}

}  // namespace onnxopt::runtime::detail
