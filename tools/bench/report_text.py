"""Text from a run as the generated pages of docs/ show it: an error message names a model by
its path from the models folder (models/real/x.onnx), not by where that folder sat on the machine
that ran it."""

from __future__ import annotations

import re

# An absolute path up to a models/ folder: "/any/where/models/real/x.onnx" -> "models/real/x.onnx".
_MACHINE_PREFIX = re.compile(r"(?<![\w.])/[^\s:'\"]*/(?=models/)")


def portable(text: str) -> str:
    return _MACHINE_PREFIX.sub("", text)
