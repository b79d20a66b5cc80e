"""Names that become paths: checked once, at the edge, before any folder is built from them.

Instance ids, experiment names and run ids come from datasets, notebooks' parameters and users' files;
each becomes one path component (act_results/<experiment>/<run_id>/<instance_id>). A name such as
`../x`, `/` or `a/b` would let a delete or a kill reach outside the folder its owner manages, so every
such name must pass `check_name` first, and every delete checks `check_inside` on its target.
"""

from __future__ import annotations

import re
from pathlib import Path

# Letters, digits, and . _ - (SWE-bench ids look like "django__django-11099"), starting with a letter or digit.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_NAME_LENGTH = 128


def check_name(value: object, what: str = "name") -> str:
    """`value` when it is a safe single path component, else ValueError naming `what` and the fix."""
    text = value if isinstance(value, str) else ""
    if NAME_PATTERN.fullmatch(text) and len(text) <= MAX_NAME_LENGTH:
        return text
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    raise ValueError(
        f"Invalid {what} {shown}: it becomes a folder name, so it must be 1-{MAX_NAME_LENGTH} characters of "
        "letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. 'house-demo' or "
        "'django__django-11099'; no '/', no '..', no spaces)."
    )


def check_inside(path: Path | str, root: Path | str) -> Path:
    """`path` resolved, when it lies strictly inside `root`; else ValueError (nothing is touched)."""
    resolved, base = Path(path).resolve(), Path(root).resolve()
    if resolved == base or base not in resolved.parents:
        raise ValueError(f"Refusing to touch {path}: it is not inside {root}.")
    return resolved


__all__ = ["check_name", "check_inside", "NAME_PATTERN", "MAX_NAME_LENGTH"]  # documented in CODE_APPENDIX.md
