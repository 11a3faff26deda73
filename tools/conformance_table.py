#!/usr/bin/env python3
"""Runs every ONNX node test case through the reference kernels (via the fold pass, see
tests/python/conformance.py) and writes docs/conformance.md: pass / fail / unsupported per op, and
the CUDA runtime's columns (pass / fallback / fail per op, its failures and fallback reasons) from the
JSON of tools/gpu/conformance_cuda.py run on the GPU machine.

    .venv/bin/python tools/conformance_table.py [--out docs/conformance.md] [--jobs 2]
    .venv/bin/python tools/conformance_table.py --cuda-json conformance.json   # from the GPU run's $OUT
    .venv/bin/python tools/conformance_table.py --cuda-json conformance.json --keep-reference  # seconds

--cuda-json also writes tools/results/conformance_cuda.json (what the columns need), which later runs without
the flag read, so regenerating the reference column keeps the last GPU run's columns. --keep-reference
takes the reference column from the existing table instead of running every case again.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import conformance  # noqa: E402
import roundtrip_check  # noqa: E402


# The CUDA columns' data between GPU runs (cuda_digest of the last --cuda-json).
# The CUDA fallback table lists the reasons of at least this many nodes (the digest has them all).
FALLBACK_ROWS_FROM = 4
CUDA_DIGEST = ROOT / "tools" / "results" / "conformance_cuda.json"

# Why an op stays without a kernel, beside what opt says about it.
WHY = {
    "ImageDecoder": "decoding needs image codecs (BMP, JPEG, JPEG 2000, PNG, PNM, TIFF, WebP); the "
                    "reference kernels carry none, and the project links no codec library",
}


def table_op(case: str, ops: list[str]) -> str:
    """The row a case counts for: the single op it tests, or the op named by its folder."""
    return ops[0] if len(ops) == 1 else "(expanded: " + case.removeprefix("test_").split("_")[0] + ")"


def reference_unsupported(path: Path = ROOT / "docs" / "conformance.md") -> dict[str, str]:
    """The cases the reference kernels cannot run, with why, as the table at `path` lists them."""
    text = path.read_text() if path.is_file() else ""
    section = text.split("\n## Unsupported cases\n", 1)[1] if "\n## Unsupported cases\n" in text else ""
    section = section.split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^- `(test_[^`]+)` \([^)]*\): (.*)$", section, re.M)}


def _reason(detail: str) -> str:
    """What opt said, without the temporary paths and the fold attempt that came first."""
    detail = re.sub(r"^not folded: \[[^\]]*\]; ", "", detail)
    detail = re.sub(r"opt: error: \S+?\.onnx: ", "", detail)
    return detail.replace("\n", " ").strip()


def _reference_case(path: str) -> conformance.Result:
    with tempfile.TemporaryDirectory() as tmp:
        return conformance.run_case(Path(path), roundtrip_check.opt_path(), Path(tmp))


def cuda_digest(results: dict) -> dict:
    """What the table keeps of tools/gpu/conformance_cuda.py's JSON (CUDA_DIGEST): where it ran, the
    counts per op, the failures and the fallback reasons."""
    failures = [{"case": c["case"], "ops": c["ops"], "detail": c["detail"]}
                for c in results["cases"] if c["status"] == "fail"]
    return {"device": results.get("device", ""), "gpu": results.get("gpu", ""), "date": results.get("date", ""),
            "commit": results.get("commit", ""), "onnx": results.get("onnx", ""), "cases": len(results["cases"]),
            "totals": results["totals"], "per_op": results["per_op"], "failures": failures,
            "fallback_reasons": results["fallback_reasons"]}


def _cuda_header(cuda: dict) -> list[str]:
    where = f"the CUDA runtime on {cuda['gpu'] or 'a GPU'}"
    if cuda["device"] != "cuda":
        where = f"NOT a GPU run: the {cuda['device']} device, a test of the harness"
    commit = f", commit {cuda['commit']}" if cuda["commit"] else ""
    return ["", f"*CUDA* columns: {where} ({cuda['date']}{commit}; {cuda['cases']} cases), from",
            "`tools/gpu/conformance_cuda.py` (`bash tools/gpu/test.sh conformance` on the GPU machine): each case",
            "through `opt run --device cuda` on its input .pb files at the same tolerances. *pass*: right, every",
            "node on the GPU; *fallback*: right, some node on the CPU reference kernels (reasons below); *fail*:",
            "wrong or an error. The reference's unsupported cases are not run there. Regenerate with",
            "`tools/conformance_table.py --cuda-json conformance.json` (kept in `tools/results/conformance_cuda.json`)."]


def reference_part(results: list[conformance.Result]) -> tuple[dict[str, collections.Counter], list[str]]:
    """The reference column's counts per op, and its sections (failures, unsupported cases)."""
    per_op: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures, unsupported = [], []
    for r in results:
        per_op[table_op(r.case, r.ops)][r.outcome] += 1
        if r.outcome == "fail":
            failures.append(r)
        elif r.outcome == "unsupported":
            unsupported.append(r)
    sections = []
    if failures:
        sections += ["", "## Failures", ""] + [f"- `{r.case}` ({', '.join(r.ops)}): {r.detail}" for r in failures]
    if unsupported:
        sections += ["", "## Unsupported cases", "", "Each case that neither folds nor runs, with what `opt` said.", ""]
        for r in unsupported:
            why = "; ".join(WHY[o] for o in r.ops if o in WHY)
            sections.append(f"- `{r.case}` ({', '.join(r.ops)}): {_reason(r.detail)}" + (f" ({why})" if why else ""))
    return per_op, sections


