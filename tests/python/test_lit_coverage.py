"""Every registered pass has its lit tests: a folder tests/lit/passes/<pass-id>/ with at least one
test (docs/passes.md: a textual test per rule, positive and negative cases), and every such folder
names a pass or the pass driver."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIT_PASSES = ROOT / "tests" / "lit" / "passes"
# Folders that test the pass machinery rather than one pass.
NOT_A_PASS = {"driver"}


def pass_ids(opt: Path) -> list[str]:
    """The ids `opt --list-passes` prints: the first word of each line that is not an option."""
    r = subprocess.run([str(opt), "--list-passes"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in r.stdout.splitlines() if line and not line[0].isspace()]


def test_list_passes_names_the_registry(opt):
    ids = pass_ids(opt)
    registry = (ROOT / "passes" / "registry.def").read_text()
    assert len(ids) == registry.count("\nONNXOPT_PASS("), ids
    assert len(set(ids)) == len(ids), ids


def test_every_pass_has_lit_tests(opt):
    missing = [p for p in pass_ids(opt) if not any((LIT_PASSES / p).glob("*.onnxtxt"))]
    assert not missing, f"passes without tests in tests/lit/passes/<pass-id>/: {missing}"


def test_every_lit_folder_names_a_pass(opt):
    known = set(pass_ids(opt)) | NOT_A_PASS
    stray = sorted(d.name for d in LIT_PASSES.iterdir() if d.is_dir() and d.name not in known)
    assert not stray, f"tests/lit/passes/ folders that name no pass: {stray}"
