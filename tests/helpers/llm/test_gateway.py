"""The model gateway against real upstreams: the project's scripted model server, and a tiny independent
upstream written here (stdlib's http.server; its JSON answers written as the scripted server writes its own) that
checks the real key arrives, echoes headers, streams with delays and answers Anthropic messages and Responses API
streams. Clients: the OpenAI and Anthropic SDKs and httpx."""

import json
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anthropic
import httpx
import openai
import pytest

from helpers.core import config
from helpers.llm.client import LLMClient, LLMError
from helpers.llm.gateway import BUDGET_HEADER, Gateway, Upstream, is_transient, phoenix_tracer
from helpers.llm.retries import GATEWAY_RETRIES_HEADER
from helpers.tracking.phoenix_server import free_port
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, send_json

OPENAI_KEY = "stub-upstream-openai-key-0123456789"  # not a real key's shape
ANTHROPIC_KEY = "stub-upstream-anthropic-key-9876543210"
CHUNK_DELAY_S = 0.15  # between the stub's stream events


# --- the independent upstream ----------------------------------------------------------------------
def sse(events):
    return [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events]


def anthropic_events():
    return [("message_start", {"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                "stop_reason": None, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "Editing the file."}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
                "type": "tool_use", "id": "toolu_1", "name": "editor", "input": {}}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                     "delta": {"type": "input_json_delta", "partial_json": '{"path": "a.py"}'}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 1}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                               "usage": {"output_tokens": 17}}),
            ("message_stop", {"type": "message_stop"})]


