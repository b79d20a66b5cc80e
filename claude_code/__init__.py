"""Everything Claude Code-specific: the pinned CLI and the Agent that runs it on one task.

`from claude_code import ClaudeCodeAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

__all__ = ["ClaudeCodeAgent", "claude_binary"]

# every public name is in claude_code.agent; `AGENT` is the package's Agent class (helpers.core.registry reads it)
__getattr__ = lazy_exports(
    "claude_code", dict.fromkeys(__all__, "claude_code.agent"), agent="claude_code.agent:ClaudeCodeAgent"
)
