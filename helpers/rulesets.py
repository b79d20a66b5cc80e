"""Rulesets: the text format of a rules file, and the versioned store of every loop's rules.

The format is plain Markdown, usable as an agent's rules file as it stands:

    <!-- prompt-learning ruleset: keep the [Rn] ids when editing by hand; next id R4 -->
    - [R1] Add a CHANGELOG.md entry under "Unreleased" for every user-visible change.
    - [R3] Run the project's tests before finishing.
      A continuation line starts with two spaces.

Each rule has a stable id, so a rule can be followed across versions (diff, provenance). Ids are
never reused: the comment line remembers the next free id (without it, the next id is max + 1).
A bullet written by hand without an id ("- Always ...") gets a fresh id when parsed. A text with no
ids at all (a hand-written rules file) is imported as one rule per bullet or paragraph, with headings
kept as a prefix ("Testing: ..."). Round trips are exact whatever a rule says (header lines, fence
markers, "- [R9]" prefixes, any line breaks): `render_ruleset(parse_ruleset(render_ruleset(r)))
== render_ruleset(r)`, and `parse_ruleset(render_ruleset(r)) == r` for rules with normalized texts.
A continuation line (two spaces first) is always rule text, never a header or a fence line.

To let the optimizer edit only part of a whole system prompt, put the rules between two lines
FENCE_START and FENCE_END, each at the start of its line; everything outside them is kept byte for
byte (see split_fenced).

apply_edits refuses (with the reason) an edit that would make a rule longer than config.RULE_MAX_CHARS
or add a rule beyond config.RULES_MAX_COUNT; hand-written rulesets are parsed as they are.

The store keeps, under act_rulesets/<experiment>/, ruleset_<version>.txt (the text) and
ruleset_<version>.json (its metadata). Version 0 is the starting ruleset; loop i runs with version i
and its optimizer writes version i + 1. Accuracies are not kept here: they are read from the
experiment's loops.jsonl (one record per finished loop). One writer per experiment at a time.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from helpers import config
from helpers.records import loops_path, read_jsonl, ruleset_sha, rulesets_dir, write_atomic, write_json

FENCE_START = "<!-- prompt-learning:rules:start -->"
FENCE_END = "<!-- prompt-learning:rules:end -->"

_HEADER = "<!-- prompt-learning ruleset: keep the [Rn] ids when editing by hand; next id R{next_id} -->"
_HEADER_RE = re.compile(r"^<!-- prompt-learning ruleset:.*next id R([0-9]+) -->$")
_RULE_RE = re.compile(r"^- \[R([0-9]+)\](?: (.*))?$")
_BULLET_RE = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)$")
_RULE_ID_RE = re.compile(r"^R[1-9]\d*$")


# --- the format ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """One rule: a stable id ("R3") and its text (trailing spaces and blank lines removed)."""

    id: str
    text: str

    @property
    def number(self) -> int:
        return int(self.id[1:])


@dataclass
class Ruleset:
    """Rules in order, and the next free id number (ids are never reused)."""

    rules: list[Rule] = field(default_factory=list)
    next_id: int = 1

    @property
    def ids(self) -> list[str]:
        return [rule.id for rule in self.rules]

    def get(self, rule_id: str) -> Rule | None:
        return next((rule for rule in self.rules if rule.id == rule_id), None)

    def render(self) -> str:
        return render_ruleset(self)


def normalize_rule_text(text: str) -> str:
    """The canonical text of a rule: no trailing spaces, no blank lines, no outer whitespace."""
    lines = [line.rstrip() for line in str(text).strip().splitlines()]
    return "\n".join(line for line in lines if line.strip())


def make_rule(rule_id: str, text: str) -> Rule:
    if not _RULE_ID_RE.match(rule_id):
        raise ValueError(f"Bad rule id {rule_id!r}: ids look like R1, R2, R17.")
    body = normalize_rule_text(text)
    if not body:
        raise ValueError(f"Rule {rule_id} has no text.")
    return Rule(rule_id, body)


def render_ruleset(ruleset: Ruleset) -> str:
    """The Markdown text of a ruleset ("" for a fresh, empty one).

    Texts are written normalized (normalize_rule_text, which also turns every kind of line break into
    a continuation line), so parsing the result gives the same rules back; a rule with no text left is
    left out. The header's next id is never below the highest rule id + 1.
    """
    if not ruleset.rules and ruleset.next_id <= 1:
        return ""
    next_id = max([ruleset.next_id, *(rule.number + 1 for rule in ruleset.rules)])
    lines = [_HEADER.format(next_id=next_id)]
    for rule in ruleset.rules:
        body = normalize_rule_text(rule.text)
        if not body:
            continue
        first, *rest = body.split("\n")
        lines.append(f"- [{rule.id}] {first}")
        lines.extend(f"  {line}" for line in rest)
    return "\n".join(lines) + "\n"


def parse_ruleset(text: str | None) -> Ruleset:
    """A ruleset from its text: our id'd format, or any hand-written rules file (imported).

    Raises ValueError, naming the line, when an id'd ruleset holds a line that belongs to no rule
    or repeats an id.
    """
    text = text or ""
    if not text.strip():
        return Ruleset()
    lines = text.splitlines()
    if any(_RULE_RE.match(line) or _HEADER_RE.match(line.strip()) for line in lines):
        return _parse_ided(lines)
    return _import_free_form(lines)


def _parse_ided(lines: list[str]) -> Ruleset:
    entries: list[list[Any]] = []  # [number or None, [text lines]]
    declared_next = 0
    for number, line in enumerate(lines, 1):
        rule = _RULE_RE.match(line)
        header = _HEADER_RE.match(line.strip())
        bullet = _BULLET_RE.match(line)
        if rule:
            entries.append([int(rule.group(1)), [rule.group(2) or ""]])
        elif line.startswith("  ") and entries:  # before the header: a rule may quote a header line
            entries[-1][1].append(line[2:])
        elif header:
            declared_next = int(header.group(1))
        elif bullet and not line.startswith(" "):
            entries.append([None, [bullet.group(1)]])  # added by hand: gets a fresh id below
        elif line.strip():
            raise ValueError(
                f"Ruleset line {number} belongs to no rule: {line.strip()[:80]!r}. Write rules as "
                "'- [R<n>] text' (or '- text' for a new rule) and continue a rule on lines starting "
                "with two spaces."
            )
    numbers = [n for n, _ in entries if n is not None]
    duplicates = sorted({n for n in numbers if numbers.count(n) > 1})
    if duplicates:
        raise ValueError(f"Rule id R{duplicates[0]} appears more than once; give each rule its own id.")
    next_id = max([declared_next, *(n + 1 for n in numbers), 1])
    rules = []
    for number, body in entries:
        if number is None:
            number, next_id = next_id, next_id + 1
        text = normalize_rule_text("\n".join(body))
        if text:
            rules.append(Rule(f"R{number}", text))
    return Ruleset(rules, next_id)


def _import_free_form(lines: list[str]) -> Ruleset:
    items: list[str] = []
    current: list[str] = []
    heading = ""

    def flush() -> None:
        body = normalize_rule_text("\n".join(current))
        if body:
            items.append(f"{heading}: {body}" if heading else body)
        current.clear()

    for line in lines:
        stripped = line.strip()
        bullet = _BULLET_RE.match(stripped)
        if stripped.startswith("#"):
            flush()
            heading = stripped.lstrip("#").strip()
        elif not stripped:
            flush()
        elif bullet and not line.startswith("    "):
            flush()
            current.append(bullet.group(1))
        else:
            current.append(stripped if not current else line.rstrip())
    flush()
    return Ruleset([Rule(f"R{i}", text) for i, text in enumerate(items, 1)], len(items) + 1)


def split_fenced(text: str) -> tuple[str, str, str] | None:
    """(before, region, after) when `text` has the two fence lines, else None.

    A fence line starts with its marker (trailing spaces allowed); an indented one is text, so a rule
    quoting a marker (rendered as an indented continuation line) never ends the region. `before` ends
    with the start line (and its newline), `after` begins with the end line, so before + region +
    after == text. Raises ValueError for a half or repeated fence.
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip() == FENCE_START]
    ends = [i for i, line in enumerate(lines) if line.rstrip() == FENCE_END]
    if not starts and not ends:
        return None
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(
            f"The editable region must be marked by exactly one line {FENCE_START!r} followed later by "
            f"exactly one line {FENCE_END!r} (found {len(starts)} start and {len(ends)} end lines)."
        )
    start, end = starts[0], ends[0]
    return "".join(lines[:start + 1]), "".join(lines[start + 1:end]), "".join(lines[end:])