def responses_events():
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command",
            "arguments": '{"cmd": "pytest -q"}', "status": "completed"}
    base = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5", "output": [],
            "status": "in_progress", "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    done = {**base, "status": "completed", "output": [call],
            "usage": {"input_tokens": 40, "output_tokens": 9, "total_tokens": 49,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    return [{"type": "response.created", "sequence_number": 0, "response": base},
            {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
             "item": {**call, "status": "in_progress", "arguments": ""}},
            {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": call},
            {"type": "response.completed", "sequence_number": 3, "response": done}]


def chat_stream_events(n=5):
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1"}
    events = [{**base, "choices": [{"index": 0, "delta": {"content": f"part{i} "}, "finish_reason": None}]}
              for i in range(n)]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    events.append({**base, "choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}})
    return events


class Stub:
    """The independent upstream. With `storm_s` set, every chat call within that many seconds of the first
    one gets 429 with Retry-After `storm_retry_after` (a quota window)."""

    def __init__(self):
        self.seen = []  # (path, headers) of every request
        self.in_flight = self.max_in_flight = self.rate_limited = 0
        self.storm_s, self.storm_started = 0.0, None
        self.storm_retry_after = "0.4"
        self.first_chunk_read = None  # a threading.Event: when set up, the stream holds after its first chunk until it is set
        self.arrivals, self.refusals = [], []  # monotonic times: chat requests in, 429s out
        self.connections = 0  # TCP connections accepted
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):  # one handler per connection
                super().setup()
                with stub.lock:
                    stub.connections += 1

            def do_GET(self):
                self.handle_any()

            def do_POST(self):
                self.handle_any()

            def handle_any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with stub.lock:
                    stub.seen.append((self.path, dict(self.headers)))
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    self.route(json.loads(body) if body else {})
                finally:
                    with stub.lock:
                        stub.in_flight -= 1

            def route(self, request):
                anthropic_path = self.path.startswith("/v1/messages")
                if anthropic_path:
                    ok = self.headers.get("x-api-key") == ANTHROPIC_KEY and "Authorization" not in self.headers
                else:
                    ok = self.headers.get("Authorization") == f"Bearer {OPENAI_KEY}" and "x-api-key" not in self.headers
                if not ok:
                    return self.json(401, {"error": {"message": "bad key", "type": "auth"}})
                if self.path == "/v1/models":  # echoes every header, the key included
                    return self.json(200, {"headers": dict(self.headers)}, {"X-Upstream": "stub"})
                if anthropic_path:
                    return self.stream([f"event: {name}\ndata: {json.dumps(e)}\n\n".encode()
                                        for name, e in anthropic_events()])
                if self.path == "/v1/responses":
                    return self.stream([f"event: {e['type']}\n".encode() + c
                                        for e, c in zip(responses_events(), sse(responses_events()))])
                with stub.lock:
                    now = time.monotonic()
                    stub.arrivals.append(now)
                    stub.storm_started = stub.storm_started or now
                    storming = now < stub.storm_started + stub.storm_s
                    stub.rate_limited += storming
                time.sleep(0.05)  # long enough for requests to overlap
                if storming:
                    with stub.lock:
                        stub.refusals.append(time.monotonic())
                    return self.json(429, {"error": {"message": "slow down", "type": "rate_limit"}},
                                     {"Retry-After": stub.storm_retry_after})
                if request.get("stream"):
                    return self.stream(sse(chat_stream_events()) + [b"data: [DONE]\n\n"], CHUNK_DELAY_S)
                return self.json(200, {"id": "c1", "object": "chat.completion", "model": request.get("model"),
                                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                                    "finish_reason": "stop"}],
                                       "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})

            json = send_json

            def stream(self, chunks, delay_s=0.0):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for i, chunk in enumerate(chunks):
                    if i == 1 and stub.first_chunk_read is not None:
                        stub.first_chunk_read.wait(timeout=60)  # a buffering proxy never lets it be set
                    if i and delay_s:
                        time.sleep(delay_s)
                    self.wfile.write(chunk)
                    self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown() waits for the next poll: 0.05 s, not the default 0.5 s, per server stopped
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.close()


def stub_upstreams(stub):
    return {"stub": Upstream(stub.url + "/v1", OPENAI_KEY, "openai-compatible"),
            "ant": Upstream(stub.url, ANTHROPIC_KEY, "anthropic")}


# --- keys ------------------------------------------------------------------------------------------
def test_the_upstream_gets_the_real_key_and_the_client_never_sees_it(stub):
    with Gateway(stub_upstreams(stub)) as gateway:
        token = gateway.issue_token("stub", task="t1", role="agent")
        answer = httpx.get(gateway.url_for("stub") + "/models", headers={"Authorization": f"Bearer {token}"})
        wrong = httpx.get(gateway.url_for("stub") + "/models", headers={"Authorization": "Bearer gw-guessed"})
        other = httpx.get(gateway.url_for("ant") + "/v1/models", headers={"x-api-key": token})  # another upstream's
        gateway.revoke_token(token)
        revoked = httpx.get(gateway.url_for("stub") + "/models", headers={"Authorization": f"Bearer {token}"})
        shown = repr(gateway) + repr(gateway.upstreams) + json.dumps(gateway.calls())

    assert answer.status_code == 200 and answer.headers["X-Upstream"] == "stub"
    assert stub.seen[0][1]["Authorization"] == f"Bearer {OPENAI_KEY}"  # the upstream got the key ...
    assert token not in json.dumps(stub.seen)  # ... and never the client's token
    assert OPENAI_KEY not in answer.text and OPENAI_KEY not in str(answer.headers)  # the echo is scrubbed
    assert answer.json()["headers"]["Authorization"] == "Bearer [key]"
    assert (wrong.status_code, other.status_code, revoked.status_code) == (401, 401, 401)
    assert "token" in wrong.json()["error"]["message"]
    assert len(stub.seen) == 1  # refused calls never reach the upstream
    assert OPENAI_KEY not in shown and ANTHROPIC_KEY not in shown and token not in shown


@pytest.mark.parametrize("method, path, why", [
    ("DELETE", "/v1/files/file-1", "not a model endpoint"),
    ("POST", "/v1/fine_tuning/jobs", "not a model endpoint"),
    ("GET", "/v1/chat/completions", "not a model endpoint"),
    ("POST", "/v1/../v1/chat/completions", "segments"),
    ("POST", "/v1/%2e%2e/admin", "encoded"),
    ("POST", "/v1%2Fchat/completions", "encoded"),
    ("POST", "//v1/chat/completions", "segments"),
])
def test_only_model_endpoints_are_forwarded_and_tricky_paths_are_refused(stub, method, path, why):
    import http.client

    with Gateway(stub_upstreams(stub)) as gateway:
        token = gateway.issue_token("stub")
        connection = http.client.HTTPConnection(gateway.url.removeprefix("http://"), timeout=60)
        connection.request(method, "/u/stub" + path, body=json.dumps({"model": "gpt-4.1"}),  # sent as written
                           headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        answer = connection.getresponse()
        status, message = answer.status, json.loads(answer.read())["error"]["message"]
        connection.close()
    assert status == 403 and why in message, message
    assert stub.seen == []  # nothing reached the upstream


def test_a_raw_path_cannot_reach_another_upstream_or_host(stub):
    with Gateway(stub_upstreams(stub)) as gateway:
        token = gateway.issue_token("stub")
        sliced = httpx.post(gateway.url + "/u/stu%62/v1/chat/completions", headers={"Authorization": f"Bearer {token}"},
                            json={"model": "gpt-4.1", "messages": []})
    assert sliced.status_code in (401, 403, 404) and stub.seen == []


def test_models_outside_the_configured_ones_and_unpriced_models_under_a_budget_are_refused(stub):
    with Gateway(stub_upstreams(stub), models={"stub": ["gpt-4.1"]}, budget_usd=5) as gateway:
        token = gateway.issue_token("stub")
        send = lambda model: httpx.post(gateway.url_for("stub") + "/chat/completions",  # noqa: E731
                                        headers={"Authorization": f"Bearer {token}"}, json={"model": model, "messages": []})
        other = send("o1-pro")
    assert other.status_code == 403 and "'o1-pro' is not one this run may call" in other.json()["error"]["message"]
    with Gateway(stub_upstreams(stub), budget_usd=5) as gateway:
        token = gateway.issue_token("stub")
        unpriced = httpx.post(gateway.url_for("stub") + "/chat/completions", headers={"Authorization": f"Bearer {token}"},
                              json={"model": "my-local-llama", "messages": []})
    assert unpriced.status_code == 403 and "PRICE_OVERRIDES" in unpriced.json()["error"]["message"]
    assert stub.seen == []


def test_a_stream_that_did_not_ask_for_usage_is_asked_for_it_so_the_budget_sees_it():
    script = Script(default=Reply("ok", usage={"prompt_tokens": 10, "completion_tokens": 2}))
    with ScriptedModelServer(script) as server, \
            Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}, budget_usd=5) as gateway:
        client = openai.OpenAI(base_url=gateway.url_for("s"), api_key=gateway.issue_token("s"), max_retries=0)
        list(client.chat.completions.create(model="gpt-4.1", stream=True, messages=[{"role": "user", "content": "x"}]))
        record, = gateway.calls()
    assert server.requests[-1]["body"]["stream_options"] == {"include_usage": True}
    assert (record["input_tokens"], record["output_tokens"]) == (10, 2) and record["cost_usd"] > 0


def test_token_attributes_may_not_shadow_record_fields(stub):
    gateway = Gateway(stub_upstreams(stub))
    with pytest.raises(ValueError, match="status"):
        gateway.issue_token("stub", status="ok")
    with pytest.raises(KeyError, match="no-such"):
        gateway.issue_token("no-such")


# --- streaming -------------------------------------------------------------------------------------
def read_stream(url, headers, body, first_chunk_read=None):
    """(all bytes, number of chunks); `first_chunk_read` is set once the first chunk has arrived."""
    data, chunks = b"", 0
    with httpx.stream("POST", url, headers=headers, json=body, timeout=90) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            data, chunks = data + chunk, chunks + 1
            if first_chunk_read is not None and not first_chunk_read.is_set():
                first_chunk_read.set()
                seen_before_the_rest = not stub_done(data)
                first_chunk_read.seen_before_the_rest = seen_before_the_rest
    return data, chunks


def stub_done(data):
    return b"[DONE]" in data


def test_a_stream_passes_byte_for_byte_and_chunk_by_chunk(stub):
    body = {"model": "gpt-4.1", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    direct, _ = read_stream(stub.url + "/v1/chat/completions", {"Authorization": f"Bearer {OPENAI_KEY}"}, body)
    stub.first_chunk_read = first_chunk_read = threading.Event()  # the stub sends the rest only after this
    with Gateway(stub_upstreams(stub)) as gateway:
        token = gateway.issue_token("stub", task="t1")
        through, chunks = read_stream(gateway.url_for("stub") + "/chat/completions",
                                      {"Authorization": f"Bearer {token}"}, body, first_chunk_read)
        record, = gateway.calls(task="t1")

    assert through == direct
    # The stub held the rest of its stream until the client had read the first chunk: a buffering proxy
    # would have delivered it only with the end of the stream.
    assert first_chunk_read.seen_before_the_rest and chunks >= 2
    assert (record["stream"], record["input_tokens"], record["output_tokens"]) == (True, 11, 5)


def test_calls_one_after_another_reuse_one_upstream_connection_and_one_client_connection(stub):
    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    with Gateway(stub_upstreams(stub)) as gateway:
        token = gateway.issue_token("stub", task="t1")
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}) as client:  # HTTP/1.1 keep-alive
            answers = [client.post(gateway.url_for("stub") + "/chat/completions", json=body) for _ in range(5)]
            client_ports = {answer.extensions["network_stream"].get_extra_info("client_addr") for answer in answers}

    assert [answer.status_code for answer in answers] == [200] * 5
    assert stub.connections == 1  # keep-alive upstream: no new TCP connection per call
    assert len(client_ports) == 1  # and the client's own connection is kept between its calls


def test_stage_times_count_every_call_and_time_each_stage_of_its_path(stub):
    body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
    traced = []
    with Gateway(stub_upstreams(stub), budget_usd=5.0, trace=traced.append) as gateway:
        token = gateway.issue_token("stub", task="t1")
        headers = {"Authorization": f"Bearer {token}"}
        for _ in range(2):
            assert httpx.post(gateway.url_for("stub") + "/chat/completions", json=body, headers=headers).status_code == 200
        read_stream(gateway.url_for("stub") + "/chat/completions", headers, {**body, "stream": True})
        gateway.calls(task="t1")
        times = gateway.stage_times(reset=True)
        after_reset = gateway.stage_times()

    assert times["calls"] == 3
    stages = ("read", "policy", "budget", "key_swap", "upstream", "forward", "metering", "tracing", "record")
    assert set(times) == {"calls"} | {f"{stage}_ms" for stage in stages}
    assert all(times[f"{stage}_ms"] > 0 for stage in stages), times
    # the stub's own 50 ms before each answer is the upstream's time; its 0.15 s between stream events, no stage's
    assert times["upstream_ms"] >= 50
    assert times["forward_ms"] < 100
    assert after_reset == {"calls": 0, **{f"{stage}_ms": 0.0 for stage in stages}}


def test_the_openai_sdk_streams_from_the_scripted_server_with_usage_metered():
    script = Script(default=Reply("The fix is in place. " * 20, usage={"prompt_tokens": 1200, "completion_tokens": 80}))
    with ScriptedModelServer(script) as server, \
            Gateway({"scripted": Upstream(server.base_url, "scripted-upstream-key", "openai-compatible")}) as gateway:
        token = gateway.issue_token("scripted", experiment="e", role="agent")
        client = openai.OpenAI(base_url=gateway.url_for("scripted"), api_key=token, max_retries=0)
        chunks = list(client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "fix"}],
                                                     stream=True, stream_options={"include_usage": True}))
        plain = client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "fix"}])
        usage = gateway.usage(experiment="e")

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == plain.choices[0].message.content == "The fix is in place. " * 20
    assert [r["authorization"] for r in server.requests] == ["Bearer scripted-upstream-key"] * 2
    assert usage == {"calls": 2, "input_tokens": 2400, "cached_tokens": 0, "output_tokens": 160,
                     "cost_usd": pytest.approx(2 * (1200 * 2.0 + 80 * 8.0) / 1e6)}


