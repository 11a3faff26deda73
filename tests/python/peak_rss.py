"""Runs a command and measures the peak resident memory of that command alone.

wait4's ru_maxrss for a child of this process is not the child's own: Linux carries the high-water mark of the
image a process had before exec into its rusage, and a child started with fork or vfork had this process's
image. A pytest worker that held a large model in an earlier test would be charged to every later child. So
the command is started from a small launcher process of its own, which forks it from a few-MB image, waits
for it and reports the command's rusage.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# argv: rss-file command args... Exits with the command's exit code (128 + signal when it was killed).
_LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss * 1024))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


@dataclass
class Measured:
    returncode: int
    stderr: str
    peak_rss: int  # bytes, of the command alone
    seconds: float


def run(args: list[str], workdir: Path) -> Measured:
    """Runs args (args[0] a path to an executable) with stdout discarded; stderr and peak RSS come back."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rss_file = Path(tmp) / "rss"
        err_file = Path(tmp) / "stderr"
        with open(err_file, "wb") as err:
            start = time.monotonic()
            code = subprocess.call(
                [sys.executable, "-c", _LAUNCHER, str(rss_file), *args], stdout=subprocess.DEVNULL, stderr=err
            )
            seconds = time.monotonic() - start
        stderr = err_file.read_text(errors="replace")
        if not rss_file.is_file():
            raise RuntimeError(f"the launcher failed before the command ended (exit {code}): {stderr[-2000:]}")
        return Measured(code, stderr, int(rss_file.read_text()), seconds)
