"""The gateway forwards only what the product's roles send, and one client cannot make it spend without bound
(issue 47, docs/security.md): the budget reserved before a call goes, each token on its role's model, server-side
tools and provider-fetched content refused by name, headers allow-listed, bodies capped before they are read.
Real gateway on loopback, the scripted model server upstream, the OpenAI and Anthropic SDKs and raw sockets as
clients."""

import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anthropic
import httpx
import openai
import pytest

from helpers.core import config
from helpers.llm.gateway import BUDGET_HEADER, Gateway, Upstream
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer

USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server():
    with ScriptedModelServer(Script(default=Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": 20}))) as s:
        yield s


def gateway_on(server, kind="openai-compatible", **settings):
    url = server.origin if kind in ("anthropic", "gemini") else server.base_url
    return Gateway({"agent": Upstream(url, "sk-upstream-key-0123456789", kind)}, **settings)


def post(gateway, path, token, body, headers=None, upstream="agent"):
    return httpx.post(gateway.url_for(upstream) + path, json=body, timeout=60,
                      headers={"Authorization": f"Bearer {token}", **(headers or {})})


# --- the budget: reserved before a call goes ---------------------------------------------------------
def test_forty_calls_at_once_never_spend_past_a_budget_of_two_tenths_of_a_cent():
    # each call: 30 tokens in, 20 out on gpt-4.1 ($2 / $8 per 1M): $0.00022 metered; worst case ~$0.0005
    slow = Reply("ok", usage={"prompt_tokens": 30, "completion_tokens": 20}, delay_s=0.3)
    with ScriptedModelServer(Script(default=slow)) as server, gateway_on(server, budget_usd=0.002) as gateway:
        def one(i):
            client = openai.OpenAI(base_url=gateway.url_for("agent"), max_retries=0,
                                   api_key=gateway.issue_token("agent", role="agent", task=f"t{i}"))
            try:
                client.chat.completions.create(model="gpt-4.1", messages=USER, max_tokens=20)
                return "ok"
            except openai.RateLimitError as refused:
                return refused.response.headers[BUDGET_HEADER]
        with ThreadPoolExecutor(40) as pool:
            outcomes = list(pool.map(one, range(40)))
        records = gateway.calls()
    assert gateway.spent_usd <= 0.002  # today all 40 pass: $0.0148
    assert outcomes.count("ok") == len(server.requests) >= 4  # the calls that fit went, the others never did
    assert set(outcomes) == {"ok", "spent"} and outcomes.count("spent") == 40 - outcomes.count("ok")
    assert sorted({r["status"] for r in records}, key=str) == [200, "budget"]
    assert sum(r["cost_usd"] for r in records) == pytest.approx(gateway.spent_usd)


def test_a_max_tokens_of_ten_million_is_capped_at_the_roles_cap_and_reserved_at_it(server):
    with gateway_on(server, budget_usd=5) as gateway:
        token = gateway.issue_token("agent", role="agent")
        answer = post(gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER, "max_tokens": 10_000_000})
        record, = gateway.calls()
    assert answer.status_code == 200
    assert server.requests[-1]["body"]["max_tokens"] == config.GATEWAY_OUTPUT_TOKENS["agent"]
    assert record["changed"] == [f"max_tokens 10000000 capped at {config.GATEWAY_OUTPUT_TOKENS['agent']}"]


def test_a_call_that_names_no_output_cap_is_given_its_roles_cap_in_each_wire_format(server):
    with gateway_on(server) as gateway:
        token = gateway.issue_token("agent", role="judge")
        post(gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER})
        post(gateway, "/chat/completions", token, {"model": "gpt-5", "messages": USER})  # a reasoning model's name
        post(gateway, "/responses", token, {"model": "gpt-5", "input": "hi"})
    cap = config.GATEWAY_OUTPUT_TOKENS["judge"]
    bodies = [r["body"] for r in server.requests]
    assert (bodies[0]["max_tokens"], bodies[1]["max_completion_tokens"], bodies[2]["max_output_tokens"]) == (cap,) * 3


