"""Progress over many tasks: a bar where a person watches (Jupyter widgets, a terminal), plain lines where a
log is read (a headless notebook run, whose console shows what the cells print, not widgets).

    bar = progress_bar(total=8, desc="train_0", unit="task")
    bar.update(1); bar.close()

`PL_PROGRESS=lines` asks for lines (the notebook runner sets it for the kernels it starts headless).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from helpers.core.wording import counted

LINES_VARIABLE = "PL_PROGRESS"


class LineProgress:
    """tqdm's update/close, printed as "desc: 3/8 tasks done" lines: one per quarter of the work (and
    never two for the same count), so a headless log reads in four lines, not one per task."""

    def __init__(self, total: int, desc: str, unit: str):
        self.total, self.desc, self.unit, self.n = total, desc, unit, 0
        self.marks = sorted({-(-total * quarter // 4) for quarter in range(1, 5)})  # ceil of each quarter
        self.said = 0

    def update(self, n: int = 1) -> None:
        self.n += n
        reached = [mark for mark in self.marks if self.said < mark <= self.n]
        if reached:
            self.said = self.n
            print(f"{self.desc}: {self.n}/{counted(self.total, self.unit)} done", file=sys.stdout, flush=True)

    def close(self) -> None:
        pass


def progress_bar(total: int, desc: str, unit: str = "task", disable: bool = False) -> Any:
    """A tqdm bar (widgets in Jupyter, text elsewhere), or LineProgress when PL_PROGRESS=lines."""
    if not disable and os.environ.get(LINES_VARIABLE) == "lines":
        return LineProgress(total, desc, unit)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=disable)


__all__ = ["progress_bar", "LineProgress"]  # documented in CODE_APPENDIX.md
