"""The gateway speaks Google's Gemini API (generativelanguage, v1beta), driven by the official google-genai SDK
as the Gemini CLI's own calls would be, in front of the scripted model server.

What this proves: the SDK's requests (its paths `/v1beta/models/<model>:generateContent`,
`:streamGenerateContent?alt=sse`, `:countTokens`, GET `/v1beta/models`, its `x-goog-api-key` header) pass the
gateway's policy, the key swap, the retries, the metering and the clean end of a broken stream, and the
answers and errors come back in shapes the SDK reads. What the stand-in cannot prove about Google's own
server: that its answers carry only what the scripted one sends (Google adds safetyRatings, thought
signatures, grounding metadata), that it streams the same way (usageMetadata on every chunk, text split
elsewhere, a chunk after the one with finishReason), that its quotas answer 429 with a Retry-After header
(Google often says how long to wait only in the error's details, which the gateway does not read), or
that its real key is accepted as `x-goog-api-key`: only a run against Google shows those.
"""

import http.client
import json
from contextlib import contextmanager

import httpx
import pytest

from google import genai  # the dev extra's official client: the tests speak as Google's SDK does
from google.genai import errors, types

from helpers.llm.gateway import Gateway, Upstream, is_transient
from helpers.llm.gateway.metering import Meter
from helpers.llm.pricing import call_cost_usd
from tests.helpers.llm.conftest import recorded_upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, tool_call

GEMINI_KEY = "stub-upstream-gemini-key-0123456789"  # not a real key's shape
MODEL = "gemini-2.5-flash"
LONG = "word " * 200  # many stream chunks, so that a fault after a few comes well before the end
USAGE = {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 1000},
         "completion_tokens_details": {"reasoning_tokens": 30}}  # Gemini: 50 candidates + 30 thoughts tokens
EDIT = tool_call("editor", path="a.py", old_text="x = 1", new_text="x = 2")


def gateway_for(server, kind="gemini", **options):
    """The gateway in front of the scripted server as Google's API ("gemini"), or as a chat-completions server the
    gateway translates Gemini's calls for ("gemini-to-openai": test_gateway_gemini_to_openai)."""
    options.setdefault("backoff_s", 0)
    return Gateway({"g": Upstream(server.origin if kind == "gemini" else server.base_url, GEMINI_KEY, kind)}, **options)


KINDS = ["gemini", "gemini-to-openai"]  # what a Gemini client is told about its quota reads the same on both


CLIENTS = []  # a genai.Client closes its HTTP connection pool when it is garbage collected, even while its
# `.models` is still in use: each client made here is kept until the session ends


def client(gateway, token, version="v1beta"):
    """The SDK as the Gemini CLI configures it: the gateway's URL as its base URL, the run token as its key."""
    CLIENTS.append(genai.Client(api_key=token, http_options=types.HttpOptions(base_url=gateway.url_for("g"),
                                                                       api_version=version)))
    return CLIENTS[-1]


def serve(*rules, default=None):
    return ScriptedModelServer(Script(list(rules), default=default or Reply("fine")))


def tools():
    editor = types.FunctionDeclaration(name="editor", description="Edit a file", parameters={
        "type": "OBJECT", "properties": {"path": {"type": "STRING"}}})
    return types.GenerateContentConfig(system_instruction="You fix bugs.", tools=[types.Tool(function_declarations=[editor])])


