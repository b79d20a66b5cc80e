"""Everything Codex-specific: the pinned CLI and the Agent that runs it on one task.

`from codex import CodexAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

__all__ = ["CodexAgent", "codex_binary"]

# every public name is in codex.agent; `AGENT` is the package's Agent class (helpers.core.registry reads it)
__getattr__ = lazy_exports("codex", dict.fromkeys(__all__, "codex.agent"), agent="codex.agent:CodexAgent")
