"""What an agent did, in one line for the judge, from the gateway's turns or the agent's own steps."""

from helpers.agents.trajectories import as_turns, cut_trajectory, summarize


def test_the_summary_names_tools_commands_files_tests_and_the_end():
    turns = [{"role": "user", "content": "Fix it.", "tool_calls": []},
             {"role": "assistant", "content": "", "tool_calls": [
                 {"name": "run_commands", "arguments": '{"commands": ["python -m pytest -q"]}'}]},
             {"role": "tool", "content": "1 failed", "tool_calls": []},
             {"role": "assistant", "content": "", "tool_calls": [{"name": "editor", "arguments": {"path": "calc.py"}}]},
             {"role": "assistant", "content": "Done: add() adds.\nMore text.", "tool_calls": []}]
    line = summarize(turns)
    assert line.startswith("3 model turns; tools: run_commands x1, editor x1")
    assert "ran: python -m pytest -q" in line and "wrote: calc.py" in line and "ran tests" in line
    assert line.endswith("ended: Done: add() adds.")


def test_an_agents_own_steps_read_the_same_and_nothing_is_empty():
    steps = [{"type": "tool_call", "name": "Bash", "text": '{"command": "git apply fix.diff"}'},
             {"type": "tool_result", "name": "Bash", "text": ""},
             {"type": "message", "name": "assistant", "text": "Applied."}]
    assert as_turns(steps)[0]["tool_calls"][0]["name"] == "Bash"
    assert "ran: git apply fix.diff" in summarize(steps) and "ran no tests" in summarize(steps)
    assert summarize([]) == ""


def test_a_long_trajectory_is_cut_with_a_note_of_what_was_left():
    steps = [{"type": "message", "name": "assistant", "text": "x" * 50} for _ in range(10)]
    kept = cut_trajectory(steps, budget=200, step_chars=30)
    assert all(len(s["text"]) < 70 for s in kept[:-1]) and "more steps cut" in kept[-1]["text"]