# --- answers, whole and streamed, metered ---------------------------------------------------------------
def test_a_whole_answer_arrives_with_text_and_function_calls_and_its_usage_is_metered():
    with serve(default=Reply("Editing now.", tool_calls=[EDIT], usage=USAGE)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g", task="t1", role="agent")
        answer = client(gateway, token).models.generate_content(model=MODEL, contents="fix a.py", config=tools())
        record, = gateway.calls()
        total = gateway.usage(task="t1")

    parts = answer.candidates[0].content.parts
    assert [p.text for p in parts if p.text] == ["Editing now."]
    assert [(c.name, c.args) for c in answer.function_calls] == [("editor", EDIT["arguments"])]
    assert answer.usage_metadata.cached_content_token_count == 1000 and answer.usage_metadata.thoughts_token_count == 30
    assert (record["model"], record["stream"], record["status"]) == (MODEL, False, 200)
    assert (record["input_tokens"], record["cached_tokens"], record["output_tokens"]) == (1200, 1000, 80)
    assert record["cost_usd"] == pytest.approx(call_cost_usd(MODEL, 1200, 80, cached_tokens=1000)) and record["cost_usd"] > 0
    assert total == {"calls": 1, "input_tokens": 1200, "cached_tokens": 1000, "output_tokens": 80,
                     "cost_usd": record["cost_usd"]}
    assert record["path"] == f"/v1beta/models/{MODEL}:generateContent"
    sent = server.model_requests("gemini")[0]  # the SDK's request, as the scripted server's rules read it
    assert sent["messages"][0] == {"role": "system", "content": "You fix bugs."}


def test_a_streamed_answer_arrives_chunk_by_chunk_with_text_and_function_calls_and_is_metered():
    with serve(default=Reply(LONG, tool_calls=[EDIT], usage=USAGE)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g", task="t1")
        chunks = list(client(gateway, token).models.generate_content_stream(model=MODEL, contents="fix", config=tools()))
        record, = gateway.calls()

    assert len(chunks) > 3 and "".join(c.text or "" for c in chunks if c.candidates[0].content.parts[0].text) == LONG
    assert [c.name for chunk in chunks for c in chunk.function_calls or []] == ["editor"]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert server.requests[0]["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    assert (record["stream"], record["status"], record["input_tokens"], record["cached_tokens"],
            record["output_tokens"]) == (True, 200, 1200, 1000, 80)
    assert record["cost_usd"] == pytest.approx(call_cost_usd(MODEL, 1200, 80, cached_tokens=1000))


def test_count_tokens_and_the_model_list_pass_and_the_sdks_default_api_version_v1_too():
    with serve() as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        counted = client(gateway, token).models.count_tokens(model=MODEL, contents="hello there")
        listed = [m.name for m in client(gateway, token).models.list()]
        v1 = client(gateway, token, version=None).models.generate_content(model=MODEL, contents="hi")
        records = gateway.calls()
    assert counted.total_tokens > 0 and listed == [f"models/{server.model}"] and v1.text == "fine"
    assert [r["path"].partition("?")[0] for r in records][-1] == f"/v1/models/{MODEL}:generateContent"
    assert [r["cost_usd"] for r in records][:2] == [0.0, 0.0]  # token counts and the model list are free
    assert gateway.usage()["cost_usd"] is not None  # so they leave the run priced


def test_the_trajectory_of_a_gemini_conversation_is_kept_with_its_calls_and_answers():
    turns = [types.Content(role="user", parts=[types.Part(text="fix a.py")]),
             types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name="editor", args={"path": "a.py"}))]),
             types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                 name="editor", response={"result": "edited"}))])]
    with serve(Rule(reply=[Reply("Editing.", tool_calls=[EDIT]), Reply("Done.")])) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        answer = client(gateway, token).models.generate_content(model=MODEL, contents=turns, config=tools())
        trajectory = gateway.conversation(token)
    assert answer.text == "Done."  # the rule's reply indexed by the model turns already in `contents`
    assert [m["role"] for m in trajectory] == ["system", "user", "assistant", "tool", "assistant"]
    assert trajectory[2]["tool_calls"] == [{"name": "editor", "arguments": '{"path": "a.py"}'}]
    assert "edited" in trajectory[3]["content"]


