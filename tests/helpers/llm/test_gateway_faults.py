"""The gateway in front of a model server that misbehaves (issue #28): streams that end early or break,
events and bodies that are not JSON, hangs and stalls, clients that leave. Real SDK clients, the real
gateway, the real scripted server and its faults (helpers.llm.scripts.FAULTS).

What every fault must give: the client a clean end with an error it understands, in its own wire format,
saying what happened; the call's record a transient status; the log one line, and no traceback anywhere."""

import json
import logging

import anthropic
import httpx
import openai
import pytest

from helpers.llm.gateway import Gateway, Upstream, is_transient
from helpers.llm.gateway.relay import loads
from helpers.llm.retries import GATEWAY_RETRIES_HEADER
from tests.helpers.llm.conftest import recorded_upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer

LONG = "word " * 200  # many events, so that a fault after a few comes well before the end
ASK = [{"role": "user", "content": "fix it"}]
GATEWAY_LOG = "helpers.llm.gateway"
# The connection closes without HTTP's last chunk (as the ASGI app in issue #28), is reset, or completes
# without the stream's end marker.
FAULTS_MID_STREAM = ["end_early", "reset", "no_end_marker"]


@pytest.fixture(autouse=True)
def no_traceback_anywhere(caplog, capfd):
    """Whatever the fault, nothing prints a traceback: not aiohttp's loggers, not asyncio, not the gateway."""
    caplog.set_level(logging.INFO)
    yield
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert [r.getMessage() for r in caplog.records if r.name.startswith(("aiohttp", "asyncio"))] == []


def gateway_lines(caplog, level=logging.WARNING):
    return [r.getMessage() for r in caplog.records if r.name == GATEWAY_LOG and r.levelno >= level]


def serve(*rules, default=None):
    return ScriptedModelServer(Script(list(rules), default=default or Reply("fine")))


def gateway_for(server, **options):
    options.setdefault("max_retries", 0)
    return Gateway({"s": Upstream(server.origin, "upstream-key", "openai-compatible")}, backoff_s=0, **options)


def openai_client(gateway, token):
    return openai.OpenAI(base_url=gateway.url_for("s") + "/v1", api_key=token, max_retries=0)


