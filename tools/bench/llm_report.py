"""The tables and chart of tools/bench/llm_bench.py's results (no torch needed): per size, prefill
milliseconds for ours and torch, decode tokens/s for ours, torch and the bandwidth bound, and the
issue's goals checked against them."""

from __future__ import annotations

from pathlib import Path

TITLES = {"tiny": "tiny (2 layers)", "1b": "1B (Llama-3.2-1B's configuration)", "8b": "8B (Llama-3-8B's configuration)"}


def value(fig: dict | None, key: str):
    return fig.get(key) if isinstance(fig, dict) else None


def cell(fig: dict | None, key: str, fmt: str) -> str:
    """A figure as text: the number, or the error's line, or why it was not run."""
    if not isinstance(fig, dict):
        return "not run"
    if fig.get(key) is not None:
        return format(fig[key], fmt)
    text = f"error: {fig['error']}" if "error" in fig else f"skipped: {fig['skipped']}" if "skipped" in fig else "-"
    return text.replace("|", "\\|")


def ratio(a, b, fmt: str = ".2f", suffix: str = "x") -> str:
    return f"{a / b:{fmt}}{suffix}" if a and b else "-"


def best_torch_ms(cell_: dict) -> float | None:
    times = [value(cell_.get(k), "ms") for k in ("torch_eager", "torch_compile")]
    times = [t for t in times if t]
    return min(times) if times else None


def header(size: str, rec: dict, results: dict) -> list[str]:
    out = [f"### {TITLES.get(size, size)}", ""]
    if "error" in rec or "skipped" in rec:
        out += [f"Not measured: {rec.get('error') or 'skipped: ' + rec['skipped']}", ""]
    facts = []
    if rec.get("params"):
        count = f"{rec['params'] / 1e9:.3g} billion" if rec["params"] >= 1e9 else f"{rec['params'] / 1e6:.3g} million"
        bws = [value(c.get("bound"), "gb_per_s") for c in rec.get("decode", {}).values()]
        bw = next((f", the bound at {b:.0f} GB/s" for b in bws if b), "")
        facts.append(f"{count} parameters, {rec['weight_bytes_read_per_step'] / 2**20:,.1f} MiB "
                     f"of weights read per step, {rec['kv_bytes_per_token'] / 1024:.3g} KiB of KV cache per token{bw}")
    b = rec.get("build") or {}
    if b.get("nodes"):
        fused = ", ".join(f"{op.split('.')[-1]} {n}" for op, n in b.get("fused", {}).items())
        facts.append(f"{b['nodes']['exported']} nodes exported, {b['nodes']['optimized']} after "
                     f"`-O3 --target cuda` ({fused})" + (" (cached build)" if b.get("cached") else ""))
    c = rec.get("check")
    if isinstance(c, dict) and "agree" in c:
        m = c.get("first_mismatch")
        facts.append(f"greedy ids, {c['rows']} rows x {c['tokens']} new tokens: " +
                     ("equal to torch's" if c["agree"] else
                      f"first differ at row {m['row']}, new token {m['position']} (ours {m['ours']}, torch {m['torch']})"))
    elif isinstance(c, dict):
        facts.append(f"greedy ids: {cell(c, 'agree', '')}")
    load = rec.get("ours_load") or {}
    if load.get("source") == "cli":
        why = f" (onnxopt.Generator: {load['python_error']})" if load.get("python_error") else ""
        facts.append(f"ours timed through `opt generate`{why}; its decode figure is the mean of every step")
    elif "source" not in load and load:
        facts.append(f"ours: {cell(load, 'source', '')}")
    return out + [f"- {f}" for f in facts] + ([""] if facts else [])


def prefill_table(rec: dict) -> list[str]:
    out = ["| prompt (batch 1) | ours ms | torch eager ms | torch compile ms | best torch / ours |",
           "|---:|---:|---:|---:|---:|"]
    for n, c in rec.get("prefill", {}).items():
        ours = value(c.get("ours"), "ms")
        out.append(f"| {n} | {cell(c.get('ours'), 'ms', '.3f')} | {cell(c.get('torch_eager'), 'ms', '.3f')} | "
                   f"{cell(c.get('torch_compile'), 'ms', '.3f')} | {ratio(best_torch_ms(c), ours)} |")
    return out


