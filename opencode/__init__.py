"""Everything opencode-specific: the pinned CLI and the Agent that runs it on one task.

`from opencode import OpencodeAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

_EXPORTS = {
    "OpencodeAgent": "opencode.agent",
    "opencode_binary": "opencode.agent",
}

__all__ = sorted(_EXPORTS)


# `AGENT` is the package's Agent class, which helpers.core.registry finds by that name
__getattr__ = lazy_exports("opencode", _EXPORTS, agent="opencode.agent:OpencodeAgent")
