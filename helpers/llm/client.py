"""One LLM client for the judge and the optimizer, over the official OpenAI SDK.

- Settings: model, key and base URL from arguments, else OPENAI_API_KEY / OPENAI_BASE_URL (or
  ANTHROPIC_API_KEY for Claude models) from the environment or `.env`, read when the first request is
  made, never stored on disk or printed.
- Retries (helpers.llm.retries, the one policy): 408, 409, 429, 5xx, timeouts and dropped connections
  are retried up to `max_retries` times with exponential backoff (at most `max_backoff_s` a wait),
  waiting what the server's Retry-After asks for when it says, up to config.LLM_MAX_RETRY_AFTER_S; a
  longer ask fails at once, saying what the server asked. An answer the gateway already retried is not
  retried again. Other 4xx answers raise LLMError at once (retrying a bad key or a bad request only
  burns quota).
- Every LLMError says whether it is `transient` (rate limit, overload, outage, timeout, dropped
  connection, spent budget: a later rerun may succeed), decided by the SDK's exception type and HTTP
  status code, never by the message's wording.
- A 200 answer that is not what the API promises (no choices, as another API's body or an error would
  be; a message without content) raises LLMError naming what was wrong (not transient): a failure of
  that call, which the judge and the optimizer count with its reason, never a crash further down.
- A concurrency cap, token usage and cost per call and in total, and a budget in dollars: once spent,
  complete() raises BudgetExceeded before sending anything (calls already in flight may finish).
- An on-disk response cache keyed by the canonical request (model, messages, parameters), on by
  default: re-running a notebook with the same inputs makes no new requests. Only answers the caller
  could use are cached: after parsing an answer, the caller calls `remember(completion)`; an answer
  nobody remembered (malformed, unusable) is asked for again on the next run, never replayed.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from helpers.core import config
from helpers.core.protocols import Completion
from helpers.llm.pricing import Prices, call_cost_usd, is_priced
from helpers.llm.retries import GATEWAY_RETRIES_HEADER, TryAgain, is_retryable, policy, retry_after_s
from helpers.store.records import write_json


class LLMError(RuntimeError):
    """A request failed for good (bad key, bad request, or retries exhausted).

    `transient` is True when a later rerun may succeed (429, 5xx, timeouts, dropped connections, a
    spent budget); `status_code` is the HTTP status of the last answer (None when there was none).
    """

    def __init__(self, message: str, *, transient: bool = False, status_code: int | None = None):
        super().__init__(message)
        self.transient = transient
        self.status_code = status_code


class BudgetExceeded(LLMError):
    """The client's dollar budget is spent; no further requests are sent (transient: raise the
    budget and rerun)."""

    def __init__(self, message: str):
        super().__init__(message, transient=True)


class LLMClient:
    """Thread-safe chat-completion client with retries, a budget, cost accounting and a cache."""

    def __init__(
        self,
        model: str = config.JUDGE_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_concurrency: int = config.LLM_MAX_CONCURRENCY,
        max_retries: int = config.LLM_MAX_RETRIES,
        budget_usd: float | None = None,
        cache: bool = True,
        cache_dir: Path | str | None = None,
        prices: Prices | None = None,
        timeout_s: float = config.LLM_REQUEST_TIMEOUT_S,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
    ):
        self.model = model
        self._api_key, self._base_url = api_key, base_url
        self.max_retries = max_retries
        self.budget_usd = budget_usd
        self.cache_dir = Path(cache_dir) if cache_dir else config.cache_root() / "llm"
        self.use_cache = cache
        self.prices = prices
        self.timeout_s = timeout_s
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self._sleep = time.sleep  # how retries wait (a test may record the waits instead)
        self._slots = threading.BoundedSemaphore(max_concurrency)
        self._lock = threading.Lock()
        self._sdk: Any = None
        self.calls = 0  # requests answered by the provider
        self.cached_calls = 0  # answers taken from the cache
        self.retries = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.total_cost_usd = 0.0  # of the priced answers
        self.unpriced_calls = 0  # answers whose served model has no price (their cost is not guessed)

    def __repr__(self) -> str:  # never shows the key
        return f"LLMClient(model={self.model!r}, calls={self.calls}, cost=${self.total_cost_usd:.4f})"

    @property
    def dry_run(self) -> bool:
        """True when this client talks to the scripted model server."""
        return self.model == config.SCRIPTED_MODEL

    @property
    def unpriced(self) -> bool:
        """Whether some answer had no price (by the model that served it); before any call, by the model asked."""
        return self.unpriced_calls > 0 or (self.calls == 0 and not is_priced(self.model, self.prices))

    # --- the public calls ---
    def complete(self, messages: Sequence[Mapping[str, Any]], **params: Any) -> Completion:
        """Answer `messages` (OpenAI chat format); params go to the API (temperature, max_tokens...).

        A remembered answer to the same request comes from the cache (`cached` True, cost 0). The
        answer's cache key is in `completion.raw["cache_key"]`, for remember(). Raises LLMError
        (see its `transient`), BudgetExceeded before sending when the budget is spent.
        """
        request = {"model": self.model, "messages": [dict(m) for m in messages], **output_cap(self.model, params)}
        key = cache_key(request)
        if self.use_cache:
            hit = self._cache_get(key)
            if hit is not None:
                with self._lock:
                    self.cached_calls += 1
                return hit
        self._check_budget()
        with self._slots:
            self._check_budget()
            response = self._send_with_retries(request)
        completion = self._to_completion(response, key)
        with self._lock:
            self.calls += 1
            self.input_tokens += completion.input_tokens
            self.output_tokens += completion.output_tokens
            self.total_cost_usd += completion.cost_usd or 0.0
            self.unpriced_calls += completion.cost_usd is None
        return completion

    def remember(self, completion: Completion) -> None:
        """Cache an answer of complete() that the caller could use, so a rerun replays it.

        Call it after parsing succeeded, never for an answer that was malformed or unusable (that
        one is asked for again next time). No-op with the cache off or for an answer from the cache.
        """
        key = completion.raw.get("cache_key")
        if self.use_cache and key and not completion.cached:
            self._cache_put(key, completion)

    def usage_summary(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "retries": self.retries,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.total_cost_usd, 6),
            "unpriced": self.unpriced,
            "budget_usd": self.budget_usd,
            "dry_run": self.dry_run,
        }

    # --- internals ---
    def _check_budget(self) -> None:
        if self.budget_usd is not None and self.total_cost_usd >= self.budget_usd:
            raise BudgetExceeded(
                f"The budget of ${self.budget_usd:.2f} for {self.model} is spent "
                f"(${self.total_cost_usd:.4f} over {self.calls} calls). Raise budget_usd to go on; "
                "results so far are kept."
            )

    def _sdk_client(self) -> Any:
        if self._sdk is None:
            from openai import OpenAI

            settings = config.llm_settings(self.model, self._api_key, self._base_url)
            base_url = settings.base_url
            if settings.provider == "anthropic":
                base_url = config.anthropic_openai_url()
            elif settings.provider == "gemini":
                base_url = config.gemini_openai_url()
            # Retries are ours (Retry-After, counting); the SDK's own are off.
            self._sdk = OpenAI(api_key=settings.require_key(), base_url=base_url, max_retries=0, timeout=self.timeout_s)
        return self._sdk

    def _send_with_retries(self, request: dict[str, Any]) -> Any:
        """The SDK's answer, retried by the one policy (helpers.llm.retries) unless the gateway already
        retried it: one failing call reaches the provider at most 1 + max_retries times end to end."""
        from tenacity import Retrying

        attempts = Retrying(**policy(self.max_retries, self.backoff_s, self.max_backoff_s, sleep=self._sleep))
        try:
            for attempt in attempts:
                with attempt:
                    if attempt.retry_state.attempt_number > 1:
                        with self._lock:
                            self.retries += 1
                    return self._send_once(request, attempt.retry_state.attempt_number - 1)
        except TryAgain as exhausted:
            raise exhausted.cause from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _send_once(self, request: dict[str, Any], attempt: int) -> Any:
        """One request; TryAgain (carrying the LLMError to raise if no retry is left) for a transient failure."""
        import openai

        try:
            return self._sdk_client().chat.completions.create(**request)
        except openai.APIStatusError as error:
            status, headers = error.status_code, (error.response.headers if error.response is not None else {})
            if headers.get("x-gateway-budget") == "spent":
                raise BudgetExceeded(f"The model gateway's budget is spent: {error.message}") from None
            transient = is_retryable(status)
            failure = LLMError(_describe(error, self.model, attempt), transient=transient, status_code=status)
            if not transient or headers.get(GATEWAY_RETRIES_HEADER) is not None:
                raise failure from None  # a request error, or the gateway already retried it
            asked, limit = retry_after_s(headers), config.LLM_MAX_RETRY_AFTER_S
            if asked is not None and asked > limit:
                raise LLMError(
                    f"{_describe(error, self.model, attempt)} The server asked to wait "
                    f"(Retry-After: {asked:g} s), longer than LLM_MAX_RETRY_AFTER_S={limit:g} s; "
                    "run again later.",
                    transient=True,
                    status_code=status,
                ) from None
            raise TryAgain(asked, failure) from None
        except (openai.APIConnectionError, openai.APITimeoutError) as error:  # timeouts included
            raise TryAgain(None, LLMError(_describe(error, self.model, attempt), transient=True)) from None

    def _to_completion(self, response: Any, key: str) -> Completion:
        problem = not_a_completion(response)
        if problem:  # a failure of this call, named; never a TypeError further down
            raise LLMError(
                f"LLM request to {self.model} failed: the server answered 200, but {problem}. Check that "
                "its base URL serves OpenAI-compatible /v1/chat/completions.",
                status_code=200,
            )
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        input_tokens = getattr(usage, "prompt_tokens", 0) or 0
        output_tokens = getattr(usage, "completion_tokens", 0) or 0
        served = (
            getattr(response, "model", None) or self.model
        )  # priced by the model that answered, as the gateway does
        return Completion(
            text=choice.message.content or "",
            model=served,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=call_cost_usd(served, input_tokens, output_tokens, self.prices),
            raw={"finish_reason": choice.finish_reason, "cache_key": key},
        )

    def _cache_path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def _cache_get(self, key: str) -> Completion | None:
        path = self._cache_path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        # Entries written before answers had to be remembered may hold malformed answers: skip them.
        if not isinstance(data, dict) or data.pop("remembered", False) is not True:
            return None
        return Completion(**{**data, "cached": True, "cost_usd": 0.0})

    def _cache_put(self, key: str, completion: Completion) -> None:
        data = {k: v for k, v in vars(completion).items() if k != "cached"}
        write_json(self._cache_path(key), {**data, "remembered": True})


def not_a_completion(response: Any) -> str | None:
    """Why `response` (the SDK's reading of a 200 answer) is not the chat completion its API promises, in
    words, or None when it is one: no choices (another API's body, or an error in a 200), a choice without
    a message, or a message with neither text nor tool calls (unless it was cut at its length limit, which
    callers name themselves: cut_at_length)."""
    choices = getattr(response, "choices", None)
    if not choices:
        body = response.to_dict() if hasattr(response, "to_dict") else {}
        error = body.get("error")
        if isinstance(error, (dict, str)) and error:
            said = error.get("message") if isinstance(error, dict) else error
            return f"with an error instead of a completion: {str(said)[:300]}"
        kind = f' (a "{body["type"]}" object, as another API answers)' if isinstance(body.get("type"), str) else ""
        return (
            f"the body is not a chat completion{kind}: it has no choices (its fields: {', '.join(sorted(body)[:10])})"
        )
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        return "its first choice has no message"
    if message.content is None and not getattr(message, "tool_calls", None) and choice.finish_reason != "length":
        return f"its message has no content (finish_reason {choice.finish_reason!r})"
    return None


REASONING_MODELS = ("gpt-5", "gpt-6", "o1", "o3", "o4")  # OpenAI models that take max_completion_tokens, not max_tokens


def output_cap(model: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` with its max_tokens named as `model` wants it: OpenAI's reasoning models refuse max_tokens."""
    params = dict(params)
    if "max_tokens" in params and model.startswith(REASONING_MODELS):
        params["max_completion_tokens"] = params.pop("max_tokens")
    return params


def cut_at_length(completion: Completion) -> bool:
    """Whether the answer stopped at its output cap (finish_reason "length"), not where the model ended it."""
    return completion.raw.get("finish_reason") == "length"


_CONTEXT_ERROR = re.compile(
    r"context.{0,20}(length|size|window|limit)|prompt is too long|too many tokens|"
    r"exceeds? the (available )?context",
    re.I,
)
_CONTEXT_LIMIT = (
    re.compile(r"maximum context length is (\d[\d,]*)", re.I),
    re.compile(r"> ?(\d[\d,]*) maximum", re.I),  # Anthropic: "prompt is too long: 9000 tokens > 8192 maximum"
    re.compile(r"context (?:length|size|window)(?: limit)?(?: of| is|:)? \(?(\d[\d,]*)", re.I),
    re.compile(r"\(?(\d[\d,]*)\)? ?tokens?\)? ?(?:context|is the maximum)", re.I),
)


def context_limit(message: str) -> str | None:
    """For a server's error saying a request is longer than the model's context ("Prompt is too long",
    "maximum context length is 8192 tokens", ...): "the request is over the model's context limit of 8,192
    tokens" (the limit when the text gives one); None for any other error."""
    text = str(message or "")
    if not _CONTEXT_ERROR.search(text):
        return None
    for pattern in _CONTEXT_LIMIT:
        found = pattern.search(text)
        if found:
            return f"the request is over the model's context limit of {int(found.group(1).replace(',', '')):,} tokens"
    return "the request is over the model's context limit (the server did not say how long it is)"


def cache_key(request: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a request (sorted keys, no whitespace)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _describe(error: Any, model: str, attempt: int) -> str:
    status = getattr(error, "status_code", None)
    message = getattr(error, "message", None) or str(error)
    tries = f" after {attempt + 1} attempts" if attempt else ""
    hint = {
        401: " Check the API key (OPENAI_API_KEY or ANTHROPIC_API_KEY).",
        403: " The key has no access to this model.",
        404: " Check the model id and the base URL (OPENAI_BASE_URL).",
        429: " Rate limited: lower the workers or wait.",
    }.get(status or 0, "")
    return f"LLM request to {model} failed{tries}: {_what_failed(error, status, message).rstrip('.')}.{hint}"


def _what_failed(error: Any, status: int | None, message: str) -> str:
    """The HTTP status and the server's message, or what went wrong without an answer, in words (never the
    SDK's class names)."""
    import openai

    if status:
        return f"HTTP {status}: {message}"
    if isinstance(error, openai.APITimeoutError):
        return "no answer in time (the request timed out)"
    cause = getattr(error, "__cause__", None) or getattr(error, "__context__", None)
    return "the model server could not be reached" + (f" ({cause})" if cause is not None and str(cause) else "")


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def llm_generator(client: Any, **params: Any) -> Callable[[str, str], str]:
    """A generate(prompt, request) that asks `client` (an LLMClient): the prompt as the system message, the
    request as the user message; `params` go to the API. Raises what the client raises. A prompt task
    family runs its rows with it (helpers.engine.loop.run_prompt_loop)."""

    def generate(prompt: str, request: str) -> str:
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": request}]
        return client.complete(messages, **params).text

    return generate


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in a model's answer (bare, or in a ```json fence, or the outermost {...}).

    Raises ValueError saying what was wrong.
    """
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    candidates = [fenced.group(1)] if fenced else [stripped]
    start, end = stripped.find("{"), stripped.rfind("}")
    if start != -1 and end > start:
        candidates.append(stripped[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError(f"the answer is not a JSON object: {stripped[:200]!r}")


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "LLMClient",
    "LLMError",
    "BudgetExceeded",
    "cache_key",
    "output_cap",
    "cut_at_length",
    "context_limit",
    "parse_json_object",
    "llm_generator",
    "not_a_completion",
]
