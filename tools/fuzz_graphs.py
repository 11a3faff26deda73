#!/usr/bin/env python3
"""Random-graph differential tester for opt.

For each seed, tools/graph_generator.py builds a random valid model of the op families the passes
rewrite, and this checks:

  * the model is valid (onnx.checker full_check) and onnxruntime runs it, else it is discarded;
  * `opt MODEL -o OUT` at -O1, -O2, -O3 (and --precision fp16) exits 0, writes a model that passes
    full_check, keeps the graph's input/output names, element types and shapes (at least as specific),
    and gives onnxruntime outputs equal to the original's (float32 tight, fp16 loose), at batch 2 and 3;
  * -O3 --target cuda exits 0 and `opt check ORIGINAL OPTIMIZED --runner reference` agrees;
  * truncated and corrupted bytes of the model give exit 1 with one `opt: error:` line, or exit 0
    with a valid model; never a signal, never undecodable text.

    python tools/fuzz_graphs.py --seeds 0:1000 [--opt build/bin/opt] [--jobs 2] [--out fuzz/graphs]
    python tools/fuzz_graphs.py --minimize SEED      # a smaller model failing the same way

A failing seed's models and problems are saved under --out/seedN.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto

from graph_generator import generate

REPO = Path(__file__).resolve().parents[1]


# ---- checking ---------------------------------------------------------------------------------------

ORT_TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.DOUBLE: np.float64,
             TensorProto.INT64: np.int64, TensorProto.INT32: np.int32, TensorProto.BOOL: np.bool_}


def feeds(model: onnx.ModelProto, batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.RandomState(seed)
    out = {}
    for i in model.graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in t.shape.dim]
        out[i.name] = rng.standard_normal(shape).astype(ORT_TYPES[t.elem_type])
    return out


def ort_run(path: Path, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def valid(model: onnx.ModelProto, path: Path) -> str | None:
    """Why the generated model is not a valid test case (None when it is)."""
    try:
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, str(path))
        ort_run(path, feeds(model, 2, 0))
    except Exception as e:  # noqa: BLE001 - any refusal discards the case
        return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return None


def run_opt(opt: Path, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(opt), *map(str, args)], capture_output=True, timeout=timeout)
    # Messages quote names from the file: opt escapes them, so stderr must be valid UTF-8.
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode("utf-8", errors="replace")
    if "\ufffd" in err and "\ufffd".encode() not in proc.stderr:
        err = "opt wrote invalid UTF-8 to stderr: " + err
        return subprocess.CompletedProcess(proc.args, 99, out, err)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def exit_problem(proc: subprocess.CompletedProcess, allow_error: bool) -> str | None:
    """The exit contract: 0, or 1 with exactly one `opt: error:` line; never a signal."""
    if proc.returncode < 0 or proc.returncode > 1:
        return f"exit {proc.returncode}: {proc.stderr.strip()[-500:]}"
    if proc.returncode == 1:
        errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("opt: error:")]
        if not allow_error:
            return f"refused: {proc.stderr.strip()[-500:]}"
        if len(errors) != 1:
            return f"exit 1 with {len(errors)} error lines: {proc.stderr.strip()[-500:]}"
    return None


def io_problem(orig: onnx.ModelProto, new: onnx.ModelProto) -> str | None:
    def sig(vs):
        return [(v.name, v.type.tensor_type.elem_type, v.type.tensor_type) for v in vs]

    for kind, a, b in (("input", orig.graph.input, new.graph.input), ("output", orig.graph.output, new.graph.output)):
        inits = {t.name for t in new.graph.initializer}
        b = [v for v in b if v.name not in inits] if kind == "input" else list(b)
        if [v.name for v in a] != [v.name for v in b]:
            return f"{kind} names {[v.name for v in a]} became {[v.name for v in b]}"
        for x, y in zip(a, b):
            tx, ty = x.type.tensor_type, y.type.tensor_type
            if tx.elem_type != ty.elem_type:
                return f"{kind} {x.name}: element type {tx.elem_type} became {ty.elem_type}"
            if not tx.HasField("shape"):
                continue
            if not ty.HasField("shape") or len(tx.shape.dim) != len(ty.shape.dim):
                return f"{kind} {x.name}: shape {tx.shape} became {ty.shape if ty.HasField('shape') else None}"
            for dx, dy in zip(tx.shape.dim, ty.shape.dim):
                if dx.HasField("dim_value") and not (dy.HasField("dim_value") and dy.dim_value == dx.dim_value):
                    return f"{kind} {x.name}: dim {dx.dim_value} became {dy}"
    return None


def compare(ref: list[np.ndarray], got: list[np.ndarray], rtol: float, atol: float) -> str | None:
    if len(ref) != len(got):
        return f"{len(ref)} outputs became {len(got)}"
    for i, (r, o) in enumerate(zip(ref, got)):
        if r.shape != o.shape or r.dtype != o.dtype:
            return f"output {i}: {r.dtype}{list(r.shape)} became {o.dtype}{list(o.shape)}"
        if r.dtype.kind in "biu":
            if not np.array_equal(r, o):
                return f"output {i}: integers differ"
            continue
        r64, o64 = r.astype(np.float64), o.astype(np.float64)
        finite = np.isfinite(r64)
        if not np.array_equal(finite, np.isfinite(o64)) and r.dtype != np.float16:
            return f"output {i}: non-finite values differ"
        scale = max(1.0, float(np.abs(r64[finite]).max())) if finite.any() else 1.0
        err = np.abs(r64 - o64)[finite & np.isfinite(o64)]
        if err.size and err.max() > atol * scale + rtol * 0:
            worst = float(err.max())
            return f"output {i}: max abs error {worst:.3g} over {atol * scale:.3g} (scale {scale:.3g})"
    return None


OPT_LEVELS = (("-O1",), ("-O2",), ("-O3",))


def check_seed(opt: Path, seed: int, work: Path, fp16: bool = True, hostile: bool = True) -> dict:
    """Generates seed's model and runs every check; returns {"seed", "status", "problems", "ops"}."""
    return check_model(opt, generate(seed), seed, work, fp16, hostile)