def test_a_model_servers_own_limit_holds_every_roles_answers_whatever_cap_they_name_or_none(server, monkeypatch):
    # llama-server's -n is only a default: a request's max_tokens overrides it, so the gateway holds the limit
    monkeypatch.setenv(config.MAX_OUTPUT_TOKENS_VARIABLE, "256")
    with gateway_on(server) as gateway:
        for role, asked in (("agent", None), ("judge", config.JUDGE_MAX_TOKENS), ("optimizer", 10**9),
                            ("a role of its own", None), ("judge", 100)):
            token = gateway.issue_token("agent", role=role)
            post(gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER,
                                                       **({"max_tokens": asked} if asked else {})})
        post(gateway, "/chat/completions", token, {"model": "gpt-5", "messages": USER, "max_completion_tokens": 5000})
        post(gateway, "/responses", token, {"model": "gpt-5", "input": "hi", "max_output_tokens": 5000})
        records = gateway.calls()
    bodies = [r["body"] for r in server.requests]
    assert [b["max_tokens"] for b in bodies[:5]] == [256, 256, 256, 256, 100]  # a smaller cap is the caller's own
    assert (bodies[5]["max_completion_tokens"], bodies[6]["max_output_tokens"]) == (256, 256)
    assert [r["changed"] for r in records[:2]] == [["max_tokens set to 256"], ["max_tokens 4000 capped at 256"]]


def test_an_anthropic_call_is_held_to_the_model_servers_limit_too(server, monkeypatch):
    monkeypatch.setenv(config.MAX_OUTPUT_TOKENS_VARIABLE, "256")
    with gateway_on(server, kind="anthropic") as gateway:
        client = anthropic.Anthropic(base_url=gateway.url_for("agent"), max_retries=0,
                                     api_key=gateway.issue_token("agent", role="agent"))
        client.messages.create(model="claude-sonnet-5-5", max_tokens=config.AGENT_MAX_OUTPUT_TOKENS, messages=USER)
    assert server.requests[-1]["body"]["max_tokens"] == 256


@pytest.mark.parametrize("value", ["0", "-5", "256 tokens", "2.5", "\u00b2", "1e3"])
def test_a_model_servers_limit_that_is_not_a_whole_number_of_tokens_is_one_error_naming_it_before_the_gateway_starts(
        server, monkeypatch, value):
    monkeypatch.setenv(config.MAX_OUTPUT_TOKENS_VARIABLE, value)
    with pytest.raises(ValueError, match=f"^{config.MAX_OUTPUT_TOKENS_VARIABLE}=.*whole number of tokens"):
        gateway_on(server)
    assert server.requests == []


def test_without_a_model_servers_limit_each_role_keeps_its_own_cap(server, monkeypatch):
    monkeypatch.setenv(config.MAX_OUTPUT_TOKENS_VARIABLE, " ")  # empty: unset
    with gateway_on(server) as gateway:
        for role in config.GATEWAY_OUTPUT_TOKENS:
            post(gateway, "/chat/completions", gateway.issue_token("agent", role=role), {"model": "gpt-4.1", "messages": USER})
    assert [r["body"]["max_tokens"] for r in server.requests] == list(config.GATEWAY_OUTPUT_TOKENS.values())


def test_a_call_whose_worst_case_is_more_than_the_whole_budget_is_the_callers_own_refusal_not_a_spent_budget(server):
    with gateway_on(server, budget_usd=0.01) as gateway:  # 16,384 output tokens of o1-pro: far more than $0.01
        token = gateway.issue_token("agent", role="agent")
        answer = post(gateway, "/chat/completions", token, {"model": "o1-pro", "messages": USER})
        padded = post(gateway, "/chat/completions", token,  # 400 KB of input on a cheap model, output capped small
                      {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "x" * 400_000}], "max_tokens": 1})
    for refused in (answer, padded):
        assert refused.status_code == 413 and BUDGET_HEADER not in refused.headers
        assert "more than the whole budget" in refused.json()["error"]["message"]
    assert server.requests == [] and gateway.last_status(token) == 413 and gateway.spent_usd == 0


def test_a_call_that_fits_the_whole_budget_but_not_what_is_left_gets_the_spent_budgets_status(server):
    with gateway_on(server, budget_usd=0.0008) as gateway:  # each call fits $0.0008 whole (worst case ~$0.0006)
        token = gateway.issue_token("agent", role="agent")
        statuses = [post(gateway, "/chat/completions", token,
                         {"model": "gpt-4.1", "messages": USER, "max_tokens": 50}) for _ in range(6)]
    refused = [a for a in statuses if a.status_code != 200]
    assert statuses[0].status_code == 200 and refused  # the first fit the whole budget and what was left
    assert all(a.status_code == 429 and a.headers[BUDGET_HEADER] == "spent" for a in refused)
    assert gateway.last_status(token) == "budget" and gateway.spent_usd <= 0.0008