# --- a stream that ends early or breaks -------------------------------------------------------------------
@pytest.mark.parametrize("fault", FAULTS_MID_STREAM)
def test_a_chat_stream_that_ends_early_reaches_the_openai_sdk_as_an_error_saying_so(fault, caplog):
    with serve(default=Reply(LONG, fault=fault, fault_after=3)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s", task="t1")
        chunks = []
        with pytest.raises(openai.APIError, match="the model server ended the stream early after 3 chunks") as failed:
            for chunk in openai_client(gateway, token).chat.completions.create(model="gpt-4.1", messages=ASK, stream=True):
                chunks.append(chunk)
        record, = gateway.calls()

    assert len(chunks) == 3  # what the model server sent is relayed, then the error
    assert not isinstance(failed.value, openai.APIConnectionError)  # an error event, not a cut connection
    assert is_transient(gateway.last_status(token)) and record["status"] == 502
    assert "ended the stream early after 3 chunks" in record["error"]
    line, = gateway_lines(caplog)
    assert "ended the stream early after 3 chunks" in line and "upstream-key" not in line


@pytest.mark.parametrize("fault", ["end_early", "reset"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_broken_connection_is_named_by_what_happened_not_by_the_http_librarys_class(fault, stream):
    with serve(default=Reply(LONG, fault=fault, fault_after=1)) as server, gateway_for(server) as gateway:
        with pytest.raises(openai.APIError):
            answer = openai_client(gateway, gateway.issue_token("s")).chat.completions.create(
                model="gpt-4.1", messages=ASK, stream=stream)
            list(answer) if stream else None
        record, = gateway.calls()

    where = "ended the stream early after 1 chunk:" if stream else "ended its answer early:"
    assert f"{where} the connection closed before the answer was complete" in record["error"]
    assert "Error" not in record["error"]  # no ClientPayloadError, TransferEncodingError, ...


@pytest.mark.parametrize("fault", FAULTS_MID_STREAM)
def test_an_anthropic_stream_that_ends_early_ends_with_an_api_error_event(fault, caplog):
    with serve(default=Reply(LONG, fault=fault, fault_after=3)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s")
        client = anthropic.Anthropic(base_url=gateway.url_for("s"), api_key=token, max_retries=0)
        events = []
        with pytest.raises(anthropic.APIStatusError, match="ended the stream early after 3 chunks") as failed:
            for event in client.messages.create(model="claude-scripted", max_tokens=100, messages=ASK, stream=True):
                events.append(event.type)

    assert events == ["message_start", "content_block_start", "content_block_delta"]
    assert failed.value.body["type"] == "error" and failed.value.body["error"]["type"] == "api_error"
    assert is_transient(gateway.last_status(token))
    assert len(gateway_lines(caplog)) == 1


@pytest.mark.parametrize("fault", FAULTS_MID_STREAM)
def test_a_responses_stream_that_ends_early_ends_with_response_failed(fault, caplog):
    with serve(default=Reply(LONG, fault=fault, fault_after=3)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s")
        client = openai_client(gateway, token)
        events = list(client.responses.create(model="gpt-5", input="fix it", stream=True))
        with client.responses.stream(model="gpt-5", input="fix it") as helper:  # the SDK's helper reads it too
            helped = [e.type for e in helper]

    kinds = [e.type for e in events]
    assert kinds == ["response.created", "response.output_item.added", "response.content_part.added", "response.failed"]
    failed = events[-1].response
    assert failed.status == "failed" and "ended the stream early after 3 chunks" in failed.error.message
    assert failed.id == events[0].response.id  # the same response, as the SDK's stream helper checks
    assert events[-1].sequence_number == events[-2].sequence_number + 1
    assert helped == kinds
    assert is_transient(gateway.last_status(token)) and len(gateway_lines(caplog)) == 2  # one per call


@pytest.mark.parametrize("api, path, body", [
    ("chat", "/v1/chat/completions", {"model": "gpt-4.1", "stream": True, "messages": ASK}),
    ("anthropic", "/v1/messages", {"model": "claude-scripted", "max_tokens": 9, "stream": True, "messages": ASK}),
    ("responses", "/v1/responses", {"model": "gpt-5", "stream": True, "input": "fix it"}),
])
def test_a_malformed_event_ends_the_stream_after_what_was_valid_with_an_error_event(api, path, body, caplog):
    with serve(default=Reply(LONG, fault="malformed", fault_after=2)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s")
        answer = httpx.post(gateway.url_for("s") + path, json=body, headers={"Authorization": f"Bearer {token}"})

    events = answer.text.strip().split("\n\n")
    assert answer.status_code == 200 and "data: {this is not JSON" not in answer.text  # never relayed
    assert len(events) == 2 + (2 if api == "chat" else 1)  # the two valid events, then the error (and [DONE])
    last = {"chat": events[-2], "anthropic": events[-1], "responses": events[-1]}[api]
    assert "not JSON after 2 chunks" in last
    assert {"chat": 'data: {"error"', "anthropic": "event: error", "responses": "event: response.failed"}[api] in last
    assert api != "chat" or events[-1] == "data: [DONE]"
    assert is_transient(gateway.last_status(token)) and len(gateway_lines(caplog)) == 1


# --- retried while nothing reached the client ---------------------------------------------------------------
@pytest.mark.parametrize("data", [b'{"a": 1}', b'{"n": NaN}', b'{"x": Infinity}', b'{"s": "\\ud800"}', b'[1, 2]',
                                  b' {"a": "\xc3\xa9"} ', b'{"a": 1, "a": 2}'])
def test_an_event_is_json_to_the_relay_exactly_when_it_is_json_to_pythons_own_parser(data):
    assert repr(loads(data)) == repr(json.loads(data))  # (repr: NaN is not NaN)
    assert loads(b'{"big": 123456789012345678901234567890}')["big"] == pytest.approx(1.2345678901234568e29)


@pytest.mark.parametrize("data", [b"{this is not JSON", b'{"a": 1', b"", b"\xff\xfe", b'{"a": 1} {"b": 2}', b"nan"])
def test_an_event_that_is_not_json_to_pythons_own_parser_is_not_json_to_the_relay(data):
    with pytest.raises(ValueError):
        json.loads(data)
    with pytest.raises(ValueError):
        loads(data)


def test_a_stream_that_ends_before_its_first_event_is_retried_and_the_client_sees_none_of_it(caplog):
    broken = Rule(reply=Reply(LONG, fault="end_early", fault_after=0), times=1)
    with serve(broken, default=Reply("The fix is in.")) as server, gateway_for(server, max_retries=2) as gateway:
        token = gateway.issue_token("s")
        chunks = list(openai_client(gateway, token).chat.completions.create(model="gpt-4.1", messages=ASK, stream=True))
        record, = gateway.calls()

    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "The fix is in."
    assert len(server.requests) == 2 and record["retries"] == 1 and gateway.last_status(token) == 200
    line, = gateway_lines(caplog)
    assert "after 0 chunks" in line


def test_when_every_try_ends_before_its_first_event_the_client_gets_a_502_json_error(caplog):
    with serve(default=Reply(LONG, fault="reset", fault_after=0)) as server, gateway_for(server, max_retries=1) as gateway:
        token = gateway.issue_token("s")
        with pytest.raises(openai.InternalServerError, match="ended the stream early after 0 chunks") as failed:
            list(openai_client(gateway, token).chat.completions.create(model="gpt-4.1", messages=ASK, stream=True))

    assert failed.value.status_code == 502 and failed.value.response.headers[GATEWAY_RETRIES_HEADER] == "1"
    assert len(server.requests) == 2 and is_transient(gateway.last_status(token))
    assert len(gateway_lines(caplog)) == 2  # one line per fault


# --- whole answers that are not JSON or are cut --------------------------------------------------------------
@pytest.mark.parametrize("fault, says", [("malformed", "not JSON"), ("end_early", "ended its answer early"),
                                         ("reset", "ended its answer early")])
def test_a_broken_whole_answer_is_a_502_json_error_naming_the_fault(fault, says, caplog):
    with serve(default=Reply(LONG, fault=fault)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s")
        with pytest.raises(openai.InternalServerError, match=says) as failed:
            openai_client(gateway, token).chat.completions.create(model="gpt-4.1", messages=ASK)
        record, = gateway.calls()

    assert failed.value.status_code == 502 and failed.value.body["type"] == "upstream_fault"
    assert record["status"] == 502 and says in record["error"] and is_transient(gateway.last_status(token))
    assert len(gateway_lines(caplog)) == 1


# --- bounded calls -------------------------------------------------------------------------------------------
def test_an_upstream_that_never_answers_is_a_504_once_the_idle_limit_passes(caplog):
    with serve(default=Reply(fault="hang")) as server, gateway_for(server, idle_timeout_s=1) as gateway:
        token = gateway.issue_token("s")
        with pytest.raises(openai.APIStatusError, match="sent nothing for 1 s") as failed:
            openai_client(gateway, token).chat.completions.create(model="gpt-4.1", messages=ASK)
        assert server.wait_gone(1)  # the gateway closed its connection: the model server can stop

    assert failed.value.status_code == 504 and gateway.last_status(token) == 504 and is_transient(504)
    assert len(gateway_lines(caplog)) == 1


@pytest.mark.parametrize("limits, error", [
    ({"idle_timeout_s": 2}, "sent nothing for 2 s"),  # a stream that stalls, past the idle limit
    ({"call_timeout_s": 1, "idle_timeout_s": 600}, "longer than the gateway's limit of 1 s"),  # chunks still coming
], ids=["idle limit", "wall-clock limit"])
def test_a_stream_past_the_idle_or_the_wall_clock_limit_ends_with_an_error_event_and_a_504(caplog, limits, error):
    with serve(default=Reply(LONG, fault="stall", fault_after=2)) as server, gateway_for(server, **limits) as gateway:
        token = gateway.issue_token("s")
        with pytest.raises(openai.APIError, match=error):
            list(openai_client(gateway, token).chat.completions.create(model="gpt-4.1", messages=ASK, stream=True))
        assert server.wait_gone(1)

    assert gateway.last_status(token) == 504 and len(gateway_lines(caplog)) == 1


# --- a client that leaves ------------------------------------------------------------------------------------
def test_a_client_that_leaves_mid_stream_has_the_upstream_call_cancelled_at_once(caplog):
    with serve(default=Reply(LONG, fault="stall", fault_after=2)) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s", task="t1")
        body = {"model": "gpt-4.1", "stream": True, "messages": ASK}
        with httpx.stream("POST", gateway.url_for("s") + "/v1/chat/completions", json=body,
                          headers={"Authorization": f"Bearer {token}"}, timeout=60) as answer:
            next(answer.iter_raw())  # the first chunk came; then the client goes away
        assert server.wait_gone(1)  # the model server saw its connection closed: it stops generating
        record, = gateway.calls()

    assert server.requests[0]["written"] == 2 and record["error"] == "client disconnected"
    assert not is_transient(gateway.last_status(token))  # the client left: not the provider's failure
    line, = gateway_lines(caplog, logging.INFO)
    assert "client" in line and "went away" in line


def test_a_client_that_times_out_before_the_answer_has_the_upstream_call_cancelled(caplog):
    with serve(default=Reply(fault="hang")) as server, gateway_for(server) as gateway:
        token = gateway.issue_token("s")
        client = openai.OpenAI(base_url=gateway.url_for("s") + "/v1", api_key=token, max_retries=0, timeout=0.5)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="gpt-4.1", messages=ASK)
        assert server.wait_gone(1)
        record, = gateway.calls()

    assert record["error"] == "client disconnected" and len(gateway_lines(caplog, logging.INFO)) == 1


# --- a model server's own error event mid-stream -------------------------------------------------------------
OVERLOADED_STREAM = (  # recorded from Anthropic's documented stream: a message that starts, then an error event
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    b'"content":[],"model":"claude-x","stop_reason":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
    b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n')


def test_a_model_servers_own_error_event_is_relayed_and_recorded_as_what_it_was(caplog):
    with recorded_upstream([OVERLOADED_STREAM]) as url, \
            Gateway({"s": Upstream(url, "upstream-key", "anthropic")}, backoff_s=0, max_retries=0) as gateway:
        token = gateway.issue_token("s")
        client = anthropic.Anthropic(base_url=gateway.url_for("s"), api_key=token, max_retries=0)
        with pytest.raises(anthropic.APIStatusError, match="Overloaded") as failed:
            list(client.messages.create(model="claude-x", max_tokens=10, messages=ASK, stream=True))
        record, = gateway.calls()
    assert failed.value.body["error"]["type"] == "overloaded_error"  # the client got the server's own error
    assert record["status"] == 529 and is_transient(gateway.last_status(token))  # ... and the record says so
    assert "overloaded_error" in record["error"] and len(gateway_lines(caplog)) == 1


def test_sdk_clients_with_their_own_retries_do_not_retry_what_the_gateway_already_retried(caplog):
    with serve(default=Reply(LONG, fault="reset", fault_after=0)) as server, gateway_for(server, max_retries=1) as gateway:
        token = gateway.issue_token("s")
        retrying = openai.OpenAI(base_url=gateway.url_for("s") + "/v1", api_key=token, max_retries=3)
        with pytest.raises(openai.InternalServerError) as failed:
            retrying.chat.completions.create(model="gpt-4.1", messages=ASK)
    assert failed.value.response.headers["x-should-retry"] == "false"
    assert len(server.requests) == 2  # the call and the gateway's one retry: the SDK's 3 retries never happened
