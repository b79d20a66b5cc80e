"""What a real Cline run plants in its workspace's git never runs on the host: in the workspace's own repository
(a command for core.fsmonitor, clean and smudge filters, an external diff driver, a textconv driver, hooks) the
engine takes the patch with a git directory of its own; repositories it makes inside the work tree (a nested
repository, a .git file pointing elsewhere, a submodule), each with the same vectors in its own config, are
refused by name before any git runs (helpers.families.coding.workspaces).

Needs bubblewrap (as every run with a real model does); skipped, saying so, where it cannot start.
"""

import pytest
from sandbox_probes import markers_found, plant_nested_script, plant_script

from cline import run_act
from helpers.stats.outcomes import RULES, run_outcome
from helpers.isolation.sandbox import unavailable_reason
from helpers.families.coding.house_suite import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


def planting(script: str) -> list[Reply]:
    return [Reply("Planting.", tool_calls=[tool_call("run_commands", commands=[script])]), Reply("Done.")]


def test_git_commands_a_cline_run_plants_never_run_on_the_host_and_its_work_is_still_taken(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()  # exists on the host only: inside the sandbox nothing can be written there
    tasks = load_house_suite().head(2)
    top, nested = tasks.instance_id  # one run each, side by side: the same vectors at the top, and nested
    script = Script([Rule(user_contains=top, reply=planting(plant_script(markers))),
                     Rule(user_contains=nested, reply=planting(plant_nested_script(markers)))])
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, "sk-test", "openai-compatible")}) as gateway:
        rows = run_act(tasks=tasks, run_id="plant", model="gpt-4.1", base_url=server.base_url,
                       api_key="sk-test", results_root=tmp_path / "results", progress=False, gateway=gateway,
                       evaluate=False).set_index("instance_id")
    patch = rows.loc[top, "output"]
    assert rows.loc[top, "status"] == "completed", rows.loc[top, "error"]
    assert "+changed by the agent" in patch and "+++ b/new.txt" in patch and "+++ b/.gitattributes" in patch
    refused = rows.loc[nested]
    assert refused["status"] == "error" and refused["output"] == "", refused["error"]
    assert "linked/.git, mod/.git, sub/.git - a git repository inside the work tree" in refused["error"]
    assert run_outcome(refused.to_dict()) == RULES  # the agent's doing: counted as a failure of its rules
    assert markers_found(markers) == [], f"the host ran what the agent planted: {markers_found(markers)}"
