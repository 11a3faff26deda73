"""docs/ stays small and portable: under 400 KB (run data and generated tables per run live in
tools/results/, earlier runs in git history: docs/benchmarks.md), and no page or script names a folder
of the machine it was written on."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS_LIMIT_BYTES = 400 * 1000
# Home and work folders of one machine; system prefixes (/usr, /opt) are not one machine's.
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|home|root|mnt|scratch|Users)/\w")


def test_docs_under_limit():
    sizes = {p: p.stat().st_size for p in (ROOT / "docs").rglob("*") if p.is_file()}
    total = sum(sizes.values())
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total < DOCS_LIMIT_BYTES, f"docs/ holds {total} bytes; largest: {largest}"


def test_no_machine_paths_in_docs_and_scripts():
    files = [p for p in (ROOT / "docs").rglob("*.md")]
    files += [p for p in (ROOT / "tools").rglob("*") if p.suffix in {".sh", ".py", ".md"}]
    files += [ROOT / "README.md", *(ROOT / "tools" / "results").glob("*.md")]
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in files
            for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
            if MACHINE_PATH.search(line)]
    assert not hits, f"absolute paths of a machine: {hits}"
