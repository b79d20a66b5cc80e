"""The gateway carries a Gemini client's calls to an OpenAI chat-completions server (upstream kind
"gemini-to-openai"), driven by the official google-genai SDK as the Gemini CLI's own calls would be, in front of
the scripted model server's chat-completions side.

What this proves: the SDK's Gemini requests reach the server as chat completions (system, turns, function calls
and their answers by id, tools, the output cap), and the answers come back as the SDK reads them, whole and
streamed, with the key swap, the allow-list, retries, the budget, metering, traces and the clean end of a broken
stream as on every other upstream. What it cannot prove: how a given server renders these messages in its chat
template, or whether a small model writes valid tool calls; `make test-real` runs the Gemini CLI this way
against llama-server.
"""

import json
import time
from contextlib import contextmanager

import httpx
import pytest

from google import genai
from google.genai import errors, types

from helpers.llm.gateway import Gateway, Upstream, is_transient
from helpers.llm.gateway.gemini_request import chat_request, json_schema
from helpers.llm.pricing import call_cost_usd
from tests.helpers.llm.conftest import recorded_upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

KEY = "stub-upstream-chat-key-0123456789"
MODEL = "gemini-2.5-flash"  # priced, so the budget and the cost are checked; the server answers any id
LONG = "word " * 200
USAGE = {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 1000},
         "completion_tokens_details": {"reasoning_tokens": 30}}
EDIT = tool_call("editor", path="a.py", old_text="x = 1", new_text="x = 2")
CLIENTS = []  # a genai.Client closes its connection pool when collected, even while its `.models` is in use


def serve(*rules, default=None):
    return ScriptedModelServer(Script(list(rules), default=default or Reply("fine")))


def gateway_for(server, **options):
    options.setdefault("backoff_s", 0)
    return Gateway({"g": Upstream(server.base_url, KEY, "gemini-to-openai")}, **options)


def client(gateway, token):
    """The SDK as the Gemini CLI configures it: the gateway's URL for the upstream as its base URL."""
    CLIENTS.append(genai.Client(api_key=token, http_options=types.HttpOptions(base_url=gateway.url_for("g"),
                                                                                     api_version="v1beta")))
    return CLIENTS[-1].models


def tools(mode=None):
    editor = types.FunctionDeclaration(name="editor", description="Edit a file", parameters={
        "type": "OBJECT", "properties": {"path": {"type": "STRING"}, "lines": {"type": "ARRAY", "items": {
            "type": "INTEGER"}, "nullable": True}}, "required": ["path"]})
    choice = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode=mode)) if mode else None
    return types.GenerateContentConfig(system_instruction="You fix bugs.", tools=[types.Tool(function_declarations=[editor])],
                                       tool_config=choice, max_output_tokens=500, temperature=0.2)


def chat_bodies(server):
    return [r["body"] for r in server.requests if r["api"] == "chat"]


# --- answers, whole and streamed ----------------------------------------------------------------------------
def test_a_whole_answer_comes_back_as_geminis_with_text_a_function_call_and_its_usage_metered():
    with serve(default=Reply("Editing now.", tool_calls=[EDIT], usage=USAGE)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g", task="t1", role="agent")
        answer = client(gateway, token).generate_content(model=MODEL, contents="fix a.py", config=tools())
        record, = gateway.calls()
    assert [p.text for p in answer.candidates[0].content.parts if p.text] == ["Editing now."]
    assert [(c.name, c.args) for c in answer.function_calls] == [("editor", EDIT["arguments"])]
    assert answer.function_calls[0].id.startswith("call_")  # the server's id, so the answer can name its call
    assert answer.candidates[0].finish_reason == types.FinishReason.STOP
    usage = answer.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count, usage.thoughts_token_count,
            usage.cached_content_token_count) == (1200, 50, 30, 1000)
    assert (record["path"], record["status"], record["stream"]) == (f"/v1/v1beta/models/{MODEL}:generateContent", 200, False)
    assert (record["input_tokens"], record["cached_tokens"], record["output_tokens"]) == (1200, 1000, 80)
    assert record["cost_usd"] == pytest.approx(call_cost_usd(MODEL, 1200, 80, cached_tokens=1000)) and record["cost_usd"] > 0
    sent, = server.requests
    assert sent["path"] == "/v1/chat/completions" and sent["api"] == "chat"
    body = sent["body"]
    assert body["model"] == MODEL and body["messages"][:2] == [{"role": "system", "content": "You fix bugs."},
                                                               {"role": "user", "content": "fix a.py"}]
    assert (body["max_tokens"], body["temperature"], "stream" in body) == (500, 0.2, False)
    assert body["tools"] == [{"type": "function", "function": {"name": "editor", "description": "Edit a file", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "lines": {"type": ["array", "null"], "items": {
            "type": "integer"}}}, "required": ["path"]}}}]


