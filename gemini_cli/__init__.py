"""Everything Gemini CLI-specific: the pinned CLI and the Agent that runs it on one task.

`from gemini_cli import GeminiCliAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

_EXPORTS = {
    "GeminiCliAgent": "gemini_cli.agent",
    "WriteFileTool": "gemini_cli.agent",
    "gemini_cli_binary": "gemini_cli.agent",
}

__all__ = sorted(_EXPORTS)


# `AGENT` is the package's Agent class, which helpers.core.registry finds by that name
__getattr__ = lazy_exports("gemini_cli", _EXPORTS, agent="gemini_cli.agent:GeminiCliAgent")
