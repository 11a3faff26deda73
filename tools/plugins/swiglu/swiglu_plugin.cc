// The worked example of a plugin (docs/plugins.md): SwiGLU, the gated MLP of Llama-style models,
// as one op of the domain "example":
//
//   Mul(Mul(x W1, Sigmoid(x W1)), x W3)   ==>   example.SwiGLU(x, W1, W3)
//
// (Silu(a) = a * Sigmoid(a); each Mul takes its operands in either order; x W1 is read only by the
// Sigmoid and the gate's Mul, every other intermediate only once; W1 and W3 are [K, N].) The
// plugin registers the op's schema (shape inference and its function body, the pattern itself, so
// that other runtimes still run the output), a CPU reference kernel, a CUDA kernel
// (swiglu_kernel.cu, in CUDA builds) and the pass fuse-swiglu, which runs at -O1 and up.
// tools/plugins/swiglu/swiglu_rules.onnxtxt is the same replacement written as a rules file.
#include <cmath>
#include <string>
#include <vector>

#include "onnxopt/pass/matchers.h"
#include "onnxopt/pass/pattern_match.h"
#include "onnxopt/plugin/plugin.h"
#include "onnxopt/support/half.h"

#ifdef ONNXOPT_SWIGLU_CUDA
#include "swiglu_cuda.h"
#endif

namespace swiglu {

using namespace onnxopt;  // NOLINT(google-build-using-namespace): a plugin's own file

constexpr const char* kDomain = "example";
constexpr const char* kOp = "SwiGLU";

// The op's decomposition, written into every model that calls it.
constexpr const char* kFunctionBody = R"(
<domain: "example", opset_import: ["" : 18]>
SwiGLU (x, w1, w3) => (y) {
  a = MatMul(x, w1)
  s = Sigmoid(a)
  g = Mul(a, s)
  b = MatMul(x, w3)
  y = Mul(g, b)
}
)";

// --- schema: y has x's element type and shape [..., N] -------------------------------------------

void inferSwiGlu(ir::InferenceContext& ctx) {
  std::optional<DataType> elem = ctx.inputElemType(0);
  if (!elem) return;
  auto x = ctx.inputShape(0);
  auto w1 = ctx.inputShape(1);
  if (!x || !w1 || x->empty() || w1->size() != 2) {
    ctx.setOutput(0, *elem, std::nullopt);
    return;
  }
  std::vector<ir::Dim> dims = *x;
  dims.back() = (*w1)[1];
  ctx.setOutput(0, *elem, dims);
}

// --- the CPU reference kernel ----------------------------------------------------------------------

float readFloat(const kernels::HostTensor& t, int64_t i) {
  switch (t.dtype) {
    case DataType::kFloat16:
      return halfToFloat(t.get<uint16_t>(i));
    case DataType::kBfloat16:
      return bfloat16ToFloat(t.get<uint16_t>(i));
    default:
      return t.get<float>(i);
  }
}

void writeFloat(kernels::HostTensor& t, int64_t i, float v) {
  switch (t.dtype) {
    case DataType::kFloat16:
      t.set<uint16_t>(i, floatToHalf(v));
      break;
    case DataType::kBfloat16:
      t.set<uint16_t>(i, floatToBfloat16(v));
      break;
    default:
      t.set<float>(i, v);
  }
}

StatusOr<std::vector<kernels::HostTensor>> runSwiGlu(
    const std::vector<const kernels::HostTensor*>& in, const kernels::KernelAttrs& /*attrs*/,
    size_t num_outputs) {
  if (in.size() != 3 || in[0] == nullptr || in[1] == nullptr || in[2] == nullptr ||
      num_outputs != 1) {
    return invalidArgument("example.SwiGLU takes (x, W1, W3) and gives one output");
  }
  const kernels::HostTensor& x = *in[0];
  const kernels::HostTensor& w1 = *in[1];
  const kernels::HostTensor& w3 = *in[2];
  if (x.dtype != w1.dtype || x.dtype != w3.dtype) {
    return invalidArgument("example.SwiGLU: x, W1 and W3 have one element type");
  }
  if (x.rank() < 1 || w1.rank() != 2 || w1.dims != w3.dims || x.dims.back() != w1.dims[0]) {
    return invalidArgument("example.SwiGLU: x is [..., K], W1 and W3 [K, N]");
  }
  const int64_t k = w1.dims[0], n = w1.dims[1], rows = x.numElements() / std::max<int64_t>(k, 1);
  std::vector<int64_t> dims = x.dims;
  dims.back() = n;
  kernels::HostTensor y = kernels::HostTensor::zeros(x.dtype, dims);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double a = 0, b = 0;
      for (int64_t i = 0; i < k; ++i) {
        double xv = readFloat(x, r * k + i);
        a += xv * readFloat(w1, i * n + j);
        b += xv * readFloat(w3, i * n + j);
      }
      writeFloat(y, r * n + j, static_cast<float>(a / (1.0 + std::exp(-a)) * b));
    }
  }
  std::vector<kernels::HostTensor> out;
  out.push_back(std::move(y));
  return out;
}

