"""Running onnxopt and its peers (onnxsim, onnxslim, onnxoptimizer) on one model, each in its own process.

Every tool gets the same input file and writes one output file; the caller measures wall time, and reads
node counts and outputs from the files. A peer that fails or times out is reported, never retried.
The peers are optional benchmark dependencies (tools/requirements-bench.txt); a missing one is reported as
"not installed".
"""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600

# Each peer as the one Python statement its users run, with its defaults. onnxsim and onnxslim may change the
# opset or IR version of their output; all of them keep the graph interface.
_PEER_SCRIPTS = {
    "onnxsim": "import onnx, onnxsim, sys\n"
               "m, ok = onnxsim.simplify(onnx.load(sys.argv[1]))\n"
               "assert ok, 'onnxsim check failed'\n"
               "onnx.save(m, sys.argv[2])\n",
    "onnxslim": "import onnxslim, sys\n"
                "onnxslim.slim(sys.argv[1], sys.argv[2])\n",
    "onnxoptimizer": "import onnx, onnxoptimizer, sys\n"
                     "onnx.save(onnxoptimizer.optimize(onnx.load(sys.argv[1])), sys.argv[2])\n",
}
PEERS = tuple(_PEER_SCRIPTS)


@dataclasses.dataclass
class Run:
    tool: str
    ok: bool
    seconds: float
    error: str = ""


def installed(peer: str) -> bool:
    return importlib.util.find_spec(peer) is not None


def opt_binary() -> Path:
    return ROOT / "build" / "bin" / "opt"


def run_tool(tool: str, model: Path, out: Path, opt_args: tuple[str, ...] = ("-O2",)) -> Run:
    """Runs `tool` ("opt" or a peer) on `model`, writing `out`."""
    if tool == "opt":
        cmd = [str(opt_binary()), str(model), "-o", str(out), *opt_args]
    else:
        if not installed(tool):
            return Run(tool, False, 0.0, "not installed")
        cmd = [sys.executable, "-c", _PEER_SCRIPTS[tool], str(model), str(out)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Run(tool, False, TIMEOUT_S, f"timed out after {TIMEOUT_S}s")
    seconds = time.perf_counter() - start
    if proc.returncode != 0 or not out.is_file():
        lines = [l for l in proc.stderr.strip().splitlines() if l.strip()]
        return Run(tool, False, seconds, (lines[-1] if lines else f"exit {proc.returncode}")[:160])
    return Run(tool, True, seconds)


def count_nodes(graph: onnx.GraphProto) -> int:
    """Nodes of the graph and of every subgraph in it."""
    n = 0
    for node in graph.node:
        n += 1
        for attr in node.attribute:
            if attr.HasField("g"):
                n += count_nodes(attr.g)
            for g in attr.graphs:
                n += count_nodes(g)
    return n


def model_nodes(path: Path) -> int:
    return count_nodes(onnx.load(str(path), load_external_data=False).graph)
