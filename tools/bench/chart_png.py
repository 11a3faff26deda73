"""Writing the benchmark charts of docs/ small: matplotlib's PNG re-encoded with a 16-colour
palette (a chart has a few flat colours and anti-aliased edges; 16 keep the bars and the text
legible at about a fifth of the bytes). Pillow comes with matplotlib."""

from __future__ import annotations

import io
from pathlib import Path


def save_png(fig, path: Path, dpi: int = 110) -> None:
    """Saves a matplotlib figure to `path` as a palette PNG."""
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    image = Image.open(buf).convert("RGB")
    palette = image.quantize(colors=16, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    palette.save(path, "PNG", optimize=True)
