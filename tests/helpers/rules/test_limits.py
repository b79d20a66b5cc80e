"""Each agent's documented rules-file limit, and the one check against it: over a limit is a warning that names
the agent and the limit; within it, or for an agent that documents none, nothing is said."""

import warnings

import pytest

from helpers.core.registry import agent_class, registered_agents
from helpers.rules.limits import (RulesLimit, RulesSizeWarning, agent_limit, check_file_size, check_size,
                                       rules_size, size_warning)


def test_codex_reads_at_most_32_kib_of_agents_md_and_a_file_past_it_is_a_warning_naming_codex_and_the_limit():
    limit = agent_limit("codex")
    assert limit.bytes == 32 * 1024 and "project_doc_max_bytes" in limit.source
    assert size_warning("x" * 32 * 1024, "codex", limit) is None  # exactly at the limit: all of it is read
    message = size_warning("x" * (32 * 1024 + 1), "codex", limit, "AGENTS.md")
    assert message.startswith("AGENTS.md is 32,769 bytes, over codex's documented limit of 32,768 bytes")
    assert "project_doc_max_bytes" in message


def test_the_limit_counts_bytes_not_characters_so_non_ascii_text_reaches_it_sooner():
    text = "é" * 20_000  # 20,000 characters, 40,000 bytes
    assert rules_size(text)["bytes"] == 40_000 and rules_size(text)["chars"] == 20_000
    assert size_warning(text, "codex", RulesLimit(bytes=32 * 1024, source="s")) is not None
    assert size_warning(text, "claude-code", RulesLimit(chars=40_000, source="s")) is None


def test_every_registered_agent_states_its_limit_with_a_source_or_states_none():
    for name in registered_agents():
        limit = getattr(agent_class(name), "rules_limit", "undeclared")
        assert limit is None or (isinstance(limit, RulesLimit) and limit.source and (limit.bytes or limit.chars)), name
    assert agent_limit("claude-code").chars == 40_000
    assert agent_limit("gemini-cli") is None and size_warning("x" * 10**6, "gemini-cli", None) is None


def test_check_size_raises_the_warning_and_a_file_read_by_several_agents_is_checked_against_each():
    with pytest.warns(RulesSizeWarning, match="codex's documented limit"):
        assert check_size("y" * 40_000, "codex")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is said within the limit
        assert check_size("short", "codex") is None and check_file_size("short", "AGENTS.md") == []
    with pytest.warns(RulesSizeWarning):
        found = check_file_size("z" * 50_000, "AGENTS.md")  # Codex, opencode, mini-swe-agent read AGENTS.md
    assert len(found) == 1 and "codex" in found[0]
    with pytest.warns(RulesSizeWarning, match="claude-code's documented limit of 40,000 characters"):
        check_file_size("z" * 50_000, "CLAUDE.md")
