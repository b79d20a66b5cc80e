"""The scripted model server speaks OpenAI's chat API well enough for the SDK and for Cline."""

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from openai import OpenAI

from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer


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


# --- the same Script answers Anthropic's Messages API and OpenAI's Responses API -----------------------
def sse_events(response) -> list[dict]:
    """The JSON payloads of an SSE body, each with the event name it came under."""
    events = []
    for block in response.text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append({**json.loads(fields["data"]), "_event": fields.get("event")})
    return events


def test_anthropic_streaming_carries_text_tool_use_input_json_and_usage(server):
    body = {"model": "claude-x", "max_tokens": 100, "stream": True, "system": [{"type": "text", "text": "sys"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "please use a tool"}]}]}
    response = httpx.post(f"{server.origin}/v1/messages?beta=true", json=body)
    events = sse_events(response)
    kinds = [e["type"] for e in events]
    assert all(e["_event"] == e["type"] for e in events)
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")
    arguments = "".join(e["delta"]["partial_json"] for e in events
                        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta")
    tool_start = [e["content_block"] for e in events if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"]
    assert text == "Editing now."
    assert [b["name"] for b in tool_start] == ["editor"] and tool_start[0]["id"].startswith("toolu_")
    assert json.loads(arguments) == {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 2
    delta = events[-2]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] > 0
    assert events[0]["message"]["usage"]["input_tokens"] > 0


def test_anthropic_turns_system_and_tool_results_are_read_like_chat(server):
    turn_two = {"model": "m", "max_tokens": 10, "system": "# Rules\nALWAYS-WRITE-CHANGELOG", "messages": [
        {"role": "user", "content": "use a tool"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "editor", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]}
    answer = httpx.post(f"{server.origin}/v1/messages", json=turn_two).json()
    assert answer["content"] == [{"type": "text", "text": "rules seen"}]  # system_contains saw `system`
    assert answer["stop_reason"] == "end_turn" and answer["usage"]["input_tokens"] > 0
    normalised = server.model_requests("anthropic")[0]
    assert [m["role"] for m in normalised["messages"]] == ["system", "user", "assistant", "tool"]
    assert normalised["messages"][2]["tool_calls"][0]["function"]["name"] == "editor"


def test_anthropic_errors_use_anthropics_error_body():
    script = Script([Rule(reply=Reply(status=400, error_message="bad model"))])
    with ScriptedModelServer(script) as s:
        response = httpx.post(f"{s.origin}/v1/messages", json={"model": "m", "messages": []})
    assert response.status_code == 400
    assert response.json() == {"type": "error", "error": {"type": "scripted_error", "message": "bad model"}}


def test_responses_streaming_with_the_openai_sdk_carries_function_calls_and_usage(server):
    stream = client(server).responses.create(model="gpt-x", instructions="sys", input="please use a tool", stream=True)
    events = list(stream)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [i.type for i in done] == ["message", "function_call"]
    assert done[0].content[0].text == "Editing now."
    assert done[1].name == "editor" and json.loads(done[1].arguments)["new_text"] == "x = 2" and done[1].call_id
    assert events[-1].response.usage.input_tokens > 0 and events[-1].response.usage.output_tokens > 0
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_responses_input_items_count_turns_and_instructions_are_the_system_message(server):
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "use a tool"}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Editing now."}]},
             {"type": "function_call", "call_id": "c1", "name": "editor", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
    answer = client(server).responses.create(model="m", input=items)
    assert answer.output[0].content[0].text == "Done."  # one assistant turn (its text and call) so far
    ruled = client(server).responses.create(model="m", instructions="ALWAYS-WRITE-CHANGELOG", input="hi there")
    assert ruled.output_text == "rules seen"
    normalised = server.model_requests("responses")[0]
    assert [m["role"] for m in normalised["messages"]] == ["user", "assistant", "tool"]


# --- faults: the server misbehaves as real model servers do ------------------------------------------------
API_PATHS = {"chat": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}
END_MARKERS = {"chat": b"[DONE]", "anthropic": b"message_stop", "responses": b"response.completed"}


def request_body(api, stream=True):
    if api == "responses":
        return {"model": "m", "input": "hi", "stream": stream}
    return {"model": "m", "max_tokens": 10, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}


def read_what_arrives(url, body, timeout=60):
    """(bytes received, the error that ended the read or None)."""
    data = b""
    try:
        with httpx.stream("POST", url, json=body, timeout=timeout) as response:
            for chunk in response.iter_raw():
                data += chunk
    except httpx.HTTPError as error:
        return data, error
    return data, None


@pytest.mark.parametrize("api", list(API_PATHS))
@pytest.mark.parametrize("fault", ["end_early", "reset", "no_end_marker"])
def test_a_stream_ends_early_after_n_events_without_its_end_marker(api, fault):
    with ScriptedModelServer(Script(default=Reply("word " * 100, fault=fault, fault_after=3))) as s:
        data, error = read_what_arrives(s.origin + API_PATHS[api], request_body(api))
        entry, = s.requests
    assert data.count(b"\n\n") == 3 and END_MARKERS[api] not in data
    assert entry["written"] == 3
    # A broken connection is an error to the client (no last chunk); a complete answer without the marker is not.
    assert (error is not None) == (fault != "no_end_marker")


@pytest.mark.parametrize("api", list(API_PATHS))
def test_a_malformed_event_comes_after_n_events_and_the_rest_follows(api):
    with ScriptedModelServer(Script(default=Reply("word " * 100, fault="malformed", fault_after=2))) as s:
        data, error = read_what_arrives(s.origin + API_PATHS[api], request_body(api))
    events = data.split(b"\n\n")
    assert error is None and events[2] == b"data: {this is not JSON" and END_MARKERS[api] in data


@pytest.mark.parametrize("api", list(API_PATHS))
def test_a_whole_answer_can_be_malformed_or_cut_halfway(api):
    with ScriptedModelServer(Script(default=Reply("word " * 100, fault="malformed"))) as s:
        malformed = httpx.post(s.origin + API_PATHS[api], json=request_body(api, stream=False))
    assert malformed.status_code == 200 and not malformed.text.startswith("{")
    with ScriptedModelServer(Script(default=Reply("word " * 100, fault="end_early"))) as s:
        with pytest.raises(httpx.RemoteProtocolError):  # fewer bytes than its Content-Length
            httpx.post(s.origin + API_PATHS[api], json=request_body(api, stream=False))


@pytest.mark.parametrize("fault, stream", [("hang", False), ("hang", True), ("stall", True), ("stall", False)])
def test_a_hang_or_stall_holds_until_the_client_goes_away_and_the_server_sees_it(fault, stream):
    with ScriptedModelServer(Script(default=Reply("word " * 100, fault=fault, fault_after=2))) as s:
        _, error = read_what_arrives(s.origin + API_PATHS["chat"], request_body("chat", stream), timeout=0.5)
        assert s.wait_gone(1)
        entry, = s.requests
    assert isinstance(error, httpx.TimeoutException)  # the client gave up: it was still waiting
    assert entry["gone"] and entry["written"] == (2 if fault == "stall" and stream else 0)
    assert s.gone == 1


def test_an_unknown_fault_is_refused():
    with pytest.raises(ValueError, match="end_early"):
        Reply(fault="explode")


def test_its_model_list_names_the_ids_it_answers_as_in_a_shape_both_sdks_read():
    import anthropic

    from helpers.core.config import SCRIPTED_MODEL

    with ScriptedModelServer(answers_as="smollm2-135m-instruct") as one_model, \
            ScriptedModelServer(models=["claude-judge", "claude-opt"]) as several, ScriptedModelServer() as plain:
        assert [m.id for m in client(one_model).models.list()] == ["smollm2-135m-instruct"]
        listed = anthropic.Anthropic(base_url=several.origin, api_key="test-key", max_retries=0).models.list()
        assert [m.id for m in listed] == ["claude-judge", "claude-opt"]
        assert [m.id for m in client(plain).models.list()] == [SCRIPTED_MODEL]


def test_a_server_without_a_model_list_answers_404_as_some_local_servers_do():
    import openai

    with ScriptedModelServer(lists_models=False) as server:
        with pytest.raises(openai.NotFoundError):
            client(server).models.list()
