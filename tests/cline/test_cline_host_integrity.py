"""What a real Cline run plants in its workspace's git (a command for core.fsmonitor, clean and smudge filters, an
external diff driver, a textconv driver, hooks, a nested repository's fsmonitor) never runs on the host: the
engine takes the patch with a git directory of its own (helpers.families.coding.workspaces).

Needs bubblewrap (as every run with a real model does); skipped, saying so, where it cannot start.
"""

import pytest
from sandbox_probes import markers_found, plant_script

from cline import run_act
from helpers.core.sandbox import unavailable_reason
from helpers.families.coding.house_suite import load_house_suite
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}")


def test_git_commands_a_cline_run_plants_never_run_on_the_host_and_its_work_is_still_taken(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()  # exists on the host only: inside the sandbox nothing can be written there
    script = Script([Rule(reply=[Reply("Planting.", tool_calls=[tool_call("run_commands", commands=[plant_script(markers)])]),
                                 Reply("Done.")])])
    with ScriptedModelServer(script) as server, \
            Gateway({"agent": Upstream(server.base_url, "sk-test", "openai-compatible")}) as gateway:
        rows = run_act(tasks=load_house_suite().head(1), run_id="plant", model="gpt-4.1", base_url=server.base_url,
                       api_key="sk-test", results_root=tmp_path / "results", progress=False, gateway=gateway,
                       evaluate=False)
    patch = rows["output"][0]
    assert rows["status"][0] == "completed", rows["error"][0]
    assert "+changed by the agent" in patch and "+++ b/new.txt" in patch and "+++ b/.gitattributes" in patch
    assert markers_found(markers) == [], f"the host ran what the agent planted: {markers_found(markers)}"