def test_a_tool_call_round_trip_sends_the_call_and_its_answer_to_the_server_under_one_id():
    with serve(Rule(reply=[Reply("Editing.", tool_calls=[EDIT]), Reply("Done.")])) as server, \
            gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        models = client(gateway, token)
        first = models.generate_content(model=MODEL, contents="fix a.py", config=tools())
        call = first.function_calls[0]
        turns = [types.Content(role="user", parts=[types.Part(text="fix a.py")]), first.candidates[0].content,
                 types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                     id=call.id, name=call.name, response={"output": "edited a.py"}))])]
        second = models.generate_content(model=MODEL, contents=turns, config=tools())
        trajectory = gateway.conversation(token)  # read from the Gemini request, as for a Gemini upstream
    assert second.text == "Done."  # the server saw one assistant turn already: its second reply
    messages = chat_bodies(server)[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2]["content"] == "Editing." and messages[2]["tool_calls"] == [
        {"id": call.id, "type": "function", "function": {"name": "editor", "arguments": json.dumps(EDIT["arguments"])}}]
    assert messages[3] == {"role": "tool", "tool_call_id": call.id, "content": "edited a.py"}
    assert [m["role"] for m in trajectory] == ["system", "user", "assistant", "tool", "assistant"]


def test_function_answers_without_ids_answer_the_oldest_open_call_of_their_name_and_thoughts_are_left_out():
    gemini = {"contents": [
        {"role": "user", "parts": [{"text": "look"}]},
        {"role": "model", "parts": [{"text": "thinking...", "thought": True}, {"text": "Reading both."},
                                    {"functionCall": {"name": "read", "args": {"p": "a"}}},
                                    {"functionCall": {"name": "read", "args": {"p": "b"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"text": "A"}}},
                                   {"functionResponse": {"name": "read", "response": {"output": "B"}}},
                                   {"text": "and now?"}]}]}
    messages = chat_request(gemini, "m")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user"]
    first, second = (c["id"] for c in messages[1]["tool_calls"])
    assert messages[1]["content"] == "Reading both."
    assert [(m["tool_call_id"], m["content"]) for m in messages[2:4]] == [(first, '{"text": "A"}'), (second, "B")]
    assert messages[4] == {"role": "user", "content": "and now?"}


