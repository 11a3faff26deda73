"""The GPU harness's own logic (tools/gpu/*.py, tools/conformance_table.py's CUDA columns), on the
reference device so that it runs without a GPU: parsing the CUDA plan summary, the error measure,
the node-case verdicts (pass, unsupported, and fail for a wrong expected output), the model runner
(a pass and a NOT_RUNNABLE model), the table's CUDA columns from a JSON, the bench script's shapes,
and test.sh's argument check and shellcheck."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import roundtrip_check

ROOT = roundtrip_check.REPO_ROOT
sys.path.insert(0, str(ROOT / "tools" / "gpu"))
sys.path.insert(0, str(ROOT / "tools"))
import bench_cuda  # noqa: E402
import conformance_cuda  # noqa: E402
import conformance_table  # noqa: E402
import models_cuda  # noqa: E402

NODE_TESTS = roundtrip_check.shared_dir() / "onnx-node-tests"

SUMMARY = """device NVIDIA H200 (compute 9.0)
plan: 4 nodes: 1 device, 0 host (0 folded), 3 cpu-fallback, 0 view; 8 steps, 4 copies
memory: arena 256 bytes, intermediates 512 bytes (saved 50%), host arena 64 bytes, weights 0 bytes
fallback: node 'enc/gather' (GatherElements): no GatherElements kernel
fallback: node Add producing 'y': int8 is not supported
fallback: node Loop: subgraphs run on the CPU
dynamic: node NonZero producing 'nz'
"""


def test_parse_fallbacks_reads_every_node_form() -> None:
    assert conformance_cuda.parse_fallbacks(SUMMARY) == [
        {"node": "enc/gather", "op": "GatherElements", "reason": "no GatherElements kernel"},
        {"node": "y", "op": "Add", "reason": "int8 is not supported"},
        {"node": "", "op": "Loop", "reason": "subgraphs run on the CPU"},
    ]
    assert conformance_cuda.parse_device(SUMMARY) == "NVIDIA H200 (compute 9.0)"
    assert conformance_cuda.parse_fallbacks("plan: 1 nodes: 1 device\n") == []


def test_whole_run_on_the_cpu_is_read_from_the_plan_summary() -> None:
    # The line the CUDA executor writes (src/runtime/cuda/cuda_executor.cc runOnReference).
    stdout = ("output y: float[2]\nplan: not usable for these inputs (Expand: input 0 is [0] on the CPU, "
              "[3] in the plan): the whole run went to the reference executor (CPU)\n")
    assert models_cuda.whole_run_reason(stdout) == "Expand: input 0 is [0] on the CPU, [3] in the plan"
    assert models_cuda.whole_run_reason(SUMMARY) is None
    assert models_cuda.whole_run_reason("") is None


def test_max_abs_error() -> None:
    e = conformance_cuda.max_abs_error
    assert e(np.array([1.0, np.nan, np.inf]), np.array([1.5, np.nan, np.inf])) == 0.5
    assert e(np.array([1.0, np.nan]), np.array([1.0, 2.0])) == np.inf
    assert e(np.array([1, 5], np.int64), np.array([1, 2], np.int64)) == 3.0
    assert e(np.zeros(2), np.zeros(3)) is None


def _case(name: str) -> Path:
    path = NODE_TESTS / name / "model.onnx"
    if not path.is_file():
        pytest.fail(f"node test case {path} not found: set ONNXOPT_SHARED")
    return path


@pytest.mark.parametrize("name,status", [
    ("test_add", "pass"),
    ("test_sequence_insert_at_back", "pass"),  # sequences: run as the tensor model conformance.py builds
    ("test_dequantizelinear_int4", "pass"),  # a packed int4 input .pb (opt run --input reads it packed)
    ("test_bernoulli", "unsupported"),  # random without a seed
    ("test_image_decoder_decode_png_rgb", "unsupported"),  # listed unsupported by docs/conformance.md
])
def test_node_case_verdicts_on_the_reference_device(name: str, status: str, opt: Path) -> None:
    r = conformance_cuda.run_case(_case(name), opt, "reference", conformance_table.reference_unsupported())
    assert r["status"] == status, r
    assert r["op"] == conformance_table.table_op(name, r["ops"])
    if status == "pass":
        assert r["max_abs_error"] == 0.0 and r["fallbacks"] == []


def test_a_wrong_output_is_a_failure(opt: Path, tmp_path: Path) -> None:
    case = tmp_path / "test_add"
    shutil.copytree(_case("test_add").parent, case)
    out = case / "test_data_set_0" / "output_0.pb"
    expected = numpy_helper.to_array(onnx.TensorProto.FromString(out.read_bytes()))
    out.write_bytes(numpy_helper.from_array(expected + 0.5, "sum").SerializeToString())
    r = conformance_cuda.run_case(case / "model.onnx", opt, "reference", {})
    assert r["status"] == "fail" and "values differ (max abs error 0.5)" in r["detail"], r
    assert r["max_abs_error"] == pytest.approx(0.5)


def test_opt_run_batch_runs_every_line(opt: Path, tmp_path: Path) -> None:
    case = _case("test_abs").parent
    good = f"{case / 'model.onnx'}\t--input\tx={case / 'test_data_set_0' / 'input_0.pb'}\t--save-outputs\t{tmp_path}"
    batch = tmp_path / "batch.txt"
    batch.write_text(f"{good}\n{case / 'model.onnx'}\t--bogus\tx\n{tmp_path / 'missing.onnx'}\n\n{good}\n")
    proc = subprocess.run([str(opt), "run", "--batch", str(batch), "--save-format", "pb"], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    outs, ends = conformance_cuda.split_batch_output(proc.stdout)
    errs, _ = conformance_cuda.split_batch_output(proc.stderr)
    assert ends == {0: 0, 1: 2, 2: 1, 3: 0}  # the empty line is no case
    assert outs[0].startswith("output y: float[3,4,5]") and outs[3] == outs[0]
    assert "--bogus is not a case option" in errs[1] and "missing.onnx" in errs[2]
    assert (tmp_path / "y.pb").is_file()
    proc = subprocess.run([str(opt), "run"], capture_output=True, text=True)
    assert proc.returncode == 2 and "no model (give MODEL or --batch FILE)" in proc.stderr


def test_split_batch_output() -> None:
    text = "== case 0\noutput y\n== case 0: exit 0\n== case 1\nopt: error: x\n== case 1: exit 1\n== case 2\nhalf"
    assert conformance_cuda.split_batch_output(text) == ({0: "output y", 1: "opt: error: x", 2: "half"},
                                                         {0: 0, 1: 1})


# An opt whose batch run crashes in the case of test_abs: the other cases run through the real opt,
# one batch line at a time, with the case number of the whole batch.
# With POISON set it fails case1 with a CUDA error instead, and every later case of that process
# as a sticky CUDA error would.
CRASHING_OPT = """#!/bin/bash
file=$3; shift 3; n=0; poisoned=
while IFS= read -r line; do
  if [[ $line == */case1/* || -n $poisoned ]]; then
    echo "== case $n"; echo "== case $n" >&2
    [ -n "${POISON:-}" ] || kill -SEGV $$
    echo "opt: error: cuda: cudaErrorIllegalAddress" >&2; echo "== case $n: exit 1"; echo "== case $n: exit 1" >&2
    poisoned=1; n=$((n + 1)); continue
  fi
  printf '%s\\n' "$line" >"$file.one"
  "$REAL_OPT" run --batch "$file.one" "$@" >"$file.out" 2>"$file.err"
  sed "s/^== case 0/== case $n/" "$file.out"; sed "s/^== case 0/== case $n/" "$file.err" >&2
  n=$((n + 1))
done <"$file"
"""


def test_a_crash_fails_its_case_and_the_batch_goes_on(opt: Path, tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "opt"
    fake.write_text(CRASHING_OPT)
    fake.chmod(0o755)
    monkeypatch.setenv("REAL_OPT", str(opt))
    records = conformance_cuda.run_cases([_case("test_add"), _case("test_abs"), _case("test_not_2d")], fake,
                                         "reference", {})
    assert [r["status"] for r in records] == ["pass", "fail", "pass"], records
    assert "ended with exit -11" in records[1]["detail"], records[1]
    # A CUDA error may leave the context unusable: the cases after it run in a new process.
    monkeypatch.setenv("POISON", "1")
    records = conformance_cuda.run_cases([_case("test_add"), _case("test_abs"), _case("test_not_2d")], fake,
                                         "reference", {})
    assert [r["status"] for r in records] == ["pass", "fail", "pass"], records
    assert "cudaErrorIllegalAddress" in records[1]["detail"], records[1]


def test_conformance_json_and_the_cuda_columns(opt: Path, tmp_path: Path) -> None:
    results = tmp_path / "conformance.json"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu" / "conformance_cuda.py"), "--device",
                           "reference", "--jobs", "2", "--cases", "^test_(abs|bernoulli|not_2d)$", "--opt", str(opt),
                           "--json", str(results)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "total: pass 2, fallback 0, fail 0, unsupported 1 (3 cases" in proc.stdout
    data = json.loads(results.read_text())
    assert data["totals"] == {"pass": 2, "fallback": 0, "fail": 0, "unsupported": 1, "not-run": 0}
    assert [c["case"] for c in data["cases"]] == ["test_abs", "test_bernoulli", "test_not_2d"]
    # As a GPU run would say it: one fallback and one failure.
    data["cases"][0].update(status="fallback", fallbacks=[{"node": "y", "op": "Abs", "reason": "no int kernel"}])
    data["cases"][2].update(status="fail", detail="y: values differ")
    data.update(conformance_cuda.summarize(data["cases"]))
    per_op, sections = conformance_table.parse_reference_part((ROOT / "docs" / "conformance.md").read_text())
    assert "NOT a GPU run: the reference device" in conformance_table.render(
        per_op, sections, conformance_table.cuda_digest(data))
    data.update(device="cuda", gpu="NVIDIA H200 (compute 9.0)")
    digest = conformance_table.cuda_digest(data)
    text = conformance_table.render(per_op, sections, digest)
    assert "| op | pass | fail | unsupported | CUDA pass | CUDA fallback | CUDA fail |" in text
    assert "| Abs | 1 | 0 | 0 | 0 | 1 | 0 |" in text
    assert "| Not | 3 | 0 | 0 | 0 | 0 | 1 |" in text
    assert "| Add | 8 | 0 | 0 | - | - | - |" in text  # not in that run
    assert "- `test_not_2d` (Not): y: values differ" in text
    # The table lists the reasons of FALLBACK_ROWS_FROM nodes or more; the digest keeps them all.
    assert digest["fallback_reasons"] == [{"op": "Abs", "reason": "no int kernel", "nodes": 1}]
    assert "| Abs | no int kernel | 1 |" not in text and "1 more reasons cover 1 nodes." in text
    rows = conformance_table.render(per_op, sections, {**digest, "fallback_reasons": [
        {"op": "Abs", "reason": "no int kernel", "nodes": conformance_table.FALLBACK_ROWS_FROM}]})
    assert f"| Abs | no int kernel | {conformance_table.FALLBACK_ROWS_FROM} |" in rows
    assert "the CUDA runtime on NVIDIA H200 (compute 9.0)" in text
    # The reference part is kept as it was: with the stored CUDA digest (none before a GPU run), the
    # table is the same file.
    stored = (json.loads(conformance_table.CUDA_DIGEST.read_text())
              if conformance_table.CUDA_DIGEST.is_file() else None)
    assert conformance_table.render(per_op, sections, stored) == (ROOT / "docs" / "conformance.md").read_text()
    assert conformance_table.parse_reference_part(text) == (per_op, sections)


def test_cases_past_the_time_limit_are_not_run(opt: Path, tmp_path: Path) -> None:
    results = tmp_path / "conformance.json"
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu" / "conformance_cuda.py"), "--device",
                           "reference", "--cases", "^test_abs$", "--opt", str(opt), "--time-limit", "0.001",
                           "--json", str(results)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert "NOT RUN 1 (past --time-limit)" in proc.stdout
    case = json.loads(results.read_text())["cases"][0]
    assert case["status"] == "not-run" and case["op"] == "Abs"


def test_models_on_the_reference_runner(opt: Path) -> None:
    ok = models_cuda.run_model("models/tiny_cnn", ROOT / "models" / "tiny_cnn" / "model.onnx", opt,
                               "reference", "reference")
    assert ok["status"] == "pass" and ok["max_abs_error"] == 0 and ok["outputs"] == 1, ok
    path = roundtrip_check.shared_dir() / "models" / "real" / "polygraphy" / "capability.onnx"
    bad = models_cuda.run_model("real/polygraphy/capability.onnx", path, opt, "reference", "reference")
    assert bad["status"] == "expected-error" and "binds them to one type" in bad["detail"], bad
    # Listed as not runnable with another reason: the harness says so.
    wrong = models_cuda.run_model("real/polygraphy/toy_subgraph.onnx", path, opt, "reference", "reference")
    assert wrong["status"] == "fail" and "does not say" in wrong["detail"], wrong


def test_bench_shapes_and_the_missing_bench_command(opt: Path) -> None:
    bert = ROOT / "models" / "transformers" / "bert_dynamo" / "model.onnx"
    assert bench_cuda.shape_args(bert, 2, 16, 64) == ["--input-shape", "input_ids=2,16",
                                                      "--input-shape", "attention_mask=2,16"]
    assert bench_cuda.optimize_args(bert) == ["-O2", "--target-opset", "23"]
    unet = ROOT / "models" / "tiny_unet" / "model.onnx"
    assert bench_cuda.shape_args(unet, 1, 16, 32) == ["--input-shape", "x=1,3,32,32"]
    help_text = subprocess.run([str(opt), "bench", "--help"], capture_output=True, text=True).stdout
    assert bench_cuda.has_bench(opt) == ("--warmup" in help_text)
    data = {"latency_ms": {"p50": 1.25, "p90": 1.5, "p99": 2.0}, "throughput_per_s": 790.1,
            "cuda_graph": "replayed 109"}
    assert bench_cuda.brief(data, "") == "p50 1.250 ms, p90 1.500, p99 2.000, 790.1 runs/s, cuda graph: replayed 109"
    assert bench_cuda.brief({}, "runs: 3\nlatency ms: p50 1.0  p90 2.0\n") == "latency ms: p50 1.0  p90 2.0"


def test_test_sh_refuses_an_unknown_group(tmp_path: Path) -> None:
    proc = subprocess.run(["bash", str(ROOT / "tools" / "gpu" / "test.sh"), "unit", "nonsense"],
                          capture_output=True, text=True, env={"OUT": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 2 and "unknown group 'nonsense'" in proc.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_shell_scripts_pass_shellcheck() -> None:
    scripts = sorted(str(p) for p in (ROOT / "tools" / "gpu").glob("*.sh"))
    proc = subprocess.run(["shellcheck", *scripts], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


# --- tools/bench/gpu_bench.py: the parts that need no GPU ---------------------------------------

sys.path.insert(0, str(ROOT / "tools" / "bench"))
import gpu_bench  # noqa: E402


def test_gpu_bench_fixes_the_batch_and_drops_symbolic_shapes(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["batch", 4])
    mid = helper.make_tensor_value_info("m", TensorProto.FLOAT16, ["batch", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["m"]), helper.make_node("Neg", ["m"], ["y"])],
                          "g", [x], [y], value_info=[mid])
    src, dst = tmp_path / "dyn.onnx", tmp_path / "bs3.onnx"
    onnx.save(helper.make_model(g), src)
    gpu_bench.fix_batch(src, dst, 3)
    m = onnx.load(dst)
    assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [3, 4]
    assert not m.graph.value_info and not m.graph.output[0].type.tensor_type.HasField("shape")
    # The optimizer takes it, and derives the output's static shape.
    text = subprocess.run([os.environ.get("ONNXOPT_OPT", str(ROOT / "build" / "bin" / "opt")), str(dst), "-O2",
                           "--emit", "text", "-o", "-"], capture_output=True, text=True, check=True).stdout
    assert "%y: float16[3,4] = Neg(%m)" in text, text


def _bench_case(model, batch, ours, cg, profile=None, ok=True):
    c = {"model": model, "batch": batch, "kind": "latency" if batch in (1, 32) else "throughput",
         "ours": {"compute": {"p50": ours}, "wall": {"p50": ours + 0.1}},
         "torch": {"eager": {"p50": 5.0}, "compile": {"p50": 3.0}, "compile_cudagraphs": {"p50": cg}},
         "check": {"max_abs_ours_vs_fp32": 0.01, "max_abs_torch16_vs_fp32": 0.008, "pass": ok}}
    if profile:
        c["profile"] = profile
    return c


def test_gpu_bench_report_tables_ratios_and_the_slowest_profile(tmp_path: Path) -> None:
    prof = [{"name": "conv_1", "op": "Conv", "mean_ms": 0.125, "percent": 40.0}]
    results = {"started": "2026-12-02 05:00:00", "environment": {"gpu": "NVIDIA H200"},
               "cases": [_bench_case("resnet50", 1, 0.5, 1.0, [{"name": "fast", "op": "Relu", "mean_ms": 0.01,
                                                            "percent": 1.0}]),
                         _bench_case("bert", 1, 1.5, 1.0, prof, ok=False), _bench_case("resnet50", 256, 10.0, 12.8)],
               "micro": [{"op": "Add", "bytes_moved": 3 << 28, "compute_ms": 0.25, "tb_per_s": 3.22}],
               "models": {"bert": {"ops_before": {"MatMul": 10}, "ops_after": {"ai.onnxopt.MatMulBias": 4}}},
               "errors": ["vit: not run"]}
    doc = tmp_path / "gpu_benchmarks.md"
    doc.write_text("# GPU benchmarks\n\nHow to read this.\n\n<!-- results -->\nold figures\n")
    text = gpu_bench.report(results, doc, None)
    assert "How to read this." in text and "old figures" not in text
    assert "| resnet50 | 1 | 0.500 | 0.600 | 5.000 | 3.000 | 1.000 | 0.50 | 0.01 / 0.008 | pass |" in text
    assert "| bert | 1 | 1.500 |" in text and "| 1.50 |" in text and "| FAIL |" in text
    # Throughput: items per second from the batch and the median.
    assert "| resnet50 | 256 | 10.000 | 25,600 |" in text and "| 20,000 |" in text
    assert "| Add | 768 MiB | 0.250 | 3.22 |" in text
    # The slowest against compile+cudagraphs is bert (1.5x), not resnet50 (0.5x).
    assert "slowest case: bert batch 1 (1.50x" in text and "| conv_1 | Conv | 0.1250 | 40.0 |" in text
    assert "bert: 10 nodes exported, 4 after: ai.onnxopt.MatMulBias 4" in text
    assert "- vit: not run" in text


def test_gpu_bench_per_op_totals_of_a_profile(tmp_path: Path) -> None:
    rows = [{"name": "a", "op": "Conv", "placement": "device", "mean_ms": 0.5, "percent": 0},
            {"name": "b", "op": "Relu", "placement": "device", "mean_ms": 0.25, "percent": 0},
            {"name": "c", "op": "Conv", "placement": "device", "mean_ms": 0.25, "percent": 0}]
    ops = gpu_bench.profile_ops(rows)
    assert [(o["op"], o["steps"], o["ms"], o["percent"]) for o in ops] == [
        ("Conv (device)", 2, 0.75, 75.0), ("Relu (device)", 1, 0.25, 25.0)]
    case = _bench_case("resnet50", 32, 2.0, 1.0)
    case["profile_ops"] = ops
    text = gpu_bench.report({"cases": [case], "micro": [], "models": {}, "errors": []}, tmp_path / "g.md", None)
    assert "| resnet50 bs32 | 1.00 | Conv (device) x2 0.75 (75%); Relu (device) x1 0.25 (25%) |" in text


def test_gpu_bench_layout_table_compares_the_two_layouts(tmp_path: Path) -> None:
    case = _bench_case("mobilenet", 32, 2.5, 1.0)
    case["layout"] = {"nhwc_compute": {"p50": 3.0}, "nchw_compute": {"p50": 2.4}, "transposes_nhwc": 2,
                      "transposes_nchw": 0, "max_abs_nhwc_vs_nchw": 0.004, "tolerance": 0.017, "pass": True}
    bad = _bench_case("resnet50", 32, 2.8, 1.0)
    bad["layout"] = dict(case["layout"], max_abs_nhwc_vs_nchw=0.5, **{"pass": False})
    text = gpu_bench.report({"cases": [case, bad], "micro": [], "models": {}, "errors": []},
                            tmp_path / "g.md", None)
    assert "| mobilenet | 32 | 3.000 | 2.400 | 0.80 | 2 / 0 | 0.004 (0.017) | pass |" in text
    assert "| resnet50 | 32 | 3.000 | 2.400 | 0.80 | 2 / 0 | 0.5 (0.017) | FAIL |" in text


def test_gpu_bench_merges_runs_without_duplicating_cases() -> None:
    first = {"cases": [_bench_case("bert", 1, 1.0, 0.5)], "micro": [], "models": {"bert": {"a": 1}}, "errors": []}
    second = {"cases": [_bench_case("vit", 1, 2.0, 0.5)], "micro": [{"op": "Add"}], "models": {}, "errors": ["x"]}
    profiles = {"cases": [dict(_bench_case("bert", 1, 9.0, 9.0), profile_ops=[{"op": "MatMul (device)"}])],
                "micro": [], "models": {"bert": {"a": 2}}, "errors": []}
    m = gpu_bench.merge([first, second, profiles])
    assert [(c["model"], c["batch"]) for c in m["cases"]] == [("bert", 1), ("vit", 1)]
    bert = m["cases"][0]
    assert bert["ours"]["compute"]["p50"] == 1.0 and bert["profile_ops"] == [{"op": "MatMul (device)"}]
    assert m["micro"] == [{"op": "Add"}] and m["errors"] == ["x"] and m["models"] == {"bert": {"a": 1}}
    # A --no-torch run's empty torch timings are filled from a later run; its own stay.
    no_torch = dict(_bench_case("bert", 1, 1.0, 0.5), torch={})
    with_torch = _bench_case("bert", 1, 3.0, 0.75)
    m = gpu_bench.merge([{"cases": [no_torch], "micro": [{"op": "Add"}], "models": {}, "errors": [],
                          "started": "B"},
                         {"cases": [with_torch], "micro": [{"op": "Add"}, {"op": "Softmax"}], "models": {},
                          "errors": [], "started": "A"}])
    assert m["cases"][0]["ours"]["compute"]["p50"] == 1.0
    assert m["cases"][0]["torch"] == with_torch["torch"] and m["runs"] == ["B", "A"]
    assert [x["op"] for x in m["micro"]] == ["Add", "Softmax"]


def test_gpu_bench_merge_takes_profiles_only_of_the_same_plan() -> None:
    """A later run's profile fills a case only where it planned the same graph: an older -O3's
    profile (other node counts) would describe another graph than the timings beside it."""
    def case(plan: str, **extra) -> dict:
        return dict(_bench_case("vit", 1, 1.0, 0.5), plan=[plan, "memory: ..."], **extra)
    new = {"cases": [case("plan: 117 nodes")], "micro": [], "models": {}, "errors": []}
    old = {"cases": [case("plan: 333 nodes", profile=[{"step": "Transpose"}],
                          profile_ops=[{"op": "Transpose (device)"}])],
           "micro": [], "models": {}, "errors": []}
    same = {"cases": [case("plan: 117 nodes", profile=[{"step": "PackedAttention"}])],
            "micro": [], "models": {}, "errors": []}
    merged = gpu_bench.merge([new, old])["cases"][0]
    assert "profile" not in merged and "profile_ops" not in merged
    new = {"cases": [case("plan: 117 nodes")], "micro": [], "models": {}, "errors": []}
    assert gpu_bench.merge([new, same])["cases"][0]["profile"] == [{"step": "PackedAttention"}]
