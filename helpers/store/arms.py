"""The baseline arms of an experiment: what each arm ran with and its test rows, beside the loops' records.

    save_arm("quickstart", "init", {"status": "ran", "label": ..., "version": 1, ...}, rows)
    arms = load_arms("quickstart")          # {arm: record}; arm_rows("quickstart", "init") -> its test rows

Files, under act_results/<experiment>/baselines/: arms.json (one record per arm: its status, "ran", "errored"
or "skipped", with why; its label, ruleset version in the act_rulesets/<experiment>-baselines store, file
size and the agent's version and prompt hash for an init arm) and test_<arm>.csv (the arm's test rows, as
the engine returned them). The one writer of these files (helpers.engine.baselines), the one reader
(helpers.analysis.evidence).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from helpers.core.names import check_name
from helpers.store.records import experiment_dir, write_csv, write_json

STATUSES = ("ran", "errored", "skipped")


def baselines_dir(experiment: str, root: Path | str | None = None) -> Path:
    """act_results/<experiment>/baselines/."""
    return experiment_dir(experiment, root) / "baselines"


def baselines_store_name(experiment: str) -> str:
    """The ruleset store whose versions are the experiment's baseline arms: "<experiment>-baselines"."""
    return check_name(f"{experiment}-baselines", "experiment name")


def load_arms(experiment: str, root: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """{arm: its record}, {} before any baseline ran."""
    path = baselines_dir(experiment, root) / "arms.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def save_arm(
    experiment: str, arm: str, record: dict[str, Any], rows: pd.DataFrame | None = None, root: Path | str | None = None
) -> None:
    """Keep one arm's record (and its test rows when it ran); other arms' records stay as they are."""
    if record.get("status") not in STATUSES:
        raise ValueError(f"An arm's status is one of {STATUSES}, not {record.get('status')!r}.")
    arm = check_name(arm, "arm name")
    folder = baselines_dir(experiment, root)
    if rows is not None:
        write_csv(rows, folder / f"test_{arm}.csv")
    write_json(folder / "arms.json", {**load_arms(experiment, root), arm: record})


def arm_rows(experiment: str, arm: str, root: Path | str | None = None) -> pd.DataFrame | None:
    """The test rows an arm ran (None when it has none)."""
    path = baselines_dir(experiment, root) / f"test_{check_name(arm, 'arm name')}.csv"
    return pd.read_csv(path) if path.exists() else None


__all__ = ["load_arms", "save_arm", "arm_rows", "baselines_dir", "baselines_store_name"]
