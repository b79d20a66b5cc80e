"""Where results go on disk, and the two ways they are written: append-only JSONL and atomic files.

    act_results/<experiment>/
        runs/<run_id>.jsonl          run_act: one record per finished task, appended as it finishes
        train_results_<loop>.csv     the training rows of a loop, judged (the cookbook's file name)
        test_results_<loop>.csv      the test rows of a loop
        loops.jsonl                  one summary record per finished loop (see LOOP_RECORD_FIELDS)
        phoenix_pending.jsonl        what could not be logged to Phoenix yet
        plots/*.png, notebooks/*.ipynb
    act_rulesets/<experiment>/
        ruleset_<version>.txt        usable as a rules file (.clinerules, AGENTS.md) as it stands
        ruleset_<version>.json       its metadata

Records, JSON and CSV files are written without this machine's throwaway paths (scratch and
evaluation folders, the Python install: helpers.core.redact). A kill at any moment leaves every finished record readable: a JSONL record is one write() on an
O_APPEND file (a torn last line is skipped on read), and whole files are written to a temporary name
and renamed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from helpers.core import config
from helpers.core.names import check_name  # re-exported: store paths are built from checked names
from helpers.core.redact import scrub_machine_paths

# One record per finished loop in loops.jsonl. Loop i runs with ruleset version i (version 0 is the
# starting ruleset, empty by default) and its optimizer writes version i + 1.
LOOP_RECORD_FIELDS = (
    "experiment", "loop", "ruleset_version", "train_accuracy", "test_accuracy", "train_size",
    "test_size", "ruleset_rules", "ruleset_tokens", "agent_cost_usd", "judge_cost_usd",
    "optimizer_cost_usd", "cost_usd", "agent_model", "judge_model", "optimizer_model", "dry_run",
    "started_at", "finished_at", "train_errors", "test_errors", "judge_errors", "optimizer_changed", "unpriced",
    "agent",
)

def ruleset_sha(text: str | None) -> str:
    """The one hash of a ruleset's text, used by run records, the ruleset store and Phoenix."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]




def experiment_dir(experiment: str, root: Path | str | None = None) -> Path:
    """act_results/<experiment>/ (or under `root`)."""
    return Path(root or config.results_root()) / check_name(experiment, "experiment name")


def rulesets_dir(experiment: str, root: Path | str | None = None) -> Path:
    return Path(root or config.rulesets_root()) / check_name(experiment, "experiment name")


def run_records_path(experiment: str, run_id: str, root: Path | str | None = None) -> Path:
    """act_results/<experiment>/runs/<run_id>.jsonl: run_act's records."""
    return experiment_dir(experiment, root) / "runs" / f"{check_name(run_id, 'run id')}.jsonl"


def split_results_path(experiment: str, split: str, loop: int, root: Path | str | None = None) -> Path:
    """act_results/<experiment>/<split>_results_<loop>.csv."""
    return experiment_dir(experiment, root) / f"{split}_results_{loop}.csv"


def loops_path(experiment: str, root: Path | str | None = None) -> Path:
    """act_results/<experiment>/loops.jsonl: one record per finished loop."""
    return experiment_dir(experiment, root) / "loops.jsonl"


def append_jsonl(path: Path | str, record: dict[str, Any]) -> None:
    """Append one record as a single write, flushed to disk before returning."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (scrub_machine_paths(json.dumps(record, default=str, ensure_ascii=False)) + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a kill tore the last line: start ours on a fresh one
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """All complete records; a line torn by a kill mid-write is skipped."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return records


def write_atomic(path: Path | str, data: str | bytes) -> Path:
    """Write a whole file under a temporary name, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path | str, obj: Any) -> Path:
    """`obj` as indented JSON, atomically."""
    return write_atomic(path, scrub_machine_paths(json.dumps(obj, indent=2, default=str, ensure_ascii=False)) + "\n")


def write_csv(df: Any, path: Path | str) -> Path:
    """A DataFrame to CSV, atomically (list and dict cells are stored as JSON)."""
    frame = df.copy()
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, (list, dict))).any():
            frame[column] = frame[column].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return write_atomic(path, scrub_machine_paths(frame.to_csv(index=False)))


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "experiment_dir", "run_records_path", "split_results_path", "loops_path", "append_jsonl", "read_jsonl",
    "write_atomic", "write_json", "write_csv", "check_name", "ruleset_sha",
]