# --- each token opens its role's model only ----------------------------------------------------------
@pytest.mark.parametrize("model", ["o1-pro", "openai/gpt-4.1-mini", "GPT-4.1-MINI", "gpt-4.1-mini-2025-04-14"])
def test_the_agents_token_calls_its_configured_model_only(server, model):
    with gateway_on(server, models={"agent": ["gpt-4.1-mini"]}, budget_usd=5) as gateway:
        token = gateway.issue_token("agent", role="agent")
        refused = post(gateway, "/chat/completions", token, {"model": model, "messages": USER})
        allowed = post(gateway, "/chat/completions", token, {"model": "gpt-4.1-mini", "messages": USER})
    assert refused.status_code == 403 and f"model {model!r} is not one this run may call" in refused.text
    assert allowed.status_code == 200 and [r["body"]["model"] for r in server.requests] == ["gpt-4.1-mini"]


def test_a_tokens_own_models_narrow_its_upstreams(server):
    with gateway_on(server) as gateway:
        token = gateway.issue_token("agent", models=["gpt-4.1"], role="agent")
        refused = post(gateway, "/chat/completions", token, {"model": "o3", "messages": USER})
        record = post(gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER})
    assert refused.status_code == 403 and record.status_code == 200
    assert "models" not in gateway.calls()[0]  # not a record field


def test_a_duplicate_model_key_is_read_as_the_provider_would_and_forwarded_once(server):
    raw = b'{"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}], "model": "o1-pro"}'
    with gateway_on(server, models={"agent": ["gpt-4.1"]}) as gateway:
        token = gateway.issue_token("agent", role="agent")
        refused = httpx.post(gateway.url_for("agent") + "/chat/completions", content=raw,
                             headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    assert refused.status_code == 403 and "o1-pro" in refused.text and server.requests == []


# --- server-side tools and provider-side state refused, by name ---------------------------------------
@pytest.mark.parametrize("extra, named", [
    ({"tools": [{"type": "mcp", "server_label": "x", "server_url": "https://attacker.example/mcp"}]}, "'mcp'"),
    ({"tools": [{"type": "web_search"}]}, "'web_search'"),
    ({"background": True}, "background=True"),
    ({"tools": [{"type": "WEB_SEARCH_PREVIEW"}]}, "'WEB_SEARCH_PREVIEW'"),  # another spelling
    ({"tool_choice": {"type": "web_search_preview"}}, "tool_choice"),
    ({"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "file_search"}]}}, "file_search"),
    ({"previous_response_id": "resp_of_someone_else"}, "'previous_response_id'"),
    ({"store": True}, "store=True"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://attacker.example/?k=v"}]}]},
     "by URL"),
    ({"input": [{"role": "user", "content": [{"type": "input_file", "file_url": "https://attacker.example/a.pdf"}]}]},
     "file_url"),
])
def test_a_responses_call_asking_the_provider_to_act_is_refused_naming_the_field(server, extra, named):
    with gateway_on(server) as gateway:
        client = openai.OpenAI(base_url=gateway.url_for("agent"), api_key=gateway.issue_token("agent"), max_retries=0)
        with pytest.raises(openai.PermissionDeniedError) as refused:
            client.responses.create(**{"model": "gpt-5", "input": "hi", **extra})
    assert named in refused.value.message and server.requests == []


@pytest.mark.parametrize("extra, named", [
    ({"web_search_options": {}}, "'web_search_options'"),
    ({"tools": [{"type": "Web_Search"}]}, "'Web_Search'"),
    ({"n": 50}, "n=50"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://169.254.169.254/"}}]}]},
     "by URL"),
    ({"messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-of-the-org"}}]}]}, "file_id"),
])
def test_a_chat_call_asking_the_provider_to_act_is_refused_naming_the_field(server, extra, named):
    with gateway_on(server) as gateway:
        answer = post(gateway, "/chat/completions", gateway.issue_token("agent"), {"model": "gpt-4.1", "messages": USER, **extra})
    assert answer.status_code == 403 and named in answer.json()["error"]["message"] and server.requests == []


