"""Each ruleset version as a Phoenix prompt version (the rules, with the loop and dry-run label)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any


from helpers.core import config
from helpers.store.records import ruleset_sha

from helpers.tracking.phoenix_client import (
    DRY_RUN_NOTE,
    PhoenixRequestError,
    PhoenixUnavailable,
    _connect,
    _keep_pending,
    _Phoenix,
)


# --- ruleset versions as Phoenix prompt versions ------------------------------------------------


def prompt_name(experiment: str) -> str:
    """The Phoenix prompt that holds an experiment's ruleset versions (Phoenix names: a-z, 0-9, _ and -)."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", experiment.lower()).strip("-_") or "experiment"
    return f"rules-{slug}"


def _ruleset_job(
    experiment: str,
    version: int,
    ruleset: str,
    loop: int | None,
    dry_run: bool,
    metadata: dict[str, Any] | None,
    model: str,
    prompt: str | None,
) -> dict[str, Any]:
    loop = version if loop is None else loop
    meta = {
        **json.loads(json.dumps(metadata or {}, default=str)),
        "experiment": experiment,
        "ruleset_version": version,
        "loop": loop,
        "ruleset_sha": ruleset_sha(ruleset),
        "dry_run": dry_run,
    }
    description = f"Ruleset version {version} of {experiment!r}, used in loop {loop}."
    if dry_run:
        meta["data_source"] = DRY_RUN_NOTE
        description = f"{DRY_RUN_NOTE} {description}"
    return {
        "kind": "ruleset",
        "prompt_name": prompt or prompt_name(experiment),
        "tag": f"loop-{loop}",
        "description": description,
        "metadata": meta,
        "ruleset": ruleset,
        "model": model,
    }


def _log_ruleset_job(phoenix: _Phoenix, job: dict[str, Any]) -> dict[str, Any] | None:
    name, meta = job["prompt_name"], job["metadata"]
    # Gap: phoenix.client has no call that lists a prompt's versions.
    try:
        existing = phoenix.rest("GET", f"v1/prompts/{name}/versions", params={"limit": 1000})["data"]
    except PhoenixRequestError as e:
        if e.status_code != 404:
            raise
        existing = []
    except (ValueError, KeyError):
        return None  # a Phoenix without prompt routes (its web UI answered)
    keys = ("experiment", "ruleset_version", "ruleset_sha")
    version = next((v for v in existing if all((v.get("metadata") or {}).get(k) == meta[k] for k in keys)), None)
    if version is None:
        # Gap: the client's PromptVersion has no version metadata, which is how a version is found again.
        body = {
            "prompt": {"name": name, "description": f"Rules learned by experiment {meta['experiment']!r}"},
            "version": {
                "description": job["description"],
                "metadata": meta,
                "model_provider": "OPENAI",
                "model_name": job["model"],
                "template_type": "CHAT",
                "template_format": "NONE",
                # Phoenix keeps chat templates only: the rules as the system message the agent appends them to.
                "template": {
                    "type": "chat",
                    "messages": [{"role": "system", "content": [{"type": "text", "text": job["ruleset"]}]}],
                },
                "invocation_parameters": {"type": "openai", "openai": {}},
            },
        }
        version = phoenix.rest("POST", "v1/prompts", json=body)["data"]
    phoenix.call(
        phoenix.client.prompts.tags.create,
        prompt_version_id=version["id"],
        name=job["tag"],
        description=job["description"],
    )  # tagging again moves nothing: the tag is on this version
    return version


def log_ruleset_version(
    hostname: Any,
    api_key: str | None,
    experiment: str,
    version: int,
    ruleset: str,
    *,
    loop: int | None = None,
    dry_run: bool = False,
    metadata: dict[str, Any] | None = None,
    model: str | None = None,
    results_root: Path | str | None = None,
    prompt: str | None = None,
) -> dict[str, Any] | None:
    """Store ruleset `version` of `experiment` as a version of the Phoenix prompt `prompt` (default
    `rules-<experiment>`; a chat template whose system message is the rules text), tagged
    `loop-<loop>` (the loop that runs with it; default `version`). Metadata carries the version,
    loop, the text's records.ruleset_sha and dry_run; `model` defaults to the agent's (the scripted
    one in a dry run). Re-logging the same version finds it instead of adding another. Returns the
    prompt version (a dict with its id and metadata), or None when Phoenix is down (kept for
    flush_pending) or has no prompt routes."""
    model = model or (config.SCRIPTED_MODEL if dry_run else config.AGENT_MODEL)
    job = _ruleset_job(experiment, version, ruleset, loop, dry_run, metadata, model, prompt)
    with _connect(hostname, api_key) as phoenix:
        try:
            return _log_ruleset_job(phoenix, job)
        except PhoenixUnavailable as e:
            _keep_pending(experiment, job, phoenix.url, e, results_root)
            return None