# --- rate limits and broken streams ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_a_429_with_retry_after_is_retried_once_by_the_gateway_and_the_client_gets_the_answer(kind):
    script_429 = Rule(reply=Reply(status=429, retry_after=0.2, error_message="Resource has been exhausted"), times=1)
    with serve(script_429, default=Reply("after the wait")) as server, \
            gateway_for(server, kind, max_retries=2) as gateway:
        token = gateway.issue_token("g")
        answer = client(gateway, token).models.generate_content(model=MODEL, contents="hi")
        record, = gateway.calls()
    assert answer.text == "after the wait"
    assert record["retries"] == 1 and record["waited_s"] >= 0.2 and record["status"] == 200
    assert len(server.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_the_gateway_passes_on_reaches_the_sdk_as_googles_error_shape(kind):
    with serve(default=Reply(status=429, retry_after=3600, error_message="quota")) as server, \
            gateway_for(server, kind) as gateway:
        token = gateway.issue_token("g")
        with pytest.raises(errors.ClientError) as refused:
            client(gateway, token).models.generate_content(model=MODEL, contents="hi")
    assert (refused.value.code, refused.value.status, refused.value.message) == (429, "RESOURCE_EXHAUSTED", "quota")
    assert is_transient(gateway.last_status(token)) and len(server.requests) == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault", ["end_early", "reset", "no_end_marker"])
def test_a_stream_that_breaks_ends_cleanly_with_an_error_the_sdk_raises(fault):
    with serve(default=Reply(LONG, fault=fault, fault_after=3)) as server, gateway_for(server, max_retries=0) as gateway:
        token = gateway.issue_token("g")
        chunks = []
        with pytest.raises(errors.ServerError, match="the model server ended the stream early after 3 chunks") as broke:
            for chunk in client(gateway, token).models.generate_content_stream(model=MODEL, contents="hi"):
                chunks.append(chunk)
        record, = gateway.calls()
    assert len(chunks) == 3  # what the model server sent is relayed, then the error
    assert (broke.value.code, broke.value.status) == (502, "UNAVAILABLE")
    assert record["status"] == 502 and is_transient(record["status"])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("fault, says", [("malformed", "an event that is not JSON after 3 chunks"),
                                         ("stall", "the model server sent nothing for 1 s after 3 chunks")])
def test_a_stream_that_turns_malformed_or_stalls_ends_with_an_error_saying_so(fault, says):
    with serve(default=Reply(LONG, fault=fault, fault_after=3)) as server, \
            gateway_for(server, max_retries=0, idle_timeout_s=1) as gateway:
        with pytest.raises(errors.APIError, match=says):
            list(client(gateway, gateway.issue_token("g")).models.generate_content_stream(model=MODEL, contents="hi"))
        record, = gateway.calls()
    assert is_transient(record["status"]) and says in record["error"]


def test_a_whole_answer_that_is_not_json_is_retried_then_a_502_in_googles_shape():
    with serve(default=Reply("x", fault="malformed")) as server, gateway_for(server, max_retries=1) as gateway:
        with pytest.raises(errors.ServerError) as failed:
            client(gateway, gateway.issue_token("g")).models.generate_content(model=MODEL, contents="hi")
    assert (failed.value.code, failed.value.status) == (502, "UNAVAILABLE") and "not JSON" in failed.value.message
    assert len(server.requests) == 2  # the first answer and one retry


def test_the_meter_reads_geminis_usage_metadata_with_thinking_counted_as_output_and_the_model_version():
    body = (b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}],'
            b' "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1, "thoughtsTokenCount": 2},'
            b' "modelVersion": "gemini-2.5-pro"}\r\n\r\n')
    meter = Meter()
    meter.feed_sse(body)
    assert (meter.model, meter.input_tokens, meter.cached_tokens, meter.output_tokens, meter.text()) == (
        "gemini-2.5-pro", 7, None, 3, "ok")


# --- what the gateway refuses, and the keys -------------------------------------------------------------
@pytest.mark.parametrize("method, path, why", [
    ("GET", "/v1beta/files", "not a model endpoint"),
    ("POST", "/v1beta/models/x:embedContent", "not a model endpoint"),
    ("POST", "/v1beta/tunedModels/x:generateContent", "not a model endpoint"),
    ("POST", "/v1beta/cachedContents", "not a model endpoint"),
    ("POST", f"/v1beta/../v1beta/models/{MODEL}:generateContent", "segments"),
    ("POST", f"/v1beta/models/..%2f{MODEL}:generateContent", "encoded"),
])
def test_foreign_and_tricky_paths_are_refused_with_a_403_in_googles_error_shape(method, path, why):
    with serve() as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        connection = http.client.HTTPConnection(gateway.url.removeprefix("http://"), timeout=60)
        connection.request(method, "/u/g" + path, body=b"{}",  # sent as written
                           headers={"x-goog-api-key": token, "Content-Type": "application/json"})
        answer = connection.getresponse()
        status, error = answer.status, json.loads(answer.read())["error"]
        connection.close()
    assert status == 403 and why in error["message"], error
    assert (error["code"], error["status"]) == (403, "PERMISSION_DENIED")
    assert server.requests == []  # nothing reached the upstream


def test_the_sdk_sees_a_refused_endpoint_as_a_403():
    with serve() as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        with pytest.raises(errors.ClientError) as refused:
            client(gateway, token).models.embed_content(model="text-embedding-004", contents="hi")
    assert refused.value.code == 403 and "not a model endpoint" in refused.value.message
    assert server.requests == []


def test_models_outside_the_configured_ones_and_unpriced_models_under_a_budget_are_refused_by_their_path():
    with serve() as server, gateway_for(server, models={"g": [MODEL]}, budget_usd=5) as gateway:
        token = gateway.issue_token("g")
        assert client(gateway, token).models.generate_content(model=MODEL, contents="hi").text == "fine"
        with pytest.raises(errors.ClientError, match="'gemini-2.5-pro' is not one this run may call"):
            client(gateway, token).models.generate_content(model="gemini-2.5-pro", contents="hi")
    with serve() as server, gateway_for(server, budget_usd=5) as gateway:
        with pytest.raises(errors.ClientError, match="PRICE_OVERRIDES"):
            client(gateway, gateway.issue_token("g")).models.generate_content(model="my-local-gemma", contents="hi")
    assert len(server.requests) == 0


