// Host half of MatMulInteger and QLinearMatMul (quant_matmul.h): parsing, the checks, MatMul's
// shape rules, the launch.
#include "kernels/cuda/gemm/quant_matmul.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/cuda/device.h"
#include "kernels/cuda/gemm/quant_matmul_device.h"

namespace onnxopt::kernels::cuda {

namespace {

bool isByteType(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8;
}

bool isScaleType(DataType t) {
  return t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

bool present(const ConstTensorView& v) {
  return v.dtype != DataType::kUndefined;
}

std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

/// The product's sizes (1-D operands promoted), its broadcast batch dims with each operand's
/// element strides over them (0 on a broadcast dim), and Y's shape.
struct ProductShape {
  int64_t m = 1, n = 1, k = 1;
  std::vector<int64_t> batch, a_strides, b_strides, y_dims;
};

StatusOr<ProductShape> productShape(const std::string& op, const ConstTensorView& a,
                                    const ConstTensorView& b) {
  if (a.rank() < 1 || b.rank() < 1) return invalidArgument("{}: scalar operand", op);
  std::vector<int64_t> ad = a.dims, bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  ProductShape p;
  p.m = ad[ad.size() - 2];
  p.k = ad.back();
  p.n = bd.back();
  if (bd[bd.size() - 2] != p.k) {
    return invalidArgument("{}: A {} and B {} do not multiply", op, dimsText(a.dims),
                           dimsText(b.dims));
  }
  size_t ab = ad.size() - 2, bb = bd.size() - 2, rank = std::max(ab, bb);
  int64_t a_step = p.m * p.k, b_step = p.k * p.n;
  p.batch.assign(rank, 1);
  p.a_strides.assign(rank, 0);
  p.b_strides.assign(rank, 0);
  for (size_t r = rank; r-- > 0;) {  // right-aligned, innermost batch dim first
    size_t back = rank - 1 - r;
    int64_t da = back < ab ? ad[ab - 1 - back] : 1, db = back < bb ? bd[bb - 1 - back] : 1;
    if (da != db && da != 1 && db != 1) {
      return invalidArgument("{}: batch dims {} and {} do not broadcast", op, da, db);
    }
    p.batch[r] = std::max(da, db);
    if (da != 1) p.a_strides[r] = a_step;
    if (db != 1) p.b_strides[r] = b_step;
    a_step *= da;
    b_step *= db;
  }
  p.y_dims = p.batch;
  if (a.rank() >= 2) p.y_dims.push_back(p.m);
  if (b.rank() >= 2) p.y_dims.push_back(p.n);
  return p;
}

/// One element, or one per row of A (`len` = M, A 2-D or more) / column of B (N): the reference's
/// shapes (at most one dim other than 1).
bool perTensorOr(const ConstTensorView& v, int64_t len, bool allowed) {
  if (v.numElements() == 1) return true;
  return allowed && v.numElements() == len &&
         std::count_if(v.dims.begin(), v.dims.end(), [](int64_t d) { return d != 1; }) <= 1;
}

Support checkZeroPoints(const QuantMatMulArgs& args, const ProductShape& p) {
  if (present(args.a_zero) &&
      (args.a_zero.dtype != args.a.dtype || !perTensorOr(args.a_zero, p.m, args.a.rank() >= 2))) {
    return Support::no(
        fmt::format("{}: A's zero point must be A's type, one or {} elements", args.op, p.m));
  }
  if (present(args.b_zero) &&
      (args.b_zero.dtype != args.b.dtype || !perTensorOr(args.b_zero, p.n, args.b.rank() >= 2))) {
    return Support::no(
        fmt::format("{}: B's zero point must be B's type, one or {} elements", args.op, p.n));
  }
  return Support::yes();
}

Support checkRequantize(const QuantMatMulArgs& args, const ProductShape& p) {
  DataType st = args.a_scale.dtype;
  if (!isScaleType(st) || args.b_scale.dtype != st || args.y_scale.dtype != st) {
    return Support::no(
        fmt::format("{}: the scales must be one of float, float16, bfloat16", args.op));
  }
  if (!perTensorOr(args.a_scale, p.m, args.a.rank() >= 2) ||
      !perTensorOr(args.b_scale, p.n, args.b.rank() >= 2) || args.y_scale.numElements() != 1) {
    return Support::no(fmt::format(
        "{}: a_scale must hold 1 or {} elements, b_scale 1 or {}, y_scale 1", args.op, p.m, p.n));
  }
  if (!isByteType(args.y_zero.dtype) || args.y_zero.numElements() != 1 ||
      args.y.dtype != args.y_zero.dtype) {
    return Support::no(
        fmt::format("{}: Y and its zero point must be one int8 or uint8 type", args.op));
  }
  return Support::yes();
}

}  // namespace

template <>
StatusOr<QuantMatMulArgs> argsFromCall<QuantMatMulArgs>(const CudaKernelCall& call) {
  QuantMatMulArgs args;
  args.op = call.op;
  args.requantize = call.op == "QLinearMatMul";
  if (!args.requantize && call.op != "MatMulInteger") {
    return invalidArgument("{}: not a CUDA integer product", call.op);
  }
  RETURN_IF_ERROR(args.requantize ? checkArity(call, 8, 8, 1) : checkArity(call, 2, 4, 1));
  if (args.requantize) {
    args.a = call.inputs[0];
    args.a_scale = call.inputs[1];
    args.a_zero = call.inputs[2];
    args.b = call.inputs[3];
    args.b_scale = call.inputs[4];
    args.b_zero = call.inputs[5];
    args.y_scale = call.inputs[6];
    args.y_zero = call.inputs[7];
  } else {
    args.a = call.inputs[0];
    args.b = call.inputs[1];
    args.a_zero = inputOf(call, 2);
    args.b_zero = inputOf(call, 3);
  }
  args.y = call.outputs[0];
  return args;
}

Support canImplement(const QuantMatMulArgs& args) {
  const std::string& op = args.op;
  if (!isByteType(args.a.dtype) || !isByteType(args.b.dtype)) {
    return Support::no(fmt::format("{}: A and B must be int8 or uint8, not {} and {}", op,
                                   dataTypeName(args.a.dtype), dataTypeName(args.b.dtype)));
  }
  StatusOr<ProductShape> p = productShape(op, args.a, args.b);
  if (!p.isOk()) return Support::no(p.status().message());
  if (p->batch.size() > static_cast<size_t>(kQuantMatMulMaxBatch)) {
    return Support::no(fmt::format("{}: the CUDA kernel takes up to {} batch dims, not {}", op,
                                   kQuantMatMulMaxBatch, p->batch.size()));
  }
  if (Support s = checkZeroPoints(args, *p); !s) return s;
  if (args.requantize) {
    if (Support s = checkRequantize(args, *p); !s) return s;
  } else if (args.y.dtype != DataType::kInt32) {
    return Support::no(fmt::format("{}: Y must be int32, not {}", op, dataTypeName(args.y.dtype)));
  }
  for (const auto& [view, what] :
       {std::pair{&args.a, "A"}, std::pair{&args.b, "B"}, std::pair{&args.a_zero, "a_zero_point"},
        std::pair{&args.b_zero, "b_zero_point"}, std::pair{&args.a_scale, "a_scale"},
        std::pair{&args.b_scale, "b_scale"}, std::pair{&args.y_scale, "y_scale"},
        std::pair{&args.y_zero, "y_zero_point"}}) {
    if (Support s = requireDevice(op, *view, what); !s) return s;
    if (present(*view) && !view->isContiguous()) {
      return Support::no(fmt::format("{}: the CUDA kernel reads a contiguous {}", op, what));
    }
  }
  if (Support s = requireDevice(op, args.y, "Y"); !s) return s;
  if (!args.y.isContiguous()) {
    return Support::no(fmt::format("{}: the CUDA kernel writes a contiguous Y", op));
  }
  if (args.y.dims != p->y_dims) {
    return Support::no(fmt::format("{}: the output is {}; the product gives {}", op,
                                   dimsText(args.y.dims), dimsText(p->y_dims)));
  }
  return Support::yes();
}

size_t workspaceBytes(const QuantMatMulArgs&) {
  return 0;
}

Status launch(const QuantMatMulArgs& args, CudaStream stream) {
  if (Support s = canImplement(args); !s) return refused(s);
  ASSIGN_OR_RETURN(ProductShape p, productShape(args.op, args.a, args.b));
  QuantMatMulDeviceArgs d;
  d.requantize = args.requantize;
  d.a_signed = args.a.dtype == DataType::kInt8;
  d.b_signed = args.b.dtype == DataType::kInt8;
  d.y_signed = args.y.dtype == DataType::kInt8;
  d.m = p.m;
  d.n = p.n;
  d.k = p.k;
  d.batch_rank = static_cast<int>(p.batch.size());
  for (size_t i = 0; i < p.batch.size(); ++i) {
    d.batch_dims[i] = p.batch[i];
    d.a_batch_strides[i] = p.a_strides[i];
    d.b_batch_strides[i] = p.b_strides[i];
  }
  d.a = args.a.data;
  d.b = args.b.data;
  d.a_zero = present(args.a_zero) ? args.a_zero.data : nullptr;
  d.a_zero_count = present(args.a_zero) ? args.a_zero.numElements() : 1;
  d.b_zero = present(args.b_zero) ? args.b_zero.data : nullptr;
  d.b_zero_count = present(args.b_zero) ? args.b_zero.numElements() : 1;
  if (args.requantize) {
    d.scale_type = args.a_scale.dtype;
    d.a_scale = args.a_scale.data;
    d.a_scale_count = args.a_scale.numElements();
    d.b_scale = args.b_scale.data;
    d.b_scale_count = args.b_scale.numElements();
    d.y_scale = args.y_scale.data;
    d.y_zero = args.y_zero.data;
  }
  d.y = args.y.data;
  d.count = args.y.numElements();
  ONNXOPT_CUDA_CHECK(launchQuantMatMul(d, streamOf(stream)), args.op);
  return Status::ok();
}

}  // namespace onnxopt::kernels::cuda