def test_an_inline_image_and_client_functions_pass(server):
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    tool = {"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}
    with gateway_on(server) as gateway:
        answer = post(gateway, "/chat/completions", gateway.issue_token("agent"),
                      {"model": "gpt-4.1", "messages": [{"role": "user", "content": [image]}], "tools": [tool],
                       "tool_choice": {"type": "function", "function": {"name": "run"}}})
    assert answer.status_code == 200 and server.requests[-1]["body"]["tools"] == [tool]


@pytest.mark.parametrize("extra, named", [
    ({"mcp_servers": [{"type": "url", "url": "https://attacker.example/sse", "name": "x"}]}, "'mcp_servers'"),
    ({"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}, "'web_fetch_20250910'"),
    ({"tools": [{"type": "code_execution_20250825", "name": "code_execution"}]}, "code_execution"),
    ({"container": "container_of_someone"}, "'container'"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://a.example/x.png"}}]}]},
     "'url'"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "document", "source": {"type": "file", "file_id": "file_1"}}]}]}]}, "'file'"),  # nested
])
def test_an_anthropic_call_asking_the_provider_to_act_is_refused_naming_the_field(server, extra, named):
    with gateway_on(server, kind="anthropic") as gateway:
        client = anthropic.Anthropic(base_url=gateway.url_for("agent"), api_key=gateway.issue_token("agent"), max_retries=0)
        with pytest.raises(anthropic.PermissionDeniedError) as refused:  # with the betas that would enable them
            client.beta.messages.create(**{"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": USER, **extra},
                                        betas=["mcp-client-2025-04-04", "web-fetch-2025-09-10"])
    assert named in refused.value.message and server.requests == []


def test_anthropic_beta_values_and_headers_outside_the_allow_list_are_dropped(server):
    with gateway_on(server, kind="anthropic") as gateway:
        token = gateway.issue_token("agent")
        answer = httpx.post(gateway.url_for("agent") + "/v1/messages", timeout=60, json={
            "model": "claude-sonnet-4-5", "max_tokens": 100, "messages": USER}, headers={
            "x-api-key": token, "anthropic-version": "2023-06-01",
            "anthropic-beta": "mcp-client-2025-04-04, claude-code-20250219,web-fetch-2025-09-10",
            "OpenAI-Organization": "org-someone-else", "OpenAI-Project": "proj_x", "x-goog-user-project": "other"})
    assert answer.status_code == 200
    seen = {k.lower(): v for k, v in server.requests[-1]["headers"].items()}
    assert seen["anthropic-beta"] == "claude-code-20250219" and seen["anthropic-version"] == "2023-06-01"
    assert not {"openai-organization", "openai-project", "x-goog-user-project"} & set(seen)


def test_clines_anthropic_web_search_is_stripped_with_a_note_and_other_tools_kept(server):
    editor = {"name": "editor", "input_schema": {"type": "object"}}
    with gateway_on(server, kind="anthropic") as gateway:
        client = anthropic.Anthropic(base_url=gateway.url_for("agent"), api_key=gateway.issue_token("agent"), max_retries=0)
        client.messages.create(model="claude-sonnet-4-5", max_tokens=100, messages=USER,
                               tools=[{"type": "web_search_20250305", "name": "web_search"}, editor])
        record, = gateway.calls()
    assert server.requests[-1]["body"]["tools"] == [editor]
    assert "the server-side tool web_search_20250305 'web_search' removed" in record["changed"]


@pytest.mark.parametrize("tool", [{"googleSearch": {}}, {"urlContext": {}}, {"codeExecution": {}},
                                  {"google_search": {}}, {"functionDeclarations": [], "googleSearchRetrieval": {}}])
def test_a_gemini_server_side_tool_is_refused_in_either_spelling(server, tool):
    with gateway_on(server, kind="gemini") as gateway:
        answer = httpx.post(gateway.url_for("agent") + "/v1beta/models/gemini-2.5-pro:generateContent", timeout=60,
                            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [tool]},
                            headers={"x-goog-api-key": gateway.issue_token("agent")})
    assert answer.status_code == 403 and "server-side tool" in answer.json()["error"]["message"]
    assert server.requests == []


def test_a_gemini_file_by_uri_and_cached_content_are_refused(server):
    with gateway_on(server, kind="gemini") as gateway:
        token = gateway.issue_token("agent")
        url = gateway.url_for("agent") + "/v1beta/models/gemini-2.5-pro:generateContent"
        by_uri = httpx.post(url, headers={"x-goog-api-key": token}, json={"contents": [{"role": "user", "parts": [
            {"fileData": {"fileUri": "https://attacker.example/x", "mimeType": "text/plain"}}]}]})
        cached = httpx.post(url, headers={"x-goog-api-key": token},
                            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "cachedContent": "c/1"})
    assert by_uri.status_code == cached.status_code == 403 and server.requests == []
    assert "fileData" in by_uri.text and "cachedContent" in cached.text


# --- caps: body size before parsing, connections, one token's calls at once ------------------------
def raw_request(gateway, head: bytes, body: bytes = b"", pause_s: float = 0.0) -> bytes:
    host, port = gateway.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        if pause_s:
            time.sleep(pause_s)
        try:
            sock.sendall(body)
        except OSError:
            pass  # the gateway answered and closed before the body was sent
        return sock.recv(65536)


