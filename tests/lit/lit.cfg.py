# LLVM lit configuration for onnxopt's textual tests (.onnxtxt files with RUN lines).
import lit.formats

config.name = "onnxopt"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".onnxtxt"]
config.excludes = ["inputs"]
# %opt-test first: %opt is a prefix of it.
config.substitutions.append(("%opt-test", config.opt_test_path))
config.substitutions.append(("%opt", config.opt_path))
config.substitutions.append(("FileCheck", config.filecheck_path))
config.substitutions.append(("%python", config.python))
