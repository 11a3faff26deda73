#!/usr/bin/env python3
"""ONNX node-test conformance of the CUDA runtime (issue 16's acceptance): every case of ONNX's node
tests as `opt run CASE --device cuda --stats` on the case's input_*.pb files (many cases per process,
through `opt run --batch`: one CUDA context for a chunk of cases), the outputs saved as .pb and
compared with output_*.pb at the tolerances tests/python/conformance.py uses (its own comparison:
rtol 1e-3, atol 1e-7 for floats, exact otherwise). Plain python3 + numpy + onnx (no
pytest), so that it runs on the GPU machine; tools/gpu/test.sh's `conformance` group calls it.

Each case is one of:
- pass: right outputs, every node on the GPU (host-side shape arithmetic counts as on the GPU);
- fallback: right outputs, some node ran on the CPU reference kernels: the plan summary's
  `fallback:` lines (node, op, reason) are recorded;
- fail: wrong outputs, or the run failed: what went wrong is recorded;
- unsupported: the reference kernels cannot run the case either (the cases docs/conformance.md lists
  as unsupported, or random outputs that cannot be compared): not run;
- not-run: not started within --time-limit (so that a step under a time limit still writes its JSON;
  the exit status is then 1).
Cases with sequence or optional inputs or outputs run as the equivalent tensor model that
tests/python/conformance.py builds for `opt run` (_tensor_io_model).

    python3 tools/gpu/conformance_cuda.py --device cuda --jobs 12 --json conformance.json
    .venv/bin/python tools/gpu/conformance_cuda.py --device reference --jobs 2 --json /tmp/ref.json

With --device reference (no GPU needed) every case must come out pass or unsupported: that tests the
harness itself. The JSON holds each case (status, ops, fallbacks, max abs error, detail, seconds) and
the counts per op; tools/conformance_table.py --cuda-json FILE turns it into docs/conformance.md's
CUDA column. opt and the cases come from ONNXOPT_OPT and ONNXOPT_SHARED (as for the pytest suite).
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(ROOT / "tools"))
import conformance  # noqa: E402
import roundtrip_check  # noqa: E402
from conformance_table import reference_unsupported, table_op  # noqa: E402

# A batch that hangs is stopped after BATCH_TIMEOUT_S + CASE_TIMEOUT_S per case (or 15 s past
# --time-limit): the case it was in fails, the cases after it run in a new batch.
BATCH_TIMEOUT_S = 60
CASE_TIMEOUT_S = 10
MAX_CHUNK = 50  # cases per opt process at most
STATUSES = ("pass", "fallback", "fail", "unsupported", "not-run")

# The CUDA plan summary (Plan::summary, printed by `opt run --device cuda --stats`): one line per node
# that runs on the CPU. The node reads "node 'NAME' (OP)", "node OP producing 'OUT'" or "node OP".
_FALLBACK = re.compile(r"^fallback: node (?:'(?P<name>.*?)' \((?P<op>[^()\s]+)\)|(?P<op2>\S+)"
                       r"(?: producing '(?P<out>.*?)')?): (?P<reason>.*)$")
_DEVICE = re.compile(r"^device (?P<name>.+) \(compute (?P<cc>[0-9.]+)\)$")


def parse_fallbacks(stdout: str) -> list[dict]:
    """The fallback nodes of `opt run --stats` output: node (name or output), op and reason."""
    found = []
    for line in stdout.splitlines():
        m = _FALLBACK.match(line)
        if m:
            node = m.group("name") if m.group("op") else (m.group("out") or "")
            found.append({"node": node, "op": m.group("op") or m.group("op2"), "reason": m.group("reason")})
    return found


def parse_device(stdout: str) -> str:
    for line in stdout.splitlines():
        m = _DEVICE.match(line)
        if m:
            return f"{m.group('name')} (compute {m.group('cc')})"
    return ""


def max_abs_error(got: np.ndarray, expected: np.ndarray) -> float | None:
    """The largest |got - expected| over the elements (0 where both are the same non-finite value,
    inf where only one is non-finite); None for shape or type mismatches and strings."""
    if got.shape != expected.shape or got.dtype == object or expected.dtype == object:
        return None
    if got.size == 0:
        return 0.0
    try:
        a = got.astype(np.float64)
        b = expected.astype(np.float64)
    except (TypeError, ValueError):
        return None
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    diff = np.where(same, 0.0, diff)
    diff = np.where(np.isnan(diff), np.inf, diff)
    return float(diff.max())


def _first_lines(text: str, n: int = 3, width: int = 400) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:n])[:width]


class _Case:
    """One case on its way through a batch: its record, and what finishing it needs."""

    def __init__(self, model_path: Path, unsupported: dict[str, str], work: Path):
        self.start = time.monotonic()
        self.name = model_path.parent.name
        model, ops, graph_inputs, inputs, outputs, _ = conformance._load_case(model_path)
        self.ops = ops
        self.record = {"case": self.name, "op": table_op(self.name, ops), "ops": ops, "status": "fail",
                       "detail": "", "fallbacks": [], "max_abs_error": None, "device": ""}
        self.places = [str(model_path.parent.parent) + "/", str(work) + "/"]  # say nothing in a message
        self.line = ""  # the batch file's line; empty when the case is decided without running
        self.batch_seconds = 0.0
        if self.name in unsupported:
            self.done("unsupported", f"the reference cannot run it either: {unsupported[self.name]}")
            return
        if len(inputs) != len(graph_inputs):
            self.done("fail", "harness: the case has inputs without data")
            return
        if any(op in conformance.RANDOM_OPS for op in ops):
            why = conformance._random_not_comparable(model, graph_inputs, inputs, outputs)
            if why:
                self.done("unsupported", why)
                return
        rebuilt = conformance._tensor_io_model(model, graph_inputs, inputs, outputs)
        if rebuilt is None:
            self.done("fail", "harness: inputs or outputs of a kind opt run cannot take")
            return
        model, feeds, self.expected = rebuilt
        self.names = [o.name for o in model.graph.output]
        work.mkdir()
        src = work / "case.onnx"
        onnx.save(model, str(src))
        self.out_dir = work / "outputs"
        self.out_dir.mkdir()
        fields = [str(src), "--save-outputs", str(self.out_dir)]
        for input_name, path in feeds:
            fields += ["--input", f"{input_name}={path}"]
        if any("\t" in f or "\n" in f for f in fields):
            self.done("fail", "harness: a path or input name holds a tab or a newline")
            return
        self.line = "\t".join(fields)

    def done(self, status: str, detail: str = "") -> None:
        for place in self.places:
            detail = detail.replace(place, "")
        self.record["status"], self.record["detail"] = status, detail
        self.record["seconds"] = round(time.monotonic() - self.start + self.batch_seconds, 3)
        self.line = ""

    def finish(self, rc: int, stdout: str, stderr: str) -> None:
        """The case's part of the batch output: its exit status, stdout and stderr."""
        self.record["fallbacks"] = parse_fallbacks(stdout)
        self.record["device"] = parse_device(stdout)
        if rc != 0:
            self.done("fail", f"opt run exit {rc}: {_first_lines(stderr or stdout)}")
            return
        got = {}
        for o in self.names:
            f = self.out_dir / (re.sub(r"[/\\:]", "_", o) + ".pb")
            if not f.exists():
                self.done("fail", f"opt run wrote no {f.name}")
                return
            got[o] = numpy_helper.to_array(onnx.TensorProto.FromString(f.read_bytes()))
        errors = [max_abs_error(got[o], self.expected[o]) for o in self.names]
        known = [e for e in errors if e is not None]
        self.record["max_abs_error"] = max(known) if known else None
        result = conformance._compare(self.name, self.ops, self.names, got, self.expected)
        if result.outcome != "pass":
            worst = self.record["max_abs_error"]
            self.done("fail", result.detail + (f" (max abs error {worst:.3g})" if worst is not None else ""))
            return
        self.done("fallback" if self.record["fallbacks"] else "pass")


