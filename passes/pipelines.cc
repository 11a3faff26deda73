// The optimization levels, in one place, with the reason for each ordering decision.
#include "onnxopt/passes/registry.h"

namespace onnxopt::passes {

StatusOr<std::string> pipelineForLevel(int level) {
  switch (level) {
    case 0:
      return std::string();  // -O0: import, verify, export; nothing else.
    case 1:
    case 2:
    case 3:
      // -O1: cleanup, standard ONNX only.
      //  - infer-shapes first: no-op and merge patterns decide on element types and shapes
      //    (a Cast to the type it already has, a Reshape to the shape it already has).
      //  - lift-constants next: Constant nodes become initializers, so every later pattern sees
      //  one
      //    kind of constant, and CSE can merge equal constants by content.
      //  - fold-if before the loop: a constant condition usually comes from an initializer, and
      //    inlining the branch exposes its nodes to every cleanup that follows.
      //  - then to a fixed point: no-op elimination and merging of consecutive ops expose
      //  duplicates
      //    (CSE) and dead producers (DCE); CSE makes nodes dead; DCE last in each round so the next
      //    round starts from a graph without garbage.
      // -O2 (default) will add fusions to standard ONNX operators, -O3 target-specific rewrites;
      // until those passes exist, both equal -O1.
      return std::string(
          "infer-shapes,lift-constants,fold-constant-if,"
          "fixpoint(fold-constants,eliminate-noop,merge-consecutive,fold-constant-if,cse,dce)");
    default:
      return invalidArgument("unknown optimization level {} (use 0 to 3)", level);
  }
}

}  // namespace onnxopt::passes
