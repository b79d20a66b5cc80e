"""Everything Claude Code-specific: the pinned CLI and the Agent that runs it on one task.

`from claude_code import ClaudeCodeAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

_EXPORTS = {
    "ClaudeCodeAgent": "claude_code.agent",
    "claude_binary": "claude_code.agent",
}

__all__ = sorted(_EXPORTS)


# `AGENT` is the package's Agent class, which helpers.core.registry finds by that name
__getattr__ = lazy_exports("claude_code", _EXPORTS, agent="claude_code.agent:ClaudeCodeAgent")