_BEGIN = re.compile(r"^== case (\d+)$")
_END = re.compile(r"^== case (\d+): exit (-?\d+)$")


def split_batch_output(text: str) -> tuple[dict[int, str], dict[int, int]]:
    """`opt run --batch` output (stdout or stderr) as each case's text, and the exit status of each
    case that ended (a case that began but has no end line crashed or was stopped)."""
    texts: dict[int, list[str]] = {}
    ends: dict[int, int] = {}
    current = None
    for line in text.splitlines():
        m = _BEGIN.match(line)
        if m:
            current = int(m.group(1))
            texts[current] = []
            continue
        m = _END.match(line)
        if m:
            ends[int(m.group(1))] = int(m.group(2))
            current = None
            continue
        if current is not None:
            texts[current].append(line)
    return {n: "\n".join(lines) for n, lines in texts.items()}, ends


def _run_batch(cases: list[_Case], opt: Path, device: str, work: Path, deadline: float) -> None:
    """Runs the cases in `opt run --batch` processes: one for all of them, and after a crash or a
    hang (which fails the case it was in) or a case that failed with a CUDA error (which may leave
    the process's CUDA context unusable) another for those after it."""
    pending = [c for c in cases if c.line]
    attempt = 0
    while pending:
        if time.time() > deadline:
            for c in pending:
                c.done("not-run", "not run: past --time-limit")
            return
        batch = work / f"batch{attempt}.txt"
        batch.write_text("".join(c.line + "\n" for c in pending))
        args = [str(opt), "run", "--batch", str(batch), "--device", device, "--save-format", "pb"]
        if device == "cuda":
            # The node tests hold float32 to float32's tolerance: no TF32 (opt's default lets
            # convolutions use it, as torch's does).
            args += ["--stats", "--no-tf32"]
        limit = min(BATCH_TIMEOUT_S + CASE_TIMEOUT_S * len(pending), max(5.0, deadline - time.time() + 15))
        start = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        try:
            stdout, stderr = proc.communicate(timeout=limit)
            why = f"opt run --batch ended with exit {proc.returncode} in this case"
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            why = f"opt run --batch stopped after {limit:.0f} s, in this case"
        share = (time.monotonic() - start) / len(pending)
        outs, ends = split_batch_output(stdout)
        errs, _ = split_batch_output(stderr)
        rest = []
        suspect = False  # after a CUDA error: a sticky one (an illegal address) fails every later call
        for n, c in enumerate(pending):
            c.batch_seconds = share
            if suspect:
                rest.append(c)
            elif n in ends:
                c.finish(ends[n], outs.get(n, ""), errs.get(n, ""))
                suspect = ends[n] != 0 and "cuda" in errs.get(n, "").lower()
            elif n in outs or n in errs:
                c.done("fail", f"{why}: {_first_lines(errs.get(n, '') or outs.get(n, ''))}")
            else:
                rest.append(c)
        if len(rest) == len(pending):  # no case began: the batch itself failed
            for c in rest:
                c.done("fail", f"opt run --batch exit {proc.returncode}: {_first_lines(stderr or stdout)}")
            return
        pending = rest
        attempt += 1


