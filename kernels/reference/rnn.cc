// Recurrent reference kernels (opsets 7 and 14; layout from 14), per direction and time step t:
//   RNN   H = f(X W^T + H R^T + Wb + Rb)
//   GRU   z = f(X Wz^T + H Rz^T + Wbz + Rbz),  r = f(X Wr^T + H Rr^T + Wbr + Rbr)
//         h = g(X Wh^T + (r . H) Rh^T + Rbh + Wbh)          linear_before_reset = 0
//         h = g(X Wh^T + r . (H Rh^T + Rbh) + Wbh)          linear_before_reset != 0
//         H = (1 - z) . h + z . H
//   LSTM  i = f(X Wi^T + H Ri^T + Pi . C + Wbi + Rbi),  f = f(... Pf . C ...)  (1 - i: input_forget)
//         c = g(X Wc^T + H Rc^T + Wbc + Rbc),  C = f . C + i . c
//         o = f(X Wo^T + H Ro^T + Po . C + Wbo + Rbo),  H = o . h(C)
// Gate blocks of W, R and B are ordered zrh (GRU) and iofc (LSTM); P is iof. `clip` bounds every
// pre-activation. With sequence_lens, batch entry b runs its first sequence_lens[b] steps (reverse
// from the last of them); the steps after stay zero in Y, and Y_h/Y_c hold the last step's state
// (zero for a length of 0, as onnxruntime gives).
// Everything computes in double; each result rounds once to the element type.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops.h"

namespace onnxopt::kernels::ref {

namespace {

// At most this many multiply-adds (the cap nn.cc's Conv uses) and this hidden size, so that every
// index below stays far from int64 overflow.
constexpr int64_t kMaxRecurrentWork = int64_t{1} << 40;
constexpr int64_t kMaxHiddenSize = int64_t{1} << 24;

enum class Cell { kRnn, kGru, kLstm };

struct CellInfo {
  int64_t gates;       ///< gate blocks in W and R
  size_t activations;  ///< activation functions per direction
  size_t max_outputs;  ///< Y, Y_h (and Y_c)
  const char* defaults[3];
};

CellInfo infoOf(Cell cell) {
  switch (cell) {
    case Cell::kRnn:
      return {1, 1, 2, {"Tanh", nullptr, nullptr}};
    case Cell::kGru:
      return {3, 2, 2, {"Sigmoid", "Tanh", nullptr}};
    case Cell::kLstm:
      break;
  }
  return {4, 3, 3, {"Sigmoid", "Tanh", "Tanh"}};
}

/// One activation function of the spec's list, with its alpha and beta.
struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  } kind;
  double alpha = 0;
  double beta = 0;

  double operator()(double x) const {
    switch (kind) {
      case kRelu:
        return x > 0 ? x : 0;
      case kTanh:
        return std::tanh(x);
      case kSigmoid:
        return 1.0 / (1.0 + std::exp(-x));
      case kAffine:
        return alpha * x + beta;
      case kLeakyRelu:
        return x >= 0 ? x : alpha * x;
      case kThresholdedRelu:
        return x > alpha ? x : 0;
      case kScaledTanh:
        return alpha * std::tanh(beta * x);
      case kHardSigmoid:
        return std::clamp(alpha * x + beta, 0.0, 1.0);
      case kElu:
        return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
      case kSoftsign:
        return x / (1.0 + std::abs(x));
      case kSoftplus:
        return x > 30 ? x : std::log1p(std::exp(x));
    }
    return x;
  }
};

struct ActivationName {
  const char* name;
  Activation::Kind kind;
  bool takes_alpha, takes_beta;
  double alpha, beta;  ///< defaults: those of the ONNX operator of the same name
};

