#!/usr/bin/env python3
"""Fails when a file includes a header of a layer it may not use (docs/architecture.md).

Every source and header belongs to one layer by its folder; a layer may include its own headers and
those of the layers below it (the DAG in ALLOWED, closed transitively). Only the io layer may include
protobuf or libonnx headers. Only the layers in BUILDER_USERS may include ir/builder.h, the raw IR
mutators: passes change the IR through the Rewriter. ctest runs this as the `layering` test.

    python3 tools/check_layers.py [--root DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# Layer -> the layers it uses directly. Each static library in CMakeLists.txt links exactly these.
ALLOWED: dict[str, set[str]] = {
    "support": set(),
    "ir": {"support"},
    "io": {"ir"},
    "rewrite": {"ir"},
    "pass": {"rewrite"},
    "kernels": {"support"},
    "bridge": {"ir", "kernels"},
    "passes": {"pass", "kernels", "bridge"},
    "runtime": {"ir", "kernels", "bridge"},
    "api": {"passes", "runtime"},
    "plugin": {"api", "io"},
    # Plugins built beside the project (tools/plugins/): the plugin API only.
    "plugins": {"plugin"},
    "test_passes": {"passes"},
    "tools": {"io", "api", "runtime", "plugin", "test_passes"},
}

# ir::Builder (raw mutation) is for building and annotating IR outside passes: the importer, shape
# inference and the Rewriter's implementation (tests, in no layer, may use it too).
BUILDER_HEADER = "include/onnxopt/ir/builder.h"
BUILDER_USERS = {"ir", "io", "rewrite"}

# Folder prefixes (relative to the root) -> layer; the longest match wins.
FOLDERS = {
    "include/onnxopt/support/": "support",
    "src/support/": "support",
    "include/onnxopt/ir/": "ir",
    "src/ir/": "ir",
    "include/onnxopt/io/": "io",
    "src/io/": "io",
    "include/onnxopt/rewrite/": "rewrite",
    "src/rewrite/": "rewrite",
    "include/onnxopt/pass/": "pass",
    "src/pass/": "pass",
    "include/onnxopt/kernels/": "kernels",
    "kernels/": "kernels",
    "include/onnxopt/bridge/": "bridge",
    "src/bridge/": "bridge",
    "include/onnxopt/passes/": "passes",
    "passes/": "passes",
    "passes/testing/": "test_passes",
    "include/onnxopt/api/": "api",
    "src/api/": "api",
    "include/onnxopt/runtime/": "runtime",
    "src/runtime/": "runtime",
    "include/onnxopt/plugin/": "plugin",
    "src/plugin/": "plugin",
    "tools/": "tools",
    "tools/plugins/": "plugins",
}

# Where a quoted include is looked up, in order: the including file's folder, then these roots.
INCLUDE_ROOTS = ["include", "src", "passes"]

# CUDA and its libraries' headers: only the CUDA kernel library includes them; everything else
# reaches it through include/onnxopt/kernels/cuda.h, which stays CUDA-free so that the optimizer
# and the planner build without nvcc.
CUDA_INCLUDE = re.compile(r'#\s*include\s*[<"](cuda|cublas|cudnn|curand|cufft|nvrtc|nvtx|thrust/|cub/)')
CUDA_FOLDER = "kernels/cuda/"
# A plugin is its own library, with its own CUDA kernels.
PLUGIN_FOLDER = "tools/plugins/"

PROTO_INCLUDE = re.compile(r'#\s*include\s*[<"](google/protobuf/|onnx/)')
QUOTED_INCLUDE = re.compile(r'#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = {".h", ".cc", ".cu", ".cuh", ".inc", ".def"}


def closure() -> dict[str, set[str]]:
    out = {}
    for layer in ALLOWED:
        seen, todo = {layer}, [layer]
        while todo:
            for dep in ALLOWED[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        out[layer] = seen
    return out


def layer_of(rel: str) -> str | None:
    best = None
    for prefix, layer in FOLDERS.items():
        if rel.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best[1] if best else None


def resolve(root: Path, including: Path, target: str) -> str | None:
    for base in [including.parent] + [root / r for r in INCLUDE_ROOTS]:
        candidate = (base / target).resolve()
        if candidate.is_file():
            try:
                return candidate.relative_to(root.resolve()).as_posix()
            except ValueError:
                return None
    return None


def check(root: Path) -> list[str]:
    allowed = closure()
    problems = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        layer = layer_of(rel)
        if layer is None:
            continue
        for lineno, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if CUDA_INCLUDE.search(line) and not rel.startswith((CUDA_FOLDER, PLUGIN_FOLDER)):
                problems.append(f"{rel}:{lineno}: layer '{layer}' includes a CUDA header (only "
                                f"{CUDA_FOLDER} may; use include/onnxopt/kernels/cuda.h)")
                continue
            if PROTO_INCLUDE.search(line) and layer != "io":
                problems.append(f"{rel}:{lineno}: layer '{layer}' includes protobuf/onnx headers "
                                "(only io may)")
                continue
            m = QUOTED_INCLUDE.search(line)
            if not m:
                continue
            target = resolve(root, path, m.group(1))
            if target is None:
                continue  # a system or generated header
            target_layer = layer_of(target)
            if target == BUILDER_HEADER and layer not in BUILDER_USERS:
                problems.append(f"{rel}:{lineno}: layer '{layer}' includes {target}: mutate the "
                                "IR through rewrite::Rewriter (ir::Builder is for "
                                f"{', '.join(sorted(BUILDER_USERS))})")
                continue
            if target_layer is not None and target_layer not in allowed[layer]:
                problems.append(f"{rel}:{lineno}: layer '{layer}' includes {target} of layer "
                                f"'{target_layer}' (allowed: {', '.join(sorted(allowed[layer]))})")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = ap.parse_args()
    problems = check(Path(args.root))
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break the layering (docs/architecture.md)")
        return 1
    print("check_layers: every include respects the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
