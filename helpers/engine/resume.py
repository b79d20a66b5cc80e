"""Which of a run id's records a rerun of run_tasks keeps (helpers.engine.runs): the records of the same agent,
model, mode, ruleset and attempt; a task among them is finished unless the budget stopped its run or the host saw it
fail transiently with runs left. A finished task is not run again: that is how a killed run resumes, and how a
caller (helpers.engine.ablation) finds a run it need not pay for twice."""

from __future__ import annotations

from typing import Any

from helpers.core import config
from helpers.core.protocols import Agent
from helpers.store.records import read_jsonl, ruleset_sha, run_records_path


def finished_tasks(experiment: str, run_id: str, agent: Agent, ruleset: str, attempt: int = 0) -> set[str]:
    """The tasks a run_tasks call with `run_id` (this agent, model, mode, ruleset, attempt) would not run again."""
    latest, _ = latest_records(read_jsonl(run_records_path(experiment, run_id)), agent, ruleset_sha(ruleset), attempt)
    return {iid for iid, record in latest.items() if is_done(record)}


def _matches(record: dict[str, Any], agent: Agent, sha: str, attempt: int) -> bool:
    return (
        record.get("ruleset_sha") == sha
        and record.get("mode") == agent.mode
        and record.get("model") == agent.model
        and record.get("agent", agent.name) == agent.name
        and int(record.get("attempt") or 0) == attempt
    )


def _upgrade(record: dict[str, Any]) -> dict[str, Any]:
    """A record written before the engine named its output column `output` (it was cline_patch / plan)."""
    if "output" not in record:
        record = {
            **record,
            "output": record.get("plan") if record.get("mode") == "plan" else record.get("cline_patch", ""),
        }
    return record


def latest_records(
    records: list[dict[str, Any]], agent: Agent, sha: str, attempt: int
) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """({task: its latest record}, {task: its runs so far}) among the records of this ruleset, agent and model;
    an older record without `tries` counts as one run."""
    latest: dict[str, dict[str, Any]] = {}
    tries: dict[str, int] = {}
    for found in records:
        if not _matches(found, agent, sha, attempt):
            continue
        iid = found["instance_id"]
        tries[iid] = int(found["tries"]) if found.get("tries") else tries.get(iid, 0) + 1
        latest[iid] = _upgrade(found)
    return latest, tries


def is_done(record: dict[str, Any]) -> bool:
    """False for records a rerun must redo: runs the budget stopped, and runs the host saw fail transiently
    (the gateway's record, a lost worker: `transient`, never the error's wording) with runs left (max_runs)."""
    if record.get("status") == "budget":
        return False
    if record.get("status") == "error" and record.get("transient"):
        return int(record.get("tries") or 1) >= max_runs()
    return True


def max_runs() -> int:
    """A task's runs in all, per ruleset, agent and model of a run id (the first and its re-runs)."""
    return 1 + config.AGENT_TRANSIENT_RETRIES


__all__ = ["finished_tasks", "latest_records", "is_done", "max_runs"]  # the public API, documented in CODE_APPENDIX.md