def test_a_24_mb_body_is_refused_with_413_before_it_is_read(server):
    with gateway_on(server) as gateway:
        token = gateway.issue_token("agent")
        head = (f"POST /u/agent/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {24 * 10**6}\r\n\r\n").encode()
        started = time.monotonic()
        answer = raw_request(gateway, head)  # not one byte of the 24 MB is sent: the answer comes anyway
        waited = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 413") and b"over the gateway's limit" in answer and server.requests == []
    assert waited < 20


def test_a_chunked_body_with_no_length_is_cut_once_it_grows_past_the_cap(server):
    with gateway_on(server) as gateway:
        gateway.max_request_bytes = 100_000
        sent = [0]

        def chunks():
            for _ in range(1000):  # 1,000 x 10 KB: ten times the cap
                sent[0] += 1
                yield b"x" * 10_000

        try:
            answer = httpx.post(gateway.url_for("agent") + "/chat/completions", content=chunks(), timeout=30,
                                headers={"Authorization": f"Bearer {gateway.issue_token('agent')}"})
            status = answer.status_code
        except httpx.HTTPError:  # the gateway closed the connection while the client was still sending
            status = 413
    assert status == 413 and sent[0] < 1000 and server.requests == []


def test_a_slow_drip_body_is_cut_at_the_body_time_limit(server, monkeypatch):
    monkeypatch.setattr(config, "GATEWAY_BODY_TIMEOUT_S", 1.0)
    with gateway_on(server) as gateway:
        token = gateway.issue_token("agent")
        head = (f"POST /u/agent/v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Length: 100\r\n\r\n").encode()
        answer = raw_request(gateway, head, b"{", pause_s=3.0)
    assert answer.startswith(b"HTTP/1.1 408") and server.requests == []


def test_connections_past_the_cap_are_answered_503_and_calls_go_on_once_they_close(server):
    with gateway_on(server) as gateway:
        gateway.max_connections = 20
        host, port = gateway.url.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(20)]
        time.sleep(0.2)
        over = post(gateway, "/chat/completions", gateway.issue_token("agent"), {"model": "gpt-4.1", "messages": USER})
        for sock in idle:
            sock.close()
        time.sleep(0.5)
        after = post(gateway, "/chat/completions", gateway.issue_token("agent"), {"model": "gpt-4.1", "messages": USER})
    assert over.status_code == 503 and "too many open connections" in over.text
    assert after.status_code == 200


def test_one_tokens_calls_at_once_are_capped_and_the_rest_get_429():
    release = threading.Event()

    def held(_request):  # every call the gateway forwards waits here until the test has seen them all
        release.wait(60)
        return Reply("ok")

    with ScriptedModelServer(Script([Rule(reply=held)])) as server, gateway_on(server) as gateway:
        token = gateway.issue_token("agent")
        with ThreadPoolExecutor(12) as pool:
            calls = [pool.submit(post, gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER})
                     for _ in range(12)]
            deadline = time.monotonic() + 60
            while sum(c.done() for c in calls) < 12 - config.GATEWAY_TOKEN_CONCURRENCY and time.monotonic() < deadline:
                time.sleep(0.05)
            refused = [c.result().status_code for c in calls if c.done()]
            release.set()
            statuses = [c.result().status_code for c in calls]
    assert refused == [429] * (12 - config.GATEWAY_TOKEN_CONCURRENCY)  # at once, while the others were under way
    assert statuses.count(200) == config.GATEWAY_TOKEN_CONCURRENCY == len(server.requests)


def test_the_request_bytes_held_at_once_are_capped_and_a_later_call_passes(server):
    with gateway_on(server) as gateway:
        token = gateway.issue_token("agent")
        gateway._held.cap = 50_000  # as if other calls held the rest of GATEWAY_MAX_HELD_BYTES
        big = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "x" * 60_000}]}
        busy = post(gateway, "/chat/completions", token, big)
        gateway._held.cap = config.GATEWAY_MAX_HELD_BYTES
        later = post(gateway, "/chat/completions", token, big)
        held = gateway._held.held
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1" and later.status_code == 200
    assert held == 0 and len(server.requests) == 1  # every call's bytes given back


@pytest.mark.parametrize("tool", [{"type": "function", "TYPE": "web_search", "function": {"name": "f"}},
                                  {"type": "function", "Type": "function", "function": {"name": "f"}}])
