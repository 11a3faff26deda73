// Compiled by the ctest test `closed_ir` with -DMUTATE=<n>: each variant mutates the IR the way a
// pass must not (behind the Rewriter's back) and must fail to compile because the IR's setters
// are private (include/onnxopt/ir/graph.h, ir::Builder). Variant 0 uses only public reads and the
// Rewriter, and must compile, so that the failing variants fail for the right reason.
#include "onnxopt/ir/graph.h"
#include "onnxopt/rewrite/rewriter.h"

void mutate(onnxopt::ir::Node* node, onnxopt::rewrite::Rewriter& rw) {
#if MUTATE == 0
  rw.setType(node->output(0), node->output(0)->type());
  rw.setName(node, node->name());
#elif MUTATE == 1
  node->output(0)->setType(node->output(0)->type());
#elif MUTATE == 2
  node->setName("x");
#elif MUTATE == 3
  node->setInput(0, nullptr);
#elif MUTATE == 4
  node->owningGraph()->createNode("Relu", "", {}, 1);
#endif
}
