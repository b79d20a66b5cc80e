"""Continual mode: feedback from recorded GitHub, JUnit and Phoenix data; proposals behind approval;
a real git repository as the target; rejected edits remembered; expiry; the replay gate on house tasks."""

import json
import warnings
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from helpers.agents.base import AgentBase

from helpers.continual.feedback import junit_failures, phoenix_annotations
from helpers.continual.inbox import Inbox
from helpers.continual.proposals import ProposalUnfinished
from helpers.continual.repository import commit_rules, example_feedback
from helpers.rules.ruleset import rules_file_for
from helpers.families.coding.house_suite import CONVENTIONS
from helpers.llm.client import LLMClient
from helpers.learn.optimizer import PromptLearningOptimizer
from helpers.core.protocols import AgentResult
from helpers.rules.ruleset import parse_rules_text
from helpers.llm.scripted_server import Reply, Rule, Script, ScriptedModelServer, message_text
from helpers.families.coding.tasks import load_house_suite
from helpers.rules.ruleset import SECTION_END, SECTION_START
from helpers.families.coding.git import git

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "continual"
START = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)
ERRORS_RULE = "Raise the package's own exceptions, never bare ValueError."
LOGGER_RULE = "Log through the module logger, never print()."


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, now=START):
        self.now = now

    def __call__(self):
        return self.now


def adds(*texts, sources=()):
    return Reply(json.dumps({"edits": [{"op": "add", "text": t, "reason": "from review feedback",
                                        "sources": list(sources)} for t in texts]}))


def optimizer(server, tmp_path, **kw):
    client = LLMClient("scripted-dry-run", base_url=server.base_url, api_key="k", cache=False,
                       cache_dir=tmp_path / "llm", backoff_s=0.01, max_retries=kw.pop("max_retries", 1))
    return PromptLearningOptimizer(prompt="You are a coding agent.", client=client)


@pytest.fixture
def inbox(tmp_path):
    return Inbox("team", root=tmp_path / "rulesets", agent_login="shop-agent", clock=Clock())


# --- feedback in ---------------------------------------------------------------------------------------
def test_review_comments_give_one_record_per_author_and_thread_and_leave_out_the_agents_own(inbox):
    found = inbox.ingest(FIXTURES / "pr_comments_paginated.json", "github-review-comments", context="PR #7")
    by_id = {f.id: f for f in found}
    assert sorted(by_id) == ["github-comment-501", "github-comment-502", "github-comment-504", "github-comment-506",
                             "github-comment-507"]
    thread = by_id["github-comment-501"]
    assert thread.text == "Raise CartError here: callers only catch our own exceptions."
    assert thread.where == "shop/cart.py:12" and thread.author == "alice" and thread.at == "2026-05-04T10:00:00Z"
    assert thread.url == "https://github.com/acme/shop/pull/7#discussion_r501" and "raise ValueError" in thread.detail
    assert thread.context == "PR #7" and thread.items == ["github-comment:501"] and thread.association == "MEMBER"
    reply = by_id["github-comment-502"]  # another person in the thread: a record of their own, the thread quoted
    assert reply.text.startswith("(in reply to alice: Raise CartError") and reply.author == "bob"
    assert not any("Done, switched" in f.text for f in found)  # the agent's own reply is not feedback
    to_agent = by_id["github-comment-506"]  # a person answering the agent: kept, the agent's comment quoted
    assert to_agent.text.startswith("(in reply to the agent: I added a print") and "module logger" in to_agent.text
    bot = by_id["github-comment-504"]  # kept in the inbox, marked, and kept away from the optimizer
    assert bot.author_type == "Bot" and inbox.trusted(bot) == (False, "github-actions[bot] is a bot (not on the "
                                                                      "policy's bots list)")
    assert sorted(f.id for f in inbox.new_feedback()) == ["github-comment-501", "github-comment-502",
                                                          "github-comment-506", "github-comment-507"]
    assert by_id["github-comment-507"].where == "CHANGELOG.md:1"


