"""The `onnxopt` console script: runs the opt binary installed in the package (onnxopt/_bin),
with its arguments, so `onnxopt --help` is `opt --help`. opt's onnxruntime runner is the
package's copy of ort_runner.py, run by this interpreter, unless the environment names others."""

from __future__ import annotations

import os
import sys
from typing import Dict

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")
PACKAGE_OPT = os.path.join(_BIN, "opt")


def opt_env() -> Dict[str, str]:
    """The environment to run the package's opt in (onnxopt.cluster's tasks run it too)."""
    env = dict(os.environ)
    env.setdefault("ONNXOPT_ORT_RUNNER", os.path.join(_BIN, "ort_runner.py"))
    env.setdefault("ONNXOPT_PYTHON", sys.executable)
    return env


def main() -> None:
    if not os.access(PACKAGE_OPT, os.X_OK):
        sys.stderr.write(f"onnxopt: error: {PACKAGE_OPT}: the package's opt binary is missing; "
                         "reinstall onnxopt\n")
        sys.exit(2)
    os.execve(PACKAGE_OPT, [PACKAGE_OPT, *sys.argv[1:]], opt_env())


if __name__ == "__main__":
    main()
