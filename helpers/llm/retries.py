"""The one retry policy for model calls (tenacity), used by whichever layer talks to the provider.

One failing call reaches the provider at most 1 + `max_retries` times end to end: when calls go through
the gateway, the gateway retries (its answers carry `x-gateway-retries`) and LLMClient does not retry
them again; without a gateway, LLMClient retries with this same policy. What is retried: 408, 409, 429
and every 5xx, timeouts and dropped connections (in the gateway also answers that broke off, stalled or
were not JSON, while nothing of them had reached the client). The wait is what the server's Retry-After asks (in full:
only our own backoff is capped), else a jittered exponential backoff; an ask longer than the caller's
limit is not waited for at all (the call fails at once, saying so).
"""

from __future__ import annotations

import email.utils
import time
from typing import Any, Callable, Mapping

from tenacity import RetryCallState, retry_if_exception_type, stop_after_attempt, wait_random_exponential

GATEWAY_RETRIES_HEADER = "x-gateway-retries"  # on every answer the gateway retried for: clients must not


def is_retryable(status: int | None) -> bool:
    """True for an HTTP status a later attempt may get past: 408, 409, 429 and every 5xx."""
    return isinstance(status, int) and (status in (408, 409, 429) or 500 <= status <= 599)


def retry_after_s(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asks to wait (retry-after-ms, Retry-After in seconds or as an HTTP date), else None."""
    headers = headers or {}
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after") or headers.get("Retry-After")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None  # unreadable: our own backoff applies


class TryAgain(Exception):
    """Raised inside an attempt to have it retried; `after_s` is the server's ask (None: our backoff)."""

    def __init__(self, after_s: float | None = None, cause: Any = None):
        super().__init__(f"retry after {after_s}" if after_s is not None else "retry")
        self.after_s, self.cause = after_s, cause


def _wait(backoff_s: float, max_backoff_s: float) -> Callable[[RetryCallState], float]:
    backoff = wait_random_exponential(multiplier=backoff_s, max=max_backoff_s)

    def wait(state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, TryAgain) and error.after_s is not None:
            return error.after_s
        return backoff(state)

    return wait


def policy(max_retries: int, backoff_s: float, max_backoff_s: float, sleep: Callable | None = None) -> dict[str, Any]:
    """Keyword arguments for tenacity's Retrying / AsyncRetrying: attempts raise TryAgain to be retried;
    after the last attempt the last TryAgain is re-raised (its `cause` says what failed)."""
    kwargs: dict[str, Any] = dict(
        stop=stop_after_attempt(max_retries + 1),
        wait=_wait(backoff_s, max_backoff_s),
        retry=retry_if_exception_type(TryAgain),
        reraise=True,
    )
    if sleep is not None:
        kwargs["sleep"] = sleep
    return kwargs


__all__ = [
    "policy",
    "TryAgain",
    "is_retryable",
    "retry_after_s",
    "GATEWAY_RETRIES_HEADER",
]  # documented in CODE_APPENDIX.md
