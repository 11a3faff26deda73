"""`opt --precision fp16` and `--precision bf16` over every model of the corpus (roundtrip_check.corpus(): the real
models of ../shared/models/real, onnx's backend suites and node tests, the bundled models). Each conversion either
succeeds or is refused: exit 0 with a model that onnx.checker's full check accepts (where it accepted the original)
and that onnxruntime loads and runs (where it runs the original) with the original's output names, types and shapes;
or one line `opt: error: FILE: reason`, exit 1, and no file written (beside it only notes and warnings: a failing
pass's reproducer, the precision analysis' warnings).

onnxruntime's CPU provider has no float16 or bfloat16 kernel for some ops (bfloat16 above all). Its session checks
the graph's types (Graph::Resolve) before it looks kernels up, so a session refused for a missing kernel alone
("Could not find an implementation for ...") has passed the type check: there only loading is checked, and the
outcome says so; likewise a kernel that refuses the type when run for some attribute values ("MLFloat16 data type is
not supported with ScatterND opset 16 when reduction is 'add'"). Numbers are not compared here (test_convert_precision.py
holds converted models to the target type's tolerance): a converted model differs from the original by the type's
rounding. About 4 minutes of CPU for the 4052 conversions: marked `corpus`, so the sanitizer run samples it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import onnx
import pytest

import roundtrip_check
from roundtrip_check import _one_line

CASES = roundtrip_check.corpus()
MISSING_KERNEL = "Could not find an implementation for"
# A kernel that exists but refuses the type for some attribute values when run (ScatterND's reductions).
UNSUPPORTED_AT_RUN = "data type is not supported with"


def refusal_problem(proc: subprocess.CompletedProcess, model: Path) -> str | None:
    """Why a refusal breaks the contract: exit 1, one error line naming the model, the rest notes and warnings."""
    lines = proc.stderr.splitlines()
    errors = [line for line in lines if line.startswith(roundtrip_check.ERROR_PREFIX)]
    others = [line for line in lines if not line.startswith(("opt: note: ", "opt: warning: ", roundtrip_check.ERROR_PREFIX))]
    if proc.returncode != 1:
        return f"exit code {proc.returncode}, expected 1: {proc.stderr.strip()[:500]!r}"
    if len(errors) != 1 or others:
        return f"expected one error line and only notes and warnings beside it: {proc.stderr[:500]!r}"
    if model.name not in errors[0]:
        return f"the error does not name the input file {model.name!r}: {errors[0]!r}"
    return None


def convert_case(case: roundtrip_check.Case, precision: str, opt: Path, workdir: Path) -> tuple[str, str]:
    """("converted" | "loads only" | "refused" | "failed", detail) for one model and target type."""
    out = workdir / "converted.onnx"
    try:
        proc = roundtrip_check.run_opt(opt, case.model, "-o", out, "--precision", precision)
    except subprocess.TimeoutExpired:
        return "failed", f"opt timed out after {roundtrip_check.OPT_TIMEOUT_S}s"
    if proc.returncode != 0:
        if problem := refusal_problem(proc, case.model):
            return "failed", problem
        if written := sorted(p.name for p in workdir.iterdir()):
            return "failed", f"refused but wrote {written}"
        return "refused", next(line for line in proc.stderr.splitlines() if line.startswith("opt: error: "))
    if not out.is_file():
        return "failed", "opt exited 0 but wrote no output"
    try:
        onnx.checker.check_model(str(case.model), full_check=True)
        original_valid = True
    except Exception:
        original_valid = False
    if original_valid:
        try:
            onnx.checker.check_model(str(out), full_check=True)
        except Exception as e:
            return "failed", f"output fails onnx.checker: {_one_line(e)}"
    return run_in_ort(case, out)


def run_in_ort(case: roundtrip_check.Case, out: Path) -> tuple[str, str]:
    try:
        original = roundtrip_check._session(case.model)
    except Exception as e:
        return "converted", "onnxruntime cannot load the original: " + _one_line(e)
    model = onnx.load(str(case.model), load_external_data=False)
    inputs = [i.name for i in original.get_inputs()]
    outputs = [o.name for o in original.get_outputs()]
    expected = feeds = None
    for default_dim in (2, 1):  # as roundtrip_check.compare_in_ort
        try:
            hints = roundtrip_check.INPUT_HINTS[case.id]() if case.id in roundtrip_check.INPUT_HINTS else None
            feeds = roundtrip_check.make_feeds(model, inputs, case.data_dir, default_dim, hints)
            expected = roundtrip_check.run_session(original, feeds)
            break
        except Exception:
            expected = None
    try:
        converted = roundtrip_check._session(out)
    except Exception as e:
        if MISSING_KERNEL in str(e):
            return "loads only", _one_line(e)
        return "failed", f"onnxruntime cannot load the output: {_one_line(e)}"
    if expected is None:
        return "converted", "the original does not run in onnxruntime: loading checked"
    if (names := [o.name for o in converted.get_outputs()]) != outputs:
        return "failed", f"outputs changed: {outputs} -> {names}"
    try:
        actual = roundtrip_check.run_session(converted, feeds)
    except Exception as e:
        if UNSUPPORTED_AT_RUN in str(e):
            return "loads only", _one_line(e)
        return "failed", f"onnxruntime runs the original but not the output: {_one_line(e)}"
    if diff := roundtrip_check.outputs_diff(expected, actual, outputs, structure_only=True):
        return "failed", diff
    return "converted", ""


@pytest.mark.corpus
@pytest.mark.parametrize("precision", ["fp16", "bf16"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_converted_model_is_valid_or_refused(case: roundtrip_check.Case, precision: str, opt: Path,
                                             work_dir: Path, record_property) -> None:
    outcome, detail = convert_case(case, precision, opt, work_dir)
    record_property("outcome", outcome)  # --junitxml keeps the counts: converted, loads only, refused
    assert outcome != "failed", f"{case.model} --precision {precision}: {detail}"
