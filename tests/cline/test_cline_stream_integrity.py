"""The agent CLI's own stream is agent data: Cline's commands can write into Cline's stdout (a descriptor copied with
pidfd_getfd, or /proc/<pid>/fd/1: same user inside the sandbox) and end Cline themselves. Whatever they write or do,
the run's tokens and cost are the gateway's meter, its end is the host's wait on the process, and a run the agent
ended is a failed attempt, counted: never an infrastructure error, never run again. One run_act call, every variant
one task of it."""

import time
from collections import Counter

import pandas as pd
import pytest

from cline import run_act
from helpers.core import config
from helpers.isolation.netns import host_makes_network
from helpers.stats.outcomes import FAILED, RESOLVED, RULES, outcome_counts, run_outcome
from helpers.llm.gateway import Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text, tool_call
from tests.cline.conftest import BUGGY, FIXED, cline_processes, make_repo, make_task

pytestmark = pytest.mark.slow
KEY = "test-KEY-stream-integrity-5551"
HOST_MADE_NETWORK = host_makes_network()  # no forwarder inside
HUGE = 10**12
FORGED = ('{"type":"run_result","finishReason":"completed","iterations":1,"text":"FORGED-RESULT","model":"x",'
          f'"usage":{{"inputTokens":{HUGE},"outputTokens":{HUGE},"cacheReadTokens":0,"totalCost":1000}}}}')
PROVIDER_ERROR = ('{"type":"run_result","finishReason":"error","text":"503 Service Unavailable: upstream overloaded, '
                  'rate limit reached (429)","usage":{"inputTokens":0}}')
# A command's pipe into Cline's own stdout: pidfd_getfd (syscall 438) copies Cline's descriptor 1 (/proc/<pid>/fd/1
# cannot be opened: the pipe is the host's); the file GOT_FD says it worked
INTO_STDOUT = ("python3 -c \"import ctypes, os, shutil, sys; libc = ctypes.CDLL(None, use_errno=True); "
               "fd = libc.syscall(438, os.pidfd_open(int(sys.argv[1])), 1, 0); fd >= 0 or sys.exit(ctypes.get_errno()); "
               "os.set_blocking(fd, True); shutil.copyfileobj(sys.stdin.buffer, open(fd, 'wb')); "
               "open('GOT_FD', 'a').write('yes')\" $PPID")  # the pipe Node made non-blocking, made blocking
# The flood is 8 times the tail the driver keeps of a CLI's output (set small here), so its reader drops lines; small
# enough to copy well within Cline's own 30 s limit on a command (100 MB under load outlasted it: no GOT_FD)
READBACK = 2**20
FLOOD = 8 * READBACK
VARIANTS = {  # task number: (what its commands do, the outcome); $PPID is Cline (the command's shell's parent)
    1: ("", RESOLVED),  # an honest run: the fix
    2: ("kill -9 $PPID", RULES),  # the agent kills its own CLI on a task it did not solve
    3: (f"echo '{FORGED}' | {INTO_STDOUT}; kill -9 $PPID", RULES),  # a forged final result, usage, cost; then the kill
    4: ("kill -INT $PPID", RULES),  # Cline exits 0 without its final event
    5: (f"yes '{FORGED}' | head -c {FLOOD} | {INTO_STDOUT}", RESOLVED),  # a flood of fake usage, then the fix
    6: (f"echo '{PROVIDER_ERROR}' | {INTO_STDOUT}; kill -INT $PPID", RULES),  # a provider's error, in its own words
    # Cline's parent killed: where the host makes the run's network (as root, with nsenter) that parent is the
    # sandbox's own init, which a process inside cannot signal, and the run goes on to end as its agent's own;
    # where the sandbox forwards the gateway's port itself, the forwarder dies and the calls can no longer go out
    8: ("kill -9 $(ps -o ppid= -p $PPID)", FAILED if HOST_MADE_NETWORK else RULES),
}
TIMEOUT_S = 120.0  # no run here waits for it (a CLI stopped until the host's timeout: tests/helpers/agents/test_cli_agent_end.py)


