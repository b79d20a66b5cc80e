"""The scripted model server speaks Google's Gemini API (generativelanguage, v1beta) from the same Script.

The wire shapes are checked with plain HTTP here, and with the official google-genai SDK (as a client of the
gateway) in test_gateway_gemini.py. What this stand-in cannot prove about Google's own server: that its
answers carry exactly these fields (Google adds more: safetyRatings, citationMetadata, thought signatures),
that it streams the same way (it may split text and send usageMetadata on every chunk), or that its
error statuses and Retry-After come as scripted here.
"""

import json

import httpx
import pytest

from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, normalize_request, tool_names

MODEL = "gemini-2.5-flash"


def post(server, method: str, body: dict, model: str = MODEL, query: str = "") -> httpx.Response:
    return httpx.post(f"{server.origin}/v1beta/models/{model}:{method}{query}", json=body, timeout=10)


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"text": text}]}


def data_events(response: httpx.Response) -> list[dict]:
    """The JSON payloads of an SSE body (Gemini sends `data:` lines only)."""
    return [json.loads(block.removeprefix("data: ")) for block in response.text.strip().split("\n\n")]


def test_a_whole_answer_has_text_and_function_call_parts_finish_reason_usage_and_model_version(server):
    answer = post(server, "generateContent", {"contents": [user("please use a tool")]}).json()
    candidate = answer["candidates"][0]
    assert candidate["content"]["role"] == "model"
    assert candidate["content"]["parts"] == [
        {"text": "Editing now."},
        {"functionCall": {"name": "editor", "args": {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}}}]
    assert candidate["finishReason"] == "STOP"
    usage = answer["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"] > 0
    assert answer["modelVersion"] == MODEL  # the model of a Gemini request is in its path


def test_a_stream_is_data_events_the_last_with_finish_reason_and_usage_and_no_done_marker(server):
    response = post(server, "streamGenerateContent", {"contents": [user("please use a tool")]}, query="?alt=sse")
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "[DONE]" not in response.text and "event:" not in response.text
    chunks = data_events(response)
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Editing now."
    assert [p["functionCall"]["name"] for p in parts if "functionCall" in p] == ["editor"]
    assert [c["candidates"][0].get("finishReason") for c in chunks][-1] == "STOP"
    assert all("finishReason" not in c["candidates"][0] and "usageMetadata" not in c for c in chunks[:-1])
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] > 0


def test_rules_read_the_system_instruction_and_the_turns_of_contents(server):
    system = {"parts": [{"text": "# Rules\nALWAYS-WRITE-CHANGELOG"}]}
    seen = post(server, "generateContent", {"systemInstruction": system, "contents": [user("hi")]}).json()
    assert seen["candidates"][0]["content"]["parts"] == [{"text": "rules seen"}]
    second_turn = [user("use a tool"),
                   {"role": "model", "parts": [{"functionCall": {"name": "editor", "args": {"path": "a.py"}}}]},
                   {"role": "user", "parts": [{"functionResponse": {"name": "editor", "response": {"ok": True}}}]}]
    done = post(server, "generateContent", {"contents": second_turn}).json()
    assert done["candidates"][0]["content"]["parts"] == [{"text": "Done."}]


def test_a_gemini_request_normalises_to_the_chat_shape_rules_read():
    body = {"systemInstruction": {"parts": [{"text": "be brief"}]},
            "contents": [user("fix it"),
                         {"role": "model", "parts": [{"text": "Looking."}, {"functionCall": {"name": "read", "args": {"p": 1}}}]},
                         {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {"text": "x"}}}]}],
            "tools": [{"functionDeclarations": [{"name": "read"}, {"name": "edit"}]}]}
    request = normalize_request("gemini", body, f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse")
    assert (request["model"], request["stream"]) == (MODEL, True)
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant", "tool"]
    assert request["messages"][2]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"p": 1}'}
    assert json.loads(request["messages"][3]["content"]) == {"text": "x"}
    assert tool_names(request) == ["read", "edit"]


def test_an_error_is_in_googles_shape_with_retry_after():
    script = Script([Rule(reply=Reply(status=429, retry_after=2, error_message="quota"), times=1)])
    with ScriptedModelServer(script) as server:
        limited = post(server, "generateContent", {"contents": [user("hi")]})
        after = post(server, "generateContent", {"contents": [user("hi")]})
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json() == {"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}}
    assert after.status_code == 200


def test_count_tokens_and_the_model_list_in_geminis_shape(server):
    counted = post(server, "countTokens", {"contents": [user("hello there")]}).json()
    assert counted["totalTokens"] > 0
    listed = httpx.get(f"{server.origin}/v1beta/models", timeout=10).json()
    assert [m["name"] for m in listed["models"]] == [f"models/{server.model}"]


def test_a_broken_stream_ends_early_without_the_finishing_chunk():
    script = Script(default=Reply("x" * 300, fault="end_early", fault_after=2))
    with ScriptedModelServer(script) as server:
        with pytest.raises(httpx.HTTPError):
            post(server, "streamGenerateContent", {"contents": [user("hi")]}, query="?alt=sse")
    assert server.requests[0]["written"] == 2


def test_its_records_keep_the_headers_a_request_came_with(server):
    httpx.post(f"{server.origin}/v1beta/models/{MODEL}:generateContent", json={"contents": [user("hi")]},
               headers={"x-goog-api-key": "client-key"}, timeout=10)
    assert server.requests[-1]["headers"]["x-goog-api-key"] == "client-key"
    assert server.model_requests("gemini")[-1]["model"] == MODEL
