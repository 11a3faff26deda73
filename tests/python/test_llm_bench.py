"""tools/bench/llm_bench.py: its argument errors and its table need no torch; the tiny configuration's
whole CPU path (the model built and exported with its KV cache, `-O3 --target cuda`, ours on the
reference runner, Hugging Face on the CPU, the greedy ids compared, the JSON and the table, then a
second call reusing the cached build) needs torch and transformers, and skips without them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "bench" / "llm_bench.py"
sys.path.insert(0, str(SCRIPT.parent))
import llm_report  # noqa: E402

SMALL = ["--prefill", "16,40", "--batches", "1,3", "--context", "24", "--warmup", "1", "--runs", "2",
         "--decode-steps", "4", "--check-tokens", "6"]


def bench(tmp_path: Path, opt: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(SCRIPT), "--size", "tiny", "--device", "cpu", "--opt", str(opt),
           "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"), *SMALL, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=240)


@pytest.mark.parametrize("args, message", [
    (["--size", "tiny,3b"], "size: 3b (of tiny, 1b, 8b)"),
    (["--batches", "1,0"], "batches: positive integers"),
    (["--prefill", "x"], "prefill: positive integers"),
    (["--decode-steps", "0"], "decode-steps: at least 1"),
    (["--opt", "no/such/opt"], "no/such/opt: no such file"),
])
def test_refuses_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    base = {"--opt": sys.executable, "--out": str(tmp_path / "out")}
    base.update(zip(args[::2], args[1::2]))
    proc = subprocess.run([sys.executable, str(SCRIPT), *[x for kv in base.items() for x in kv]],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_table_gives_errors_skips_and_the_goals() -> None:
    results = {"device": "cuda", "started": "now", "bandwidth": {"gb_per_s": 3000.0}, "args": {"context": 512},
               "sizes": {"1b": {
                   "prefill": {"128": {"ours": {"ms": 2.0}, "torch_eager": {"ms": 3.0}, "torch_compile": {"ms": 2.5}},
                               "2048": {"ours": {"error": "ResourceExhaustedError: out of | memory"},
                                        "torch_eager": {"skipped": "budget (3 s left)"}}},
                   "decode": {"1": {"ours": {"tokens_per_s": 900.0}, "torch": {"tokens_per_s": 600.0},
                                    "bound": {"tokens_per_s": 1000.0}},
                              "32": {"ours": {"tokens_per_s": 12000.0}, "torch": {"tokens_per_s": 10000.0},
                                     "bound": {"tokens_per_s": 30000.0}}},
                   "check": {"agree": False, "rows": 2, "tokens": 8,
                             "first_mismatch": {"row": 1, "position": 5, "ours": 7, "torch": 9}}}},
               "errors": ["1b prefill 2048 ours: ResourceExhaustedError: out of | memory"]}
    text = llm_report.markdown(results)
    assert "| 128 | 2.000 | 3.000 | 2.500 | 1.25x |" in text
    assert "| 2048 | error: ResourceExhaustedError: out of \\| memory | skipped: budget (3 s left) | not run | - |" in text
    assert "| 1 | 900.0 | 600.0 | 1000.0 | 90.0% | 60.0% | 1.50x |" in text
    assert "first differ at row 1, new token 5 (ours 7, torch 9)" in text
    assert ("Goals: decode at batch 1 at least 85% of the bound: yes (90.0%); decode at batch 1 faster than torch: "
            "yes (1.50x); prefill at least as fast as torch: yes (128: 1.25x); decode at batch 32 at least 1.3x "
            "torch: no (1.20x).") in text


def test_from_json_merges_calls(tmp_path: Path) -> None:
    one = {"device": "cuda", "sizes": {"1b": {"prefill": {"128": {"ours": {"ms": 2.0}}}}}, "errors": ["a"]}
    two = {"device": "cuda", "sizes": {"8b": {"prefill": {"128": {"ours": {"ms": 9.0}}}}}, "errors": ["b"]}
    paths = []
    for i, run in enumerate((one, two)):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_text(json.dumps(run))
    proc = subprocess.run([sys.executable, str(SCRIPT), "--from-json", *map(str, paths), "--out", str(tmp_path / "md")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "md" / "llm_bench.md").read_text()
    assert text.index("### 1B") < text.index("### 8B") and "| 128 | 9.000 |" in text and "- a\n- b" in text


def test_tiny_on_the_cpu_end_to_end(tmp_path: Path, opt: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("onnxscript")
    proc = bench(tmp_path, opt)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((tmp_path / "out" / "llm_bench.json").read_text())
    assert results["errors"] == [] and results["bandwidth"]["gb_per_s"] > 0
    tiny = results["sizes"]["tiny"]
    assert tiny["build"]["cached"] is False and tiny["build"]["nodes"]["optimized"] < tiny["build"]["nodes"]["exported"]
    assert tiny["build"]["fused"]["Attention"] == 2 and tiny["build"]["fused"]["ai.onnxopt.SwiGlu"] == 2
    check = tiny["check"]
    assert check["agree"] and check["first_mismatch"] is None, check
    assert len(check["ours"]) == 2 and len(check["ours"][0]) == 6 and check["ours"] == check["torch"]
    assert list(tiny["prefill"]) == ["16", "40"] and list(tiny["decode"]) == ["1", "3"]
    for cell in tiny["prefill"].values():
        assert cell["ours"]["ms"] > 0 and cell["torch_eager"]["ms"] > 0 and "torch_compile" not in cell
    for b, cell in tiny["decode"].items():
        assert cell["ours"]["tokens_per_s"] > 0 and cell["torch"]["tokens_per_s"] > 0
        bound = cell["bound"]
        assert bound["bytes_per_step"] == tiny["weight_bytes_read_per_step"] + tiny["kv_bytes_per_token"] * 24 * int(b)
        assert bound["tokens_per_s"] == pytest.approx(results["bandwidth"]["gb_per_s"] * 1e9 / bound["bytes_per_step"]
                                                      * int(b))
    table = (tmp_path / "out" / "llm_bench.md").read_text()
    assert "| prompt (batch 1) | ours ms |" in table and "greedy ids, 2 rows x 6 new tokens: equal to torch's" in table
    # A second call reuses the build: no export, the same figures' structure.
    proc = bench(tmp_path, opt, "--phase", "time", "--no-torch")
    assert proc.returncode == 0, proc.stderr[-3000:]
    again = json.loads((tmp_path / "out" / "llm_bench.json").read_text())["sizes"]["tiny"]
    assert again["build"]["cached"] is True and again["check"]["agree"]
    assert "torch" not in again["decode"]["1"] and again["decode"]["1"]["ours"]["tokens_per_s"] > 0
