#!/usr/bin/env python3
"""The zoo benchmark (issue 50): our CUDA runtime against torch.compile on 30 models no kernel of
ours was tuned for, and the report of one or several runs.

    python3 tools/bench/zoo_bench.py list
    python3 tools/bench/zoo_bench.py run --opt build-gpu/bin/opt --out DIR [--models a,b|FAMILY] [--time-limit S]
    python3 tools/bench/zoo_bench.py run --opt build/bin/opt --out DIR --dry-run --models squeezenet1_1
    python3 tools/bench/zoo_bench.py report DIR1/zoo_bench.json DIR2/zoo_bench.json ...

`run` (on the GPU machine: tools/gpu/test.sh's `zoo` group calls it; needs torch, torchvision,
transformers, timm, onnx and numpy) builds each model of tools/bench/zoo_models.py with random
weights (seeded; batch-norm statistics from two random batches), then for each precision (fp32: the
model as built; fp16: the same weights rounded, `.half()`), each exporter (torch's dynamo exporter
and its TorchScript one; a model whose batch cannot be dynamic is exported once per batch size)
and each batch size (1 and 16 by default):
  1. exports it (gpu_bench.export) and fixes the batch (gpu_bench.fix_batch); an export that fails
     is a row of the results with the exporter's error, and the run goes on;
  2. optimizes it with `opt -O3 --target cuda --target-opset 23`, and with -O2 (the issue's goal:
     -O3 never slower than -O2);
  3. runs each once (`opt run --device cuda --stats`) on the inputs torch gets and checks every
     output against torch fp32 with TF32 off, as gpu_bench does: ours within twice torch's own error
     (fp16, or fp32 with torch's TF32 defaults) plus 1e-3 (fp16) or 1e-4 (fp32) of the output's
     magnitude; the plan's summary says which nodes ran on the CPU fallback and why;
  4. times each with `opt bench --device cuda` (CUDA graphs; the device time of the node steps);
  5. times torch eager and torch.compile(mode="reduce-overhead") (CUDA graphs) on the same inputs,
     once per model, precision and batch (gpu_bench.torch_time).
Everything goes to DIR/zoo_bench.json, written after every step, so a run cut by --time-limit keeps
what it measured. A call of the GPU machine is limited to 10 minutes: run a subset per call
(--models, --precisions, --exporters, --batches) and merge the JSONs with `report`.

--dry-run (any machine, CPU torch): batch 1, fp32, -O3 only; each exporter's file optimized and
run on the reference kernels (`opt run --device reference`), checked against torch on the CPU; no
timing. It shows which models export with which exporter and that opt takes them.

`report` merges the JSONs in order (a later run's row of a case replaces an earlier one unless it
measured less) and writes the per-case table to tools/results/zoo_bench.md and the zoo section of
docs/gpu_benchmarks.md (tools/bench/zoo_report.py).
Exit status: 1 when a step failed or a check did not pass (run), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_bench import export, fix_batch, log, op_histogram, opt_bench, opt_run_outputs, sh, torch_time  # noqa: E402
from zoo_models import REGISTRY, SPECS, build, calibrate, select  # noqa: E402
from zoo_report import fallback_op  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXPORTERS = ("dynamo", "torchscript")
PRECISIONS = ("fp32", "fp16")
LEVELS = ("O3", "O2")
# The share of the output's magnitude that ours may differ by beyond twice torch's own error.
FLOOR = {"fp32": 1e-4, "fp16": 1e-3}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PLAN = re.compile(r"plan: (\d+) nodes: (\d+) device, (\d+) host \((\d+) folded\), (\d+) cpu-fallback, (\d+) view")


def short(e: BaseException) -> str:
    """An exception in a few hundred characters: its start and its end (where torch.export's
    message puts the cause, after its advice)."""
    text = " ".join(ANSI.sub("", str(e)).split())
    return f"{type(e).__name__}: " + (text if len(text) <= 700 else f"{text[:200]} ... {text[-500:]}")


def placements(stats_out: str, ops: dict[str, str]) -> dict:
    """The plan summary of `opt run --stats`: counts per placement and each node on the CPU fallback
    (name, op type from `ops`, the reason)."""
    out: dict = {"fallback": []}
    m = PLAN.search(stats_out)
    if m:
        total, device, host, folded, cpu, view = (int(g) for g in m.groups())
        out.update(nodes=total, device=device, host=host - folded, folded=folded, cpu_fallback=cpu, view=view)
    for line in stats_out.splitlines():
        if line.startswith("fallback: "):
            name, _, why = line[len("fallback: "):].partition(": ")
            out["fallback"].append({"name": name, "op": fallback_op(name, ops), "reason": why})
    return out


def check_outputs(ours: dict, ref32: list, ref_low: list, floor: float) -> dict:
    """Every output of ours (out0, out1, ...) against torch's: gpu_bench.compare's rule per output.
    A shape that differs fails; it is 'unstable' where torch's own lower-precision run changed the
    shape too (a detector's box count at a score threshold)."""
    from gpu_bench import compare

    failures, worst = [], None
    unstable = True
    for i, (r32, rlo) in enumerate(zip(ref32, ref_low)):
        o = ours.get(f"out{i}")
        if o is None or o.shape != r32.shape:
            why = "missing" if o is None else f"shape {list(o.shape)}, torch's {list(r32.shape)}"
            failures.append({"output": i, "why": why})
            unstable &= o is not None and rlo.shape != r32.shape
            continue
        c = compare(o, r32, rlo if rlo.shape == r32.shape else r32, floor)
        if worst is None or c["max_abs_ours_vs_fp32"] / c["tolerance"] > worst[0]:
            worst = (c["max_abs_ours_vs_fp32"] / c["tolerance"], c)
        if not c["pass"]:
            failures.append({"output": i, "why": f"error {c['max_abs_ours_vs_fp32']:.3g} over {c['tolerance']:.3g}"})
            unstable = False
    verdict = "pass" if not failures else "unstable" if unstable else "FAIL"
    return {"verdict": verdict, "pass": not failures, "outputs": len(ref32), "failures": failures[:8],
            **({"worst": worst[1]} if worst else {})}


def numpy_of(t):
    return (t.float() if t.is_floating_point() else t).detach().cpu().numpy()


class Runner:
    def __init__(self, args):
        self.a = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.deadline = time.monotonic() + args.time_limit
        self.device = "cpu" if args.dry_run else "cuda"
        self.failed = False
        self.results: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "dry_run": args.dry_run,
                              "args": {k: v for k, v in vars(args).items() if k not in ("opt", "out", "work")},
                              "models": {}, "cases": [], "torch": [], "errors": []}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def timeout(self) -> float:
        return max(30.0, min(600.0, self.left()))

    def save(self) -> None:
        path = self.out / "zoo_bench.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.results, indent=1))
        tmp.replace(path)

    def error(self, what: str, e: BaseException) -> str:
        msg = f"{type(e).__name__}: {ANSI.sub('', str(e)).strip()[-1500:]}"
        log(f"FAILED {what}: {msg}")
        self.results["errors"].append(f"{what}: {msg}")
        self.failed = True
        self.save()
        return msg

    def environment(self) -> None:
        import torch

        env = {"torch": torch.__version__, "python": platform.python_version(), "device": self.device}
        if self.device == "cuda":
            env.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda,
                       cudnn=torch.backends.cudnn.version(), cudnn_tf32=torch.backends.cudnn.allow_tf32,
                       matmul_tf32=torch.backends.cuda.matmul.allow_tf32)
        for mod in ("torchvision", "transformers", "timm", "onnx", "onnxscript"):
            try:
                env[mod] = __import__(mod).__version__
            except ImportError:
                env[mod] = None
        self.results["environment"] = env
        log(f"environment: {env}")

    def run(self) -> int:
        self.environment()
        self.save()
        for name in self.a.models:
            if self.left() < 60:
                self.error(name, RuntimeError("not run: --time-limit reached"))
                continue
            try:
                self.model(name)
            except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
                self.results["models"].setdefault(name, {})["error"] = self.error(name, e)
        self.results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.save()
        log(f"done: {len(self.results['errors'])} error(s), results in {self.out / 'zoo_bench.json'}")
        return 1 if self.failed else 0

    # --- one model -------------------------------------------------------------------------------

    def model(self, name: str) -> None:
        import torch

        t0 = time.monotonic()
        built = build(name)
        net32 = built.net.to(self.device)
        calibrate(net32, built.inputs, self.device)
        info = {"family": REGISTRY[name].family, "build_s": round(time.monotonic() - t0, 1),
                "params": sum(p.numel() for p in net32.parameters()), "exports": {}}
        self.results["models"][name] = info
        log(f"{name}: built in {info['build_s']} s, {info['params']:,} parameters")
        self.exact: dict[int, list] = {}
        for precision in self.a.precisions:
            net = net32 if precision == "fp32" else copy.deepcopy(net32).half()
            exports = {e: self.export(name, built, net, e, precision) for e in self.a.exporters}
            for batch in self.a.batches:
                if self.left() < 45:
                    self.error(f"{name} {precision} bs{batch}", RuntimeError("not run: --time-limit reached"))
                    continue
                x = self.inputs(built, batch, precision)
                ref32, ref_low = self.references(built, net32, net, batch, x)
                if not self.a.dry_run and not self.a.no_torch:
                    self.torch_times(name, net, x, precision, batch)
                feeds = self.feeds(name, built, x, precision, batch)
                for exporter, path in exports.items():
                    try:
                        self.case(name, built, net, exporter, path, precision, batch, feeds, ref32, ref_low)
                    except Exception as e:  # noqa: BLE001
                        self.row(name, exporter, batch, precision)["error"] = self.error(
                            f"{name} {exporter} {precision} bs{batch}", e)
                if self.device == "cuda":
                    torch.cuda.empty_cache()
            del net
        del net32
        if self.device == "cuda":
            torch.cuda.empty_cache()

    def inputs(self, built, batch: int, precision: str) -> tuple:
        import torch

        dtype = torch.float16 if precision == "fp16" else torch.float32
        return tuple(t.to(self.device, dtype) if t.is_floating_point() else t.to(self.device)
                     for t in built.inputs(batch))

    def references(self, built, net32, net, batch: int, x: tuple) -> tuple[list, list]:
        """Torch fp32 with TF32 off (the reference) and torch at the case's precision with its
        defaults (whose error against the reference sets the tolerance)."""
        import torch

        from zoo_models import _tensors

        with torch.inference_mode():
            if batch not in self.exact:
                flags = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
                torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
                try:
                    self.exact[batch] = [numpy_of(t) for t in _tensors(net32(*self.inputs(built, batch, "fp32")))]
                finally:
                    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags
            low = [numpy_of(t) for t in _tensors(net(*x))]
        return self.exact[batch], low

    def feeds(self, name: str, built, x: tuple, precision: str, batch: int) -> dict:
        import numpy as np

        feeds = {}
        for n, t in zip(built.names, x):
            f = self.work / f"{name}_{precision}_bs{batch}_{n}.npy"
            np.save(f, t.detach().cpu().numpy())
            feeds[n] = f
        return feeds

    def export(self, name: str, built, net, exporter: str, precision: str) -> Path | None:
        """The model exported with a dynamic batch, or None where that fails or the model's batch
        cannot be dynamic (then each case exports its own batch size)."""
        import torch

        key = f"{exporter} {precision}"
        info = self.results["models"][name]["exports"]
        if not REGISTRY[name].dynamic or self.a.dry_run:
            info[key] = {"dynamic": False}
            return None
        path = self.work / f"{name}_{exporter}_{precision}.onnx"
        t0 = time.monotonic()
        try:
            self.export_at(built, net, exporter, precision, 2, path, dynamic=True)
            info[key] = {"dynamic": True, "s": round(time.monotonic() - t0, 1), "bytes": path.stat().st_size}
            log(f"{name}: {key} exported in {info[key]['s']} s")
            return path
        except Exception as e:  # noqa: BLE001 - a static export per batch may still work
            info[key] = {"dynamic": False, "dynamic_error": short(e)}
            log(f"{name}: {key} with a dynamic batch failed ({info[key]['dynamic_error'][:200]}); static per batch")
            return None
        finally:
            torch._dynamo.reset()

    def export_at(self, built, net, exporter: str, precision: str, batch: int, path: Path, dynamic: bool) -> None:
        import warnings

        import torch

        from zoo_models import _tensors

        x = self.inputs(built, batch, precision)
        with torch.inference_mode():
            n_out = len(_tensors(net(*x)))
        axes = {n: built.batch_axes.get(n, 0) for n in built.names} if dynamic else {}
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            export(net, x, built.names, path, exporter=exporter, batch_axes=axes,
                   outputs=[f"out{i}" for i in range(n_out)])

    def row(self, name: str, exporter: str, batch: int, precision: str) -> dict:
        for c in self.results["cases"]:
            if (c["model"], c["exporter"], c["batch"], c["precision"]) == (name, exporter, batch, precision):
                return c
        c = {"model": name, "exporter": exporter, "batch": batch, "precision": precision}
        self.results["cases"].append(c)
        return c

    def case(self, name, built, net, exporter, dynamic_path, precision, batch, feeds, ref32, ref_low) -> None:
        a = self.a
        row = self.row(name, exporter, batch, precision)
        stem = self.work / f"{name}_{exporter}_{precision}_bs{batch}"
        static = stem.with_suffix(".onnx")
        t0 = time.monotonic()
        if dynamic_path is not None:
            fix_batch(dynamic_path, static, batch, built.batch_axes)
        else:
            try:
                self.export_at(built, net, exporter, precision, batch, static, dynamic=False)
            except Exception as e:  # noqa: BLE001 - the exporter's failure is this row's result
                row["error"] = f"export: {short(e)}"
                log(f"{name} {exporter} {precision} bs{batch}: {row['error'][:300]}")
                self.save()
                return
            row["export_s"] = round(time.monotonic() - t0, 1)
        row["nodes"] = {"exported": sum(op_histogram(static).values())}
        paths = {}
        for level in a.levels:
            path = Path(f"{stem}_{level}.onnx")
            t0 = time.monotonic()
            r = sh([a.opt, str(static), f"-{level}", "--target", "cuda", "--target-opset", "23", "-o", str(path)],
                   self.timeout())
            if r.returncode != 0:
                row["error"] = f"opt -{level}: {r.stderr.strip()[-1000:]}"
                self.failed = True
                self.save()
                return
            row.setdefault("opt_s", {})[level] = round(time.monotonic() - t0, 2)
            hist = op_histogram(path)
            row["nodes"][level] = sum(hist.values())
            paths[level] = path
        self.check(row, paths, feeds, ref32, ref_low, precision)
        if not a.dry_run:
            for level, path in paths.items():
                b = opt_bench(a.opt, path, feeds, a.warmup, a.iters, False, self.timeout())
                row.setdefault("ours", {})[level] = {"compute": b.get("compute_ms"), "wall": b.get("latency_ms"),
                                                     "cuda_graph": b.get("cuda_graph")}
                log(f"{name} {exporter} {precision} bs{batch}: ours -{level} {b['compute_ms']['p50']:.4f} ms")
                self.save()
        if not a.keep:
            for p in [static, *paths.values()]:
                p.unlink(missing_ok=True)
        self.save()

    def check(self, row: dict, paths: dict, feeds: dict, ref32: list, ref_low: list, precision: str) -> None:
        import onnx

        device = "reference" if self.a.dry_run else "cuda"
        for level, path in paths.items():
            with tempfile.TemporaryDirectory() as tmp:
                ours, stats_out = opt_run_outputs(self.a.opt, path, feeds, Path(tmp), self.timeout(), device)
            c = check_outputs(ours, ref32, ref_low, FLOOR[precision])
            row["check" if level == self.a.levels[0] else f"check_{level}"] = c
            if not c["pass"]:
                self.failed = True
            if device == "cuda":
                m = onnx.load(str(path), load_external_data=False)
                ops = {n.name: n.op_type for n in m.graph.node}
                row.setdefault("placement", {})[level] = placements(stats_out, ops)
            log(f"{row['model']} {row['exporter']} {precision} bs{row['batch']} -{level}: check {c['verdict']}"
                + (f" {c['failures'][:2]}" if c["failures"] else ""))
            self.save()

    def torch_times(self, name: str, net, x: tuple, precision: str, batch: int) -> None:
        import torch

        rec = next((t for t in self.results["torch"] if (t["model"], t["batch"], t["precision"]) ==
                    (name, batch, precision)), None)
        if rec is None:
            rec = {"model": name, "batch": batch, "precision": precision}
            self.results["torch"].append(rec)
        with torch.inference_mode():
            for mode in ("eager", "compile_cudagraphs"):
                if self.left() < 45:
                    self.error(f"{name} {precision} bs{batch} torch {mode}", RuntimeError("not run: --time-limit"))
                    break
                t0 = time.monotonic()
                try:
                    fn = net
                    if mode != "eager":
                        torch._dynamo.reset()
                        fn = torch.compile(net, mode="reduce-overhead")
                    fn(*x)
                    t = torch_time(fn, x, self.a.warmup, self.a.iters)
                    t["ready_s"] = round(time.monotonic() - t0, 1)
                    rec[mode] = t
                    log(f"{name} {precision} bs{batch}: torch {mode} p50 {t['p50']:.4f} ms")
                except Exception as e:  # noqa: BLE001
                    rec.setdefault("errors", {})[mode] = self.error(f"{name} {precision} bs{batch} torch {mode}", e)
                self.save()
        torch._dynamo.reset()


