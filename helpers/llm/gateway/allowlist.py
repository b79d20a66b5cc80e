"""What a model call may ask of the provider: an allow-list per wire format, as data, of what the product's own
roles send (docs/security.md, "The gateway forwards only what the roles send").

A request is screened once, parsed once, before anything goes upstream:
- its top-level fields: each must be one FIELDS names for its wire format, with a value that passes (e.g. `store`
  only false, `n` only 1, `background` only false); any other field is refused, named (a provider's server-side
  state and services: `previous_response_id`, `conversation`, `prompt`, `mcp_servers`, `container`,
  `web_search_options`, `cachedContent`, ...);
- its tools: each must be a function the client runs itself (TOOL_TYPES); a server-side tool (web search or
  fetch, MCP, code execution, file search, computer use, image generation, a Gemini googleSearch, urlContext or
  codeExecution tool) is refused, named, unless STRIPPED names it: a tool a product CLI always offers (Cline on
  Anthropic offers `web_search_20250305`), which is removed from the forwarded request and noted;
- its `tool_choice` may name only a client function or a mode;
- its content may not point the provider at anything to fetch: an image or file by URL or by a provider file id
  (only inline data passes), a Gemini `fileData`, a Responses `item_reference`; every content part type is one
  PART_TYPES names (content_parts.py, which walks the conversation);
- its output is capped: the request's own output cap, clamped to the token's (or set when it names none), so
  each call's worst case is known before it is forwarded (budget.py).
What is forwarded is the gateway's own serialisation of what it checked (so no duplicate key or other parser
difference can show the provider something else). Client headers pass only when HEADERS names them; an
`anthropic-beta` header keeps only the ANTHROPIC_BETAS values (the betas the product's CLIs send).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import (
    parse_qsl,
    urlencode,
)  # here, not per call: each `from urllib.parse import` raises and catches an AttributeError

from helpers.llm.gateway.content_parts import ANY, ambiguous, screen_content, unpassed

# Per wire format: the top-level fields that pass, each with ANY or a tuple of the values that pass.
_SAMPLING = {
    name: ANY
    for name in (
        "temperature",
        "top_p",
        "top_k",
        "stop",
        "seed",
        "metadata",
        "user",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
    )
}
FIELDS: dict[str, dict[str, Any]] = {
    "chat": {
        **_SAMPLING,
        "model": ANY,
        "messages": ANY,
        "tools": ANY,
        "tool_choice": ANY,
        "stream": ANY,
        "stream_options": ANY,
        "max_tokens": ANY,
        "max_completion_tokens": ANY,
        "parallel_tool_calls": ANY,
        "response_format": ANY,
        "reasoning_effort": ANY,
        "verbosity": ANY,
        "frequency_penalty": ANY,
        "presence_penalty": ANY,
        "logit_bias": ANY,
        "logprobs": ANY,
        "top_logprobs": ANY,
        "functions": ANY,
        "function_call": ANY,
        "n": (1,),
        "store": (False,),
        "modalities": (["text"],),
        "service_tier": ("auto", "default", "flex"),
    },
    "responses": {
        **_SAMPLING,
        "model": ANY,
        "input": ANY,
        "instructions": ANY,
        "tools": ANY,
        "tool_choice": ANY,
        "stream": ANY,
        "stream_options": ANY,
        "max_output_tokens": ANY,
        "max_tool_calls": ANY,
        "parallel_tool_calls": ANY,
        "reasoning": ANY,
        "text": ANY,
        "truncation": ANY,
        "include": ANY,
        "top_logprobs": ANY,
        "client_metadata": ANY,
        "store": (False,),
        "background": (False,),
        "service_tier": ("auto", "default", "flex"),
    },
    "anthropic": {
        **_SAMPLING,
        "model": ANY,
        "messages": ANY,
        "system": ANY,
        "tools": ANY,
        "tool_choice": ANY,
        "stream": ANY,
        "max_tokens": ANY,
        "stop_sequences": ANY,
        "thinking": ANY,
        "context_management": ANY,
        "output_config": ANY,
        "output_format": ANY,
        "service_tier": ("auto", "standard_only"),
    },
    # Google's JSON takes both spellings of every field
    "gemini": {
        name: ANY
        for name in (
            "contents",
            "tools",
            "toolConfig",
            "tool_config",
            "systemInstruction",
            "system_instruction",
            "generationConfig",
            "generation_config",
            "safetySettings",
            "safety_settings",
        )
    },
}
# Per wire format: the tool types the client runs itself (Anthropic's custom tools carry no type; a Gemini tool is
# an object keyed by its kind).
TOOL_TYPES: dict[str, set[Any]] = {
    "chat": {"function", "custom"},
    "responses": {"function", "custom"},
    "anthropic": {None, "custom"},
    "gemini": {"functionDeclarations", "function_declarations"},
}
# Server-side tools a product CLI always offers: removed from what is forwarded (noted in the call's record), so
# the CLI still runs and the provider never runs them. (wire format, type, name)
STRIPPED = {("anthropic", "web_search_20250305", "web_search")}  # Cline 3's Anthropic provider, on every call
# tool_choice: the modes, and the types that name a client function
CHOICE_MODES = {"auto", "none", "required", "any", "tool", "function", "custom", "allowed_tools"}
HEADERS = {"content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta", "x-goog-api-client"}
HEADER_PREFIXES = ("x-stainless-",)  # the OpenAI and Anthropic SDKs' own description of themselves
ANTHROPIC_BETAS = {  # what Claude Code 2.1 and Cline 3 send; a server-side tool's beta is none of them
    "claude-code-20250219",
    "interleaved-thinking-2025-05-14",
    "context-management-2025-06-27",
    "thinking-token-count-2026-05-13",
    "advanced-tool-use-2025-11-20",
    "thinking-display-updates-2026-08-18",
    "structured-outputs-2025-11-13",
    "fine-grained-tool-streaming-2025-05-14",
    "token-efficient-tools-2025-02-19",
    "prompt-caching-2024-07-31",
}
# The output cap's fields, by wire format: each one a request names is clamped, and the call is reserved at the
# largest forwarded; one that names none is given the first (chat: by model, as helpers.llm.client names it)
CAP_FIELDS = {
    "chat": ("max_tokens", "max_completion_tokens"),
    "responses": ("max_output_tokens",),
    "anthropic": ("max_tokens",),
    "gemini": ("maxOutputTokens", "max_output_tokens"),
}
# Query parameters that pass, by wire format: what the product's clients send (Gemini's stream format, the
# Anthropic SDK's `beta=true`); every other one is dropped and noted (`$fields` or `alt=proto` would change the
# answer the meter reads). The token's own `key=` is never forwarded.
QUERY = {"gemini": {("alt", "sse")}, "anthropic": {("beta", "true")}}


@dataclass
class Screened:
    """A request that may go upstream: its body as forwarded, its output cap, its media parts, what was changed."""

    body: dict[str, Any]
    output_tokens: int
    media_parts: int = 0
    changes: list[str] = field(default_factory=list)


def screen(api: str, body: dict[str, Any], cap: int, model: Any, counts: bool = False) -> Screened | str:
    """`body` as the gateway forwards it, or why it is refused (the field named). `cap`: the token's output cap;
    `counts`: a token count (Anthropic's count_tokens, Gemini's countTokens), which generates nothing."""
    fields = {**FIELDS[api], "generateContentRequest": ANY} if counts and api == "gemini" else FIELDS[api]
    found = unpassed(body, fields)
    if found is not None:
        name, value, named = found
        if not named:
            return f"the field {name!r} is not one the gateway forwards on the {api} API"
        return f"{name}={value!r} is not forwarded (allowed: {', '.join(map(repr, fields[name]))})"
    if isinstance(body.get("generateContentRequest"), dict):  # Gemini's countTokens of a whole request
        inner = screen(api, {k: v for k, v in body["generateContentRequest"].items() if k != "model"}, cap, model, True)
        if isinstance(inner, str):
            return f"generateContentRequest: {inner}"
    config = body.get("generationConfig", body.get("generation_config"))
    why = ambiguous(api, body) if api == "gemini" else None
    why = why or (ambiguous(api, config) if api == "gemini" and isinstance(config, dict) else None)
    if why:
        return why
    screened = Screened(dict(body), cap)
    why = _tools(api, screened) or _tool_choice(api, screened.body)
    if not why:
        why, screened.media_parts = screen_content(api, screened.body)
    if why or counts:
        return why or screened
    _cap(api, screened, cap, str(model or ""))
    options = found if isinstance(found := body.get("stream_options"), dict) else {}
    if api == "chat" and body.get("stream") and not options.get("include_usage"):
        screened.body["stream_options"] = {**options, "include_usage": True}  # so every call is metered
    return screened


def _tools(api: str, screened: Screened) -> str | None:
    tools = screened.body.get("tools")
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "`tools` is not a list"
    kept = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tools[{i}] is not an object"
        if ambiguous(api, tool):
            return f"tools[{i}] is {ambiguous(api, tool)}"
        if api == "gemini":
            kinds = set(tool) - TOOL_TYPES[api]
            if kinds:
                return f"tools[{i}] is a server-side tool ({', '.join(sorted(kinds))}): only functionDeclarations pass"
        elif (api, tool.get("type"), tool.get("name")) in STRIPPED:
            screened.changes.append(f"the server-side tool {tool.get('type')} {tool.get('name')!r} removed")
            continue
        elif tool.get("type") not in TOOL_TYPES[api]:
            return f"tools[{i}] is a server-side tool (type {tool.get('type')!r}): only functions the client runs pass"
        kept.append(tool)
    if len(kept) != len(tools):
        if kept:
            screened.body["tools"] = kept
        else:  # no tools left: a tool_choice would have nothing to name
            screened.body.pop("tools")
            screened.body.pop("tool_choice", None)
    return None


def _tool_choice(api: str, body: dict[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if choice is None or (isinstance(choice, str) and choice in CHOICE_MODES):
        return None
    if not isinstance(choice, dict) or choice.get("type") not in CHOICE_MODES:
        return f"tool_choice {choice!r} names no client function"
    if api == "anthropic" and choice.get("type") == "tool":
        names = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        if choice.get("name") not in names:
            return f"tool_choice names {choice.get('name')!r}, which is not a client function of this request"
    nested = (
        (choice.get("allowed_tools") or {}).get("tools")
        if isinstance(choice.get("allowed_tools"), dict)
        else choice.get("tools")
    )
    for tool in nested or []:
        if not isinstance(tool, dict) or tool.get("type") not in TOOL_TYPES[api]:
            return f"tool_choice allows a server-side tool ({tool!r})"
    return None


def _cap(api: str, screened: Screened, cap: int, model: str) -> None:
    """Clamps every output cap the request names to `cap` (or sets one where it names none); the call is reserved
    at the largest forwarded, so naming a small cap beside a large one cannot lower its reservation."""
    from helpers.llm.client import REASONING_MODELS

    body = screened.body
    if api == "gemini":
        key = (
            "generationConfig" if "generationConfig" in body or "generation_config" not in body else "generation_config"
        )
        config = dict(body.get(key) or {})
        body[key] = config
        target = config
    else:
        target = body
    names = CAP_FIELDS[api]
    if api == "chat" and model.startswith(REASONING_MODELS):
        names = names[::-1]  # a reasoning model takes max_completion_tokens only
    present = [name for name in names if name in target]
    for name in present:
        asked = target[name]
        if not isinstance(asked, int) or isinstance(asked, bool) or asked > cap or asked < 1:
            screened.changes.append(f"{name} {asked!r} capped at {cap}")
            target[name] = cap
    if not present:
        target[names[0]] = cap
        screened.changes.append(f"{names[0]} set to {cap}")
    screened.output_tokens = max(target[name] for name in names if name in target)
    if api == "gemini":
        for name in ("candidateCount", "candidate_count"):
            if config.get(name, 1) != 1:
                config[name] = 1
                screened.changes.append(f"{name} set to 1")


def forwarded_query(api: str, path: str, query: str) -> tuple[str, list[str]]:
    """The query string that goes upstream (the pairs QUERY names for `api`; Gemini's `alt=sse` only on
    :streamGenerateContent) and the names of the parameters dropped (`key`, the token, is dropped unnamed)."""
    if not query:
        return "", []
    allowed = QUERY.get(api, set())
    if api == "gemini" and not path.endswith(":streamGenerateContent"):
        allowed = set()
    pairs = parse_qsl(query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if (k, v) in allowed]
    return urlencode(kept), [k for k, v in pairs if (k, v) not in allowed and k != "key"]


def forwarded_headers(headers: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The client headers that go upstream (HEADERS, HEADER_PREFIXES, anthropic-beta values in ANTHROPIC_BETAS)
    and the names of those dropped."""
    kept, dropped = {}, []
    for name, value in headers.items():
        lower = name.lower()
        if lower == "anthropic-beta":
            betas = [b.strip() for b in value.split(",") if b.strip()]
            allowed = [b for b in betas if b in ANTHROPIC_BETAS]
            dropped += [f"anthropic-beta {b}" for b in betas if b not in ANTHROPIC_BETAS]
            if allowed:
                kept[name] = ",".join(allowed)
        elif lower in HEADERS or lower.startswith(HEADER_PREFIXES):
            kept[name] = value
        else:
            dropped.append(lower)
    return kept, dropped


__all__ = [
    "Screened",
    "screen",
    "forwarded_headers",
    "forwarded_query",
    "QUERY",
    "FIELDS",
    "TOOL_TYPES",
    "STRIPPED",
    "HEADERS",
    "ANTHROPIC_BETAS",
]  # documented in CODE_APPENDIX.md
