"""The scripted model server speaks OpenAI's chat API well enough for the SDK and for Cline."""

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from openai import OpenAI

from helpers.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call


@pytest.fixture
def server():
    script = Script([
        Rule(system_contains="ALWAYS-WRITE-CHANGELOG", reply=Reply("rules seen")),
        Rule(user_contains="use a tool", reply=[
            Reply("Editing now.", tool_calls=[tool_call("editor", path="a.py", old_text="x = 1", new_text="x = 2")]),
            Reply("Done."),
        ]),
    ], default=Reply("default answer"))
    with ScriptedModelServer(script) as s:
        yield s


def client(server):
    return OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)


def test_streaming_answer_carries_content_tool_calls_and_usage(server):
    stream = client(server).chat.completions.create(
        model="scripted-dry-run", stream=True, stream_options={"include_usage": True},
        messages=[{"role": "user", "content": "please use a tool"}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text == "Editing now."
    assert [c.function.name for c in calls] == ["editor"]
    assert json.loads(calls[0].function.arguments) == {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}
    assert finish == ["tool_calls"]
    assert chunks[-1].usage.total_tokens > 0


def test_reply_step_follows_the_number_of_assistant_turns(server):
    messages = [{"role": "user", "content": "use a tool"},
                {"role": "assistant", "content": "Editing now."},
                {"role": "tool", "tool_call_id": "x", "content": "ok"}]
    answer = client(server).chat.completions.create(model="m", messages=messages)
    assert answer.choices[0].message.content == "Done."
    assert answer.choices[0].finish_reason == "stop"


def test_rules_match_on_the_system_message(server):
    with_rule = client(server).chat.completions.create(model="m", messages=[
        {"role": "system", "content": "# Rules\nALWAYS-WRITE-CHANGELOG"}, {"role": "user", "content": "hi there"}])
    without = client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi there"}])
    assert with_rule.choices[0].message.content == "rules seen"
    assert without.choices[0].message.content == "default answer"


def test_every_request_is_recorded_in_order(server):
    for word in ("first one", "second one"):
        client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": word}])
    bodies = server.chat_requests()
    assert [b["messages"][0]["content"] for b in bodies] == ["first one", "second one"]


def test_64_concurrent_requests_are_all_answered():
    script = Script(default=Reply("slow answer", delay_s=0.3))
    with ScriptedModelServer(script) as s:
        c = OpenAI(base_url=s.base_url, api_key="k", max_retries=0)

        def ask(i):
            return c.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q {i}"}])

        with ThreadPoolExecutor(64) as pool:
            answers = list(pool.map(ask, range(64)))
    assert [a.choices[0].message.content for a in answers] == ["slow answer"] * 64
    assert len(s.chat_requests()) == 64


def test_scripted_errors_carry_status_and_retry_after():
    script = Script([Rule(reply=Reply(status=429, retry_after=2, error_message="slow down"), times=1)])
    with ScriptedModelServer(script) as s:
        first = httpx.post(f"{s.base_url}/chat/completions", json={"model": "m", "messages": []})
        second = httpx.post(f"{s.base_url}/chat/completions", json={"model": "m", "messages": []})
    assert first.status_code == 429
    assert first.headers["retry-after"] == "2"
    assert first.json()["error"]["message"] == "slow down"
    assert second.status_code == 200  # `times=1`: the rule fired once


def test_stopping_frees_the_port():
    with ScriptedModelServer() as s:
        url = s.base_url
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/models", timeout=2)
