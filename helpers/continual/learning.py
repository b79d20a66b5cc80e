"""Continual mode: the rules keep learning from a team's real signals, behind an approval gate.

    inbox = Inbox("my-team")                                  # state under act_rulesets/my-team/continual/
    inbox.ingest("comments.json", "github-review-comments")   # gh api repos/O/R/pulls/N/comments
    inbox.ingest("report.xml", "junit")                       # CI test report
    inbox.ingest("Never log secrets.", "note", author="lead")
    proposal = inbox.propose(optimizer)                       # one optimizer call per batch of new feedback
    print(proposal.describe())                                # edits, reasons, the feedback behind each, diff
    inbox.approve(proposal.id)                                # or inbox.reject(proposal.id, "why")
    inbox.apply("/path/to/repo", agent=config.AGENT, branch="prompt-learning/rules")   # one commit
    inbox.rollback("/path/to/repo")                           # the previous version, as a new commit

Feedback kinds (FEEDBACK_KINDS): GitHub review comments and reviews as the REST API returns them (bots
and the agent's own comments left out, a thread folded into one record), JUnit XML (pytest, jest, go
via converters: one record per failing test), Phoenix human annotations (span annotations or an
experiment's runs, as its REST API returns them, or a DataFrame of them) and plain notes. Every source
item has a stable key, so ingesting the same item twice adds nothing.

Nothing changes the rules silently: propose() stores a Proposal (pending) and only approve() writes a
new version into the RulesetStore (act_rulesets/<name>/, with its provenance). A rejected edit is
remembered: later proposals leave it out, and the optimizer is told which edits were rejected and why.
replay_gate() runs an agent on recent tasks with the current rules and with the proposal and accepts
only if the proposal is not significantly worse (helpers.core.stats.paired_comparison).

Expiry: each rule keeps when it was added, when feedback last confirmed it (feedback citing "[R3]" or
quoting its text; an ablation showing it helps) and how often it was implicated (feedback citing it
with words such as "wrong", "outdated", "remove"; an ablation showing it hurts). propose_expiry()
proposes deleting rules unconfirmed for `max_age_days` or shown harmful; rejecting such a deletion
counts as a confirmation.

apply() writes the head version into the agent's rules file (its marked section; the team's own text
kept byte for byte) as one commit on a branch, built with git plumbing: the working tree, the index
and every other file of the repository stay as they were. One writer per inbox at a time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from helpers.core import config
from helpers.store.records import append_jsonl, check_name, read_jsonl, write_json
from helpers.store.rulesets import RulesetStore
from helpers.core.rules import apply_edits, diff_rulesets, parse_rules_text, rules_file_for
from helpers.families.coding.git import GIT_IDENTITY, git
from helpers.core.rules import SECTION_START, insert_section, remove_section

FEEDBACK_KINDS = ("github-review-comments", "github-reviews", "junit", "phoenix", "note")
EXPIRY_DAYS = config.CONTINUAL_EXPIRY_DAYS
HARMFUL_AFTER = config.CONTINUAL_HARMFUL_AFTER
DEFAULT_BRANCH = config.CONTINUAL_BRANCH
DETAIL_CHARS = 2_000  # of a diff hunk or a test's output shown to the optimizer
REJECTED_ROW_ID = "rejected-edits"  # the example that tells the optimizer what the team refused
# Words that, next to a rule's id, say the rule did harm (a heuristic; ablations are the real evidence).
HARM_WORDS = re.compile(r"\b(wrong|harmful|outdated|obsolete|misled|misleading|stale|no longer|remove|"
                        r"delete|drop|contradicts?|ignore)\b", re.IGNORECASE)
FEEDBACK_COLUMNS = ["outcome", "feedback"]  # what the optimizer reads per feedback record
OUTPUT_COLUMN = "evidence"  # the code or test output the feedback is about


class ProposalUnfinished(RuntimeError):
    """The optimizer failed for a transient reason (rate limit, outage, spent budget): nothing was
    stored and the feedback is still new, so calling propose() again redoes it."""


@dataclass
class Feedback:
    """One piece of feedback, normalised: where it came from (`source`: its kind), what it says, where
    (a file, a test, a span), who said it, a link, when (ISO-8601), and its stable `id`. `context`:
    what the work was (a pull request or task), `outcome`: how it judged the work, `detail`: the code
    or output it points at, `items`: the source items folded into it (the keys that dedupe)."""

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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Proposal:
    """A change of the rules waiting for a decision (status pending, approved or rejected).

    `edits`: the applied edits (op, id/ids/text, reason, `feedback`: the ids of the feedback behind
    it); `ruleset`: the text after them, computed against `base_version`; `diff`: rule by rule;
    `filtered`: edits the optimizer proposed again although the team had rejected them (left out);
    `evidence`: the replay gate's verdict and summary sentence, when it ran.
    """

    id: str
    kind: str
    base_version: int
    edits: list[dict[str, Any]]
    ruleset: str
    diff: str
    feedback_ids: list[str]
    cost_usd: float | None
    created_at: str
    status: str = "pending"
    filtered: list[dict[str, Any]] = field(default_factory=list)
    evidence: dict[str, Any] | None = None
    version: int | None = None
    reason: str = ""
    decided_at: str = ""
    model: str = ""
    dry_run: bool = False
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """What a reviewer reads: each edit with its reason and feedback, the diff, cost and evidence."""
        cost = "unpriced" if self.cost_usd is None else f"${self.cost_usd:.4f}"
        lines = [f"Proposal {self.id} ({self.kind}, {self.status}) against v{self.base_version}: "
                 f"{len(self.edits)} edit(s), cost {cost}" + (" [SCRIPTED DRY RUN]" if self.dry_run else "")]
        for edit in self.edits:
            target = edit.get("id") or ",".join(edit.get("ids") or []) or edit.get("new_id", "")
            lines.append(f"  {edit['op']} {target}: {edit.get('text', '')}".rstrip())
            lines.append(f"    why: {edit.get('reason', '')}  (feedback: {', '.join(edit.get('feedback') or []) or 'none named'})")
        lines += [f"  left out (rejected before): {e['op']} {e.get('text') or e.get('id')}" for e in self.filtered]
        lines.append(self.diff)
        if self.evidence:
            lines.append(f"Replay gate: {'accepted' if self.evidence['accept'] else 'refused'}: {self.evidence['summary']}")
        return "\n".join(lines)


# --- feedback from each source ------------------------------------------------------------------------
def _load(path_or_data: Any, kind: str) -> Any:
    """The raw data: a file's content (JSON, XML or text), or the data as given."""
    if isinstance(path_or_data, Path) or (isinstance(path_or_data, str) and kind != "note"
                                          and not path_or_data.lstrip().startswith(("<", "[", "{"))):
        text = Path(path_or_data).read_text(encoding="utf-8")
        return text if kind in ("junit", "note") else _json_values(text)
    if isinstance(path_or_data, str) and kind != "junit" and kind != "note":
        return _json_values(path_or_data)
    return path_or_data


