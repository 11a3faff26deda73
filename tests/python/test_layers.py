"""The layering check (tools/check_layers.py): the tree passes it, and it catches a violation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "check_layers.py"


def run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)],
                          capture_output=True, text=True)


def test_tree_respects_layers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_lower_layer_including_higher_fails(tmp_path):
    write(tmp_path, "include/onnxopt/passes/registry.h", "#pragma once\n")
    write(tmp_path, "include/onnxopt/ir/graph.h", '#pragma once\n#include "onnxopt/passes/registry.h"\n')
    r = run(tmp_path)
    assert r.returncode == 1
    assert "include/onnxopt/ir/graph.h:2: layer 'ir' includes include/onnxopt/passes/registry.h" \
        " of layer 'passes'" in r.stdout


def test_passes_including_runtime_fails(tmp_path):
    write(tmp_path, "include/onnxopt/runtime/reference_executor.h", "#pragma once\n")
    write(tmp_path, "passes/fold/fold.cc", '#include "onnxopt/runtime/reference_executor.h"\n')
    r = run(tmp_path)
    assert r.returncode == 1 and "layer 'passes'" in r.stdout


def test_passes_including_builder_fails(tmp_path):
    write(tmp_path, "include/onnxopt/ir/builder.h", "#pragma once\n")
    write(tmp_path, "passes/fusion/f.cc", '#include "onnxopt/ir/builder.h"\n')
    write(tmp_path, "src/pass/p.cc", '#include "onnxopt/ir/builder.h"\n')
    write(tmp_path, "src/io/importer.cc", '#include "onnxopt/ir/builder.h"\n')
    write(tmp_path, "src/rewrite/rewriter.cc", '#include "onnxopt/ir/builder.h"\n')
    r = run(tmp_path)
    assert r.returncode == 1
    assert "passes/fusion/f.cc:1: layer 'passes' includes include/onnxopt/ir/builder.h" in r.stdout
    assert "src/pass/p.cc:1: layer 'pass'" in r.stdout
    assert "importer.cc" not in r.stdout and "rewriter.cc" not in r.stdout


def test_protobuf_outside_io_fails(tmp_path):
    write(tmp_path, "src/ir/graph.cc", "#include <onnx/onnx_pb.h>\n")
    write(tmp_path, "src/io/importer.cc", "#include <onnx/onnx_pb.h>\n")
    r = run(tmp_path)
    assert r.returncode == 1
    assert "src/ir/graph.cc:1" in r.stdout and "src/io/importer.cc" not in r.stdout


def test_allowed_includes_pass(tmp_path):
    write(tmp_path, "include/onnxopt/ir/graph.h", '#pragma once\n#include "onnxopt/support/status.h"\n')
    write(tmp_path, "include/onnxopt/support/status.h", "#pragma once\n")
    write(tmp_path, "src/bridge/kernel_bridge.cc",
          '#include "onnxopt/ir/graph.h"\n#include "onnxopt/kernels/host_tensor.h"\n')
    write(tmp_path, "include/onnxopt/kernels/host_tensor.h", "#pragma once\n")
    assert run(tmp_path).returncode == 0


def run_table_check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), "--check-table"],
                          capture_output=True, text=True)


def test_architecture_table_is_generated():
    r = run_table_check(ROOT)
    assert r.returncode == 0, r.stdout


def test_architecture_table_that_differs_fails(tmp_path):
    doc = (ROOT / "docs" / "architecture.md").read_text()
    row = "| api (`onnxopt::api`) |"
    assert row in doc
    write(tmp_path, "docs/architecture.md", doc.replace(row, "| api (`onnxopt::facade`) |"))
    r = run_table_check(tmp_path)
    assert r.returncode == 1 and "not the generated one" in r.stdout
    write(tmp_path, "docs/architecture.md", "# no table\n")
    assert run_table_check(tmp_path).returncode == 1
