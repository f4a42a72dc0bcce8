"""What every kind's figures share: matplotlib without a display, one style, and `save` (PNG and SVG). Each kind's
*_figure functions draw and return a matplotlib Figure (tests read its artists)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..paths import open_new

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "figure.dpi": 110})


def save(fig: Figure, path: Path) -> Path:
    """Write path.png and path.svg (path has no suffix of its own: trial ids contain dots); returns the PNG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    png = path.with_name(path.name + ".png")
    for out, fmt in ((png, "png"), (path.with_name(path.name + ".svg"), "svg")):
        with open_new(out, "wb") as f:
            fig.savefig(f, format=fmt, bbox_inches="tight")
    plt.close(fig)
    return png