def test_ingesting_the_same_items_again_adds_nothing_and_a_new_reply_is_new(inbox):
    path = FIXTURES / "pr_comments_paginated.json"
    assert len(inbox.ingest(path, "github-review-comments")) == 5
    assert inbox.ingest(path, "github-review-comments") == []
    grown = json.loads("[" + path.read_text().replace("]\n[", ",") + "]")[0]
    grown.append({**grown[1], "id": 508, "user": {"login": "dave", "type": "User"}, "body": "Also add a test.",
                  "created_at": "2026-05-04T12:00:00Z"})
    again = inbox.ingest(grown, "github-review-comments")
    assert [f.id for f in again] == ["github-comment-508"] and again[0].items == ["github-comment:508"]
    assert again[0].text == "(in reply to alice: Raise CartError here: callers only catch our own exceptions.)\nAlso add a test."
    grown.append({**grown[0], "id": 509, "in_reply_to_id": 501, "body": "And name the cart.", "created_at": "2026-05-04T13:00:00Z"})
    assert [f.id for f in inbox.ingest(grown, "github-review-comments")] == ["github-comment-501-509"]  # alice again
    assert len(inbox.feedback()) == 7
    assert inbox.ingest("Never log secrets.", "note", author="lead")[0].source == "note"
    assert inbox.ingest("Never   log secrets.", "note", author="lead") == []


def test_reviews_keep_the_ones_with_words_from_people(inbox):
    found = inbox.ingest(FIXTURES / "reviews.json", "github-reviews")
    assert [(f.id, f.outcome.split(":")[0]) for f in found] == [("github-review-80", "incorrect"),
                                                                ("github-review-82", "a reviewer's comment"),
                                                                ("github-review-84", "correct")]
    assert [inbox.trusted(f)[0] for f in found] == [True, False, True]  # sonar[bot] is kept out
    assert found[0].url.endswith("pullrequestreview-80") and found[0].at == "2026-05-04T10:10:00Z"


@pytest.mark.parametrize("name, expected", [
    ("pytest.xml", [("tests.test_cart::test_empty_cart_raises_cart_error", "DID NOT RAISE", "ValueError: empty cart"),
                    ("tests.test_discounts::test_discount_logged", "fixture 'caplog_shop' not found", "caplog_shop")]),
    ("jest.xml", [("cart rejects an empty cart::cart rejects an empty cart", "failure", "Expected constructor: CartError")]),
    ("go.xml", [("example.com/shop/cart::TestEmptyCart", "Failed", "want a *CartError")]),
])
def test_junit_reports_give_one_record_per_failing_test(name, expected):
    found = junit_failures((FIXTURES / name).read_text(), context="CI on PR #7")
    assert [(f.where if "::" in f.where else f.text.split(" ")[2]) for f in found] == [e[0] for e in expected]
    for record, (_, message, output) in zip(found, expected):
        assert message in record.text and output in record.detail and record.outcome.startswith("incorrect")
        assert record.author == "CI" and record.at.startswith("2026-05-04T12:0")
    assert len({f.id for f in found}) == len(found)


def test_phoenix_human_annotations_from_the_rest_api_and_a_dataframe(inbox):
    spans = json.loads((FIXTURES / "phoenix_span_annotations.json").read_text())
    found = phoenix_annotations(spans)
    assert [f.outcome.split(":")[0] for f in found] == ["incorrect", "correct"]  # the LLM's one left out
    assert "module logger" in found[0].text and found[0].where == "span 7e2f0a9c1b3d4e5f"
    assert found[1].at == "2026-05-06T09:30:00Z"
    frame = pd.DataFrame(spans["data"]).rename(columns={"name": "annotation_name"})  # the client's dataframe shape
    flat = pd.concat([frame.drop(columns="result"), pd.json_normalize(frame["result"]).add_prefix("result.")], axis=1)
    assert [f.id for f in phoenix_annotations(flat.set_index("span_id"))] == [f.id for f in found]
    runs = inbox.ingest(FIXTURES / "phoenix_experiment.json", "phoenix")
    assert len(runs) == 1 and "LedgerError" in runs[0].text and runs[0].outcome.startswith("incorrect")  # score 0.2
    assert inbox.ingest(FIXTURES / "phoenix_experiment.json", "phoenix") == []


def test_bad_kind_and_agents_rules_files():
    with pytest.raises(ValueError, match="Unknown feedback kind"):
        Inbox("x").ingest([], "slack")
    assert rules_file_for("cline") == ".clinerules"
    assert rules_file_for("AGENTS.md") == "AGENTS.md" and rules_file_for("docs/CLAUDE.md") == "docs/CLAUDE.md"
    with pytest.raises(ValueError, match="Unknown agent"):
        rules_file_for("no-such-agent")


