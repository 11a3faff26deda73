"""The front ends hold no optimization policy: `opt` (tools/opt) and the Python module (src/python)
parse their own syntax into onnxopt::OptimizeOptions and print or convert the results; the pass
options their flags stand for, --precision's range analysis and the random-input recipe live once,
in the api layer (src/api) and the runtime's inputs (runtime::randomInputOptions).

A name below found in a front end means policy was written there again: move it behind the api.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FRONT_ENDS = [REPO / "tools" / "opt", REPO / "src" / "python"]

# Pass ids and pass options as string literals (a flag's own name, "--max-nodes", is the front
# end's syntax and stays).
PASS_OPTION_LITERALS = [
    "fold-constants", "size-limit", "fold-qdq", "grow-weights", "inline-functions", "max-nodes",
    "freeze-initializer-inputs", "keep-overridable", "rewrite-rules", "function-bodies",
    "quantize-weights", "block-size", "lm-head",
]
# The precision analysis and the random-input recipe's parts.
POLICY_CALLS = [
    "analyzePrecision", "PrecisionAnalysisOptions", "precisionMeasurable", "withPrecision", "withQuantize",
    "spatialInputSizes", "symbolSizes", "inferIntRanges", "cudaCapabilities",
]
PATTERN = re.compile(
    r'"(?:' + "|".join(map(re.escape, PASS_OPTION_LITERALS)) + r')"'
    + r"|\b(?:" + "|".join(POLICY_CALLS) + r")\b")


def sources():
    for root in FRONT_ENDS:
        for path in sorted(root.rglob("*")):
            if path.suffix in {".cc", ".h", ".py"} and path.is_file():
                yield path


def test_front_ends_hold_no_policy():
    found = []
    for path in sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if PATTERN.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "policy in a front end (move it to src/api):\n" + "\n".join(found)


def test_the_names_are_the_apis():
    # The check would pass vacuously if the names were renamed away: the api must hold them.
    api = "\n".join(p.read_text() for p in sorted((REPO / "src" / "api").glob("*.cc")))
    for name in ["size-limit", "max-nodes", "keep-overridable", "fold-qdq", "grow-weights"]:
        assert f'"{name}"' in api, name
    for name in ["analyzePrecision", "precisionMeasurable", "randomInputOptions", "cudaCapabilities"]:
        assert name in api, name
