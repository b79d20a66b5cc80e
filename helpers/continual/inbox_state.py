"""The state one continual inbox keeps on disk, and the reads of it: its feedback (with the trust policy and
reviewers' promotions that decide what may steer the rules), its proposals and the edits the team rejected.

Separate from helpers.continual.inbox, which holds what an inbox does with that state (propose, approve or
reject, the replay gate, expiry, commits to the team's repository): Inbox is an InboxState, so a reader finds
the records here and the decisions there.
"""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from helpers.continual.feedback import FEEDBACK_KINDS, Feedback, _only_new, capped, parse
from helpers.continual.feedback_files import BadFeedback, load_source
from helpers.continual.proposals import Proposal
from helpers.continual.health import RuleHealth
from helpers.continual.trust import TrustPolicy
from helpers.core import config
from helpers.store.records import append_jsonl, check_name, read_jsonl, write_json
from helpers.store.rulesets import RulesetStore


class InboxState:
    """The records of one team's inbox under act_rulesets/<name>/continual/ (or <root>/<name>/continual/):
    feedback.jsonl, promotions.jsonl, proposals/<id>.json, rejected.jsonl, events.jsonl (optimizer runs that
    changed nothing), rules.json (each rule's confirmations), applies.jsonl (commits made). The versions
    themselves are in RulesetStore(name). `clock` returns the current UTC time (tests pass their own)."""

    def __init__(
        self,
        name: str,
        *,
        root: Path | str | None = None,
        agent_login: str | None = None,
        max_age_days: float = config.CONTINUAL_EXPIRY_DAYS,
        clock: Callable[[], datetime] | None = None,
        trust: TrustPolicy | None = None,
        max_file_bytes: int = config.CONTINUAL_MAX_FILE_BYTES,
        max_signal_chars: int = config.CONTINUAL_MAX_SIGNAL_CHARS,
    ):
        self.name = check_name(name, "inbox name")
        self.store = RulesetStore(name, root or config.rulesets_root())
        self.dir = self.store.dir / "continual"
        self.agent_login = agent_login
        self.max_age_days = max_age_days
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.last_note = ""
        self.health = RuleHealth(self.dir, self._now)
        self.trust = trust or TrustPolicy()
        self.max_file_bytes, self.max_signal_chars = max_file_bytes, max_signal_chars

    def __repr__(self) -> str:
        return f"Inbox({self.name!r}, feedback={len(self.feedback())}, pending={len(self.pending())})"

    # --- feedback ---
    def ingest(
        self, path_or_data: Any, kind: str, *, context: str = "", author: str = "", url: str = ""
    ) -> list[Feedback]:
        """The new Feedback records from a file or data of `kind` (FEEDBACK_KINDS), stored; items seen
        before are left out. `context` says what the work was (e.g. "PR #12: fix rounding"); `author`
        and `url` are for notes (and the CI run's url for JUnit)."""
        if kind not in FEEDBACK_KINDS:
            raise ValueError(f"Unknown feedback kind {kind!r}: use one of {', '.join(FEEDBACK_KINDS)}.")
        data, origin = load_source(path_or_data, kind, self.max_file_bytes)
        try:
            found = parse(
                kind,
                data,
                agent_login=self.agent_login,
                context=context,
                author=author,
                url=url,
                at=self._now(),
                many_notes=isinstance(path_or_data, Path),
            )
        except BadFeedback as error:
            raise BadFeedback(f"{origin}: {error}") from None
        seen = {key for record in self.feedback() for key in record.items}
        new = []
        for record in found:
            fresh = [key for key in record.items if key not in seen]
            if not fresh:
                continue
            if len(fresh) < len(record.items):  # a thread grew: only its new comments are new feedback
                record = _only_new(record, fresh)
            record = capped(record, self.max_signal_chars)
            record.at = record.at or self._now()
            append_jsonl(self.dir / "feedback.jsonl", record.to_dict())
            seen.update(record.items)
            new.append(record)
        trusted = [record for record in new if self.trusted(record)[0]]  # outsiders neither confirm nor implicate
        if trusted and self.store.versions():
            self.health.note_citations(trusted, self._track_rules())
        return new

    def feedback(self) -> list[Feedback]:
        """Every feedback record stored, oldest first."""
        names = {f.name for f in fields(Feedback)}
        return [Feedback(**{k: v for k, v in r.items() if k in names}) for r in read_jsonl(self.dir / "feedback.jsonl")]

    def new_feedback(self) -> list[Feedback]:
        """Trusted feedback (by the trust policy, or promoted by a reviewer) that no proposal (nor an
        optimizer run that changed nothing) has used yet: what the optimizer may read."""
        used = {i for p in self.proposals() for i in p.feedback_ids}
        used |= {i for event in read_jsonl(self.dir / "events.jsonl") for i in event.get("feedback_ids", [])}
        return [f for f in self.feedback() if f.id not in used and self.trusted(f)[0]]

    # --- trust ---
    def trusted(self, record: Feedback) -> tuple[bool, str]:
        """(may it steer the rules, why): the trust policy's decision, or a reviewer's promotion."""
        promoted = self._promotions().get(record.id)
        if promoted:
            return True, f"promoted by {promoted['by']}: {promoted['reason']}"
        return self.trust.decide(record)

    def untrusted(self) -> list[tuple[Feedback, str]]:
        """The feedback kept out of the optimizer, with why: shown to a reviewer, who may promote it."""
        return [(f, why) for f in self.feedback() for ok, why in [self.trusted(f)] if not ok]

    def promote(self, feedback_id: str, *, by: str, reason: str) -> Feedback:
        """Let an untrusted record reach the optimizer, on a reviewer's word (recorded with who and why).
        Proposals built on promoted feedback still wait for a person: they are never auto-approved."""
        if not str(by or "").strip() or not str(reason or "").strip():
            raise ValueError("Say who promotes the feedback and why (by=..., reason=...): both are recorded.")
        record = next((f for f in self.feedback() if f.id == feedback_id), None)
        if record is None:
            raise LookupError(
                f"No feedback {feedback_id!r} in {self.dir}; untrusted: {[f.id for f, _ in self.untrusted()]}."
            )
        append_jsonl(self.dir / "promotions.jsonl", {"id": feedback_id, "by": by, "reason": reason, "at": self._now()})
        return record

    def _promotions(self) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in read_jsonl(self.dir / "promotions.jsonl")}

    # --- proposals (read) ---
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

    def rejected(self) -> list[dict[str, Any]]:
        """Every rejected edit: {key, edit, reason, proposal_id, at}."""
        return read_jsonl(self.dir / "rejected.jsonl")

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

    def _track_rules(self) -> list[Any]:
        """The head version's rules, each with a record in rules.json (added now, if new)."""
        rules = self.store.rules(self._head()).rules
        self.health.track([rule.id for rule in rules])
        return rules


__all__ = ["InboxState"]  # documented in CODE_APPENDIX.md