# --- rate limits -----------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [500, 429])
def test_one_failing_call_reaches_the_upstream_at_most_one_plus_max_retries_times_end_to_end(status, tmp_path):
    """LLMClient (which retries on its own when it talks to a provider directly) through the gateway (which
    retries too): the upstream sees 1 + LLM_MAX_RETRIES tries, not their product."""
    with ScriptedModelServer(Script(default=Reply(status=status, error_message="always failing"))) as server, \
            Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}, backoff_s=0) as gateway:
        client = LLMClient("gpt-4.1", base_url=gateway.url_for("s"), api_key=gateway.issue_token("s"),
                           cache=False, cache_dir=tmp_path, backoff_s=0)
        with pytest.raises(LLMError) as failed:
            client.complete([{"role": "user", "content": "fix it"}])
        tries = len(server.chat_requests())
    assert tries == 1 + config.LLM_MAX_RETRIES
    assert failed.value.transient and failed.value.status_code == status and client.retries == 0


def test_a_storm_of_429s_across_four_clients_ends_with_every_call_done_and_the_cap_kept(stub):
    stub.storm_s = 1.0  # a quota window: everything is refused for a second
    with Gateway(stub_upstreams(stub), concurrency=2, backoff_s=0.05) as gateway:

        def client_run(worker):
            token = gateway.issue_token("stub", task=f"t{worker}")
            client = openai.OpenAI(base_url=gateway.url_for("stub"), api_key=token, max_retries=0)
            return [client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "x"}])
                    .choices[0].message.content for _ in range(3)]

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(client_run, range(4)))
        records = gateway.calls()

    assert answers == [["ok"] * 3] * 4
    assert stub.max_in_flight <= 2
    assert all(r["status"] == 200 for r in records) and sum(r["retries"] for r in records) == stub.rate_limited
    assert stub.rate_limited >= 2
    # The pool pauses as a whole: after a 429 no client sends anything until Retry-After has passed (only
    # requests already on their way, sent before the gateway read the 429, may arrive meanwhile).
    pause = float(stub.storm_retry_after)
    early = [a - r for r in stub.refusals for a in stub.arrivals if r + 0.03 < a < r + pause]
    assert early == []


