"""The CUDA runtime is a provider library (libonnxopt_cuda.so) that opt loads on the first use of
the runner "cuda" (docs/cuda_runtime.md): a run that never touches the GPU maps no CUDA library,
a provider that cannot be loaded is one error line, exit 1 and no output file, and the provider
found first (beside opt, then in ../lib) is the one loaded.

What a process loaded is read from the dynamic linker's own trace (LD_DEBUG=files, written to a file
of its own so that opt's stderr stays clean): every library it opens, by the caller's DT_NEEDED or
by dlopen, has a "file=NAME ..." line there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "models" / "tiny_cnn" / "model.onnx"
CUDA_LIBRARIES = re.compile(r"lib(cudart|cudnn|cublas|cublasLt|cuda)\b[^/\s]*\.so")


def _traced(opt: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None):
    """Runs opt under LD_DEBUG=files; returns the process and the libraries it opened."""
    trace = tmp_path / "ld_trace"
    full_env = dict(os.environ, LD_DEBUG="files", LD_DEBUG_OUTPUT=str(trace), **(env or {}))
    full_env.pop("LD_PRELOAD", None)
    proc = subprocess.run([str(opt), *args], capture_output=True, text=True, env=full_env,
                          timeout=120)
    opened = set()
    for log in tmp_path.glob("ld_trace.*"):
        opened |= set(re.findall(r"file=(\S+)\s+\[\d+\];", log.read_text()))
        log.unlink()
    assert any("libstdc++" in name for name in opened), f"no linker trace: {sorted(opened)}"
    return proc, opened


def _cuda_libraries(opened: set[str]) -> list[str]:
    return sorted(name for name in opened if CUDA_LIBRARIES.search(Path(name).name))


def test_version_loads_no_cuda_library(opt: Path, tmp_path: Path) -> None:
    proc, opened = _traced(opt, tmp_path, "--version")
    assert proc.returncode == 0, proc.stderr
    assert _cuda_libraries(opened) == []


def test_optimizing_loads_no_cuda_library(opt: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    proc, opened = _traced(opt, tmp_path, str(MODEL), "-O3", "--target", "cuda", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    assert _cuda_libraries(opened) == []


def test_reference_run_loads_no_cuda_library(opt: Path, tmp_path: Path) -> None:
    proc, opened = _traced(opt, tmp_path, "run", str(MODEL))
    assert proc.returncode == 0, proc.stderr
    assert _cuda_libraries(opened) == []


def test_the_cuda_runner_loads_the_provider(opt: Path, tmp_path: Path) -> None:
    proc, opened = _traced(opt, tmp_path, "run", str(MODEL), "--device", "cuda")
    if "built without CUDA" in proc.stderr:
        assert proc.returncode == 1
        assert _cuda_libraries(opened) == []
        return
    # With the provider and without a GPU: the device probe's own error, after loading it.
    assert any(Path(name).name == "libonnxopt_cuda.so" for name in opened), sorted(opened)
    assert any("libcudart" in name for name in opened)
    if proc.returncode == 1:
        expected = f"opt: error: {MODEL}: cuda runner: no usable CUDA device 0"
        assert proc.stderr.startswith(expected), proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr


def _libm(tmp_path: Path) -> str:
    """A real shared library without the provider's entry point: this process's libm."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    paths = [line.split()[-1] for line in maps if re.search(r"/libm[.-][^/]*so", line)]
    assert paths, "no libm mapped in this process"
    return paths[0]


def _garbage(tmp_path: Path) -> str:
    path = tmp_path / "garbage.so"
    path.write_text("not a library\n" * 64)  # longer than an ELF header
    return str(path)


BROKEN = {
    "missing": lambda tmp: str(tmp / "no_such_provider.so"),
    "not_elf": _garbage,
    "no_entry_point": _libm,
}
COMMANDS = {
    "run": lambda m, out: ["run", str(m), "--device", "cuda", "--save-outputs", str(out)],
    "bench": lambda m, out: ["bench", str(m), "--device", "cuda", "--iters", "1",
                             "--json", str(out)],
    "check": lambda m, out: ["check", str(m), str(m), "--runner", "cuda", "--report", str(out)],
}
REASONS = {
    "missing": "no_such_provider.so: cannot open shared object file",
    "not_elf": "garbage.so: invalid ELF header",
    "no_entry_point": "no entry point onnxopt_cuda_provider_v1",
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_provider_that_cannot_be_loaded_is_one_error(opt: Path, tmp_path: Path, broken: str,
                                                       command: str) -> None:
    out = tmp_path / "out"
    env = dict(os.environ, ONNXOPT_CUDA_PROVIDER=BROKEN[broken](tmp_path))
    proc = subprocess.run([str(opt), *COMMANDS[command](MODEL, out)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert not out.exists()
    if lines[0].endswith("onnxopt was built without CUDA"):
        return  # no provider to load: the build's own error, as before
    # One line naming the model, then the reason (the check command's too: its original model).
    assert lines[0].startswith(f"opt: error: {MODEL}: cuda runner: the CUDA runtime could not "
                               "be loaded: "), \
        lines[0]
    assert REASONS[broken] in lines[0], lines[0]


def _installed(opt: Path, tmp_path: Path, provider: bytes | None, folder: str) -> Path:
    """opt copied to tmp/bin, with `provider` (bytes of a file) at tmp/FOLDER/libonnxopt_cuda.so."""
    (tmp_path / "bin").mkdir()
    copy = tmp_path / "bin" / "opt"
    shutil.copy2(opt, copy)
    if provider is not None:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "libonnxopt_cuda.so").write_bytes(provider)
    return copy


def _run_cuda(opt: Path) -> subprocess.CompletedProcess:
    unset = ("ONNXOPT_CUDA_PROVIDER", "LD_LIBRARY_PATH")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run([str(opt), "run", str(MODEL), "--device", "cuda"], capture_output=True,
                          text=True, env=env, timeout=120)


@pytest.mark.parametrize("folder", ["bin", "lib"])
def test_the_provider_found_beside_or_in_lib_is_the_one_loaded(opt: Path, tmp_path: Path,
                                                               folder: str) -> None:
    # A broken file where the search finds one is reported as that file's failure, not as "not
    # found" from a later place.
    copy = _installed(opt, tmp_path, b"not a library\n" * 64, folder)
    proc = _run_cuda(copy)
    assert proc.returncode == 1, proc.stderr
    if proc.stderr.rstrip().endswith("onnxopt was built without CUDA"):
        return
    broken = tmp_path / folder / "libonnxopt_cuda.so"
    assert proc.stderr == (f"opt: error: {MODEL}: cuda runner: the CUDA runtime could not be "
                           f"loaded: {broken}: invalid ELF header\n"), proc.stderr


def test_no_provider_anywhere_is_not_found(opt: Path, tmp_path: Path) -> None:
    proc = _run_cuda(_installed(opt, tmp_path, None, "lib"))
    assert proc.returncode == 1, proc.stderr
    if proc.stderr.rstrip().endswith("onnxopt was built without CUDA"):
        return
    assert proc.stderr == (f"opt: error: {MODEL}: cuda runner: the CUDA runtime could not be "
                           "loaded: libonnxopt_cuda.so: cannot open shared object file: No such "
                           "file or directory\n"), proc.stderr
