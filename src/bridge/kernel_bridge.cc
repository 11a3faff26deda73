#include "onnxopt/bridge/kernel_bridge.h"

#include "onnxopt/ir/constants.h"

namespace onnxopt::bridge {

kernels::HostTensor toHost(const ir::Tensor& tensor) {
  kernels::HostTensor h;
  h.dtype = tensor.dtype();
  h.dims = tensor.dims();
  h.bytes.assign(tensor.bytes());
  h.strings = tensor.strings();
  return h;
}

ir::Tensor fromHost(kernels::HostTensor&& tensor) {
  ir::Tensor t(tensor.dtype, std::move(tensor.dims));
  if (tensor.dtype == DataType::kString) {
    t.mutableStrings() = std::move(tensor.strings);
  } else {
    t.setBytes(std::move(tensor.bytes));
  }
  return t;
}

kernels::KernelAttrs toKernelAttrs(const ir::Node& node) {
  using Kind = ir::Attribute::Kind;
  kernels::KernelAttrs attrs;
  for (const ir::Attribute& a : node.attributes()) {
    switch (a.kind) {
      case Kind::kInt:
        attrs.ints[a.name] = a.i;
        break;
      case Kind::kFloat:
        attrs.floats[a.name] = a.f;
        break;
      case Kind::kString:
        attrs.strings[a.name] = a.s;
        break;
      case Kind::kInts:
        attrs.int_lists[a.name] = a.ints;
        break;
      case Kind::kFloats:
        attrs.float_lists[a.name] = a.floats;
        break;
      case Kind::kStrings:
        attrs.string_lists[a.name] = a.strings;
        break;
      case Kind::kTensor:
        if (!a.tensors.empty()) attrs.tensors[a.name] = toHost(a.tensors[0]);
        break;
      default:
        break;
    }
  }
  return attrs;
}

namespace {

/// A value's element type: an initializer's or Constant's own, else the declared one.
DataType elemTypeOf(const ir::Value* v) {
  if (v == nullptr) return DataType::kUndefined;
  if (const ir::Tensor* t = v->initializer()) return t->dtype();
  const ir::Type& type = v->type();
  if (type.isTensor() && type.elem_type != DataType::kUndefined) return type.elem_type;
  if (const ir::Node* p = v->producer(); p != nullptr && p->opType() == "Constant") {
    if (auto t = ir::constantNodeTensor(*p)) return t->dtype();
  }
  return DataType::kUndefined;
}

}  // namespace

kernels::OpQuery opQuery(const ir::Node& node, int64_t opset) {
  kernels::OpQuery q;
  q.domain = node.domain();
  q.op = node.opType();
  q.opset = opset;
  for (const ir::Value* v : node.inputs()) q.inputs.push_back(elemTypeOf(v));
  for (const ir::Value* v : node.outputs()) {
    q.outputs.push_back(v != nullptr && v->type().isTensor() ? v->type().elem_type
                                                             : DataType::kUndefined);
  }
  return q;
}

}  // namespace onnxopt::bridge
