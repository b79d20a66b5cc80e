"""The Prompt Learning loop: one function over a task family (helpers.engine.loop_family), readable in one
screen, that every notebook calls, and whose steps a notebook can also call one by one.

Each loop i:
  1. answers the train, validation and test tasks with ruleset version v (v = i, or the version kept so
     far): the agent runs and every patch is tested (or a prompt answers and a grader scores);
  2. asks for feedback in English on each training result (the LLM judge, or the family's grader);
  3. logs both splits to Phoenix;
  4. lets the optimizer turn rules + tasks + outputs + feedback into the next ruleset version;
  5. saves everything (finish_loop): results CSVs, the ruleset (a new version only when it changed), one
     record in loops.jsonl.
A loop already in loops.jsonl is skipped, and the engine and the LLM cache make a half-finished loop
cheap to redo: calling run_loop again after a crash or a kill resumes where it stopped.

The data have three roles (helpers.stats.selection): the optimizer learns on train, validation decides which
version is kept, and test is the one pre-declared comparison of the kept version against the start
(evidence_summary); per-loop test accuracies are an exploratory curve, with no p-values.

A failure never reads as a result: each run's outcome comes from helpers.stats.outcomes (infrastructure
errors are counted and left out of accuracy, rule-induced ones count as failures), the loop
line says how many and why, a loop where every run errored stops (LoopStopped), and a judge or
optimizer that failed for a transient reason (rate limit, outage, spent budget) leaves the loop
unfinished (LoopUnfinished) so that a rerun completes it: how a loop ends is helpers.engine.loop_end. What the loop prints (each loop's line, the kept
version, the loops table) is in helpers.engine.loop_lines.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pandas as pd

from helpers.engine.loop_end import check_runs, finish_loop
from helpers.engine.loop_family import FEEDBACK_COLUMNS, CodingLoopFamily, LoopFamily, PromptLoopFamily
from helpers.store.loops import completed_loops, loop_rows
from helpers.engine.loop_lines import (
    SPLITS,
    cost_label,
    cost_text,
    describe_loop,
    kept_line,
    loop_cost,
    loop_evidence,
    loops_table,
)
from helpers.engine.settings import LoopSettings, agent_name, instructions
from helpers.core.protocols import RunContext
from helpers.rules.rules_file import RulesFile

if TYPE_CHECKING:  # the functions below import it where they use it
    from helpers.store.rulesets import RulesetStore


# --- starting or resuming an experiment -------------------------------------------------------------
def check_same_kind(experiment: str, done: dict[int, dict[str, Any]], dry_run: bool) -> None:
    """Resuming must never mix scripted dry-run loops with real ones under one experiment name."""
    kinds = {bool(r.get("dry_run")) for r in done.values()}
    if kinds and kinds != {dry_run}:
        held = "scripted dry-run" if True in kinds else "real"
        raise ValueError(
            f"Experiment {experiment!r} already holds {held} results, and this run is "
            f"{'a scripted dry run' if dry_run else 'real'}. Choose another EXPERIMENT name, or delete "
            f"act_results/{experiment} and act_rulesets/{experiment} to start over."
        )


def start_experiment(
    settings: LoopSettings,
    session: RunContext,
    initial_ruleset: str | RulesFile = "",
    tasks: tuple[pd.DataFrame, ...] = (),
) -> Any:
    """The experiment's RulesetStore, with the starting ruleset saved as version 0 on a first run.

    Refuses to mix scripted dry-run loops with real ones under one name, to resume from other starting rules
    than version 0's (a non-empty `initial_ruleset`: helpers.engine.start.start_rules), and a dry run on tasks the
    scripted model does not know (it plays the bundled house suite, and mined tasks it was given:
    open_session(dry_run_tasks=...)).
    """
    from helpers.store.rulesets import RulesetStore

    initial_ruleset = initial_ruleset.text if isinstance(initial_ruleset, RulesFile) else initial_ruleset
    check_same_kind(settings.experiment, completed_loops(settings.experiment), session.dry_run)
    if session.dry_run:
        unknown = sorted(
            {str(s) for frame in tasks for s in frame.get("suite", pd.Series(["?"] * len(frame)))} - {"house", "mined"}
        )
        if unknown:
            raise ValueError(
                "The scripted dry run plays only the bundled house suite (TASK_SOURCE='house') and tasks mined "
                "from a repository (07_your_repo); these tasks "
                f"are {unknown}. Configure a model (OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENAI_BASE_URL) to "
                "run on other tasks."
            )
    store = RulesetStore(settings.experiment)
    check_same_instructions(settings, store)
    if store.versions() and initial_ruleset.strip() and store.load(0) != initial_ruleset:
        raise ValueError(
            f"Experiment {settings.experiment!r} started from other rules (version 0) than this run's "
            "START_RULES. Choose another EXPERIMENT name for the new start, or give the one it was made "
            "with (None resumes from what it holds)."
        )
    if not store.versions():
        store.save(
            initial_ruleset,
            parent=None,
            loop=None,
            report=None,
            model=None,
            dry_run=session.dry_run,
            **instructions(settings),
        )
    return store


def check_same_instructions(settings: LoopSettings, store: RulesetStore) -> None:
    """Resuming must never mix rules learned with one judge's or optimizer's instructions with another's:
    one clear error naming which changed (a version saved before instructions were recorded used the
    defaults)."""
    given = instructions(settings)
    for version in store.versions():
        saved = store.metadata(version)
        changed = [name for name, text in given.items() if saved.get(name) != text]
        if changed:
            names = " and ".join(name.upper() for name in changed)
            raise ValueError(
                f"Experiment {settings.experiment!r} was made with other {names} (see version {version}'s "
                f"metadata) than this run's. Resuming would mix rules learned under both. Choose another "
                f"EXPERIMENT name for the new instructions, or give the ones it was made with (None: the defaults)."
            )


# --- the loop --------------------------------------------------------------------------------------
class LoopSteps:
    """Loop `loop` of an experiment over `family`, one step per method: run_one_loop calls them in order, and a
    notebook can call them one by one (helpers.engine.loop_steps shows each). A loop already finished is read
    back from its saved rows and the version it made: nothing runs, no model is asked, nothing is saved again."""

    def __init__(
        self,
        loop: int,
        family: LoopFamily,
        settings: LoopSettings,
        session: RunContext,
        store: RulesetStore,
        datasets: dict[str, Any] | None = None,
    ):
        self.loop, self.family, self.settings, self.session, self.store = loop, family, settings, session, store
        self.datasets, self.started = datasets, time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.recorded = completed_loops(settings.experiment).get(loop)
        self.version, self.why = choose_start_version(store, settings, loop)
        self.ruleset = store.load_rules(self.version)  # parsed once: the loop passes it, each writer renders it
        self.optimizer = family.optimizer()
        self.runs: dict[str, pd.DataFrame] = {}
        self.train: pd.DataFrame | None = None  # judged training rows, after judge()
        self.test: pd.DataFrame | None = None
        self.record: dict[str, Any] | None = None  # the loop's record, after optimize()
        self.report: dict[str, Any] = {}  # the optimizer's report (OptimizerReport.to_dict())

    def run_agent(self) -> dict[str, pd.DataFrame]:
        """1. Every split answered with the rules, each patch tested; stops when every run errored."""
        if self.recorded is not None:
            saved = {split: loop_rows(self.settings.experiment, split, self.loop) for split in SPLITS}
            self.runs = {split: frame for split, frame in saved.items() if frame is not None}
            return self.runs
        self.runs = self.family.answer(self.ruleset, self.loop)
        check_runs(self.loop, self.runs)
        return self.runs

    def judge(self) -> pd.DataFrame:
        """2. Feedback in English on the training results; 3. the splits logged to Phoenix."""
        if self.recorded is not None:  # saved with the judge's columns, and logged when it ran
            self.train, self.test = self.runs["train"], self.runs["test"]
            return self.train
        self.train, self.test = self.family.feedback(self.runs)
        log_loop_to_phoenix(
            self.loop,
            self.version,
            self.ruleset.text,
            self.train,
            self.test,
            self.settings,
            self.session,
            self.datasets,
            val=self.runs.get("val"),
        )
        return self.train

    def optimize(self) -> dict[str, Any]:
        """4. The optimizer's next rules from that feedback; 5. the loop saved (finish_loop). Its record."""
        if self.recorded is not None:  # what it did then, from the version it made
            made = self.recorded["next_ruleset_version"]
            self.report = (self.store.metadata(made).get("optimizer_report") or {}) if made != self.version else {}
            self.record = record = self.recorded
            return record
        new_ruleset = self.optimizer.optimize(
            dataset=self.train,
            output_column="output",
            feedback_columns=list(self.family.feedback_columns),
            ruleset=self.ruleset,
            context_size_k=self.settings.context_size_k,
        )
        report = self.optimizer.last_report
        self.report = report.to_dict() if report is not None else {}
        self.record = record = finish_loop(
            self.loop,
            self.version,
            self.ruleset,
            self.train,
            self.test,
            new_ruleset,
            report,
            self.settings,
            self.session,
            self.store,
            started=self.started,
            val=self.runs.get("val"),
        )
        return record

    def judged(self) -> pd.DataFrame:
        """The training rows with the judge's feedback; RuntimeError before judge() made them."""
        if self.train is None:
            raise RuntimeError("judge() comes first: no training rows are judged yet.")
        return self.train


