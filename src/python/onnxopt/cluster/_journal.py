"""Where a cluster run's results go as tasks finish: a journal (OUT's name with .jsonl: a header
line, then one record a line, each flushed to disk before the next task is counted) and the
merged report OUT (JSON) with OUT's .md beside it, rewritten from the records at most every few
seconds and at the end. An interrupted run keeps its journal; --resume reads it (and OUT) and
runs only what neither holds. A run that finishes removes its journal."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Optional

from .._report import merge_reports, merged_markdown

#: The header fields a resumed run must share with the report it resumes.
_SAME_ON_RESUME = ("command", "runner", "opt_args")


class ResumeMismatch(Exception):
    """The report to resume was written by a run with other settings."""


def _sibling(path: str, suffix: str) -> str:
    stem, ext = os.path.splitext(path)
    return (stem if ext == ".json" else path) + suffix


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _read_journal(path: str) -> tuple:
    """(header or None, records) of a journal; a line cut short by a kill is left out."""
    header, records = None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "header" in entry:
                header = entry["header"]
            else:
                records.append(entry)
    return header, records


def previous_records(report: str, header: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The records of the report `report` and of its journal, which a run with `header` resumes.
    Raises ResumeMismatch when they were written with other settings, ValueError when one is
    not a report."""
    found: List[tuple] = []
    if os.path.exists(report):
        with open(report, encoding="utf-8") as f:
            merged = json.load(f)
        found.append((merged, merged["results"]))
    if os.path.exists(_sibling(report, ".jsonl")):
        found.append(_read_journal(_sibling(report, ".jsonl")))
    records: List[Dict[str, Any]] = []
    for previous, rs in found:
        for k in _SAME_ON_RESUME:
            if previous is not None and previous.get(k) != header[k]:
                raise ResumeMismatch(f"{report}: was written with {k} {previous.get(k)!r}, not "
                                     f"{header[k]!r}; resume it with the same settings")
        records += rs
    return records


class Journal:
    """The records of one run, streamed to disk; `records`: those of the run it resumes."""

    def __init__(self, report: str, header: Dict[str, Any], records: List[Dict[str, Any]],
                 rewrite_every: float = 5.0) -> None:
        self.report, self.markdown = report, _sibling(report, ".md")
        self.path = _sibling(report, ".jsonl")
        self.header, self.rewrite_every = header, rewrite_every
        self.records = {r["task"]: r for r in records}
        self._last_write = 0.0
        # Rewritten whole first: a resumed journal loses nothing and keeps each task once.
        with open(self.path + ".tmp", "w", encoding="utf-8") as f:
            f.write(json.dumps({"header": header}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in self.records.values())
        os.replace(self.path + ".tmp", self.path)
        self._file = open(self.path, "a", encoding="utf-8")

    def done(self, key: str) -> bool:
        return key in self.records

    def add(self, record: Dict[str, Any]) -> None:
        self.records[record["task"]] = record
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        if time.monotonic() - self._last_write >= self.rewrite_every:
            self.write()

    def merged(self) -> Dict[str, Any]:
        return merge_reports(self.header, list(self.records.values()))

    def write(self) -> None:
        """Rewrites OUT and OUT's .md from every record so far."""
        merged = self.merged()
        _write_atomically(self.report, json.dumps(merged, indent=2) + "\n")
        _write_atomically(self.markdown, merged_markdown(merged))
        self._last_write = time.monotonic()

    def close(self, complete: bool) -> Optional[str]:
        """Writes the report; a complete run's journal goes (OUT holds it all). Returns the
        journal's path when it stays."""
        self._file.close()
        self.write()
        if complete:
            os.remove(self.path)
            return None
        return self.path