def check_model(opt: Path, model: onnx.ModelProto, seed: int, work: Path, fp16: bool = True,
                hostile: bool = True) -> dict:
    """Every check on `model` (inputs and corruptions seeded by `seed`)."""
    orig = work / "model.onnx"
    res = {"seed": seed, "status": "ok", "problems": [], "ops": sorted({n.op_type for n in model.graph.node}),
           "opset": model.opset_import[0].version, "nodes": len(model.graph.node)}
    why = valid(model, orig)
    if why:
        res["status"], res["problems"] = "invalid", [why]
        return res
    ins = {b: feeds(model, b, seed) for b in (2, 3)}
    refs = {b: ort_run(orig, ins[b]) for b in ins}
    base_dt = model.graph.input[0].type.tensor_type.elem_type
    tight = 2e-2 if base_dt == TensorProto.FLOAT16 else 1e-4
    configs = [(lv, tight) for lv in OPT_LEVELS]
    if fp16:
        configs.append((("-O2", "--precision", "fp16"), 6e-2))
    for args, tol in configs:
        out = work / ("o" + "_".join(a.strip("-") for a in args) + ".onnx")
        tag = " ".join(args)
        proc = run_opt(opt, orig, "-o", out, *args)
        bad = exit_problem(proc, allow_error=False)
        if bad:
            res["problems"].append(f"{tag}: {bad}")
            continue
        new = onnx.load(str(out))
        try:
            onnx.checker.check_model(new, full_check=True)
        except Exception as e:  # noqa: BLE001
            res["problems"].append(f"{tag}: invalid output: {str(e).splitlines()[0][:300]}")
            continue
        bad = io_problem(model, new)
        if bad:
            res["problems"].append(f"{tag}: {bad}")
            continue
        for b in ins:
            try:
                got = ort_run(out, ins[b])
            except Exception as e:  # noqa: BLE001
                res["problems"].append(f"{tag}: onnxruntime refuses the output: {str(e).splitlines()[0][:300]}")
                break
            bad = compare(refs[b], got, tol, tol)
            if bad:
                res["problems"].append(f"{tag} batch {b}: {bad}")
                break
    cuda = work / "cuda.onnx"
    proc = run_opt(opt, orig, "-o", cuda, "-O3", "--target", "cuda")
    bad = exit_problem(proc, allow_error=False)
    if bad:
        res["problems"].append(f"-O3 --target cuda: {bad}")
    else:
        # A float16 model's folded weights (BatchNormalization into Conv) round once in float16.
        # In float32, -O3's fusions round differently, and a LayerNormalization over nearly equal
        # values (an Expand) scales that by 1/sqrt(epsilon): check's defaults (1e-5) are too tight.
        tols = ["--atol", "2e-2", "--rtol", "2e-2"] if base_dt == TensorProto.FLOAT16 else \
            ["--atol", "1e-4", "--rtol", "1e-3"]
        proc = run_opt(opt, "check", orig, cuda, "--runner", "reference", "--seed", str(seed), *tols)
        if proc.returncode != 0:
            res["problems"].append(f"check --target cuda: exit {proc.returncode}: {proc.stderr.strip()[-400:]}"
                                   f"{proc.stdout.strip()[-400:]}")
    if hostile:
        res["problems"] += hostile_problems(opt, orig.read_bytes(), seed, work)
    if res["problems"]:
        res["status"] = "fail"
    return res


