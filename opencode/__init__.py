"""Everything opencode-specific: the pinned CLI and the Agent that runs it on one task.

`from opencode import OpencodeAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

__all__ = ["OpencodeAgent", "opencode_binary"]

# every public name is in opencode.agent; `AGENT` is the package's Agent class (helpers.core.registry reads it)
__getattr__ = lazy_exports("opencode", dict.fromkeys(__all__, "opencode.agent"), agent="opencode.agent:OpencodeAgent")
