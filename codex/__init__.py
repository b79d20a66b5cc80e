"""Everything Codex-specific: the pinned CLI and the Agent that runs it on one task.

`from codex import CodexAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

_EXPORTS = {
    "CodexAgent": "codex.agent",
    "codex_binary": "codex.agent",
}

__all__ = sorted(_EXPORTS)


# `AGENT` is the package's Agent class, which helpers.core.registry finds by that name
__getattr__ = lazy_exports("codex", _EXPORTS, agent="codex.agent:CodexAgent")
