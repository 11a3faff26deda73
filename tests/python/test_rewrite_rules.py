"""`opt --rewrite-rules`: what a mistake in a rules file says (file, line, reason; exit 1; no output
written), rules that do not apply at a model's opset, and a rule that never stops matching. The
matcher's positive and negative cases are lit tests (tests/lit/passes/rewrite-rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

MODEL = """<ir_version: 9, opset_import: ["" : 18]>
g (float[2,3] a) => (float[2,3] y) {
  n = Neg(a)
  y = Neg(n)
}
"""

GOOD_PATTERN = """<domain: "pattern", opset_import: ["" : 18]>
neg_neg (x) => (y) {
  n = Neg(x)
  y = Neg(n)
}
"""

# (rules text, what the error must say). Line numbers count from the file's first line.
BAD_RULES = {
    "syntax": (
        GOOD_PATTERN + '<domain: "replacement", opset_import: ["" : 18]>\nneg_neg (x) => (y) {\n  y = Identity(x\n}\n',
        ["rules.onnxtxt:9:", "textual syntax error"],
    ),
    "no_replacement": (GOOD_PATTERN, ["rules.onnxtxt:1:", "pattern 'neg_neg' has no replacement"]),
    "no_pattern": (
        '<domain: "replacement", opset_import: ["" : 18]>\nlone (x) => (y) {\n  y = Identity(x)\n}\n',
        ["rules.onnxtxt:1:", "replacement 'lone' has no pattern"],
    ),
    "unknown_input": (
        GOOD_PATTERN + '<domain: "replacement", opset_import: ["" : 18]>\nneg_neg (x, z) => (y) {\n  y = Add(x, z)\n}\n',
        ["rules.onnxtxt:6:", "input 'z' is not an input of the pattern"],
    ),
    "unbound_input": (
        '<domain: "pattern", opset_import: ["" : 18]>\nr (x, z) => (y) {\n  y = Neg(x)\n}\n'
        '<domain: "replacement", opset_import: ["" : 18]>\nr (x, z) => (y) {\n  y = Add(x, z)\n}\n',
        ["rules.onnxtxt:5:", "input 'z' is read, but the pattern does not read it"],
    ),
    "output_count": (
        GOOD_PATTERN
        + '<domain: "replacement", opset_import: ["" : 18]>\nneg_neg (x) => (y, z) {\n  y = Identity(x)\n  z = Identity(x)\n}\n',
        ["rules.onnxtxt:6:", "has 2 outputs but its pattern has 1"],
    ),
    "no_body": (
        GOOD_PATTERN
        + '<domain: "replacement", opset_import: ["" : 18, "my" : 1]>\nneg_neg (x) => (y) {\n  t = my.Thing(x)\n  y = Identity(t)\n}\n',
        ["rules.onnxtxt:8:", "my.Thing needs a function body"],
    ),
    "unbound_parameter": (
        GOOD_PATTERN
        + '<domain: "replacement", opset_import: ["" : 18]>\nneg_neg (x) => (y) {\n  y = LeakyRelu <alpha = @alpha> (x)\n}\n',
        ["rules.onnxtxt:8:", "refers to @alpha, which the pattern does not bind"],
    ),
    "dangling_node": (
        '<domain: "pattern", opset_import: ["" : 18]>\nr (x) => (y) {\n  y = Neg(x)\n  z = Exp(x)\n}\n'
        '<domain: "replacement", opset_import: ["" : 18]>\nr (x) => (y) {\n  y = Neg(x)\n}\n',
        ["rules.onnxtxt:4:", "does not lead to the pattern's first output"],
    ),
    "unknown_op": (
        '<domain: "pattern", opset_import: ["" : 18]>\nr (x) => (y) {\n  y = NoSuchOp(x)\n}\n'
        '<domain: "replacement", opset_import: ["" : 18]>\nr (x) => (y) {\n  y = Neg(x)\n}\n',
        ["rules.onnxtxt:1:", "NoSuchOp"],
    ),
    "two_versions": (
        GOOD_PATTERN + '<domain: "replacement", opset_import: ["" : 17]>\nneg_neg (x) => (y) {\n  y = Identity(x)\n}\n',
        ["rules.onnxtxt:6:", "imports domain '' at version 17, but line 1 imports it at version 18"],
    ),
    "bad_tolerance": (
        '<domain: "pattern", opset_import: ["" : 18]>\nr (x) => (y) {\n  c = Constant <value_float = 1.0, rtol = -1.0> ()\n'
        "  y = Mul(x, c)\n}\n"
        '<domain: "replacement", opset_import: ["" : 18]>\nr (x) => (y) {\n  y = Identity(x)\n}\n',
        ["rules.onnxtxt:3:", "rtol must be a number >= 0"],
    ),
    "empty": ("# nothing here\n", ["rules.onnxtxt: the file holds no function"]),
}


@pytest.mark.parametrize("case", sorted(BAD_RULES))
def test_bad_rules_file_is_a_clear_error(case: str, run_opt, work_dir: Path) -> None:
    text, expected = BAD_RULES[case]
    rules = work_dir / "rules.onnxtxt"
    rules.write_text(text)
    model = work_dir / "m.onnxtxt"
    model.write_text(MODEL)
    out = work_dir / "out.onnx"
    proc = run_opt(model, "-o", out, "--rewrite-rules", rules)
    assert proc.returncode == 1, proc.stderr
    for piece in expected:
        assert piece in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()


def test_missing_rules_file_is_a_usage_error(run_opt, work_dir: Path) -> None:
    model = work_dir / "m.onnxtxt"
    model.write_text(MODEL)
    proc = run_opt(model, "--rewrite-rules", work_dir / "absent.onnxtxt", "-o", work_dir / "o.onnx")
    assert proc.returncode == 2 and "absent.onnxtxt" in proc.stderr, proc.stderr


def test_rule_skipped_at_another_opset(run_opt, work_dir: Path) -> None:
    """Softmax changed at opset 13: a rule written at 18 does not apply to a model at 11."""
    rules = work_dir / "rules.onnxtxt"
    rules.write_text(
        '<domain: "pattern", opset_import: ["" : 18]>\nsm (x) => (y) {\n  y = Softmax(x)\n}\n'
        '<domain: "replacement", opset_import: ["" : 18]>\nsm (x) => (y) {\n  y = Identity(x)\n}\n'
    )
    model = work_dir / "m.onnxtxt"
    model.write_text('<ir_version: 6, opset_import: ["" : 11]>\ng (float[2,3] a) => (float[2,3] y) {\n  y = Softmax(a)\n}\n')
    proc = run_opt(model, "--passes=rewrite-rules", "--rewrite-rules", rules, "--emit", "text")
    assert proc.returncode == 0, proc.stderr
    assert "rewrite rule 'sm'" in proc.stderr and "Softmax is Softmax-11" in proc.stderr, proc.stderr
    assert "Softmax(%a)" in proc.stdout


def test_rule_that_keeps_matching_is_reported(run_opt, work_dir: Path) -> None:
    """A replacement that its own pattern matches again stops at the rounds cap, with a warning
    (an error under --verify-convergence)."""
    rules = work_dir / "rules.onnxtxt"
    rules.write_text(
        '<domain: "pattern", opset_import: ["" : 18]>\nloop (x) => (y) {\n  y = Relu(x)\n}\n'
        '<domain: "replacement", opset_import: ["" : 18]>\nloop (x) => (y) {\n  y = Relu(x)\n}\n'
    )
    model = work_dir / "m.onnxtxt"
    model.write_text(MODEL.replace("Neg(n)", "Relu(n)"))
    proc = run_opt(model, "--passes=rewrite-rules", "--rewrite-rules", rules, "-o", work_dir / "o.onnx")
    assert proc.returncode == 0 and "did not converge" in proc.stderr, proc.stderr
    proc = run_opt(model, "--passes=rewrite-rules", "--rewrite-rules", rules, "--verify-convergence",
                   "-o", work_dir / "o2.onnx")
    assert proc.returncode == 1 and not (work_dir / "o2.onnx").exists(), proc.stderr


def test_rules_run_in_the_default_pipeline(run_opt, work_dir: Path) -> None:
    """At -O2 the rules run after -O1's cleanup: the reproducer names the rules file."""
    rules = work_dir / "rules.onnxtxt"
    rules.write_text(GOOD_PATTERN + '<domain: "replacement", opset_import: ["" : 18]>\nneg_neg (x) => (y) {\n  y = Identity(x)\n}\n')
    model = work_dir / "m.onnxtxt"
    model.write_text(MODEL)
    proc = run_opt(model, "--rewrite-rules", rules, "--stats", "-o", work_dir / "o.onnx")
    assert proc.returncode == 0, proc.stderr
    assert "rewrite-rules.applied.neg_neg" in proc.stdout, proc.stdout


IDENTITIES = [Path(__file__).resolve().parents[2] / p for p in (
    "tools/plugins/swiglu/swiglu_rules.onnxtxt", "tests/lit/passes/rewrite-rules/inputs/basic.onnxtxt")]
TRANSFORMERS = sorted((Path(__file__).resolve().parents[2] / "models" / "transformers").glob("*/model.onnx"))


@pytest.mark.parametrize("model", TRANSFORMERS, ids=lambda p: p.parent.name)
def test_identity_rules_keep_bundled_models_outputs(model: Path, run_opt, work_dir: Path) -> None:
    """The test rules are identities (a stable softmax, x*x as Pow, x*0.5 as x/2, ...): applied at
    -O2 to the bundled transformers, every output stays within opt check's tolerance."""
    out = work_dir / "out.onnx"
    flags = [a for r in IDENTITIES for a in ("--rewrite-rules", r)]
    proc = run_opt(model, "-o", out, *flags)
    assert proc.returncode == 0, proc.stderr
    proc = run_opt("check", model, out)
    assert proc.returncode == 0 and "check: passed" in proc.stdout, proc.stdout + proc.stderr
