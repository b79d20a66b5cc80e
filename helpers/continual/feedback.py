"""Feedback from a team's sources, normalised: GitHub review comments and reviews, JUnit reports, Phoenix
human annotations and plain notes, each a Feedback record with its provenance (who, where, when, a link)
and stable item keys (ingesting the same item twice adds nothing). The inbox (helpers.continual.inbox)
stores them; the parsers here never touch its files.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Iterable

import pandas as pd

from helpers.continual.feedback_files import EXPECTED, BadFeedback

FEEDBACK_KINDS = ("github-review-comments", "github-reviews", "junit", "phoenix", "note")
DETAIL_CHARS = 2_000  # of a diff hunk or a test's output shown to the optimizer


@dataclass
class Feedback:
    """One piece of feedback, normalised: where it came from (`source`: its kind), what it says, where
    (a file, a test, a span), who said it, a link, when (ISO-8601), and its stable `id`. `context`:
    what the work was (a pull request or task), `outcome`: how it judged the work, `detail`: the code
    or output it points at, `items`: the source items folded into it (the keys that dedupe).
    `association`: GitHub's author_association of the author (MEMBER, CONTRIBUTOR, NONE, ...), and
    `author_type`: GitHub's account type ("User", "Bot"), read by the trust policy (helpers.continual.trust)."""

    source: str
    text: str
    where: str = ""
    author: str = ""
    url: str = ""
    at: str = ""
    id: str = ""
    context: str = ""
    outcome: str = ""
    detail: str = ""
    items: list[str] = field(default_factory=list)
    association: str = ""
    author_type: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- each source ------------------------------------------------------------------------
def parse(
    kind: str,
    data: Any,
    *,
    agent_login: str | None = None,
    context: str = "",
    author: str = "",
    url: str = "",
    at: str = "",
    many_notes: bool = False,
) -> list[Feedback]:
    """The Feedback records of raw `data` of `kind` (FEEDBACK_KINDS); notes: one per line when `many_notes`."""
    if kind == "github-review-comments":
        return github_review_comments(data, agent_login=agent_login, context=context)
    if kind == "github-reviews":
        return github_reviews(data, agent_login=agent_login, context=context)
    if kind == "junit":
        return junit_failures(data, context=context, url=url)
    if kind == "phoenix":
        return phoenix_annotations(data, context=context)
    lines = data.splitlines() if many_notes else [data]
    return [note(line, author=author, url=url, context=context, at=at) for line in lines if line.strip()]


def github_items(data: Any, kind: str) -> list[dict[str, Any]]:
    """The items of a GitHub REST answer, checked: BadFeedback for GitHub's error body ({"message": ...}),
    anything that is not a list of objects, or an item without its `id` or `user` (an object)."""
    if isinstance(data, dict) and "message" in data and "id" not in data:
        raise BadFeedback(
            f"a GitHub error, not {kind}: {data['message']!r} (check the repository, the pull request "
            "number and the token's access, then export again)."
        )
    items = data if isinstance(data, list) else None
    if items is None or not all(isinstance(item, dict) for item in items):
        raise BadFeedback(f"expected {EXPECTED[kind]}, got {type(data).__name__}.")
    for n, item in enumerate(items):
        for name, kind_of in (("id", (int, str)), ("user", dict)):
            if not isinstance(item.get(name), kind_of):
                which = f"item {n}" + (f" (id {item['id']})" if "id" in item else "")
                raise BadFeedback(
                    f"{which} has {'no' if name not in item else 'a malformed'} {name!r} field "
                    f"({'an object with a login' if name == 'user' else 'a number'} expected)."
                )
    return items


def _items(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, pd.DataFrame):
        return data.reset_index().to_dict("records") if data.index.name else data.to_dict("records")
    if isinstance(data, dict):
        return list(data.get("data", [data])) if "data" in data else [data]
    return list(data or [])


def _is_agent(user: dict[str, Any] | None, agent_login: str | None) -> bool:
    return bool(agent_login) and str((user or {}).get("login") or "") == agent_login


def github_review_comments(data: Any, *, agent_login: str | None = None, context: str = "") -> list[Feedback]:
    """Pull request review comments (`gh api repos/O/R/pulls/N/comments`) as Feedback: one record per
    thread and author (so each record has one author, whose trust decides it), a reply quoting the thread's
    first comment. The agent's own comments (`agent_login`) are not feedback; bots are kept, marked by
    their type, for the trust policy to keep out. BadFeedback for an error body or malformed items."""
    comments = github_items(data, "github-review-comments")
    by_id = {c["id"]: c for c in comments}
    threads: dict[tuple[Any, str], list[dict]] = {}
    for comment in sorted(comments, key=lambda c: (c.get("created_at") or "", str(c["id"]))):
        if _is_agent(comment["user"], agent_login) or not str(comment.get("body") or "").strip():
            continue
        root_id = comment.get("in_reply_to_id") or comment["id"]
        threads.setdefault((root_id, str(comment["user"].get("login") or "")), []).append(comment)
    result = []
    for (root_id, login), thread in threads.items():
        first, root = thread[0], by_id.get(root_id)
        quoted = ""
        if first["id"] != root_id and root is not None:
            who = "the agent" if _is_agent(root["user"], agent_login) else root["user"].get("login")
            quoted = f"(in reply to {who}: {_one_line(root.get('body', ''))})\n"
        line = first.get("line") or first.get("original_line")
        result.append(
            Feedback(
                "github-review-comments",
                quoted + "\n".join(c["body"].strip() for c in thread),
                f"{first.get('path', '')}{f':{line}' if line else ''}",
                login,
                first.get("html_url", ""),
                first.get("created_at", ""),
                f"github-comment-{first['id']}",
                context,
                "incorrect: a reviewer asked for a change",
                _clip(first.get("diff_hunk") or (root or {}).get("diff_hunk") or ""),
                [f"github-comment:{c['id']}" for c in thread],
                str(first.get("author_association") or ""),
                str(first["user"].get("type") or ""),
            )
        )
    return result


