"""A fourth agent is one package of its own: it subclasses the CLI agent base, is found by its name, and
runs through the engine and the scripted dry run's loop with no change in helpers/."""

import subprocess
import textwrap

import pytest

from helpers.core.registry import make_agent
from helpers.engine.loop import LoopSettings, run_loop
from helpers.engine.runs import run_tasks
from helpers.families.coding.tasks import load_house_suite
from tests.helpers.agents.toy_packages import TOY_BINARY, TOY_PACKAGE, importable, write_package


@pytest.fixture
def toy_agent(tmp_path, monkeypatch):
    package = write_package(tmp_path / "packages", "toy_agent", TOY_PACKAGE, TOY_BINARY)
    for name, sub in (("PL_RESULTS_DIR", "results"), ("PL_RULESETS_DIR", "rulesets"), ("PL_CACHE_DIR", "cache")):
        monkeypatch.setenv(name, str(tmp_path / sub))
    with importable(package.parent, "toy_agent"):
        yield package


def test_the_toy_agent_package_is_small():
    lines = len(textwrap.dedent(TOY_PACKAGE).strip().splitlines()) + len(TOY_BINARY.strip().splitlines())
    assert lines <= 150


def test_a_fourth_agent_runs_through_the_engine_by_its_name(toy_agent):
    agent = make_agent("toy-agent", timeout_s=60)
    tasks = load_house_suite().head(2)
    rows = run_tasks(tasks, agent, run_id="toy", experiment="toy", ruleset="- [R1] Be kind.", workers=2, progress=False)
    assert rows["status"].tolist() == ["completed", "completed"] and set(rows["agent"]) == {"toy-agent"}
    for row in rows.itertuples():
        assert "+++ b/FIXED.txt" in row.output and f"+{row.instance_id} was here" in row.output
        assert "+- [R1] Be kind." in row.output  # it read its rules from TOY.md, where the engine wrote them
        assert "+++ b/TOY.md" not in row.output  # the rules file itself is not part of the patch
        assert row.pass_or_fail == "fail"  # the house suite's hidden tests ran on its patch


def test_a_fourth_agent_runs_the_scripted_dry_run_loop(toy_agent):
    from helpers.app.session import open_session

    train, test = load_house_suite().head(2), load_house_suite().iloc[2:4].reset_index(drop=True)
    with open_session(dry_run=True, agent="toy-agent", phoenix=False) as session:
        loops = run_loop(train, test, LoopSettings("toy-loop", loops=1, workers=2, agent="toy-agent"), session,
                         verbose=False)
    assert loops["agent"].tolist() == ["toy-agent"] and loops["dry_run"].tolist() == [True]
    assert loops["train_scored"].tolist() == [2] and loops["train_errors"].tolist() == [0]


def test_helpers_do_not_know_the_toy_agent():
    found = subprocess.run(["grep", "-rl", "toy-agent\\|toy_agent", "helpers"], capture_output=True, text=True)
    assert found.stdout == ""