def test_retry_after_is_honoured_and_a_too_long_ask_is_passed_on_at_once():
    script = Script([Rule(user_contains="short", reply=Reply(status=429, retry_after=0.3), times=2),
                     Rule(user_contains="long", reply=Reply(status=429, retry_after=3600))])
    with ScriptedModelServer(script) as server, \
            Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}, max_retry_after_s=5) as gateway:
        token = gateway.issue_token("s", task="short")
        client = openai.OpenAI(base_url=gateway.url_for("s"), api_key=token, max_retries=0)
        client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "short"}])
        long_token = gateway.issue_token("s", task="long")
        long_client = openai.OpenAI(base_url=gateway.url_for("s"), api_key=long_token, max_retries=0)
        with pytest.raises(openai.RateLimitError) as refused:
            long_client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "long"}])
        short_record, = gateway.calls(task="short")
        long_record, = gateway.calls(task="long")

    assert short_record["retries"] == 2 and short_record["waited_s"] >= 0.6  # two asks of 0.3 s, waited in full
    assert long_record["retries"] == 0 and long_record["waited_s"] < 60  # passed on at once, not after the 3600 s asked
    assert refused.value.response.headers["retry-after"] == "3600"
    assert refused.value.response.headers[GATEWAY_RETRIES_HEADER] == "0"  # clients must not retry it themselves
    assert gateway.last_status(long_token) == 429 and is_transient(gateway.last_status(long_token))
    assert gateway.last_status(token) == 200 and not is_transient(200)


