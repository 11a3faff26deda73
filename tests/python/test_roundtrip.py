"""opt IN -o OUT -O0 over every model of the corpus: the checker still accepts OUT, ORT's outputs are unchanged.

The property itself lives in roundtrip_check.py, which tools/roundtrip_report.py shares.
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

import roundtrip_check

CASES = roundtrip_check.corpus()


def test_corpus_is_present() -> None:
    suites = collections.Counter(case.id.split("/")[0] for case in CASES)
    # Fewer cases than this means a data folder went missing, which would otherwise pass silently.
    minimum = {"real": 80, "light": 9, "pytorch-converted": 60, "pytorch-operator": 30, "simple": 20, "node": 1700, "bundled": 11}
    short = {s: (suites[s], n) for s, n in minimum.items() if suites[s] < n}
    where = roundtrip_check.shared_dir()
    assert not short, f"corpus incomplete (found, expected at least): {short}; shared folder {where}"


@pytest.mark.corpus
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_roundtrip(case: roundtrip_check.Case, opt: Path, work_dir: Path) -> None:
    outcome = roundtrip_check.check_case(case, opt, work_dir)
    assert not outcome.failures, f"{case.model}:\n  " + "\n  ".join(outcome.failures)
