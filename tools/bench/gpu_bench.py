#!/usr/bin/env python3
"""Our CUDA runtime against PyTorch on the same GPU (issue 17), and the report of that run.

    python3 tools/bench/gpu_bench.py run --opt build-gpu/bin/opt --out DIR [--models resnet50,bert]
    python3 tools/bench/gpu_bench.py report DIR/gpu_bench.json --doc docs/gpu_benchmarks.md

`run` (on the GPU machine: tools/gpu/test.sh's `gpubench` group calls it; needs torch,
torchvision, transformers, onnx, numpy and a CUDA device) builds each model with random weights
(seeded) in fp16 on the GPU: resnet50 and vit_b_16 (torchvision; vit without its zero-initialized
classifier head, so its output is the class token's features), bert-base (transformers BertModel,
seq 128, the default BertConfig), gpt2 (GPT2Model, seq 128, the default GPT2Config) and
mobilenet_v2 (torchvision), then for each model:
  1. exports it once with torch's dynamo exporter (dynamic batch) and, per batch size, fixes the
     batch in the file (inputs static, inferred shapes dropped) as onnxsim's --overwrite-input-shape
     does;
  2. optimizes it with `opt -O3 --target cuda --target-opset 23`;
  3. times it with `opt bench --device cuda` (CUDA graphs): the figure compared is "compute", the
     device time of the node steps between CUDA events (inputs already on the GPU), and the wall
     time of a whole run() (upload + compute + download) is reported beside it;
  4. runs it once (`opt run --device cuda`) on the inputs torch gets, and compares the outputs with
     torch fp16's and with torch fp32's (the same weights in fp32): the check passes when our error
     against fp32 is at most twice torch fp16's own error against fp32 plus 1e-3 of the output's
     magnitude;
  5. times torch eager, torch.compile (default mode) and torch.compile(mode="reduce-overhead")
     (CUDA graphs) the same way: CUDA events around each forward on GPU tensors, under
     torch.inference_mode, median of --iters runs after --warmup;
  6. with --profile, `opt bench --profile` (eager, an event pair around each step) at each latency
     batch size: the top 40 steps and the per-op totals;
  7. with --layout, for the CNNs (resnet50, mobilenet) at each latency batch size: the same model
     optimized with convert-nhwc forced on (`--pass-option convert-nhwc.grouped=true`) and off
     (`--disable-pass convert-nhwc`), the latency of each, the Transposes each plan runs, and the
     largest difference between the two runs' outputs (within the case's fp16 tolerance, or the
     case fails).
Throughput cases (resnet50 at batch 256, bert at batch 128) run ours and torch eager and
compile+cudagraphs. Kernel microbenchmarks (LayerNormalization, Softmax, Add, Transpose on 256 MB
fp16 tensors, single-op models through `opt bench`) report achieved TB/s (bytes read + written over
the compute time). Everything goes to DIR/gpu_bench.json, written after every case, so a run cut by
--time-limit keeps what it measured; the log says each step and its time.

`report` writes the Markdown page (tables, ratios, the profile of the slowest model against
torch.compile+cudagraphs) and, where matplotlib is installed, a PNG chart beside it.
Exit status: 1 when a step failed or a correctness check did not pass (run), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261202
SEQ = 128
MODELS = ("resnet50", "bert", "gpt2", "vit", "mobilenet")
# The convolutional models, whose latency cases --layout also runs without convert-nhwc.
CNNS = ("resnet50", "mobilenet")
# The throughput cases' batch sizes (the issue's resnet50 bs256 and bert bs128).
THROUGHPUT = {"resnet50": 256, "bert": 128}
MICRO_ELEMENTS = 128 * 1024 * 1024  # 256 MB of fp16


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --- run: the models ------------------------------------------------------------------------------


def build_model(name: str):
    """(torch module, example inputs maker, input names) with random weights, fp32 on the CPU."""
    import torch

    torch.manual_seed(SEED)
    if name in ("resnet50", "vit", "mobilenet"):
        import torchvision

        make = {"resnet50": torchvision.models.resnet50, "vit": torchvision.models.vit_b_16,
                "mobilenet": torchvision.models.mobilenet_v2}[name]
        net = make(weights=None)
        if name == "mobilenet":
            # torchvision's fan-out init gives a depthwise 3x3 (9 taps per output) weights of
            # std sqrt(2 / (9 C)): the activations vanish through the blocks (outputs near 1e-9),
            # and the check would compare nothing. Fan-in init keeps them of order 1.
            for m in net.modules():
                if isinstance(m, torch.nn.Conv2d) and m.groups > 1:
                    torch.nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
        if name == "vit":
            # torchvision zero-initializes the classifier head: its logits would all be 0, and
            # the check would compare nothing. The class token's features are the output.
            net.heads = torch.nn.Identity()
        net.eval()

        def inputs(batch: int, device: str, dtype):
            g = torch.Generator().manual_seed(SEED + batch)
            return (torch.randn(batch, 3, 224, 224, generator=g).to(device=device, dtype=dtype),)

        return net, inputs, ["pixels"]

    import transformers as tf

    class Hidden(torch.nn.Module):
        """Token ids (and a mask for BERT) in, the last hidden state out."""

        def __init__(self, model, masked: bool):
            super().__init__()
            self.model = model
            self.masked = masked

        def forward(self, input_ids, attention_mask=None):
            if self.masked:
                return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.model(input_ids=input_ids).last_hidden_state

    if name == "bert":
        cfg = tf.BertConfig()
        net = Hidden(tf.BertModel(cfg, add_pooling_layer=False), True)
        names = ["input_ids", "attention_mask"]
    else:
        cfg = tf.GPT2Config(use_cache=False)
        net = Hidden(tf.GPT2Model(cfg), False)
        names = ["input_ids"]
    net.eval()

    def inputs(batch: int, device: str, dtype):
        g = torch.Generator().manual_seed(SEED + batch)
        ids = torch.randint(0, cfg.vocab_size, (batch, SEQ), generator=g).to(device)
        if name == "bert":
            return ids, torch.ones(batch, SEQ, dtype=torch.int64, device=device)
        return (ids,)

    return net, inputs, names


def export(net, example, names: list[str], path: Path, exporter: str = "dynamo", batch_axes=None,
           outputs=("out",)) -> None:
    """Torch's dynamo exporter (opset 18, as models/transformers/export.py found to work) or its
    TorchScript one (exporter="torchscript", opset 17); `opt --target-opset 23` upgrades either.
    batch_axes: the axis of each input that is the batch (dynamic), None for a static input;
    by default axis 0 of every input. An empty dict exports every input static."""
    import torch

    axes = {n: 0 for n in names} if batch_axes is None else batch_axes
    if exporter == "torchscript":
        dynamic_axes = {n: {axes[n]: "batch"} for n in names if axes.get(n) is not None}
        torch.onnx.export(net, example, str(path), input_names=names, output_names=list(outputs),
                          dynamic_axes=dynamic_axes or None, opset_version=17, dynamo=False)
        return
    batch = torch.export.Dim("batch", min=1, max=1024)
    dynamic = tuple({axes[n]: batch} if axes.get(n) is not None else {} for n in names)
    program = torch.onnx.export(net, example, input_names=names, output_names=list(outputs), dynamo=True,
                                dynamic_shapes=dynamic if axes else None, opset_version=18)
    program.save(str(path))


def fix_batch(src: Path, dst: Path, batch: int, axes: dict[str, int] | None = None) -> None:
    """The exported model with its batch fixed: inputs static, outputs' and intermediates'
    (symbolic) shapes dropped so that shape inference derives them from the inputs. axes: the
    batch axis of an input where it is not 0 (an RNN's initial state)."""
    import onnx

    m = onnx.load(str(src))
    for inp in m.graph.input:
        dims = inp.type.tensor_type.shape.dim
        axis = (axes or {}).get(inp.name, 0)
        if len(dims) > axis and not dims[axis].HasField("dim_value"):
            dims[axis].Clear()
            dims[axis].dim_value = batch
    del m.graph.value_info[:]
    for out in m.graph.output:
        out.type.tensor_type.ClearField("shape")
    onnx.save(m, str(dst))


def sh(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def torch_time(fn, args, warmup: int, iters: int) -> dict:
    """Median/min/p90 ms of fn(*args) between CUDA events (each forward timed alone)."""
    import torch

    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    start = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    end = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        start[i].record()
        fn(*args)
        end[i].record()
    torch.cuda.synchronize()
    ms = sorted(s.elapsed_time(e) for s, e in zip(start, end))
    return {"p50": statistics.median(ms), "min": ms[0], "p90": ms[int(0.9 * (len(ms) - 1))], "runs": iters}


def opt_bench(opt: str, model: Path, feeds: dict[str, Path], warmup: int, iters: int, profile: bool,
              timeout: float) -> dict:
    cmd = [opt, "bench", str(model), "--device", "cuda", "--warmup", str(warmup), "--iters", str(iters)]
    for name, f in feeds.items():
        cmd += ["--input", f"{name}={f}"]
    if profile:
        cmd.append("--profile")
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "bench.json"
        r = sh(cmd + ["--json", str(js)], timeout)
        if r.returncode != 0:
            raise RuntimeError(f"opt bench failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        return json.loads(js.read_text())


def opt_run_outputs(opt: str, model: Path, feeds: dict[str, Path], outdir: Path, timeout: float,
                    device: str = "cuda") -> tuple[dict, str]:
    """Every output of one `opt run` (name -> array) and its stdout (on cuda, with --stats: the plan)."""
    import numpy as np

    cmd = [opt, "run", str(model), "--device", device, "--save-outputs", str(outdir)]
    if device == "cuda":
        cmd.append("--stats")
    for name, f in feeds.items():
        cmd += ["--input", f"{name}={f}"]
    r = sh(cmd, timeout)
    if r.returncode != 0:
        raise RuntimeError(f"opt run failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    return {f.stem: np.load(f) for f in sorted(outdir.glob("*.npy"))}, r.stdout


def opt_run(opt: str, model: Path, feeds: dict[str, Path], outdir: Path, timeout: float):
    outs, stdout = opt_run_outputs(opt, model, feeds, outdir, timeout)
    if len(outs) != 1:
        raise RuntimeError(f"opt run wrote {len(outs)} outputs, expected 1")
    return next(iter(outs.values())), stdout


def compare(ours, ref32, ref_low, floor: float = 1e-3) -> dict:
    """Ours and torch's lower-precision run (fp16, or fp32 with its TF32 defaults) against torch
    fp32: ours passes when its error is at most twice torch's own plus `floor` of the output's
    magnitude, with no inf or NaN."""
    import numpy as np

    ours = ours.astype(np.float32)
    ref32 = ref32.astype(np.float32)
    ref_low = ref_low.astype(np.float32)
    scale = float(np.abs(ref32).max()) if ref32.size else 0.0
    err_torch = float(np.abs(ref_low - ref32).max()) if ref32.size else 0.0
    err_ours = float(np.abs(ours - ref32).max()) if ref32.size else 0.0
    nonfinite = int((~np.isfinite(ours)).sum())
    tol = 2 * err_torch + floor * max(scale, 1.0)
    return {"max_abs_ours_vs_fp32": err_ours, "max_abs_torch16_vs_fp32": err_torch,
            "max_abs_ours_vs_torch16": float(np.abs(ours - ref_low).max()) if ref32.size else 0.0,
            "output_max_abs": scale, "tolerance": tol, "nonfinite": nonfinite,
            "pass": err_ours <= tol and nonfinite == 0}


def summary_lines(stats_out: str) -> dict:
    """What the plan summary says about placements (CPU nodes, target ops), for the results."""
    keep = [line.strip() for line in stats_out.splitlines()
            if any(k in line for k in ("placement", "cpu", "CPU", "cuda graph", "arena"))]
    return {"plan": keep[:20]}


def profile_ops(rows: list[dict]) -> list[dict]:
    """The profile's per-op totals (every step, not only the top rows), costliest first."""
    ops: dict[str, list[float]] = {}
    for r in rows:
        key = f"{r['op']} ({r['placement']})"
        entry = ops.setdefault(key, [0.0, 0])
        entry[0] += r["mean_ms"]
        entry[1] += 1
    total = sum(v[0] for v in ops.values()) or 1.0
    return [{"op": k, "steps": v[1], "ms": v[0], "percent": 100 * v[0] / total}
            for k, v in sorted(ops.items(), key=lambda kv: -kv[1][0])]


def op_histogram(path: Path) -> dict[str, int]:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    hist: dict[str, int] = {}
    for n in m.graph.node:
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
        hist[key] = hist.get(key, 0) + 1
    return dict(sorted(hist.items(), key=lambda kv: -kv[1]))


class Runner:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.deadline = time.monotonic() + args.time_limit
        self.failed = False
        self.results: dict = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "cases": [], "micro": [],
                              "models": {}, "errors": []}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def save(self) -> None:
        path = self.out / "gpu_bench.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.results, indent=1))
        tmp.replace(path)

    def error(self, what: str, e: BaseException) -> None:
        log(f"FAILED {what}: {e}")
        self.results["errors"].append(f"{what}: {e}")
        self.failed = True
        self.save()

    def environment(self) -> None:
        import torch

        env = {"torch": torch.__version__, "python": platform.python_version(),
               "gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda,
               "cudnn": torch.backends.cudnn.version()}
        try:
            import transformers
            import torchvision

            env["transformers"] = transformers.__version__
            env["torchvision"] = torchvision.__version__
        except ImportError:
            pass
        r = sh(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem",
                "--format=csv,noheader"], 30)
        env["nvidia_smi"] = r.stdout.strip()
        self.results["environment"] = env
        log(f"environment: {env}")

    def model(self, name: str) -> None:
        import torch

        a = self.args
        t0 = time.monotonic()
        net32, make_inputs, names = build_model(name)
        net32 = net32.cuda()
        net16 = copy.deepcopy(net32).half()  # the same weights, rounded
        info: dict = {"build_s": round(time.monotonic() - t0, 1)}
        self.results["models"][name] = info
        dyn = self.work / f"{name}_dynamic.onnx"
        t0 = time.monotonic()
        with torch.inference_mode(False):
            export(net16, make_inputs(2, "cuda", torch.float16), names, dyn)
        info["export_s"] = round(time.monotonic() - t0, 1)
        info["exported_bytes"] = dyn.stat().st_size
        log(f"{name}: exported in {info['export_s']} s ({dyn.stat().st_size >> 20} MiB)")
        batches = list(a.batches)
        if a.throughput and name in THROUGHPUT:
            batches.append(THROUGHPUT[name])
        for batch in batches:
            if self.left() < 60:
                self.error(f"{name} bs{batch}", RuntimeError("not run: --time-limit reached"))
                continue
            try:
                self.case(name, batch, net16, net32, make_inputs, names, dyn, batch in a.batches)
            except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
                self.error(f"{name} bs{batch}", e)
            torch.cuda.empty_cache()
        del net16, net32
        torch.cuda.empty_cache()

    def case(self, name, batch, net16, net32, make_inputs, names, dyn, full: bool) -> None:
        import numpy as np
        import torch

        a = self.args
        case: dict = {"model": name, "batch": batch, "kind": "latency" if full else "throughput"}
        self.results["cases"].append(case)
        static = self.work / f"{name}_bs{batch}.onnx"
        optimized = self.work / f"{name}_bs{batch}_opt.onnx"
        fix_batch(dyn, static, batch)
        t0 = time.monotonic()
        r = sh([a.opt, str(static), "-O3", "--target", "cuda", "--target-opset", "23", "-o", str(optimized)],
               600)
        case["opt_s"] = round(time.monotonic() - t0, 2)
        if r.returncode != 0:
            raise RuntimeError(f"opt failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        if batch == a.batches[0]:
            self.results["models"][name]["ops_before"] = op_histogram(static)
            self.results["models"][name]["ops_after"] = op_histogram(optimized)
        x16 = make_inputs(batch, "cuda", torch.float16)
        feeds = {}
        for n, t in zip(names, x16):
            f = self.work / f"{name}_bs{batch}_{n}.npy"
            np.save(f, t.cpu().numpy())
            feeds[n] = f
        # Correctness: ours and torch fp16 against torch fp32, same weights and inputs.
        with torch.inference_mode():
            ref32 = net32(*make_inputs(batch, "cuda", torch.float32)).float().cpu().numpy()
            ref16 = net16(*x16).float().cpu().numpy()
        with tempfile.TemporaryDirectory() as tmp:
            ours, stats_out = opt_run(a.opt, optimized, feeds, Path(tmp), 300)
        if ours.shape != ref32.shape:
            raise RuntimeError(f"output shape {ours.shape}, torch's {ref32.shape}")
        check = compare(ours, ref32, ref16)
        tol = check["tolerance"]
        if a.layout and full and name in CNNS:
            self.layout(case, static, feeds, tol)
        case["check"] = check
        case.update(summary_lines(stats_out))
        if not case["check"]["pass"]:
            self.failed = True
        log(f"{name} bs{batch}: check {case['check']}")
        self.save()
        # Ours.
        iters = a.iters if full else max(20, a.iters // 5)
        b = opt_bench(a.opt, optimized, feeds, a.warmup, iters, False, 600)
        case["ours"] = {"compute": b.get("compute_ms"), "wall": b.get("latency_ms"), "cuda_graph": b.get("cuda_graph"),
                        "memory": b.get("memory")}
        log(f"{name} bs{batch}: ours compute p50 {b.get('compute_ms', {}).get('p50')} ms, "
            f"wall p50 {b['latency_ms']['p50']} ms, graph {b.get('cuda_graph')}")
        self.save()
        if a.profile and full:
            p = opt_bench(a.opt, optimized, feeds, 3, 20, True, 600)
            rows = p.get("profile", [])
            case["profile"] = rows[:40]
            case["profile_ops"] = profile_ops(rows)
            self.save()
        # Torch.
        # compile+cudagraphs, the one the goal compares with, before plain compile: what a cut
        # run leaves out is the less important one.
        torch_cases = ["eager", "compile_cudagraphs", "compile"] if full else ["eager", "compile_cudagraphs"]
        if a.no_compile:
            torch_cases = ["eager"]
        if a.no_torch:
            torch_cases = []
        case["torch"] = {}
        with torch.inference_mode():
            for mode in torch_cases:
                if self.left() < 45:
                    self.error(f"{name} bs{batch} torch {mode}", RuntimeError("not run: --time-limit reached"))
                    break
                t0 = time.monotonic()
                try:
                    if mode == "eager":
                        fn = net16
                    else:
                        torch._dynamo.reset()
                        fn = torch.compile(net16, mode="reduce-overhead" if mode == "compile_cudagraphs" else None)
                    fn(*x16)  # compiles
                    compile_s = round(time.monotonic() - t0, 1)
                    t = torch_time(fn, x16, a.warmup, iters)
                    t["compile_s"] = compile_s
                    case["torch"][mode] = t
                    log(f"{name} bs{batch}: torch {mode} p50 {t['p50']:.4f} ms (ready in {compile_s} s)")
                except Exception as e:  # noqa: BLE001
                    self.error(f"{name} bs{batch} torch {mode}", e)
                self.save()
        torch._dynamo.reset()

    def layout(self, case: dict, static: Path, feeds: dict, tol: float) -> None:
        """The layout issue's comparison: the model optimized with convert-nhwc forced on
        (--pass-option convert-nhwc.grouped=true: -O3 leaves models with grouped convolutions
        NCHW) and with it off (--disable-pass convert-nhwc), each one's latency and the layout
        conversions (Transposes) its plan runs; the NHWC outputs must be within the case's fp16
        tolerance of the NCHW run's."""
        import numpy as np

        a = self.args
        variants = {"nhwc": ["--pass-option", "convert-nhwc.grouped=true"],
                    "nchw": ["--disable-pass", "convert-nhwc"]}
        got = {}
        out: dict = {"tolerance": tol}
        for label, flags in variants.items():
            path = static.with_name(f"{static.stem}_{label}.onnx")
            r = sh([a.opt, str(static), "-O3", "--target", "cuda", "--target-opset", "23", *flags,
                    "-o", str(path)], 600)
            if r.returncode != 0:
                raise RuntimeError(f"opt {' '.join(flags)} failed: {r.stderr.strip()[-2000:]}")
            with tempfile.TemporaryDirectory() as tmp:
                got[label], _ = opt_run(a.opt, path, feeds, Path(tmp), 300)
            out[f"{label}_compute"] = opt_bench(a.opt, path, feeds, a.warmup, a.iters, False, 600).get("compute_ms")
            out[f"transposes_{label}"] = op_histogram(path).get("Transpose", 0)
            if a.profile:
                rows = opt_bench(a.opt, path, feeds, 3, 20, True, 600).get("profile", [])
                case[f"layout_{label}_profile_ops"] = profile_ops(rows)
        diff = float(np.abs(got["nhwc"].astype(np.float32) - got["nchw"].astype(np.float32)).max())
        out["max_abs_nhwc_vs_nchw"] = diff
        out["pass"] = diff <= tol
        case["layout"] = out
        if diff > tol:
            self.failed = True
        log(f"{case['model']} bs{case['batch']}: layout {out}")
        self.save()

    def micro(self) -> None:
        """Single-op fp16 models on 256 MB tensors through opt bench: TB/s over the compute time."""
        import onnx
        from onnx import TensorProto, helper

        rows, cols = MICRO_ELEMENTS // 1024, 1024
        f16 = TensorProto.FLOAT16
        cases = []

        def model(name, nodes, inputs, outputs, inits=()):
            g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)])
            m.ir_version = 10
            path = self.work / f"micro_{name}.onnx"
            onnx.save(m, str(path))
            return path

        def vi(n, shape):
            return helper.make_tensor_value_info(n, f16, shape)

        import numpy as np

        scale = helper.make_tensor("scale", f16, [cols], np.ones(cols, np.float16).tobytes(), raw=True)
        bias = helper.make_tensor("bias", f16, [cols], np.zeros(cols, np.float16).tobytes(), raw=True)
        mb = MICRO_ELEMENTS * 2
        cases.append(("LayerNormalization", model(
            "layernorm", [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1)],
            [vi("x", [rows, cols])], [vi("y", [rows, cols])], [scale, bias]), 2 * mb))
        cases.append(("Softmax", model("softmax", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                                       [vi("x", [rows, cols])], [vi("y", [rows, cols])]), 2 * mb))
        cases.append(("Add", model("add", [helper.make_node("Add", ["x", "z"], ["y"])],
                                   [vi("x", [rows, cols]), vi("z", [rows, cols])], [vi("y", [rows, cols])]), 3 * mb))
        cases.append(("Transpose", model("transpose", [helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
                                         [vi("x", [8192, MICRO_ELEMENTS // 8192])],
                                         [vi("y", [MICRO_ELEMENTS // 8192, 8192])]), 2 * mb))
        for op, path, moved in cases:
            if self.left() < 30:
                self.error(f"micro {op}", RuntimeError("not run: --time-limit reached"))
                continue
            try:
                b = opt_bench(self.args.opt, path, {}, 3, 20, False, 300)
                p50 = b["compute_ms"]["p50"]
                row = {"op": op, "bytes_moved": moved, "compute_ms": p50, "tb_per_s": moved / (p50 * 1e-3) / 1e12,
                       "cuda_graph": b.get("cuda_graph")}
                self.results["micro"].append(row)
                log(f"micro {op}: {p50:.4f} ms, {row['tb_per_s']:.2f} TB/s")
            except Exception as e:  # noqa: BLE001
                self.error(f"micro {op}", e)
            self.save()
        # The device's own limit in the same run: torch's device-to-device copy of 256 MB.
        try:
            import torch

            x = torch.empty(MICRO_ELEMENTS * 2, dtype=torch.uint8, device="cuda")
            y = torch.empty_like(x)
            ms = torch_time(lambda: y.copy_(x), (), 5, 50)["p50"]
            moved = 2 * MICRO_ELEMENTS * 2
            self.results["micro"].append({"op": "device copy (torch)", "bytes_moved": moved, "compute_ms": ms,
                                          "tb_per_s": moved / (ms * 1e-3) / 1e12, "cuda_graph": None})
            log(f"micro device copy: {ms:.4f} ms, {moved / (ms * 1e-3) / 1e12:.2f} TB/s")
            del x, y
        except Exception as e:  # noqa: BLE001
            self.error("micro device copy", e)
        self.save()

    def run(self) -> int:
        self.environment()
        self.save()
        for name in self.args.models:
            if self.left() < 90:
                self.error(name, RuntimeError("not run: --time-limit reached"))
                continue
            try:
                self.model(name)
            except Exception as e:  # noqa: BLE001
                self.error(name, e)
        if self.args.micro:
            self.micro()
        self.results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.save()
        log(f"done: {len(self.results['errors'])} error(s), results in {self.out / 'gpu_bench.json'}")
        return 1 if self.failed else 0


# --- report ---------------------------------------------------------------------------------------

def verdict(check: dict) -> str:
    """A case's correctness cell: pass, FAIL, or - when it was not checked."""
    return "-" if not check else "pass" if check.get("pass") else "FAIL"


def fmt_ms(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def p50(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d or d[k] is None:
            return None
        d = d[k]
    return d.get("p50") if isinstance(d, dict) else None


def report(results: dict, doc: Path, chart: Path | None) -> str:
    lines = []
    env = results.get("environment", {})
    lat = [c for c in results["cases"] if c["kind"] == "latency"]
    thr = [c for c in results["cases"] if c["kind"] == "throughput"]
    lines.append("## Latency, fp16 (median ms; ours = device time of the node steps, CUDA graph replay)\n")
    lines.append("| model | batch | ours | ours wall | torch eager | torch.compile | compile+cudagraphs | "
                 "ours / compile+cudagraphs | max abs err vs fp32 (ours / torch fp16) | check |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for c in lat:
        ours = p50(c, "ours", "compute")
        cg = p50(c, "torch", "compile_cudagraphs")
        ratio = f"{ours / cg:.2f}" if ours and cg else "-"
        chk = c.get("check", {})
        err = (f"{chk['max_abs_ours_vs_fp32']:.3g} / {chk['max_abs_torch16_vs_fp32']:.3g}" if chk else "-")
        lines.append(f"| {c['model']} | {c['batch']} | {fmt_ms(ours)} | {fmt_ms(p50(c, 'ours', 'wall'))} | "
                     f"{fmt_ms(p50(c, 'torch', 'eager'))} | {fmt_ms(p50(c, 'torch', 'compile'))} | {fmt_ms(cg)} | "
                     f"{ratio} | {err} | {verdict(chk)} |")
    if thr:
        lines.append("\n## Throughput, fp16\n")
        lines.append("| model | batch | ours ms | ours items/s | torch eager items/s | "
                     "compile+cudagraphs items/s | check |")
        lines.append("|---|---:|---:|---:|---:|---:|---|")
        for c in thr:
            ours = p50(c, "ours", "compute")
            per_s = lambda ms: "-" if not ms else f"{c['batch'] / (ms * 1e-3):,.0f}"  # noqa: E731
            chk = c.get("check", {})
            lines.append(f"| {c['model']} | {c['batch']} | {fmt_ms(ours)} | {per_s(ours)} | "
                         f"{per_s(p50(c, 'torch', 'eager'))} | {per_s(p50(c, 'torch', 'compile_cudagraphs'))} | "
                         f"{verdict(chk)} |")
    laid = [c for c in lat if c.get("layout")]
    if laid:
        lines.append("\n## Layout: channels-last (convert-nhwc) against NCHW convolutions, fp16\n")
        lines.append("| model | batch | NHWC ms | NCHW ms | NCHW / NHWC | Transposes NHWC / NCHW | "
                     "max abs NHWC vs NCHW (tolerance) | check |")
        lines.append("|---|---:|---:|---:|---:|---|---|---|")
        for c in laid:
            lo = c["layout"]
            nhwc, nchw = (lo.get("nhwc_compute") or {}).get("p50"), (lo.get("nchw_compute") or {}).get("p50")
            ratio = f"{nchw / nhwc:.2f}" if nhwc and nchw else "-"
            lines.append(f"| {c['model']} | {c['batch']} | {fmt_ms(nhwc)} | {fmt_ms(nchw)} | {ratio} | "
                         f"{lo['transposes_nhwc']} / {lo['transposes_nchw']} | "
                         f"{lo['max_abs_nhwc_vs_nchw']:.3g} ({lo['tolerance']:.3g}) | {verdict(lo)} |")
    if results.get("micro"):
        lines.append("\n## Memory-bound kernels, fp16, 256 MB tensors\n")
        lines.append("Against the device's own limit: its copy (about 4.3 TB/s on the H200; the row "
                     "'device copy (torch)' where the run measured it).\n")
        lines.append("| op | bytes read + written | ms | TB/s |")
        lines.append("|---|---:|---:|---:|")
        for m in results["micro"]:
            lines.append(f"| {m['op']} | {m['bytes_moved'] >> 20} MiB | {m['compute_ms']:.3f} | "
                         f"{m['tb_per_s']:.2f} |")
    # The slowest model against compile+cudagraphs: its profile.
    worst = None
    for c in lat:
        ours, cg = p50(c, "ours", "compute"), p50(c, "torch", "compile_cudagraphs")
        if ours and cg and c.get("profile") and (worst is None or ours / cg > worst[0]):
            worst = (ours / cg, c)
    if worst:
        c = worst[1]
        lines.append(f"\n## Profile of the slowest case: {c['model']} batch {c['batch']} "
                     f"({worst[0]:.2f}x torch.compile+cudagraphs)\n")
        lines.append("Eager steps, an event pair around each (`opt bench --profile`); the top rows by mean time.\n")
        lines.append("| step | op | mean ms | % |")
        lines.append("|---|---|---:|---:|")
        for r in c["profile"][:25]:
            lines.append(f"| {r['name']} | {r['op']} | {r['mean_ms']:.4f} | {r['percent']:.1f} |")
    profiled = [c for c in results["cases"] if c.get("profile_ops")]
    if profiled:
        lines.append("\n## Where our time goes: per-op totals of each profiled case\n")
        lines.append("Eager steps with an event pair around each: the sum is above the CUDA-graph time "
                     "(host gaps between launches count), the shares show which kernels cost it.\n")
        lines.append("| case | profiled ms | top ops (ms, % of the profile) |")
        lines.append("|---|---:|---|")
        for c in profiled:
            for label, ops in (("", c["profile_ops"]), (" NHWC forced", c.get("layout_nhwc_profile_ops")),
                               (" NCHW", c.get("layout_nchw_profile_ops"))):
                if not ops:
                    continue
                total = sum(o["ms"] for o in ops)
                top = "; ".join(f"{o['op']} x{o['steps']} {o['ms']:.2f} ({o['percent']:.0f}%)" for o in ops[:5])
                lines.append(f"| {c['model']} bs{c['batch']}{label} | {total:.2f} | {top} |")
    models = results.get("models", {})
    if models:
        lines.append("\n## What `-O3 --target cuda` made of each model (ops after, top 12)\n")
        for name, info in models.items():
            after = info.get("ops_after", {})
            before = sum(info.get("ops_before", {}).values())
            top = ", ".join(f"{k} {v}" for k, v in list(after.items())[:12])
            lines.append(f"- {name}: {before} nodes exported, {sum(after.values())} after: {top}")
    if results.get("errors"):
        lines.append("\n## Errors in the run\n")
        lines.extend(f"- {e}" for e in results["errors"])
    body = "\n".join(lines) + "\n"
    if chart is not None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            from chart_png import save_png

            labels = [f"{c['model']}\nbs{c['batch']}" for c in lat]
            series = [("ours", lambda c: p50(c, "ours", "compute")),
                      ("torch eager", lambda c: p50(c, "torch", "eager")),
                      ("torch.compile", lambda c: p50(c, "torch", "compile")),
                      ("compile+cudagraphs", lambda c: p50(c, "torch", "compile_cudagraphs"))]
            fig, ax = plt.subplots(figsize=(11, 4.5))
            width = 0.2
            for i, (label, get) in enumerate(series):
                ax.bar([x + (i - 1.5) * width for x in range(len(lat))], [get(c) or 0 for c in lat], width,
                       label=label)
            ax.set_xticks(range(len(lat)), labels)
            ax.set_ylabel("median ms (lower is better)")
            ax.set_yscale("log")
            ax.set_title(f"fp16 latency on {env.get('gpu', 'the GPU')}")
            ax.legend()
            fig.tight_layout()
            save_png(fig, chart)
            body = f"![fp16 latency per model and batch]({chart.name})\n\n" + body
        except ImportError:
            body = "(no chart: matplotlib is not installed where the report was written)\n\n" + body
    head = doc.read_text().split("<!-- results -->")[0] if doc.exists() else "# GPU benchmarks\n\n"
    env_line = ", ".join(f"{k} {v}" for k, v in env.items())
    runs = [r for r in results.get("runs", []) if r]
    origin = f"Run of {results.get('started')}"
    if len(runs) > 1:
        origin = (f"Runs of {runs[0]} and, for what that one lacks (e.g. torch timings of a --no-torch "
                  f"run), {', '.join(runs[1:])}")
    text = (head.rstrip() + "\n\n<!-- results -->\n" + f"{origin}: {env_line}.\n\n" + body)
    doc.write_text(text)
    return text


def merge(runs: list[dict]) -> dict:
    """Several runs' results as one, in order: a later run's case of a model, batch and kind
    already present only fills in what the earlier one lacks (a profile-only run's profiles);
    other cases, microbenchmarks, models and errors are added."""
    merged: dict = {}
    for data in runs:
        if not merged:
            merged = data
            merged["runs"] = [data.get("started")]
            continue
        merged["runs"].append(data.get("started"))
        known = {(c["model"], c["batch"], c["kind"]): c for c in merged["cases"]}
        for c in data.get("cases", []):
            old = known.get((c["model"], c["batch"], c["kind"]))
            if old is None:
                merged["cases"].append(c)
                continue
            # What the earlier run lacks or left empty (a --no-torch run's torch timings, a
            # profile-only run's profiles); a profile only from a run that planned the same
            # graph (the plan's summary: node and step counts), as another graph's profile
            # (an older -O3's) would not be this case's.
            same_plan = not old.get("plan") or not c.get("plan") or old["plan"][:1] == c["plan"][:1]
            for key, value in c.items():
                if not old.get(key) and (not key.startswith("profile") or same_plan):
                    old[key] = value
        have = {m["op"] for m in merged["micro"]}
        merged["micro"] += [m for m in data.get("micro", []) if m["op"] not in have]
        for name, info in data.get("models", {}).items():
            merged["models"].setdefault(name, info)
        merged["errors"] += data.get("errors", [])
    return merged


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="export, optimize and time the models against torch (GPU machine)")
    r.add_argument("--opt", required=True, help="the opt binary (built with CUDA)")
    r.add_argument("--out", required=True, help="folder for gpu_bench.json")
    r.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "gpu_bench"),
                   help="folder for the exported and optimized models (large)")
    r.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {', '.join(MODELS)}")
    r.add_argument("--batches", default="1,32", help="latency batch sizes")
    r.add_argument("--no-throughput", dest="throughput", action="store_false",
                   help="skip resnet50 bs256 and bert bs128")
    r.add_argument("--no-micro", dest="micro", action="store_false", help="skip the kernel microbenchmarks")
    r.add_argument("--no-compile", action="store_true", help="torch eager only (no torch.compile)")
    r.add_argument("--no-torch", action="store_true", help="no torch timings (the check still runs)")
    r.add_argument("--profile", action="store_true", help="opt bench --profile at each latency batch size")
    r.add_argument("--layout", action="store_true",
                   help=f"also run the latency cases of {', '.join(CNNS)} without convert-nhwc (NCHW)")
    r.add_argument("--warmup", type=int, default=20)
    r.add_argument("--iters", type=int, default=100)
    r.add_argument("--time-limit", type=float, default=480, help="seconds; later steps are skipped")
    p = sub.add_parser("report", help="write the Markdown page (and a PNG chart) from gpu_bench.json")
    p.add_argument("results", nargs="+", help="gpu_bench.json files (several are merged in order)")
    p.add_argument("--doc", default=str(ROOT / "docs" / "gpu_benchmarks.md"))
    p.add_argument("--no-chart", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        a.models = [m for m in a.models.split(",") if m]
        bad = [m for m in a.models if m not in MODELS]
        if bad:
            ap.error(f"unknown model(s) {', '.join(bad)} (of {', '.join(MODELS)})")
        a.batches = [int(b) for b in a.batches.split(",") if b]
        if not Path(a.opt).exists():
            ap.error(f"{a.opt}: no such file")
        return Runner(a).run()
    merged = merge([json.loads(Path(f).read_text()) for f in a.results])
    doc = Path(a.doc)
    report(merged, doc, None if a.no_chart else doc.with_suffix(".png"))
    print(f"wrote {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