def test_an_unreachable_upstream_is_a_502_recorded_as_transient():
    with Gateway({"gone": Upstream(f"http://127.0.0.1:{free_port()}/v1", "unused-key", "openai")},
                 max_retries=1, backoff_s=0.01) as gateway:
        token = gateway.issue_token("gone")
        answer = httpx.post(gateway.url_for("gone") + "/chat/completions", json={"model": "gpt-4.1"},
                            headers={"Authorization": f"Bearer {token}"})
        record, = gateway.calls()
    message = answer.json()["error"]["message"]
    assert answer.status_code == 502 and "upstream unreachable: nothing answers at 127.0.0.1:" in message
    assert message.endswith("(connection refused)") and "ClientConnector" not in message  # what happened, not a class
    assert record["retries"] == 1 and is_transient(gateway.last_status(token))


# --- metering and budget ---------------------------------------------------------------------------
def test_the_budget_stops_new_calls_with_a_clear_error():
    million_in = Reply("ok", usage={"prompt_tokens": 1_000_000, "completion_tokens": 0})  # $2.00 on gpt-4.1
    with ScriptedModelServer(Script(default=million_in)) as server, \
            Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}, budget_usd=3.0) as gateway:
        token = gateway.issue_token("s", role="judge")
        client = openai.OpenAI(base_url=gateway.url_for("s"), api_key=token, max_retries=0)
        ask = dict(model="gpt-4.1", messages=[{"role": "user", "content": "x"}])
        client.chat.completions.create(**ask)
        client.chat.completions.create(**ask)  # $2 < $3 spent before it: allowed, then $4 spent
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(**ask)

    assert "budget" in refused.value.message and "spent" in refused.value.message
    assert refused.value.response.headers[BUDGET_HEADER] == "spent"
    # and no client waits to ask again: the SDKs read x-should-retry, Cline's AI SDK a retry-after-ms (else 62 s)
    assert refused.value.response.headers["x-should-retry"] == "false"
    assert refused.value.response.headers["retry-after-ms"] == "0"
    assert len(server.requests) == 2
    assert [r["status"] for r in gateway.calls()] == [200, 200, "budget"]
    assert gateway.last_status(token) == "budget" and gateway.spent_usd == pytest.approx(4.0)


