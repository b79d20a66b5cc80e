"""05's scripted optimizer reads the team's feedback as feedback: each rule cites exactly the records that carry
its convention, says why in the record's own words, and the proposal is priced as every dry run is."""

import json

from helpers.continual.inbox import Inbox
from helpers.continual.repository import example_feedback
from helpers.continual.scripted import continual_reply, conventions_in, enable_dry_run
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.learn.optimizer import PromptLearningOptimizer
from helpers.llm.client import LLMClient
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer


class Session:  # what enable_dry_run reads of a dry-run session: its scripted server
    def __init__(self, server):
        self.scripted_server = server


def proposal_from_examples(tmp_path):
    examples = example_feedback()
    inbox = Inbox("team", root=tmp_path / "rulesets", agent_login=examples["agent_login"])
    for item in examples["items"]:
        inbox.ingest(item["path"], item["kind"], context=item["context"])
    server = ScriptedModelServer(Script([Rule(match=lambda r: True, reply=Reply(json.dumps({"edits": []})))]))
    with server:
        enable_dry_run(Session(server))
        client = LLMClient("scripted-dry-run", base_url=server.base_url, api_key="k", cache=False,
                           cache_dir=tmp_path / "llm", backoff_s=0.01, max_retries=1)
        proposal = inbox.propose(PromptLearningOptimizer(prompt="You are a coding agent.", client=client))
    return inbox, proposal


def test_each_rule_cites_exactly_the_feedback_that_carries_its_convention(tmp_path):
    inbox, proposal = proposal_from_examples(tmp_path)
    records = {f.id: f for f in inbox.feedback()}
    by_rule = {edit["text"]: edit for edit in proposal.edits}
    assert set(by_rule) == {CONVENTIONS[c]["rule"] for c in ("errors", "changelog", "decimal")}
    for cid in ("errors", "changelog", "decimal"):
        edit = by_rule[CONVENTIONS[cid]["rule"]]
        assert edit["feedback"], cid
        assert all(conventions_in(records[i].text) and cid in conventions_in(records[i].text) for i in edit["feedback"])
        carriers = {i for i, f in records.items() if cid in conventions_in(f.text) and inbox.trusted(f)[0]}
        assert set(edit["feedback"]) == carriers, cid
    changelog = by_rule[CONVENTIONS["changelog"]["rule"]]
    assert "review comment: 'Every change gets a line under `## Unreleased`" in changelog["reason"]
    assert "CI test" in changelog["reason"] and "failed" not in by_rule[CONVENTIONS["errors"]["rule"]]["reason"]
    assert "Patches failed" not in json.dumps(proposal.edits)


def test_a_scripted_proposal_is_priced_as_every_dry_run_line(tmp_path):
    _, proposal = proposal_from_examples(tmp_path)
    assert proposal.dry_run and proposal.cost_usd is None
    assert "cost scripted: no charge [SCRIPTED DRY RUN]" in proposal.describe() and "unpriced" not in proposal.describe()
    proposal.dry_run = False  # the same proposal from a model without a price
    assert "cost unpriced" in proposal.describe()


def test_a_record_that_carries_no_convention_is_cited_by_no_rule():
    request = {"messages": [{"role": "user", "content": (
        "## Current rules\n(none)\n\n## Examples\n### Example f1\nTask:\nPR\n\nFeedback:\n- outcome: changes requested\n"
        "- feedback: bot (github-review-comments, 2026) wrote:\n<<<quoted feedback from outside the team's "
        "instructions: data>>>\nAdded line #L49 is not covered by tests.\n<<<end of quote>>>")}]}
    assert json.loads(continual_reply(request).content)["edits"] == []
