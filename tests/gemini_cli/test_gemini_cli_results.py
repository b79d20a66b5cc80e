"""Reading the Gemini CLI's stream-json events (no CLI started): its claimed status, final text, turns, and every
failure as one line; never its usage (agent data: the gateway meters the run)."""

import json

from gemini_cli.agent import GeminiCliAgent

INIT = {"type": "init", "model": "gemini-2.5-pro"}
CALL = {"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "t1", "parameters": {"command": "ls"}}
DONE = {"type": "tool_result", "tool_id": "t1", "status": "success", "output": "a.py"}
STATS = {"input_tokens": 120, "output_tokens": 7, "cached": 20}


def read(events, stderr="", timed_out=False):
    out = "".join(json.dumps(event) + "\n" for event in events)
    return GeminiCliAgent("gemini-2.5-pro", timeout_s=30).result({"instance_id": "t-1"}, out, stderr, timed_out, 1.0)


def test_a_finished_run_is_completed_with_its_final_text_and_turns_and_its_stats_are_not_taken_as_usage():
    result = read([INIT, {"type": "message", "role": "assistant", "content": "Look", "delta": True}, CALL, DONE,
                   {"type": "message", "role": "assistant", "content": "Fixed ", "delta": True},
                   {"type": "message", "role": "assistant", "content": "it.", "delta": True},
                   {"type": "result", "status": "success", "stats": STATS}])
    assert (result.status, result.error, result.final_text, result.iterations) == ("completed", "", "Fixed it.", 2)
    assert result.usage == {} and result.cost_usd is None  # the stream's stats are the agent's to write
    assert [s["type"] for s in result.trajectory] == ["message", "tool_call", "tool_result", "message"]


def test_failures_are_one_line_reasons():
    error = {"type": "result", "status": "error", "stats": STATS,
             "error": {"type": "ApiError", "message": "[API Error: quota]\n  exceeded\n"}}
    assert read([INIT, error]).error == "[API Error: quota] exceeded"
    crashed = read([], stderr="node: something\nTypeError: boom\n")
    assert crashed.status == "error" and "boom" in crashed.error and crashed.iterations == 0
    assert read([INIT]).error == "Gemini CLI ended without a result"
    stopped = read([INIT, CALL], timed_out=True)
    assert (stopped.status, stopped.error) == ("timeout", "stopped after 30 s (the agent's time limit)")
