#!/usr/bin/env python3
"""The LLM generation benchmark (issue 49): Llama models with random weights, fp16, exported with
their KV cache: generation by our runtime against Hugging Face and against the bandwidth bound.

    python3 tools/bench/llm_bench.py --size 1b,8b --opt build-gpu/bin/opt --work DIR --out DIR
    python3 tools/bench/llm_bench.py --size tiny --device cpu --opt build/bin/opt --out DIR
    python3 tools/bench/llm_bench.py --from-json A/llm_bench.json [B/llm_bench.json ...] --out DIR [--chart x.png]

Sizes: tiny (2 layers, for smoke tests), 1b (Llama-3.2-1B's configuration: hidden 2048, 16
layers, 32 heads, 8 KV heads, intermediate 8192, vocabulary 128256, tied embeddings) and 8b
(Llama-3-8B's: hidden 4096, 32 layers, intermediate 14336, untied). Each size in the order given:
  build (--phase build or all; cached in --work DIR/SIZE, a later call reuses it):
    the model built from its configuration with seeded random weights, in fp16 on the device (as
    gpu_bench and zoo_bench make their fp16 models: torch's own fp16, then exported); exported with
    the KV cache by models/decoders/export.py's WithPast and export_program (dynamo exporter, eager
    attention, the logits of the last position only, as generate computes them); optimized with
    `opt -O3 --target cuda --target-opset 23`. Files over 2 GB keep their weights in external data.
  time (--phase time or all):
    check    greedy ids of 2 prompts of 16 tokens, --check-tokens new ones: ours against Hugging
             Face generate's (the same fp16 weights). Reported, never fatal: past the tiny size,
             fp16 ties between random weights' logits may flip an id (the first mismatch is given).
    ours     onnxopt.Generator (runner cuda, or reference with --device cpu), step-wise: prefill is
             the first step() of a generation with a prompt of N tokens at batch 1; decode is the
             median of --decode-steps step()s after --warmup ones, each timed alone, at batch B after
             a prompt of --context tokens; tokens/s = B / that median. A step returns the ids on the
             host, so perf_counter around it is the step's whole time. Without the Python package
             (or with --ours cli), `opt generate`'s own prefill and decode figures instead.
    torch    prefill: the forward on the prompt (logits of the last position, its argmax), eager and
             under torch.compile(mode="reduce-overhead"), timed as ours (synchronize, perf_counter,
             median of --runs after --warmup). decode: Hugging Face generate with a static cache,
             which on a GPU compiles its decoding steps with torch.compile(mode="reduce-overhead");
             each step's time from a stopping criterion that synchronizes and reads the clock;
             the median of --decode-steps after --warmup, in a second generate (the first compiles).
    bound    tokens/s = copy bandwidth / (weight + KV cache bytes per decode step) * batch: the
             device-to-device copy bandwidth measured with torch (bytes read + written), the
             weights read once per step (an untied input embedding only by its looked-up rows) and
             the cache of the context read once: 2 * layers * kv_heads * head_dim * 2 bytes *
             context * batch.
A figure that fails (out of memory, a step our runtime refuses) is the error's one line in the table
and the JSON; the run goes on. --budget-s: a figure not started before it runs out is "skipped".
Results go to OUT/llm_bench.json (written after every figure) and OUT/llm_bench.md.
Exit status: 0, also where figures failed; 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "models" / "decoders"))

from llm_report import markdown, write_chart  # noqa: E402
from llm_torch import (SEED, SIZES, build_torch, copy_bandwidth, export_model, fingerprint, median_ms,  # noqa: E402
                       model_bytes, torch_decode, torch_greedy, torch_prefill)

# Seconds a figure needs left of the budget to start: an uncached build of each size (rough: the
# 8B model's export and optimization write 16 GB each), and a figure that compiles torch first.
BUILD_S = {"tiny": 30, "1b": 150, "8b": 420}
COMPILE_S = 90
# The ops of the optimized file that show what -O3 --target cuda fused (docs/llm.md).
FUSED = ("Attention", "RotaryEmbedding", "ai.onnxopt.SkipRMSNormalization", "ai.onnxopt.SwiGlu", "MatMul")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CHECK_ROWS, CHECK_PROMPT = 2, 16


class NotRun(Exception):
    """A figure that cannot be measured for a reason reported elsewhere (ours did not load)."""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def one_line(e: BaseException) -> str:
    """An error as one line of at most 200 characters: its type, its message's first line and, where
    there are more, its last (where torch's messages put the cause)."""
    from report_text import portable

    lines = [ln.strip() for ln in ANSI.sub("", str(e)).splitlines() if ln.strip()]
    text = f"{type(e).__name__}: {lines[0] if len(lines) == 1 else (lines[0] + ' ... ' + lines[-1]) if lines else ''}"
    text = portable(text)
    return text if len(text) <= 200 else text[:197] + "..."


def version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def prompts(vocab: int, batch: int, length: int, salt: int) -> list[list[int]]:
    import numpy as np

    rng = np.random.default_rng(SEED + 7919 * salt + length)
    return rng.integers(3, vocab, size=(batch, length)).tolist()


# --- ours ----------------------------------------------------------------------------------------


class OursPython:
    """onnxopt.Generator, step by step."""

    source = "python"

    def __init__(self, path: Path, runner: str, max_new: int):
        import onnxopt

        self.gen = onnxopt.Generator(str(path), runner=runner, max_new_tokens=max_new)

    def steps(self, rows: list[list[int]], n: int) -> tuple[list[float], list[list[int]]]:
        """Seconds of each of the first n steps after start(rows), and each step's ids."""
        self.gen.start(rows)
        times, ids = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            ids.append(self.gen.step())
            times.append(time.perf_counter() - t0)
        return times, ids

    def prefill(self, rows, warmup: int, runs: int) -> dict:
        times = [self.steps(rows, 1)[0][0] for _ in range(warmup + runs)]
        return median_ms(times[warmup:])

    def decode(self, rows, warmup: int, steps: int) -> dict:
        times, _ = self.steps(rows, 1 + warmup + steps)
        out = median_ms(times[1 + warmup:])
        out["prefill_ms"] = 1e3 * times[0]
        out["generator_stats"] = self.gen.stats
        return out

    def greedy(self, rows, n: int) -> list[list[int]]:
        _, ids = self.steps(rows, n)
        return [[step[r] for step in ids] for r in range(len(rows))]


class OursCli:
    """`opt generate`, a process per figure: its own prefill time and decode throughput (the mean of
    every decode step, the first ones included)."""

    source = "cli"
    PREFILL = re.compile(r"^prefill ([0-9.]+) ms", re.M)
    DECODE = re.compile(r"^decode\s+(\d+) steps in ([0-9.]+) ms", re.M)

    def __init__(self, opt: str, path: Path, device: str, timeout: float):
        self.opt, self.path, self.device, self.timeout = opt, path, device, timeout

    def run(self, rows, n: int) -> str:
        cmd = [self.opt, "generate", str(self.path), "--max-new-tokens", str(n), "--device", self.device]
        for row in rows:
            cmd += ["--input-ids", ",".join(map(str, row))]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=self.timeout)
        if r.returncode != 0:
            raise RuntimeError((r.stderr.strip().splitlines() or [f"opt generate: exit {r.returncode}"])[-1])
        return r.stdout

    def prefill(self, rows, warmup: int, runs: int) -> dict:
        out = [float(self.PREFILL.search(self.run(rows, 1)).group(1)) / 1e3 for _ in range(1 + runs)]
        return median_ms(out[1:])

    def decode(self, rows, warmup: int, steps: int) -> dict:
        text = self.run(rows, 1 + warmup + steps)
        n, ms = self.DECODE.search(text).groups()
        per_step = float(ms) / int(n)
        return {"ms": per_step, "runs": int(n), "mean_of_all_steps": True,
                "prefill_ms": float(self.PREFILL.search(text).group(1))}

    def greedy(self, rows, n: int) -> list[list[int]]:
        lines = [ln for ln in self.run(rows, n).splitlines() if ln.startswith("ids ")]
        return [[int(t) for t in ln.split(": ", 1)[1].split(",")][len(rows[0]):] for ln in lines]


