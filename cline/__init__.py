"""Everything Cline-specific: the pinned CLI, the one-task runner, run_act and plan mode.

`from cline import run_act` loads lazily; importing this package starts nothing.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "run_act": "cline.act",
    "run_plan": "cline.act",
    "ClineAgent": "cline.runner",
    "run_task": "cline.runner",
    "run_cline": "cline.runner",
    "cline_binary": "cline.runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "AGENT":  # helpers.core.registry finds an agent package's Agent class by this name
        return import_module("cline.runner").ClineAgent
    if name not in _EXPORTS:
        raise AttributeError(f"module 'cline' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
