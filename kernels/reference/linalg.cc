// Linear algebra reference kernels: MatMul (numpy semantics: 1-D operands, broadcast batch dims)
// and Gemm (alpha, beta, transA, transB, optional unidirectionally broadcast C). Floats accumulate
// in float (float16/bfloat16 too, rounded once at the end), doubles in double, integers wrap.
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

template <typename T>
using Acc = std::conditional_t<kIsFloat<T>, Compute<T>, T>;

template <typename T>
Acc<T> accAdd(Acc<T> a, Acc<T> b) {
  if constexpr (kIsInt<T>) {
    return wrapAdd(a, b);
  } else {
    return a + b;
  }
}
template <typename T>
Acc<T> accMul(Acc<T> a, Acc<T> b) {
  if constexpr (kIsInt<T>) {
    return wrapMul(a, b);
  } else {
    return a * b;
  }
}

}  // namespace

StatusOr<Outputs> matMulKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* b, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkSameType(ctx, {a, b}));
  if (a->rank() == 0 || b->rank() == 0)
    return invalidArgument("MatMul: operands must not be scalars");
  Dims ad = a->dims, bd = b->dims;
  bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), 1);
  if (b_vec) bd.push_back(1);
  int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
  if (bd[bd.size() - 2] != k) {
    return invalidArgument("MatMul: inner dimensions differ ({} vs {})", k, bd[bd.size() - 2]);
  }
  Dims a_batch(ad.begin(), ad.end() - 2), b_batch(bd.begin(), bd.end() - 2);
  ASSIGN_OR_RETURN(Dims batch, broadcastShapes({&a_batch, &b_batch}));
  Dims dims = batch;
  if (!a_vec) dims.push_back(m);
  if (!b_vec) dims.push_back(n);
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(a->dtype, dims));
  if (out.numElements() == 0) return single(std::move(out));
  // Batch strides in units of matrices.
  std::vector<Dims> strides = {broadcastStrides(a_batch, batch), broadcastStrides(b_batch, batch)};
  RETURN_IF_ERROR(visitType(ctx, a->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, a->dtype);
    } else {
      int64_t a_mat = m * k, b_mat = k * n, o_mat = m * n;
      auto body = [&](int64_t bi, const int64_t* off) {
        int64_t abase = off[0] * a_mat, bbase = off[1] * b_mat, obase = bi * o_mat;
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            Acc<T> acc{};
            for (int64_t p = 0; p < k; ++p) {
              Acc<T> x = load<T>(*a, abase + i * k + p);
              Acc<T> y = load<T>(*b, bbase + p * n + j);
              acc = accAdd<T>(acc, accMul<T>(x, y));
            }
            store<T>(out, obase + i * n + j, acc);
          }
        }
      };
      if (batch.empty()) {
        int64_t zero[2] = {0, 0};
        body(0, zero);
      } else {
        forEachBroadcast(batch, strides, body);
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

StatusOr<Outputs> gemmKernel(const KernelContext& ctx) {
  ASSIGN_OR_RETURN(const HostTensor* a, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* b, requireInput(ctx, 1));
  const HostTensor* c = ctx.input(2);
  RETURN_IF_ERROR(checkSameType(ctx, {a, b}));
  if (c != nullptr && c->dtype != a->dtype) return invalidArgument("Gemm: C has a different type");
  if (a->rank() != 2 || b->rank() != 2) return invalidArgument("Gemm: A and B must be 2-D");
  bool ta = ctx.attrs.getInt("transA", 0) != 0;
  bool tb = ctx.attrs.getInt("transB", 0) != 0;
  float alpha = ctx.attrs.getFloat("alpha", 1.0f);
  float beta = ctx.attrs.getFloat("beta", 1.0f);
  int64_t m = ta ? a->dims[1] : a->dims[0];
  int64_t k = ta ? a->dims[0] : a->dims[1];
  int64_t kb = tb ? b->dims[1] : b->dims[0];
  int64_t n = tb ? b->dims[0] : b->dims[1];
  if (k != kb) return invalidArgument("Gemm: inner dimensions differ ({} vs {})", k, kb);
  Dims dims = {m, n};
  if (c != nullptr) {
    ASSIGN_OR_RETURN(Dims cd, broadcastShapes({&c->dims, &dims}));
    if (cd != dims) return invalidArgument("Gemm: C cannot be broadcast to [{}, {}]", m, n);
  }
  ASSIGN_OR_RETURN(HostTensor out, makeOutput(a->dtype, dims));
  Dims c_strides = c != nullptr ? broadcastStrides(c->dims, dims) : Dims{0, 0};
  RETURN_IF_ERROR(visitType(ctx, a->dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    if constexpr (!kIsNumeric<T>) {
      return unsupportedType(ctx, a->dtype);
    } else {
      Acc<T> al = convertNumber<Acc<T>>(alpha), be = convertNumber<Acc<T>>(beta);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          Acc<T> acc{};
          for (int64_t p = 0; p < k; ++p) {
            Acc<T> x = load<T>(*a, ta ? p * m + i : i * k + p);
            Acc<T> y = load<T>(*b, tb ? j * k + p : p * n + j);
            acc = accAdd<T>(acc, accMul<T>(x, y));
          }
          Acc<T> r = accMul<T>(al, acc);
          if (c != nullptr) {
            Acc<T> cv = load<T>(*c, i * c_strides[0] + j * c_strides[1]);
            r = accAdd<T>(r, accMul<T>(be, cv));
          }
          store<T>(out, i * n + j, r);
        }
      }
      return Status::ok();
    }
  }));
  return single(std::move(out));
}

}  // namespace onnxopt::kernels::ref
