"""The optimizer's edits of a ruleset, applied by code: the one place that refuses an edit, with the reason.

An edit is a JSON object a model wrote: add {text}; update {id, text}; merge {ids, text}; delete {id}.
apply_edits refuses (with the reason) an edit that is malformed, names no rule, would make a rule longer
than config.RULE_MAX_CHARS or add a rule beyond config.RULES_MAX_COUNT, and, when asked, one whose text
looks like a planted instruction (helpers.rules.planted) or that would take the rules over a token budget
(config.RULES_MAX_TOKENS).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from helpers.core import config
from helpers.rules.planted import planted_note, planted_reasons
from helpers.rules.ruleset import Rule, Ruleset, make_rule, normalize_rule_text, render_ruleset
from helpers.core.tokens import count_tokens

EDIT_OPS = ("add", "update", "merge", "delete")


def edits_answer_format(item: str, source: str) -> str:
    """The end of an optimizer's instructions: the answer apply_edits reads, one JSON object of EDIT_OPS edits, in
    the reader's words: `item`, what a rule is ("rule"; "instruction" for a prompt), `source`, what names an example."""
    return f"""\
Answer with one JSON object and nothing else:
{{"edits": [
  {{"op": "add", "text": "<the new {item}>", "reason": "<one line>", "sources": ["<{source}>", ...]}},
  {{"op": "update", "id": "R3", "text": "<the {item}'s new text>", "reason": "...", "sources": [...]}},
  {{"op": "merge", "ids": ["R2", "R5"], "text": "<one {item} replacing them>", "reason": "...", "sources": [...]}},
  {{"op": "delete", "id": "R4", "reason": "...", "sources": [...]}}
]}}"""


def apply_edits(
    ruleset: Ruleset, edits: Sequence[Mapping[str, Any]], *, refuse_planted: bool = False, max_tokens: int | None = None
) -> tuple[Ruleset, list[dict[str, Any]], list[dict[str, Any]]]:
    """Apply the optimizer's edits in order: (new ruleset, applied edits, rejected edits).

    add {text}; update {id, text}; merge {ids: [two or more], text} (the merged rule takes a new id at
    the first one's place); delete {id}. Each may carry `reason` (a string) and `sources` (a list of
    instance ids). Never raises on what a model wrote: an edit that is malformed (not an object, an
    unknown op, a missing field, a field of the wrong type) or cannot be applied (an unknown id, a
    text over config.RULE_MAX_CHARS, an add beyond config.RULES_MAX_COUNT) is returned in `rejected`
    with a `rejection` saying why; the others still apply. Applied adds and merges record the id they
    created as `new_id`.

    `refuse_planted`: an edit whose text looks like a planted instruction (helpers.rules.planted) is
    rejected as "planted instruction: <reasons>" (planted_note), its reasons also listed under `planted`.
    `max_tokens`: an edit that would make the rules longer than this (rules_tokens) and longer than they
    were is rejected as "would make the rules N tokens, over RULES_MAX_TOKENS=M"; an edit that shrinks
    rules already over it applies.
    """
    rules, next_id = list(ruleset.rules), ruleset.next_id
    size = rules_tokens(ruleset) if max_tokens else 0
    applied, rejected = [], []
    for raw in edits:
        if not isinstance(raw, Mapping):
            rejected.append(
                {
                    "op": None,
                    "value": raw,
                    "rejection": f"an edit must be a JSON object with an `op`, not {type(raw).__name__}",
                }
            )
            continue
        edit = dict(raw)
        planted = planted_reasons(edit["text"]) if refuse_planted and isinstance(edit.get("text"), str) else []
        if planted:
            rejected.append({**edit, "rejection": planted_note(planted), "planted": planted})
            continue
        try:
            new_rules, new_next_id = _apply_one(rules, next_id, edit)
            new_size = rules_tokens(Ruleset(new_rules, new_next_id)) if max_tokens else 0
            if max_tokens and new_size > max(max_tokens, size):
                edit.pop("new_id", None)  # no rule was made
                raise ValueError(
                    f"would make the rules {new_size} tokens, over RULES_MAX_TOKENS={max_tokens}: "
                    "merge, shorten or delete rules to make room"
                )
            rules, next_id, size = new_rules, new_next_id, new_size
            applied.append(edit)
        except ValueError as error:
            rejected.append({**edit, "rejection": str(error)})
    return Ruleset(rules, next_id), applied, rejected


def rules_tokens(ruleset: Ruleset) -> int:
    """Tokens of the rules as the agent reads them (rendered, header line included): what RULES_MAX_TOKENS caps."""
    return count_tokens(render_ruleset(ruleset))


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
            raise ValueError(
                f"the ruleset already holds {len(rules)} rules, the most allowed "
                f"(RULES_MAX_COUNT={config.RULES_MAX_COUNT}): merge or delete rules first"
            )
        edit["new_id"] = rule.id
        return rules + [rule], next_id + 1
    if op == "update":
        index = existing(edit.get("id"))
        return rules[:index] + [make_rule(rules[index].id, _edit_text(edit))] + rules[index + 1 :], next_id
    if op == "delete":
        index = existing(edit.get("id"))
        return rules[:index] + rules[index + 1 :], next_id
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
        raise ValueError(
            f"the rule has {len(body)} characters, more than RULE_MAX_CHARS={config.RULE_MAX_CHARS}: "
            "write it shorter, or as several rules"
        )
    return body


def _check_provenance(edit: Mapping[str, Any]) -> None:
    """ValueError when `reason` is not a string or `sources` not a list of strings (both optional)."""
    if "reason" in edit and not isinstance(edit["reason"], str):
        raise ValueError(f"`reason` must be a string, not {edit['reason']!r:.80}")
    sources = edit.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise ValueError(f"`sources` must be a list of instance ids (strings), not {sources!r:.80}")


__all__ = [
    "apply_edits",
    "rules_tokens",
    "edits_answer_format",
    "EDIT_OPS",
]  # the public API, documented in CODE_APPENDIX.md