def parse_rules_text(text: str | None) -> Ruleset:
    """The rules of a ruleset text, or of the fenced region of a whole prompt."""
    text = text or ""
    fenced = split_fenced(text)
    return parse_ruleset(fenced[1] if fenced else text)


def render_stats(text: str | None) -> dict[str, int]:
    """{"rules": number of rules, "tokens": tokens of the whole text}; never raises on odd text."""
    from helpers.tokens import count_tokens

    try:
        rules = len(parse_rules_text(text).rules)
    except ValueError:
        rules = len(_import_free_form((text or "").splitlines()).rules)
    return {"rules": rules, "tokens": count_tokens(text or "")}


# --- edits -----------------------------------------------------------------------------------------
EDIT_OPS = ("add", "update", "merge", "delete")


def apply_edits(ruleset: Ruleset, edits: Sequence[Mapping[str, Any]]) -> tuple[Ruleset, list[dict], list[dict]]:
    """Apply the optimizer's edits in order: (new ruleset, applied edits, rejected edits).

    add {text}; update {id, text}; merge {ids: [two or more], text} (the merged rule takes a new id at
    the first one's place); delete {id}. Each may carry `reason` (a string) and `sources` (a list of
    instance ids). Never raises on what a model wrote: an edit that is malformed (not an object, an
    unknown op, a missing field, a field of the wrong type) or cannot be applied (an unknown id, a
    text over config.RULE_MAX_CHARS, an add beyond config.RULES_MAX_COUNT) is returned in `rejected`
    with a `rejection` saying why; the others still apply. Applied adds and merges record the id they
    created as `new_id`.
    """
    rules, next_id = list(ruleset.rules), ruleset.next_id
    applied, rejected = [], []
    for raw in edits:
        if not isinstance(raw, Mapping):
            rejected.append({"op": None, "value": raw, "rejection": "an edit must be a JSON object with an "
                             f"`op`, not {type(raw).__name__}"})
            continue
        edit = dict(raw)
        try:
            rules, next_id = _apply_one(rules, next_id, edit)
            applied.append(edit)
        except ValueError as error:
            rejected.append({**edit, "rejection": str(error)})
    return Ruleset(rules, next_id), applied, rejected


