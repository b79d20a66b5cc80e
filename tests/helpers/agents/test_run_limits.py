"""A run a limit the rules can cause ended says which (AgentResult.limit), set where the run's end is read: the
host's timeout, the sandbox's cap, or a limit the CLI's own account of its end names. The engine decides from
that value, never from the error's words (tests/helpers/engine/test_runs_family.py)."""

import pytest

from helpers.agents.base import capped, ended_as_seen
from helpers.core.protocols import AgentResult, Limit
from helpers.isolation.confinement import CAP_PREFIX
from helpers.stats.outcomes import RULES, run_outcome


def claim(status="completed", error=""):
    return AgentResult("t-1", status, error=error, model="m")


@pytest.mark.parametrize("status, error, exit_status, timed_out, limit", [
    ("completed", "", 0, False, None),
    ("completed", "", None, True, Limit.TIME),
    ("error", "error_max_turns: reached max turns (30)", 1, False, Limit.TURNS),
    ("error", "Cline hit its consecutive mistake limit", 0, False, Limit.TURNS),
    ("error", "Prompt is too long: 9000 tokens > 8192 maximum", 0, False, Limit.CONTEXT),
    ("completed", "", 1, False, None),  # ended its own CLI: its failure, but no limit the rules caused
    ("error", "503 Service Unavailable: overloaded (429)", 0, False, None),  # a provider's words: not a limit
])
def test_the_end_a_cli_reports_is_read_once_into_a_typed_limit(status, error, exit_status, timed_out, limit):
    result = ended_as_seen(claim(status, error), exit_status, timed_out, 60)
    assert result.limit is limit
    if limit is not None:
        assert run_outcome({**result.to_dict(), "pass_or_fail": "fail"}) == RULES


def test_a_run_a_sandbox_cap_ended_names_the_cap_and_its_limit_whatever_the_agent_claimed():
    cap = f"{CAP_PREFIX} the process cap (40 processes); the run was ended."
    result = capped(ended_as_seen(claim("completed"), 0, False, 60), cap)  # the watcher's sentence (CLIRun.cap)
    assert (result.status, result.limit) == ("error", Limit.SANDBOX_CAP) and result.error.startswith(cap)
    assert capped(claim("completed"), "").limit is None  # no cap seen, whatever the run printed
