"""Everything mini-swe-agent-specific: the pinned agent (in an environment of its own) and the Agent that runs it.

`from mini_swe_agent import MiniSweAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

_EXPORTS = {
    "MiniSweAgent": "mini_swe_agent.agent",
}

__all__ = sorted(_EXPORTS)


# `AGENT` is the package's Agent class, which helpers.core.registry finds by that name
__getattr__ = lazy_exports("mini_swe_agent", _EXPORTS, agent="mini_swe_agent.agent:MiniSweAgent")
