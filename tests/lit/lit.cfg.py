# LLVM lit configuration for onnxopt's textual tests (.onnxtxt files with RUN lines).
import lit.formats

config.name = "onnxopt"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".onnxtxt"]
config.excludes = ["inputs"]
# %opt-test first: %opt is a prefix of it. Both verify the IR after every pass, as mlir-opt does, so
# a pass that leaves an invalid model fails its tests with the pass named; the flag is the parent
# command's, so it also stands before a subcommand (`%opt run ...`), where it changes nothing.
config.substitutions.append(("%opt-test", config.opt_test_path + " --verify-each"))
config.substitutions.append(("%opt", config.opt_path + " --verify-each"))
config.substitutions.append(("FileCheck", config.filecheck_path))
config.substitutions.append(("%python", config.python))
