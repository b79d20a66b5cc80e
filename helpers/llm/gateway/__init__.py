"""The model gateway: one loopback proxy in front of every model, so no client ever holds a provider key.

    upstreams = {"openai": Upstream("https://api.openai.com/v1", key, "openai")}
    with Gateway(upstreams, budget_usd=20) as gateway:
        token = gateway.issue_token("openai", experiment="lite", split="train", loop=0, task="t1", role="agent")
        client = OpenAI(base_url=gateway.url_for("openai"), api_key=token)   # http://127.0.0.1:P/u/openai/v1
        ...
        gateway.usage(experiment="lite", role="agent")     # {"calls", "input_tokens", "cached_tokens", "output_tokens", "cost_usd"}
        gateway.last_status(token)                          # 200, 429, 502, "budget", ... or None

- URLs: `url_for(name)` is the upstream's base URL with its origin swapped for
  `http://127.0.0.1:<port>/u/<name>`, and `/u/<name><path>` is forwarded to `<origin><path>` for the model
  endpoints only (policy.py: chat completions, Responses, Anthropic messages, the model list, and Gemini's
  `/v1beta/models/<model>:generateContent`, `:streamGenerateContent`, `:countTokens` and GET
  `/v1beta/models` (`/v1/` likewise); on the decoded path, tricky paths refused; `models` per upstream, or a
  token's own (`issue_token(models=)`), limits the model ids, a Gemini call's taken from its path; under a
  budget only priced models pass). So
  an OpenAI-style client takes `url_for` as its base URL (".../v1"), an Anthropic client takes it as
  ANTHROPIC_BASE_URL (Anthropic's base URL has no /v1), a client of Anthropic's API that posts
  `{baseUrl}/messages`, takes `url_for(name) + "/v1"`, and a Gemini client (google-genai's
  `HttpOptions(base_url=...)`, GOOGLE_GEMINI_BASE_URL) takes `url_for(name)` (its paths carry the API
  version). Anything else gets a 403 saying why, in Google's error shape for a Gemini client.
- A Gemini client in front of a chat-completions server (kind "gemini-to-openai", gemini_to_openai.py): its
  Gemini calls are screened as they came, then carried to `<base_url>/chat/completions` and the answers back in
  Gemini's shape (streamed as its `alt=sse` chunks, errors in Google's shape); countTokens is answered here,
  offline, and GET `/v1beta/models` from the server's `/models`; every rule below holds on this path too.
- Keys: a client sends its token as `Authorization: Bearer <token>`, `x-api-key: <token>`,
  `x-goog-api-key: <token>` or (Gemini) the query parameter `key=<token>`; the gateway drops every
  credential header the client sent and the `key=` parameter, and adds the real key the way the upstream
  expects it (Bearer for "openai", "openai-compatible" and "gemini-to-openai", x-api-key for "anthropic", x-goog-api-key for "gemini"). Unknown tokens get 401. The
  key is in no repr, log, record or error, and is scrubbed from non-streaming answers.
- Streaming: an SSE answer is written to the client as it arrives, whole events only (those that arrived
  together in one write);
  any other answer is passed on whole. Status codes and end-to-end headers are kept (the upstream is asked
  for `Accept-Encoding: identity` so the gateway can read usage).
- A misbehaving model server (relay.py): a stream that ends without its end marker or breaks off, an event
  that is not JSON, or nothing for `idle_timeout_s` (a call longer than `call_timeout_s` likewise) ends the
  client's stream cleanly after what was valid, with an error event its SDK raises, in its own wire format
  (chat completions `data: {"error": ...}` then `[DONE]`; Anthropic `event: error` of type api_error;
  Responses `response.failed`; Gemini `data: {"error": {"code": 502, "message", "status"}}`, which has no
  end marker: its stream is complete once a chunk carried a finishReason), saying what happened ("the model server ended the stream early after 3
  chunks"). Before any byte went to the client, the same faults, a cut answer or a 2xx body that is not
  JSON are retried, and after the last retry answered with a JSON 502 (504 for a timeout). The record's
  status is 502 or 504 (`is_transient`). Each fault is logged as one line on the "helpers.llm.gateway"
  logger, never a traceback. A client that leaves has its handler cancelled and its upstream connection
  closed at once, so the model server stops generating (one INFO line; the record's error "client
  disconnected"). A model server's own error event mid-stream (Anthropic's overloaded_error, a chat
  `{"error": ...}`, Responses `response.failed`) is relayed as it came, and the record takes the status a
  whole answer would have had (529 overloaded, 429 rate limit, 500 server error, else 502), so it counts
  as transient where a retry may succeed.
- Rate limits: at most `concurrency` requests in flight per upstream, for all clients together. A 429 or
  5xx (or a dropped connection, or a fault above) is retried by the one policy (helpers.llm.retries,
  tenacity) up to `max_retries` times, but only before any byte went to the client, waiting what
  Retry-After asks (an ask above `max_retry_after_s` is passed on at once) or a jittered exponential
  backoff. A 429/503/529 or any
  Retry-After pauses the whole upstream pool (a shared "not before" time), so a storm slows everyone
  instead of every client hammering on its own. After the last retry the last error is passed on as it
  came, marked `x-gateway-retries: <n>` and `x-should-retry: false` (which the OpenAI and Anthropic SDKs
  honour) so that no client retries it again: one failing call reaches the
  upstream at most 1 + max_retries times end to end.
- Metering: one record per call (`calls()`), with the token's attributes, tokens from the upstream's usage
  (JSON body, the final SSE usage chunk, Anthropic message_start/message_delta, Responses
  response.completed, Gemini usageMetadata: thinking tokens counted as output), cost from
  helpers.llm.pricing (None: unpriced or no usage reported; the model list, token counts (Anthropic's
  count_tokens, Gemini's countTokens) and failed calls cost 0), latency and retries. A call the gateway refuses
  (400, 403: what it asks is not forwarded) is recorded too, with the status its client got and why, at no cost. Cached input tokens
  are priced at the cache-read rate (see pricing.py).
- What a call may ask (allowlist.py and content_parts.py, docs/security.md): per wire format, the top-level fields the product's
  roles send, client-run function tools only (Cline's Anthropic `web_search_20250305` is removed and noted in
  the record's `changed`), no content the provider would fetch or read from its own store, the output capped at
  the token's role's `GATEWAY_OUTPUT_TOKENS`, or the model server's own limit `PL_MAX_OUTPUT_TOKENS` when lower
  (every cap field it names; set where it names none); anything else
  a 403 naming the field (a `model` that is not a string: 400). Query parameters outside `QUERY` are dropped. What is forwarded is the gateway's own serialisation of what it checked. Client headers outside an
  allow-list are dropped (`anthropic-beta` keeps the betas the CLIs send).
- Caps (intake.py): a body over GATEWAY_MAX_REQUEST_BYTES gets 413 before it is read, one slower than
  GATEWAY_BODY_TIMEOUT_S 408; the request bytes all calls hold at once, open connections (503) and one token's
  calls at once (429) are capped; idle connections are closed.
- Budget (budget.py): each call reserves its worst case (its input's bytes and its output cap, priced) before it
  is forwarded and settles at its metered cost; one that fits once calls under way settle waits for them, one
  that cannot fit gets 429 with a JSON error and the header `x-gateway-budget: spent`; its record says status
  "budget". A call whose worst case is more than the whole budget (it could never go) is the caller's own
  error: 413 "call_exceeds_budget", its record's status 413, never the spent budget's. It also says not to wait and ask again (`x-should-retry: false`, `retry-after-ms: 0`). So calls at
  once cannot pass the budget (within what a provider counts beyond the bound: docs/security.md).
- Prompt cache: each record's `cached_tokens` is the part of its input the provider read from its prompt
  cache, as the answer reports it (metering.py), and `usage()` sums it; None when the answer does not say.
- Traces: `trace(payload)` is called (in a worker thread) for every finished call, with the record plus
  the request and response cut to `trace_chars`; `phoenix_tracer(endpoint, project)` makes one that sends
  OpenInference LLM spans to Phoenix.
"""

from helpers.llm.gateway.metering import input_messages
from helpers.llm.gateway.policy import is_transient
from helpers.llm.gateway.budget import BUDGET_HEADER
from helpers.llm.gateway.proxy import Gateway, Upstream
from helpers.llm.gateway.tracing import PhoenixTracer, phoenix_tracer, span_attributes

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "Gateway",
    "Upstream",
    "is_transient",
    "phoenix_tracer",
    "PhoenixTracer",
    "span_attributes",
    "input_messages",
    "BUDGET_HEADER",
]
