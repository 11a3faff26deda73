"""The zoo benchmark's report (tools/bench/zoo_bench.py report): the merge of several runs' JSONs,
the per-case table (tools/results/zoo_bench.md), and the zoo section of docs/gpu_benchmarks.md
between the markers `<!-- zoo -->` and `<!-- /zoo -->` (before gpu_bench's `<!-- results -->`, whose
report keeps what precedes it). docs/ must stay under its size limit (tests/python/test_docs.py):
where the per-case table would pass it, the section holds one row per model and exporter (the
ratios of each batch and precision) and links the full table; the chart goes into docs/ only where
it fits too, else beside the table. Needs no torch."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS_LIMIT_BYTES = 400 * 1000  # tests/python/test_docs.py
DOCS_MARGIN = 4000  # left free for the pages' own edits
BEGIN, END = "<!-- zoo -->", "<!-- /zoo -->"
# A ratio above 1 by less than this is timing noise (run-to-run spread of a median), not "slower".
NOISE = 0.03


def case_key(c: dict) -> tuple:
    return c["model"], c["exporter"], c["batch"], c["precision"]


def torch_key(t: dict) -> tuple:
    return t["model"], t["batch"], t["precision"]


def measured(row: dict) -> int:
    """How much a row holds: its check, each level's timing, each torch mode."""
    return (bool(row.get("check")) + len(row.get("ours", {}))
            + sum(1 for k in ("eager", "compile_cudagraphs") if row.get(k)))


def merge(runs: list[dict]) -> dict:
    """Several runs' results as one, in order: a later run's row of a case (model, exporter, batch,
    precision) or of torch's timings (model, batch, precision) replaces the earlier one unless it
    measured less; models' infos likewise by name; errors and runs are added."""
    merged: dict = {"runs": [], "models": {}, "cases": [], "torch": [], "errors": []}
    cases: dict = {}
    torch_rows: dict = {}
    for data in runs:
        env = data.get("environment", {})
        merged["runs"].append({"started": data.get("started"), "gpu": env.get("gpu"), "torch": env.get("torch"),
                               "dry_run": bool(data.get("dry_run"))})
        for c in data.get("cases", []):
            old = cases.get(case_key(c))
            if old is None or measured(c) >= measured(old):
                cases[case_key(c)] = c
        for t in data.get("torch", []):
            old = torch_rows.get(torch_key(t))
            if old is None or measured(t) >= measured(old):
                torch_rows[torch_key(t)] = t
        for name, info in data.get("models", {}).items():
            merged["models"][name] = info
        merged["errors"] += data.get("errors", [])
        merged.setdefault("environment", env)
    merged["cases"] = list(cases.values())
    merged["torch"] = list(torch_rows.values())
    return merged