def run_one_loop(
    loop: int,
    family: LoopFamily,
    settings: LoopSettings,
    session: RunContext,
    store: RulesetStore,
    datasets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One full loop, by its steps (LoopSteps); returns its loops.jsonl record (also saved there)."""
    steps = LoopSteps(loop, family, settings, session, store, datasets)  # the version: choose_start_version
    steps.run_agent()  # 1. answer every split with the rules, each patch tested
    steps.judge()  # 2. feedback in English; 3. both splits logged to Phoenix
    return steps.optimize()  # 4. the next rules; 5. everything saved


def loop_over(
    family: LoopFamily,
    settings: LoopSettings,
    session: RunContext,
    initial_ruleset: str | RulesFile = "",
    tasks: tuple[pd.DataFrame, ...] = (),
    datasets: dict[str, Any] | None = None,
    verbose: bool = True,
) -> pd.DataFrame:
    """All loops of an experiment over `family`, resuming after the last finished one; the loop records."""
    store = start_experiment(settings, session, initial_ruleset, tasks=tasks)
    done = completed_loops(settings.experiment)
    for loop in range(settings.loops):
        record = done.get(loop) or run_one_loop(loop, family, settings, session, store, datasets)
        if verbose:
            print(describe_loop(record, session.label) + (" (already finished)" if loop in done else ""))
    if verbose:
        print(kept_line(settings.experiment))
    return loops_table(completed_loops(settings.experiment).values())


def run_loop(
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    settings: LoopSettings,
    session: RunContext,
    initial_ruleset: str | RulesFile = "",
    datasets: dict[str, Any] | None = None,
    verbose: bool = True,
    val_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """All loops of a coding experiment (settings.agent on train_df, val_df and test_df); the loop records."""
    family = CodingLoopFamily(train_df, test_df, settings, session, val_df=val_df)
    frames = tuple(f for f in (train_df, val_df, test_df) if f is not None)
    loops = loop_over(family, settings, session, initial_ruleset, frames, datasets, verbose)
    from helpers.engine.loop_family import tests_each_loop
    from helpers.engine.one_test import run_one_test

    if not tests_each_loop(settings, session.dry_run):
        run_one_test(test_df, settings, session, verbose=verbose)
    return loops


def run_prompt_loop(
    family: Any,
    train_df: pd.DataFrame,
    test_df: pd.DataFrame,
    settings: LoopSettings,
    session: RunContext,
    datasets: dict[str, Any] | None = None,
    feedback_kind: str = "explanations",
    verbose: bool = True,
    val_df: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """All loops of a prompt family's experiment (helpers.core.protocols.PromptFamily): the same loop, the
    family's prompt in the agent's place and its grader in the judge's (`feedback_kind` "explanations" or
    "scores")."""
    loop_family = PromptLoopFamily(family, train_df, test_df, settings, session, feedback_kind, val_df=val_df)
    return loop_over(loop_family, settings, session, family.base_prompt, (), datasets, verbose)


# --- the steps -------------------------------------------------------------------------------------
def choose_start_version(store: RulesetStore, settings: LoopSettings, loop: int) -> tuple[int, str]:
    """(the version loop `loop` runs with, why): "latest", or "best": the version kept on validation so far
    (helpers.store.loops.kept_version; a version written from it and not measured yet is tried first).
    Versions written by loop `loop` or later are ignored: a loop re-run after a crash starts where it did."""
    from helpers.store.loops import kept_version

    version = store.choose_start(settings.start_from, loop=loop)
    if settings.start_from == "latest":
        return version, f"v{version}, the latest version"
    choice = kept_version(settings.experiment, before_loop=loop)
    if choice is None:
        return version, f"v{version}: no loop has finished yet"
    if version != choice.version:
        return version, f"v{version}, written from v{choice.version} (kept on validation) and not measured yet"
    return version, f"{choice.how}"


def meta_prompt(optimizer: Any, judged: pd.DataFrame, ruleset: str | RulesFile, examples: int = 3) -> str:
    """The optimizer's request (system and user messages) for `ruleset` (its learned rules: text is parsed here)
    and the first `examples` rows."""
    from helpers.learn.examples import render_example

    rows = [render_example(row, "output", FEEDBACK_COLUMNS) for row in judged.head(examples).to_dict("records")]
    messages = optimizer.messages(RulesFile.parse(ruleset).rules, rows)
    return "\n\n".join(f"===== {m['role']} =====\n{m['content']}" for m in messages)


def phoenix_metadata(
    loop: int, version: int, settings: LoopSettings, session: RunContext, split: str
) -> dict[str, Any]:
    """What a loop's Phoenix experiment for `split` ("Train", "Val", "Test") is tagged with."""
    return {
        "loop": loop,
        "ruleset_version": version,
        "agent": agent_name(settings),
        "agent_model": session.agent_model,
        "judge_model": session.judge_model,
        "dry_run": session.dry_run,
        "split": split.lower(),
    }