# --- proposals, approval, the repository -------------------------------------------------------------------
def team_repo(path):
    """A team's repository: its own AGENTS.md (CRLF, no final newline), code, a change not yet committed."""
    path.mkdir()
    git("init", "-q", "-b", "main", cwd=path)
    (path / "AGENTS.md").write_bytes(b"# Our rules\r\n\r\n- Keep functions short.\r\n- Caf\xc3\xa9 style, no tabs.")
    (path / "app.py").write_text("print('hi')\n")
    git("add", "-A", cwd=path)
    git("commit", "-q", "-m", "start", cwd=path)
    (path / "app.py").write_text("print('work in progress')\n")  # the team's uncommitted work
    (path / "staged.txt").write_text("staged\n")
    git("add", "staged.txt", cwd=path)
    return path


def test_propose_approve_apply_and_roll_back_in_a_real_repository(inbox, tmp_path):
    repo = team_repo(tmp_path / "repo")
    inbox.ingest(FIXTURES / "pr_comments_paginated.json", "github-review-comments")
    with ScriptedModelServer(Script(default=adds(ERRORS_RULE, sources=["github-comment-501"]))) as server:
        proposal = inbox.propose(optimizer(server, tmp_path))
        user = message_text(server.chat_requests()[0], "user")
    assert "Raise CartError here" in user and "shop/cart.py:12" in user
    assert proposal.status == "pending" and [p.id for p in inbox.pending()] == [proposal.id]
    assert proposal.edits[0]["feedback"] == ["github-comment-501"] and "+ [R1] Raise the package's" in proposal.diff
    assert inbox.store.versions() == [0]  # nothing changes before approval
    version = inbox.approve(proposal.id)
    meta = inbox.store.metadata(version)
    assert meta["kind"] == "continual" and meta["proposal_id"] == proposal.id
    assert meta["feedback"][0]["url"].endswith("discussion_r501") and meta["edits"][0]["op"] == "add"
    assert not inbox.pending()

    status_before = git("status", "--porcelain", cwd=repo).stdout
    head_before = git("rev-parse", "HEAD", cwd=repo).stdout
    record = inbox.apply(repo, agent="AGENTS.md", branch="rules/learned")
    branch = "rules/learned"
    assert git("rev-list", "--count", f"main..{branch}", cwd=repo).stdout.strip() == "1"
    assert git("diff", "--name-only", "main", branch, cwd=repo).stdout.split() == ["AGENTS.md"]
    message = git("log", "-1", "--format=%B", branch, cwd=repo).stdout
    assert proposal.id in message and "github-comment-501" in message and "discussion_r501" in message
    text = git("show", f"{branch}:AGENTS.md", cwd=repo, check=True).stdout
    assert f"{SECTION_START}\n" in text and ERRORS_RULE in text and text.rstrip().endswith(SECTION_END)
    committed = _blob(repo, f"{branch}:AGENTS.md")
    assert committed.startswith(b"# Our rules\r\n\r\n- Keep functions short.\r\n- Caf\xc3\xa9 style, no tabs.\n")
    assert git("status", "--porcelain", cwd=repo).stdout == status_before  # work tree and index untouched
    assert git("rev-parse", "HEAD", cwd=repo).stdout == head_before
    assert record["version"] == version and inbox.apply(repo, agent="AGENTS.md", branch=branch) is None

    undo = inbox.rollback(repo)
    assert undo["branch"] == branch and undo["version"] is None
    assert git("rev-list", "--count", f"main..{branch}", cwd=repo).stdout.strip() == "2"
    assert _blob(repo, f"{branch}:AGENTS.md") == _blob(repo, "main:AGENTS.md")  # byte for byte
    assert inbox.store.metadata("latest")["kind"] == "rollback"
    with pytest.raises(LookupError, match="Nothing applied"):
        inbox.rollback(repo)


def _blob(repo, spec):
    import subprocess
    return subprocess.run(["git", "show", spec], cwd=repo, capture_output=True, check=True).stdout


def test_rollback_restores_the_version_before_the_last_apply_and_a_rules_file_of_our_own_goes(inbox, tmp_path):
    repo = team_repo(tmp_path / "repo")
    reply = {"n": 0}

    def answer(request):
        reply["n"] += 1
        return adds(ERRORS_RULE if reply["n"] == 1 else LOGGER_RULE)

    with ScriptedModelServer(Script([Rule(reply=answer)])) as server:
        inbox.ingest("Callers catch only our exceptions.", "note")
        inbox.approve(inbox.propose(optimizer(server, tmp_path)).id)
        inbox.apply(repo, agent="cline")
        inbox.ingest("Never print in library code.", "note")
        inbox.approve(inbox.propose(optimizer(server, tmp_path)).id)
        inbox.apply(repo, agent="cline")
    branch = "prompt-learning/rules"
    assert LOGGER_RULE in git("show", f"{branch}:.clinerules", cwd=repo).stdout
    inbox.rollback(repo)
    text = git("show", f"{branch}:.clinerules", cwd=repo).stdout
    assert ERRORS_RULE in text and LOGGER_RULE not in text
    inbox.rollback(repo, branch)
    assert git("ls-tree", branch, "--", ".clinerules", cwd=repo).stdout == ""  # we created it, so it goes
    assert [parse_rules_text(inbox.store.load(v)).rules != [] for v in inbox.store.versions()] == [False, True, True, True, False]


