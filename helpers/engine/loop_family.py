"""What the one loop (helpers.engine.loop) runs on: a task family, seen through three steps.

A LoopFamily answers both splits with a ruleset, gives each answer feedback in English, and makes the
optimizer that edits the ruleset from that feedback:
- CodingLoopFamily: a coding agent (Cline, Claude Code, Codex, or any registered Agent) runs every task
  with the rules, each patch is tested (helpers.engine.runs.run_tasks), and the LLM judge explains why
  each training result passed or failed (and each plan, in plan mode, on both splits); what is about code
  (the workspace, the patch, its grader, the judge's evidence) comes from its WorkspaceFamily
  (helpers.core.protocols; the coding family by default), never imported here;
- PromptLoopFamily: a prompt (helpers.core.protocols.PromptFamily, e.g. the latent-rules benchmark)
  answers every request through the session's model, and the family's grader scores and explains each
  answer as it comes (its grader is its test and its judge at once).
Both produce rows with `status`, `pass_or_fail`, `output` (the one output column of every family and
agent), `cost_usd`, and after feedback `correctness` and `explanation`.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import pandas as pd

from helpers.core.protocols import RunContext, WorkspaceFamily
from helpers.engine.settings import LoopSettings
from helpers.families.registry import default_family
from helpers.rules.rules_file import RulesFile

FEEDBACK_COLUMNS = ("correctness", "explanation")


class LoopFamily(Protocol):
    """The loop's view of a task family.

    base_prompt: the fixed instructions around the rules, shown read-only to the optimizer.
    feedback_columns: the columns feedback() adds and the optimizer reads.
    answer(ruleset, loop): {"train": rows, "test": rows} and "val": rows when the family has a validation
      side, every task answered with `ruleset` (rows whose run failed keep their status and error: their
      outcome is decided by helpers.stats.outcomes, never dropped).
    feedback(runs): (train, test) with the feedback columns added where the loop learns from them (the
      validation rows get none: they only decide which version is kept).
    optimizer(): a PromptLearningOptimizer for this family (its prompt, budget and model).
    """

    base_prompt: str

    @property
    def feedback_columns(self) -> Sequence[str]: ...

    def answer(self, ruleset: RulesFile, loop: int) -> dict[str, pd.DataFrame]: ...

    def feedback(self, runs: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]: ...

    def optimizer(self) -> Any: ...


class CodingLoopFamily:
    """A coding agent on train and test tasks: answers are tested patches (or plans), the judge explains."""

    feedback_columns = FEEDBACK_COLUMNS

    def __init__(
        self,
        train_df: pd.DataFrame,
        test_df: pd.DataFrame,
        settings: LoopSettings,
        session: RunContext,
        val_df: pd.DataFrame | None = None,
        family: WorkspaceFamily | None = None,
    ):
        self.splits = splits_of(train_df, test_df, val_df)
        self.family = family or default_family()  # the workspaces, patches, grader and judge's evidence
        self.settings, self.session = settings, session
        self.agent = make_loop_agent(settings, session)
        self.base_prompt = self.agent.base_prompt

    def answer(self, ruleset: RulesFile, loop: int) -> dict[str, pd.DataFrame]:
        """Each split's rows; when loops do not run the test split (tests_each_loop), it is left to the
        one test (no rows here)."""
        from helpers.engine.run_records import COLUMNS

        return {
            split: (
                run_attempts(self.agent, frame, f"{split}_{loop}", ruleset, self.settings, self.session, self.family)
                if split != "test" or tests_each_loop(self.settings, self.session.dry_run)
                else pd.DataFrame(columns=list(COLUMNS))
            )
            for split, frame in self.splits.items()
        }

    def feedback(self, runs: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
        from helpers.learn.judge import evaluate_results

        judge = dict(
            workers=self.settings.workers,
            budget_usd=self.settings.judge_budget_usd,
            system_prompt=self.settings.judge_prompt,
            family=self.family,
            **self.session.judge_kwargs(),
        )
        train = evaluate_results(runs["train"], **judge)
        if self.settings.mode != "plan":
            return train, runs["test"]
        # a plan has no tests: the judge scores it on every side (validation in place: it decides what is kept)
        if "val" in runs:
            runs["val"] = evaluate_results(runs["val"], include_gold=False, **judge)
        return train, evaluate_results(runs["test"], include_gold=False, **judge)

    def optimizer(self) -> Any:
        from helpers.learn.optimizer import PromptLearningOptimizer
        from helpers.learn.rule_check import RuleCheck

        chosen: dict[str, Any] = (
            {"system_prompt": self.settings.optimizer_prompt} if self.settings.optimizer_prompt else {}
        )
        # learned rules are also checked by meaning, with the judge's model
        check = RuleCheck.of(**self.session.judge_kwargs(), budget_usd=self.settings.judge_budget_usd)
        return PromptLearningOptimizer(
            prompt=self.base_prompt,
            budget_usd=self.settings.optimizer_budget_usd,
            rules_max_tokens=self.settings.rules_max_tokens,
            rule_check=check,
            **chosen,
            **self.session.optimizer_kwargs(),
        )


class PromptLoopFamily:
    """A prompt family: the prompt (version i) answers every request through the session's agent model; the
    family's grader scores and explains (`feedback_kind` "explanations" or "scores")."""

    def __init__(
        self,
        family: Any,
        train_df: pd.DataFrame,
        test_df: pd.DataFrame,
        settings: LoopSettings,
        session: RunContext,
        feedback_kind: str = "explanations",
        val_df: pd.DataFrame | None = None,
    ):
        from helpers.llm.client import LLMClient, llm_generator

        self.family, self.splits, self.settings, self.session = (
            family,
            splits_of(train_df, test_df, val_df),
            settings,
            session,
        )
        self.feedback_kind, self.base_prompt = feedback_kind, family.base_prompt
        self.feedback_columns = tuple(family.feedback_columns)
        self.client = LLMClient(
            session.agent_model, base_url=session.base_url, api_key=session.api_key, max_concurrency=settings.workers
        )
        self.generate = llm_generator(self.client)

    def answer(self, ruleset: RulesFile, loop: int) -> dict[str, pd.DataFrame]:
        """Both splits answered with the prompt (the whole text, rendered once) and graded (the grader is this
        family's test)."""
        rows = {}
        for split, frame in self.splits.items():
            spent = self.client.total_cost_usd
            answers = self.family.run(ruleset.text, frame, self.generate, workers=self.settings.workers)
            # the generator's cost, from the client's meter, spread over the split's rows
            graded = self.family.feedback(
                answers.assign(cost_usd=(self.client.total_cost_usd - spent) / max(1, len(frame))), self.feedback_kind
            )
            verdict = graded["correctness"].map({"correct": "pass", "incorrect": "fail"}).fillna("fail")
            rows[split] = graded.assign(pass_or_fail=verdict.where(graded["status"] != "error", "fail"), mode="act")
        return rows

    def feedback(self, runs: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The grader's feedback came with the answers (its scores and explanations)."""
        return runs["train"], runs["test"]

    def optimizer(self) -> Any:
        from helpers.learn.optimizer import PromptLearningOptimizer

        return PromptLearningOptimizer(
            prompt="",
            system_prompt=self.settings.optimizer_prompt or self.family.optimizer_prompt,
            leaks=self.family.leaks,
            budget_usd=self.settings.optimizer_budget_usd,
            rules_max_tokens=self.settings.rules_max_tokens,
            **self.session.optimizer_kwargs(),
        )


def splits_of(train_df: pd.DataFrame, test_df: pd.DataFrame, val_df: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """The sides a loop answers: train, validation (only when it has tasks) and test."""
    sides = {"train": train_df, "val": val_df, "test": test_df}
    return {side: frame for side, frame in sides.items() if side != "val" or (frame is not None and len(frame))}


def make_loop_agent(settings: LoopSettings, session: RunContext) -> Any:
    """The experiment's agent: settings.agent itself when it is an Agent, else the one registered under
    that name, on the session's agent model."""
    from helpers.core.registry import make_agent

    if not isinstance(settings.agent, str):
        return settings.agent
    return make_agent(settings.agent, timeout_s=settings.agent_timeout_s, mode=settings.mode, **session.agent_kwargs())


def tests_each_loop(settings: LoopSettings, dry_run: bool) -> bool:
    """Whether every loop runs the test split: settings.test_each_loop, or when None, yes in the scripted dry run
    (free) and with several attempts or plans (the one test runs alone only for one attempt of act mode), no
    otherwise: a real model then pays only for the pairs the one test needs."""
    if settings.test_each_loop is not None:
        return settings.test_each_loop
    return dry_run or settings.attempts != 1 or settings.mode != "act"


def run_attempts(
    agent: Any,
    tasks: pd.DataFrame,
    run_id: str,
    ruleset: str | RulesFile,
    settings: LoopSettings,
    session: RunContext | None = None,
    family: WorkspaceFamily | None = None,
) -> pd.DataFrame:
    """Every task `settings.attempts` times (run ids `<run_id>`, or `<run_id>_a<k>` with several attempts),
    through the session's model gateway when it has one, in `family`'s workspaces (None: the default)."""
    from helpers.engine.runs import run_tasks

    gateway = session.gateway if session is not None else None
    frames = [
        run_tasks(
            tasks,
            agent,
            run_id=run_id if settings.attempts == 1 else f"{run_id}_a{attempt}",
            experiment=settings.experiment,
            ruleset=ruleset,
            workers=settings.workers,
            attempt=attempt,
            gateway=gateway,
            executor=settings.executor,
            family=family,
        )
        for attempt in range(settings.attempts)
    ]
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


__all__ = [
    "tests_each_loop",
    "LoopFamily",
    "CodingLoopFamily",
    "PromptLoopFamily",
    "make_loop_agent",
    "run_attempts",
    "splits_of",
    "FEEDBACK_COLUMNS",
]  # documented in CODE_APPENDIX.md