def _apply_one(rules: list[Rule], next_id: int, edit: dict[str, Any]) -> tuple[list[Rule], int]:
    """The rules after one edit; ValueError saying why it cannot apply."""
    op = edit.get("op")
    if not isinstance(op, str) or op not in EDIT_OPS:
        raise ValueError(f"unknown op {op!r}: use one of {', '.join(EDIT_OPS)}")
    _check_provenance(edit)
    ids = [r.id for r in rules]

    def existing(rule_id: Any) -> int:
        if not isinstance(rule_id, str):
            raise ValueError(f"{op} needs `id`: a rule id such as 'R3', not {rule_id!r}")
        if rule_id not in ids:
            raise ValueError(f"no rule {rule_id!r} to {op} (rules: {', '.join(ids) or 'none'})")
        return ids.index(rule_id)

    if op == "add":
        rule = make_rule(f"R{next_id}", _edit_text(edit))
        if len(rules) >= config.RULES_MAX_COUNT:
            raise ValueError(f"the ruleset already holds {len(rules)} rules, the most allowed "
                             f"(RULES_MAX_COUNT={config.RULES_MAX_COUNT}): merge or delete rules first")
        edit["new_id"] = rule.id
        return rules + [rule], next_id + 1
    if op == "update":
        index = existing(edit.get("id"))
        return rules[:index] + [make_rule(rules[index].id, _edit_text(edit))] + rules[index + 1:], next_id
    if op == "delete":
        index = existing(edit.get("id"))
        return rules[:index] + rules[index + 1:], next_id
    merged = edit.get("ids")  # op == "merge"
    if not isinstance(merged, list) or not all(isinstance(i, str) for i in merged) or len(set(merged)) < 2:
        raise ValueError(f"merge needs `ids`: a list of two or more rule ids such as ['R2', 'R5'], not {merged!r}")
    first = min(existing(rule_id) for rule_id in merged)
    rule = make_rule(f"R{next_id}", _edit_text(edit))
    edit["new_id"] = rule.id
    kept = [r for r in rules if r.id not in merged]
    position = len([r for r in rules[:first] if r.id not in merged])
    return kept[:position] + [rule] + kept[position:], next_id + 1