REVIEW_OUTCOMES = {
    "CHANGES_REQUESTED": "incorrect: the reviewer requested changes",
    "APPROVED": "correct: the reviewer approved",
    "COMMENTED": "a reviewer's comment",
}


def github_reviews(data: Any, *, agent_login: str | None = None, context: str = "") -> list[Feedback]:
    """Pull request reviews (`gh api repos/O/R/pulls/N/reviews`) with a body, as Feedback; pending and
    dismissed reviews and the agent's own left out (their inline comments come from /comments), bots kept
    for the trust policy. BadFeedback for an error body or malformed items."""
    result = []
    for review in github_items(data, "github-reviews"):
        state = review.get("state")
        if state not in REVIEW_OUTCOMES or _is_agent(review["user"], agent_login):
            continue
        if not str(review.get("body") or "").strip():
            continue
        result.append(
            Feedback(
                "github-reviews",
                review["body"].strip(),
                "the pull request",
                review["user"].get("login", ""),
                review.get("html_url", ""),
                review.get("submitted_at", ""),
                f"github-review-{review['id']}",
                context,
                REVIEW_OUTCOMES[state],
                "",
                [f"github-review:{review['id']}"],
                str(review.get("author_association") or ""),
                str(review["user"].get("type") or ""),
            )
        )
    return result


def junit_failures(xml_text: str, *, context: str = "", url: str = "") -> list[Feedback]:
    """One Feedback per failing (or erroring) test case of a JUnit XML report (pytest's --junitxml,
    jest-junit, go-junit-report): the test, the failure message, its output."""
    try:
        root = ElementTree.fromstring(xml_text)
    except ElementTree.ParseError as error:
        raise BadFeedback(f"not JUnit XML ({error}).") from None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    result = []
    for suite in suites:
        stamp = suite.get("timestamp") or root.get("timestamp") or ""
        for case in suite.findall("testcase"):
            bad = case.find("failure") if case.find("failure") is not None else case.find("error")
            if bad is None:
                continue
            name = f"{case.get('classname') or suite.get('name') or ''}::{case.get('name', '')}".strip(":")
            message = (bad.get("message") or "").strip()
            output = "\n".join(
                part
                for part in ((bad.text or "").strip(), _text_of(case, "system-out"), _text_of(case, "system-err"))
                if part
            )
            key = _digest(stamp, suite.get("hostname", ""), name, message, output)
            result.append(
                Feedback(
                    "junit",
                    f"CI test {name} failed: {message or (bad.get('type') or 'failure')}",
                    case.get("file") or name,
                    "CI",
                    url,
                    _iso(stamp),
                    f"junit-{key}",
                    context,
                    "incorrect: a CI test failed",
                    _clip(output),
                    [f"junit:{key}"],
                )
            )
    return result


def _text_of(case: Any, tag: str) -> str:
    node = case.find(tag)
    return (node.text or "").strip() if node is not None else ""


PHOENIX_POSITIVE = {"correct", "pass", "passed", "good", "yes", "thumbs_up", "thumbs-up", "accept", "accepted"}
PHOENIX_NEGATIVE = {"incorrect", "fail", "failed", "bad", "no", "thumbs_down", "thumbs-down", "reject", "rejected"}


def phoenix_annotations(data: Any, *, context: str = "") -> list[Feedback]:
    """Human annotations from Phoenix as Feedback: span annotations (`GET /v1/projects/{p}/span_annotations`
    -> {"data": [...]}, or client.spans.get_span_annotations[_dataframe]) and an experiment's runs
    (`GET /v1/experiments/{id}/json`: runs with their `annotations`). LLM and CODE annotations are left out."""
    result = []
    for item in _items(data):
        if "annotations" in item and "example_id" in item:  # one experiment run with its annotations
            for note in item.get("annotations") or []:
                key = _digest(
                    item["example_id"],
                    item.get("repetition_number"),
                    note.get("name"),
                    note.get("start_time"),
                    note.get("explanation"),
                    note.get("label"),
                )
                feedback = _annotation(
                    note, note, f"example {item['example_id']}", note.get("end_time", ""), f"phoenix-run-{key}", context
                )
                result += [feedback] if feedback else []
            continue
        outcome = {k.removeprefix("result."): v for k, v in item.items() if k.startswith("result.")}
        outcome = outcome or dict(item.get("result") or {})
        name = item.get("name") or item.get("annotation_name")
        feedback = _annotation(
            {**item, "name": name},
            outcome,
            f"span {item.get('span_id', '')}",
            item.get("updated_at") or item.get("created_at", ""),
            f"phoenix-span-{item.get('id') or _digest(item.get('span_id'), name, str(outcome))}",
            context,
            author=str(item.get("user_id") or item.get("identifier") or ""),
        )
        result += [feedback] if feedback else []
    return result


