"""How much of a rules file an agent reads: each agent's documented limit, and the one check against it.

Agents read their rules file on every call, and some stop reading partway: Codex reads at most
`project_doc_max_bytes` of AGENTS.md (32 KiB by default) and silently drops the rest. Each agent package
states its own limit as data (its class's `rules_limit`, a RulesLimit with the source it is cited from, or
None when its documentation states none); `size_warning` is the one check, used at export and in the
baselines' summary. Over a limit is a warning naming the agent and the limit, never an error: the file is
the team's to trim.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


class RulesSizeWarning(UserWarning):
    """A rules file larger than its agent reads (or than its agent warns about)."""


@dataclass(frozen=True)
class RulesLimit:
    """One agent's documented limit on its rules file: at most `bytes` bytes (UTF-8) or `chars` characters
    (whichever is given), what happens beyond it (`beyond`: "the rest is not read", "the agent warns"), and
    `source`, where it is documented."""

    bytes: int | None = None
    chars: int | None = None
    beyond: str = "the rest is not read"
    source: str = ""

    def describe(self) -> str:
        size = f"{self.bytes:,} bytes" if self.bytes is not None else f"{self.chars:,} characters"
        return f"{size} ({self.beyond}; {self.source})"


def rules_size(text: str) -> dict[str, int]:
    """{"bytes", "chars", "tokens", "rules"} of a rules text (tokens and rules as helpers.rules.ruleset counts them)."""
    from helpers.rules.ruleset import render_stats

    stats = render_stats(text)
    return {
        "bytes": len((text or "").encode("utf-8", errors="surrogateescape")),
        "chars": len(text or ""),
        "tokens": stats["tokens"],
        "rules": stats["rules"],
    }


def size_warning(text: str, agent: str, limit: RulesLimit | None, where: str = "the rules file") -> str | None:
    """The sentence warning that `text` exceeds `agent`'s documented `limit` (None within it, or with no limit)."""
    if limit is None:
        return None
    size = rules_size(text)
    over = [(size["bytes"], limit.bytes, "bytes"), (size["chars"], limit.chars, "characters")]
    for have, most, unit in over:
        if most is not None and have > most:
            return (
                f"{where} is {have:,} {unit}, over {agent}'s documented limit of {most:,} {unit}: "
                f"{limit.beyond} ({limit.source})."
            )
    return None


def agent_limit(agent: str) -> RulesLimit | None:
    """The registered agent's documented rules-file limit (its class's `rules_limit`; None if it states none
    or is not installed)."""
    from helpers.core.registry import agent_class

    try:
        return getattr(agent_class(agent), "rules_limit", None)
    except (KeyError, ValueError, ImportError):
        return None


def check_size(text: str, agent: str, where: str = "the rules file") -> str | None:
    """size_warning for a registered agent, also raised as a RulesSizeWarning (so a notebook shows it)."""
    message = size_warning(text, agent, agent_limit(agent), where)
    if message:
        warnings.warn(message, RulesSizeWarning, stacklevel=2)
    return message


def check_file_size(text: str, rules_file: str) -> list[str]:
    """check_size for every registered agent that reads `rules_file` (its class's rules_file, e.g. "AGENTS.md"
    is read by several): the warnings raised, [] within every reader's limit."""
    from helpers.core.registry import agent_class, registered_agents

    found = []
    for name in registered_agents():
        try:
            reads = getattr(agent_class(name), "rules_file", None)
        except (ValueError, ImportError):
            continue
        if reads == rules_file:
            message = check_size(text, name, rules_file)
            found += [message] if message else []
    return found


__all__ = [
    "RulesLimit",
    "RulesSizeWarning",
    "rules_size",
    "size_warning",
    "agent_limit",
    "check_size",
    "check_file_size",
]