# --- the run -------------------------------------------------------------------------------------


class Bench:
    def __init__(self, a):
        self.a = a
        self.out = Path(a.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(a.work)
        self.deadline = time.monotonic() + a.budget_s
        self.results: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "device": a.device,
                              "args": {k: v for k, v in vars(a).items() if k not in ("opt", "out", "work")},
                              "sizes": {}, "errors": []}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def save(self) -> None:
        for name, text in (("llm_bench.json", json.dumps(self.results, indent=1)),
                           ("llm_bench.md", markdown(self.results))):
            tmp = self.out / (name + ".tmp")
            tmp.write_text(text)
            tmp.replace(self.out / name)

    def figure(self, rec: dict, key: str, what: str, need_s: float, fn) -> dict:
        """rec[key] = fn(), or the error's one line, or skipped where less than need_s is left."""
        if self.left() < need_s:
            rec[key] = {"skipped": f"budget ({max(0, int(self.left()))} s left)"}
            log(f"{what}: skipped, {self.left():.0f} s of the budget left")
        else:
            t0 = time.monotonic()
            try:
                rec[key] = fn()
                log(f"{what}: {brief(rec[key])} ({time.monotonic() - t0:.1f} s)")
            except NotRun as e:
                rec[key] = {"skipped": str(e)}
            except Exception as e:  # noqa: BLE001 - a figure's failure is its result
                rec[key] = {"error": one_line(e)}
                self.results["errors"].append(f"{what}: {rec[key]['error']}")
                log(f"FAILED {what}: {rec[key]['error']}")
            self.release()
        self.save()
        return rec[key]

    def release(self) -> None:
        import gc

        import torch

        gc.collect()
        if self.a.device == "cuda":
            torch.cuda.empty_cache()

    def environment(self) -> None:
        import torch
        import transformers

        env = {"python": platform.python_version(), "torch": torch.__version__,
               "transformers": transformers.__version__}
        if self.a.device == "cuda":
            env.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda)
        env.update({mod: version(mod) for mod in ("onnx", "onnxscript", "onnxopt")})
        self.results["environment"] = env
        log(f"environment: {env}")

    def run(self) -> int:
        self.environment()
        self.save()
        for size in self.a.size:
            rec = self.results["sizes"].setdefault(size, {"config": SIZES[size], "prefill": {}, "decode": {}})
            cached = (self.work / size / "meta.json").exists()
            need = 60 if cached else BUILD_S[size]
            if self.left() < need:
                rec["skipped"] = f"budget ({self.left():.0f} s left, {'a run' if cached else 'a build'} needs {need} s)"
                log(f"{size}: skipped, {rec['skipped']}")
                continue
            try:
                self.size(size, rec)
            except Exception as e:  # noqa: BLE001 - the next size may still run
                rec["error"] = one_line(e)
                self.results["errors"].append(f"{size}: {rec['error']}")
                log(f"FAILED {size}: {rec['error']}")
            self.release()
            self.save()
        self.results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.save()
        log(f"done: {len(self.results['errors'])} error(s); {self.out / 'llm_bench.md'}")
        return 0

    def size(self, size: str, rec: dict) -> None:
        t0 = time.monotonic()
        model = build_torch(size, self.a.device)
        rec.update(model_bytes(model))
        log(f"{size}: built in {time.monotonic() - t0:.1f} s, {rec['params']:,} parameters")
        path = self.build(size, model, rec)
        if self.a.phase != "build":
            self.time(size, model, path, rec)
        del model

    # --- build: export and optimize, cached ---------------------------------------------------------

    def build(self, size: str, model, rec: dict) -> Path:
        d = self.work / size
        optimized = d / "optimized" / "model.onnx"
        meta_file = d / "meta.json"
        print_ = fingerprint(model)
        if meta_file.exists() and optimized.exists():
            meta = json.loads(meta_file.read_text())
            if meta.get("config") == SIZES[size] and meta.get("fingerprint") == print_:
                rec["build"] = {**meta, "cached": True}
                log(f"{size}: reusing {optimized}")
                return optimized
            log(f"{size}: the cached files are of other weights or another configuration: built again")
        if self.a.phase == "time":
            raise RuntimeError(f"no optimized model in {d}: run --phase build first")
        shutil.rmtree(d, ignore_errors=True)
        meta: dict = {"config": SIZES[size], "fingerprint": print_}
        exported = self.stage(d / "exported", lambda p: export_model(model, p, size != "tiny"), meta, "export_s")
        log(f"{size}: exported in {meta['export_s']} s")
        opt = [self.a.opt, str(exported), "-O3", "--target", "cuda", "--target-opset", "23"]

        def optimize(p: Path) -> None:
            r = subprocess.run([*opt, "-o", str(p)], capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"opt -O3: {(r.stderr.strip().splitlines() or ['exit ' + str(r.returncode)])[-1]}")

        optimized = self.stage(d / "optimized", optimize, meta, "opt_s")
        from gpu_bench import op_histogram

        before, after = op_histogram(exported), op_histogram(optimized)
        meta.update(nodes={"exported": sum(before.values()), "optimized": sum(after.values())},
                    fused={op: after.get(op, 0) for op in FUSED},
                    bytes=sum(f.stat().st_size for f in optimized.parent.iterdir()))
        log(f"{size}: optimized in {meta['opt_s']} s: {meta['nodes']}, {meta['fused']}")
        if not self.a.keep_exported:
            shutil.rmtree(exported.parent)
        meta_file.write_text(json.dumps(meta, indent=1))
        rec["build"] = {**meta, "cached": False}
        self.save()
        return optimized

    @staticmethod
    def stage(d: Path, make, meta: dict, key: str) -> Path:
        """make(DIR.tmp/model.onnx), then DIR.tmp renamed DIR: a cut run leaves no file to reuse."""
        tmp = d.with_name(d.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        t0 = time.monotonic()
        make(tmp / "model.onnx")
        meta[key] = round(time.monotonic() - t0, 1)
        tmp.rename(d)
        return d / "model.onnx"

    # --- time ----------------------------------------------------------------------------------------

    def ours(self, path: Path) -> tuple[object, str | None]:
        """onnxopt.Generator where the package has the runner, else `opt generate` (--ours auto);
        with why the package was not used."""
        a = self.a
        runner = "cuda" if a.device == "cuda" else "reference"
        if a.ours == "cli":
            return OursCli(a.opt, path, runner, max(60.0, self.left())), None
        try:
            import onnxopt

            if runner not in onnxopt.runners():
                raise RuntimeError(f"this onnxopt has no {runner} runner")
            return OursPython(path, runner, max(a.check_tokens, 1 + a.warmup + a.decode_steps)), None
        except Exception as e:  # noqa: BLE001 - a package that cannot load leaves `opt generate`
            if a.ours == "python":
                raise
            log(f"ours: onnxopt.Generator: {one_line(e)}; timing `opt generate` instead")
            return OursCli(a.opt, path, runner, max(60.0, self.left())), one_line(e)

    def time(self, size: str, model, path: Path, rec: dict) -> None:
        a = self.a
        if "bandwidth" not in self.results:
            self.figure(self.results, "bandwidth", "copy bandwidth", 5, lambda: copy_bandwidth(a.device))
        for b in a.batches:
            rec["decode"].setdefault(str(b), {})["bound"] = self.bound(rec, b)
        loaded: list = []

        def load() -> dict:
            ours, why = self.ours(path)
            loaded.append(ours)
            return {"source": ours.source, **({"python_error": why} if why else {})}

        self.figure(rec, "ours_load", f"{size} ours: load", 20, load)
        self.time_ours(size, model, loaded[0] if loaded else None, rec)
        loaded.clear()
        self.release()
        if not a.no_torch:
            self.time_torch(size, model, rec)

    def time_ours(self, size: str, model, ours, rec: dict) -> None:
        a = self.a
        vocab = model.config.vocab_size

        def need():
            if ours is None:
                raise NotRun("ours did not load")
            return ours

        rows = prompts(vocab, CHECK_ROWS, CHECK_PROMPT, 0)
        self.figure(rec, "check", f"{size} check", 10, lambda: self.check(need(), model, rows))
        for n in a.prefill:
            rows = prompts(vocab, 1, n, 1)
            self.figure(rec["prefill"].setdefault(str(n), {}), "ours", f"{size} prefill {n} ours", 10,
                        lambda: need().prefill(rows, a.warmup, a.runs))
        for b in a.batches:
            rows = prompts(vocab, b, a.context, 2)
            self.figure(rec["decode"][str(b)], "ours", f"{size} decode bs{b} ours", 10,
                        lambda: per_token(need().decode(rows, a.warmup, a.decode_steps), b))

    def time_torch(self, size: str, model, rec: dict) -> None:
        a = self.a
        vocab = model.config.vocab_size
        compile_s = COMPILE_S if a.device == "cuda" else 5
        for n in a.prefill:
            rows = prompts(vocab, 1, n, 1)
            self.figure(rec["prefill"].setdefault(str(n), {}), "torch_eager", f"{size} prefill {n} torch eager", 10,
                        lambda: torch_prefill(model, rows, a.warmup, a.runs, False))
        for b in a.batches:
            rows = prompts(vocab, b, a.context, 2)
            self.figure(rec["decode"][str(b)], "torch", f"{size} decode bs{b} torch generate", compile_s,
                        lambda: per_token(torch_decode(model, rows, a.warmup, a.decode_steps), b))
        if a.device == "cuda" and not a.no_compile:
            for n in a.prefill:
                rows = prompts(vocab, 1, n, 1)
                self.figure(rec["prefill"][str(n)], "torch_compile", f"{size} prefill {n} torch compile", compile_s,
                            lambda: torch_prefill(model, rows, a.warmup, a.runs, True))

    def check(self, ours, model, rows) -> dict:
        n = self.a.check_tokens
        mine = ours.greedy(rows, n)
        theirs = torch_greedy(model, rows, n)
        first = None
        for r, i in ((r, i) for r in range(len(rows)) for i in range(n)):
            got = mine[r][i] if i < len(mine[r]) else None
            if first is None and got != theirs[r][i]:
                first = {"row": r, "position": i, "ours": got, "torch": theirs[r][i]}
        return {"rows": len(rows), "prompt": len(rows[0]), "tokens": n, "ours": mine, "torch": theirs,
                "agree": first is None, "first_mismatch": first}

    def bound(self, rec: dict, batch: int) -> dict:
        bw = self.results.get("bandwidth", {}).get("gb_per_s")
        step = rec["weight_bytes_read_per_step"] + rec["kv_bytes_per_token"] * self.a.context * batch
        out = {"bytes_per_step": step, "context": self.a.context}
        if bw:
            out.update(gb_per_s=bw, tokens_per_s=bw * 1e9 / step * batch)
        return out


def per_token(step: dict, batch: int) -> dict:
    step["tokens_per_s"] = batch / (step["ms"] / 1e3)
    return step


def brief(fig: dict) -> str:
    if "tokens_per_s" in fig:
        return f"{fig['tokens_per_s']:.1f} tokens/s ({fig['ms']:.3f} ms per step)"
    if "ms" in fig:
        return f"{fig['ms']:.3f} ms"
    if "agree" in fig:
        return "ids agree" if fig["agree"] else f"first mismatch {fig['first_mismatch']}"
    if "gb_per_s" in fig:
        return f"{fig['gb_per_s']:.0f} GB/s"
    return "ready"


def int_list(text: str, what: str) -> list[int]:
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise ValueError(f"{what}: positive integers, comma-separated (got '{text}')")
    return out


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1b,8b", help="comma-separated: tiny, 1b, 8b (run in this order)")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: our reference runner and eager torch (to test the script without a GPU)")
    ap.add_argument("--phase", choices=("all", "build", "time"), default="all")
    ap.add_argument("--opt", default=os.environ.get("ONNXOPT_OPT", str(ROOT / "build-gpu" / "bin" / "opt")))
    ap.add_argument("--work", default=str(Path(os.environ.get("TMPDIR", "/tmp")) / "llm_bench"),
                    help="the exported and optimized models, one folder per size, reused by later calls")
    ap.add_argument("--out", required=True, help="folder for llm_bench.json and llm_bench.md")
    ap.add_argument("--budget-s", type=float, default=570, help="figures not started by then are skipped")
    ap.add_argument("--prefill", default="128,512,2048", help="prompt lengths of the prefill figures")
    ap.add_argument("--batches", default="1,8,32", help="batch sizes of the decode figures")
    ap.add_argument("--context", type=int, default=512, help="the prompt before the decode steps")
    ap.add_argument("--warmup", type=int, default=3, help="runs (prefill) or steps (decode) not timed")
    ap.add_argument("--runs", type=int, default=10, help="timed prefill runs")
    ap.add_argument("--decode-steps", type=int, default=32, help="timed decode steps")
    ap.add_argument("--check-tokens", type=int, default=8, help="new ids compared with torch's")
    ap.add_argument("--ours", choices=("auto", "python", "cli"), default="auto",
                    help="onnxopt.Generator (python) or `opt generate` (cli); auto: python where importable")
    ap.add_argument("--no-torch", action="store_true", help="no torch figures (the id check still runs)")
    ap.add_argument("--no-compile", action="store_true", help="no torch.compile prefill figures")
    ap.add_argument("--keep-exported", action="store_true", help="keep the exported file beside the optimized")
    ap.add_argument("--from-json", nargs="+", metavar="JSON",
                    help="write OUT/llm_bench.md (and --chart) from these results, merged (a later size replaces "
                         "an earlier one's); no run")
    ap.add_argument("--chart", help="also write a PNG chart of the figures here (needs matplotlib)")
    a = ap.parse_args(argv)
    try:
        a.size = list(dict.fromkeys(t.strip() for t in a.size.split(",") if t.strip()))
        bad = [s for s in a.size if s not in SIZES]
        if bad or not a.size:
            raise ValueError(f"size: {', '.join(bad) or 'none given'} (of {', '.join(SIZES)})")
        a.prefill = int_list(a.prefill, "prefill")
        a.batches = int_list(a.batches, "batches")
        for name in ("context", "runs", "decode_steps", "check_tokens"):
            if getattr(a, name) < 1:
                raise ValueError(f"{name.replace('_', '-')}: at least 1")
        if a.warmup < 0:
            raise ValueError("warmup: at least 0")
    except ValueError as e:
        ap.error(str(e))
    needs_opt = a.from_json is None and (a.phase != "time" or a.ours == "cli")
    if needs_opt and not Path(a.opt).exists() and shutil.which(a.opt) is None:
        ap.error(f"{a.opt}: no such file (--opt)")
    return a


def merge(runs: list[dict]) -> dict:
    """Several runs' results as one: the first run's environment and bandwidth, every run's sizes
    (a later run's size replaces an earlier one's) and errors. Each decode cell's bound keeps the
    bandwidth of its own run."""
    merged = dict(runs[0], sizes=dict(runs[0].get("sizes", {})), errors=list(runs[0].get("errors", [])))
    for run in runs[1:]:
        merged["sizes"].update(run.get("sizes", {}))
        merged["errors"] += run.get("errors", [])
    return merged


def main(argv: list[str]) -> int:
    a = parse(argv)
    if a.from_json:
        results = merge([json.loads(Path(f).read_text()) for f in a.from_json])
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "llm_bench.md").write_text(markdown(results))
    else:
        Bench(a).run()
        results = json.loads((Path(a.out) / "llm_bench.json").read_text())
    if a.chart:
        write_chart(results, Path(a.chart))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
