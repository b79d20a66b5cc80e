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
only if the proposal is not significantly worse (helpers.stats.comparisons.paired_comparison).

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

from pathlib import Path
from typing import Any

import pandas as pd

from helpers.continual.proposals import (
    FEEDBACK_COLUMNS,
    OUTPUT_COLUMN,
    Proposal,
    ProposalUnfinished,
    _commit_message,
    _diff_text,
    _motivating,
    _plain_edit,
    _provenance,
    _render,
    edit_key,
    feedback_frame,
)
from helpers.continual.inbox_state import InboxState
from helpers.continual.repository import branch_exists, commit_rules
from helpers.continual.trust import flags_of
from helpers.core import config
from helpers.rules.edits import apply_edits
from helpers.rules.ruleset import parse_rules_text, rules_file_for
from helpers.core.wording import counted
from helpers.store.records import append_jsonl, read_jsonl

DEFAULT_BRANCH = config.CONTINUAL_BRANCH


# --- the inbox ------------------------------------------------------------------------------------------
class Inbox(InboxState):
    """Feedback, proposals, decisions and applications of one team's rules (see the module docstring).

    What it keeps and reads (feedback, trust, proposals, rejected edits) is InboxState's, in
    helpers.continual.inbox_state; here is what it decides and does with them.
    """

    # --- proposals ---
    def propose(self, optimizer: Any, *, context_size_k: int = config.CONTEXT_SIZE_K) -> Proposal | None:
        """Run `optimizer` (a PromptLearningOptimizer; its budget_usd caps the cost) over the new feedback
        against the current rules and store the result as a pending Proposal. Built with planted="flag"
        (as 05_continual builds it), an edit that looks like a planted instruction reaches the proposal
        flagged for a person; with its default it is refused before.

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
            raise ProposalUnfinished(
                f"The optimizer failed transiently ({report.transient_error}); nothing was "
                "stored and the feedback is still new: run propose() again."
            )
        refused = {r["key"] for r in rejected}
        kept = [e for e in report.edits_applied if edit_key(e) not in refused]
        filtered = [e for e in report.edits_applied if edit_key(e) in refused]
        start = parse_rules_text(base_text)
        rules, applied, _ = apply_edits(start, [_plain_edit(e) for e in kept])
        cost = None if getattr(optimizer.client, "unpriced", False) else report.cost_usd
        ids = [f.id for f in fresh]
        if not applied:
            why = (
                "every edit it proposed was rejected before"
                if filtered
                else "the optimizer changed nothing" + (f" ({'; '.join(report.errors)})" if report.errors else "")
            )
            self.last_note = f"No proposal from {counted(len(fresh), 'new feedback record')}: {why}."
            append_jsonl(
                self.dir / "events.jsonl",
                {
                    "at": self._now(),
                    "outcome": "unchanged",
                    "why": why,
                    "feedback_ids": ids,
                    "cost_usd": cost,
                    "filtered": filtered,
                    "errors": report.errors,
                },
            )
            return None
        for edit in applied:
            edit["feedback"] = _motivating(edit.get("sources") or [], fresh)
            edit["flags"] = flags_of(f"{edit.get('text') or ''} {edit.get('reason') or ''}", edit)
        proposal = Proposal(
            self._next_id(),
            "learn",
            base,
            applied,
            _render(rules),
            _diff_text(start, rules, base),
            ids,
            cost,
            self._now(),
            filtered=filtered,
            model=str(report.model),
            dry_run=bool(report.dry_run),
            errors=list(report.errors),
            sources=[_provenance(f, self.trusted(f)[1]) for f in fresh],
        )
        self._save(proposal)
        self.last_note = (
            f"Proposal {proposal.id}: {counted(len(applied), 'edit')} from {counted(len(fresh), 'feedback record')}."
        )
        return proposal

    def approve(self, proposal_id: str, *, reason: str = "approved by a person") -> int:
        """Save the proposal's rules as the new head version (with its provenance and `reason`); returns it.

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
            text,
            parent=head,
            kind="continual" if proposal.kind == "learn" else "expiry",
            model=proposal.model,
            dry_run=proposal.dry_run,
            report={"edits_applied": proposal.edits, "cost_usd": proposal.cost_usd or 0.0},
            proposal_id=proposal.id,
            evidence=proposal.evidence,
            feedback=[
                _provenance(sources[i], self.trusted(sources[i])[1])
                for e in proposal.edits
                for i in e.get("feedback", [])
                if i in sources
            ],
        )
        proposal.status, proposal.version, proposal.decided_at, proposal.reason = (
            "approved",
            version,
            self._now(),
            reason,
        )
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
            append_jsonl(
                self.dir / "rejected.jsonl",
                {
                    "key": edit_key(edit),
                    "edit": _plain_edit(edit),
                    "reason": reason,
                    "proposal_id": proposal.id,
                    "at": self._now(),
                },
            )
            if edit["op"] == "delete":
                self._track_rules()
                self.health.confirm(edit["id"], self._now(), f"{proposal.id} rejected: {reason}")
        proposal.status, proposal.reason, proposal.decided_at = "rejected", reason, self._now()
        self._save(proposal)
        return proposal

    # --- the replay gate ---
    def replay_gate(
        self,
        proposal_id: str,
        agent: Any,
        tasks: pd.DataFrame,
        *,
        workers: int = 1,
        results_root: Path | str | None = None,
        progress: bool = False,
    ) -> Any:
        """Run `agent` on `tasks` with the current rules and with the proposal's, and decide
        (helpers.continual.gate.replay_decision: a GateDecision that refuses when too few tasks could
        ever show the proposal worse). The verdict and its summary are stored in the proposal's `evidence`."""
        from helpers.continual.gate import replay_decision
        from helpers.engine.runs import run_tasks

        proposal = self._decidable(proposal_id)
        runs = {
            label: run_tasks(
                tasks,
                agent,
                run_id=f"replay-{proposal.id}-{label}",
                experiment=self.name,
                ruleset=text,
                workers=workers,
                results_root=results_root,
                progress=progress,
            )
            for label, text in (("current", self.store.load(self._head())), ("proposal", proposal.ruleset))
        }
        decision = replay_decision(runs["current"], runs["proposal"], f"proposal {proposal.id}")
        proposal.evidence = {
            "accept": decision.accept,
            "reason": decision.reason,
            "summary": decision.comparison.summary(),
            "tasks": list(map(str, tasks["instance_id"])),
            "at": self._now(),
        }
        self._save(proposal)
        return decision

    def auto_approve(self, proposal_id: str, agent: Any, tasks: pd.DataFrame, **gate: Any) -> tuple[int | None, str]:
        """Approve without a person only when every feedback record behind the proposal is trusted by the
        policy itself (a promotion is a person's call: it waits for a person), no edit is flagged, and the
        replay gate accepts. Returns (the new version, why) or (None, why it waits for a person); the
        reason is stored on the proposal. The gate's agent runs only when the first two hold."""
        proposal = self._decidable(proposal_id)
        records = {f.id: f for f in self.feedback()}
        outsiders = [i for i in proposal.feedback_ids if i in records and not self.trust.decide(records[i])[0]]
        blockers = ([f"flagged ({', '.join(proposal.flags)})"] if proposal.flags else []) + (
            [f"built on feedback the policy does not trust ({', '.join(outsiders)})"] if outsiders else []
        )
        if not blockers:
            decision = self.replay_gate(proposal_id, agent, tasks, **gate)
            blockers += [] if decision.accept else [f"the replay gate refused: {decision.reason}"]
        if blockers:
            proposal = self.proposal(proposal_id)
            proposal.reason = "waits for a person: " + "; ".join(blockers)
            self._save(proposal)
            return None, proposal.reason
        why = f"auto-approved: trusted sources, no flags, replay gate: {decision.reason}"
        return self.approve(proposal_id, reason=why), why

    # --- expiry ---
    def rule_health(self) -> pd.DataFrame:
        """One row per current rule: when added and last confirmed, confirmations, times implicated,
        days since confirmed, and whether it is stale or harmful (helpers.continual.health)."""
        rules = self._track_rules()
        return self.health.table(rules, self.clock(), self.max_age_days)

    def propose_expiry(self) -> Proposal | None:
        """A pending Proposal deleting the rules unconfirmed for max_age_days or shown harmful (never
        deleted silently); None when there are none. Deletions rejected before, or already pending,
        are not proposed again."""
        health = self.rule_health()
        stats = self.health.stats()
        refused = {r["key"] for r in self.rejected()}
        waiting = {e.get("id") for p in self.pending() for e in p.edits if e["op"] == "delete"}
        edits = []
        for row in health.itertuples():
            if not (row.stale or row.harmful) or f"delete:{row.id}" in refused or row.id in waiting:
                continue
            reason = (
                f"implicated {row.implicated} time(s), confirmed {row.confirmations} time(s)"
                if row.harmful
                else f"unconfirmed for {row.days_unconfirmed:g} days (limit {self.max_age_days:g})"
            )
            edits.append(
                {
                    "op": "delete",
                    "id": row.id,
                    "reason": reason,
                    "feedback": list(stats[row.id].get("implicated_by", [])),
                }
            )
        if not edits:
            self.last_note = "No rule is stale or harmful."
            return None
        base = self._head()
        start = self.store.rules(base)
        rules, applied, _ = apply_edits(start, [_plain_edit(e) for e in edits])
        proposal = Proposal(
            self._next_id(), "expiry", base, edits, _render(rules), _diff_text(start, rules, base), [], 0.0, self._now()
        )
        self._save(proposal)
        self.last_note = f"Proposal {proposal.id}: delete {', '.join(e['id'] for e in edits)}."
        return proposal

    def record_ablation(self, effects: pd.DataFrame) -> None:
        """Take helpers.engine.ablation.ablate()'s rows as evidence: removing a rule lowered accuracy -> it is
        confirmed; removing it raised accuracy significantly -> it is harmful."""
        self._track_rules()
        self.health.record_ablation(effects)

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
        return self._log_apply(
            "apply",
            repo,
            branch,
            rules_file,
            version,
            commit,
            previous_version=stack[-1] if stack else None,
            proposal_id=proposal.id if proposal else None,
        )

    def rollback(self, repo: Path | str, branch: str | None = None) -> dict[str, Any]:
        """Restore, as a new commit on the branch the last apply used (or `branch`), the version applied
        before the last one (no learned section at all when there was none); the store records the
        rollback as a new version. LookupError when nothing was applied there."""
        records = [r for r in read_jsonl(self.dir / "applies.jsonl") if r["repo"] == str(Path(repo).resolve())]
        branch = branch or (records[-1]["branch"] if records else DEFAULT_BRANCH)
        stack = self._applied(repo, branch)
        if not stack:
            raise LookupError(f"Nothing applied to {repo} on {branch} to roll back.")
        if not branch_exists(repo, branch):
            raise LookupError(
                f"{branch} no longer exists in {repo} (deleted after v{stack[-1]} was applied): nothing "
                "to roll back there. Apply again to recreate it."
            )
        replaced = stack.pop()
        target = stack[-1] if stack else None
        rules_file = [r for r in records if r["branch"] == branch][-1]["rules_file"]
        text = self.store.load(target) if target is not None else ""
        message = (
            f"prompt-learning: roll back the learned rules to "
            f"{f'v{target}' if target is not None else 'none'} (was v{replaced})\n\nInbox: {self.name}\n"
        )
        commit = commit_rules(repo, branch, rules_file, text, message)
        version = self.store.rollback(
            target if target is not None else 0, reason=f"rollback of v{replaced} on {branch} in {repo}"
        )
        record = self._log_apply(
            "rollback", repo, branch, rules_file, target, commit, replaced_version=replaced, store_version=version
        )
        self._track_rules()
        return record

    # --- internals ---
    def _log_apply(
        self,
        op: str,
        repo: Path | str,
        branch: str,
        rules_file: str,
        version: int | None,
        commit: str | None,
        **details: Any,
    ) -> dict[str, Any]:
        """One line of applies.jsonl, written and returned: what `op` (apply, rollback) put on `branch` of `repo`
        (`version` in `rules_file`, None for no learned rules), its `commit`, and the op's own `details`."""
        record = {
            "op": op,
            "repo": str(Path(repo).resolve()),
            "branch": branch,
            "rules_file": rules_file,
            "version": version,
            **details,
            "commit": commit,
            "at": self._now(),
        }
        append_jsonl(self.dir / "applies.jsonl", record)
        return record

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


__all__ = ["Inbox"]  # the public API, documented in CODE_APPENDIX.md
