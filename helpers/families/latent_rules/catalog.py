"""The catalogue of latent rules, read from catalog.toml: what a good page follows, though no prompt says so at first.

Each LatentRule has an id (L001...), a one-line English statement (what a learned instruction should say),
paraphrase keys (words that, all on one line of a prompt, name the rule: the scripted generator's test for "this
rule is stated"), a category, a difficulty and a checker, named in the file and found in checks_sections.py or
checks_elements.py. `rule.check(page)` is pure: None when the page follows the rule, else one English failure
message naming where and what, e.g.

    section 4 (type 'gallery'): image 2 has no alt text; every image needs a non-empty alt text

The catalogue is ordered: the first N rules are the active set of the N-rule benchmark (10, 50, 100). All rules
hold at once on one page (tests build such a page). A rule that does not apply to a page (no form, no gallery) is
followed by it. A malformed catalogue is one CatalogError naming the file and the rule, on import.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence, TypeGuard

from helpers.families.latent_rules import checks_elements, checks_sections
from helpers.families.latent_rules.schema import FIELD_TYPES, SECTION_TYPES

CATALOG = Path(__file__).resolve().parent / "catalog.toml"
FINDERS = {**checks_sections.FINDERS, **checks_elements.FINDERS}  # check name -> finder
_RULE_KEYS = {"id", "category", "difficulty", "statement", "keys", "check"}


class CatalogError(ValueError):
    """A latent-rules catalogue that cannot be read as one: its path, the rule and what is wrong."""


@dataclass(frozen=True)
class LatentRule:
    """One latent rule. `find(page)` lists its violations ("<where> <what>"); `check` phrases the first."""

    id: str
    statement: str
    keys: tuple[str, ...]
    category: str
    difficulty: str
    find: Callable[[dict], list[str]]

    @property
    def hint(self) -> str:
        """The statement as the tail of a failure message ("every image needs ...")."""
        text = self.statement.rstrip(".")
        return text[:1].lower() + text[1:] if text[1:2].islower() else text  # "FAQ ..." stays "FAQ ..."

    def check(self, page: dict) -> str | None:
        """None when `page` follows the rule, else the failure message. Never raises."""
        try:
            found = self.find(page if isinstance(page, dict) else {})
        except Exception as error:  # a page shaped too oddly to read counts as breaking the rule
            found = [f"the page could not be read for this rule ({type(error).__name__}: {error})"]
        if not found:
            return None
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return f"{found[0]}{more}; {self.hint}"


def load_catalog(path: Path | str = CATALOG) -> tuple[tuple[str, ...], tuple[str, ...], tuple[LatentRule, ...]]:
    """(categories, difficulties, rules) read from `path`, every rule checked (CatalogError naming what is wrong)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CatalogError(f"latent-rules catalogue {path}: {error}") from None
    categories, difficulties = data.get("categories"), data.get("difficulties")
    if not (_strings(categories) and _strings(difficulties)):
        _fail(path, "", "categories and difficulties are lists of words")
    rules = data.get("rule")
    if not (isinstance(rules, list) and rules):
        _fail(path, "", "holds no [[rule]]")
    found = tuple(_rule(path, n, entry, categories, difficulties) for n, entry in enumerate(rules, 1))
    checks = [entry["check"] for entry in rules]
    _require(path, "", len(set(checks)) == len(checks), "a check is named by more than one rule")
    _require(path, "", {r.category for r in found} == set(categories), "every category has a rule")
    return tuple(categories), tuple(difficulties), found


def _rule(path: Path, number: int, entry: Any, categories: list[str], difficulties: list[str]) -> LatentRule:
    rule_id = f"L{number:03d}"
    _require(
        path,
        f"rule {number}",
        isinstance(entry, dict) and set(entry) == _RULE_KEYS,
        f"needs exactly the keys {sorted(_RULE_KEYS)}",
    )
    _require(
        path, f"rule {number}", entry["id"] == rule_id, f"is rule {number}: its id is {rule_id}, not {entry['id']!r}"
    )
    where = f"rule {rule_id}"
    _require(path, where, entry["category"] in categories, f"category {entry['category']!r} is not one of {categories}")
    _require(
        path,
        where,
        entry["difficulty"] in difficulties,
        f"difficulty {entry['difficulty']!r} is not one of {difficulties}",
    )
    statement = entry["statement"]
    _require(
        path,
        where,
        isinstance(statement, str) and statement.strip() and "\n" not in statement and statement.endswith("."),
        "statement is one line ending with a period",
    )
    _require(path, where, _strings(entry["keys"]) and entry["keys"], "keys is a non-empty list of words")
    _require(path, where, entry["check"] in FINDERS, f"check {entry['check']!r} is no finder of checks_*.py")
    statement = statement.replace("{section_types}", ", ".join(SECTION_TYPES))
    statement = statement.replace("{field_types}", ", ".join(FIELD_TYPES))
    return LatentRule(
        rule_id, statement, tuple(entry["keys"]), entry["category"], entry["difficulty"], FINDERS[entry["check"]]
    )


def _require(path: Path, where: str, ok: Any, what: str) -> None:
    if not ok:
        _fail(path, where, what)


def _fail(path: Path, where: str, what: str) -> NoReturn:
    raise CatalogError(f"latent-rules catalogue {path}: {where + ': ' if where else ''}{what}")


def _strings(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


CATEGORIES, DIFFICULTIES, RULES = load_catalog()
RULES_BY_ID = {rule.id: rule for rule in RULES}


def active_rules(rules: int | Sequence[str] | Sequence[LatentRule] = 10) -> list[LatentRule]:
    """The active rule set: the first N of the catalogue, or the rules with the given ids (or rules).

    Raises ValueError for N outside 1..len(RULES) or an unknown id.
    """
    if isinstance(rules, int):
        if not 1 <= rules <= len(RULES):
            raise ValueError(f"n_rules must be between 1 and {len(RULES)}, not {rules}.")
        return list(RULES[:rules])
    chosen = []
    for rule in rules:
        if isinstance(rule, LatentRule):
            chosen.append(rule)
        elif rule in RULES_BY_ID:
            chosen.append(RULES_BY_ID[rule])
        else:
            raise ValueError(f"Unknown latent rule {rule!r}: ids run from L001 to L{len(RULES):03d}.")
    return chosen


def check_page(page: dict | None, rules: Sequence[LatentRule]) -> dict[str, str | None]:
    """rule id -> None (followed) or its failure message, for each rule in order. Never raises."""
    return {rule.id: rule.check(page or {}) for rule in rules}


__all__ = [
    "LatentRule",
    "CatalogError",
    "RULES",
    "RULES_BY_ID",
    "CATEGORIES",
    "DIFFICULTIES",
    "load_catalog",
    "active_rules",
    "check_page",
]