def log_loop_to_phoenix(
    loop: int,
    version: int,
    ruleset: str,
    train: pd.DataFrame,
    test: pd.DataFrame,
    settings: LoopSettings,
    session: RunContext,
    datasets: dict[str, Any] | None,
    val: pd.DataFrame | None = None,
) -> None:
    """Every split as a Phoenix experiment ("Train <loop>", "Val <loop>" when the split has a validation
    side and its dataset was uploaded, "Test <loop>") and the ruleset as a prompt version."""
    if not (session.phoenix_url and datasets):
        return
    from helpers.tracking.phoenix_experiments import log_experiment_to_phoenix, log_ruleset_version

    sides = [("Train", train), *([("Val", val)] if val is not None and "val" in datasets else []), ("Test", test)]
    for split, frame in sides:
        log_experiment_to_phoenix(
            hostname=session.phoenix_url,
            api_key=session.phoenix_api_key,
            dataset_obj=datasets[split.lower()],
            experiment_name=f"{split} {loop}",
            experiment_df=frame,
            metadata=phoenix_metadata(loop, version, settings, session, split),
            experiment=settings.experiment,
        )
    log_ruleset_version(
        session.phoenix_url,
        session.phoenix_api_key,
        settings.experiment,
        version,
        ruleset,
        loop=loop,
        dry_run=session.dry_run,
        model=session.agent_model,
    )


__all__ = [  # the public API, documented in CODE_APPENDIX.md
    "LoopSettings",
    "LoopSteps",
    "run_loop",
    "run_prompt_loop",
    "loop_over",
    "run_one_loop",
    "start_experiment",
    "meta_prompt",
    "log_loop_to_phoenix",
    "loop_evidence",
    "loop_cost",
    "choose_start_version",
    "FEEDBACK_COLUMNS",
    "check_same_instructions",
    "phoenix_metadata",
    # the loop in words, from helpers.engine.loop_lines (importable from here too)
    "describe_loop",
    "kept_line",
    "cost_text",
    "cost_label",
    "loops_table",
    "SPLITS",
]
