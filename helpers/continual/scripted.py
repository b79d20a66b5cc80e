"""The scripted optimizer of 05's dry run: it reads a team's feedback as feedback, not as failed tasks.

    enable_dry_run(session)   # a dry-run session's scripted server answers continual proposals this way

For each feedback record in the request, it finds the house conventions the record's own words carry (a review
comment about "a bare ValueError", a CI failure "no entry under '## Unreleased'", ...: SIGNALS) and proposes
one rule per convention the current rules lack, citing as sources exactly the records that carry it, with a
reason in the record's own terms ("maria-reviewer's review comment: '...'", "CI test ... failed: ..."). A record
that carries no convention (a coverage note) is cited by no rule. It shows the machinery, not a result.
"""

from __future__ import annotations

import json
import re
import textwrap
from typing import Any

from helpers.continual.proposals import QUOTE_END
from helpers.llm.scripted_server import Reply, Rule, message_text

CONTINUAL_MARK = "quoted feedback from outside the team's instructions"  # proposals.QUOTE_START, for feedback
# Words in a team's feedback that carry each team-wide house convention (helpers.families.coding.house_suite).
SIGNALS: dict[str, str] = {
    "errors": r"bare (?:ValueError|KeyError|Exception)|own exceptions?|exception types?",
    "changelog": r"## Unreleased|changelog",
    "decimal": r"\bDecimal\b|\bfloats?\b",
    "logging": r"\bprint\(|\blogger\b",
    "docs_types": r"type hints?|docstring",
}
SOURCE_WORDS = {
    "github-review-comments": "review comment",
    "github-reviews": "review",
    "junit": "CI report",
    "note": "note",
    "phoenix": "Phoenix annotation",
}
EXAMPLE = re.compile(r"(?m)^### Example (\S+)\n")
# who wrote a record: on the feedback line, or on the first line of its fence (helpers.core.fences)
WHO = re.compile(r"- feedback: (?:\n<<<DATA-\w+ [^\n]*>>>\n)?(.+?) \(([\w-]+)[,)]")


def feedback_examples(text: str) -> list[dict[str, str]]:
    """Each example of a continual optimizer request: its feedback id, who wrote it, the source kind and the
    quoted words (between the quote markers)."""
    found = []
    parts = EXAMPLE.split(text)
    for record_id, chunk in zip(parts[1::2], parts[2::2]):
        who = WHO.search(chunk)
        quoted = chunk.rsplit(CONTINUAL_MARK, 1)[-1].split(QUOTE_END, 1)[0] if CONTINUAL_MARK in chunk else ""
        quoted = quoted.split(">>>", 1)[-1].strip()
        found.append(
            {
                "id": record_id,
                "author": who.group(1) if who else "someone",
                "source": who.group(2) if who else "",
                "text": " ".join(quoted.split()),
            }
        )
    return found


def conventions_in(words: str) -> list[str]:
    """The house conventions a piece of feedback carries, by SIGNALS, in SIGNALS' order."""
    return [cid for cid, pattern in SIGNALS.items() if re.search(pattern, words, re.IGNORECASE)]


def signal_reason(example: dict[str, str]) -> str:
    """Why a record supports a rule, in the record's own terms: who said what, where."""
    quote = textwrap.shorten(example["text"], 140, placeholder=" ...")
    if example["source"] == "junit":
        return quote  # "CI test <name> failed: <message>" already says what happened
    kind = SOURCE_WORDS.get(example["source"], example["source"] or "feedback")
    return f"{example['author']}'s {kind}: '{quote}'"


def continual_edits(text: str) -> list[dict[str, Any]]:
    """The scripted proposal for one continual request: one rule per convention the feedback carries and the
    current rules lack, its sources exactly the records that carry it, its reason their own words."""
    from helpers.families.coding.house_suite import CONVENTIONS

    rules, _, examples = text.partition("## Examples")
    current = rules.partition("## Current rules")[2]
    carriers: dict[str, list[dict[str, str]]] = {}
    for example in feedback_examples(examples):
        for cid in conventions_in(example["text"]):
            carriers.setdefault(cid, []).append(example)
    edits = []
    for cid, records in carriers.items():
        if CONVENTIONS[cid]["rule"] in current:
            continue
        edits.append(
            {
                "op": "add",
                "text": CONVENTIONS[cid]["rule"],
                "sources": [r["id"] for r in records],
                "reason": "; ".join(signal_reason(r) for r in records) + " (scripted dry run).",
            }
        )
    return edits


def continual_reply(request: dict) -> Reply:
    return Reply(json.dumps({"edits": continual_edits(message_text(request, "user"))}))


def enable_dry_run(session: Any) -> None:
    """Let a dry-run session's scripted model server answer continual proposals (no effect on a real session)."""
    server = getattr(session, "scripted_server", None)
    if server is not None and not any(getattr(r, "family", None) == "continual" for r in server.script.rules):
        rule = Rule(
            match=lambda request: CONTINUAL_MARK in message_text(request, "user")
            and "## Current rules" in message_text(request, "user"),
            reply=continual_reply,
        )
        rule.family = "continual"  # type: ignore[attr-defined]
        server.script.rules[:0] = [rule]


__all__ = [
    "enable_dry_run",
    "continual_edits",
    "feedback_examples",
    "conventions_in",
    "signal_reason",
    "SIGNALS",
]  # documented in CODE_APPENDIX.md
