"""This machine's throwaway paths, taken out of what is kept: records, CSVs, trajectories, notebooks.

A test log or an agent's error names the folder it ran in (`/tmp/pl-runs/<pid>-<t>/run-x/...`,
`/tmp/eval-abc/...`) and tracebacks name the Python install. Those paths mean nothing on another
machine and tell a reader about this one, so the stores write `<scratch>`, `<eval>` and `<python>`
instead. Paths a reader may follow (the repository, the results folder) are left to the writer.
"""

from __future__ import annotations

import re
import sys
import tempfile
from functools import lru_cache


@lru_cache(maxsize=1)
def _patterns() -> list[tuple[re.Pattern[str], str]]:
    tmp = re.escape(tempfile.gettempdir().rstrip("/"))
    prefixes = sorted({p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if len(p) > 1}, key=len, reverse=True)
    return [(re.compile(tmp + r"/pl-runs/[\w.-]+"), "<scratch>"), (re.compile(tmp + r"/eval-[\w.-]+"), "<eval>")] + [
        (re.compile(re.escape(p) + r"(?=/|\b)"), "<python>") for p in prefixes
    ]


def scrub_machine_paths(text: str) -> str:
    """`text` with scratch folders, evaluation folders and the Python install's path replaced."""
    for pattern, placeholder in _patterns():
        text = pattern.sub(placeholder, text)
    return text


__all__ = ["scrub_machine_paths"]  # documented in CODE_APPENDIX.md
