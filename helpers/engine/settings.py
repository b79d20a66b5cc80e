"""The parameters of one experiment (the notebooks' `parameters` cell feeds LoopSettings), checked when made.

Its own module so that the loop's parts (loop_family, one_test) take it as a type without importing the loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from helpers.core import config


@dataclass
class LoopSettings:
    """The parameters of one experiment (the notebooks' `parameters` cell feeds these)."""

    experiment: str
    loops: int = config.LOOPS
    workers: int = config.WORKERS
    context_size_k: int = config.CONTEXT_SIZE_K
    start_from: str = "latest"  # "latest" (the cookbook's choice) or "best" (the version kept on validation)
    best_by: str = "val_accuracy"  # the only honest choice: train is what the optimizer saw, test is the judge
    agent_timeout_s: float = config.AGENT_TIMEOUT_S
    optimizer_budget_usd: float | None = None
    judge_budget_usd: float | None = None
    mode: str = "act"  # "act" (patches) or "plan" (the agent's plan, judged on its merits)
    agent: Any = config.AGENT  # an agent's registered name (helpers.core.registry), or an Agent object
    attempts: int = 1  # runs of each task per ruleset: accuracy is the mean over attempts, with its interval
    executor: str = "local"  # where agent runs execute: "local", or a Ray cluster (helpers.engine.executors)
    rules_max_tokens: int | None = config.RULES_MAX_TOKENS  # the rules' budget, told to the optimizer and enforced
    judge_prompt: str | None = None  # the judge's instructions (None: helpers.learn.judge.JUDGE_SYSTEM_PROMPT)
    optimizer_prompt: str | None = None  # the meta-prompt's instructions (None: the family's default)
    # True: every loop also runs the test split (the exploratory per-loop test curve; the one test reads loop 0's
    # and the kept version's rows). False: loops run train and validation only, and after them the one test runs
    # the start and the kept rules on the test tasks itself, paying only for the pairs it needs (one_test.py).
    # None: True in the scripted dry run (the curve costs nothing there), False with a real model (the notebooks'
    # default, TEST_EACH_LOOP=None).
    test_each_loop: bool | None = True
    sequential: bool = config.SEQUENTIAL  # with test_each_loop=False: stop the one test as soon as it knows

    def __post_init__(self) -> None:
        budget = () if self.rules_max_tokens is None else ("rules_max_tokens",)  # None: no budget
        for name in ("loops", "workers", "context_size_k", "attempts", *budget):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}.")
        from helpers.engine.executors import parse_executor

        parse_executor(self.executor)
        for name in ("judge_prompt", "optimizer_prompt"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be the instructions' text, or None for the default; got {value!r}.")
        if self.mode not in ("act", "plan"):
            raise ValueError(f"mode must be 'act' or 'plan', not {self.mode!r}.")
        if not isinstance(self.sequential, bool) or not (
            self.test_each_loop is None or isinstance(self.test_each_loop, bool)
        ):
            raise ValueError(
                f"sequential must be True or False and test_each_loop True, False or None, not "
                f"{self.sequential!r} and {self.test_each_loop!r}."
            )
        if self.test_each_loop is False and (self.attempts != 1 or self.mode != "act"):
            raise ValueError(
                "test_each_loop=False (the one test run on its own, pair by pair) needs attempts=1 and "
                "mode='act': with several attempts or plans, let each loop run the test split."
            )
        if self.start_from not in ("latest", "best"):
            raise ValueError(f"start_from must be 'latest' or 'best', not {self.start_from!r}.")
        if self.best_by != "val_accuracy":
            raise ValueError(
                f"best_by must be 'val_accuracy', not {self.best_by!r}: versions are chosen on the "
                "validation split, because train is what the optimizer learned from and test is the "
                "final, pre-declared comparison (choosing on it would bias it)."
            )


def instructions(settings: LoopSettings) -> dict[str, str | None]:
    """The judge's and the optimizer's instructions an experiment was given (None: the defaults), as every
    ruleset version's metadata records them."""
    return {"judge_prompt": settings.judge_prompt, "optimizer_prompt": settings.optimizer_prompt}


def agent_name(settings: LoopSettings) -> str:
    """The agent's registered name, whether the settings name it or hold the Agent object."""
    return settings.agent if isinstance(settings.agent, str) else settings.agent.name
