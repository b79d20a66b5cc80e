"""Fixtures the model layer's tests share."""

import pytest

from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call


@pytest.fixture
def server():
    """The scripted model server on a script both wires are tested with (test_scripted_server, OpenAI's chat API;
    test_scripted_gemini, Gemini's): rules seen in the system prompt, a tool call then "Done.", a default answer.
    A test module with a `server` of its own uses its own."""
    script = Script([
        Rule(system_contains="ALWAYS-WRITE-CHANGELOG", reply=Reply("rules seen")),
        Rule(user_contains="use a tool", reply=[
            Reply("Editing now.", tool_calls=[tool_call("editor", path="a.py", old_text="x = 1", new_text="x = 2")]),
            Reply("Done."),
        ]),
    ], default=Reply("default answer"))
    with ScriptedModelServer(script) as s:
        yield s
