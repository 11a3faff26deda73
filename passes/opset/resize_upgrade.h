// Resize and Upsample across the opsets where their signature changed (passes/opset/
// resize_upgrade.cc), for upgrade-opset. Internal to the passes library.
#pragma once

#include <string>

#include "onnxopt/ir/graph.h"
#include "onnxopt/rewrite/rewriter.h"

namespace onnxopt::passes {

/// Why `node` (a Resize, or an Upsample that becomes one at opset 10) cannot cross the change at
/// opset `version`; empty when it can.
std::string resizeUpgradeBlocker(const ir::Node& node, int version);

/// Rewrites `node` into the form it takes at opset `version` (9 or 10 for Upsample, 11 or 13 for
/// Resize), keeping what it computes. The blocker must have been empty.
void upgradeResize(ir::Node* node, int version, rewrite::Rewriter& rw);

}  // namespace onnxopt::passes