def parse_list(text: str, allowed: tuple, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise ValueError(f"{what}: {', '.join(bad) or 'none given'} (of {', '.join(allowed)})")
    return list(dict.fromkeys(items))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the models, with their family")
    r = sub.add_parser("run", help="export, optimize, check and time the models against torch")
    r.add_argument("--opt", required=True, help="the opt binary (built with CUDA, except for --dry-run)")
    r.add_argument("--out", required=True, help="folder for zoo_bench.json")
    r.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "zoo_bench"),
                   help="folder for the exported and optimized models")
    r.add_argument("--models", default="all", help="comma-separated model or family names ('list' shows them)")
    r.add_argument("--exporters", default=",".join(EXPORTERS))
    r.add_argument("--precisions", default=",".join(PRECISIONS))
    r.add_argument("--batches", default="1,16")
    r.add_argument("--levels", default=",".join(LEVELS), help="opt levels; the first is the one checked first")
    r.add_argument("--no-torch", action="store_true", help="no torch timings (the checks still run)")
    r.add_argument("--dry-run", action="store_true",
                   help="CPU only: batch 1, fp32, -O3, checked on the reference kernels, no timing")
    r.add_argument("--keep", action="store_true", help="keep the exported and optimized files in --work")
    r.add_argument("--warmup", type=int, default=20)
    r.add_argument("--iters", type=int, default=100)
    r.add_argument("--time-limit", type=float, default=540, help="seconds; later steps are skipped")
    p = sub.add_parser("report", help="merge zoo_bench.json files; write the table and the docs section")
    p.add_argument("results", nargs="+", help="zoo_bench.json files, merged in order")
    p.add_argument("--doc", default=str(ROOT / "docs" / "gpu_benchmarks.md"))
    p.add_argument("--table", default=str(ROOT / "tools" / "results" / "zoo_bench.md"))
    p.add_argument("--merged", help="also write the merged JSON here")
    p.add_argument("--no-chart", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "list":
        for s in SPECS:
            print(f"{s.name:40s} {s.family:13s} {s.what}")
        return 0
    if a.cmd == "report":
        import zoo_report

        return zoo_report.main(a)
    try:
        a.models = select(a.models)
        a.exporters = parse_list(a.exporters, EXPORTERS, "exporters")
        a.precisions = parse_list(a.precisions, PRECISIONS, "precisions")
        a.levels = parse_list(a.levels, LEVELS, "levels")
        a.batches = [int(b) for b in a.batches.split(",") if b.strip()]
        if not a.batches or min(a.batches) < 1:
            raise ValueError("batches: positive integers")
    except ValueError as e:
        ap.error(str(e))
    if not Path(a.opt).exists() and shutil.which(a.opt) is None:
        ap.error(f"{a.opt}: no such file")
    if a.dry_run:
        a.batches, a.precisions, a.levels = [1], ["fp32"], a.levels[:1]
    return Runner(a).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
