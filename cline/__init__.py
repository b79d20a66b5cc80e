"""Everything Cline-specific: the pinned CLI, the one-task runner, run_act and plan mode.

`from cline import run_act` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

_EXPORTS = {
    "run_act": "cline.act",
    "run_plan": "cline.act",
    "ClineAgent": "cline.runner",
    "run_task": "cline.runner",
    "run_cline": "cline.runner",
    "cline_binary": "cline.runner",
}

__all__ = sorted(_EXPORTS)


# `AGENT` is the package's Agent class, which helpers.core.registry finds by that name
__getattr__ = lazy_exports("cline", _EXPORTS, agent="cline.runner:ClineAgent")
