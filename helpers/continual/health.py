"""Each learned rule's health: when it was added, when feedback last confirmed it, how often it was
implicated, and what an ablation showed. The one owner of an inbox's rules.json; the inbox asks it which
rules are stale or harmful (propose_expiry) and tells it what feedback and ablations said."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from helpers.continual.feedback import Feedback, _parse_time
from helpers.core import config
from helpers.store.records import write_json

HARMFUL_AFTER = config.CONTINUAL_HARMFUL_AFTER
# Words that, next to a rule's id, say the rule did harm (a heuristic; ablations are the real evidence).
HARM_WORDS = re.compile(
    r"\b(wrong|harmful|outdated|obsolete|misled|misleading|stale|no longer|remove|"
    r"delete|drop|contradicts?|ignore)\b",
    re.IGNORECASE,
)
COLUMNS = [
    "id",
    "text",
    "added_at",
    "last_confirmed",
    "confirmations",
    "implicated",
    "days_unconfirmed",
    "stale",
    "harmful",
]


class RuleHealth:
    """rules.json in `folder`: one record per rule id. `now()` gives the current time as ISO-8601 UTC."""

    def __init__(self, folder: Path, now: Callable[[], str]):
        self.path, self.now = Path(folder) / "rules.json", now

    def stats(self) -> dict[str, dict[str, Any]]:
        return json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}

    def track(self, rule_ids: list[str]) -> None:
        """Give every rule in `rule_ids` a record (added now, if new)."""
        stats = self.stats()
        missing = [rule_id for rule_id in rule_ids if rule_id not in stats]
        for rule_id in missing:
            stats[rule_id] = {"added_at": self.now(), "last_confirmed": None, "confirmations": 0, "implicated": 0}
        if missing:
            write_json(self.path, stats)

    def confirm(self, rule_id: str, at: str, why: str) -> None:
        stats = self.stats()
        if rule_id not in stats:
            return
        entry = stats[rule_id]
        entry["confirmations"] = entry.get("confirmations", 0) + 1
        if not entry.get("last_confirmed") or _parse_time(at) > _parse_time(entry["last_confirmed"]):
            entry["last_confirmed"], entry["confirmed_by"] = at, why
        write_json(self.path, stats)

    def note_citations(self, records: list[Feedback], rules: list[Any]) -> None:
        """Feedback citing a rule ("[R3]" or its text) confirms it, or implicates it when it says harm."""
        for record in records:
            flat = " ".join(record.text.lower().split())
            for rule in rules:
                if f"[{rule.id}]".lower() not in flat and " ".join(rule.text.lower().split()) not in flat:
                    continue
                if HARM_WORDS.search(record.text):
                    stats = self.stats()
                    stats[rule.id]["implicated"] = stats[rule.id].get("implicated", 0) + 1
                    stats[rule.id].setdefault("implicated_by", []).append(record.id)
                    write_json(self.path, stats)
                else:
                    self.confirm(rule.id, record.at or self.now(), f"feedback {record.id}")

    def record_ablation(self, effects: pd.DataFrame) -> None:
        """helpers.engine.ablation.ablate()'s rows as evidence: removing a rule lowered accuracy -> confirmed;
        removing it raised accuracy significantly -> harmful."""
        for row in effects.to_dict("records"):
            if row["rule"] not in self.stats():
                continue
            if row["effect_of_removal"] < 0:
                self.confirm(row["rule"], self.now(), "ablation: " + str(row.get("summary", "")))
            elif row["effect_of_removal"] > 0 and row.get("significant"):
                stats = self.stats()
                stats[row["rule"]]["ablation_harmful"] = str(row.get("summary", True))
                write_json(self.path, stats)

    def table(self, rules: list[Any], now: datetime, max_age_days: float) -> pd.DataFrame:
        """One row per rule of `rules` (COLUMNS): stale when unconfirmed for over `max_age_days`."""
        stats, rows = self.stats(), []
        for rule in rules:
            s = stats[rule.id]
            age = (now - _parse_time(s.get("last_confirmed") or s["added_at"])).total_seconds() / 86400
            rows.append(
                {
                    "id": rule.id,
                    "text": rule.text,
                    "added_at": s["added_at"],
                    "last_confirmed": s.get("last_confirmed"),
                    "confirmations": s.get("confirmations", 0),
                    "implicated": s.get("implicated", 0),
                    "days_unconfirmed": round(age, 1),
                    "stale": age > max_age_days,
                    "harmful": harmful(s),
                }
            )
        return pd.DataFrame(rows, columns=COLUMNS)


def harmful(stats: dict[str, Any]) -> bool:
    """Shown harmful by an ablation, or implicated HARMFUL_AFTER times and more often than confirmed."""
    implicated = stats.get("implicated", 0)
    return bool(stats.get("ablation_harmful")) or (
        implicated >= HARMFUL_AFTER and implicated > stats.get("confirmations", 0)
    )


__all__ = ["RuleHealth", "harmful", "HARM_WORDS"]  # documented in CODE_APPENDIX.md
