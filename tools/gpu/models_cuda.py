#!/usr/bin/env python3
"""Every model of the corpus on the CUDA runtime (issue 16's acceptance): the models of models/, the
shared real models (ONNXOPT_SHARED/models/real) and the onnx package's light models, as
tests/python/model_corpus.py lists them. Each is optimized (`opt MODEL -o OUT -O2`), then
`opt check OUT --runner cuda --against reference --seed 0` compares the CUDA runtime with the reference
executor on the same seeded inputs at opt check's tolerances, and `opt run OUT --device cuda --stats`
gives the nodes that run on the CPU (fallbacks). The inputs are those the reference-run test uses
(model_corpus.input_args: the golden manifest's shapes and values), the four slow light models run at
a smaller image (SMALLER_INPUT), and the models no runtime can run (NOT_RUNNABLE) must fail as that
test asserts: exit 1, one `opt: error:` line naming the file and saying what is missing.
Plain python3 + numpy + onnx (no pytest); tools/gpu/test.sh's `models` group calls it.

    python3 tools/gpu/models_cuda.py --runner cuda --against reference --jobs 12 --json models.json
    .venv/bin/python tools/gpu/models_cuda.py --runner reference --against reference --jobs 2

With --precision fp16|bf16 (issue 19's acceptance on the GPU): each model is converted too (`opt MODEL -o
OUT -O2 --precision P`), and `opt check MODEL OUT --runner cuda --against reference` holds the converted
model on the CUDA runtime to the float32 original on the reference kernels, at --atol/--rtol (default 0.05
for fp16, 0.2 for bf16: a network's worth of the type's rounding, as tests/python/test_convert_precision.py).

One line per model (PASS / FAIL / EXPECTED-ERROR / NOT-RUN, max abs error, fallback count, seconds),
then a `total:` line; the JSON has each model's record. Exit status 1 when any model fails or was not
run (--time-limit: models not started by then are recorded as not-run, and the JSON is still written).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_corpus  # noqa: E402
import roundtrip_check  # noqa: E402
from conformance_cuda import parse_fallbacks  # noqa: E402

STEP_TIMEOUT_S = 300
RUNNERS = ("cuda", "reference", "onnxruntime")


def _opt(opt: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(opt), *map(str, args)], capture_output=True, text=True, errors="replace",
                          timeout=STEP_TIMEOUT_S)


def _tail(proc: subprocess.CompletedProcess, width: int = 500) -> str:
    text = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
    return " | ".join(text[-4:])[:width]


PRECISION_TOLERANCE = {"fp16": "0.05", "bf16": "0.2"}


def run_model(case_id: str, path: Path, opt: Path, runner: str, against: str, precision: str = "") -> dict:
    """One model: optimized (converted to `precision` when set), checked on `runner` against
    `against` (against the original when converted), its fallbacks on `runner`."""
    start = time.monotonic()
    record = {"model": case_id, "path": str(path), "status": "fail", "detail": "", "max_abs_error": None,
              "fallbacks": None, "outputs": 0}

    def done(status: str, detail: str = "") -> dict:
        record["status"], record["detail"] = status, detail
        record["seconds"] = round(time.monotonic() - start, 2)
        return record

    device = runner if runner in ("cuda", "reference") else "reference"
    if case_id in model_corpus.NOT_RUNNABLE:
        needle, why = model_corpus.NOT_RUNNABLE[case_id]
        proc = _opt(opt, "run", path, "--device", device)
        problem = roundtrip_check.error_line_problem(proc, path)
        if problem is not None:
            return done("fail", f"not runnable ({why}), but: {problem}")
        if needle not in proc.stderr:
            return done("fail", f"not runnable ({why}): the error does not say {needle!r}: {proc.stderr.strip()}")
        return done("expected-error", proc.stderr.strip())
    with tempfile.TemporaryDirectory(prefix="model_") as tmp:
        work = Path(tmp)
        model = onnx.load(path, load_external_data=False)
        if case_id in model_corpus.SMALLER_INPUT:
            path = model_corpus.smaller(model, model_corpus.SMALLER_INPUT[case_id], work)
            record["smaller_input"] = model_corpus.SMALLER_INPUT[case_id]
        args = model_corpus.input_args(model, path, work)
        record["args"] = args
        optimized = work / "optimized.onnx"
        convert = ["--precision", precision] if precision else []
        proc = _opt(opt, path, "-o", optimized, "-O2", *convert)
        if proc.returncode != 0:
            return done("fail", f"opt -O2 {' '.join(convert)} exit {proc.returncode}: {_tail(proc)}")
        report = work / "check.json"
        pair = [path, optimized] if precision else [optimized]
        tol = ["--atol", PRECISION_TOLERANCE[precision], "--rtol", PRECISION_TOLERANCE[precision]] if precision else []
        proc = _opt(opt, "check", *pair, "--runner", runner, "--against", against, "--seed", "0", *args,
                    *tol, "--report", report)
        check_out = proc
        if report.is_file():
            outputs = json.loads(report.read_text()).get("check", {}).get("outputs", [])
            record["outputs"] = len(outputs)
            errors = [o["max_abs_error"] for o in outputs if isinstance(o.get("max_abs_error"), (int, float))]
            record["max_abs_error"] = max(errors) if errors else None
            record["failed_outputs"] = [{k: o.get(k) for k in ("name", "dtype", "max_abs_error", "mismatches",
                                                               "atol", "rtol", "problem") if k in o}
                                        for o in outputs if not o.get("passed", True)]
        if device == "cuda":
            run = _opt(opt, "run", optimized, "--device", "cuda", "--stats", "--seed", "0", *args)
            if run.returncode == 0:
                record["fallbacks"] = parse_fallbacks(run.stdout)
                record["whole_run_on_cpu"] = whole_run_reason(run.stdout)
                plan = [line for line in run.stdout.splitlines() if line.startswith(("plan:", "memory:"))]
                record["plan"] = plan
            else:
                record["run_error"] = _tail(run)
    if check_out.returncode != 0 or "check: passed" not in check_out.stdout:
        return done("fail", f"opt check exit {check_out.returncode}: {_tail(check_out)}")
    return done("pass")


def _run_one(job: tuple[str, str, str, str, str, float, str]) -> dict:
    case_id, path, opt, runner, against, deadline, precision = job
    if time.time() > deadline:
        return {"model": case_id, "path": path, "status": "not-run", "max_abs_error": None, "fallbacks": None,
                "outputs": 0, "seconds": 0.0, "detail": "not run: past --time-limit"}
    try:
        return run_model(case_id, Path(path), Path(opt), runner, against, precision)
    except Exception as e:  # noqa: BLE001 - a harness error is that model's failure, not the run's
        return {"model": case_id, "path": path, "status": "fail", "max_abs_error": None, "fallbacks": None,
                "outputs": 0, "seconds": 0.0, "detail": f"harness: {type(e).__name__}: {e}"[:500]}


_WHOLE_RUN = "plan: not usable for these inputs ("


def whole_run_reason(stdout: str) -> str | None:
    """Why the CUDA runner sent the whole run to the reference executor (its plan summary's
    'plan: not usable for these inputs (WHY): ...' line), or None when it ran its plan."""
    for text in stdout.splitlines():
        if text.startswith(_WHOLE_RUN):
            why = text[len(_WHOLE_RUN):]
            return why[: why.rfind("): ")] if "): " in why else why
    return None


def line(r: dict) -> str:
    err = "-" if r["max_abs_error"] is None else f"{r['max_abs_error']:.3g}"
    fb = "-" if r["fallbacks"] is None else str(len(r["fallbacks"]))
    text = f"{r['status'].upper():<14} {r['model']}: max abs {err}, fallbacks {fb} ({r['seconds']:.1f} s)"
    if r["status"] == "fail":
        text += f"\n    {r['detail']}"
    if r.get("whole_run_on_cpu"):
        text += f"\n    WHOLE RUN ON THE CPU: {r['whole_run_on_cpu']}"
    if r.get("run_error"):
        text += f"\n    opt run --device cuda: {r['run_error']}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runner", default="cuda", choices=RUNNERS, help="the runner under test")
    parser.add_argument("--against", default="reference", choices=RUNNERS, help="the expected side")
    parser.add_argument("--jobs", type=int, default=12, help="models run at once")
    parser.add_argument("--json", help="where to write the results")
    parser.add_argument("--models", default="", help="only the models whose id matches this regular expression")
    parser.add_argument("--opt", help="the opt binary (default: ONNXOPT_OPT, else build/bin/opt)")
    parser.add_argument("--precision", default="", choices=["", "fp16", "bf16"],
                        help="convert each model and check it against its float32 original")
    parser.add_argument("--time-limit", type=float, default=0,
                        help="seconds: models not started by then are recorded as not-run (0: no limit)")
    args = parser.parse_args()
    deadline = time.time() + args.time_limit if args.time_limit > 0 else float("inf")
    opt = Path(args.opt) if args.opt else roundtrip_check.opt_path()
    roundtrip_check.require_opt(opt)
    cases = model_corpus.models()
    if args.models:
        cases = [(i, p) for i, p in cases if re.search(args.models, i)]
    if not cases:
        print("models_cuda: no models", file=sys.stderr)
        return 1
    start = time.monotonic()
    # The largest first, so that the slowest models do not start last.
    order = sorted(range(len(cases)), key=lambda k: -cases[k][1].stat().st_size)
    jobs = {k: (cases[k][0], str(cases[k][1]), str(opt), args.runner, args.against, deadline, args.precision)
            for k in order}
    records: dict[int, dict] = {}
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(_run_one, jobs[k]): k for k in order}
        for future in concurrent.futures.as_completed(futures):
            records[futures[future]] = future.result()
    results = [records[k] for k in range(len(cases))]
    seconds = time.monotonic() - start
    for r in results:
        print(line(r))
    counts = {s: sum(r["status"] == s for r in results) for s in ("pass", "fail", "expected-error", "not-run")}
    fallbacks = sum(len(r["fallbacks"]) for r in results if r["fallbacks"])
    with_fallbacks = sum(1 for r in results if r["fallbacks"])
    whole = sum(1 for r in results if r.get("whole_run_on_cpu"))
    not_run = f", NOT RUN {counts['not-run']} (past --time-limit)" if counts["not-run"] else ""
    print(f"total: pass {counts['pass']}, fail {counts['fail']}, expected error {counts['expected-error']}{not_run} "
          f"({len(results)} models, {with_fallbacks} with fallbacks, {fallbacks} fallback nodes, "
          f"{whole} run wholly on the CPU; "
          f"runner {args.runner} against {args.against}{'; ' + args.precision if args.precision else ''}; "
          f"{seconds:.0f} s)")
    if args.json:
        data = {"runner": args.runner, "against": args.against, "precision": args.precision,
                "onnx": onnx.__version__,
                "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "seconds": round(seconds, 1), "jobs": args.jobs, "totals": counts, "models": results}
        Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    return 1 if counts["fail"] or counts["not-run"] else 0


if __name__ == "__main__":
    sys.exit(main())