def run_cases(model_paths: list[Path], opt: Path, device: str, unsupported: dict[str, str],
              deadline: float = float("inf")) -> list[dict]:
    """The cases through `opt run --batch --device DEVICE` (one process, one CUDA context), as
    records for the JSON, in order."""
    with tempfile.TemporaryDirectory(prefix="conf_") as tmp:
        work = Path(tmp)
        cases = []
        for k, path in enumerate(model_paths):
            try:
                cases.append(_Case(path, unsupported, work / f"case{k}"))
            except Exception as e:  # noqa: BLE001 - a harness error is that case's failure, not the run's
                cases.append(_harness_error(path, e))
        _run_batch([c for c in cases if isinstance(c, _Case)], opt, device, work, deadline)
        return [c.record if isinstance(c, _Case) else c for c in cases]


def run_case(model_path: Path, opt: Path, device: str, unsupported: dict[str, str]) -> dict:
    """One case through `opt run --device DEVICE`, as a record for the JSON."""
    return run_cases([model_path], opt, device, unsupported)[0]


def _harness_error(path: Path, e: Exception) -> dict:
    return {"case": path.parent.name, "op": "(harness)", "ops": [], "status": "fail", "fallbacks": [],
            "max_abs_error": None, "device": "", "seconds": 0.0, "detail": f"harness: {type(e).__name__}: {e}"[:400]}


def _run_chunk(job: tuple[list[str], str, str, dict, float]) -> list[dict]:
    paths, opt, device, unsupported, deadline = job
    if time.time() > deadline:
        records = []
        for path in paths:
            name = Path(path).parent.name
            ops = conformance._ops(onnx.load(path))
            records.append({"case": name, "op": table_op(name, ops), "ops": ops, "status": "not-run",
                            "fallbacks": [], "max_abs_error": None, "device": "", "seconds": 0.0,
                            "detail": "not run: past --time-limit"})
        return records
    try:
        return run_cases([Path(p) for p in paths], Path(opt), device, unsupported, deadline)
    except Exception as e:  # noqa: BLE001 - a harness error fails the chunk's cases, not the run
        return [_harness_error(Path(p), e) for p in paths]


def summarize(records: list[dict]) -> dict:
    """Counts per op (the table's rows), the totals, and the fallback reasons by op and reason."""
    per_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    reasons: collections.Counter = collections.Counter()
    for r in records:
        per_op[r["op"]][r["status"]] += 1
        for f in r["fallbacks"]:
            reasons[(f["op"], f["reason"])] += 1
    totals = collections.Counter(r["status"] for r in records)
    return {
        "totals": {s: totals[s] for s in STATUSES},
        "per_op": {op: {s: c[s] for s in STATUSES} for op, c in sorted(per_op.items())},
        "fallback_reasons": [{"op": op, "reason": why, "nodes": n}
                             for (op, why), n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))],
    }