def test_usage_sums_by_attribute_and_an_unpriced_model_costs_none():
    script = Script(default=Reply("ok", usage={"prompt_tokens": 100, "completion_tokens": 10}))
    with ScriptedModelServer(script) as server, \
            Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}) as gateway:
        for role, task, model in [("agent", "t1", "gpt-4.1"), ("agent", "t2", "gpt-4.1"),
                                  ("judge", "t1", "gpt-4.1"), ("agent", "t3", "my-local-llama")]:
            token = gateway.issue_token("s", experiment="e", loop=0, role=role, task=task)
            openai.OpenAI(base_url=gateway.url_for("s"), api_key=token).chat.completions.create(
                model=model, messages=[{"role": "user", "content": "x"}])
        by_t1, agents, judge = gateway.usage(task="t1"), gateway.usage(role="agent"), gateway.usage(role="judge")
        everything, nothing = gateway.usage(experiment="e", loop=0), gateway.usage(experiment="other")

    one_call = (100 * 2.0 + 10 * 8.0) / 1e6
    assert by_t1 == {"calls": 2, "input_tokens": 200, "cached_tokens": 0, "output_tokens": 20,
                     "cost_usd": pytest.approx(2 * one_call)}
    assert judge["cost_usd"] == pytest.approx(one_call)
    assert agents["calls"] == 3 and agents["cost_usd"] is None  # one agent call was unpriced
    assert everything["input_tokens"] == 400 and everything["cost_usd"] is None
    assert nothing == {"calls": 0, "input_tokens": 0, "cached_tokens": 0, "output_tokens": 0, "cost_usd": 0}