def test_a_checked_out_branch_is_refused(tmp_path):
    repo = team_repo(tmp_path / "repo")
    with pytest.raises(ValueError, match="checked out"):
        commit_rules(repo, "main", "AGENTS.md", "- [R1] x\n", "msg")


def test_a_rejected_edit_is_not_proposed_again_and_the_optimizer_is_told_why(inbox, tmp_path):
    inbox.ingest("Callers catch only our exceptions.", "note", author="lead")
    with ScriptedModelServer(Script(default=adds(ERRORS_RULE))) as server:
        first = inbox.propose(optimizer(server, tmp_path))
        inbox.reject(first.id, "we are moving to result types instead")
        inbox.ingest("Again a ValueError escaped.", "note", author="lead")
        assert inbox.propose(optimizer(server, tmp_path)) is None
        assert "rejected before" in inbox.last_note
        told = message_text(server.chat_requests()[-1], "user")
    assert "REJECTED" in told and ERRORS_RULE in told and "we are moving to result types instead" in told
    with ScriptedModelServer(Script(default=adds(ERRORS_RULE.upper(), LOGGER_RULE))) as server:
        inbox.ingest("And a print() slipped in.", "note", author="lead")
        second = inbox.propose(optimizer(server, tmp_path))
    assert [e["text"] for e in second.edits] == [LOGGER_RULE] and len(second.filtered) == 1
    assert [r.text for r in parse_rules_text(second.ruleset).rules] == [LOGGER_RULE]
    with pytest.raises(ValueError, match="already rejected"):
        inbox.approve(first.id)


def test_a_transient_failure_stores_nothing_and_a_rerun_redoes_it(inbox, tmp_path):
    inbox.ingest("Callers catch only our exceptions.", "note")
    script = Script([Rule(reply=Reply(status=503, error_message="overloaded"), times=2)], default=adds(ERRORS_RULE))
    with ScriptedModelServer(script) as server:
        with pytest.raises(ProposalUnfinished, match="503"):
            inbox.propose(optimizer(server, tmp_path))
        assert inbox.proposals() == [] and len(inbox.new_feedback()) == 1
        proposal = inbox.propose(optimizer(server, tmp_path))
    assert proposal.edits[0]["text"] == ERRORS_RULE and inbox.new_feedback() == []


def test_an_optimizer_that_changes_nothing_says_so(inbox, tmp_path):
    inbox.ingest("Nice work overall.", "note")
    with ScriptedModelServer(Script(default=Reply(json.dumps({"edits": []})))) as server:
        assert inbox.propose(optimizer(server, tmp_path)) is None
    assert "changed nothing" in inbox.last_note and inbox.new_feedback() == [] and inbox.proposals() == []
    assert inbox.propose(None) is None and "No new feedback" in inbox.last_note


# --- expiry -------------------------------------------------------------------------------------------------
def approved_rules(inbox, tmp_path, *texts):
    inbox.ingest(f"feedback {texts}", "note")
    with ScriptedModelServer(Script(default=adds(*texts))) as server:
        inbox.approve(inbox.propose(optimizer(server, tmp_path)).id)


def test_an_unconfirmed_rule_is_proposed_for_deletion_a_cited_one_is_kept(inbox, tmp_path):
    approved_rules(inbox, tmp_path, ERRORS_RULE, LOGGER_RULE)
    inbox.clock.now = START + timedelta(days=60)
    inbox.ingest("Good catch, exactly what [R1] says.", "note", author="alice")
    assert inbox.propose_expiry() is None
    inbox.clock.now = START + timedelta(days=91)
    health = inbox.rule_health().set_index("id")
    assert health.loc["R2", "stale"] and not health.loc["R1", "stale"] and health.loc["R1", "confirmations"] == 1
    proposal = inbox.propose_expiry()
    assert proposal.kind == "expiry" and [(e["op"], e["id"]) for e in proposal.edits] == [("delete", "R2")]
    assert "unconfirmed for 91 days" in proposal.edits[0]["reason"]
    assert [r.id for r in inbox.store.rules("latest").rules] == ["R1", "R2"]  # never deleted silently
    assert inbox.propose_expiry() is None  # already pending
    inbox.reject(proposal.id, "we still want it")  # keeping it confirms it
    assert not inbox.rule_health().set_index("id").loc["R2", "stale"]
    inbox.clock.now = START + timedelta(days=400)
    assert [e["id"] for e in inbox.propose_expiry().edits] == ["R1"]  # R2's deletion was rejected


