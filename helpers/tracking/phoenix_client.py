"""The Phoenix client the tracking modules share: the official phoenix.client, with retries of transient
errors (connection errors, 429, 5xx), a clear error for a refused key, and plain REST where the client
lacks a call. Internal to helpers.tracking."""

from __future__ import annotations

import hashlib
import json
import threading
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import httpx

from helpers.core import config
from helpers.store.records import append_jsonl, experiment_dir

WORKERS = 8  # concurrent requests; Phoenix on SQLite serialises writes, more buys nothing
RETRIES = 3
BACKOFF_S = 0.5  # doubles per retry: 0.5, 1, 2 s
TIMEOUT_S = 30.0
DRY_RUN_LABEL = "scripted dry run"
DRY_RUN_NOTE = "SCRIPTED DRY RUN - not real results: every model reply came from the scripted model server."
PENDING_FILE = "phoenix_pending.jsonl"

_warned: set[tuple[str, str]] = set()
_warn_lock = threading.Lock()


class PhoenixUnavailable(RuntimeError):
    """Phoenix did not answer (or refused the API key) after retries."""


class PhoenixRequestError(RuntimeError):
    """Phoenix rejected a request as bad (a 4xx other than 401/403/429); `status_code` says which."""

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class PhoenixUnavailableWarning(UserWarning):
    """Phoenix is down: results were kept in act_results/<experiment>/phoenix_pending.jsonl."""


# --- the client, with retries -------------------------------------------------------------------


def _status_error(error: BaseException | None) -> httpx.HTTPStatusError | None:
    """The HTTP error behind a client exception (DatasetUploadError wraps it as its cause)."""
    while error is not None:
        if isinstance(error, httpx.HTTPStatusError):
            return error
        error = error.__cause__
    return None


class _Phoenix:
    """A phoenix.client.Client with retries and a shared 'down' flag (so that, once Phoenix is known
    to be unreachable, the other workers give up at once instead of each retrying)."""

    def __init__(self, url: str, client: Any, workers: int = WORKERS, owned: bool = False):
        self.url = url.rstrip("/")
        self.client = client
        self.workers = workers
        self.owned = owned  # True when this object made the client (and so closes it)
        self.down = threading.Event()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), retried on transient errors; PhoenixUnavailable or PhoenixRequestError."""
        problem = ""
        for attempt in range(RETRIES + 1):
            if self.down.is_set():
                raise PhoenixUnavailable(f"Phoenix at {self.url} is unreachable")
            delay = BACKOFF_S * 2**attempt
            try:
                return fn(*args, **kwargs)
            except httpx.TransportError as e:
                problem = f"{type(e).__name__}: {e}"
            except Exception as e:
                response = getattr(_status_error(e), "response", None)
                if response is None:
                    raise
                status = response.status_code
                if status in (401, 403):
                    self.down.set()
                    raise PhoenixUnavailable(
                        f"Phoenix at {self.url} refused the request ({status}): set PHOENIX_API_KEY "
                        "(or pass api_key=...) to a key this server accepts."
                    ) from e
                if status != 429 and status < 500:
                    raise PhoenixRequestError(
                        f"Phoenix answered {status} to {response.request.method} {response.request.url.path}: "
                        f"{response.text[:500]}",
                        status,
                    ) from e
                problem = f"HTTP {status}"
                retry_after = response.headers.get("retry-after", "")
                delay = float(retry_after) if retry_after.replace(".", "", 1).isdigit() else delay
            if attempt < RETRIES:
                time.sleep(min(delay, 30.0))
        self.down.set()
        raise PhoenixUnavailable(f"Phoenix at {self.url} did not answer ({problem})")

    def rest(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request the client has no call for (see the comment at each use): its JSON body."""

        def send() -> Any:
            response = self.client._client.request(method, path, **kwargs)
            response.raise_for_status()
            return response.json()

        return self.call(send)

    def close(self) -> None:
        if self.owned:
            self.client._client.close()

    def __enter__(self) -> "_Phoenix":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _connect(target: Any, api_key: str | None = None, workers: int = WORKERS) -> _Phoenix:
    """A _Phoenix for a URL, a PhoenixServer (.url/.api_key), a phoenix.client.Client, or None
    (PHOENIX_COLLECTOR_ENDPOINT)."""
    from phoenix.client import Client  # here, not at import: `import helpers` stays light

    if isinstance(target, Client):
        return _Phoenix(str(target._client.base_url), target, workers)
    if target is None:
        target = config.read_env("PHOENIX_COLLECTOR_ENDPOINT")
    url = target if isinstance(target, str) else getattr(target, "url", None)
    if not url:
        raise ValueError(
            f"Cannot reach Phoenix through {target!r}: pass its URL (e.g. 'http://127.0.0.1:6006'), a "
            "PhoenixServer, or a phoenix.client.Client; or set PHOENIX_COLLECTOR_ENDPOINT."
        )
    key = api_key or getattr(target, "api_key", None) or config.read_env("PHOENIX_API_KEY")
    http = httpx.Client(
        base_url=url.rstrip("/"),
        timeout=TIMEOUT_S,
        headers={"Authorization": f"Bearer {key}"} if key else {},
        limits=httpx.Limits(max_connections=workers, max_keepalive_connections=workers),
    )
    return _Phoenix(url, Client(http_client=http), workers, owned=True)


def _sha(obj: Any) -> str:
    """A short hash of plain data (job keys, the logged rows); rulesets use records.ruleset_sha."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


# --- when Phoenix is down -----------------------------------------------------------------------
def pending_path(experiment: str, results_root: Path | str | None = None) -> Path:
    """act_results/<experiment>/phoenix_pending.jsonl: what waits to be logged."""
    return experiment_dir(experiment, results_root) / PENDING_FILE


def _job_key(job: dict[str, Any]) -> str:
    if job["kind"] == "ruleset":
        return _sha(["ruleset", job["prompt_name"], job["metadata"]])
    return _sha(["experiment", job["dataset"]["name"], job["experiment_name"], job["metadata"]])


def _warn_once(url: str, what: str, message: str) -> None:
    with _warn_lock:
        if (url, what) in _warned:
            return
        _warned.add((url, what))
    warnings.warn(message, PhoenixUnavailableWarning, stacklevel=4)


def _keep_pending(
    experiment: str, job: dict[str, Any], url: str, error: Exception, results_root: Path | str | None
) -> Path:
    path = pending_path(experiment, results_root)
    append_jsonl(
        path, {**job, "key": _job_key(job), "failed_url": url, "kept_at": datetime.now(timezone.utc).isoformat()}
    )
    _warn_once(
        url,
        experiment,
        f"{error}. Keeping going: what was not logged is kept in {path}; log it later with "
        f"flush_pending({experiment!r}, hostname=...).",
    )
    return path
