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

The optimizer's edits are applied by helpers.rules.edits; hand-written rulesets are parsed as they are.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.rules.planted import warn_planted
from helpers.rules.file_formats import LEARNED_FILE, file_in_folder, front_matter_for, rules_format, with_front_matter

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
    return "".join(lines[: start + 1]), "".join(lines[start + 1 : end]), "".join(lines[end:])


def parse_rules_text(text: str | None) -> Ruleset:
    """The rules of a ruleset text, or of the fenced region of a whole prompt."""
    text = text or ""
    fenced = split_fenced(text)
    return parse_ruleset(fenced[1] if fenced else text)


def render_stats(text: str | None) -> dict[str, int]:
    """{"rules": number of rules, "tokens": tokens of the whole text}; never raises on odd text."""
    from helpers.core.tokens import count_tokens

    try:
        rules = len(parse_rules_text(text).rules)
    except ValueError:
        rules = len(_import_free_form((text or "").splitlines()).rules)
    return {"rules": rules, "tokens": count_tokens(text or "")}


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
        lines = [
            f"Ruleset v{self.old_version} -> v{self.new_version}: {len(self.added)} added, "
            f"{len(self.removed)} removed, {len(self.changed)} changed, {len(self.unchanged)} unchanged"
        ]
        lines += [f"+ [{r.id}] {_one_line(r.text)}" for r in self.added]
        lines += [f"- [{r.id}] {_one_line(r.text)}" for r in self.removed]
        for old, new in self.changed:
            lines += [f"~ [{old.id}] {_one_line(old.text)}", f"  -> {_one_line(new.text)}"]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "old_version": self.old_version,
            "new_version": self.new_version,
            "added": [vars(r) for r in self.added],
            "removed": [vars(r) for r in self.removed],
            "changed": [{"id": o.id, "old": o.text, "new": n.text} for o, n in self.changed],
            "unchanged": list(self.unchanged),
        }


def diff_rulesets(
    old: Ruleset, new: Ruleset, old_version: int | None = None, new_version: int | None = None
) -> RulesetDiff:
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
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# --- the agent's rules file -------------------------------------------------------------------------
# The learned rules go between these lines (the ruleset store's fence lines, so a team's file with a
# learned section is also a fenced prompt the optimizer edits in place). A team's own rules file (any
# format of helpers.rules.file_formats: AGENTS.md, CLAUDE.md, a Cursor rule, a skill...) keeps its text byte
# for byte around them, front matter first, and only this section is left out of the patch.
SECTION_START = FENCE_START
SECTION_END = FENCE_END


def insert_section(original: str, ruleset: str) -> str:
    """`original` with the ruleset appended as a marked section; remove_section() gives `original` back."""
    body = ruleset if ruleset.endswith("\n") else ruleset + "\n"
    return original + ("\n" if original else "") + f"{SECTION_START}\n{body}{SECTION_END}\n"


def remove_section(text: str) -> str:
    """`text` without the learned section (and the line break insert_section put before it)."""
    start = text.rfind(SECTION_START)
    if start < 0:
        return text
    end = text.find(SECTION_END, start)
    after = text[end + len(SECTION_END) :] if end >= 0 else ""
    before = text[:start]
    before = before[:-1] if before.endswith("\n") else before
    return before + (after[1:] if after.startswith("\n") else after)


def new_rules_file(rules_file: str, ruleset: str) -> str:
    """The text of a new file at `rules_file` (a path in a project) holding `ruleset`: the learned rules in the
    marked section (a ruleset that has one, an imported team file, as it is), after the front matter the
    format needs (helpers.rules.file_formats), unless the ruleset opens with front matter of its own."""
    if split_fenced(ruleset):
        return with_front_matter(rules_file, ruleset)
    return insert_section(front_matter_for(rules_file), ruleset)  # remove_section gives the front matter back


def rules_file_for(format: str) -> str:
    """The rules file a format names: the rules file of a registered agent (another bare word is an
    unknown agent), else the file or folder as given ("AGENTS.md", "rules/", ".cursor/rules/style.mdc"),
    which must stay inside the project (relative, no ".."), with a valid `<name>` where its format has one
    (helpers.rules.file_formats.rules_format: a ValueError before anything is written)."""
    if "." not in format and "/" not in format:  # a bare word names an agent ("rules/" names a folder)
        from helpers.core.registry import agent_class

        rules_file = getattr(agent_class(format), "rules_file", None)
        if not isinstance(rules_file, str):
            raise ValueError(f"The agent {format!r} names no rules file.")
        return rules_file
    rules_format(format)  # a bad <name> first: the most precise error
    if not format or Path(format).is_absolute() or ".." in Path(format).parts:
        raise ValueError(
            f"A rules file must be a path inside the project, such as 'AGENTS.md', or an agent's name; not {format!r}."
        )
    return format


def import_rules_file(path: Path | str) -> str:
    """A team's existing rules file (any format, front matter included) as a starting ruleset that keeps its
    structure (headings, prose, code blocks) byte for byte: see with_learned_section. A file written by export
    comes back as it is: its learned rules are its fenced section's. A folder of rule files gives its file of
    our own (rules_formats.file_in_folder; an empty section when it has none yet: the team's files stay where
    the agent reads them, and are checked for planted lines too). A line that looks like a planted instruction
    is kept, and said: one helpers.rules.planted.PlantedTextWarning per line, naming the file, the line and why."""
    path = Path(path)
    if path.is_dir():
        ours = file_in_folder(path)
        for team_file in sorted(p for p in path.rglob("*") if p.is_file() and p != ours):
            warn_planted(team_file.read_bytes().decode("utf-8", errors="replace"), str(team_file))
        if not ours.exists():
            return with_learned_section("")
        path = ours
    if not path.is_file():
        raise FileNotFoundError(f"No rules file at {path}: give the path of the team's rules file.")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{path} is not UTF-8 ({error.reason} at byte {error.start}): rules files are read and "
            "written as UTF-8. Convert it (e.g. iconv -f latin1 -t utf-8), commit, and import again."
        ) from None
    warn_planted(text, str(path))
    return with_learned_section(text)


def with_learned_section(text: str) -> str:
    """`text` with an empty fenced section after it, where the optimizer writes the learned rules; the
    team's text is never parsed into rules or reformatted. Text that has a fenced section comes back as is."""
    if split_fenced(text):
        return text
    return (
        text
        + ("\n" if text and not text.endswith("\n") else "")
        + ("\n" if text else "")
        + f"{FENCE_START}\n{FENCE_END}\n"
    )


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "Ruleset",
    "Rule",
    "RulesetDiff",
    "parse_ruleset",
    "render_ruleset",
    "parse_rules_text",
    "diff_rulesets",
    "split_fenced",
    "render_stats",
    "import_rules_file",
    "with_learned_section",
    "rules_file_for",
    "insert_section",
    "remove_section",
    "new_rules_file",
    "FENCE_START",
    "FENCE_END",
    "LEARNED_FILE",
]
