"""CheckReport: what onnxopt.check found (the figures of `opt check --report`); merged reports
of many `opt --report` objects (onnxopt.cluster's)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class TensorCheck:
    """One compared tensor: an output, or with per_layer a value both models name alike."""

    name: str
    dtype: str
    shape: List[int]
    max_abs_error: float
    max_rel_error: float
    mean_abs_error: float
    cosine_similarity: float
    atol: float
    rtol: float
    mismatches: int  #: elements past tolerance
    passed: bool
    problem: str = ""  #: set when the tensors cannot be compared (type or shape differ)


@dataclass(frozen=True)
class CheckInput:
    """An input both models got: given, or seeded random (dynamic_dims: the sizes chosen)."""

    name: str
    dtype: str
    shape: List[int]
    dynamic_dims: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class CheckReport:
    """The result of onnxopt.check. bool(report) is report.passed."""

    passed: bool
    runner: str
    seed: int
    inputs: List[CheckInput]
    outputs: List[TensorCheck]
    per_layer: List[TensorCheck]
    first_failing_value: Optional[str] = None
    first_failing_op: Optional[str] = None

    def __bool__(self) -> bool:
        return self.passed

    def failures(self) -> List[TensorCheck]:
        """The outputs that are not within tolerance."""
        return [o for o in self.outputs if not o.passed]

    def to_dict(self) -> Dict[str, Any]:
        """The report as the "check" object of `opt check --report` (non-finite numbers: None)."""

        def finite(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: finite(x) for k, x in v.items()}
            if isinstance(v, list):
                return [finite(x) for x in v]
            return v

        d = finite(asdict(self))
        if not self.per_layer:
            del d["per_layer"], d["first_failing_value"], d["first_failing_op"]
        return d

    def __str__(self) -> str:
        lines = [f"check ({self.runner}, seed {self.seed}): "
                 f"{'passed' if self.passed else 'FAILED'}"]
        for o in self.outputs:
            state = "ok" if o.passed else f"FAIL ({o.mismatches} mismatches)"
            lines.append(f"  {o.name}: max abs {o.max_abs_error:.3g}, max rel "
                         f"{o.max_rel_error:.3g}, cosine {o.cosine_similarity:.6f}  {state}"
                         + (f"  {o.problem}" if o.problem else ""))
        if self.first_failing_value:
            lines.append(f"  first failing value: {self.first_failing_value} "
                         f"({self.first_failing_op})")
        return "\n".join(lines)


def _tensor(d: Dict[str, Any]) -> TensorCheck:
    return TensorCheck(**{k: d[k] for k in TensorCheck.__dataclass_fields__ if k in d})


def report_from_core(d: Dict[str, Any]) -> CheckReport:
    return CheckReport(
        passed=bool(d["passed"]),
        runner=d["runner"],
        seed=int(d["seed"]),
        inputs=[CheckInput(i["name"], i["dtype"], list(i["shape"]), list(i["dynamic_dims"]))
                for i in d["inputs"]],
        outputs=[_tensor(o) for o in d["outputs"]],
        per_layer=[_tensor(o) for o in d["per_layer"]],
        first_failing_value=d["first_failing_value"] or None,
        first_failing_op=d["first_failing_op"] or None,
    )


# --- Merged reports: many `opt --report` objects in one (onnxopt.cluster writes them) -----------

#: The record statuses, in the order summaries count them.
STATUSES = ("passed", "failed", "error")


def merge_reports(header: Dict[str, Any], records: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One report of many: `header` (what every record shares), a summary (how many records have
    each status) and the records, each an `opt --report` object (or the error that stopped it),
    in the order of their "task" names."""
    records = sorted(records, key=lambda r: r["task"])
    summary = {"tasks": len(records), **{s: sum(r["status"] == s for r in records)
                                           for s in STATUSES}}
    return {**header, "summary": summary, "results": records}


def _worst_output(check: Dict[str, Any]) -> str:
    worst = max(check["outputs"], key=lambda o: (not o["passed"], o["max_abs_error"] or 0.0),
                default=None)
    if worst is None:
        return ""
    return f"{worst['name']}: {worst['max_abs_error']:.3g}" if worst["max_abs_error"] is not None \
        else f"{worst['name']}: {worst.get('problem') or 'not finite'}"


def _markdown_row(r: Dict[str, Any]) -> List[str]:
    row = [r["input"], f"-O{r['level']}" + (f" {r['target']}" if r.get("target") else ""),
           r["status"]]
    if r["status"] == "error":
        return row + ["", "", "", r["error"].replace("|", "\\|").replace("\n", " ")]
    nodes = f"{r['before']['nodes']} -> {r['after']['nodes']}"
    if "bench" in r:
        lat = r["bench"]["latency_ms"]
        return row + [nodes, f"{r['seconds']:.3g}", f"{lat['p50']:.4g} / {lat['p90']:.4g}", ""]
    return row + [nodes, f"{r['seconds']:.3g}", _worst_output(r["check"]), ""]


def merged_markdown(merged: Dict[str, Any]) -> str:
    """A merged report as a Markdown page: the summary, then a table with one row per record."""
    s = merged["summary"]
    bench = merged["command"].endswith("bench")
    lines = [f"# onnxopt {merged['command']}: {s['tasks']} tasks, "
             + f"{s['passed']} passed, {s['failed']} failed, {s['error']} errors", "",
             f"runner {merged['runner']}, onnxopt {merged['onnxopt_version']}"
             + (f", opt arguments `{' '.join(merged['opt_args'])}`" if merged["opt_args"] else ""),
             "", "| model | level | result | nodes | optimize s | "
             + ("latency p50 / p90 ms" if bench else "largest abs error") + " | error |",
             "|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(_markdown_row(r)) + " |" for r in merged["results"]]
    return "\n".join(lines) + "\n"
