"""Fixtures for the Python tests of opt.

Paths come from the environment where set: ONNXOPT_OPT (the binary, default <repo>/build/bin/opt) and
ONNXOPT_SHARED (the shared data folder, default <repo>/../shared).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any, Callable

import pytest

import roundtrip_check


def pytest_configure(config: pytest.Config) -> None:
    # Registered here rather than in an ini file so that it holds wherever pytest is started from.
    config.addinivalue_line("markers", "large: writes and round-trips a model over 2 GB (deselect with -m 'not large')")
    config.addinivalue_line(
        "markers", "corpus: one case per model of the 2018-model corpus (thinned by --corpus-sample)"
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--corpus-sample",
        type=int,
        default=1,
        metavar="N",
        help="run one in N of the corpus-marked cases, a fixed choice by a hash of the test id "
        "(tools/test.sh --sanitize: the instrumented build runs every other test in full)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    n = config.getoption("--corpus-sample")
    if n < 1:
        raise pytest.UsageError("--corpus-sample must be at least 1")
    if n == 1:
        return
    kept, dropped = [], []
    for item in items:
        thinned = item.get_closest_marker("corpus") and zlib.crc32(item.nodeid.encode()) % n
        (dropped if thinned else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return roundtrip_check.REPO_ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    path = roundtrip_check.shared_dir()
    if not path.is_dir():
        pytest.fail(f"shared data folder {path} not found: set ONNXOPT_SHARED")
    return path


@pytest.fixture(scope="session")
def opt() -> Path:
    """The binary under test. Not checked here: run_opt fails the test itself when it is missing."""
    return roundtrip_check.opt_path()


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    """An empty folder for one test's files."""
    return tmp_path


@pytest.fixture
def run_opt(opt: Path) -> Callable[..., Any]:
    """run_opt(*args) runs `opt` with args (paths allowed) and returns the CompletedProcess."""

    def run(*args: Any, timeout: float = roundtrip_check.OPT_TIMEOUT_S):
        return roundtrip_check.run_opt(opt, *args, timeout=timeout)

    return run