def _edit_text(edit: Mapping[str, Any]) -> str:
    """The edit's rule text, normalized; ValueError when missing, not a string, empty or too long."""
    text = edit.get("text")
    if not isinstance(text, str):
        raise ValueError(f"{edit.get('op')} needs `text`: the rule as a string, not {text!r:.80}")
    body = normalize_rule_text(text)
    if len(body) > config.RULE_MAX_CHARS:
        raise ValueError(f"the rule has {len(body)} characters, more than RULE_MAX_CHARS={config.RULE_MAX_CHARS}: "
                         "write it shorter, or as several rules")
    return body


def _check_provenance(edit: Mapping[str, Any]) -> None:
    """ValueError when `reason` is not a string or `sources` not a list of strings (both optional)."""
    if "reason" in edit and not isinstance(edit["reason"], str):
        raise ValueError(f"`reason` must be a string, not {edit['reason']!r:.80}")
    sources = edit.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise ValueError(f"`sources` must be a list of instance ids (strings), not {sources!r:.80}")


# --- diff ------------------------------------------------------------------------------------------
@dataclass
class RulesetDiff:
    """Rule-by-rule difference between two versions, matched by id."""

    old_version: int | None
    new_version: int | None
    added: list[Rule] = field(default_factory=list)
    removed: list[Rule] = field(default_factory=list)
    changed: list[tuple[Rule, Rule]] = field(default_factory=list)  # (old, new)
    unchanged: list[str] = field(default_factory=list)  # ids

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    def __str__(self) -> str:
        lines = [f"Ruleset v{self.old_version} -> v{self.new_version}: {len(self.added)} added, "
                 f"{len(self.removed)} removed, {len(self.changed)} changed, {len(self.unchanged)} unchanged"]
        lines += [f"+ [{r.id}] {_one_line(r.text)}" for r in self.added]
        lines += [f"- [{r.id}] {_one_line(r.text)}" for r in self.removed]
        for old, new in self.changed:
            lines += [f"~ [{old.id}] {_one_line(old.text)}", f"  -> {_one_line(new.text)}"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"old_version": self.old_version, "new_version": self.new_version,
                "added": [vars(r) for r in self.added], "removed": [vars(r) for r in self.removed],
                "changed": [{"id": o.id, "old": o.text, "new": n.text} for o, n in self.changed],
                "unchanged": list(self.unchanged)}


def diff_rulesets(old: Ruleset, new: Ruleset, old_version: int | None = None,
                  new_version: int | None = None) -> RulesetDiff:
    """Rule-by-rule difference from `old` to `new`, rules matched by id."""
    old_by_id = {r.id: r for r in old.rules}
    new_by_id = {r.id: r for r in new.rules}
    result = RulesetDiff(old_version, new_version)
    for rule in new.rules:
        before = old_by_id.get(rule.id)
        if before is None:
            result.added.append(rule)
        elif before.text != rule.text:
            result.changed.append((before, rule))
        else:
            result.unchanged.append(rule.id)
    result.removed = [rule for rule in old.rules if rule.id not in new_by_id]
    return result


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


# --- the store -------------------------------------------------------------------------------------
ACCURACIES = ("train_accuracy", "test_accuracy")


