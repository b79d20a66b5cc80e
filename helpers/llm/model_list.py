"""Which model ids a server serves, from its own model list, asked through the official SDKs before any work.

    served = served_models("https://api.openai.com/v1", key, "openai")   # {"gpt-6.1-sol": None, "gpt-4.1": "2027-01-14", ...}
    not_served("JUDGE_MODEL", "the judge", "gpt-4.l", "https://api.openai.com/v1", served)
    # "JUDGE_MODEL 'gpt-4.l' (the judge) is not served by https://api.openai.com/v1 (it lists 87 models;
    #  closest: 'gpt-4.1'). Set JUDGE_MODEL to one it serves."

OpenAI and OpenAI-compatible servers list their models at GET {base_url}/models; Anthropic's API (or an
Anthropic-compatible server) at GET {base_url}/v1/models, paged (the SDK follows the pages). OpenAI adds the
shutdown date it has announced for a model (`shutdown_date`). A server with no model list (some local servers
answer 404), or one that could not be asked (unreachable, a key that may not list models), raises NoModelList
saying why ("it has no model list (HTTP 404)"): not knowing is not an error, and the run goes on unchecked.
"""

from __future__ import annotations

import difflib
from typing import Mapping

LIST_TIMEOUT_S = 30.0  # one model list; a server that takes longer is treated as one that could not be asked
NO_KEY = "no-key"  # the SDKs want a key; a server that needs none (a local one) ignores it
SHOWN_IN_FULL = 3  # a list this short is shown whole in the message


class NoModelList(Exception):
    """The server has no model list, or could not be asked for it; the message says which and why, of "it"
    (the caller names the server: a client of the gateway asks through a loopback URL)."""


class ModelNotServed(ValueError):
    """A configured model id its server does not list (retired or misspelled); the message names each one,
    its setting, its role, the server and what to set."""


def served_models(base_url: str, api_key: str | None, kind: str = "openai") -> dict[str, str | None]:
    """Every model id the server at `base_url` lists -> the shutdown date its provider announced for it
    (YYYY-MM-DD) or None. `kind` is the upstream's ("openai", "openai-compatible", "anthropic", "gemini": GET
    {base_url}/v1beta/models). Raises
    NoModelList saying why when the server has no list or could not be asked; never anything else."""
    if kind == "gemini":
        return _gemini_models(base_url, api_key)
    if kind == "anthropic":
        return _anthropic_models(base_url, api_key)
    import openai  # only the SDK asked: importing Anthropic's as well cost every session ~1.5 s of CPU

    try:
        client = openai.OpenAI(base_url=base_url, api_key=api_key or NO_KEY, max_retries=0, timeout=LIST_TIMEOUT_S)
        # Google's OpenAI-compatible list names its models "models/<id>", as its own API does
        return {
            model.id.removeprefix("models/"): getattr(model, "shutdown_date", None) for model in client.models.list()
        }
    except openai.APIStatusError as error:
        raise _status_error(error.status_code, error.message) from None
    except openai.APIError as error:  # unreachable, timed out, an answer that is not a list
        raise NoModelList(f"it could not be asked for its models ({type(error).__name__})") from None


def _anthropic_models(base_url: str, api_key: str | None) -> dict[str, str | None]:
    """Anthropic's model list, GET {base_url}/v1/models, through its SDK (which follows the pages)."""
    import anthropic

    try:
        client = anthropic.Anthropic(
            base_url=base_url, api_key=api_key or NO_KEY, max_retries=0, timeout=LIST_TIMEOUT_S
        )
        return {model.id: None for model in client.models.list(limit=1000)}
    except anthropic.APIStatusError as error:
        raise _status_error(error.status_code, error.message) from None
    except anthropic.APIError as error:  # unreachable, timed out, an answer that is not a list
        raise NoModelList(f"it could not be asked for its models ({type(error).__name__})") from None


def _status_error(status: int, message: object) -> NoModelList:
    if status in (404, 405, 501):
        return NoModelList(f"it has no model list (HTTP {status})")
    return NoModelList(f"it did not list its models (HTTP {status}: {str(message)[:200]})")


def _gemini_models(base_url: str, api_key: str | None) -> dict[str, str | None]:
    """Gemini's model list, GET {base_url}/v1beta/models (key in x-goog-api-key), followed page by page."""
    import httpx

    models: dict[str, str | None] = {}
    page = None
    try:
        while True:
            answer = httpx.get(
                f"{base_url.rstrip('/')}/v1beta/models",
                headers={"x-goog-api-key": api_key or NO_KEY},
                params={"pageSize": 1000, **({"pageToken": page} if page else {})},
                timeout=LIST_TIMEOUT_S,
            )
            if answer.status_code in (404, 405, 501):
                raise NoModelList(f"it has no model list (HTTP {answer.status_code})")
            if answer.status_code != 200:
                raise NoModelList(f"it did not list its models (HTTP {answer.status_code}: {answer.text[:200]})")
            body = answer.json()
            models.update({str(m.get("name", "")).removeprefix("models/"): None for m in body.get("models") or []})
            page = body.get("nextPageToken")
            if not page:
                return models
    except (httpx.HTTPError, ValueError, AttributeError) as error:
        raise NoModelList(f"it could not be asked for its models ({type(error).__name__})") from None


def not_served(setting: str, role: str, model: str, server: str, served: Mapping[str, object]) -> str:
    """The one line saying that `model` (chosen by `setting`, for `role`) is not among `served`, the ids the
    server lists: what it lists (all of a short list, else how many and the closest id) and what to set."""
    ids = sorted(served)
    if len(ids) <= SHOWN_IN_FULL:
        lists = f"it lists {', '.join(map(repr, ids))}" if ids else "it lists no models"
    else:
        closest = difflib.get_close_matches(model, ids, n=1)
        lists = f"it lists {len(ids)} models" + (f"; closest: {closest[0]!r}" if closest else "")
    return f"{setting} {model!r} ({role}) is not served by {server} ({lists}). Set {setting} to one it serves."


__all__ = ["served_models", "not_served", "NoModelList", "ModelNotServed"]  # documented in CODE_APPENDIX.md
