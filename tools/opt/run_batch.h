// `opt run --batch FILE`: many `opt run` cases in one process (run_batch.cc).
#pragma once

#include <string>
#include <vector>

#include "commands.h"
#include "onnxopt/support/status.h"

namespace onnxopt::tools {

/// One line of a batch file as the options of one case: tab-separated fields, MODEL first, then
/// `--input NAME=FILE`, `--input-shape NAME=DIMS`, `--seed N` and `--save-outputs DIR` (a flag and
/// its value in two fields), added to `defaults` (the command line's options).
StatusOr<RunCommandOptions> parseBatchLine(const std::string& line,
                                           const RunCommandOptions& defaults);

/// Runs every case of the file `opts.batch` as `opt run` would, one after another in this process
/// (one CUDA context, the libraries loaded once). Each case's output, on stdout and on stderr,
/// starts with a line `== case N` and ends with `== case N: exit RC` (N from 0, RC its `opt run`
/// exit status); a failing case never stops the others. Returns 0, or the exit status of an error
/// with the file itself.
int runBatchCommand(const RunCommandOptions& opts);

}  // namespace onnxopt::tools