def report(records: list[dict], summary: dict, seconds: float) -> str:
    """The text the log gets: failures, fallback reasons, ops not all passing, and a totals line."""
    lines = []
    fails = [r for r in records if r["status"] == "fail"]
    if fails:
        lines.append(f"failures ({len(fails)}):")
        lines += [f"  {r['case']} ({', '.join(r['ops'])}): {r['detail']}" for r in fails]
    if summary["fallback_reasons"]:
        lines.append("fallback reasons (op: reason: nodes):")
        lines += [f"  {f['op']}: {f['reason']}: {f['nodes']}" for f in summary["fallback_reasons"]]
    partial = {op: c for op, c in summary["per_op"].items() if c["fail"] or c["fallback"]}
    if partial:
        lines.append("ops not all on the GPU and right (op: pass fallback fail unsupported):")
        lines += [f"  {op}: {c['pass']} {c['fallback']} {c['fail']} {c['unsupported']}" for op, c in partial.items()]
    t = summary["totals"]
    not_run = f", NOT RUN {t['not-run']} (past --time-limit)" if t["not-run"] else ""
    lines.append(f"total: pass {t['pass']}, fallback {t['fallback']}, fail {t['fail']}, "
                 f"unsupported {t['unsupported']}{not_run} ({len(records)} cases, {seconds:.0f} s)")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="opt run's --device: cuda, or reference to test the harness")
    parser.add_argument("--jobs", type=int, default=12, help="cases run at once (each opt run is a CUDA context)")
    parser.add_argument("--json", help="where to write the results")
    parser.add_argument("--cases", default="", help="only the cases whose name matches this regular expression")
    parser.add_argument("--node-tests",
                        help="the folder of test_*/model.onnx (default: ONNXOPT_SHARED/onnx-node-tests)")
    parser.add_argument("--opt", help="the opt binary (default: ONNXOPT_OPT, else build/bin/opt)")
    parser.add_argument("--time-limit", type=float, default=0,
                        help="seconds: cases not started by then are recorded as not-run (0: no limit)")
    args = parser.parse_args()
    opt = Path(args.opt) if args.opt else roundtrip_check.opt_path()
    roundtrip_check.require_opt(opt)
    deadline = time.time() + args.time_limit if args.time_limit > 0 else float("inf")
    folder = Path(args.node_tests) if args.node_tests else roundtrip_check.shared_dir() / "onnx-node-tests"
    paths = sorted(folder.glob("test_*/model.onnx"))
    if args.cases:
        paths = [p for p in paths if re.search(args.cases, p.parent.name)]
    if not paths:
        print(f"conformance_cuda: no cases in {folder}", file=sys.stderr)
        return 1
    unsupported = reference_unsupported()
    if args.device == "cuda":
        probe = subprocess.run([str(opt), "run", str(ROOT / "models" / "tiny_cnn" / "model.onnx"), "--device", "cuda"],
                               capture_output=True, text=True, errors="replace")
        if probe.returncode != 0 and ("CUDA device" in probe.stderr or "without CUDA" in probe.stderr):
            print(f"conformance_cuda: no CUDA device: {probe.stderr.strip()}", file=sys.stderr)
            return 1
    start = time.monotonic()
    # Chunks of cases, one `opt run --batch` process each (a process start with its CUDA context and
    # libraries costs seconds on the GPU machine, a case tens of milliseconds); four per worker.
    size = max(1, min(MAX_CHUNK, -(-len(paths) // (4 * max(1, args.jobs)))))
    jobs = [([str(p) for p in paths[k:k + size]], str(opt), args.device, unsupported, deadline)
            for k in range(0, len(paths), size)]
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        records = [r for chunk in pool.map(_run_chunk, jobs) for r in chunk]
    seconds = time.monotonic() - start
    summary = summarize(records)
    print(report(records, summary, seconds))
    if args.json:
        device = next((r["device"] for r in records if r["device"]), "")
        data = {"device": args.device, "gpu": device, "onnx": onnx.__version__,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "commit": os.environ.get("ONNXOPT_COMMIT", ""), "seconds": round(seconds, 1),
                "jobs": args.jobs, **summary, "cases": records}
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    # The exit status says whether the harness ran every case (no device, or cases past
    # --time-limit, are errors); the verdicts are in the output and the JSON.
    return 1 if summary["totals"]["not-run"] else 0


if __name__ == "__main__":
    sys.exit(main())
