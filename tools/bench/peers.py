"""Running onnxopt and its peers (onnxsim, onnxslim, onnxoptimizer, onnxscript, onnxruntime's offline
optimizer) on one model, each in its own process.

Every tool gets the same input file and writes one output file; the caller measures wall time, and reads
node counts and outputs from the files. A peer that fails or times out is reported, never retried.
The peers are optional benchmark dependencies (tools/requirements-bench.txt); a missing one is reported as
"not installed".
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 600
_GNU_TIME = "/usr/bin/time"

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
# Node-count peers (issue 6's comparison); the benchmark adds onnxscript and onnxruntime.
PEERS = tuple(_PEER_SCRIPTS)
_BENCH_SCRIPTS = {
    "onnxscript": "import onnx, sys\n"
                  "from onnxscript import optimizer, rewriter\n"
                  "m = optimizer.optimize(onnx.load(sys.argv[1]))\n"
                  "onnx.save(rewriter.rewrite(m), sys.argv[2])\n",
    # onnxruntime's offline optimization: the session writes the graph it optimized. Extended adds
    # com.microsoft contrib ops, so its output runs in onnxruntime only.
    "ort-basic": "import onnxruntime as ort, sys\n"
                 "o = ort.SessionOptions(); o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC\n"
                 "o.optimized_model_filepath = sys.argv[2]\n"
                 "ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n",
    "ort-extended": "import onnxruntime as ort, sys\n"
                    "o = ort.SessionOptions(); o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED\n"
                    "o.optimized_model_filepath = sys.argv[2]\n"
                    "ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n",
}
_PEER_SCRIPTS.update(_BENCH_SCRIPTS)
BENCH_PEERS = PEERS + tuple(_BENCH_SCRIPTS)
_MODULES = {"ort-basic": "onnxruntime", "ort-extended": "onnxruntime"}


@dataclasses.dataclass
class Run:
    tool: str
    ok: bool
    seconds: float
    error: str = ""
    peak_rss_kb: int = 0  # of the tool's process (wait4), 0 when not measured


def installed(peer: str) -> bool:
    return importlib.util.find_spec(_MODULES.get(peer, peer)) is not None


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
    # ru_maxrss from wait4 would include the parent's image at fork time; GNU time measures the tool
    # alone (its own RSS, about 2 MB, is far below any tool's).
    rss_file = None
    if Path(_GNU_TIME).is_file():
        rss_file = tempfile.NamedTemporaryFile(suffix=".rss", delete=False)
        rss_file.close()
        cmd = [_GNU_TIME, "-q", "-f", "%M", "-o", rss_file.name, *cmd]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            _, status, usage = _wait4(proc, TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return Run(tool, False, TIMEOUT_S, f"timed out after {TIMEOUT_S}s")
        seconds = time.perf_counter() - start
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    rss_kb = usage.ru_maxrss
    if rss_file is not None:
        text = Path(rss_file.name).read_text().split()
        os.unlink(rss_file.name)
        rss_kb = int(text[-1]) if text and text[-1].isdigit() else rss_kb
    if code != 0 or not out.is_file():
        lines = [l for l in stderr.strip().splitlines() if l.strip() and "Command exited" not in l]
        return Run(tool, False, seconds, (lines[-1] if lines else f"exit {code}")[:160])
    return Run(tool, True, seconds, peak_rss_kb=rss_kb)


def _wait4(proc: subprocess.Popen, timeout: float):
    """os.wait4 on the child with a timeout: (pid, status, rusage) with the child's own peak RSS."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return pid, status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.005)


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


def model_bytes(path: Path) -> int:
    """The model file plus the external data files it references."""
    model = onnx.load(str(path), load_external_data=False)
    files = {path}
    def walk(graph):
        for t in graph.initializer:
            for e in t.external_data:
                if e.key == "location":
                    files.add(path.parent / e.value)
        for n in graph.node:
            for a in n.attribute:
                if a.HasField("g"):
                    walk(a.g)
                for g in a.graphs:
                    walk(g)
    walk(model.graph)
    return sum(f.stat().st_size for f in files if f.is_file())
