"""Two contracts of `opt -O2` over the whole corpus (roundtrip_check.corpus(): the ONNX backend suites, the node
tests, the bundled models and shared/models/real):

- it is a fixed point: -O2 of the -O2 result is that result (compared as `opt --emit text` prints them, with a
  digest of every tensor's value, the inferred types of node results left out: a second shape inference may name
  a symbolic dim better, as `batch` for `unk__3`, without a node changing). A pass that runs before another one exposes what
  it matches (a fusion before the Transposes that hide its chain are cancelled) breaks it;
- it never grows a model: no model leaves -O2 with more nodes than it came in with, counting the nodes of every
  subgraph (If/Loop/Scan bodies) and of model-local functions.

A model opt refuses is refused with one error line (test_optimize_corpus checks which ones may be); neither
contract applies to it."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import onnx
import pytest

import roundtrip_check

CASES = roundtrip_check.corpus()

EMIT_TEXT = ("-O0", "--emit", "text", "-o", "-")


def node_count(graph: onnx.GraphProto) -> int:
    """The nodes of `graph` and of every graph nested in its nodes' attributes."""
    count = 0
    for node in graph.node:
        count += 1
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                count += node_count(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                count += sum(node_count(g) for g in a.graphs)
    return count


def model_node_count(path: Path) -> int:
    model = onnx.load(str(path), load_external_data=False)
    return node_count(model.graph) + sum(node_count(onnx.GraphProto(node=f.node)) for f in model.functions)


def optimize(opt: Path, src: Path, dst: Path) -> subprocess.CompletedProcess:
    return roundtrip_check.run_opt(opt, src, "-o", dst, "-O2")


def _untyped(line: str) -> str:
    """A node line `%a: T1, %b: T2 = Op(...)` as `%a, %b = Op(...)`; other lines as they are (names may hold ':',
    a type annotation is ': ' after the name)."""
    m = re.match(r"^(\s*)(%.*?) = (.*)$", line)
    if not m:
        return line
    names = [result.split(": ")[0] for result in re.split(r", (?=%)", m.group(2))]
    return f"{m.group(1)}{', '.join(names)} = {m.group(3)}"


def as_text(opt: Path, path: Path) -> str:
    """The model as `opt --emit text` prints it (large constants elided), node result types left out, then one
    line per tensor (initializers, Constant values, in every graph) with a digest of its value: a changed value
    of an unchanged shape must show."""
    proc = roundtrip_check.run_opt(opt, path, *EMIT_TEXT)
    assert proc.returncode == 0, f"opt --emit text {path.name}: {proc.stderr.strip()[:500]}"
    model = onnx.load(str(path), load_external_data=False)
    digests = sorted(f"tensor {t.name}: {hashlib.sha1(t.SerializeToString()).hexdigest()}"
                     for t in roundtrip_check.all_tensors(model))
    return "\n".join([_untyped(line) for line in proc.stdout.splitlines()] + digests)


@pytest.mark.corpus
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_o2_is_a_fixed_point_and_never_grows_a_model(case: roundtrip_check.Case, opt: Path, work_dir: Path) -> None:
    once, twice = work_dir / "once" / "model.onnx", work_dir / "twice" / "model.onnx"
    once.parent.mkdir()
    twice.parent.mkdir()
    first = optimize(opt, case.model, once)
    if first.returncode != 0:
        assert (problem := roundtrip_check.error_line_problem(first, case.model)) is None, problem
        return
    before, after = model_node_count(case.model), model_node_count(once)
    assert after <= before, f"{case.id}: -O2 made {before} nodes into {after}"
    second = optimize(opt, once, twice)
    assert second.returncode == 0, f"-O2 of the -O2 result failed: {second.stderr.strip()[:500]}"
    again = model_node_count(twice)
    text_once, text_twice = as_text(opt, once), as_text(opt, twice)
    if text_once != text_twice:
        diff = [f"- {a}\n+ {b}" for a, b in zip(text_once.splitlines(), text_twice.splitlines()) if a != b]
        pytest.fail(f"{case.id}: a second -O2 changes the model ({after} nodes into {again}); first difference:\n"
                    + (diff[0] if diff else "(one text is a prefix of the other)"))
