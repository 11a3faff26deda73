// Passes that exist only for tests, in their own library (onnxopt_test_passes) so that neither the
// library users link nor `opt --list-passes` carries them. The test build of opt (opt-test)
// registers them at start.
#pragma once

#include <memory>

#include "onnxopt/pass/pass.h"

namespace onnxopt::passes {

std::unique_ptr<pass::Pass> createOscillatePass();

/// Adds every test pass to the registry (registerPass).
void registerTestPasses();

}  // namespace onnxopt::passes
