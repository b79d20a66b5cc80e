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
O_APPEND file (a torn last line is skipped on read, and cut off by the next append), and whole files are
written to a temporary name and renamed.

Any text survives a record (an agent's output is anyone's text): a JSONL record is written as ASCII JSON
(every other character, U+2028, U+0085 and NUL included, as an escape; a lone surrogate, which no
UTF-8 text or data frame can hold, as its escape's text: without_lone_surrogates), so its one
newline is its only line break, and read back by splitting on newline bytes alone (str.splitlines would
also split on U+2028, U+2029, U+001C-U+001E, U+0085...). A complete line that cannot be read is one RecordError naming the file and
the line, never a record silently dropped (run_tasks would run, and pay for, that task again).
"""

from __future__ import annotations

import fcntl
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
    "experiment",
    "loop",
    "ruleset_version",
    "train_accuracy",
    "test_accuracy",
    "train_size",
    "test_size",
    "ruleset_rules",
    "ruleset_tokens",
    "agent_cost_usd",
    "judge_cost_usd",
    "optimizer_cost_usd",
    "cost_usd",
    "agent_model",
    "judge_model",
    "optimizer_model",
    "dry_run",
    "started_at",
    "finished_at",
    "train_errors",
    "test_errors",
    "judge_errors",
    "optimizer_changed",
    "unpriced",
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


class RecordError(ValueError):
    """A complete line of a JSONL file that is not a record: the file and the line are named."""


def append_jsonl(path: Path | str, record: dict[str, Any]) -> None:
    """Append one record as a single write of one ASCII line, flushed to disk before returning; a line a kill
    tore before it (no newline at the end of the file) is cut off first: it was never a finished record."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(without_lone_surrogates(record), default=str, ensure_ascii=True)
    line = (scrub_machine_paths(text) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the torn-line check and the write, one appender at a time
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            os.ftruncate(fd, _end_of_last_line(fd, size))
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def _end_of_last_line(fd: int, size: int, chunk: int = 2**16) -> int:
    """The offset just after the last newline byte of the open file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """All records, in order; a last line torn by a kill mid-write (no newline after it) is skipped. Lines are
    split on newline bytes only. A complete line that is not a JSON object is a RecordError naming the file and line."""
    path = Path(path)
    if not path.exists():
        return []
    *lines, _torn = path.read_bytes().split(b"\n")
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except ValueError as error:  # JSON, or UTF-8 (UnicodeDecodeError is a ValueError)
            raise RecordError(
                f"Line {number} of {path} is not a readable record ({error}). Nothing was run: move "
                "the file aside or delete that line (its task then runs again), and call again."
            ) from None
        if not isinstance(record, dict):
            raise RecordError(f"Line {number} of {path} is not a record (a JSON object) but {type(record).__name__}.")
        records.append(without_lone_surrogates(record))
    return records


def write_atomic(path: Path | str, data: str | bytes) -> Path:
    """Write a whole file under a temporary name, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            # a lone surrogate (an agent's output may hold one) as its escape, which JSON reads back as it was
            f.write(data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path | str, obj: Any) -> Path:
    """`obj` as indented JSON, atomically."""
    text = json.dumps(without_lone_surrogates(obj), indent=2, default=str, ensure_ascii=False)
    return write_atomic(path, scrub_machine_paths(text) + "\n")


def write_csv(df: Any, path: Path | str) -> Path:
    """A DataFrame to CSV, atomically (list and dict cells are stored as JSON)."""
    frame = df.copy()
    for column in frame.columns:
        if frame[column].map(lambda v: isinstance(v, (list, dict))).any():
            frame[column] = frame[column].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return write_atomic(path, scrub_machine_paths(frame.to_csv(index=False)))


def without_lone_surrogates(value: Any) -> Any:
    """`value` (a string, or lists and dicts of them) with each lone surrogate (U+D800-U+DFFF alone: what a
    JSON "\\ud800" or a surrogateescape decoding makes, and what UTF-8, pandas and Arrow cannot hold) written
    as its escape text, a backslash and "udXXX"; other values as they are."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", errors="backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    return value


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "experiment_dir",
    "run_records_path",
    "split_results_path",
    "loops_path",
    "append_jsonl",
    "read_jsonl",
    "RecordError",
    "without_lone_surrogates",
    "write_atomic",
    "write_json",
    "write_csv",
    "check_name",
    "ruleset_sha",
]