def _annotation(
    item: dict, outcome: dict, where: str, at: str, feedback_id: str, context: str, author: str = ""
) -> Feedback | None:
    if str(item.get("annotator_kind", "")).upper() != "HUMAN":
        return None
    label, score, explanation = outcome.get("label"), outcome.get("score"), outcome.get("explanation")
    text = " ".join(
        str(part).strip()
        for part in (f"{item.get('name')}:", label, explanation)
        if part is not None and str(part).strip() and str(part) != "nan"
    )
    verdict, number = str(label or "").strip().lower(), _number(score)
    if verdict in PHOENIX_NEGATIVE or (verdict not in PHOENIX_POSITIVE and number is not None and number < 0.5):
        judged = "incorrect: a person marked it as bad"
    elif verdict in PHOENIX_POSITIVE or (number is not None and number >= 0.5):
        judged = "correct: a person marked it as good"
    else:
        judged = "a person's annotation"
    return Feedback(
        "phoenix",
        text,
        where,
        author or "a person in Phoenix",
        "",
        _iso(at),
        feedback_id,
        context,
        judged,
        "",
        [f"phoenix:{feedback_id}"],
    )


def read_phoenix_annotations(
    client: Any, *, experiment_id: str | None = None, span_ids: Iterable[str] | None = None, project: str = "default"
) -> list[dict[str, Any]]:
    """Fetch annotations live with a phoenix.client Client, for ingest(..., "phoenix"): an experiment's
    evaluations (client.experiments.get_experiment, one record per run) or spans' annotations
    (client.spans.get_span_annotations). Not exercised against a live server by the tests."""
    if experiment_id:
        runs: dict[str, list[dict[str, Any]]] = {}
        for evaluation in client.experiments.get_experiment(experiment_id=experiment_id)["evaluation_runs"]:
            runs.setdefault(evaluation.experiment_run_id, []).append(
                {
                    "name": evaluation.name,
                    "annotator_kind": evaluation.annotator_kind,
                    **dict(evaluation.result or {}),
                    "start_time": evaluation.start_time.isoformat(),
                    "end_time": evaluation.end_time.isoformat(),
                }
            )
        return [{"example_id": run_id, "repetition_number": 1, "annotations": notes} for run_id, notes in runs.items()]
    return list(client.spans.get_span_annotations(span_ids=list(span_ids or []), project_identifier=project))


def note(text: str, *, author: str = "", url: str = "", context: str = "", at: str = "") -> Feedback:
    """A line a person writes, as Feedback (its id is the digest of author and text)."""
    key = _digest(author, " ".join(text.split()))
    return Feedback(
        "note", text.strip(), "", author, url, at, f"note-{key}", context, "a note from the team", "", [f"note:{key}"]
    )


# --- small helpers ---------------------------------------------------------------------------------------
def _only_new(record: Feedback, fresh: list[str]) -> Feedback:
    """A thread record cut down to its new comments (the earlier ones were ingested before)."""
    first = fresh[0].split(":", 1)[1]
    return replace(
        record,
        text=f"(a new reply in the thread of {record.id})\n{record.text}",
        id=f"{record.id}-{first}",
        items=fresh,
    )


def capped(record: Feedback, max_chars: int) -> Feedback:
    """`record` with its text and detail cut to `max_chars` each, the cut marked."""

    def cut(text: str) -> str:
        extra = len(text) - max_chars
        return text if extra <= 0 else f"{text[:max_chars]}\n[... truncated: {extra:,} more characters]"

    return replace(record, text=cut(record.text), detail=cut(record.detail))


def _digest(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:16]


def _clip(text: str) -> str:
    text = str(text or "").strip()
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "\n[... cut]"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number  # NaN: no score


def _iso(stamp: Any) -> str:
    """An ISO-8601 UTC time from what a source wrote ("" when it wrote none)."""
    if not stamp:
        return ""
    try:
        return _parse_time(str(stamp)).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return str(stamp)


def _parse_time(stamp: str) -> datetime:
    moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "Feedback",
    "github_review_comments",
    "github_reviews",
    "junit_failures",
    "phoenix_annotations",
    "read_phoenix_annotations",
    "note",
    "parse",
    "github_items",
    "capped",
    "FEEDBACK_KINDS",
]
