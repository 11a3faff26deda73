"""tools/bench/zoo_bench.py's parts that need no torch and no GPU: the model registry, the argument
errors, the plan summary's parse, the output check, the merge of partial runs and the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import zoo_bench  # noqa: E402
import zoo_models  # noqa: E402
import zoo_report  # noqa: E402

SCRIPT = ROOT / "tools" / "bench" / "zoo_bench.py"


def test_registry_holds_the_issues_models() -> None:
    names = [s.name for s in zoo_models.SPECS]
    assert len(names) == len(set(names)) >= 24
    for want in ("mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "efficientnet_b0", "shufflenet_v2_x1_0",
                 "regnet_y_400mf", "resnet18", "convnext_tiny", "densenet121", "squeezenet1_1",
                 "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large",
                 "fasterrcnn_mobilenet_v3_large_320_fpn", "unet_diffusion", "whisper_tiny_encoder",
                 "whisper_tiny_decoder", "distilbert", "minilm_sentence", "t5_small_encoder", "clip_vit_b32"):
        assert want in names
    families = {s.family for s in zoo_models.SPECS}
    assert {"rnn", "timm"} <= families
    assert sum(s.family == "rnn" for s in zoo_models.SPECS) >= 4
    # Detectors unbind their batch into a list of images: exported once per batch size.
    assert not zoo_models.REGISTRY["ssdlite320_mobilenet_v3_large"].dynamic


def test_select_takes_models_and_families_and_names_unknown_ones() -> None:
    assert zoo_models.select("resnet18,rnn,resnet18")[:2] == ["resnet18", "lstm_bidir"]
    assert len(zoo_models.select("all")) == len(zoo_models.SPECS)
    with pytest.raises(ValueError, match="unknown model.*nope"):
        zoo_models.select("resnet18,nope")
    with pytest.raises(ValueError, match="no model"):
        zoo_models.select(",")


def test_list_prints_every_model_without_torch() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "list"], capture_output=True, text=True, check=True)
    assert len(proc.stdout.splitlines()) == len(zoo_models.SPECS)
    assert "torch" not in sys.modules or True  # the registry itself imports no torch:
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(SCRIPT.parent)!r}); "
                           "import zoo_bench, zoo_report; print('torch' in sys.modules)"],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


@pytest.mark.parametrize("args, message", [
    (["--models", "nope"], "unknown model(s) nope"),
    (["--exporters", "onnxmltools"], "exporters: onnxmltools"),
    (["--precisions", "bf16"], "precisions: bf16"),
    (["--levels", "O1"], "levels: O1"),
    (["--batches", "0"], "batches: positive integers"),
    (["--opt", "no/such/opt"], "no/such/opt: no such file"),
])
def test_run_refuses_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    base = {"--opt": sys.executable, "--out": str(tmp_path)}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    argv = ["run", *[x for kv in base.items() for x in kv]]
    proc = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "zoo_bench.json").exists()


def test_placements_parse_the_plan_summary() -> None:
    out = ("plan: 120 nodes: 100 device, 12 host (10 folded), 2 cpu-fallback, 6 view; 130 steps, 4 copies\n"
           "memory: arena 1 bytes\nfallback: nms_0: no CUDA kernel for NonMaxSuppression\n"
           "fallback: topk_3: k is not a constant\n"
           "fallback: node '/model/NonZero' (NonZero): no CUDA kernel for NonZero\n")
    pl = zoo_bench.placements(out, {"nms_0": "NonMaxSuppression", "topk_3": "TopK"})
    assert (pl["nodes"], pl["device"], pl["host"], pl["folded"], pl["cpu_fallback"]) == (120, 100, 2, 10, 2)
    assert [(f["op"], f["reason"]) for f in pl["fallback"]] == [
        ("NonMaxSuppression", "no CUDA kernel for NonMaxSuppression"), ("TopK", "k is not a constant"),
        ("NonZero", "no CUDA kernel for NonZero")]


def test_check_outputs_passes_fails_and_calls_torchs_own_shape_change_unstable() -> None:
    ref = [np.ones((2, 3), np.float32), np.zeros((4, 4), np.float32)]
    low = [r + 1e-3 for r in ref]
    good = {"out0": ref[0] + 1e-3, "out1": ref[1]}
    assert zoo_bench.check_outputs(good, ref, low, 1e-4)["verdict"] == "pass"
    bad = {"out0": ref[0] + 1.0, "out1": ref[1]}
    c = zoo_bench.check_outputs(bad, ref, low, 1e-4)
    assert c["verdict"] == "FAIL" and c["failures"][0]["output"] == 0
    assert zoo_bench.check_outputs({"out0": ref[0]}, ref, low, 1e-4)["failures"][0]["why"] == "missing"
    # A detector: ours and torch's fp16 both found a box fewer than torch fp32.
    boxes = [np.ones((5, 4), np.float32)]
    c = zoo_bench.check_outputs({"out0": np.ones((4, 4), np.float32)}, boxes, [np.ones((4, 4), np.float32)], 1e-3)
    assert c["verdict"] == "unstable" and not c["pass"]
    c = zoo_bench.check_outputs({"out0": np.ones((4, 4), np.float32)}, boxes, boxes, 1e-3)
    assert c["verdict"] == "FAIL"


def case(model, exporter, batch, precision, o3=None, o2=None, verdict="pass", fallback=(), **extra) -> dict:
    c = {"model": model, "exporter": exporter, "batch": batch, "precision": precision, **extra}
    if verdict:
        c["check"] = {"verdict": verdict, "pass": verdict == "pass"}
    if o3 is not None:
        c["ours"] = {"O3": {"compute": {"p50": o3}}, "O2": {"compute": {"p50": o2 or o3}}}
        c["placement"] = {"O3": {"fallback": [{"name": f"n{i}", "op": op, "reason": "r"}
                                              for i, op in enumerate(fallback)]}}
    return c


def torch_row(model, batch, precision, cg, eager=None) -> dict:
    return {"model": model, "batch": batch, "precision": precision, "compile_cudagraphs": {"p50": cg},
            "eager": {"p50": eager or 2 * cg}}


def run_json(started, cases, torch, gpu="NVIDIA H100 80GB HBM3", models=None) -> dict:
    return {"started": started, "environment": {"gpu": gpu, "torch": "2.11"}, "cases": cases, "torch": torch,
            "models": models or {}, "errors": []}


def test_merge_keeps_the_row_that_measured_more() -> None:
    first = run_json("t1", [case("a", "dynamo", 1, "fp32", o3=1.0), case("b", "dynamo", 1, "fp32", o3=2.0)],
                     [torch_row("a", 1, "fp32", 1.0)], models={"a": {"params": 1}})
    # The second run re-measured a (faster), was cut before b's timing, and added c.
    second = run_json("t2", [case("a", "dynamo", 1, "fp32", o3=0.5), case("b", "dynamo", 1, "fp32"),
                             case("c", "torchscript", 16, "fp16", o3=3.0)],
                      [torch_row("a", 1, "fp32", 0.9), {"model": "c", "batch": 16, "precision": "fp16"}],
                      models={"a": {"params": 2}})
    m = zoo_report.merge([first, second])
    by = {zoo_report.case_key(c): c for c in m["cases"]}
    assert len(by) == 3
    assert by[("a", "dynamo", 1, "fp32")]["ours"]["O3"]["compute"]["p50"] == 0.5
    assert by[("b", "dynamo", 1, "fp32")]["ours"]["O3"]["compute"]["p50"] == 2.0
    assert {zoo_report.torch_key(t): t for t in m["torch"]}[("a", 1, "fp32")]["compile_cudagraphs"]["p50"] == 0.9
    assert m["models"]["a"]["params"] == 2 and [r["started"] for r in m["runs"]] == ["t1", "t2"]


def synthetic() -> dict:
    cases, torch = [], []
    for model in ("mobilenet_v3_small", "lstm_state", "ssdlite320_mobilenet_v3_large"):
        for batch in (1, 16):
            for precision, scale in (("fp32", 1.0), ("fp16", 0.6)):
                slow = model == "lstm_state" and precision == "fp16"  # fp16 slower than fp32
                o3 = (1.2 if slow else scale) * batch
                o2 = o3 * (0.9 if model == "lstm_state" else 1)  # -O3 slower than -O2
                cases.append(case(model, "dynamo", batch, precision, o3=o3, o2=o2,
                                  fallback=("NonMaxSuppression", "TopK") if model.startswith("ssd") else (),
                                  verdict="unstable" if model.startswith("ssd") and precision == "fp16" else "pass"))
                torch.append(torch_row(model, batch, precision, 1.1 * batch))
        cases.append({"model": model, "exporter": "torchscript", "batch": 1, "precision": "fp32",
                      "error": "export: UnsupportedOperatorError: aten::foo"})
    return run_json("2026-12-06 23:00:00", cases, torch)


def test_report_writes_the_table_the_geomeans_and_the_goals(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "gpu_benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# GPU benchmarks\n\nintro\n\n<!-- results -->\nold results\n")
    table = tmp_path / "results" / "zoo_bench.md"
    kind = zoo_report.write(zoo_report.merge([synthetic()]), doc, table, chart=False)
    text = doc.read_text()
    assert kind == "full"
    assert text.index("<!-- zoo -->") < text.index("<!-- /zoo -->") < text.index("<!-- results -->")
    assert text.endswith("<!-- results -->\nold results\n")
    assert "| mobilenet_v3_small | dynamo | 16 | fp16 | 9.600 | 17.600 | 0.55 | 1.00 | 35.200 | pass | - |" in text
    assert "| ssdlite320_mobilenet_v3_large | dynamo | 1 | fp16 | 0.600 | 1.100 | 0.55 | 1.00 | 2.200 | unstable | " \
           "NonMaxSuppression 1, TopK 1 |" in text
    assert "| mobilenet_v3_small | torchscript | 1 | fp32 | - | 1.100 | - | - | 2.200 | error | ? |" in text
    assert "- mobilenet_v3_small torchscript fp32 bs1: export: UnsupportedOperatorError: aten::foo" in table.read_text()
    assert "- NOT MET: ours at or below 1.0x torch.compile+cudagraphs: 10 of 12 timed cases; worst: lstm_state " \
           "dynamo fp16 bs1 1.09x" in text
    assert "- NOT MET: fp16 never slower than fp32 (by over 3%): 2 of 6 pairs slower" in text
    assert "- NOT MET: -O3 never slower than -O2 (by over 3%): 4 of 12 cases slower" in text
    assert "- NOT MET: every output within tolerance: 10 of 12 checked cases pass" in text
    assert "- NOT MET: no node on the CPU fallback: 1 model(s) with some: ssdlite320_mobilenet_v3_large " \
           "(NonMaxSuppression 1, TopK 1)" in text
    # Geometric means: 1/1.1 in fp32; 0.6/1.1 twice and 1.2/1.1 in fp16.
    assert "| batch 1 | 0.91 | 0.69 | 0.79 |" in text
    assert table.read_text().count("\n| ") == 1 + 15  # header, every case
    # Writing again replaces the section rather than adding one.
    zoo_report.write(zoo_report.merge([synthetic()]), doc, table, chart=False)
    assert doc.read_text().count("<!-- zoo -->") == 1


def test_report_falls_back_to_one_row_per_model_under_the_docs_limit(tmp_path: Path) -> None:
    doc = tmp_path / "docs" / "gpu_benchmarks.md"
    doc.parent.mkdir()
    doc.write_text("# GPU benchmarks\n")
    merged = zoo_report.merge([synthetic()])
    full = zoo_report.write(merged, doc, tmp_path / "t.md", chart=False, limit=10**6)
    size_full = doc.stat().st_size
    limit = size_full + zoo_report.DOCS_MARGIN - 1  # the full section no longer fits
    assert full == "full"
    assert zoo_report.write(merged, doc, tmp_path / "t.md", chart=False, limit=limit) == "compact"
    text = doc.read_text()
    assert "| model | exporter | fp32 bs1 | fp32 bs16 | fp16 bs1 | fp16 bs16 |" in text
    assert "| lstm_state | dynamo | 0.91 | 0.91 | 1.09 | 1.09 | 1.11 | pass |" in text
    with pytest.raises(SystemExit, match="over"):
        zoo_report.write(merged, doc, tmp_path / "t.md", chart=False, limit=1000)


def test_report_command_merges_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    data = synthetic()
    a.write_text(json.dumps({**data, "cases": data["cases"][:5]}))
    b.write_text(json.dumps({**data, "started": "later", "cases": data["cases"][5:]}))
    doc = tmp_path / "docs" / "g.md"
    doc.parent.mkdir()
    merged = tmp_path / "m.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "report", str(a), str(b), "--doc", str(doc), "--table",
                           str(tmp_path / "t.md"), "--merged", str(merged), "--no-chart"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(merged.read_text())["cases"]) == len(data["cases"])
    assert "Merged from 2 run(s)" in doc.read_text()


def test_short_errors_keep_the_cause_at_the_end_without_colours() -> None:
    text = zoo_bench.short(RuntimeError("\x1b[96mstep 1/3\x1b[0m " + "advice " * 300 + "the cause"))
    assert text.startswith("RuntimeError: step 1/3 advice") and text.endswith("the cause") and len(text) < 800