// --- the pass ------------------------------------------------------------------------------------

using pass::match::bind;
using pass::match::commutative;
using pass::match::op;
using pass::match::singleUse;

class SwiGluPattern final : public rewrite::Pattern {
 public:
  SwiGluPattern() : Pattern("fuse-swiglu", "Mul") {}

  bool matchAndRewrite(ir::Node* node, rewrite::PatternContext& ctx) const override {
    pass::match::Match m = swiglu_.match(node);
    if (!m) return ctx.fail("{}", m.why());
    ir::Value* a = m["a"];
    if (a->uses().size() != 2 || a->isGraphOutput()) {
      return ctx.fail("x W1 is read outside the SiLU");
    }
    auto w1 = pass::staticShape(m["w1"]);
    auto w3 = pass::staticShape(m["w3"]);
    if (!w1 || w1->size() != 2 || w1 != w3) return ctx.fail("W1 and W3 are not one [K, N] shape");
    auto& rw = ctx.rewriter();
    ir::Node* fused = rw.createNodeLike(kOp, kDomain, {m["x"], m["w1"], m["w3"]}, node);
    std::string name = node->output(0)->name();
    rw.replaceAllUsesWith(node->output(0), fused->output(0));
    rw.eraseDeadNodes(m.nodes());  // the matched chain, the root first
    if (fused->output(0)->name() != name) rw.setName(fused->output(0), name);
    return true;
  }

 private:
  // y = Mul(Mul(a, Sigmoid(a)), MatMul(x, W3)), a = MatMul(x, W1)
  pass::match::Matcher swiglu_ =
      commutative("Mul",
                  singleUse(commutative("Mul", bind("a", op("MatMul", bind("x"), bind("w1"))),
                                        singleUse(op("Sigmoid", bind("a"))))),
                  singleUse(op("MatMul", bind("x"), bind("w3"))));
};

class FuseSwiGluPass final : public pass::PatternPass {
 public:
  std::string id() const override { return "fuse-swiglu"; }
  std::string summary() const override {
    return "Fuse SwiGLU (Mul(Silu(x W1), x W3)) into example.SwiGLU (the swiglu plugin)";
  }
  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    ASSIGN_OR_RETURN(bool changed, PatternPass::run(model, ctx));
    if (changed) {
      rewrite::Rewriter rw;
      rw.addOpsetImport(model, kDomain, 1);
    }
    return changed;
  }

 protected:
  rewrite::PatternList patterns() const override {
    rewrite::PatternList list;
    list.push_back(std::make_unique<SwiGluPattern>());
    return list;
  }
};

std::unique_ptr<pass::Pass> createFuseSwiGluPass() {
  return std::make_unique<FuseSwiGluPass>();
}

// --- registration --------------------------------------------------------------------------------

void registerSwiGlu(plugin::Registry& r) {
  const kernels::TypeSet floats = {DataType::kFloat, DataType::kFloat16, DataType::kBfloat16};
  plugin::OpSchema schema;
  schema.domain = kDomain;
  schema.op = kOp;
  schema.infer = &inferSwiGlu;
  schema.function_body = kFunctionBody;
  r.addOpSchema(schema);

  kernels::ReferencePluginKernel reference;
  reference.domain = kDomain;
  reference.op = kOp;
  reference.inputs = {floats};
  reference.run = &runSwiGlu;
  r.addReferenceKernel(reference);

#ifdef ONNXOPT_SWIGLU_CUDA
  kernels::CudaPluginKernel cuda;
  cuda.domain = kDomain;
  cuda.op = kOp;
  cuda.min_inputs = 3;
  cuda.max_inputs = 3;
  cuda.inputs = {floats};
  cuda.can_implement = &canImplementSwiGlu;
  cuda.launch = &launchSwiGlu;
  r.addCudaKernel(cuda);
#endif

  r.addPass(&createFuseSwiGluPass, /*in_default_pipeline=*/true);
}

}  // namespace swiglu

ONNXOPT_DEFINE_PLUGIN("swiglu", "1.0", swiglu::registerSwiGlu)