def test_the_prompt_caches_share_of_the_input_is_read_from_each_wire_format():
    from helpers.llm.gateway.metering import Meter

    def metered(body: bytes, stream: bool) -> Meter:
        meter = Meter()
        meter.feed_sse(body) if stream else meter.feed_json(body)
        return meter

    chat = {"model": "gpt-4.1", "choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 80,
                                                         "prompt_tokens_details": {"cached_tokens": 1024}}}
    responses = {"type": "response.completed", "response": {"model": "gpt-5", "output": [], "usage": {
        "input_tokens": 900, "output_tokens": 30, "input_tokens_details": {"cached_tokens": 512}}}}
    # Anthropic counts cache reads and writes apart from input_tokens; the meter adds them back
    anthropic = [{"type": "message_start", "message": {"model": "claude-sonnet-4-5", "content": [], "usage": {
                     "input_tokens": 25, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000,
                     "output_tokens": 1}}},
                 {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 17}}]
    plain = {"model": "gpt-4.1", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}}

    read = [metered(json.dumps(chat).encode(), False), metered(b"".join(sse([chat])), True),
            metered(b"".join(sse([responses])), True), metered(b"".join(sse(anthropic)), True),
            metered(json.dumps(plain).encode(), False)]
    assert [(m.input_tokens, m.cached_tokens, m.output_tokens) for m in read] == [
        (1200, 1024, 80), (1200, 1024, 80), (900, 512, 30), (2125, 2000, 17), (10, None, 2)]


def test_the_gateway_records_and_sums_cached_tokens():
    usage = {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 1000}}
    with ScriptedModelServer(Script(default=Reply("ok", usage=usage))) as server, \
            Gateway({"s": Upstream(server.base_url, None, "openai-compatible")}) as gateway:
        token = gateway.issue_token("s", role="agent")
        client = openai.OpenAI(base_url=gateway.url_for("s"), api_key=token)
        ask = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "x"}]}
        client.chat.completions.create(**ask)
        list(client.chat.completions.create(**ask, stream=True))  # usage in the last chunk
        records, total = gateway.calls(token), gateway.usage(token)
    assert [r["cached_tokens"] for r in records] == [1000, 1000]
    assert (total["input_tokens"], total["cached_tokens"], total["output_tokens"]) == (2400, 2000, 160)
    # gpt-4.1 reads its cache at a quarter of its input price: 200 fresh + 1000 cached inputs, 80 outputs a call
    assert [r["cost_usd"] for r in records] == [pytest.approx((200 * 2.0 + 1000 * 0.5 + 80 * 8.0) / 1e6)] * 2


# --- the other APIs --------------------------------------------------------------------------------
def test_anthropic_messages_are_forwarded_with_x_api_key_and_metered(stub):
    traced = []
    with Gateway(stub_upstreams(stub), trace=traced.append) as gateway:
        token = gateway.issue_token("ant", task="t1", role="agent")
        client = anthropic.Anthropic(base_url=gateway.url_for("ant"), api_key=token, max_retries=0)
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=100,
                                    messages=[{"role": "user", "content": "edit a.py"}]) as stream:
            message = stream.get_final_message()
        # Cline's anthropic provider posts {baseUrl}/messages with baseUrl ending in /v1.
        cline_style = httpx.post(gateway.url_for("ant") + "/v1/messages", headers={"Authorization": f"Bearer {token}"},
                                 json={"model": "claude-sonnet-4-5", "stream": True, "messages": []})
        deadline = time.monotonic() + 60  # traces run in a worker thread after the record: wait for them
        while len(traced) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        record = gateway.calls()[0]

    assert [b.type for b in message.content] == ["text", "tool_use"] and message.content[1].input == {"path": "a.py"}
    assert cline_style.status_code == 200 and b"message_stop" in cline_style.content
    assert all(headers.get("x-api-key") == ANTHROPIC_KEY for _, headers in stub.seen)
    assert (record["model"], record["input_tokens"], record["output_tokens"]) == ("claude-sonnet-4-5", 25, 17)
    assert record["cost_usd"] == pytest.approx((25 * 3.0 + 17 * 15.0) / 1e6)
    assert traced[0]["output_text"] == "Editing the file."
    assert traced[0]["output_tool_calls"] == [{"name": "editor", "arguments": '{"path": "a.py"}'}]
    assert traced[0]["input_messages"] == [{"role": "user", "content": "edit a.py", "tool_calls": []}]


