// infer-shapes: runs symbolic shape and type inference (include/onnxopt/ir/shape_inference.h) so
// that later patterns see element types and (symbolic) shapes on every value.
//
//   %y = Reshape(%x: float[N,12,64], Concat(Shape(%x)[0], 768))  ==>  %y: float[N,768]
//
// Inferred types win over declared ones wherever inference has something to say (a contradiction
// is reported as a warning, and the declared dim, rank or element type is replaced), so that Shape
// folding never rests on a wrong value_info; declared dims fill in only what inference leaves
// unknown. With write-value-info=true the inferred types are also written out as value_info.
#include "onnxopt/ir/shape_inference.h"
#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {
namespace {

class InferShapesPass final : public pass::Pass {
 public:
  std::string id() const override { return "infer-shapes"; }
  std::string summary() const override {
    return "Infer element types and symbolic shapes of every value";
  }
  std::vector<pass::PassOption> options() const override {
    return {{"write-value-info", "bool", "false", "also write inferred types as value_info"}};
  }
  Status setOption(const std::string& name, const std::string& value) override {
    if (name != "write-value-info") return Pass::setOption(name, value);
    ASSIGN_OR_RETURN(write_, parseBool(name, value));
    return Status::ok();
  }

  StatusOr<bool> run(ir::Model& model, pass::PassContext& ctx) override {
    ir::ShapeInferenceStats stats;
    if (write_) {
      ir::ShapeInferenceOptions options;
      options.write_value_info = true;
      options.diagnostics = ctx.diagnostics;
      ASSIGN_OR_RETURN(stats, ir::inferShapes(model, options));
      ctx.type_refinements += stats.refined;
    } else {
      // Types only: shared with fold-constants, and no work when nothing changed since the last
      // inference (the statistics count inference runs).
      RETURN_IF_ERROR(pass::inferShapesOnce(model, ctx, &stats).status());
    }
    bump("values", stats.values);
    bump("ranked", stats.ranked);
    bump("static-shape", stats.static_shape);
    bump("symbolic", stats.symbolic);
    bump("warnings", static_cast<int64_t>(stats.warnings.size()));
    for (const std::string& op : stats.unsupported_ops) bump("no-inference-for." + op);
    return false;  // types are annotations: the graph itself is unchanged (see type_refinements)
  }

 private:
  bool write_ = false;
};

}  // namespace

std::unique_ptr<pass::Pass> createInferShapesPass() {
  return std::make_unique<InferShapesPass>();
}

}  // namespace onnxopt::passes