def parse_reference_part(text: str) -> tuple[dict[str, collections.Counter], list[str]]:
    """reference_part as a table written by this script holds it (--keep-reference)."""
    per_op: dict[str, collections.Counter] = {}
    lines = text.splitlines()
    for line in lines:
        m = re.match(r"^\| ([^|*][^|]*?) \| (\d+) \| (\d+) \| (\d+) \|", line)
        if m and m.group(1) != "op":
            per_op[m.group(1)] = collections.Counter(
                {"pass": int(m.group(2)), "fail": int(m.group(3)), "unsupported": int(m.group(4))})
    sections, on = [], False
    for line in lines:
        if line.startswith("## "):
            on = not line.startswith("## CUDA")
        if on:
            sections.append(line)
    if sections:
        sections.insert(0, "")
    while sections and sections[-1] == "":
        sections.pop()
    return per_op, sections


def render(per_op: dict[str, collections.Counter], sections: list[str], cuda: dict | None) -> str:
    """docs/conformance.md: the reference column (per_op, sections) and, given a digest, the CUDA
    columns and sections."""
    lines = ["# Reference kernel conformance", "",
             "Generated by `tools/conformance_table.py` (do not edit by hand): every case of ONNX's node tests",
             "(`../shared/onnx-node-tests`) with its inputs turned into initializers and folded by",
             "`opt --passes=fold-constants`; the folded outputs are compared with the expected ones (rtol 1e-3,",
             "atol 1e-7 for floats, exact otherwise). A case that does not fold (control flow, sequences and",
             "optionals, random ops with a seed) runs through `opt run` instead (tests/python/conformance.py).",
             "*unsupported*: neither works; the cases are listed at the end with the reason."]
    head, rule = "| op | pass | fail | unsupported |", "|---|---:|---:|---:|"
    if cuda:
        lines += _cuda_header(cuda)
        head, rule = head + " CUDA pass | CUDA fallback | CUDA fail |", rule + "---:|---:|---:|"
    lines += ["", head, rule]
    totals, cuda_totals = collections.Counter(), collections.Counter()
    for op in sorted(per_op, key=lambda o: (o.startswith("("), o)):
        c = per_op[op]
        totals.update(c)
        row = f"| {op} | {c['pass']} | {c['fail']} | {c['unsupported']} |"
        if cuda:
            g = cuda["per_op"].get(op)
            row += f" {g['pass']} | {g['fallback']} | {g['fail']} |" if g else " - | - | - |"
            cuda_totals.update(g or {})
        lines.append(row)
    total = f"| **total** | **{totals['pass']}** | **{totals['fail']}** | **{totals['unsupported']}** |"
    if cuda:
        total += f" **{cuda_totals['pass']}** | **{cuda_totals['fallback']}** | **{cuda_totals['fail']}** |"
    lines.append(total)
    lines += sections
    if cuda and cuda["failures"]:
        lines += ["", "## CUDA failures", ""]
        lines += [f"- `{f['case']}` ({', '.join(f['ops'])}): {_reason(f['detail'])}" for f in cuda["failures"]]
    if cuda and cuda["fallback_reasons"]:
        shown = [f for f in cuda["fallback_reasons"] if f["nodes"] >= FALLBACK_ROWS_FROM]
        lines += ["", "## CUDA fallbacks", "",
                  "Nodes that run on the CPU reference kernels in the CUDA runtime: op, the",
                  "reason the CUDA kernel gave (canImplement), and how many nodes of the cases had it",
                  f"(reasons of {FALLBACK_ROWS_FROM} nodes or more; every reason is in "
                  f"{Path(CUDA_DIGEST).relative_to(ROOT)}).", "",
                  "| op | reason | nodes |", "|---|---|---:|"]
        lines += [f"| {f['op']} | {f['reason'].replace('|', '/')} | {f['nodes']} |" for f in shown]
        others = [f for f in cuda["fallback_reasons"] if f["nodes"] < FALLBACK_ROWS_FROM]
        if others:
            lines += ["", f"{len(others)} more reasons cover {sum(f['nodes'] for f in others)} nodes."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "conformance.md"))
    parser.add_argument("--cuda-json", help="conformance_cuda.py's JSON from a GPU run: the CUDA columns "
                        "(kept in --cuda-digest for later runs without this flag)")
    parser.add_argument("--cuda-digest", default=str(CUDA_DIGEST),
                        help="what the CUDA columns come from when --cuda-json is not given")
    parser.add_argument("--keep-reference", action="store_true",
                        help="take the reference column from --out (or docs/conformance.md) as it is instead "
                        "of running every case "
                        "(seconds instead of minutes: for a new --cuda-json)")
    parser.add_argument("--jobs", type=int, default=1, help="reference cases run at once")
    args = parser.parse_args()
    cuda = None
    if args.cuda_json:
        cuda = cuda_digest(json.loads(Path(args.cuda_json).read_text()))
        Path(args.cuda_digest).write_text(json.dumps(cuda, indent=1) + "\n")
    elif Path(args.cuda_digest).is_file():
        cuda = json.loads(Path(args.cuda_digest).read_text())
    if args.keep_reference:
        source = Path(args.out) if Path(args.out).is_file() else ROOT / "docs" / "conformance.md"
        per_op, sections = parse_reference_part(source.read_text())
    else:
        paths = [str(p) for p in conformance.cases()]
        with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            per_op, sections = reference_part(list(pool.map(_reference_case, paths, chunksize=4)))
    Path(args.out).write_text(render(per_op, sections, cuda))
    totals = sum(per_op.values(), collections.Counter())
    print(f"pass {totals['pass']}, fail {totals['fail']}, unsupported {totals['unsupported']} -> {args.out}")
    if cuda:
        t = cuda["totals"]
        print(f"cuda: pass {t['pass']}, fallback {t['fallback']}, fail {t['fail']}, unsupported {t['unsupported']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