def decode_table(rec: dict, context) -> list[str]:
    out = [f"| batch (context {context}) | ours tok/s | torch tok/s | bound tok/s | ours % of bound | "
           "torch % of bound | ours / torch |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for b, c in rec.get("decode", {}).items():
        ours, torch_, bound = (value(c.get(k), "tokens_per_s") for k in ("ours", "torch", "bound"))
        out.append(f"| {b} | {cell(c.get('ours'), 'tokens_per_s', '.1f')} | {cell(c.get('torch'), 'tokens_per_s', '.1f')}"
                   f" | {cell(c.get('bound'), 'tokens_per_s', '.1f')} | {ratio(ours, bound, '.1%', '')} | "
                   f"{ratio(torch_, bound, '.1%', '')} | {ratio(ours, torch_)} |")
    return out


def goals(rec: dict) -> list[str]:
    """The issue's goals, where their figures exist."""
    lines = []
    d1, d32 = rec.get("decode", {}).get("1", {}), rec.get("decode", {}).get("32", {})
    ours1, bound1, torch1 = (value(d1.get(k), "tokens_per_s") for k in ("ours", "bound", "torch"))
    if ours1 and bound1:
        lines.append(f"decode at batch 1 at least 85% of the bound: {'yes' if ours1 >= 0.85 * bound1 else 'no'} "
                     f"({ours1 / bound1:.1%})")
    if ours1 and torch1:
        lines.append(f"decode at batch 1 faster than torch: {'yes' if ours1 > torch1 else 'no'} ({ours1 / torch1:.2f}x)")
    pre = [(n, value(c.get("ours"), "ms"), best_torch_ms(c)) for n, c in rec.get("prefill", {}).items()]
    pre = [(n, o, t) for n, o, t in pre if o and t]
    if pre:
        slow = [f"{n}: {t / o:.2f}x" for n, o, t in pre]
        lines.append(f"prefill at least as fast as torch: {'yes' if all(o <= t for _, o, t in pre) else 'no'} "
                     f"({', '.join(slow)})")
    ours32, torch32 = value(d32.get("ours"), "tokens_per_s"), value(d32.get("torch"), "tokens_per_s")
    if ours32 and torch32:
        lines.append(f"decode at batch 32 at least 1.3x torch: {'yes' if ours32 >= 1.3 * torch32 else 'no'} "
                     f"({ours32 / torch32:.2f}x)")
    return [f"Goals: {'; '.join(lines)}.", ""] if lines else []


def markdown(results: dict) -> str:
    env = results.get("environment", {})
    bw = results.get("bandwidth")
    head = [f"## LLM generation ({results.get('device', 'cuda')}, run of {results.get('started', '?')})", "",
            "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items() if v) + ".",
            f"Copy bandwidth: {cell(bw, 'gb_per_s', '.0f')} GB/s (bytes read + written, torch's device-to-device "
            "copy).", ""]
    context = results.get("args", {}).get("context", 512)
    body = []
    for size, rec in results.get("sizes", {}).items():
        body += header(size, rec, results)
        if rec.get("prefill"):
            body += prefill_table(rec) + [""]
        if rec.get("decode"):
            body += decode_table(rec, context) + [""]
        body += goals(rec)
    if results.get("errors"):
        body += ["Errors:", ""] + [f"- {e}" for e in results["errors"]] + [""]
    return "\n".join(head + body)


def write_chart(results: dict, path: Path) -> None:
    """Decode tokens/s per batch (ours, torch, the bound) and prefill ms per prompt, one row of
    plots per size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from chart_png import save_png

    sizes = [s for s, r in results.get("sizes", {}).items() if r.get("decode") or r.get("prefill")]
    if not sizes:
        raise ValueError("no figures to chart")
    fig, axes = plt.subplots(len(sizes), 2, figsize=(10, 3.2 * len(sizes)), squeeze=False)
    series = {"decode": (("ours", "ours"), ("torch", "torch generate"), ("bound", "bound")),
              "prefill": (("ours", "ours"), ("torch_eager", "torch eager"), ("torch_compile", "torch compile"))}
    for row, size in enumerate(sizes):
        rec = results["sizes"][size]
        for col, (kind, key, unit) in enumerate((("decode", "tokens_per_s", "tokens/s"), ("prefill", "ms", "ms"))):
            ax = axes[row][col]
            cells = rec.get(kind, {})
            labels = list(cells)
            width = 0.8 / len(series[kind])
            for i, (name, label) in enumerate(series[kind]):
                ys = [value(cells[x].get(name), key) or 0 for x in labels]
                ax.bar([j + i * width for j in range(len(labels))], ys, width, label=label)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], labels)
            ax.set_xlabel("batch" if kind == "decode" else "prompt tokens")
            ax.set_ylabel(unit)
            ax.set_title(f"{TITLES.get(size, size)}: {kind}", fontsize=9)
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)