def hostile_problems(opt: Path, data: bytes, seed: int, work: Path) -> list[str]:
    rng = np.random.RandomState(seed + 7919)
    out = []
    variants = [data[: rng.randint(1, len(data))]]
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        flipped[rng.randint(len(flipped))] = rng.randint(256)
    variants.append(bytes(flipped))
    for i, blob in enumerate(variants):
        path = work / f"hostile{i}.onnx"
        path.write_bytes(blob)
        dst = work / f"hostile{i}.out.onnx"
        try:
            proc = run_opt(opt, path, "-o", dst, "-O2", timeout=60)
        except subprocess.TimeoutExpired:
            out.append(f"hostile {i}: timeout")
            continue
        bad = exit_problem(proc, allow_error=True)
        if bad:
            out.append(f"hostile {i}: {bad}")
        elif proc.returncode == 0:
            try:
                onnx.checker.check_model(onnx.load(str(dst)), full_check=True)
            except Exception as e:  # noqa: BLE001
                # Valid only if onnx also accepted the corrupted input (opt's output must then be valid).
                try:
                    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
                    out.append(f"hostile {i}: exit 0 with an invalid model: {str(e).splitlines()[0][:200]}")
                except Exception:  # noqa: BLE001
                    pass
        elif dst.exists():
            out.append(f"hostile {i}: output written despite the error")
    return out


def _kind(res: dict) -> str:
    """What a failure is, for the minimizer: the first problem up to its first colon."""
    return res["problems"][0].split(":")[0] if res["problems"] else ""


def _prune(model: onnx.ModelProto) -> onnx.ModelProto:
    """Without the nodes and initializers no graph output depends on."""
    g = model.graph
    live = {o.name for o in g.output}
    keep = []
    for n in reversed(g.node):
        if any(o in live for o in n.output):
            keep.append(n)
            live.update(n.input)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(reversed(keep))
    inits = [t for t in g.initializer if t.name in live]
    del out.graph.initializer[:]
    out.graph.initializer.extend(inits)
    return out