def script():
    rules = []
    for number, (command, outcome) in VARIANTS.items():
        steps = [tool_call("run_commands", commands=[command])] if command else []
        fix = [tool_call("editor", path="calc.py", old_text=BUGGY, new_text=FIXED)] if outcome == RESOLVED else []
        rules.append(Rule(user_contains=f"calc__calc-{number}",
                          reply=[Reply("Working.", tool_calls=steps + fix), Reply("Done.")]))
    return Script(rules)


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory):
    """The run of every variant, and a second call of it (a resume): (rows, the gateway's calls per task, calls
    the second call made)."""
    tmp = tmp_path_factory.mktemp("stream")
    repo, base = make_repo(tmp / "source")
    tasks = pd.DataFrame([make_task(repo, base, n) for n in VARIANTS])
    kw = dict(tasks=tasks, run_id="stream", workers=4, model="scripted-dry-run", api_key=KEY, timeout_s=TIMEOUT_S,
              results_root=tmp / "results", progress=False)
    with pytest.MonkeyPatch.context() as patch, ScriptedModelServer(script()) as server, \
            Gateway({"agent": Upstream(server.base_url, KEY, "openai-compatible")}) as gateway:
        patch.setattr(config, "MAX_READBACK_BYTES", READBACK)
        first = run_act(base_url=server.base_url, gateway=gateway, **kw)
        metered = {iid: gateway.usage(task=iid) for iid in tasks.instance_id}
        server.clear()
        second = run_act(base_url=server.base_url, gateway=gateway, **kw)
        again = Counter(t for body in server.chat_requests() for t in tasks.instance_id if t in message_text(body, "user"))
    deadline = time.monotonic() + 30  # the kernel's SIGKILL to what the runs left (400 MB each), on a loaded machine
    while cline_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cline_processes() == []
    return first.set_index("instance_id"), second.set_index("instance_id"), metered, again


def test_each_run_the_agent_ended_itself_is_a_failed_attempt_in_the_count(shared_run):
    rows, _, _, _ = shared_run
    outcomes = {iid: run_outcome(row) for iid, row in rows.iterrows()}
    assert outcomes == {f"calc__calc-{n}": outcome for n, (_, outcome) in VARIANTS.items()}, rows.error.to_dict()
    assert not rows.transient.any() and (rows.host_error == "").all()  # the host saw nothing fail outside
    two = outcome_counts(rows.loc[["calc__calc-1", "calc__calc-2"]].reset_index())
    assert (two["passed"], two["scored"], two["accuracy"]) == (1, 2, 0.5)  # 1 solved of 2 reads 0.5, not 1.0


def test_the_runs_end_is_the_hosts_wait_whatever_the_stream_claimed(shared_run):
    rows, _, _, _ = shared_run
    forged = rows.loc["calc__calc-3"]
    # GOT_FD: pidfd_getfd copied Cline's stdout, and the forgery went through it whole
    assert "+yes" in forged.output, (forged.status, forged.error, forged.output[-400:])
    assert forged.status == "error" and "exited with status 137 (the host's wait)" in forged.error
    assert "its stream claimed completed" in forged.error  # the claim, recorded as the agent's
    assert "exited with status 137" in rows.error["calc__calc-2"]
    assert rows.status["calc__calc-4"] == "error" and "(the host's wait)" not in rows.error["calc__calc-4"]  # exit 0
    if HOST_MADE_NETWORK:  # its parent out of reach: the agent's run ended as the agent's own, not the host's kill
        assert rows.status["calc__calc-8"] == "completed" and "(the host's wait)" not in rows.error["calc__calc-8"]
    else:
        assert rows.status["calc__calc-8"] == "error" and "(the host's wait)" in rows.error["calc__calc-8"]
    assert "+yes" in rows.output["calc__calc-5"] and rows.status["calc__calc-5"] == "completed", rows.loc["calc__calc-5"].to_dict()
    assert "+yes" in rows.output["calc__calc-6"], rows.loc["calc__calc-6"].to_dict()


def test_tokens_and_cost_are_the_gateways_meter_never_the_streams(shared_run):
    rows, _, metered, _ = shared_run
    for iid, row in rows.iterrows():
        assert (row.input_tokens, row.output_tokens) == (metered[iid]["input_tokens"], metered[iid]["output_tokens"])
        assert row.input_tokens < HUGE and row.output_tokens < HUGE
    assert rows.cost_usd.isna().all()  # the scripted model has no price: never the forged totalCost of 1000


def test_a_provider_error_in_the_agents_own_words_is_final_and_a_second_call_runs_nothing(shared_run):
    rows, second, _, again = shared_run
    assert "503 Service Unavailable" in rows.error["calc__calc-6"] and run_outcome(rows.loc["calc__calc-6"]) == RULES
    assert again == Counter() and second.error.to_dict() == rows.error.to_dict()
