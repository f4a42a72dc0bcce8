"""What every kind's figures share: matplotlib without a display, one style, and `save` (PNG and SVG). Each kind's
*_figure functions draw and return a matplotlib Figure (tests read its artists)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from ..paths import check_name, open_under

plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "figure.dpi": 110})


FIGURES = "figures"  # a results directory's figures, beside report.html


def save(fig: Figure, directory: Path, name: str) -> Path:
    """Write directory/figures/NAME.png and .svg (NAME has no suffix of its own: trial ids contain dots; it is a
    name, never a path: it comes from the store); returns the PNG. No link is followed below `directory`."""
    check_name(name, "a figure's name")
    try:
        for fmt in ("png", "svg"):
            with open_under(directory, FIGURES, f"{name}.{fmt}", mode="wb") as f:
                fig.savefig(f, format=fmt, bbox_inches="tight")
    finally:
        plt.close(fig)
    return directory / FIGURES / f"{name}.png"