def test_a_tool_with_a_second_type_in_another_case_is_refused(server, tool):
    with gateway_on(server) as gateway:
        answer = post(gateway, "/chat/completions", gateway.issue_token("agent"), {"model": "gpt-4.1", "messages": USER,
                                                                                  "tools": [tool]})
    assert answer.status_code == 403 and "differ in case only" in answer.text and server.requests == []


def test_a_token_count_is_screened_as_its_wire_format_and_reserves_nothing(server):
    with gateway_on(server, kind="anthropic", budget_usd=1e-9) as gateway:  # any reservation would be refused
        client = anthropic.Anthropic(base_url=gateway.url_for("agent"), api_key=gateway.issue_token("agent"), max_retries=0)
        counted = client.messages.count_tokens(model="claude-sonnet-4-5", system="be brief", messages=USER)
        with pytest.raises(anthropic.PermissionDeniedError, match="mcp_servers"):
            client.messages.count_tokens(model="claude-sonnet-4-5", messages=USER,
                                         extra_body={"mcp_servers": [{"type": "url", "url": "https://a.example"}]})
    assert counted.input_tokens > 0 and len(server.requests) == 1


def test_a_sessions_agent_token_opens_the_agents_model_only(no_keys, monkeypatch):
    from helpers.app.session import open_session

    served = ["gpt-4.1-mini", "gpt-4.1", "o1-pro"]
    with ScriptedModelServer(Script(default=Reply("ok")), models=served) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-session-key-0123456789")
        with open_session(agent="cline", agent_model="gpt-4.1-mini", judge_model="gpt-4.1", optimizer_model="gpt-4.1",
                          phoenix=False, budget_usd=5) as session:
            token = session.gateway.issue_token("agent", role="agent", task="t1")  # as the engine issues it
            dearest = post(session.gateway, "/chat/completions", token, {"model": "o1-pro", "messages": USER})
            judges = post(session.gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER})
            own = post(session.gateway, "/chat/completions", token, {"model": "gpt-4.1-mini", "messages": USER})
    assert dearest.status_code == judges.status_code == 403 and own.status_code == 200
    assert [r["body"]["model"] for r in server.requests if r["api"] == "chat"] == ["gpt-4.1-mini"]


@pytest.mark.parametrize("body", [
    {"generationConfig": {"maxOutputTokens": 100}, "generation_config": {"maxOutputTokens": 10_000_000}},
    {"generationConfig": {"maxOutputTokens": 100, "max_output_tokens": 10_000_000}},
])
def test_a_gemini_field_named_in_both_spellings_is_refused(server, body):
    with gateway_on(server, kind="gemini") as gateway:
        answer = httpx.post(gateway.url_for("agent") + "/v1beta/models/gemini-2.5-pro:generateContent", timeout=60,
                            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **body},
                            headers={"x-goog-api-key": gateway.issue_token("agent")})
    assert answer.status_code == 403 and "naming one field twice" in answer.text and server.requests == []


def test_a_gemini_call_is_given_its_roles_output_cap(server):
    with gateway_on(server, kind="gemini") as gateway:
        answer = httpx.post(gateway.url_for("agent") + "/v1beta/models/gemini-2.5-pro:generateContent", timeout=60,
                            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                                  "generationConfig": {"maxOutputTokens": 10_000_000, "candidateCount": 8}},
                            headers={"x-goog-api-key": gateway.issue_token("agent", role="agent")})
    assert answer.status_code == 200
    assert server.requests[-1]["body"]["generationConfig"] == {"maxOutputTokens": config.GATEWAY_OUTPUT_TOKENS["agent"],
                                                               "candidateCount": 1}


# --- round 3 (issue 47): the classes the red team's breaks belong to -------------------------------------------
@pytest.mark.parametrize("path, body, settings", [
    ("/chat/completions", {"model": "", "messages": USER}, {"models": {"agent": ["gpt-4.1"]}}),
    ("/chat/completions", {"messages": USER}, {"budget_usd": 5}),
    ("/responses", {"model": None, "input": "hi"}, {"budget_usd": 5}),
    ("/messages", {"max_tokens": 10, "messages": USER}, {"models": {"agent": ["gpt-4.1"]}}),
])
def test_a_call_naming_no_model_is_refused_under_a_model_list_or_a_budget_on_every_endpoint(server, path, body, settings):
    with gateway_on(server, **settings) as gateway:
        answer = post(gateway, path, gateway.issue_token("agent", role="agent"), body)
    assert answer.status_code == 403 and "names no model" in answer.text and server.requests == []