def test_the_responses_api_is_forwarded_and_metered(stub):
    with Gateway(stub_upstreams(stub)) as gateway:
        token = gateway.issue_token("stub", role="agent")
        client = openai.OpenAI(base_url=gateway.url_for("stub"), api_key=token, max_retries=0)
        events = list(client.responses.create(model="gpt-5", input="run the tests", stream=True))
        record, = gateway.calls()

    assert events[-1].type == "response.completed" and events[-1].response.output[0].name == "exec_command"
    assert (record["path"], record["model"], record["input_tokens"], record["output_tokens"]) == \
        ("/v1/responses", "gpt-5", 40, 9)
    assert record["cost_usd"] == pytest.approx((40 * 1.25 + 9 * 10.0) / 1e6)


# --- traces ----------------------------------------------------------------------------------------
def test_with_phoenix_down_spans_are_dropped_with_one_warning(stub):
    from helpers.llm.gateway.tracing import PhoenixTracer

    # the exporter retries a refused connection until its timeout (5 s by default) before it reports the export
    # failed: a short one asks the same question of each of the three exports without waiting those 15 s
    tracer = PhoenixTracer(f"http://127.0.0.1:{free_port()}", "gateway-test", timeout_s=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with Gateway(stub_upstreams(stub), trace=tracer) as gateway:
            token = gateway.issue_token("stub", task="t1")
            client = openai.OpenAI(base_url=gateway.url_for("stub"), api_key=token, max_retries=0)
            for _ in range(3):
                client.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "x"}])
                time.sleep(0.05)
                tracer.flush(timeout_s=10)
        tracer.close()
    assert len([w for w in caught if "Phoenix" in str(w.message)]) == 1
    assert [r["status"] for r in gateway.calls()] == [200] * 3


@pytest.mark.slow
def test_spans_land_in_a_real_phoenix_with_the_run_attributes(stub, phoenix_url):
    from phoenix.client import Client

    project = f"gateway-{free_port()}"
    tracer = phoenix_tracer(phoenix_url, project)
    with Gateway(stub_upstreams(stub), trace=tracer) as gateway:
        token = gateway.issue_token("ant", experiment="e1", split="train", loop=2, task="t7", role="agent")
        with anthropic.Anthropic(base_url=gateway.url_for("ant"), api_key=token, max_retries=0).messages.create(
                model="claude-sonnet-4-5", max_tokens=10, stream=True,
                messages=[{"role": "user", "content": "edit a.py"}]) as stream:
            for _ in stream:  # read to the end: the final usage comes in the last events
                pass
    spans, deadline = [], time.monotonic() + 120
    while not spans and time.monotonic() < deadline:  # the trace runs in a worker thread after the record,
        assert tracer.flush(timeout_s=30)             # and Phoenix ingests in the background
        try:
            spans = Client(base_url=phoenix_url).spans.get_spans(project_identifier=project)
        except httpx.HTTPStatusError:
            time.sleep(0.2)
    span, = spans
    attributes = span["attributes"]
    assert span["span_kind"] == "LLM"
    assert attributes["llm.model_name"] == "claude-sonnet-4-5"
    assert (attributes["llm.token_count.prompt"], attributes["llm.token_count.completion"]) == (25, 17)
    assert (attributes["task"], attributes["split"], attributes["loop"], attributes["role"]) == ("t7", "train", 2, "agent")
    assert attributes["llm.input_messages.0.message.content"] == "edit a.py"
    assert attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "editor"
    assert "status" not in attributes and attributes["metadata.status"] == 200  # call fields stay in metadata
    assert ANTHROPIC_KEY not in json.dumps(spans, default=str) and token not in json.dumps(spans, default=str)
