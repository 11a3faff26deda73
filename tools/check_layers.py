#!/usr/bin/env python3
"""Fails when a file includes a header of a layer it may not use (docs/architecture.md).

Every source and header belongs to one layer by its folder; a layer may include its own headers and
those of the layers below it (the DAG in ALLOWED, closed transitively). Only the io layer may include
protobuf or libonnx headers. Only the layers in BUILDER_USERS may include ir/builder.h, the raw IR
mutators: passes change the IR through the Rewriter. ctest runs this as the `layering` test.

The layer table of docs/architecture.md is generated from the same data (ALLOWED, FOLDERS,
LAYER_DOCS, CUDA_PARTS): --table prints it, --check-table fails when the page's copy differs
(the ctest test `layer_table`).

    python3 tools/check_layers.py [--root DIR] [--table | --check-table]
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

# What docs/architecture.md's table says of each layer: its CMake target, what it uses beyond
# onnxopt's layers, and what it holds.
LAYER_DOCS: dict[str, tuple[str, str, str]] = {
    "support": ("`onnxopt::support`", "fmt",
                "Status/StatusOr, DataType, half/bfloat16, `NameMap`, diagnostics (sinks, escaping "
                "stream), huge-page blocks, axis normalization (the one `normalizeAxis` of shape "
                "inference, passes and kernels)"),
    "ir": ("`onnxopt::ir`", "",
           "Model/Graph/Node/Value, Tensor (owned or mapped), tensor equality/hash, types and symbolic "
           "dims, the op-trait table (`op_traits.h`: elementwise kind, broadcasting, commutative, "
           "bool output, view; the one list passes, shape inference and the planner read), shape "
           "inference, verifier, printer, stats"),
    "io": ("`onnxopt::io`", "protobuf, libonnx (privately)",
           "import (binary, textual, external data, schema checks), export, output transactions. The "
           "only layer that includes protobuf or onnx headers."),
    "rewrite": ("`onnxopt::rewrite`", "",
                "the Rewriter (every mutation a pass makes) and the capped greedy pattern driver"),
    "pass": ("`onnxopt::pass`", "",
             "Pass, GraphPass, PatternPass, PassManager, the textual pipeline, shared queries "
             "(`matchers.h`: constants, attributes, shapes) and the matcher vocabulary patterns are "
             "written in (`pattern_match.h`: `op`, `commutative`, `bind`, `scalar`, `singleUse`, "
             "docs/passes.md)"),
    "kernels": ("`onnxopt::kernels`", "",
                "reference CPU kernels over `HostTensor` (`kernels/reference`), with their registry; "
                "the capability query (`Capabilities`, `OpQuery`, `TypeSet`); `TensorView`; the CUDA "
                "kernel list's host half (capability table, broadcast planner); no IR types"),
    "bridge": ("`onnxopt::bridge`", "",
               "`toHost`, `fromHost`, `toKernelAttrs`, `opQuery`: the adapter that lets passes "
               "(folding) and the runtime call and query kernels without either layer knowing the "
               "other"),
    "passes": ("`onnxopt::passes`", "",
               "one pass per file, the registry (`registry.def` + `registerPass`), the -O pipelines "
               "(`pipelines.cc`); what fusions share in `passes/fusion/` (the normalization tail of "
               "fuse-layernorm and fuse-rmsnorm, BatchNormalization folding for fuse-conv-affine and "
               "fuse-gemm); layout rewrites in "
               "`passes/layout/` (optimize-transposes); our own domain's ops with their function "
               "bodies in `passes/target/target_ops.cc` (docs/target_ops.md)"),
    "runtime": ("`onnxopt::runtime`", "",
                "the `Executor` interface and runner registry, the reference executor, the plan and "
                "memory planner (`src/runtime/plan`, docs/cuda_runtime.md), seeded random inputs (one "
                "recipe, `randomInputOptions`, for every front end and `checkModels`), "
                "output comparison, `checkModels` (what `opt check` computes), the `Generator` "
                "(tokens from a decoder with a KV cache over any executor, docs/llm.md)"),
    "api": ("`onnxopt::api`", "",
            "`onnxopt::optimize(model, options, result)`, and with it the one front-end policy "
            "`opt` and the Python module share: `OptimizeOptions`' fields for their flags and "
            "keywords become pass options (`passOptionSettings`), --precision's range analysis "
            "(`runPrecisionAnalysis`: seeded inputs, keep- and safe-values, its notes), the CUDA "
            "kernel table in `PassContext::target_kernels`; `prepareForRunner`; `generate` and "
            "`createGenerator` (opt generate, onnxopt.generate). tools/opt and "
            "src/python only parse their syntax into it (tests/python/test_front_end_policy.py)"),
    "plugin": ("`onnxopt::plugin`", "dl",
               "`plugin::loadPlugin` / `registerPlugin`: a shared library's one `extern \"C\"` entry "
               "point (`ONNXOPT_DEFINE_PLUGIN`), its ABI version checked first, then what it "
               "registers checked as a whole and handed to each layer's run-time registry: "
               "`passes::registerPass` / `registerPipelinePass` / `registerOpFunction`, "
               "`ir::registerOpInference`, `kernels::registerReferenceKernel`, "
               "`kernels::registerCudaKernel` (docs/plugins.md). Plugins link no onnxopt library: "
               "`opt` exports its symbols"),
    "plugins": ("each its own shared library", "",
                "plugins built beside the project (`tools/plugins/swiglu`): the plugin API only"),
    "test_passes": ("`onnxopt_test_passes`, not installed", "",
                    "passes for tests only (`test-oscillate`), registered by `opt-test`"),
    "tools": ("`opt`, `opt-test`", "",
              "`opt` and `opt-test` (same command line, `tools/opt`); the onnxruntime runner (a "
              "Python subprocess), registered at startup"),
}

# The CUDA parts of three layers: folder -> (layer, target, uses, holds). Only the first may
# include CUDA headers (CUDA_FOLDER); the others reach the device through
# include/onnxopt/kernels/cuda.h, so they build without nvcc.
CUDA_PARTS: dict[str, tuple[str, str, str, str]] = {
    "kernels/cuda/": (
        "kernels", "`onnxopt::kernels_cuda`", "kernels; CUDA runtime, cuBLASLt, cuDNN 9",
        "the CUDA kernels, one family per `X.{h,cc,cu}` (`ops.def`: the one kernel list; the launch "
        "table; the device layer: errors as Status, streams, buffers, copies); without CUDA, stubs "
        "that return kUnimplemented (kernels/cuda/README.md)"),
    "src/runtime/cuda/": (
        "runtime", "part of `onnxopt::runtime`", "kernels/cuda through `kernels/cuda.h` only",
        "the CUDA executor, the runner `cuda`: weights uploaded once, one arena per plan, the "
        "plan's steps launched, CUDA graphs, `opt bench` (docs/cuda_runtime.md)"),
    "passes/target/cuda/": (
        "passes", "part of `onnxopt::passes`",
        "the kernel table of the pass context (`PassContext::target_kernels`)",
        "the CUDA target's rewrites of `-O3 --target cuda`: convert-nhwc (the channels-last "
        "layout) and the fusions into ai.onnxopt ops a CUDA kernel claims (docs/target_ops.md)"),
}

TABLE_BEGIN = "<!-- layers:begin (generated by tools/check_layers.py --table) -->"
TABLE_END = "<!-- layers:end -->"


def _code(folder: str) -> str:
    return f"`{folder.rstrip('/')}`"


def layer_table() -> str:
    """docs/architecture.md's layer table: a row per layer (bottom up, as ALLOWED lists them),
    each followed by its CUDA part where it has one."""
    rows = ["| layer (target) | folders | uses | holds |", "|---|---|---|---|"]
    for layer, deps in ALLOWED.items():
        target, extra, holds = LAYER_DOCS[layer]
        folders = [f for f, owner in FOLDERS.items() if owner == layer]
        uses = ", ".join(sorted(deps) + ([extra] if extra else [])) or "-"
        rows.append(f"| {layer} ({target}) | {', '.join(map(_code, folders))} | {uses} | {holds} |")
        for folder, (owner, cuda_target, cuda_uses, cuda_holds) in CUDA_PARTS.items():
            if owner == layer:
                rows.append(f"| {layer}: CUDA ({cuda_target}) | {_code(folder)} | {cuda_uses} | "
                             f"{cuda_holds} |")
    return "\n".join(rows) + "\n"


def table_in(doc: Path) -> str | None:
    """The generated table as the page holds it, or None without the markers."""
    text = doc.read_text()
    if TABLE_BEGIN not in text or TABLE_END not in text:
        return None
    return text.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0].strip("\n") + "\n"


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
CUDA_FOLDER = "kernels/cuda/"  # the first of CUDA_PARTS
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
    problems = [f"CUDA_PARTS: {folder} lies in layer '{layer_of(folder)}', not '{part[0]}'"
                for folder, part in CUDA_PARTS.items() if layer_of(folder) != part[0]]
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


def check_table(doc: Path) -> int:
    held = table_in(doc)
    if held is None:
        print(f"check_layers: {doc} has no {TABLE_BEGIN} ... {TABLE_END} section")
        return 1
    if held != layer_table():
        print(f"check_layers: the layer table in {doc} is not the generated one; replace it with "
              "the output of `python3 tools/check_layers.py --table`")
        return 1
    print("check_layers: docs/architecture.md's layer table is the generated one")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--table", action="store_true",
                      help="print docs/architecture.md's layer table (Markdown)")
    mode.add_argument("--check-table", action="store_true",
                      help="fail when docs/architecture.md's layer table is not the generated one")
    args = ap.parse_args()
    if args.table:
        print(layer_table(), end="")
        return 0
    if args.check_table:
        return check_table(Path(args.root) / "docs" / "architecture.md")
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