def _candidates(model: onnx.ModelProto):
    """Smaller variants: one graph output fewer, or one node bypassed (its output replaced by its
    first input where onnx infers the same type for both)."""
    g = model.graph
    for i in range(len(g.output)):
        if len(g.output) > 1:
            m = onnx.ModelProto()
            m.CopyFrom(model)
            del m.graph.output[i]
            yield m
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in list(inferred.graph.value_info) + list(g.input) + list(g.output)}
    types.update({t.name: onnx.helper.make_tensor_type_proto(t.data_type, t.dims) for t in g.initializer})
    outs = {o.name for o in g.output}
    for i in reversed(range(len(g.node))):
        n = g.node[i]
        if len(n.output) != 1 or not n.input or n.output[0] in outs or not n.input[0]:
            continue
        src, dst = n.input[0], n.output[0]
        if src not in types or types.get(dst) != types[src]:
            continue
        m = onnx.ModelProto()
        m.CopyFrom(model)
        del m.graph.node[i]
        for k in m.graph.node:
            for j, name in enumerate(k.input):
                if name == dst:
                    k.input[j] = src
        yield m


def minimize(opt: Path, seed: int, work: Path) -> tuple[onnx.ModelProto, dict]:
    """Greedy reduction of seed's failing model while it fails the same way."""
    model = generate(seed)
    res = check_model(opt, model, seed, work)
    kind = _kind(res)
    if res["status"] != "fail":
        return model, res
    changed = True
    while changed:
        changed = False
        for cand in _candidates(model):
            cand = _prune(cand)
            r = check_model(opt, cand, seed, work)
            if r["status"] == "fail" and _kind(r) == kind:
                model, res, changed = cand, r, True
                break
    return model, res


def _worker(args) -> dict:
    opt, seed, keep_dir, fp16, hostile = args
    os.nice(10)
    with tempfile.TemporaryDirectory(prefix="fuzzg") as tmp:
        try:
            res = check_seed(Path(opt), seed, Path(tmp), fp16, hostile)
        except Exception as e:  # noqa: BLE001 - a harness error is reported, not fatal to the campaign
            res = {"seed": seed, "status": "harness", "problems": [f"{type(e).__name__}: {e}"], "ops": []}
        if res["status"] in ("fail", "harness") and keep_dir:
            dst = Path(keep_dir) / f"seed{seed}"
            dst.mkdir(parents=True, exist_ok=True)
            for f in Path(tmp).glob("*.onnx"):
                (dst / f.name).write_bytes(f.read_bytes())
            (dst / "problems.txt").write_text("\n".join(res["problems"]) + "\n")
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0:100", help="START:END (END exclusive)")
    ap.add_argument("--seed", type=int, help="one seed")
    ap.add_argument("--opt", default=str(REPO / "build" / "bin" / "opt"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "fuzz" / "graphs"), help="failing seeds' models and logs")
    ap.add_argument("--no-fp16", action="store_true")
    ap.add_argument("--no-hostile", action="store_true")
    ap.add_argument("--save", help="write seed's model to this path and exit")
    ap.add_argument("--minimize", type=int, metavar="SEED", help="reduce SEED's failing model, print it, "
                    "and save it as --out/seedSEED/min.onnx")
    a = ap.parse_args()
    if a.minimize is not None:
        with tempfile.TemporaryDirectory(prefix="fuzzg") as tmp:
            model, res = minimize(Path(a.opt), a.minimize, Path(tmp))
        dst = Path(a.out) / f"seed{a.minimize}"
        dst.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(dst / "min.onnx"))
        print(onnx.printer.to_text(model))
        print("\n".join(res["problems"]) or "passes")
        return 0
    if a.save is not None:
        onnx.save(generate(a.seed or 0), a.save)
        return 0
    lo, hi = (a.seed, a.seed + 1) if a.seed is not None else map(int, a.seeds.split(":"))
    jobs = [(a.opt, s, a.out, not a.no_fp16, not a.no_hostile) for s in range(lo, hi)]
    counts: dict[str, int] = {}
    ops: set[str] = set()
    fails = []
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        for res in pool.map(_worker, jobs):
            counts[res["status"]] = counts.get(res["status"], 0) + 1
            ops.update(res["ops"])
            if res["status"] in ("fail", "harness"):
                fails.append(res)
                print(f"seed {res['seed']}: " + " | ".join(res["problems"]), flush=True)
    print(f"seeds {lo}:{hi}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"ops ({len(ops)}): {' '.join(sorted(ops))}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
