"""The ruleset store: every version of an experiment's rules, with its metadata.

The store keeps, under act_rulesets/<experiment>/, ruleset_<version>.txt (the text) and
ruleset_<version>.json (its metadata). Version 0 is the starting ruleset; loop i runs with version i
and its optimizer writes version i + 1. Accuracies are not kept here: they are read from the
experiment's loops.jsonl (one record per finished loop). One writer per experiment at a time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from helpers.core import config
from helpers.rules.planted import warn_planted
from helpers.store.records import loops_path, read_jsonl, ruleset_sha, rulesets_dir, write_atomic, write_json
from helpers.rules.rules_file import RulesFile
from helpers.rules.ruleset import (
    Ruleset,
    RulesetDiff,
    diff_rulesets,
    insert_section,
    new_rules_file,
    parse_rules_text,
    render_stats,
    rules_file_for,
    split_fenced,
)
from helpers.rules.file_formats import learned_path
from helpers.rules.limits import check_file_size


# --- the store -------------------------------------------------------------------------------------
ACCURACIES = ("train_accuracy", "val_accuracy", "test_accuracy")


class RulesetStore:
    """Every version of one experiment's rules, with metadata, under act_rulesets/<experiment>/.

        store = RulesetStore("house-demo")
        v0 = store.save("", parent=None, loop=None)           # the starting ruleset
        v = store.choose_start("latest")                         # or "best": the version kept on validation
        text = store.load(v)
        v1 = store.save(new_text, parent=v, loop=0, report=optimizer.last_report, model="gpt-5")
        print(store.diff(v, v1)); store.rollback(v); store.export(v1, "/path/to/project")

    Accuracies come from the experiment's loops.jsonl (under `results_root`, default act_results/):
    each finished loop's record names the `ruleset_version` it ran with and its `train_accuracy` and
    `test_accuracy`; when a version ran in several loops, the latest measurement wins. The metadata
    keeps the text's hash as `ruleset_sha` (helpers.store.records.ruleset_sha), no accuracies.

    A version exists once its .json is written (the .txt is written first), so a kill between the
    two leaves no half version. Saving again for a loop that already wrote a version replaces that
    version (a loop re-run after a crash), so version numbers keep following loop numbers.
    """

    def __init__(self, experiment: str, root: Path | str | None = None, *, results_root: Path | str | None = None):
        self.experiment = experiment
        self.dir = rulesets_dir(experiment, root)
        self.results_root = results_root

    def __repr__(self) -> str:
        return f"RulesetStore({self.experiment!r}, versions={self.versions()})"

    # --- paths and reading ---
    def text_path(self, version: int) -> Path:
        return self.dir / f"ruleset_{version}.txt"

    def meta_path(self, version: int) -> Path:
        return self.dir / f"ruleset_{version}.json"

    def versions(self) -> list[int]:
        """Saved version numbers, ascending."""
        if not self.dir.is_dir():
            return []
        found = []
        for path in self.dir.glob("ruleset_*.json"):
            suffix = path.stem.removeprefix("ruleset_")
            if suffix.isdigit() and self.text_path(int(suffix)).exists():
                found.append(int(suffix))
        return sorted(found)

    def head_version(self) -> int:
        """The newest version."""
        versions = self.versions()
        if not versions:
            raise LookupError(
                f"No ruleset saved yet in {self.dir}: save the starting ruleset first "
                "(store.save('', parent=None, loop=None))."
            )
        return versions[-1]

    def _resolve(self, version: int | str) -> int:
        if version in ("latest", "head"):
            return self.head_version()
        if version == "best":  # the version kept on validation so far (else the newest)
            best = self.best_version()
            return best if best is not None else self.head_version()
        if isinstance(version, str) and version.lstrip("v").isdigit():
            version = int(version.lstrip("v"))
        if not isinstance(version, int) or version not in self.versions():
            raise LookupError(
                f"Ruleset version {version!r} does not exist in {self.dir}; saved "
                f"versions: {self.versions() or 'none'}."
            )
        return version

    def load(self, version: int | str = "latest") -> str:
        """The text of a version, exactly as saved (line endings included)."""
        return self.text_path(self._resolve(version)).read_bytes().decode("utf-8")

    def load_rules(self, version: int | str = "latest") -> RulesFile:
        """A version parsed once (helpers.rules.rules_file.RulesFile): its text exactly as saved, and its rules."""
        return RulesFile.parse(self.load(version))

    def rules(self, version: int | str = "latest") -> Ruleset:
        return parse_rules_text(self.load(version))

    def metadata(self, version: int | str = "latest") -> dict[str, Any]:
        return json.loads(self.meta_path(self._resolve(version)).read_text(encoding="utf-8"))

    def history(self) -> "Any":
        """One row per version (a DataFrame): version, parent, loop, kind, accuracies, rules, cost."""
        import pandas as pd

        columns = [
            "version",
            "parent",
            "loop",
            "kind",
            "train_accuracy",
            "val_accuracy",
            "test_accuracy",
            "rules",
            "tokens",
            "edits",
            "rejected_edits",
            "cost_usd",
            "model",
            "dry_run",
            "created_at",
        ]
        rows = []
        measured = self._measured()
        for version in self.versions():
            meta = {**self.metadata(version), **measured.get(version, {})}
            row = {c: meta.get(c) for c in columns}
            row["edits"] = len(meta.get("edits") or [])
            row["rejected_edits"] = len(meta.get("rejected_edits") or [])
            rows.append(row)
        return pd.DataFrame(rows, columns=columns)

    # --- writing ---
    def save(
        self,
        text: str | RulesFile,
        *,
        parent: int | None = None,
        loop: int | None = None,
        report: Any = None,
        model: str | None = None,
        dry_run: bool = False,
        kind: str | None = None,
        **extra: Any,
    ) -> int:
        """Save a ruleset text as a new version (or replace the one `loop` already wrote); returns it.

        `report` is the optimizer's last_report (an object with to_dict() or a dict): its edits,
        rejected edits, cost and errors are kept in the metadata. `text`: the ruleset's text, or the rules parsed
        once (a RulesFile: its text is saved).
        """
        text = text.text if isinstance(text, RulesFile) else text or ""
        if parent is not None:
            self._resolve(parent)
        versions = self.versions()
        version = self._version_of_loop(loop, versions)
        if version is None:
            version = versions[-1] + 1 if versions else 0
        report_dict = _as_dict(report)
        stats = render_stats(text)
        meta = {
            "version": version,
            "parent": parent,
            "loop": loop,
            "kind": kind or ("initial" if parent is None and loop is None else "optimized"),
            "experiment": self.experiment,
            "rules": stats["rules"],
            "tokens": stats["tokens"],
            "ruleset_sha": ruleset_sha(text),
            "edits": report_dict.get("edits_applied", []),
            "rejected_edits": report_dict.get("edits_rejected", []),
            "flagged_edits": report_dict.get("edits_flagged", []),
            "errors": report_dict.get("errors", []),
            "cost_usd": float(report_dict.get("cost_usd", 0.0) or 0.0),
            "model": model or report_dict.get("model"),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "dry_run": bool(dry_run or report_dict.get("dry_run", False)),
            **extra,
            "optimizer_report": report_dict or None,
        }
        write_atomic(self.text_path(version), text)
        write_json(self.meta_path(version), meta)
        return version

    def _version_of_loop(self, loop: int | None, versions: Sequence[int]) -> int | None:
        if loop is None:
            return None
        for version in versions:
            meta = self.metadata(version)
            if meta.get("loop") == loop and meta.get("kind") == "optimized":
                return version
        return None

    def _measured(self, before_loop: int | None = None) -> dict[int, dict[str, float]]:
        """version -> {accuracy name: value} from loops.jsonl, the latest finished loop's value winning;
        only loops before `before_loop` when given."""
        records = [
            r
            for r in read_jsonl(loops_path(self.experiment, self.results_root))
            if isinstance(r.get("ruleset_version"), int) and isinstance(r.get("loop"), int)
        ]
        measured: dict[int, dict[str, float]] = {}
        for record in sorted(records, key=lambda r: r["loop"]):
            if before_loop is not None and record["loop"] >= before_loop:
                continue
            for name in ACCURACIES:
                if isinstance(record.get(name), (int, float)):
                    measured.setdefault(record["ruleset_version"], {})[name] = float(record[name])
        return measured

    def rollback(self, version: int | str, reason: str = "") -> int:
        """Make an old version the head again: saved as a new version with the old text, recorded
        as a rollback (kind "rollback", rolled_back_from, previous_head). Returns the new version."""
        version = self._resolve(version)
        head = self.head_version()
        old = self.metadata(version)
        return self.save(
            self.load(version),
            parent=version,
            loop=None,
            model=old.get("model"),
            dry_run=bool(old.get("dry_run")),
            kind="rollback",
            rolled_back_from=version,
            previous_head=head,
            reason=reason,
        )

    # --- choosing ---
    def best_version(self, before_loop: int | None = None) -> int | None:
        """The version kept on validation so far (helpers.store.loops.kept_version: the highest validation
        accuracy, never one that does not beat the start; without a validation side, the latest measured).
        None when no loop has finished. `before_loop`: only loops before it."""
        from helpers.store.loops import kept_version

        choice = kept_version(self.experiment, before_loop=before_loop, results_root=self.results_root)
        return None if choice is None else choice.version

    def choose_start(self, mode: str = "latest", loop: int | None = None) -> int:
        """The version the next loop runs with (and optimizes from).

        "latest": the newest version (the cookbook's behaviour).
        "best": the version kept on validation (best_version). A version written from it and not run yet
          comes first, so every candidate gets measured once; with no loop finished yet, the newest.
        `loop`: when given, versions written by loop `loop` or later are ignored (a loop re-run after
        a crash starts from what it started from the first time).
        """
        candidates = self._candidates(loop)
        if not candidates:
            raise LookupError(
                f"No ruleset version to start loop {loop} from in {self.dir}: save the starting ruleset first."
            )
        if mode == "latest":
            return candidates[-1]
        if mode != "best":
            raise ValueError(f"start_from must be 'latest' or 'best', not {mode!r}.")
        best = self.best_version(before_loop=loop)
        if best is None:
            return candidates[-1]
        measured = self._measured(loop)
        untried = [v for v in candidates if self.metadata(v).get("parent") == best and v not in measured]
        return untried[-1] if untried else best

    def _candidates(self, before_loop: int | None) -> list[int]:
        versions = self.versions()
        if before_loop is None:
            return versions
        return [v for v in versions if self.metadata(v).get("loop") is None or self.metadata(v)["loop"] < before_loop]

    # --- comparing and exporting ---
    def diff(self, old: int | str, new: int | str = "latest") -> RulesetDiff:
        """Rule-by-rule difference (by id) from version `old` to version `new`."""
        old_v, new_v = self._resolve(old), self._resolve(new)
        return diff_rulesets(self.rules(old_v), self.rules(new_v), old_v, new_v)

    def export(
        self, version: int | str, project_dir: Path | str, *, format: str | None = None, overwrite: bool = False
    ) -> Path:
        """Write a version into a project's rules file; returns the path written.

        `format`: a rules file (any path in the project; the formats of helpers.rules.file_formats, such as
        "AGENTS.md", ".cursor/rules/style.mdc" or ".claude/skills/house-style/SKILL.md") or an agent's name (its
        rules file); None: the default agent's (config.AGENT). A `<name>` that is not a valid name is a ValueError before
        anything is written. A missing file is created with the version's learned rules in its marked section,
        after the front matter its format needs. An existing file keeps the team's text byte for byte, front
        matter first: the learned rules go into its fenced section (replaced when it has one, added after the
        team's text when not); overwrite=True replaces the whole file instead, as a new file. A folder of rule
        files gets a file of its own in it. import_rules_file on the file written gives the team's text and
        these rules back. Every line of the file written that looks like a planted instruction (the team's or
        a version's), or holds a rule the check by meaning flagged when a version applied it, is written all
        the same, and said: one helpers.rules.planted.PlantedTextWarning per line, naming the line and why. A file
        over the documented limit of an agent that reads it (Codex: 32 KiB of AGENTS.md) is written too, with a
        helpers.rules.limits.RulesSizeWarning naming the agent and the limit.
        """
        rules = self.load_rules(version)
        text = rules.text
        project = Path(project_dir)
        if not project.is_dir():
            raise FileNotFoundError(f"Project folder {project} does not exist.")
        target = learned_path(project, rules_file_for(format or config.AGENT))
        if overwrite or not target.exists():
            text = new_rules_file(target.relative_to(project).as_posix(), text)
        else:
            original = target.read_bytes().decode("utf-8", errors="surrogateescape")
            fenced = split_fenced(original)  # the team's file in the project, read here
            text = (fenced[0] + rules.learned + fenced[2]) if fenced else insert_section(original, rules.learned)
        written = write_atomic(target, text.encode("utf-8", errors="surrogateescape"))
        # after writing, so warnings raised as errors still leave a whole file
        warn_planted(text, str(written), flagged=self._flagged_by_meaning(self._resolve(version)))
        check_file_size(text, target.relative_to(project).as_posix())  # over a reader's documented limit: a warning
        return written

    def _flagged_by_meaning(self, version: int) -> dict[str, list[str]]:
        """rule text -> why the check by meaning flagged it, for the edits versions up to `version` applied
        flagged (planted="flag": a person decides; helpers.learn.rule_check)."""
        flagged: dict[str, list[str]] = {}
        for v in (v for v in self.versions() if v <= version):
            for edit in self.metadata(v).get("flagged_edits") or []:
                if isinstance(edit, dict) and isinstance(edit.get("text"), str) and edit.get("meaning_flags"):
                    flagged[edit["text"]] = [str(f) for f in edit["meaning_flags"]]
        return flagged


def _as_dict(report: Any) -> dict[str, Any]:
    if report is None:
        return {}
    if isinstance(report, Mapping):
        return dict(report)
    if hasattr(report, "to_dict"):
        return report.to_dict()
    raise TypeError(f"report must be the optimizer's last_report (or a dict), not {type(report).__name__}.")


__all__ = ["RulesetStore"]  # the public API, documented in CODE_APPENDIX.md