constexpr ActivationName kActivations[] = {
    {"relu", Activation::kRelu, false, false, 0, 0},
    {"tanh", Activation::kTanh, false, false, 0, 0},
    {"sigmoid", Activation::kSigmoid, false, false, 0, 0},
    {"affine", Activation::kAffine, true, true, 1.0, 0.0},
    {"leakyrelu", Activation::kLeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", Activation::kThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", Activation::kScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", Activation::kHardSigmoid, true, true, 0.2, 0.5},
    {"elu", Activation::kElu, true, false, 1.0, 0},
    {"softsign", Activation::kSoftsign, false, false, 0, 0},
    {"softplus", Activation::kSoftplus, false, false, 0, 0},
};

/// The activations of every direction (info.activations per direction). activation_alpha and
/// activation_beta are consumed in list order by the functions that take them, as onnxruntime
/// does; a function past the end of a list takes its default.
StatusOr<std::vector<Activation>> parseActivations(const KernelContext& ctx, const CellInfo& info,
                                                   int64_t dirs) {
  std::vector<std::string> names;
  if (auto it = ctx.attrs.string_lists.find("activations"); it != ctx.attrs.string_lists.end()) {
    names = it->second;
  }
  size_t per = info.activations, want = per * static_cast<size_t>(dirs);
  if (names.empty()) {
    for (size_t k = 0; k < want; ++k) names.emplace_back(info.defaults[k % per]);
  } else if (names.size() == per && want == 2 * per) {
    std::vector<std::string> once = names;  // inserting a vector's own range is undefined
    names.insert(names.end(), once.begin(), once.end());  // the same for both directions
  }
  if (names.size() != want) {
    return invalidArgument("{}: {} activations given, {} expected", ctx.op, names.size(), want);
  }
  std::vector<float> alphas, betas;
  if (auto it = ctx.attrs.float_lists.find("activation_alpha"); it != ctx.attrs.float_lists.end())
    alphas = it->second;
  if (auto it = ctx.attrs.float_lists.find("activation_beta"); it != ctx.attrs.float_lists.end())
    betas = it->second;
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const ActivationName* found = nullptr;
    for (const ActivationName& a : kActivations) {
      if (lower == a.name) found = &a;
    }
    if (found == nullptr) return invalidArgument("{}: unknown activation '{}'", ctx.op, name);
    Activation act{found->kind, found->alpha, found->beta};
    if (found->takes_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (found->takes_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    out.push_back(act);
  }
  return out;
}

/// Fails unless t has exactly `dims`.
Status checkDims(const KernelContext& ctx, const HostTensor& t, const Dims& dims,
                 const char* what) {
  if (t.dims == dims) return Status::ok();
  std::string want;
  for (int64_t d : dims) want += (want.empty() ? "" : ", ") + std::to_string(d);
  return invalidArgument("{}: {} must have shape [{}]", ctx.op, what, want);
}

/// The problem's extents and options, validated.
struct Problem {
  Cell cell;
  CellInfo info;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool reverse_only = false, batch_first = false;
  bool linear_before_reset = false, input_forget = false;
  bool clipped = false;
  double clip = 0;
  std::vector<Activation> acts;
  Dims lens;  ///< per batch entry
};

StatusOr<Problem> parseProblem(const KernelContext& ctx, Cell cell) {
  Problem p;
  p.cell = cell;
  p.info = infoOf(cell);
  if (ctx.num_outputs > p.info.max_outputs) {
    return invalidArgument("{}: too many outputs ({})", ctx.op, ctx.num_outputs);
  }
  ASSIGN_OR_RETURN(const HostTensor* x, requireInput(ctx, 0));
  ASSIGN_OR_RETURN(const HostTensor* w, requireInput(ctx, 1));
  ASSIGN_OR_RETURN(const HostTensor* r, requireInput(ctx, 2));
  std::vector<const HostTensor*> floats = {x, w, r};
  for (size_t i : {size_t{3}, size_t{5}, size_t{6}, size_t{7}}) {
    if (i >= 6 && cell != Cell::kLstm) break;
    if (const HostTensor* t = ctx.input(i)) floats.push_back(t);
  }
  RETURN_IF_ERROR(visitFloat(ctx, x->dtype, [](auto) { return Status::ok(); }));
  RETURN_IF_ERROR(checkSameType(ctx, floats));
  if (ctx.numInputs() > (cell == Cell::kLstm ? 8u : 6u)) {
    return invalidArgument("{}: too many inputs ({})", ctx.op, ctx.numInputs());
  }

  std::string direction = ctx.attrs.getString("direction", "forward");
  if (direction == "bidirectional") {
    p.dirs = 2;
  } else if (direction == "reverse") {
    p.reverse_only = true;
  } else if (direction != "forward") {
    return invalidArgument("{}: unknown direction '{}'", ctx.op, direction);
  }
  int64_t layout = ctx.opset >= 14 ? ctx.attrs.getInt("layout", 0) : 0;
  if (layout != 0 && layout != 1) return invalidArgument("{}: layout {}", ctx.op, layout);
  p.batch_first = layout == 1;

  if (x->rank() != 3) return invalidArgument("{}: X must have rank 3", ctx.op);
  p.seq = x->dims[p.batch_first ? 1 : 0];
  p.batch = x->dims[p.batch_first ? 0 : 1];
  p.input = x->dims[2];
  if (r->rank() != 3) return invalidArgument("{}: R must have rank 3", ctx.op);
  p.hidden = r->dims[2];
  if (ctx.attrs.has("hidden_size") && ctx.attrs.getInt("hidden_size", 0) != p.hidden) {
    return invalidArgument("{}: hidden_size {} does not match R's last dimension {}", ctx.op,
                           ctx.attrs.getInt("hidden_size", 0), p.hidden);
  }
  if (p.hidden > kMaxHiddenSize || p.input > kMaxHiddenSize) {
    return makeError(StatusCode::kResourceExhausted, "{}: hidden size {} or input size {}", ctx.op,
                     p.hidden, p.input);
  }
  int64_t gh = p.info.gates * p.hidden;
  RETURN_IF_ERROR(checkDims(ctx, *w, {p.dirs, gh, p.input}, "W"));
  RETURN_IF_ERROR(checkDims(ctx, *r, {p.dirs, gh, p.hidden}, "R"));
  if (const HostTensor* b = ctx.input(3))
    RETURN_IF_ERROR(checkDims(ctx, *b, {p.dirs, 2 * gh}, "B"));
  Dims state = p.batch_first ? Dims{p.batch, p.dirs, p.hidden} : Dims{p.dirs, p.batch, p.hidden};
  if (const HostTensor* h = ctx.input(5)) RETURN_IF_ERROR(checkDims(ctx, *h, state, "initial_h"));
  if (cell == Cell::kLstm) {
    if (const HostTensor* c = ctx.input(6)) RETURN_IF_ERROR(checkDims(ctx, *c, state, "initial_c"));
    if (const HostTensor* pp = ctx.input(7))
      RETURN_IF_ERROR(checkDims(ctx, *pp, {p.dirs, 3 * p.hidden}, "P"));
  }

  p.lens.assign(static_cast<size_t>(p.batch), p.seq);
  if (const HostTensor* sl = ctx.input(4)) {
    RETURN_IF_ERROR(checkDims(ctx, *sl, {p.batch}, "sequence_lens"));
    ASSIGN_OR_RETURN(p.lens, readInts(*sl, "sequence_lens"));
    for (int64_t len : p.lens) {
      if (len < 0 || len > p.seq) {
        return invalidArgument("{}: sequence length {} outside [0, {}]", ctx.op, len, p.seq);
      }
    }
  }

  // Multiply-adds: every step of every direction and batch entry runs the gates' matrix rows.
  int64_t work = 1;
  for (int64_t f : {p.seq, p.dirs, p.batch, gh, p.input + p.hidden}) {
    if (__builtin_mul_overflow(work, f, &work) || work > kMaxRecurrentWork) {
      return makeError(StatusCode::kResourceExhausted, "{}: too much work for a reference kernel",
                       ctx.op);
    }
  }

  if (ctx.attrs.has("clip")) {
    p.clipped = true;
    p.clip = ctx.attrs.getFloat("clip", 0);
    if (!(p.clip > 0)) return invalidArgument("{}: clip must be positive", ctx.op);
  }
  p.linear_before_reset = ctx.attrs.getInt("linear_before_reset", 0) != 0;
  p.input_forget = ctx.attrs.getInt("input_forget", 0) != 0;
  ASSIGN_OR_RETURN(p.acts, parseActivations(ctx, p.info, p.dirs));
  return p;
}

/// acc[j] += sum_k m[row0 + j][k] * v[k], over `rows` rows of length n.
void matVec(const std::vector<double>& m, int64_t row0, int64_t rows, int64_t n, const double* v,
            double* acc) {
  for (int64_t j = 0; j < rows; ++j) {
    const double* row = m.data() + (row0 + j) * n;
    double s = 0;
    for (int64_t k = 0; k < n; ++k) s += row[k] * v[k];
    acc[j] += s;
  }
}

StatusOr<Outputs> runRecurrent(const KernelContext& ctx, Cell cell) {
  ASSIGN_OR_RETURN(Problem p, parseProblem(ctx, cell));
  const HostTensor& x_t = *ctx.input(0);
  const int64_t S = p.seq, B = p.batch, I = p.input, H = p.hidden, D = p.dirs;
  const int64_t G = p.info.gates, GH = G * H;

  ASSIGN_OR_RETURN(std::vector<double> x, readFloats<double>(ctx, x_t));
  ASSIGN_OR_RETURN(std::vector<double> w, readFloats<double>(ctx, *ctx.input(1)));
  ASSIGN_OR_RETURN(std::vector<double> r, readFloats<double>(ctx, *ctx.input(2)));
  auto optional = [&](size_t i, size_t n) -> StatusOr<std::vector<double>> {
    if (const HostTensor* t = ctx.input(i)) return readFloats<double>(ctx, *t);
    return std::vector<double>(n, 0.0);
  };
  size_t state_n = static_cast<size_t>(D * B * H);
  ASSIGN_OR_RETURN(std::vector<double> bias, optional(3, static_cast<size_t>(D * 2 * GH)));
  ASSIGN_OR_RETURN(std::vector<double> h0, optional(5, state_n));
  std::vector<double> c0(state_n, 0.0), peep(static_cast<size_t>(D * 3 * H), 0.0);
  if (cell == Cell::kLstm) {
    ASSIGN_OR_RETURN(c0, optional(6, state_n));
    ASSIGN_OR_RETURN(peep, optional(7, peep.size()));
  }

  // Allocated first: makeOutput refuses an output past the size limit.
  Dims y_dims = p.batch_first ? Dims{B, S, D, H} : Dims{S, D, B, H};
  Dims state_dims = p.batch_first ? Dims{B, D, H} : Dims{D, B, H};
  Outputs outs;
  for (size_t i = 0; i < ctx.num_outputs; ++i) {
    ASSIGN_OR_RETURN(HostTensor t, makeOutput(x_t.dtype, i == 0 ? y_dims : state_dims));
    outs.push_back(std::move(t));
  }
  // Results go straight into the outputs (zero-filled: Y past a sequence's length stays zero).
  void (*put)(HostTensor&, int64_t, double) = nullptr;
  RETURN_IF_ERROR(visitFloat(ctx, x_t.dtype, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    put = [](HostTensor& t, int64_t i, double v) { store<T>(t, i, static_cast<Compute<T>>(v)); };
    return Status::ok();
  }));
  auto emit = [&](size_t output, size_t offset, const std::vector<double>& v) {
    if (output >= outs.size()) return;
    for (int64_t j = 0; j < H; ++j) put(outs[output], static_cast<int64_t>(offset) + j, v[j]);
  };
  auto state_at = [&](int64_t d, int64_t b) {
    return static_cast<size_t>((p.batch_first ? b * D + d : d * B + b) * H);
  };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return static_cast<size_t>((p.batch_first ? (b * S + t) * D + d : (t * D + d) * B + b) * H);
  };
  auto x_at = [&](int64_t t, int64_t b) {
    return static_cast<size_t>((p.batch_first ? b * S + t : t * B + b) * I);
  };
  auto clip = [&](double v) { return p.clipped ? std::clamp(v, -p.clip, p.clip) : v; };

  std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)),
      xw(static_cast<size_t>(GH)), hr(static_cast<size_t>(GH)), rh(static_cast<size_t>(H));
  size_t per = p.info.activations;
  for (int64_t d = 0; d < D; ++d) {
    bool reverse = p.reverse_only || d == 1;
    const Activation* act = p.acts.data() + static_cast<size_t>(d) * per;
    const double* wb = bias.data() + d * 2 * GH;
    const double* rb = wb + GH;
    const double* pi = peep.data() + d * 3 * H;
    const double* po = pi + H;
    const double* pf = po + H;
    for (int64_t b = 0; b < B; ++b) {
      size_t s0 = state_at(d, b);
      std::copy_n(h0.begin() + static_cast<std::ptrdiff_t>(s0), H, h.begin());
      std::copy_n(c0.begin() + static_cast<std::ptrdiff_t>(s0), H, c.begin());
      int64_t len = p.lens[static_cast<size_t>(b)];
      for (int64_t k = 0; k < len; ++k) {
        int64_t t = reverse ? len - 1 - k : k;
        std::copy_n(wb, GH, xw.begin());
        matVec(w, d * GH, GH, I, x.data() + x_at(t, b), xw.data());
        std::copy_n(rb, GH, hr.begin());
        bool reset_first = cell == Cell::kGru && !p.linear_before_reset;
        // The GRU's candidate block of R multiplies r . H: computed below once r is known.
        matVec(r, d * GH, reset_first ? 2 * H : GH, H, h.data(), hr.data());
        if (cell == Cell::kRnn) {
          for (int64_t j = 0; j < H; ++j) h[j] = act[0](clip(xw[j] + hr[j]));
        } else if (cell == Cell::kGru) {
          // z at 0, r at H, the candidate at 2H.
          for (int64_t j = 0; j < H; ++j) rh[j] = act[0](clip(xw[H + j] + hr[H + j]));
          if (reset_first) {
            std::vector<double> gated(static_cast<size_t>(H));
            for (int64_t j = 0; j < H; ++j) gated[j] = rh[j] * h[j];
            matVec(r, d * GH + 2 * H, H, H, gated.data(), hr.data() + 2 * H);
          }
          for (int64_t j = 0; j < H; ++j) {
            double z = act[0](clip(xw[j] + hr[j]));
            double cand = reset_first ? hr[2 * H + j] : rh[j] * hr[2 * H + j];
            double n = act[1](clip(xw[2 * H + j] + cand));
            h[j] = (1 - z) * n + z * h[j];
          }
        } else {
          // i at 0, o at H, f at 2H, c at 3H.
          for (int64_t j = 0; j < H; ++j) {
            double ig = act[0](clip(xw[j] + hr[j] + pi[j] * c[j]));
            double fg = p.input_forget ? 1 - ig
                                       : act[0](clip(xw[2 * H + j] + hr[2 * H + j] + pf[j] * c[j]));
            double cand = act[1](clip(xw[3 * H + j] + hr[3 * H + j]));
            c[j] = fg * c[j] + ig * cand;
            double og = act[0](clip(xw[H + j] + hr[H + j] + po[j] * c[j]));
            h[j] = og * act[2](c[j]);
          }
        }
        emit(0, y_at(t, d, b), h);
      }
      if (len == 0) continue;  // no last step: Y_h and Y_c stay zero, as in onnxruntime
      emit(1, s0, h);
      emit(2, s0, c);
    }
  }

  return outs;
}

}  // namespace

StatusOr<Outputs> recurrentKernel(const KernelContext& ctx) {
  if (ctx.op == "LSTM") return runRecurrent(ctx, Cell::kLstm);
  if (ctx.op == "GRU") return runRecurrent(ctx, Cell::kGru);
  if (ctx.op == "RNN") return runRecurrent(ctx, Cell::kRnn);
  return unimplemented(ctx, "not a recurrent op");
}

}  // namespace onnxopt::kernels::ref