class RulesetStore:
    """Every version of one experiment's rules, with metadata, under act_rulesets/<experiment>/.

        store = RulesetStore("house-demo")
        v0 = store.save("", parent=None, loop=None)           # the starting ruleset
        v = store.choose_start("latest")                         # or "best", by="test_accuracy"
        text = store.load(v)
        v1 = store.save(new_text, parent=v, loop=0, report=optimizer.last_report, model="gpt-5")
        print(store.diff(v, v1)); store.rollback(v); store.export(v1, "/path/to/project")

    Accuracies come from the experiment's loops.jsonl (under `results_root`, default act_results/):
    each finished loop's record names the `ruleset_version` it ran with and its `train_accuracy` and
    `test_accuracy`; when a version ran in several loops, the latest measurement wins. The metadata
    keeps the text's hash as `ruleset_sha` (helpers.records.ruleset_sha), no accuracies.

    A version exists once its .json is written (the .txt is written first), so a kill between the
    two leaves no half version. Saving again for a loop that already wrote a version replaces that
    version (a loop re-run after a crash), so version numbers keep following loop numbers.
    """

    def __init__(self, experiment: str, root: Path | str | None = None, *,
                 results_root: Path | str | None = None):
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
            raise LookupError(f"No ruleset saved yet in {self.dir}: save the starting ruleset first "
                              "(store.save('', parent=None, loop=None)).")
        return versions[-1]

    def _resolve(self, version: int | str) -> int:
        if version in ("latest", "head"):
            return self.head_version()
        if version == "best":  # the best training accuracy measured so far (else the newest)
            best = self.best_version("train_accuracy")
            return best if best is not None else self.head_version()
        if isinstance(version, str) and version.lstrip("v").isdigit():
            version = int(version.lstrip("v"))
        if not isinstance(version, int) or version not in self.versions():
            raise LookupError(f"Ruleset version {version!r} does not exist in {self.dir}; saved "
                              f"versions: {self.versions() or 'none'}.")
        return version

    def load(self, version: int | str = "latest") -> str:
        """The text of a version, exactly as saved (line endings included)."""
        return self.text_path(self._resolve(version)).read_bytes().decode("utf-8")

    def rules(self, version: int | str = "latest") -> Ruleset:
        return parse_rules_text(self.load(version))

    def metadata(self, version: int | str = "latest") -> dict[str, Any]:
        return json.loads(self.meta_path(self._resolve(version)).read_text(encoding="utf-8"))

    def history(self) -> "Any":
        """One row per version (a DataFrame): version, parent, loop, kind, accuracies, rules, cost."""
        import pandas as pd

        columns = ["version", "parent", "loop", "kind", "train_accuracy", "test_accuracy", "rules",
                   "tokens", "edits", "rejected_edits", "cost_usd", "model", "dry_run", "created_at"]
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
    def save(self, text: str, *, parent: int | None = None, loop: int | None = None,
             report: Any = None, model: str | None = None, dry_run: bool = False,
             kind: str | None = None, **extra: Any) -> int:
        """Save a ruleset text as a new version (or replace the one `loop` already wrote); returns it.

        `report` is the optimizer's last_report (an object with to_dict() or a dict): its edits,
        rejected edits, cost and errors are kept in the metadata.
        """
        text = text or ""
        if parent is not None:
            self._resolve(parent)
        versions = self.versions()
        version = self._version_of_loop(loop, versions)
        if version is None:
            version = versions[-1] + 1 if versions else 0
        report_dict = _as_dict(report)
        stats = render_stats(text)
        meta = {
            "version": version, "parent": parent, "loop": loop,
            "kind": kind or ("initial" if parent is None and loop is None else "optimized"),
            "experiment": self.experiment,
            "rules": stats["rules"], "tokens": stats["tokens"], "ruleset_sha": ruleset_sha(text),
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
        records = [r for r in read_jsonl(loops_path(self.experiment, self.results_root))
                   if isinstance(r.get("ruleset_version"), int) and isinstance(r.get("loop"), int)]
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
        return self.save(self.load(version), parent=version, loop=None, model=old.get("model"),
                         dry_run=bool(old.get("dry_run")), kind="rollback", rolled_back_from=version,
                         previous_head=head, reason=reason)

    # --- choosing ---
    def best_version(self, by: str = "train_accuracy", before_loop: int | None = None) -> int | None:
        """The version noise lets us call best (helpers.evidence.gated_best): finished loops in order, a
        version replacing the incumbent only on a significant paired gain on the `by` split (or when not
        worse with fewer rules). None when no loop has finished. `before_loop`: only loops before it."""
        from helpers.evidence import gated_best

        split = "test" if _accuracy_name(by) == "test_accuracy" else "train"
        best, _ = gated_best(self.experiment, before_loop=before_loop, split=split, results_root=self.results_root)
        return best

    def choose_start(self, mode: str = "latest", by: str = "train_accuracy", loop: int | None = None) -> int:
        """The version the next loop runs with (and optimizes from).

        "latest": the newest version (the cookbook's behaviour).
        "best": the version the paired gate keeps (best_version: a gain inside the noise never replaces
          the incumbent), on the training split by default ("test_accuracy" chooses on the test split,
          which makes it part of training: its accuracy is then no longer an unbiased estimate). A
          version written from that best one and not run yet comes first, so every candidate gets
          measured once; with no loop finished yet, the newest version.
        `loop`: when given, versions written by loop `loop` or later are ignored (a loop re-run after
        a crash starts from what it started from the first time).
        """
        candidates = self._candidates(loop)
        if not candidates:
            raise LookupError(f"No ruleset version to start loop {loop} from in {self.dir}: save the "
                              "starting ruleset first.")
        if mode == "latest":
            return candidates[-1]
        if mode != "best":
            raise ValueError(f"start_from must be 'latest' or 'best', not {mode!r}.")
        best = self.best_version(by, before_loop=loop)
        if best is None:
            return candidates[-1]
        by = _accuracy_name(by)
        measured = self._measured(loop)
        untried = [v for v in candidates
                   if self.metadata(v).get("parent") == best and by not in measured.get(v, {})]
        return untried[-1] if untried else best

    def _candidates(self, before_loop: int | None) -> list[int]:
        versions = self.versions()
        if before_loop is None:
            return versions
        return [v for v in versions
                if self.metadata(v).get("loop") is None or self.metadata(v)["loop"] < before_loop]

    # --- comparing and exporting ---
    def diff(self, old: int | str, new: int | str = "latest") -> RulesetDiff:
        """Rule-by-rule difference (by id) from version `old` to version `new`."""
        old_v, new_v = self._resolve(old), self._resolve(new)
        return diff_rulesets(self.rules(old_v), self.rules(new_v), old_v, new_v)

    def export(self, version: int | str, project_dir: Path | str, *, format: str | None = None,
               overwrite: bool = False) -> Path:
        """Write a version into a project's rules file; returns the path written.

        `format`: a rules file (any path in the project, e.g. "AGENTS.md") or an agent's name (its rules
        file); None: the default agent's (config.AGENT). A missing file is created with
        the version's text. An existing file keeps the team's text byte for byte: the learned rules go
        into its fenced section (replaced when it has one, added when not); overwrite=True replaces the
        whole file instead. A folder of rule files gets a file of its own in it.
        """
        from helpers.workspaces import LEARNED_FILE, insert_section

        text = self.load(version)
        project = Path(project_dir)
        if not project.is_dir():
            raise FileNotFoundError(f"Project folder {project} does not exist.")
        target = project / rules_file_for(format or config.AGENT)
        if target.is_dir():
            target = target / LEARNED_FILE
        if overwrite or not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            return write_atomic(target, text)
        original = target.read_bytes().decode("utf-8", errors="surrogateescape")
        fenced, learned = split_fenced(original), (split_fenced(text) or ("", text, ""))[1]
        updated = (fenced[0] + learned + fenced[2]) if fenced else insert_section(original, learned)
        return write_atomic(target, updated.encode("utf-8", errors="surrogateescape"))


def rules_file_for(format: str) -> str:
    """The rules file a format names: the rules file of a registered agent (another bare word is an
    unknown agent), else the file or folder as given ("AGENTS.md", "rules/", "docs/AGENTS.md"), which
    must stay inside the project (relative, no "..")."""
    if "." not in format and "/" not in format:  # a bare word names an agent ("rules/" names a folder)
        from helpers.agents import agent_class

        return agent_class(format).rules_file
    if not format or Path(format).is_absolute() or ".." in Path(format).parts:
        raise ValueError(f"A rules file must be a path inside the project, such as 'AGENTS.md', or an agent's "
                         f"name; not {format!r}.")
    return format


def import_rules_file(path: Path | str) -> str:
    """A team's existing rules file as a starting ruleset that keeps its structure (headings, prose, code
    blocks) byte for byte: see with_learned_section."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No rules file at {path}: give the path of the team's rules file.")
    return with_learned_section(path.read_bytes().decode("utf-8", errors="surrogateescape"))


def with_learned_section(text: str) -> str:
    """`text` with an empty fenced section after it, where the optimizer writes the learned rules; the
    team's text is never parsed into rules or reformatted. Text that has a fenced section comes back as is."""
    if split_fenced(text):
        return text
    return text + ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + f"{FENCE_START}\n{FENCE_END}\n"


def _accuracy_name(by: str) -> str:
    name = {"train": "train_accuracy", "test": "test_accuracy"}.get(by, by)
    if name not in ACCURACIES:
        raise ValueError(f"Choose the best version by 'train_accuracy' or 'test_accuracy', not {by!r}.")
    return name


def _as_dict(report: Any) -> dict[str, Any]:
    if report is None:
        return {}
    if isinstance(report, Mapping):
        return dict(report)
    if hasattr(report, "to_dict"):
        return report.to_dict()
    raise TypeError(f"report must be the optimizer's last_report (or a dict), not {type(report).__name__}.")

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "RulesetStore", "Ruleset", "Rule", "RulesetDiff", "parse_ruleset", "render_ruleset", "parse_rules_text",
    "apply_edits", "diff_rulesets", "split_fenced", "render_stats", "import_rules_file", "with_learned_section",
    "rules_file_for",
]