def test_a_rule_shown_harmful_is_proposed_for_deletion(inbox, tmp_path):
    approved_rules(inbox, tmp_path, ERRORS_RULE, LOGGER_RULE)
    inbox.ingest("[R2] is wrong for scripts: they must print.", "note", author="alice")
    inbox.ingest("[R2] misled the agent again, remove it.", "note", author="bob")
    health = inbox.rule_health().set_index("id")
    assert health.loc["R2", "harmful"] and health.loc["R2", "implicated"] == 2 and not health.loc["R1", "harmful"]
    proposal = inbox.propose_expiry()
    assert [e["id"] for e in proposal.edits] == ["R2"] and len(proposal.edits[0]["feedback"]) == 2
    inbox.approve(proposal.id)
    assert [r.id for r in inbox.store.rules("latest").rules] == ["R1"]
    inbox.record_ablation(pd.DataFrame([{"rule": "R1", "effect_of_removal": 0.5, "significant": True,
                                         "summary": "without R1: +50 points"}]))
    assert inbox.rule_health().set_index("id").loc["R1", "harmful"]


# --- the replay gate ------------------------------------------------------------------------------------------
class RuleFollowingAgent(AgentBase):
    """Writes the task's gold patch when its rules file states every convention the task checks, else the
    naive one (fixes the bug, breaks the conventions)."""

    name = "rule-following-test-agent"
    mode = "act"
    model = "test-model"
    base_prompt = "You are a test agent."
    rules_file = "AGENTS.md"

    def check(self):
        pass

    def __init__(self):
        self.calls = []  # the instance ids it ran, in order

    def run(self, task, workspace, ruleset):
        self.calls.append(task["instance_id"])
        knows = all(CONVENTIONS[c]["rule"] in ruleset for c in task["conventions"])
        git("apply", "-", cwd=workspace, input=task["patch" if knows else "naive_patch"])
        return AgentResult(task["instance_id"], "completed", model=self.model)


def gate_inbox(tmp_path, conventions):
    inbox = Inbox("gate", root=tmp_path / "rulesets", clock=Clock())
    inbox.ingest("house conventions", "note")
    texts = [CONVENTIONS[c]["rule"] for c in conventions]
    with ScriptedModelServer(Script(default=adds(*texts))) as server:
        return inbox, inbox.propose(optimizer(server, tmp_path))


FOUR = ["errors", "changelog", "docs_types", "registry"]


def four_convention_tasks(n=6):
    house = load_house_suite()
    return house[house.conventions.map(lambda c: set(c) <= set(FOUR))].head(n)


# the tests that read `gated` run on one xdist worker (make test runs with --dist loadgroup): spread over two, each
# would gate the proposal again
one_gating = pytest.mark.xdist_group("continual-replay-gate")


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    """One proposal of the four conventions' rules, gated as a team would meet it: on 4 tasks, then on 6, then
    auto-approved on 4 and on 6; what each step decided and stored. Every gate shares one results folder, so a
    task already run under a ruleset is resumed, not run and graded again: 12 gradings, not 32."""
    tmp_path = tmp_path_factory.mktemp("gate")
    inbox, proposal = gate_inbox(tmp_path, FOUR)
    agent, gate = RuleFollowingAgent(), dict(workers=2, results_root=tmp_path / "results")
    found = {"proposal": proposal.id, "agent": agent}
    for label, n in (("small", 4), ("enough", 6)):
        found[label] = inbox.replay_gate(proposal.id, agent, four_convention_tasks(n), **gate)
        found[f"{label} evidence"] = dict(inbox.proposal(proposal.id).evidence)
    for label, n in (("auto small", 4), ("auto enough", 6)):
        found[label] = inbox.auto_approve(proposal.id, agent, four_convention_tasks(n), **gate)
        found[f"{label} proposal"] = inbox.proposal(proposal.id)
    return found