@pytest.mark.parametrize("model", [5, True, ["gpt-4.1"], {"id": "gpt-4.1"}])
@pytest.mark.parametrize("settings", [{}, {"budget_usd": 5, "models": {"agent": ["gpt-4.1"]}}])
def test_a_model_that_is_not_a_string_is_a_400_naming_the_field_with_or_without_a_budget(server, model, settings):
    with gateway_on(server, **settings) as gateway:
        answer = post(gateway, "/chat/completions", gateway.issue_token("agent"), {"model": model, "messages": USER})
    assert answer.status_code == 400 and "'model' must be a string" in answer.text and server.requests == []


@pytest.mark.parametrize("path, part", [
    ("/chat/completions", {"type": "image_url", "image_url": "https://x.example/a.png"}),
    ("/chat/completions", {"type": "image_url", "image_url": {"url": "https://x.example/a.png"}}),
    ("/chat/completions", {"type": "image_url", "url": "https://x.example/a.png"}),
    ("/chat/completions", {"type": "file", "file": {"file_url": "https://x.example/a.pdf"}}),
    ("/chat/completions", {"type": "input_audio", "input_audio": {"url": "https://x.example/a.wav"}}),
    ("/responses", {"type": "input_image", "image_url": {"url": "https://x.example/a.png"}}),
    ("/responses", {"type": "input_file", "file_url": {"uri": "gs://bucket/a.pdf"}}),
])
def test_a_content_part_naming_a_url_in_any_shape_is_refused(server, path, part):
    messages = [{"role": "user", "content": [part]}]
    body = {"model": "gpt-4.1", **({"input": messages} if path == "/responses" else {"messages": messages})}
    with gateway_on(server) as gateway:
        answer = post(gateway, path, gateway.issue_token("agent"), body)
    assert answer.status_code == 403 and "by URL" in answer.text and server.requests == []


def test_an_image_as_an_inline_data_url_passes_in_either_shape(server):
    data = "data:image/png;base64,iVBORw0KGgo="
    parts = [{"type": "image_url", "image_url": data}, {"type": "image_url", "image_url": {"url": data}}]
    with gateway_on(server) as gateway:
        answer = post(gateway, "/chat/completions", gateway.issue_token("agent"),
                      {"model": "gpt-4.1", "messages": [{"role": "user", "content": parts}]})
    assert answer.status_code == 200 and server.requests[-1]["body"]["messages"][0]["content"] == parts


def test_a_small_output_cap_beside_a_large_one_cannot_lower_the_reservation(server):
    # gpt-4.1 at $8/M output: 16,384 tokens cost $0.131, more than a $0.05 budget; 1 token fits it
    with gateway_on(server, budget_usd=0.05) as gateway:
        token = gateway.issue_token("agent", role="agent")
        small = post(gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER, "max_tokens": 1})
        both = post(gateway, "/chat/completions", token, {"model": "gpt-4.1", "messages": USER, "max_tokens": 1,
                                                          "max_completion_tokens": 10_000_000})
    assert small.status_code == 200 and both.status_code == 413 and len(server.requests) == 1


def test_every_output_cap_a_chat_call_names_is_clamped_to_its_roles_cap(server):
    cap = config.GATEWAY_OUTPUT_TOKENS["judge"]
    with gateway_on(server) as gateway:
        post(gateway, "/chat/completions", gateway.issue_token("agent", role="judge"),
             {"model": "gpt-4.1", "messages": USER, "max_tokens": 10**9, "max_completion_tokens": "many"})
        record, = gateway.calls()
    forwarded = server.requests[-1]["body"]
    assert (forwarded["max_tokens"], forwarded["max_completion_tokens"]) == (cap, cap) and len(record["changed"]) == 2


def test_query_parameters_outside_the_allow_list_are_dropped_and_noted(server):
    with gateway_on(server) as gateway:
        token = gateway.issue_token("agent")
        httpx.post(gateway.url_for("agent") + "/chat/completions?api-version=x&stream=true&$fields=a", timeout=60,
                   json={"model": "gpt-4.1", "messages": USER}, headers={"Authorization": f"Bearer {token}"})
        record, = gateway.calls()
    assert "?" not in server.requests[-1]["path"] and "?" not in record["path"]
    assert [c for c in record["changed"] if "query" in c] == [
        "query parameter 'api-version' dropped", "query parameter 'stream' dropped", "query parameter '$fields' dropped"]


