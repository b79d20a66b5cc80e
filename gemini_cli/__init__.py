"""Everything Gemini CLI-specific: the pinned CLI and the Agent that runs it on one task.

`from gemini_cli import GeminiCliAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

__all__ = ["GeminiCliAgent", "WriteFileTool", "gemini_cli_binary"]

# every public name is in gemini_cli.agent; `AGENT` is the package's Agent class (helpers.core.registry reads it)
__getattr__ = lazy_exports(
    "gemini_cli", dict.fromkeys(__all__, "gemini_cli.agent"), agent="gemini_cli.agent:GeminiCliAgent"
)
