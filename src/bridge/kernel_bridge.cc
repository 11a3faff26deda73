#include "onnxopt/bridge/kernel_bridge.h"

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
      case Kind::kTensor:
        if (!a.tensors.empty()) attrs.tensors[a.name] = toHost(a.tensors[0]);
        break;
      default:
        break;
    }
  }
  return attrs;
}

}  // namespace onnxopt::bridge
