"""The `onnxopt` console script: runs the opt binary installed in the package (onnxopt/_bin),
with its arguments, so `onnxopt --help` is `opt --help`. opt's onnxruntime runner is the
package's copy of ort_runner.py, run by this interpreter, unless the environment names others."""

from __future__ import annotations

import os
import sys


def main() -> None:
    bin_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")
    opt = os.path.join(bin_dir, "opt")
    if not os.access(opt, os.X_OK):
        sys.stderr.write(f"onnxopt: error: {opt}: the package's opt binary is missing; "
                         "reinstall onnxopt\n")
        sys.exit(2)
    env = dict(os.environ)
    env.setdefault("ONNXOPT_ORT_RUNNER", os.path.join(bin_dir, "ort_runner.py"))
    env.setdefault("ONNXOPT_PYTHON", sys.executable)
    os.execve(opt, [opt, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
