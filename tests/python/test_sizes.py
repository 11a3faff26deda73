"""The size check (tools/check_sizes.py): the tree passes it, and it catches a long file or function."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check_sizes.py"


def run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                          capture_output=True, text=True)


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def function(name: str, lines: int, head: str = "int") -> str:
    """A function of exactly `lines` lines, braces included."""
    body = "".join(f"  x += {i};\n" for i in range(lines - 3))
    return f"{head} {name}(int x) {{\n{body}  return x;\n}}\n"


def test_tree_within_sizes():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout


def test_long_file_fails_outside_reference_kernels(tmp_path):
    long_text = "// x\n" * 701
    write(tmp_path, "src/io/big.cc", long_text)
    write(tmp_path, "kernels/reference/conv.cc", long_text)
    write(tmp_path, "src/io/fits.cc", "// x\n" * 700)
    r = run(tmp_path)
    assert r.returncode == 1
    assert "src/io/big.cc: 701 lines (at most 700)" in r.stdout
    assert "kernels/reference" not in r.stdout and "fits.cc" not in r.stdout


def test_long_function_fails_in_function_trees(tmp_path):
    write(tmp_path, "passes/fold/f.cc", "namespace a {\nnamespace {\n" + function("fold", 121) + "}\n}\n")
    write(tmp_path, "src/runtime/r.cc", "namespace a {\n" + function("ok", 120) + "}\n")
    write(tmp_path, "src/runtime/m.h",
          "class C {\n public:\n" + function("method", 125, "  int").replace("\n", "\n  ") + "};\n")
    write(tmp_path, "src/io/other.cc", function("notChecked", 200))
    r = run(tmp_path)
    assert r.returncode == 1
    assert "passes/fold/f.cc:3: function fold has 121 lines" in r.stdout
    assert "src/runtime/m.h:3: function method has 125 lines" in r.stdout
    assert "ok" not in r.stdout and "notChecked" not in r.stdout


def test_tables_comments_and_strings_do_not_count(tmp_path):
    rows = "".join(f'    {{"Op{i}", {i}}},\n' for i in range(200))
    table = "const std::pair<const char*, int> kTable[] = {\n" + rows + "};\n"
    # Braces inside comments, strings and char literals do not open blocks.
    tricky = 'int f() {\n  // }\n  /* { */\n  const char* s = "}}";\n  char c = \'{\';\n  return 0;\n}\n'
    write(tmp_path, "passes/t.cc", "namespace a {\n" + table + tricky + function("g", 100) + "}\n")
    assert run(tmp_path).returncode == 0


def test_cuda_kernels_count_and_are_named(tmp_path):
    # A __global__ kernel in a .cu file of kernels/cuda is a function like any other, named by its
    # name, not by its __launch_bounds__ attribute.
    kernel = function("attendKernel", 130, "__global__ void __launch_bounds__(128, D == 64 ? 3 : 1)")
    write(tmp_path, "kernels/cuda/attention/a.cu", "namespace a {\n" + kernel + "}\n")
    write(tmp_path, "kernels/cuda/b.cuh", "namespace a {\n" + function("helper", 121) + "}\n")
    r = run(tmp_path)
    assert r.returncode == 1
    assert "kernels/cuda/attention/a.cu:2: function attendKernel has 130 lines" in r.stdout
    assert "kernels/cuda/b.cuh:2: function helper has 121 lines" in r.stdout
