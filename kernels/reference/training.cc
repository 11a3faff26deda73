// The optimizers of ai.onnx.preview.training (opset 1): Adagrad, Momentum (standard and Nesterov)
// and Adam, each over n tensors at once. Inputs: R (learning rate, scalar), T (update count, int64
// scalar), then the n tensors of each kind in turn; outputs the n updated tensors of each state
// kind in turn. With G' = norm_coefficient * X + G:
//   Adagrad (X, G, H):    r = R / (1 + T * decay_factor); H' = H + G'^2;
//                         X' = X - r * G' / (sqrt(H') + epsilon)                  -> X', H'
//   Momentum (X, G, V):   b = T > 0 ? beta : 1; V' = alpha * V + b * G';
//                         X' = X - R * V' (standard) | X - R * (G' + alpha * V') (nesterov) -> X', V'
//   Adam (X, G, V, H):    V' = alpha * V + (1 - alpha) * G'; H' = beta * H + (1 - beta) * G'^2;
//                         r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
//                         X' = (1 - norm_coefficient_post) * (X - r * V' / (sqrt(H') + epsilon))
//                                                                              -> X', V', H'
// Computed in double, each output rounded once to its input's type (float or double).
#include <cmath>

#include "float_out.h"
#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

enum class Optimizer { kAdagrad, kMomentum, kAdam };

Status checkFloatOrDouble(const KernelContext& ctx, const HostTensor& t) {
  if (t.dtype != DataType::kFloat && t.dtype != DataType::kDouble) {
    return unsupportedType(ctx, t.dtype);
  }
  return Status::ok();
}

}  // namespace

StatusOr<Outputs> optimizerKernel(const KernelContext& ctx) {
  std::string name = ctx.op.substr(ctx.op.rfind('.') + 1);
  Optimizer kind = name == "Adagrad"    ? Optimizer::kAdagrad
                   : name == "Momentum" ? Optimizer::kMomentum
                                        : Optimizer::kAdam;
  // Tensors per optimized input: X, G and one (Adagrad: H; Momentum: V) or two (Adam: V, H).
  size_t kinds = kind == Optimizer::kAdam ? 4 : 3;
  ASSIGN_OR_RETURN(const HostTensor* r_t, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* t_t, requireInput(ctx, 1));
  RETURN_IF_ERROR(checkFloatOrDouble(ctx, *r_t));
  if (r_t->numElements() != 1) return invalidArgument("{}: R must be a scalar", name);
  if (t_t->dtype != DataType::kInt64) return unsupportedType(ctx, t_t->dtype);
  if (t_t->numElements() != 1) return invalidArgument("{}: T must be a scalar", name);
  ASSIGN_OR_RETURN(std::vector<double> rv, readFloats<double>(ctx, *r_t));
  double r = rv[0];
  auto t = static_cast<double>(t_t->get<int64_t>(0));
  size_t rest = ctx.numInputs() - 2;
  if (ctx.numInputs() < 2 + kinds || rest % kinds != 0) {
    return invalidArgument("{}: expects R, T and {} groups of n tensors, got {} inputs", name,
                           kinds, ctx.numInputs());
  }
  size_t n = rest / kinds;
  if (ctx.num_outputs != n * (kinds - 1)) {
    return invalidArgument("{}: {} outputs for {} optimized tensors (expects {})", name,
                           ctx.num_outputs, n, n * (kinds - 1));
  }
  double norm = ctx.attrs.getFloat("norm_coefficient", 0.0f);
  double alpha = ctx.attrs.getFloat("alpha", kind == Optimizer::kAdam ? 0.9f : 0.0f);
  double beta = ctx.attrs.getFloat("beta", kind == Optimizer::kAdam ? 0.999f : 0.0f);
  double eps = ctx.attrs.getFloat("epsilon", 1e-6f);
  double decay = ctx.attrs.getFloat("decay_factor", 0.0f);
  double norm_post = ctx.attrs.getFloat("norm_coefficient_post", 0.0f);
  std::string mode = ctx.attrs.getString("mode", "standard");
  if (kind == Optimizer::kMomentum) {
    for (const char* a : {"alpha", "beta", "mode", "norm_coefficient"}) {
      if (!ctx.attrs.has(a)) return invalidArgument("Momentum: attribute '{}' is required", a);
    }
    if (mode != "standard" && mode != "nesterov") {
      return invalidArgument("Momentum: mode '{}' is neither 'standard' nor 'nesterov'", mode);
    }
  }
  double adam_r = r;
  if (kind == Optimizer::kAdam && t > 0) {
    adam_r = r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
  }
  std::vector<Outputs> by_kind(kinds - 1);  // X', then the state outputs in input order
  for (size_t i = 0; i < n; ++i) {
    std::vector<const HostTensor*> group;
    for (size_t k = 0; k < kinds; ++k) {
      ASSIGN_OR_RETURN(const HostTensor* p, requireInput(ctx, 2 + k * n + i));
      RETURN_IF_ERROR(checkFloatOrDouble(ctx, *p));
      if (!group.empty() && p->dims != group[0]->dims) {
        return invalidArgument("{}: the tensors of optimized input {} differ in shape", name, i);
      }
      group.push_back(p);
    }
    std::vector<std::vector<double>> v;
    for (const HostTensor* p : group) {
      ASSIGN_OR_RETURN(std::vector<double> vals, readFloats<double>(ctx, *p));
      v.push_back(std::move(vals));
    }
    size_t count = v[0].size();
    std::vector<std::vector<double>> outs(kinds - 1, std::vector<double>(count));
    for (size_t j = 0; j < count; ++j) {
      double x = v[0][j], g = norm * x + v[1][j];
      if (kind == Optimizer::kAdagrad) {
        double h = v[2][j] + g * g;
        outs[1][j] = h;
        outs[0][j] = x - (r / (1 + t * decay)) * g / (std::sqrt(h) + eps);
      } else if (kind == Optimizer::kMomentum) {
        double vel = alpha * v[2][j] + (t > 0 ? beta : 1.0) * g;
        outs[1][j] = vel;
        outs[0][j] = mode == "standard" ? x - r * vel : x - r * (g + alpha * vel);
      } else {
        double vel = alpha * v[2][j] + (1 - alpha) * g;
        double h = beta * v[3][j] + (1 - beta) * (g * g);
        outs[1][j] = vel;
        outs[2][j] = h;
        outs[0][j] = (1 - norm_post) * (x - adam_r * (vel / (std::sqrt(h) + eps)));
      }
    }
    for (size_t k = 0; k + 1 < kinds; ++k) {
      // X' takes X's type; each state output its own input's.
      const HostTensor& like = *group[k == 0 ? 0 : k + 1];
      ASSIGN_OR_RETURN(HostTensor o, floatsToTensor(ctx, like.dtype, like.dims, outs[k]));
      by_kind[k].push_back(std::move(o));
    }
  }
  Outputs result;
  for (Outputs& o : by_kind) {
    for (HostTensor& t_out : o) result.push_back(std::move(t_out));
  }
  return result;
}

}  // namespace onnxopt::kernels::ref