def test_a_streamed_answer_arrives_as_geminis_sse_chunks_with_the_function_call_whole_at_the_end():
    with serve(default=Reply(LONG, tool_calls=[EDIT], usage=USAGE)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g", task="t1")
        chunks = list(client(gateway, token).generate_content_stream(model=MODEL, contents="fix", config=tools()))
        record, = gateway.calls()
    assert len(chunks) > 3 and "".join(p.text for c in chunks for p in c.candidates[0].content.parts if p.text) == LONG
    last = chunks[-1]
    assert [(c.name, c.args) for c in last.function_calls] == [("editor", EDIT["arguments"])]
    assert not any(c.function_calls for c in chunks[:-1])  # a call arrives whole, never in pieces
    assert last.candidates[0].finish_reason == types.FinishReason.STOP and last.usage_metadata.prompt_token_count == 1200
    sent, = server.requests
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["stream"] is True
    assert sent["body"]["stream_options"] == {"include_usage": True}
    assert (record["stream"], record["status"], record["input_tokens"], record["cached_tokens"], record["output_tokens"]) \
        == (True, 200, 1200, 1000, 80)


# --- errors, retries, broken streams --------------------------------------------------------------------------
def test_an_upstream_error_reaches_the_sdk_with_its_status_in_googles_shape():
    with serve(default=Reply(status=400, error_message="context window exceeded")) as server, \
            gateway_for(server) as gateway:
        with pytest.raises(errors.ClientError) as refused:
            client(gateway, gateway.issue_token("g")).generate_content(model=MODEL, contents="hi")
    assert (refused.value.code, refused.value.status, refused.value.message) == (400, "INVALID_ARGUMENT",
                                                                                 "context window exceeded")


# A 429 retried, and one passed on as RESOURCE_EXHAUSTED: test_gateway_gemini's 429 tests, run on this kind too.


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault", ["end_early", "reset", "no_end_marker"])
def test_a_chat_stream_that_breaks_ends_the_gemini_stream_with_an_error_the_sdk_raises(fault):
    with serve(default=Reply(LONG, fault=fault, fault_after=3)) as server, gateway_for(server, max_retries=0) as gateway:
        got = []
        with pytest.raises(errors.ServerError, match="the model server ended the stream early after 3 chunks") as broke:
            for chunk in client(gateway, gateway.issue_token("g")).generate_content_stream(model=MODEL, contents="hi"):
                got.append(chunk)
        record, = gateway.calls()
    assert len(got) == 2  # the role chunk carries no text: two text chunks, then the error
    assert (broke.value.code, broke.value.status, record["status"]) == (502, "UNAVAILABLE", 502)


def test_a_whole_answer_that_is_not_a_chat_completion_is_retried_then_a_502():
    with serve(default=Reply("x", fault="wrong_api")) as server, gateway_for(server, max_retries=1) as gateway:
        with pytest.raises(errors.ServerError, match="without 'choices'") as failed:
            client(gateway, gateway.issue_token("g")).generate_content(model=MODEL, contents="hi")
    assert failed.value.code == 502 and len(server.requests) == 2


@contextmanager
def chat_stub(chunks, first_after_s=0.0):
    """The gateway in front of a chat server streaming `chunks` as given (the first after `first_after_s`), then
    [DONE]: for what the scripted one does not send."""
    events = [b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks] + [b"data: [DONE]\n\n"]
    with recorded_upstream(events, first_after_s) as url, \
            Gateway({"g": Upstream(f"{url}/v1", KEY, "gemini-to-openai")}, max_retries=0) as gateway:
        yield gateway


def delta(**fields):
    return {"id": "c1", "model": "local", "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def test_the_servers_error_event_mid_stream_reaches_the_sdk_and_the_record_with_its_status():
    with chat_stub([delta(content="Wor"), {"error": {"code": 503, "message": "loading model", "type": "unavailable_error"}}]) \
            as gateway:
        token = gateway.issue_token("g")
        with pytest.raises(errors.ServerError, match="loading model") as failed:
            list(client(gateway, token).generate_content_stream(model=MODEL, contents="hi"))
        record, = gateway.calls()
    assert failed.value.code == 503 and record["status"] == 503 and is_transient(record["status"])


def test_a_call_streamed_in_pieces_arrives_whole_and_one_with_arguments_that_are_not_json_ends_malformed():
    pieces = [delta(reasoning_content="Let me see. "), delta(content="Reading."),
              delta(tool_calls=[{"index": 0, "id": "call_9", "function": {"name": "read", "arguments": '{"pa'}}]),
              delta(tool_calls=[{"index": 0, "function": {"arguments": 'th": "a.py"}'}}]),
              delta(tool_calls=[{"index": 1, "id": "call_10", "function": {"name": "read", "arguments": "{oops"}}]),
              {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
              {"id": "c1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 7}}]
    with chat_stub(pieces) as gateway:
        chunks = list(client(gateway, gateway.issue_token("g")).generate_content_stream(model=MODEL, contents="hi"))
        record, = gateway.calls()
    thought, text = (c.candidates[0].content.parts[0] for c in chunks[:2])
    assert (thought.thought, thought.text, text.text) == (True, "Let me see. ", "Reading.")
    assert [(c.id, c.name, c.args) for c in chunks[-1].function_calls] == [("call_9", "read", {"path": "a.py"})]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL
    assert (record["input_tokens"], record["output_tokens"], record["status"]) == (9, 7, 200)


def test_the_answers_headers_come_before_the_servers_first_token_so_a_slow_prompt_does_not_time_the_cli_out():
    """The Gemini CLI gives up on an answer whose headers take 60 s; a local server may read a long prompt for
    longer. The stream's headers go at once, its chunks as they come."""
    with chat_stub([delta(content="late"), {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}],
                   first_after_s=3.0) as gateway:
        token = gateway.issue_token("g")
        started = time.monotonic()
        with httpx.stream("POST", f"{gateway.url_for('g')}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
                          json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
                          headers={"x-goog-api-key": token}, timeout=60) as answer:
            headers_after = time.monotonic() - started
            body = answer.read().decode()
        whole_after = time.monotonic() - started
    assert answer.status_code == 200 and headers_after < 2.5 <= 3.0 <= whole_after
    assert '"text": "late"' in body and '"finishReason": "STOP"' in body


# --- what is answered here, refused, and kept ----------------------------------------------------------------
def test_count_tokens_is_answered_by_the_gateway_and_the_model_list_comes_from_the_servers():
    with serve() as server, gateway_for(server) as gateway:
        models = client(gateway, gateway.issue_token("g"))
        short = models.count_tokens(model=MODEL, contents="hello").total_tokens
        longer = models.count_tokens(model=MODEL, contents="hello " * 50).total_tokens
        listed = [m.name for m in models.list()]
        records = gateway.calls()
    assert 0 < short < longer
    assert listed == [f"models/{server.model}"]
    assert server.requests == []  # the counts never reached the server (it records posts only)
    assert [r["cost_usd"] for r in records] == [0.0, 0.0, 0.0] and [r["status"] for r in records] == [200] * 3


def test_the_server_gets_the_real_key_as_bearer_and_never_the_clients_token():
    with serve() as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        client(gateway, token).generate_content(model=MODEL, contents="hi")
        by_query = httpx.post(f"{gateway.url_for('g')}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={token}",
                              json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, timeout=60)
        shown = repr(gateway) + json.dumps(gateway.calls())
    assert by_query.status_code == 200 and '"text": "fine"' in by_query.text
    assert [r["headers"].get("Authorization") for r in server.requests] == [f"Bearer {KEY}"] * 2
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2  # no key= and no alt= reach it
    assert token not in json.dumps([r["headers"] for r in server.requests]) and KEY not in shown + by_query.text
    assert not any(k.lower() == "x-goog-api-key" for r in server.requests for k in r["headers"])


def test_the_allow_list_holds_before_any_translation_and_the_output_is_capped_by_the_role():
    search = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"googleSearch": {}}]}
    with serve() as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g", role="judge")
        refused = httpx.post(f"{gateway.url_for('g')}/v1beta/models/{MODEL}:generateContent", json=search,
                             headers={"x-goog-api-key": token}, timeout=60)
        client(gateway, token).generate_content(model=MODEL, contents="hi",
                                                config=types.GenerateContentConfig(max_output_tokens=10**6))
        record = gateway.calls()[-1]
    from helpers.core import config

    assert refused.status_code == 403 and "googleSearch" in refused.json()["error"]["message"]
    assert chat_bodies(server)[0]["max_tokens"] == config.GATEWAY_OUTPUT_TOKENS["judge"] < 10**6
    assert any("capped" in change for change in record["changed"])


def test_the_budget_reserves_each_call_and_settles_it_at_the_metered_cost():
    with serve(default=Reply("ok", usage={"prompt_tokens": 1000, "completion_tokens": 100})) as server, \
            gateway_for(server, budget_usd=0.01) as gateway:
        models = client(gateway, gateway.issue_token("g"))
        models.generate_content(model=MODEL, contents="hi", config=types.GenerateContentConfig(max_output_tokens=100))
        with pytest.raises(errors.ClientError) as refused:  # a worst case over the whole budget: never forwarded
            models.generate_content(model=MODEL, contents="x" * 200_000,
                                    config=types.GenerateContentConfig(max_output_tokens=60_000))
    assert gateway.spent_usd == pytest.approx(call_cost_usd(MODEL, 1000, 100)) and gateway.spent_usd > 0
    assert refused.value.code == 413 and len(server.requests) == 1


def test_every_call_is_traced_with_the_gemini_request_and_answer_the_client_saw():
    traced = []
    with serve(default=Reply("traced answer")) as server, gateway_for(server, trace=traced.append) as gateway:
        client(gateway, gateway.issue_token("g")).generate_content(model=MODEL, contents="trace me")
        gateway.calls()
        gateway.stop()
    payload, = traced
    assert payload["output_text"] == "traced answer" and '"candidates"' in payload["response_body"]
    assert [m["content"] for m in payload["input_messages"]] == ["trace me"]


# --- the translation's own pieces ----------------------------------------------------------------------------
def test_googles_schema_becomes_json_schema_and_the_generation_config_and_tool_mode_map_to_chat_fields():
    assert json_schema({"type": "OBJECT", "propertyOrdering": ["a"], "properties": {"a": {"anyOf": [
        {"type": "STRING", "nullable": True}, {"type": "NUMBER"}]}}}) == {
        "type": "object", "properties": {"a": {"anyOf": [{"type": ["string", "null"]}, {"type": "number"}]}}}
    request = {"contents": "hi", "generation_config": {"stopSequences": ["END"], "topK": 64, "seed": 7,
                                                       "thinkingConfig": {"includeThoughts": True},
                                                       "responseMimeType": "application/json",
                                                       "responseJsonSchema": {"type": "object"}},
               "tools": [{"functionDeclarations": [{"name": "f", "parametersJsonSchema": {"type": "object"}}]}],
               "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["f"]}}}
    chat = chat_request(request, "m", stream=True)
    assert chat["messages"] == [{"role": "user", "content": "hi"}]
    assert (chat["stop"], chat["seed"], "top_k" in chat) == (["END"], 7, False)
    assert chat["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "f"}}
    assert chat_request({**request, "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}, "m")["tool_choice"] == "none"
    image = {"contents": [{"role": "user", "parts": [{"text": "see"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                                                      {"inline_data": {"mime_type": "audio/wav", "data": "AAAA"}}]}]}
    content = chat_request(image, "m")["messages"][0]["content"]
    assert content[1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert "audio/wav" in content[2]["text"] and "left out" in content[2]["text"]