def _json_values(text: str) -> Any:
    """JSON text; several top-level arrays back to back (`gh api --paginate`) become one list."""
    decoder, values, position = json.JSONDecoder(), [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        value, position = decoder.raw_decode(text, position)
        values.append(value)
    if len(values) == 1:
        return values[0]
    return [item for value in values for item in (value if isinstance(value, list) else [value])]


def _items(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, pd.DataFrame):
        return data.reset_index().to_dict("records") if data.index.name else data.to_dict("records")
    if isinstance(data, dict):
        return list(data.get("data", [data])) if "data" in data else [data]
    return list(data or [])


def _is_bot_or_agent(user: dict[str, Any] | None, agent_login: str | None) -> bool:
    user = user or {}
    login = str(user.get("login") or "")
    return user.get("type") == "Bot" or login.endswith("[bot]") or (bool(agent_login) and login == agent_login)


def github_review_comments(data: Any, *, agent_login: str | None = None, context: str = "") -> list[Feedback]:
    """Pull request review comments (`gh api repos/O/R/pulls/N/comments`) as Feedback, one per thread.

    Bots and `agent_login` are left out; a reply is folded into its thread (GitHub's `in_reply_to_id`
    names the thread's first comment), quoting that first comment when it is not part of the record."""
    comments = [c for c in _items(data) if isinstance(c, dict) and "id" in c]
    by_id = {c["id"]: c for c in comments}
    threads: dict[Any, list[dict]] = {}
    for comment in sorted(comments, key=lambda c: (c.get("created_at") or "", c["id"])):
        if _is_bot_or_agent(comment.get("user"), agent_login) or not str(comment.get("body") or "").strip():
            continue
        threads.setdefault(comment.get("in_reply_to_id") or comment["id"], []).append(comment)
    result = []
    for root_id, thread in threads.items():
        first = thread[0]
        root = by_id.get(root_id)
        quoted = ""
        if first["id"] != root_id and root is not None:
            who = "the agent" if _is_bot_or_agent(root.get("user"), agent_login) else root["user"].get("login")
            quoted = f"(in reply to {who}: {_one_line(root.get('body', ''))})\n"
        text = quoted + "\n".join(f"{c['user'].get('login')}: {c['body'].strip()}" if i else c["body"].strip()
                                  for i, c in enumerate(thread))
        line = first.get("line") or first.get("original_line")
        result.append(Feedback(
            "github-review-comments", text, f"{first.get('path', '')}{f':{line}' if line else ''}",
            first["user"].get("login", ""), first.get("html_url", ""), first.get("created_at", ""),
            f"github-comment-{first['id']}", context, "incorrect: a reviewer asked for a change",
            _clip(first.get("diff_hunk") or (root or {}).get("diff_hunk") or ""),
            [f"github-comment:{c['id']}" for c in thread]))
    return result


REVIEW_OUTCOMES = {"CHANGES_REQUESTED": "incorrect: the reviewer requested changes",
                   "APPROVED": "correct: the reviewer approved", "COMMENTED": "a reviewer's comment"}


def github_reviews(data: Any, *, agent_login: str | None = None, context: str = "") -> list[Feedback]:
    """Pull request reviews (`gh api repos/O/R/pulls/N/reviews`) with a body, as Feedback; pending and
    dismissed reviews, bots and `agent_login` left out (their inline comments come from /comments)."""
    result = []
    for review in _items(data):
        state = review.get("state")
        if state not in REVIEW_OUTCOMES or _is_bot_or_agent(review.get("user"), agent_login):
            continue
        if not str(review.get("body") or "").strip():
            continue
        result.append(Feedback("github-reviews", review["body"].strip(), "the pull request",
                               review["user"].get("login", ""), review.get("html_url", ""),
                               review.get("submitted_at", ""), f"github-review-{review['id']}", context,
                               REVIEW_OUTCOMES[state], "", [f"github-review:{review['id']}"]))
    return result


def junit_failures(xml_text: str, *, context: str = "", url: str = "") -> list[Feedback]:
    """One Feedback per failing (or erroring) test case of a JUnit XML report (pytest's --junitxml,
    jest-junit, go-junit-report): the test, the failure message, its output."""
    root = ElementTree.fromstring(xml_text)
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
            output = "\n".join(part for part in ((bad.text or "").strip(), _text_of(case, "system-out"),
                                                 _text_of(case, "system-err")) if part)
            key = _digest(stamp, suite.get("hostname", ""), name, message, output)
            result.append(Feedback("junit", f"CI test {name} failed: {message or (bad.get('type') or 'failure')}",
                                   case.get("file") or name, "CI", url, _iso(stamp), f"junit-{key}", context,
                                   "incorrect: a CI test failed", _clip(output), [f"junit:{key}"]))
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
                key = _digest(item["example_id"], item.get("repetition_number"), note.get("name"),
                              note.get("start_time"), note.get("explanation"), note.get("label"))
                feedback = _annotation(note, note, f"example {item['example_id']}", note.get("end_time", ""),
                                       f"phoenix-run-{key}", context)
                result += [feedback] if feedback else []
            continue
        outcome = {k.removeprefix("result."): v for k, v in item.items() if k.startswith("result.")}
        outcome = outcome or dict(item.get("result") or {})
        name = item.get("name") or item.get("annotation_name")
        feedback = _annotation({**item, "name": name}, outcome, f"span {item.get('span_id', '')}",
                               item.get("updated_at") or item.get("created_at", ""),
                               f"phoenix-span-{item.get('id') or _digest(item.get('span_id'), name, str(outcome))}",
                               context, author=str(item.get("user_id") or item.get("identifier") or ""))
        result += [feedback] if feedback else []
    return result


def _annotation(item: dict, outcome: dict, where: str, at: str, feedback_id: str, context: str,
                author: str = "") -> Feedback | None:
    if str(item.get("annotator_kind", "")).upper() != "HUMAN":
        return None
    label, score, explanation = outcome.get("label"), outcome.get("score"), outcome.get("explanation")
    text = " ".join(str(part).strip() for part in (f"{item.get('name')}:", label, explanation)
                    if part is not None and str(part).strip() and str(part) != "nan")
    verdict = str(label or "").strip().lower()
    if verdict in PHOENIX_NEGATIVE or (verdict not in PHOENIX_POSITIVE and _number(score) is not None
                                       and _number(score) < 0.5):
        judged = "incorrect: a person marked it as bad"
    elif verdict in PHOENIX_POSITIVE or (_number(score) is not None and _number(score) >= 0.5):
        judged = "correct: a person marked it as good"
    else:
        judged = "a person's annotation"
    return Feedback("phoenix", text, where, author or "a person in Phoenix", "", _iso(at), feedback_id, context,
                    judged, "", [f"phoenix:{feedback_id}"])


def read_phoenix_annotations(client: Any, *, experiment_id: str | None = None, span_ids: Iterable[str] | None = None,
                             project: str = "default") -> list[dict[str, Any]]:
    """Fetch annotations live with a phoenix.client Client, for ingest(..., "phoenix"): an experiment's
    evaluations (client.experiments.get_experiment, one record per run) or spans' annotations
    (client.spans.get_span_annotations). Not exercised against a live server by the tests."""
    if experiment_id:
        runs: dict[str, list[dict[str, Any]]] = {}
        for evaluation in client.experiments.get_experiment(experiment_id=experiment_id)["evaluation_runs"]:
            runs.setdefault(evaluation.experiment_run_id, []).append({
                "name": evaluation.name, "annotator_kind": evaluation.annotator_kind, **dict(evaluation.result or {}),
                "start_time": evaluation.start_time.isoformat(), "end_time": evaluation.end_time.isoformat()})
        return [{"example_id": run_id, "repetition_number": 1, "annotations": notes} for run_id, notes in runs.items()]
    return list(client.spans.get_span_annotations(span_ids=list(span_ids or []), project_identifier=project))


def note(text: str, *, author: str = "", url: str = "", context: str = "", at: str = "") -> Feedback:
    """A line a person writes, as Feedback (its id is the digest of author and text)."""
    key = _digest(author, " ".join(text.split()))
    return Feedback("note", text.strip(), "", author, url, at, f"note-{key}", context, "a note from the team",
                    "", [f"note:{key}"])


# --- the inbox ------------------------------------------------------------------------------------------
class Inbox:
    """Feedback, proposals, decisions and applications of one team's rules (see the module docstring).

    State under act_rulesets/<name>/continual/ (or <root>/<name>/continual/): feedback.jsonl,
    proposals/<id>.json, rejected.jsonl, events.jsonl (optimizer runs that changed nothing),
    rules.json (each rule's confirmations), applies.jsonl (commits made). The versions themselves
    are in RulesetStore(name). `clock` returns the current UTC time (tests pass their own).
    """

    def __init__(self, name: str, *, root: Path | str | None = None, agent_login: str | None = None,
                 max_age_days: float = EXPIRY_DAYS, clock: Callable[[], datetime] | None = None):
        self.name = check_name(name, "inbox name")
        self.store = RulesetStore(name, root or config.rulesets_root())
        self.dir = self.store.dir / "continual"
        self.agent_login = agent_login
        self.max_age_days = max_age_days
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.last_note = ""

    def __repr__(self) -> str:
        return f"Inbox({self.name!r}, feedback={len(self.feedback())}, pending={len(self.pending())})"

    # --- feedback ---
    def ingest(self, path_or_data: Any, kind: str, *, context: str = "", author: str = "", url: str = "") -> list[Feedback]:
        """The new Feedback records from a file or data of `kind` (FEEDBACK_KINDS), stored; items seen
        before are left out. `context` says what the work was (e.g. "PR #12: fix rounding"); `author`
        and `url` are for notes (and the CI run's url for JUnit)."""
        if kind not in FEEDBACK_KINDS:
            raise ValueError(f"Unknown feedback kind {kind!r}: use one of {', '.join(FEEDBACK_KINDS)}.")
        data = _load(path_or_data, kind)
        if kind == "github-review-comments":
            found = github_review_comments(data, agent_login=self.agent_login, context=context)
        elif kind == "github-reviews":
            found = github_reviews(data, agent_login=self.agent_login, context=context)
        elif kind == "junit":
            found = junit_failures(data, context=context, url=url)
        elif kind == "phoenix":
            found = phoenix_annotations(data, context=context)
        else:
            lines = data.splitlines() if isinstance(path_or_data, Path) else [data]
            found = [note(line, author=author, url=url, context=context, at=self._now())
                     for line in lines if line.strip()]
        seen = {key for record in self.feedback() for key in record.items}
        new = []
        for record in found:
            fresh = [key for key in record.items if key not in seen]
            if not fresh:
                continue
            if len(fresh) < len(record.items):  # a thread grew: only its new comments are new feedback
                record = _only_new(record, fresh)
            record.at = record.at or self._now()
            append_jsonl(self.dir / "feedback.jsonl", record.to_dict())
            seen.update(record.items)
            new.append(record)
        self._note_citations(new)
        return new

    def feedback(self) -> list[Feedback]:
        """Every feedback record stored, oldest first."""
        names = {f.name for f in fields(Feedback)}
        return [Feedback(**{k: v for k, v in r.items() if k in names}) for r in read_jsonl(self.dir / "feedback.jsonl")]

    def new_feedback(self) -> list[Feedback]:
        """Feedback no proposal (nor an optimizer run that changed nothing) has used yet."""
        used = {i for p in self.proposals() for i in p.feedback_ids}
        used |= {i for event in read_jsonl(self.dir / "events.jsonl") for i in event.get("feedback_ids", [])}
        return [f for f in self.feedback() if f.id not in used]

    # --- proposals ---
    def propose(self, optimizer: Any, *, context_size_k: int = config.CONTEXT_SIZE_K) -> Proposal | None:
        """Run `optimizer` (a PromptLearningOptimizer; its budget_usd caps the cost) over the new feedback
        against the current rules and store the result as a pending Proposal.

        Returns None when there is no new feedback or no edit is left (`last_note` says which; the
        feedback then counts as used). Raises ProposalUnfinished, storing nothing, when the optimizer
        failed transiently. Edits the team rejected before are left out (listed in `filtered`)."""
        fresh = self.new_feedback()
        if not fresh:
            self.last_note = "No new feedback: nothing to propose."
            return None
        base = self._head()
        base_text = self.store.load(base)
        rejected = self.rejected()
        dataset = feedback_frame(fresh, rejected)
        optimizer.optimize(dataset, OUTPUT_COLUMN, FEEDBACK_COLUMNS, ruleset=base_text, context_size_k=context_size_k)
        report = optimizer.last_report
        if report.transient_error:
            raise ProposalUnfinished(f"The optimizer failed transiently ({report.transient_error}); nothing was "
                                     "stored and the feedback is still new: run propose() again.")
        refused = {r["key"] for r in rejected}
        kept = [e for e in report.edits_applied if edit_key(e) not in refused]
        filtered = [e for e in report.edits_applied if edit_key(e) in refused]
        start = parse_rules_text(base_text)
        rules, applied, _ = apply_edits(start, [_plain_edit(e) for e in kept])
        cost = None if getattr(optimizer.client, "unpriced", False) else report.cost_usd
        ids = [f.id for f in fresh]
        if not applied:
            why = ("every edit it proposed was rejected before" if filtered else
                   "the optimizer changed nothing" + (f" ({'; '.join(report.errors)})" if report.errors else ""))
            self.last_note = f"No proposal from {len(fresh)} new feedback record(s): {why}."
            append_jsonl(self.dir / "events.jsonl", {"at": self._now(), "outcome": "unchanged", "why": why,
                                                     "feedback_ids": ids, "cost_usd": cost,
                                                     "filtered": filtered, "errors": report.errors})
            return None
        for edit in applied:
            edit["feedback"] = _motivating(edit.get("sources") or [], fresh)
        proposal = Proposal(self._next_id(), "learn", base, applied, _render(rules),
                            _diff_text(start, rules, base), ids, cost, self._now(),
                            filtered=filtered, model=str(report.model), dry_run=bool(report.dry_run),
                            errors=list(report.errors))
        self._save(proposal)
        self.last_note = f"Proposal {proposal.id}: {len(applied)} edit(s) from {len(fresh)} feedback record(s)."
        return proposal

    def proposals(self) -> list[Proposal]:
        """Every proposal, oldest first."""
        folder = self.dir / "proposals"
        paths = sorted(folder.glob("p*.json")) if folder.is_dir() else []
        return [Proposal(**json.loads(p.read_text(encoding="utf-8"))) for p in paths]

    def pending(self) -> list[Proposal]:
        """Proposals waiting for approve() or reject()."""
        return [p for p in self.proposals() if p.status == "pending"]

    def proposal(self, proposal_id: str) -> Proposal:
        path = self.dir / "proposals" / f"{check_name(proposal_id, 'proposal id')}.json"
        if not path.exists():
            raise LookupError(f"No proposal {proposal_id!r} in {self.dir}; pending: {[p.id for p in self.pending()]}.")
        return Proposal(**json.loads(path.read_text(encoding="utf-8")))

    def approve(self, proposal_id: str) -> int:
        """Save the proposal's rules as the new head version (with its provenance); returns the version.

        When another version was approved since the proposal was made, its edits are applied again to
        the head; ValueError when none of them still applies."""
        proposal = self._decidable(proposal_id)
        head = self._head()
        text = proposal.ruleset
        if proposal.base_version != head or self.store.load(head) != self.store.load(proposal.base_version):
            rules, applied, _ = apply_edits(self.store.rules(head), [_plain_edit(e) for e in proposal.edits])
            if not applied:
                raise ValueError(f"None of {proposal.id}'s edits applies to the current rules (v{head}): reject it.")
            text = _render(rules)
        sources = {f.id: f for f in self.feedback()}
        version = self.store.save(
            text, parent=head, kind="continual" if proposal.kind == "learn" else "expiry", model=proposal.model,
            dry_run=proposal.dry_run, report={"edits_applied": proposal.edits, "cost_usd": proposal.cost_usd or 0.0},
            proposal_id=proposal.id, evidence=proposal.evidence,
            feedback=[_provenance(sources[i]) for e in proposal.edits for i in e.get("feedback", []) if i in sources])
        proposal.status, proposal.version, proposal.decided_at = "approved", version, self._now()
        self._save(proposal)
        self._track_rules()
        return version

    def reject(self, proposal_id: str, reason: str) -> Proposal:
        """Refuse a proposal; its edits are remembered and never proposed again (and the optimizer is
        told why). Refusing to delete a rule counts as confirming it."""
        if not str(reason or "").strip():
            raise ValueError("Say why the proposal is rejected: the optimizer reads the reason.")
        proposal = self._decidable(proposal_id)
        for edit in proposal.edits:
            append_jsonl(self.dir / "rejected.jsonl", {"key": edit_key(edit), "edit": _plain_edit(edit),
                                                       "reason": reason, "proposal_id": proposal.id, "at": self._now()})
            if edit["op"] == "delete":
                self._confirm(edit["id"], self._now(), f"{proposal.id} rejected: {reason}")
        proposal.status, proposal.reason, proposal.decided_at = "rejected", reason, self._now()
        self._save(proposal)
        return proposal

    def rejected(self) -> list[dict[str, Any]]:
        """Every rejected edit: {key, edit, reason, proposal_id, at}."""
        return read_jsonl(self.dir / "rejected.jsonl")

    # --- the replay gate ---
    def replay_gate(self, proposal_id: str, agent: Any, tasks: pd.DataFrame, *, workers: int = 1,
                    results_root: Path | str | None = None, progress: bool = False) -> Any:
        """Run `agent` on `tasks` with the current rules and with the proposal's; accept (a
        helpers.core.stats.GateDecision) only when the proposal is not significantly worse, task by task.
        The verdict and its summary sentence are stored in the proposal's `evidence`."""
        from helpers.engine.runs import run_tasks
        from helpers.core.stats import GateDecision, paired_comparison

        proposal = self._decidable(proposal_id)
        current = self.store.load(self._head())
        runs = {}
        for label, text in (("current", current), ("proposal", proposal.ruleset)):
            run_id = f"replay-{proposal.id}-{label}"
            runs[label] = run_tasks(tasks, agent, run_id=run_id, experiment=self.name, ruleset=text, workers=workers,
                                    results_root=results_root, progress=progress)
        comparison = paired_comparison(runs["current"], runs["proposal"], label_a="current rules",
                                       label_b=f"proposal {proposal.id}")
        worse = comparison.diff < 0 and comparison.significant
        if comparison.n == 0:
            decision = GateDecision(False, "no task has a usable result under both rulesets", comparison)
        elif worse:
            decision = GateDecision(False, "the proposal is significantly worse", comparison)
        else:
            decision = GateDecision(True, "the proposal is not significantly worse", comparison)
        proposal.evidence = {"accept": decision.accept, "reason": decision.reason, "summary": comparison.summary(),
                             "tasks": list(map(str, tasks["instance_id"])), "at": self._now()}
        self._save(proposal)
        return decision

    # --- expiry ---
    def rule_health(self) -> pd.DataFrame:
        """One row per current rule: when added and last confirmed, confirmations, times implicated,
        days since confirmed, and whether it is stale or harmful."""
        self._track_rules()
        stats = self._rule_stats()
        now = self.clock()
        rows = []
        for rule in self.store.rules(self._head()).rules:
            s = stats[rule.id]
            last = _parse_time(s.get("last_confirmed") or s["added_at"])
            age = (now - last).total_seconds() / 86400
            rows.append({"id": rule.id, "text": rule.text, "added_at": s["added_at"],
                         "last_confirmed": s.get("last_confirmed"), "confirmations": s.get("confirmations", 0),
                         "implicated": s.get("implicated", 0), "days_unconfirmed": round(age, 1),
                         "stale": age > self.max_age_days, "harmful": _harmful(s)})
        return pd.DataFrame(rows, columns=["id", "text", "added_at", "last_confirmed", "confirmations", "implicated",
                                           "days_unconfirmed", "stale", "harmful"])

    def propose_expiry(self) -> Proposal | None:
        """A pending Proposal deleting the rules unconfirmed for max_age_days or shown harmful (never
        deleted silently); None when there are none. Deletions rejected before, or already pending,
        are not proposed again."""
        health = self.rule_health()
        stats = self._rule_stats()
        refused = {r["key"] for r in self.rejected()}
        waiting = {e.get("id") for p in self.pending() for e in p.edits if e["op"] == "delete"}
        edits = []
        for row in health.itertuples():
            if not (row.stale or row.harmful) or f"delete:{row.id}" in refused or row.id in waiting:
                continue
            reason = (f"implicated {row.implicated} time(s), confirmed {row.confirmations} time(s)" if row.harmful
                      else f"unconfirmed for {row.days_unconfirmed:g} days (limit {self.max_age_days:g})")
            edits.append({"op": "delete", "id": row.id, "reason": reason,
                          "feedback": list(stats[row.id].get("implicated_by", []))})
        if not edits:
            self.last_note = "No rule is stale or harmful."
            return None
        base = self._head()
        start = self.store.rules(base)
        rules, applied, _ = apply_edits(start, [_plain_edit(e) for e in edits])
        proposal = Proposal(self._next_id(), "expiry", base, edits, _render(rules),
                            _diff_text(start, rules, base), [], 0.0, self._now())
        self._save(proposal)
        self.last_note = f"Proposal {proposal.id}: delete {', '.join(e['id'] for e in edits)}."
        return proposal

    def record_ablation(self, effects: pd.DataFrame) -> None:
        """Take helpers.engine.ablation.ablate()'s rows as evidence: removing a rule lowered accuracy -> it is
        confirmed; removing it raised accuracy significantly -> it is harmful."""
        self._track_rules()
        stats = self._rule_stats()
        for row in effects.to_dict("records"):
            if row["rule"] not in stats:
                continue
            if row["effect_of_removal"] < 0:
                self._confirm(row["rule"], self._now(), "ablation: " + str(row.get("summary", "")))
            elif row["effect_of_removal"] > 0 and row.get("significant"):
                stats = self._rule_stats()
                stats[row["rule"]]["ablation_harmful"] = str(row.get("summary", True))
                write_json(self.dir / "rules.json", stats)

    # --- the team's repository ---
    def apply(self, repo: Path | str, agent: str = config.AGENT, branch: str = DEFAULT_BRANCH) -> dict[str, Any] | None:
        """Commit the head version into the rules file of `agent` (a registered agent's name, or a file
        name such as "AGENTS.md") on `branch` of `repo` (created from HEAD when missing): one commit,
        touching only that file. Returns the record of it, or None when the file already says it."""
        rules_file = rules_file_for(agent)
        version = self._head()
        text = self.store.load(version)
        stack = self._applied(repo, branch)
        proposal = next((p for p in self.proposals() if p.version == version), None)
        message = _commit_message(version, proposal, {f.id: f for f in self.feedback()})
        commit = commit_rules(repo, branch, rules_file, text, message)
        if commit is None:
            self.last_note = f"{rules_file} on {branch} already holds v{version}: nothing to commit."
            return None
        record = {"op": "apply", "repo": str(Path(repo).resolve()), "branch": branch, "rules_file": rules_file,
                  "version": version, "previous_version": stack[-1] if stack else None, "commit": commit,
                  "proposal_id": proposal.id if proposal else None, "at": self._now()}
        append_jsonl(self.dir / "applies.jsonl", record)
        return record

    def rollback(self, repo: Path | str, branch: str | None = None) -> dict[str, Any]:
        """Restore, as a new commit on the branch the last apply used (or `branch`), the version applied
        before the last one (no learned section at all when there was none); the store records the
        rollback as a new version. LookupError when nothing was applied there."""
        records = [r for r in read_jsonl(self.dir / "applies.jsonl") if r["repo"] == str(Path(repo).resolve())]
        branch = branch or (records[-1]["branch"] if records else DEFAULT_BRANCH)
        stack = self._applied(repo, branch)
        if not stack:
            raise LookupError(f"Nothing applied to {repo} on {branch} to roll back.")
        replaced = stack.pop()
        target = stack[-1] if stack else None
        rules_file = [r for r in records if r["branch"] == branch][-1]["rules_file"]
        text = self.store.load(target) if target is not None else ""
        message = (f"prompt-learning: roll back the learned rules to "
                   f"{f'v{target}' if target is not None else 'none'} (was v{replaced})\n\nInbox: {self.name}\n")
        commit = commit_rules(repo, branch, rules_file, text, message)
        version = self.store.rollback(target if target is not None else 0,
                                      reason=f"rollback of v{replaced} on {branch} in {repo}")
        record = {"op": "rollback", "repo": str(Path(repo).resolve()), "branch": branch, "rules_file": rules_file,
                  "version": target, "replaced_version": replaced, "store_version": version, "commit": commit,
                  "at": self._now()}
        append_jsonl(self.dir / "applies.jsonl", record)
        self._track_rules()
        return record

    # --- internals ---
    def _now(self) -> str:
        return self.clock().astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _head(self) -> int:
        """The head version; an empty version 0 is saved first when the store has none."""
        if not self.store.versions():
            self.store.save("", parent=None, loop=None)
        return self.store.head_version()

    def _next_id(self) -> str:
        return f"p{len(self.proposals()) + 1:04d}"

    def _save(self, proposal: Proposal) -> None:
        write_json(self.dir / "proposals" / f"{proposal.id}.json", proposal.to_dict())

    def _decidable(self, proposal_id: str) -> Proposal:
        proposal = self.proposal(proposal_id)
        if proposal.status != "pending":
            raise ValueError(f"Proposal {proposal_id} is already {proposal.status}.")
        return proposal

    def _applied(self, repo: Path | str, branch: str) -> list[int]:
        """The versions applied to `repo` on `branch`, as a stack (apply pushes, rollback pops)."""
        stack: list[int] = []
        for record in read_jsonl(self.dir / "applies.jsonl"):
            if record["repo"] != str(Path(repo).resolve()) or record["branch"] != branch:
                continue
            if record["op"] == "apply":
                stack.append(record["version"])
            elif stack:
                stack.pop()
        return stack

    def _rule_stats(self) -> dict[str, dict[str, Any]]:
        path = self.dir / "rules.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def _track_rules(self) -> None:
        """Give every rule of the head version a record (added now, if new)."""
        stats = self._rule_stats()
        missing = [r.id for r in self.store.rules(self._head()).rules if r.id not in stats]
        for rule_id in missing:
            stats[rule_id] = {"added_at": self._now(), "last_confirmed": None, "confirmations": 0, "implicated": 0}
        if missing:
            write_json(self.dir / "rules.json", stats)

    def _confirm(self, rule_id: str, at: str, why: str) -> None:
        self._track_rules()
        stats = self._rule_stats()
        if rule_id not in stats:
            return
        entry = stats[rule_id]
        entry["confirmations"] = entry.get("confirmations", 0) + 1
        if not entry.get("last_confirmed") or _parse_time(at) > _parse_time(entry["last_confirmed"]):
            entry["last_confirmed"], entry["confirmed_by"] = at, why
        write_json(self.dir / "rules.json", stats)

    def _note_citations(self, records: list[Feedback]) -> None:
        """Feedback citing a rule ("[R3]" or its text) confirms it, or implicates it when it says harm."""
        if not records or not self.store.versions():
            return
        rules = self.store.rules(self._head()).rules
        for record in records:
            flat = " ".join(record.text.lower().split())
            for rule in rules:
                if f"[{rule.id}]".lower() not in flat and " ".join(rule.text.lower().split()) not in flat:
                    continue
                if HARM_WORDS.search(record.text):
                    self._track_rules()
                    stats = self._rule_stats()
                    stats[rule.id]["implicated"] = stats[rule.id].get("implicated", 0) + 1
                    stats[rule.id].setdefault("implicated_by", []).append(record.id)
                    write_json(self.dir / "rules.json", stats)
                else:
                    self._confirm(rule.id, record.at or self._now(), f"feedback {record.id}")


# --- plain functions the inbox is built on ---------------------------------------------------------------
def feedback_frame(records: list[Feedback], rejected: list[dict[str, Any]] = ()) -> pd.DataFrame:
    """The optimizer's dataset: one row per feedback record (instance_id = its id; the work as
    `problem_statement`; the code or output as `evidence`; `outcome` and `feedback`), led by a row
    listing the edits the team rejected, with their reasons."""
    rows = []
    if rejected:
        listed = "\n".join(f"- {r['edit'].get('op')} {r['edit'].get('id') or ''} {r['edit'].get('text') or ''}".rstrip()
                           + f" (rejected: {r['reason']})" for r in rejected)
        rows.append({"instance_id": REJECTED_ROW_ID, "problem_statement": "Edits of the rules the team reviewed "
                     "and REJECTED. Do not propose them again, in any wording.", OUTPUT_COLUMN: listed,
                     "outcome": "rejected by the team", "feedback": "; ".join(r["reason"] for r in rejected)})
    for record in records:
        evidence = "\n".join(part for part in (f"at {record.where}" if record.where else "", record.detail) if part)
        said = f"{record.author or 'someone'} ({record.source}{', ' + record.at if record.at else ''}): {record.text}"
        rows.append({"instance_id": record.id, "problem_statement": record.context or f"(work not named; {record.source})",
                     OUTPUT_COLUMN: evidence, "outcome": record.outcome,
                     "feedback": said + (f"\n{record.url}" if record.url else "")})
    return pd.DataFrame(rows, columns=["instance_id", "problem_statement", OUTPUT_COLUMN, *FEEDBACK_COLUMNS])


def edit_key(edit: dict[str, Any]) -> str:
    """What makes two edits the same edit (so a rejected one is recognised when proposed again)."""
    def words(text: Any) -> str:
        return " ".join(str(text or "").lower().split())

    op = edit.get("op")
    if op == "add":
        return f"add:{words(edit.get('text'))}"
    if op == "update":
        return f"update:{edit.get('id')}:{words(edit.get('text'))}"
    if op == "merge":
        return f"merge:{','.join(sorted(edit.get('ids') or []))}:{words(edit.get('text'))}"
    return f"{op}:{edit.get('id')}"


def commit_rules(repo: Path | str, branch: str, rules_file: str, ruleset: str, message: str) -> str | None:
    """Commit `ruleset` as the learned section of `rules_file` on `branch` (created from HEAD when
    missing); returns the commit, or None when the file already says it. The team's text in the file
    stays byte for byte; a file that would hold nothing but an empty section is removed. Built with
    plumbing (a temporary index), so the working tree, the index and other files are untouched.
    Refuses a branch that is checked out (its working tree would fall behind)."""
    repo = Path(repo)
    ref = f"refs/heads/{branch}"
    if git("check-ref-format", ref, cwd=repo, check=False).returncode:
        raise ValueError(f"Bad branch name {branch!r}.")
    if git("symbolic-ref", "-q", "HEAD", cwd=repo, check=False).stdout.strip() == ref:
        raise ValueError(f"{branch} is checked out in {repo}: apply to another branch (then review and merge it).")
    tip = git("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", cwd=repo, check=False).stdout.strip()
    parent = tip or git("rev-parse", "--verify", "HEAD^{commit}", cwd=repo).stdout.strip()
    path, mode, old = _blob_at(repo, parent, rules_file)
    new = _with_section(old, ruleset)
    if new == old:
        return None
    with tempfile.TemporaryDirectory(prefix="pl-index-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git("read-tree", parent, cwd=repo, env=env)
        if new is None:
            git("update-index", "--force-remove", "--", path, cwd=repo, env=env)
        else:
            blob = _git_bytes(["hash-object", "-w", "--stdin"], repo, new).decode().strip()
            git("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", cwd=repo, env=env)
        tree = git("write-tree", cwd=repo, env=env).stdout.strip()
    commit = git("commit-tree", tree, "-p", parent, "-F", "-", cwd=repo, input=message).stdout.strip()
    git("update-ref", ref, commit, tip or "0" * 40, cwd=repo)
    return commit


def _blob_at(repo: Path, commit: str, rules_file: str) -> tuple[str, str, bytes | None]:
    """(path in the tree, file mode, content or None) of the rules file at `commit`; a rules folder
    gets a file of its own inside it."""
    path = rules_file.strip("/")
    entry = git("ls-tree", commit, "--", path, cwd=repo).stdout.split()
    if entry and entry[1] == "tree":
        from helpers.core.rules import LEARNED_FILE

        path = f"{path}/{LEARNED_FILE}"
        entry = git("ls-tree", commit, "--", path, cwd=repo).stdout.split()
    if not entry:
        return path, "100644", None
    return path, entry[0], _git_bytes(["cat-file", "blob", entry[2]], repo)


def _with_section(old: bytes | None, ruleset: str) -> bytes | None:
    """The file's bytes with `ruleset` as its learned section (None: no file)."""
    team = remove_section(old.decode("utf-8", "surrogateescape")) if old is not None else None
    if not ruleset.strip():
        if team is None or (team == "" and SECTION_START in old.decode("utf-8", "surrogateescape")):
            return None
        return team.encode("utf-8", "surrogateescape")
    return insert_section(team or "", ruleset).encode("utf-8", "surrogateescape")


def _git_bytes(args: list[str], repo: Path, data: bytes | None = None) -> bytes:
    env = {**os.environ, **GIT_IDENTITY, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", *args], cwd=repo, env=env, input=data, capture_output=True, check=True).stdout


def _commit_message(version: int, proposal: Proposal | None, feedback: dict[str, Feedback]) -> str:
    """The commit's message: the version, the proposal's edits with reasons and their sources."""
    if proposal is None:
        return f"prompt-learning: learned rules v{version}\n"
    lines = [f"prompt-learning: learned rules v{version} ({proposal.id}, {len(proposal.edits)} edit(s))", ""]
    for edit in proposal.edits:
        target = edit.get("new_id") or edit.get("id") or ",".join(edit.get("ids") or [])
        lines.append(f"- {edit['op']} {target}: {_one_line(edit.get('text') or edit.get('reason', ''), 100)}")
        for source in edit.get("feedback") or []:
            f = feedback.get(source)
            lines.append(f"    source: {source}" + (f" {f.url or f.where} ({f.author})" if f else ""))
    if proposal.evidence:
        lines += ["", f"Replay gate: {proposal.evidence['summary']}"]
    return "\n".join(lines) + "\n"


def _diff_text(start: Any, rules: Any, base: int) -> str:
    """The rule-by-rule diff from version `base` to a proposal's rules."""
    return str(diff_rulesets(start, rules, base, None)).replace(f"v{base} -> vNone", f"v{base} -> proposal", 1)


def _motivating(sources: list[str], records: list[Feedback]) -> list[str]:
    """The feedback ids behind an edit: its sources that are feedback ids, or feedback whose work or text
    names a source (a model may cite the task instead of the feedback)."""
    found = []
    for source in sources:
        for record in records:
            if record.id == source or (len(source) > 3 and (source in record.context or source in record.text)):
                found.append(record.id)
    return list(dict.fromkeys(found))


def _plain_edit(edit: dict[str, Any]) -> dict[str, Any]:
    """An edit as apply_edits takes it again (without the fields applying it added)."""
    return {k: v for k, v in edit.items() if k not in ("new_id", "feedback", "rejection")}


def _render(rules: Any) -> str:
    from helpers.core.rules import render_ruleset

    return render_ruleset(rules)


def _provenance(record: Feedback) -> dict[str, str]:
    return {"id": record.id, "source": record.source, "author": record.author, "url": record.url, "at": record.at}


def _harmful(stats: dict[str, Any]) -> bool:
    implicated = stats.get("implicated", 0)
    return bool(stats.get("ablation_harmful")) or (implicated >= HARMFUL_AFTER and implicated > stats.get("confirmations", 0))


def _only_new(record: Feedback, fresh: list[str]) -> Feedback:
    """A thread record cut down to its new comments (the earlier ones were ingested before)."""
    first = fresh[0].split(":", 1)[1]
    return Feedback(record.source, f"(a new reply in the thread of {record.id})\n{record.text}", record.where,
                    record.author, record.url, record.at, f"{record.id}-{first}", record.context, record.outcome,
                    record.detail, fresh)


def _digest(*parts: Any) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:16]


def _clip(text: str) -> str:
    text = str(text or "").strip()
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "\n[... cut]"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


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


# --- the bundled examples (the dry run) -------------------------------------------------------------------
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def example_feedback() -> dict[str, Any]:
    """The bundled example feedback on the house suite (its manifest): {"agent_login": the agent's
    GitHub login in them, "items": [{path, kind, context}]}."""
    manifest = json.loads((EXAMPLES_DIR / "manifest.json").read_text(encoding="utf-8"))
    items = [{**item, "path": str(EXAMPLES_DIR / item["path"])} for item in manifest["items"]]
    return {"agent_login": manifest["agent_login"], "items": items}


def demo_repository(dest: Path | str | None = None) -> Path:
    """A scratch clone of the house suite's `ledger` repository to apply rules to (the dry run)."""
    from helpers.families.coding.house_suite import build_house_repos

    source = build_house_repos()["house/ledger"]
    dest = Path(dest or tempfile.mkdtemp(prefix="continual-demo-")) / "ledger"
    git("clone", "--quiet", str(source), str(dest), cwd=dest.parent)
    return dest

__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "Inbox", "Feedback", "Proposal", "ProposalUnfinished", "feedback_frame", "edit_key",
    "github_review_comments", "github_reviews", "junit_failures", "phoenix_annotations", "read_phoenix_annotations",
    "note", "commit_rules", "example_feedback", "demo_repository",
]
