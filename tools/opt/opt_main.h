// The opt command line, callable from the two binaries that carry it: `opt`, and `opt-test`, which
// first registers the test-only passes.
#pragma once

namespace onnxopt::tools {

/// Parses the arguments and runs the command; returns the exit status.
int optMain(int argc, char** argv);

}  // namespace onnxopt::tools