def p50(d: dict | None, *keys) -> float | None:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d.get("p50") if isinstance(d, dict) else None


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fmt(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def fallback_op(name: str, ops: dict[str, str]) -> str:
    """The op type of a fallback line's node: `--stats` names it "node 'n' (Op)"; a bare name is
    looked up in `ops`."""
    m = re.fullmatch(r"node '.*' \(([\w.]+)\)", name)
    return m.group(1) if m else ops.get(name, "?")


def fallback_cell(c: dict) -> str:
    """The ops of the nodes on the CPU fallback at -O3 ('-' when none, '?' when not run)."""
    pl = (c.get("placement") or {}).get("O3")
    if pl is None:
        return "?"
    ops: dict[str, int] = {}
    for f in pl.get("fallback", []):
        op = f["op"] if f["op"] != "?" else fallback_op(f["name"], {})
        ops[op] = ops.get(op, 0) + 1
    return ", ".join(f"{op} {n}" for op, n in sorted(ops.items())) or "-"


def rows(results: dict) -> list[dict]:
    """One dict per case with what the tables show."""
    torch_rows = {torch_key(t): t for t in results.get("torch", [])}
    out = []
    for c in sorted(results.get("cases", []), key=lambda c: (c["model"], c["exporter"], c["precision"], c["batch"])):
        t = torch_rows.get((c["model"], c["batch"], c["precision"]), {})
        o3, o2 = p50(c, "ours", "O3", "compute"), p50(c, "ours", "O2", "compute")
        cg = p50(t, "compile_cudagraphs")
        check = c.get("check") or {}
        out.append({"case": c, "o3": o3, "o2": o2, "cg": cg, "eager": p50(t, "eager"),
                    "ratio": o3 / cg if o3 and cg else None, "o3_o2": o3 / o2 if o3 and o2 else None,
                    "check": check.get("verdict", "-") if not c.get("error") else "error",
                    "fallback": fallback_cell(c)})
    return out


def verdicts(results: dict, table: list[dict]) -> list[str]:
    """The issue's goals, each met or not, with the cases that miss it."""
    timed = [r for r in table if r["ratio"] is not None]
    out = []

    def line(ok: bool, text: str, measured: bool = True) -> None:
        out.append(f"- {'not measured' if not measured else 'met' if ok else 'NOT MET'}: {text}")

    def name(r: dict) -> str:
        c = r["case"]
        return f"{c['model']} {c['exporter']} {c['precision']} bs{c['batch']}"

    def worst(items: list[tuple[float, dict]]) -> str:
        return "; worst: " + ", ".join(f"{name(r)} {q:.2f}x" for q, r in items[:5]) if items else ""

    slow = sorted(((r["ratio"], r) for r in timed if r["ratio"] > 1.0), key=lambda x: -x[0])
    line(not slow, f"ours at or below 1.0x torch.compile+cudagraphs: {len(timed) - len(slow)} of "
         f"{len(timed)} timed cases" + worst(slow), bool(timed))
    g = geomean([r["ratio"] for r in timed])
    line(g is not None and g <= 0.8, f"geometric mean at or below 0.8x: {fmt(g, 2)}x", g is not None)
    by = {case_key(r["case"]): r for r in table}
    pairs = [(r, by.get(k[:3] + ("fp32",))) for k, r in by.items() if k[3] == "fp16"]
    pairs = [(h, f) for h, f in pairs if f and h["o3"] and f["o3"]]
    worse = sorted(((h["o3"] / f["o3"], h) for h, f in pairs if h["o3"] > f["o3"] * (1 + NOISE)), key=lambda x: -x[0])
    line(not worse, f"fp16 never slower than fp32 (by over {NOISE:.0%}): {len(worse)} of {len(pairs)} "
         "pairs slower" + worst(worse), bool(pairs))
    levels = [r for r in table if r["o3_o2"] is not None]
    o3_slow = sorted(((r["o3_o2"], r) for r in levels if r["o3_o2"] > 1 + NOISE), key=lambda x: -x[0])
    line(not o3_slow, f"-O3 never slower than -O2 (by over {NOISE:.0%}): {len(o3_slow)} of "
         f"{len(levels)} cases slower" + worst(o3_slow), bool(levels))
    checked = [r for r in table if r["check"] not in ("-", "error")]
    bad = [r for r in checked if r["check"] != "pass"]
    line(not bad, f"every output within tolerance: {len(checked) - len(bad)} of {len(checked)} "
         "checked cases pass" + ("; " + ", ".join(f"{name(r)} {r['check']}" for r in bad[:6]) if bad else ""),
         bool(checked))
    placed = [r for r in table if r["fallback"] != "?"]
    cpu = sorted({f"{r['case']['model']} ({r['fallback']})" for r in placed if r["fallback"] != "-"})
    line(not cpu, f"no node on the CPU fallback: {len(cpu)} model(s) with some"
         + (": " + "; ".join(cpu) if cpu else ""), bool(placed))
    failed = [r for r in table if r["check"] == "error"]
    if failed:
        out.append(f"- {len(failed)} case(s) did not run to the end (an exporter's or opt's failure; the per-case "
                   "table gives each one's error)")
    return out


def geomean_table(table: list[dict]) -> list[str]:
    batches = sorted({r["case"]["batch"] for r in table})
    precs = [p for p in ("fp32", "fp16") if any(r["case"]["precision"] == p for r in table)]
    lines = ["| ours / torch.compile+cudagraphs | " + " | ".join(precs) + " | all |",
             "|---|" + "---:|" * (len(precs) + 1)]
    for b in [*batches, None]:
        sel = [r for r in table if b is None or r["case"]["batch"] == b]
        cells = [fmt(geomean([r["ratio"] for r in sel if r["case"]["precision"] == p]), 2) for p in precs]
        cells.append(fmt(geomean([r["ratio"] for r in sel]), 2))
        lines.append(f"| {'batch ' + str(b) if b else 'all'} | " + " | ".join(cells) + " |")
    return lines


def full_table(table: list[dict]) -> list[str]:
    lines = ["| model | exporter | batch | precision | ours ms | torch.compile ms | ratio | -O3/-O2 | torch eager ms | "
             "check | CPU-fallback nodes |", "|---|---|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for r in table:
        c = r["case"]
        lines.append(f"| {c['model']} | {c['exporter']} | {c['batch']} | {c['precision']} | {fmt(r['o3'])} | "
                     f"{fmt(r['cg'])} | {fmt(r['ratio'], 2)} | {fmt(r['o3_o2'], 2)} | {fmt(r['eager'])} | "
                     f"{r['check']} | {r['fallback']} |")
    return lines


def compact_table(table: list[dict]) -> list[str]:
    """One row per model and exporter: ours / torch.compile+cudagraphs of each precision and batch."""
    combos = sorted({(r["case"]["precision"], r["case"]["batch"]) for r in table}, key=lambda k: (k[0] != "fp32", k[1]))
    head = " | ".join(f"{p} bs{b}" for p, b in combos)
    lines = [f"| model | exporter | {head} | worst -O3/-O2 | checks | CPU-fallback nodes |",
             "|---|---|" + "---:|" * (len(combos) + 1) + "---|---|"]
    groups: dict = {}
    for r in table:
        groups.setdefault((r["case"]["model"], r["case"]["exporter"]), []).append(r)
    for (model, exporter), rs in groups.items():
        by = {(r["case"]["precision"], r["case"]["batch"]): r for r in rs}
        cells = [fmt(by[k]["ratio"], 2) if k in by else "" for k in combos]
        if all(by.get(k, {}).get("check") == "error" for k in combos if k in by):
            cells = ["error" if k in by else "" for k in combos]
        worst = max((r["o3_o2"] for r in rs if r["o3_o2"]), default=None)
        checks = sorted({r["check"] for r in rs})
        fb = sorted({r["fallback"] for r in rs if r["fallback"] not in ("-", "?")})
        lines.append(f"| {model} | {exporter} | " + " | ".join(cells) + f" | {fmt(worst, 2)} | {', '.join(checks)} | "
                     f"{'; '.join(fb) or '-'} |")
    return lines


def errors(results: dict) -> str:
    """The cases that did not run to the end, each with its error, and the run's other errors."""
    lines = [f"- {c['model']} {c['exporter']} {c['precision']} bs{c['batch']}: {c['error'][:300]}"
             for c in results.get("cases", []) if c.get("error")]
    # A model a run had no time for and a later run measured is no error of the merge.
    ran = {c["model"] for c in results.get("cases", [])}
    lines += [f"- {e[:300]}" for e in results.get("errors", [])
              if "not run" in e and e.split(" ")[0].rstrip(":") not in ran]
    return "\n## Errors\n\n" + "\n".join(line.replace("\n", " ") for line in lines) + "\n" if lines else ""


def section(results: dict, table: list[dict], body: list[str], table_link: str, chart: str | None) -> str:
    runs = results.get("runs", [])
    gpus = sorted({r["gpu"] for r in runs if r.get("gpu")})
    models = sorted({r["case"]["model"] for r in table})
    cases = results.get("cases", [])
    exporters = sorted({c["exporter"] for c in cases if c.get("exporter")})
    batches = [str(b) for b in sorted({c["batch"] for c in cases if c.get("batch")})]
    levels = sorted({lv for c in cases for lv in (c.get("opt_s") or {})}, key=lambda lv: -int(lv[1:]))
    head = [BEGIN, "## The zoo: models no kernel was tuned for (issue 50)", "",
            f"`tools/bench/zoo_bench.py` (tools/gpu/test.sh's `zoo` group): {len(models)} models with random weights, "
            f"exported by torch's {' and '.join(exporters) or 'dynamo and TorchScript'} "
            f"exporter{'s' if len(exporters) != 1 else ''}, at batch {', '.join(batches) or '1 and 16'}, at "
            f"`{' --target cuda --target-opset 23`, `'.join('-' + lv for lv in levels) or '-O3'} --target cuda "
            "--target-opset 23`, timed with `opt bench --device cuda` (device time of the node steps, CUDA graph replay) "
            "against torch.compile(mode=\"reduce-overhead\") on the same inputs, median ms; every output checked "
            "against torch fp32 with TF32 off. "
            f"Merged from {len(runs)} run(s) ({', '.join(str(r.get('started')) for r in runs)}) on "
            f"{', '.join(gpus) or 'no GPU (dry runs)'}" + (" (timings from different cards: compare within one)"
                                                          if len(gpus) > 1 else "") + ".", ""]
    if chart:
        head += [f"![ours / torch.compile+cudagraphs per model]({chart})", ""]
    head += ["### Goals", "", *verdicts(results, table), "", "### Geometric means", "", *geomean_table(table), "",
             f"### Per case (full table with torch eager times: [{Path(table_link).name}]({table_link}))", "", *body,
             END]
    return "\n".join(head) + "\n"


def put_section(doc_text: str, sec: str) -> str:
    if BEGIN in doc_text and END in doc_text:
        before, rest = doc_text.split(BEGIN, 1)
        return before + sec + rest.split(END, 1)[1].lstrip("\n")
    if "<!-- results -->" in doc_text:
        before, after = doc_text.split("<!-- results -->", 1)
        return before.rstrip() + "\n\n" + sec + "\n<!-- results -->" + after
    return doc_text.rstrip() + "\n\n" + sec


def docs_bytes(docs: Path, without: Path | None = None) -> int:
    return sum(p.stat().st_size for p in docs.rglob("*") if p.is_file() and p != without)


def chart_png(table: list[dict], path: Path) -> bool:
    """A bar per model: the geometric mean of its ratios; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from chart_png import save_png
    except ImportError:
        return False
    per: dict[str, list[float]] = {}
    for r in table:
        if r["ratio"]:
            per.setdefault(r["case"]["model"], []).append(r["ratio"])
    if not per:
        return False
    names = sorted(per, key=lambda n: geomean(per[n]))
    fig, ax = plt.subplots(figsize=(7, 0.22 * len(names) + 1))
    ax.barh(names, [geomean(per[n]) for n in names], color="tab:blue")
    ax.axvline(1.0, color="black", lw=0.8)
    ax.axvline(0.8, color="green", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel("ours / torch.compile+cudagraphs (geometric mean of cases; lower is better)")
    ax.tick_params(labelsize=7)
    fig.tight_layout()
    save_png(fig, path, dpi=72)
    plt.close(fig)
    return True


def write(results: dict, doc: Path, table_path: Path, chart: bool, limit: int = DOCS_LIMIT_BYTES) -> str:
    """Writes the full table and the docs section; returns which docs table went in."""
    table = rows(results)
    table_path.parent.mkdir(parents=True, exist_ok=True)
    table_path.write_text("# The zoo benchmark, per case\n\nWritten by `tools/bench/zoo_bench.py report`; "
                          "docs/gpu_benchmarks.md's zoo section says how it was measured.\n\n"
                          + "\n".join(verdicts(results, table)) + "\n\n" + "\n".join(full_table(table)) + "\n"
                          + errors(results))
    docs = doc.parent
    link = Path("..", table_path.resolve().relative_to(ROOT)) if table_path.resolve().is_relative_to(ROOT) \
        else table_path
    old = doc.read_text() if doc.exists() else "# GPU benchmarks\n"
    others = docs_bytes(docs, doc) if docs.exists() else 0
    png = docs / "gpu_benchmarks_zoo.png"
    png_bytes = png.stat().st_size if png.exists() else 0
    kind, text = "full", ""
    for kind, body in (("full", full_table(table)), ("compact", compact_table(table))):
        text = put_section(old, section(results, table, body, str(link), None))
        if others - png_bytes + len(text.encode()) <= limit - DOCS_MARGIN:
            break
    else:
        raise SystemExit(f"zoo report: docs/ would hold {others - png_bytes + len(text.encode())} bytes, over "
                         f"{limit - DOCS_MARGIN}; not written (the full table is in {table_path})")
    if chart:
        png.unlink(missing_ok=True)
        side = table_path.with_suffix(".png")
        if chart_png(table, png) and others - png_bytes + png.stat().st_size + len(text.encode()) + 200 <= \
                limit - DOCS_MARGIN:
            text = put_section(old, section(results, table, full_table(table) if kind == "full"
                                            else compact_table(table), str(link), png.name))
        else:
            png.unlink(missing_ok=True)
            if chart_png(table, side):
                text = put_section(old, section(results, table, full_table(table) if kind == "full"
                                                else compact_table(table), str(link),
                                                str(Path(link).with_suffix(".png"))))
    doc.write_text(text)
    return kind


def main(a) -> int:
    merged = merge([json.loads(Path(f).read_text()) for f in a.results])
    if a.merged:
        Path(a.merged).write_text(json.dumps(merged, indent=1))
    kind = write(merged, Path(a.doc), Path(a.table), not a.no_chart)
    print(f"wrote {a.table} and the zoo section of {a.doc} ({kind} table)")
    return 0
