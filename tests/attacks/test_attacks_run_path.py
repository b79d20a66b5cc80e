"""The run path (helpers.isolation.processes.run_cli and the runners that read its CLIRun), attacked as an untrusted
agent would, through the engine with a toy agent whose CLI is the agent (tests/helpers/agents/toy_packages.py).

The red team's break (stop 56): a cap is the host's observation, but the host read it from any stderr line starting
CAP_PREFIX, and stderr is the agent's, so a run that exited 0 with the fix, or that the host's timeout stopped, was
recorded as ended by a cap that never fired (also through Cline: a command writing into Cline's stderr with
pidfd_getfd). Closed by construction: the cap travels as CLIRun.cap, the watcher's own sentence, and no limit only the
host observes is ever read from the agent's words (helpers.stats.outcomes.HOST_LIMITS)."""

import pytest

from helpers.core.registry import make_agent
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from helpers.isolation.confinement import CAP_PREFIX
from helpers.isolation.sandbox import unavailable_reason
from helpers.stats.outcomes import RESOLVED, RULES, run_outcome
from tests.helpers.agents.test_cli_agent_end import CLAIM, CLAIMING_PACKAGE
from tests.helpers.agents.toy_packages import TOY_BINARY, TOY_PACKAGE, importable, write_package

needs_sandbox = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")
FORGED_CAP = f"{CAP_PREFIX} memory (512 MB); the run was ended."  # the sentence the host's cap watcher would add


VARIANTS = {  # what the CLI does, then how the host saw its run end
    "exits 0 with the fix": ("git apply <<'EOF'\nPATCH\nEOF\necho 'CLAIM'", ("completed", RESOLVED)),
    "stalls past the host's timeout": ("sleep 60", ("timeout", RULES)),
}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """One run_tasks call, a task per variant: each CLI also prints the cap watcher's sentence on its stderr."""
    tmp = tmp_path_factory.mktemp("cap")
    tasks = load_house_suite().head(len(VARIANTS))
    cases = "".join(
        f"{iid})\necho '{FORGED_CAP}' >&2\n{command.replace('PATCH', patch.rstrip(chr(10))).replace('CLAIM', CLAIM)}\n;;\n"
        for iid, patch, (command, _) in zip(tasks.instance_id, tasks.patch, VARIANTS.values())
    )
    write_package(tmp / "packages", "toy_agent", TOY_PACKAGE, TOY_BINARY)
    write_package(
        tmp / "packages", "claiming_agent", CLAIMING_PACKAGE, f'#!/bin/bash\nread id\ncase "$id" in\n{cases}esac\n'
    )
    with importable(tmp / "packages", "toy_agent", "claiming_agent"):
        agent = make_agent("claiming-agent", timeout_s=10)  # as the CLI-end test: room on a loaded machine
        kw = dict(run_id="cap", experiment="cap", workers=2, progress=False, results_root=tmp / "results")
        frame = run_tasks(tasks, agent, **kw)
    frame.index = list(VARIANTS)
    return frame


@needs_sandbox
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_a_cap_sentence_the_agent_prints_on_stderr_is_not_taken_for_the_hosts_cap(rows, variant):
    row = rows.loc[variant]
    assert row.host_error == "" and not row.transient  # holds today: the agent cannot make it the host's failure
    assert CAP_PREFIX not in str(row.error), row.error  # no cap ended it: the host's watcher never fired
    assert (row.status, run_outcome(row)) == VARIANTS[variant][1], row.error
