"""A CLI agent's end is the host's own wait on its process, never what its stream says: a toy CLI (no model) whose
output claims what a forger would, run through the engine in the sandbox. Whatever it claims, a run it ended itself is
a failed attempt, counted; its usage and cost are never its stream's (the gateway's meter, here none)."""

import pytest

from helpers.stats.outcomes import RESOLVED, RULES, outcome_counts, run_outcome
from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from tests.helpers.agents.toy_packages import TOY_BINARY, TOY_PACKAGE, importable, write_package

CLAIMING_PACKAGE = '''
import json
from pathlib import Path

from toy_agent import ToyAgent
from helpers.core.protocols import AgentResult


class ClaimingAgent(ToyAgent):  # the toy agent's run of its own bin/toy, read by a parser that trusts its last line
    name, package_dir = "claiming-agent", Path(__file__).parent

    def result(self, task, out, err, timed_out, duration):  # as a naive one would
        final = json.loads(out.strip().splitlines()[-1])
        return AgentResult(str(task["instance_id"]), final["status"], error=final.get("error", ""), model=self.model,
                           usage={"input_tokens": final["tokens"], "output_tokens": final["tokens"]},
                           cost_usd=final["cost"])


AGENT = ClaimingAgent
'''
CLAIM = '{"status": "completed", "tokens": 1000000000000, "cost": 1000.0}'
VARIANTS = {  # what the CLI does on each task, the status the host sees, the outcome
    "honest": (f"git apply <<'EOF'\nPATCH\nEOF\necho '{CLAIM}'", "completed", RESOLVED),
    "claims then kills itself": (f"echo '{CLAIM}'; kill -9 $$", "error", RULES),
    "claims then stops itself": (f"echo '{CLAIM}'; kill -STOP $$", "timeout", RULES),
    "claims done, exits 3": (f"echo '{CLAIM}'; exit 3", "error", RULES),
    "a provider's error, exit 0": ("""echo '{"status": "error", "error": "503 Service Unavailable: overloaded (429)", """
                                   """"tokens": 5, "cost": 1.0}'""", "error", RULES),
    "output no parser reads": ("echo 'not json'", "error", RULES),
}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """One run_tasks call over a task per variant (and a second call: nothing runs again)."""
    tmp = tmp_path_factory.mktemp("claiming")
    tasks = load_house_suite().head(len(VARIANTS))
    cases = "".join(f"{iid})\n{command.replace('PATCH', patch.rstrip(chr(10)))}\n;;\n" for iid, patch, (command, _, _) in
                    zip(tasks.instance_id, tasks.patch, VARIANTS.values()))
    write_package(tmp / "packages", "toy_agent", TOY_PACKAGE, TOY_BINARY)
    claim = f"#!/bin/bash\nread id\ncase \"$id\" in\n{cases}esac\n"  # each task's variant, by its id
    write_package(tmp / "packages", "claiming_agent", CLAIMING_PACKAGE, claim)
    with importable(tmp / "packages", "toy_agent", "claiming_agent"):
        agent = make_agent("claiming-agent", timeout_s=10)  # the stopped run ends here
        kw = dict(run_id="claims", experiment="claims", workers=3, progress=False, results_root=tmp / "results")
        first = run_tasks(tasks, agent, **kw)
        second = run_tasks(tasks, agent, **kw)
    first.index = list(VARIANTS)
    return first, second


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_runs_end_and_outcome_are_the_hosts_whatever_the_cli_claimed(rows, variant):
    row = rows[0].loc[variant]
    _, status, outcome = VARIANTS[variant]
    assert (row.status, run_outcome(row)) == (status, outcome), row.error
    assert row.host_error == "" and not row.transient and row.tries == 1
    assert (row.input_tokens, row.output_tokens) == (0, 0) and row.cost_usd is None  # no meter: nothing, not 10^12


def test_a_claim_is_kept_as_the_agents_words_and_the_count_holds_every_run(rows):
    first, second = rows
    assert "died of signal 9" in first.error["claims then kills itself"] or \
        "exited with status 137" in first.error["claims then kills itself"]
    assert "(the host's wait); its stream claimed completed" in first.error["claims done, exits 3"]
    assert "503 Service Unavailable" in first.error["a provider's error, exit 0"]
    assert "the agent's output could not be read" in first.error["output no parser reads"]
    counts = outcome_counts(first)
    assert (counts["runs"], counts["scored"], counts["errors"], counts["accuracy"]) == (6, 6, 0, 1 / 6)
    assert second.error.tolist() == first.error.tolist()  # final: a second call runs nothing again