@one_gating
def test_the_replay_gate_accepts_a_proposal_that_is_not_worse_on_enough_tasks(gated):
    decision = gated["enough"]
    assert decision.accept and decision.comparison.n == 6 and decision.comparison.b_only == 6
    assert "not significantly worse on 6 tasks" in decision.reason and "would be caught with 80% power" in decision.reason
    stored = gated["enough evidence"]
    assert stored["accept"] and stored["summary"] == decision.comparison.summary() and "on 6 tasks" in stored["summary"]


@one_gating
def test_a_replay_gate_too_small_to_ever_refuse_does_not_accept_and_says_how_many_tasks_it_needs(gated):
    decision = gated["small"]
    assert not decision.accept and decision.comparison.b_only == 4  # better on every task, and still not accepted
    assert "with 4 replay tasks no difference can be significant at 0.05" in decision.reason
    assert "needs at least 6 tasks" in decision.reason
    assert not gated["small evidence"]["accept"]


@one_gating
def test_auto_approval_needs_trusted_sources_no_flags_and_a_gate_that_could_have_refused(gated):
    version, why = gated["auto small"]
    assert version is None and "the replay gate refused: with 4 replay tasks" in why
    assert gated["auto small proposal"].status == "pending" and gated["auto small proposal"].reason == why
    version, why = gated["auto enough"]
    assert version == 1 and why.startswith("auto-approved: trusted sources, no flags, replay gate: the proposal is not")
    assert gated["auto enough proposal"].status == "approved"


@one_gating
def test_a_gate_run_again_resumes_the_runs_it_has_and_runs_only_the_new_tasks(gated):
    # each of the 6 tasks ran once under the current rules and once under the proposal's, over four gates
    assert sorted(Counter(gated["agent"].calls).values()) == [2] * 6


def test_the_replay_gate_refuses_a_proposal_that_is_significantly_worse(tmp_path):
    tasks = four_convention_tasks()
    assert len(tasks) == 6
    inbox, first = gate_inbox(tmp_path, FOUR)
    inbox.approve(first.id)
    inbox.ingest("[R1] [R2] [R3] [R4] are outdated, remove them.", "note")
    worse = inbox.propose_expiry()
    assert worse is None  # implicated once each: not yet harmful
    inbox.ingest("Still outdated: [R1] [R2] [R3] [R4], remove.", "note")
    worse = inbox.propose_expiry()
    assert len(worse.edits) == 4
    decision = inbox.replay_gate(worse.id, RuleFollowingAgent(), tasks, workers=2, results_root=tmp_path / "results")
    comparison = decision.comparison
    assert not decision.accept and not inbox.proposal(worse.id).evidence["accept"]
    assert comparison.b_only == 0 and comparison.a_only == comparison.n  # every task compared got worse
    if comparison.excluded:  # a grading that errored on a loaded machine is counted and left out, never a result
        from helpers.store.records import read_jsonl

        errors = [(r["instance_id"], r["error"]) for path in (tmp_path / "results").rglob("*.jsonl")
                  for r in read_jsonl(path) if r.get("status") != "completed" or r.get("error")]
        warnings.warn(f"replay runs errored, left out of the gate: {errors}")
        assert comparison.excluded == {"errored": 6 - comparison.n}
        return
    assert comparison.a_only == 6 and comparison.significant and "significantly worse" in decision.reason


def test_the_bundled_examples_drive_the_scripted_optimizer(tmp_path):
    from helpers.stand_ins.dry_run import start_dry_run_server

    examples = example_feedback()
    inbox = Inbox("dry", root=tmp_path / "rulesets", agent_login=examples["agent_login"], clock=Clock())
    for item in examples["items"]:
        assert inbox.ingest(item["path"], item["kind"], context=item["context"])
    server = start_dry_run_server()
    try:
        proposal = inbox.propose(optimizer(server, tmp_path))
    finally:
        server.stop()
    added = {e["text"] for e in proposal.edits}
    assert {CONVENTIONS[c]["rule"] for c in ("errors", "changelog", "decimal")} == added
    assert all(e["feedback"] for e in proposal.edits) and proposal.dry_run
    # the bot and the first-time contributor's injection are shown as untrusted and never reach the optimizer
    outsiders = {record.author: record.id for record, _ in inbox.untrusted()}
    assert set(outsiders) == {"codecov[bot]", "helpful-stranger"}
    assert not set(outsiders.values()) & set(proposal.feedback_ids) and not proposal.flags