def test_the_upstream_gets_the_real_key_and_never_the_clients_token_in_a_header_or_the_url():
    with serve() as server, gateway_for(server) as gateway:
        token = gateway.issue_token("g")
        by_sdk = client(gateway, token).models.generate_content(model=MODEL, contents="hi")
        by_query = httpx.post(f"{gateway.url_for('g')}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={token}",
                              json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, timeout=60)
        wrong = httpx.post(f"{gateway.url_for('g')}/v1beta/models/{MODEL}:generateContent?key=gw-guessed", json={})
        shown = repr(gateway) + json.dumps(gateway.calls())

    assert by_sdk.text == "fine" and by_query.status_code == 200 and "fine" in by_query.text
    assert [r["headers"].get("x-goog-api-key") for r in server.requests] == [GEMINI_KEY, GEMINI_KEY]
    assert [r["path"] for r in server.requests] == [f"/v1beta/models/{MODEL}:generateContent",
                                                    f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"]
    assert token not in json.dumps([r["headers"] for r in server.requests])
    assert not any(k.lower() == "authorization" for r in server.requests for k in r["headers"])
    assert wrong.status_code == 401 and wrong.json()["error"]["status"] == "UNAUTHENTICATED"
    assert GEMINI_KEY not in by_query.text + str(by_query.headers) + shown and token not in shown


@contextmanager
def google_stub(chunks):
    """The gateway in front of an upstream that streams `chunks` as given and closes (the close ends the answer), for
    what the scripted server does not send: chunks after the finishing one, an error chunk mid-stream."""
    with recorded_upstream([b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks]) as url, \
            Gateway({"g": Upstream(url, GEMINI_KEY, "gemini")}, max_retries=0) as gateway:
        yield gateway


def text_chunk(text, **candidate):
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, **candidate}], "modelVersion": MODEL}


def test_a_stream_is_complete_once_a_chunk_carried_a_finish_reason_even_with_chunks_after_it():
    """Google may send a chunk after the one with finishReason (usage only) and then close: that is a whole
    answer, relayed in full, not a stream that ended early."""
    usage = {"usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 2, "totalTokenCount": 42}}
    with google_stub([text_chunk("Done"), text_chunk(".", finishReason="STOP"), usage]) as gateway:
        got = list(client(gateway, gateway.issue_token("g")).models.generate_content_stream(model=MODEL, contents="hi"))
        record, = gateway.calls()
    assert "".join(c.text or "" for c in got if c.candidates) == "Done." and len(got) == 3
    assert (record["status"], record["error"], record["input_tokens"], record["output_tokens"]) == (200, None, 40, 2)


def test_the_model_servers_own_error_chunk_is_relayed_and_recorded_with_its_status():
    quota = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}
    with google_stub([text_chunk("Wor"), quota]) as gateway:
        token = gateway.issue_token("g")
        with pytest.raises(errors.ClientError, match="Resource has been exhausted") as failed:
            list(client(gateway, token).models.generate_content_stream(model=MODEL, contents="hi"))
        record, = gateway.calls()
    assert failed.value.code == 429
    assert record["status"] == 429 and is_transient(gateway.last_status(token))
    assert "RESOURCE_EXHAUSTED" in record["error"]


def test_gemini_endpoints_are_allowed_only_under_the_upstreams_own_base_path():
    from helpers.llm.gateway.policy import refusal

    call = f"/v1beta/models/{MODEL}:generateContent"
    assert refusal("POST", "/proxy" + call, "https://example.test/proxy", {}, None, None) is None
    assert "not a model endpoint" in refusal("POST", call, "https://example.test/proxy", {}, None, None)
    assert refusal("GET", "/v1beta/models", "https://generativelanguage.googleapis.com", {}, None, None) is None


def test_googles_openai_compatible_endpoint_is_read_as_chat_completions_though_its_path_says_v1beta():
    from helpers.llm.gateway.policy import api_of

    assert api_of("/v1beta/openai/chat/completions") == "chat"  # a Gemini judge, through the OpenAI SDK
    assert api_of("/v1beta/openai/models") == "chat"
    assert api_of(f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse") == "gemini"
    assert api_of("/v1beta/models") == "gemini" and api_of("/v1/models", {"x-goog-api-key": "k"}) == "gemini"
