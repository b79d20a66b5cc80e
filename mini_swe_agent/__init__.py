"""Everything mini-swe-agent-specific: the pinned agent (in an environment of its own) and the Agent that runs it.

`from mini_swe_agent import MiniSweAgent` loads lazily; importing this package starts nothing.
"""

from helpers.core.lazy import lazy_exports

__all__ = ["MiniSweAgent"]

# every public name is in mini_swe_agent.agent; `AGENT` is the package's Agent class (helpers.core.registry reads it)
__getattr__ = lazy_exports(
    "mini_swe_agent", dict.fromkeys(__all__, "mini_swe_agent.agent"), agent="mini_swe_agent.agent:MiniSweAgent"
)
