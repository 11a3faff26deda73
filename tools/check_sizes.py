#!/usr/bin/env python3
"""Fails when a source file or a function grows past the size the project keeps code to.

Two rules (docs/architecture.md, "Sizes"):
  - no source file over MAX_FILE_LINES lines, outside the reference kernels and the tests;
  - no function over MAX_FUNCTION_LINES lines in the trees of FUNCTION_TREES.
A table (a long initializer or a switch over ops that is data) may pass the function bound: name
it in EXEMPT_FUNCTIONS with the reason. A whole folder may be exempt for a while: EXEMPT_FILES,
with the reason. Functions are found by a brace-matching scan of the .cc and .h files (comments,
strings and preprocessor lines removed): a brace block at namespace or class scope whose head has
a parameter list is a function (one after `=` is data); its size is the lines from its opening to
its closing brace. ctest runs this as the test `sizes`.

    python3 tools/check_sizes.py [--root DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120

# Trees whose files must stay under MAX_FILE_LINES (tests/ is not among them).
FILE_TREES = ["include", "src", "passes", "kernels", "tools"]
FILE_SUFFIXES = {".cc", ".h", ".cu", ".cuh", ".cpp"}
# Trees whose functions must stay under MAX_FUNCTION_LINES, and the files scanned there.
FUNCTION_TREES = ["kernels/cuda", "src/runtime", "passes"]
FUNCTION_SUFFIXES = {".cc", ".h", ".cu", ".cuh"}

# Path prefix (relative to the root: a folder, or a family of files) -> why its files and
# functions may be longer.
EXEMPT_FILES: dict[str, str] = {
    "kernels/reference/": "reference kernels: one op's CPU semantics per file, read against the spec",
}

# "path:function" -> why the function may be longer (tables: data, not logic).
EXEMPT_FUNCTIONS: dict[str, str] = {}

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return"}
SCOPE_WORDS = re.compile(r"\b(namespace|class|struct|union|enum|extern)\b")
OPERATOR = re.compile(r"\boperator\b")


def strip_code(text: str) -> str:
    """Blanks comments, string and char literals and preprocessor lines, keeping line breaks."""
    out: list[str] = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":
            # A preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        at_line_start = False
        if c == "\n":
            out.append(c)
            at_line_start = True
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i)
            delim = text[i + 2 : open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():
                # A digit separator (1'000), not a char literal.
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head: str) -> str:
    """The qualified name before the parameter list of a function head (a CUDA kernel's
    `__launch_bounds__(...)` is an attribute, not the name)."""
    head = re.sub(r"__launch_bounds__\s*\([^()]*(?:\([^()]*\)[^()]*)*\)", " ", head)
    paren = head.find("(")
    names = re.findall(r"[~A-Za-z_][\w:~]*(?:operator\s*\S+?)?", head[:paren])
    return names[-1] if names else "?"


def block_kind(head: str, inside_function: bool) -> str:
    """What a brace opens, given the text since the last `;`, `{` or `}` before it."""
    if inside_function:
        return "block"
    before_params = head.split("(")[0]
    if SCOPE_WORDS.search(before_params):
        return "scope"  # namespace, class, struct, enum, extern "C"
    if "(" in head and ("=" not in before_params or OPERATOR.search(head)):
        first_word = re.match(r"\s*(\w+)", head)
        return "block" if first_word and first_word.group(1) in CONTROL else "function"
    return "data"  # an initializer: a table


def functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, line count) of every function body at namespace or class scope."""
    code = strip_code(text)
    found: list[tuple[str, int, int]] = []
    stack: list[tuple[str, str, int]] = []  # (kind, name, line of the opening brace)
    head_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            head = code[head_start:i]
            kind = block_kind(head, any(k != "scope" for k, _, _ in stack))
            stack.append((kind, function_name(head) if kind == "function" else "", line))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "function":
                    found.append((name, start, line - start + 1))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def exempt_file(rel: str) -> bool:
    return any(rel.startswith(prefix) for prefix in EXEMPT_FILES)


def sources(root: Path, tree: str, suffixes: set[str]):
    for path in sorted((root / tree).rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.suffix in suffixes and path.is_file() and not exempt_file(rel):
            yield path, rel


def check(root: Path) -> list[str]:
    problems: list[str] = []
    for tree in FILE_TREES:
        for path, rel in sources(root, tree, FILE_SUFFIXES):
            lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
            if lines > MAX_FILE_LINES:
                problems.append(
                    f"{rel}: {lines} lines (at most {MAX_FILE_LINES}); split it by concept"
                )
    for tree in FUNCTION_TREES:
        for path, rel in sources(root, tree, FUNCTION_SUFFIXES):
            text = path.read_text(encoding="utf-8", errors="replace")
            for name, start, count in functions(text):
                if count > MAX_FUNCTION_LINES and f"{rel}:{name}" not in EXEMPT_FUNCTIONS:
                    problems.append(
                        f"{rel}:{start}: function {name} has {count} lines "
                        f"(at most {MAX_FUNCTION_LINES}); split it into named steps"
                    )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    problems = check(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_sizes: {len(problems)} file(s) or function(s) too long")
        return 1
    print("check_sizes: every file and function is within its size")
    return 0


if __name__ == "__main__":
    sys.exit(main())