def test_the_query_parameters_the_clients_send_pass_where_they_belong(server):
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    with gateway_on(server, kind="gemini") as gemini:
        token = gemini.issue_token("agent")
        for method in ("streamGenerateContent", "generateContent"):
            httpx.post(f"{gemini.url_for('agent')}/v1beta/models/gemini-2.5-pro:{method}?alt=sse", timeout=60,
                       json={"contents": contents}, headers={"x-goog-api-key": token})
    with gateway_on(server, kind="anthropic") as claude:
        httpx.post(claude.url_for("agent") + "/v1/messages?beta=true", timeout=60,
                   json={"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": USER},
                   headers={"x-api-key": claude.issue_token("agent"), "anthropic-version": "2023-06-01"})
    assert [r["path"] for r in server.requests] == ["/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                                                    "/v1beta/models/gemini-2.5-pro:generateContent",
                                                    "/v1/messages?beta=true"]


@pytest.mark.parametrize("message, passes", [
    ({"role": "assistant", "content": "x", "refusal": None, "annotations": [], "audio": None, "tool_calls": None}, True),
    ({"role": "assistant", "audio": {"id": "audio_abc"}}, False),
    ({"role": "user", "content": "x", "prediction": {"type": "content", "content": "x"}}, False),
    ({"role": "user", "content": "x", "file_ids": ["file_1"]}, False),
])
def test_a_chat_messages_own_fields_are_allow_listed(server, message, passes):
    with gateway_on(server) as gateway:
        answer = post(gateway, "/chat/completions", gateway.issue_token("agent"),
                      {"model": "gpt-4.1", "messages": [*USER, message, *USER]})
    assert (answer.status_code, len(server.requests)) == ((200, 1) if passes else (403, 0)), answer.text


# --- a refused call is recorded like any other: counted and named -----------------------------------------
def test_every_call_the_gateway_refuses_is_recorded_with_its_status_and_why_and_counted_at_no_cost(server):
    gemini_path = "/v1beta/models/gemini-3-flash-preview:generateContent"
    refused = [  # (wire format, path, body or raw bytes, the status its client gets, words of why)
        ("openai-compatible", "/chat/completions", {"model": "o1-pro", "messages": USER}, 403, "not one this run may call"),
        ("openai-compatible", "/chat/completions", {"model": "gpt-4.1", "messages": USER,
                                                    "tools": [{"type": "web_search"}]}, 403, "web_search"),
        ("openai-compatible", "/responses", {"model": "gpt-4.1", "input": "hi", "store": True}, 403, "store=True"),
        ("openai-compatible", "/chat/completions", {"model": ["gpt-4.1"], "messages": USER}, 400, "must be a string"),
        ("openai-compatible", "/chat/completions", b"[1, 2]", 400, "not a JSON object"),
        ("openai-compatible", "/files", {"model": "gpt-4.1"}, 403, "refused"),
        ("anthropic", "/v1/messages", {"model": "gpt-4.1", "max_tokens": 5, "messages": USER,
                                       "mcp_servers": [{"url": "https://x.example"}]}, 403, "mcp_servers"),
        ("gemini", gemini_path, {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                                 "tools": [{"googleSearch": {}}]}, 403, "googleSearch"),
    ]
    for kind, path, body, status, why in refused:
        with gateway_on(server, kind=kind, models={"agent": ["gpt-4.1", "gemini-3-flash-preview"]}) as gateway:
            token = gateway.issue_token("agent", role="agent", task="t1")
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            answer = httpx.post(gateway.url_for("agent") + path, content=raw, timeout=60, headers={
                "Authorization": f"Bearer {token}", "x-api-key": token, "x-goog-api-key": token,
                "Content-Type": "application/json"})
            record, = gateway.calls()
            usage = gateway.usage(task="t1")
        assert answer.status_code == status, (path, answer.text)
        assert record["status"] == status and why in record["error"] and record["task"] == "t1", record
        assert (record["input_tokens"], record["output_tokens"], record["cost_usd"]) == (0, 0, 0.0)
        assert usage["calls"] == 1 and usage["cost_usd"] == 0 and gateway.last_status(token) == status
        assert gateway.conversation(token) == []  # what was refused is never kept as the run's trajectory
    assert server.requests == []


def test_a_refused_calls_record_names_the_model_it_asked_for_when_that_is_a_string(server):
    with gateway_on(server, models={"agent": ["gpt-4.1"]}) as gateway:
        token = gateway.issue_token("agent", role="agent")
        post(gateway, "/chat/completions", token, {"model": "o1-pro", "messages": USER})
        post(gateway, "/chat/completions", token, {"model": {"id": "gpt-4.1"}, "messages": USER})
        named, malformed = gateway.calls()
    assert (named["model"], named["status"], malformed["model"], malformed["status"]) == ("o1-pro", 403, None, 400)
