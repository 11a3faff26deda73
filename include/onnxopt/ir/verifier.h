// The IR verifier: checks the invariants every pass may rely on. It runs after import, before
// export, and after every pass under --verify-each.
#pragma once

#include "onnxopt/ir/graph.h"
#include "onnxopt/support/status.h"

namespace onnxopt::ir {

/// Checks, for a graph and its subgraphs: use-list symmetry (every operand is recorded in its
/// value's use-list and every use points back at a live operand), topological order, every operand
/// defined in scope before use (outer-scope values included), unique value names per scope, node
/// outputs owned by their node, initializer data consistent with the value's declared type, and
/// constant operands the spec rules out (a Reshape target shape with two -1), and (given the
/// opset) default-domain nodes whose values bound to one type parameter have one element type.
struct VerifyOptions {
  /// Check that value names are unique per graph. The importer, which has checked that already
  /// while resolving names, turns it off: on large graphs the name table is half the verifier's
  /// time.
  bool unique_names = true;
  /// The default domain's opset, which picks the schemas whose type parameters are checked
  /// (ir/tied_types.h); 0 skips that check. verifyModel sets it from the opset imports.
  int64_t opset = 0;
};
Status verifyGraph(const Graph& graph, const VerifyOptions& options = {});

/// verifyGraph on the main graph and every function body, plus model-level checks (opset imports).
Status verifyModel(const Model& model, const VerifyOptions& options = {});

}  // namespace onnxopt::ir
