"""The house style every figure shares: a scripted run's title says so, colours stay colour-blind safe, and
lines that coincide stay told apart.

    figure, ax = new_figure()
    ax.plot(x, y, **series_style(0))
    ax.set_title(dry_run_title("Accuracy per loop", loops))

Figures are built with matplotlib's object API on the Agg canvas: nothing here changes pyplot's backend.
Separate from helpers.analysis.plots (one experiment's figures) because the notebooks' own figures
(helpers.analysis.notebook_plots) wear the same style without depending on those figures.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from helpers.analysis.captions import is_true

DRY_RUN_TITLE = "SCRIPTED DRY RUN (not real results)"
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")  # colour-blind safe
LINE_STYLES = ("-", "--", ":", "-.")  # with MARKERS: lines drawn on top of each other stay told apart
MARKERS = ("o", "s", "^", "D", "v", "P")


def is_dry_run(loops: pd.DataFrame) -> bool:
    """Whether any of these loops ran on the scripted model."""
    return "dry_run" in loops and any(is_true(value) for value in loops["dry_run"])


def dry_run_title(text: str, loops: pd.DataFrame) -> str:
    """`text`, with DRY_RUN_TITLE on a line below it when any of `loops` ran on the scripted model."""
    return f"{text}\n{DRY_RUN_TITLE}" if is_dry_run(loops) else text


def spread(index: int, count: int, step: float = 0.04) -> float:
    """A small sideways offset for the index-th of `count` series on a shared x axis, centred on 0, so that
    series with equal values sit side by side instead of one hiding the other."""
    return (index - (count - 1) / 2) * step


def series_style(index: int) -> dict[str, Any]:
    """The index-th series' colour, marker and dash: two series never share all three."""
    return {
        "color": OKABE_ITO[index % len(OKABE_ITO)],
        "marker": MARKERS[index % len(MARKERS)],
        "linestyle": LINE_STYLES[index % len(LINE_STYLES)],
        "markerfacecolor": "none" if index % 2 else None,
    }


def new_figure(width: float = 7.0, height: float = 4.0) -> tuple[Figure, Any]:
    """A figure of `width` x `height` inches on its own Agg canvas (pyplot untouched), and its one axes."""
    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


__all__ = [
    "DRY_RUN_TITLE",
    "OKABE_ITO",
    "LINE_STYLES",
    "MARKERS",
    "is_dry_run",
    "dry_run_title",
    "spread",
    "series_style",
    "new_figure",
]  # the public API, documented in CODE_APPENDIX.md
