"""The latent-rules task family: a prompt writes page JSON for a request; hidden rules judge the page.

    family = LatentRulesFamily(n_rules=10, seed=0)
    train, test = family.split(100, 100)
    rows = family.run(family.base_prompt, train)                  # scripted generator: the dry run
    rows = family.run(prompt, train, generate=llm_generator(LLMClient("gpt-4.1")))   # a real model
    judged = family.feedback(family.score(rows))                  # + correctness, explanation
    new_prompt = optimizer.optimize(judged, "output", family.feedback_columns, ruleset=prompt)

The prompt is the whole system prompt: BASE_PROMPT with the learned instructions between the rulesets
fence lines (helpers.store.rulesets.FENCE_START / FENCE_END), so the optimizer edits only that region.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import pandas as pd

from helpers.families.latent_rules.requests import generate_requests
from helpers.families.latent_rules.catalog import LatentRule, active_rules
from helpers.families.latent_rules.scoring import (
    FEEDBACK_COLUMNS,
    feedback_frame,
    rule_pass_rates,
    score_frame,
    summarize,
)
from helpers.families.latent_rules.scripted import scripted_generator
from helpers.llm.client import BudgetExceeded
from helpers.rules.ruleset import FENCE_END, FENCE_START, split_fenced
from helpers.families.latent_rules.prompts import BASE_PROMPT, OPTIMIZER_PROMPT

Generate = Callable[
    [str, str], str
]  # generate(prompt, request) -> the model's answer text (helpers.llm.client.llm_generator)


def prompt_with(instructions: str, base_prompt: str = BASE_PROMPT) -> str:
    """`base_prompt` with `instructions` as its fenced region (replacing what the region held).

    Raises ValueError when `base_prompt` has no fenced region."""
    fenced = split_fenced(base_prompt)
    if fenced is None:
        raise ValueError(f"The base prompt has no instruction region: mark it with {FENCE_START!r} and {FENCE_END!r}.")
    before, _, after = fenced
    body = instructions.strip()
    return f"{before}{body}\n{after}" if body else f"{before}{after}"


class LatentRulesFamily:
    """The latent-rules benchmark as a task family: requests in, page JSON out, hidden rules as the grader.

    Contract:
    - `tasks(n)`: n page requests, deterministic for the family's seed (columns instance_id, request,
      problem_statement = request, business, kind, city, extras).
    - `split(train, test)`: two disjoint frames of requests, the first `train` and the next `test`.
    - `run(prompt, rows, generate=scripted_generator, workers=1)`: a copy of `rows` with `output` (the
      answer text), `status` ("completed" | "error") and `error`. It never raises for one request's
      failure (that row gets status "error" and the reason), except BudgetExceeded, which stops the batch.
    - `score(frame)`: adds the scoring columns over the active rules (helpers.families.latent_rules.scoring);
      an unparsable answer breaks every rule.
    - `feedback(frame, kind)`: scores against this family's rules, then adds `correctness` and `explanation`, the
      `feedback_columns` the optimizer reads; kind "explanations" (the broken rules' messages) or
      "scores" ("followed 7 of 10 rules").
    - `base_prompt`: the base prompt, with an empty fenced instruction region.
    The active rules are the first `n_rules` of the catalogue, or the `rules` given (ids or rules).
    """

    output_column = "output"
    feedback_columns = FEEDBACK_COLUMNS
    optimizer_prompt = OPTIMIZER_PROMPT

    def __init__(self, n_rules: int = 10, seed: int = 0, *, rules: Sequence[str] | Sequence[LatentRule] | None = None):
        self.rules = active_rules(rules if rules is not None else n_rules)
        self.n_rules = len(self.rules)
        self.seed = seed

    def __repr__(self) -> str:
        return f"LatentRulesFamily(n_rules={self.n_rules}, seed={self.seed})"

    @property
    def base_prompt(self) -> str:
        return BASE_PROMPT

    def tasks(self, n: int = 300) -> pd.DataFrame:
        return generate_requests(n, self.seed)

    def split(self, train: int, test: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        if train < 1 or test < 1:
            raise ValueError(f"train and test must be at least 1 (got {train}, {test}).")
        rows = self.tasks(train + test)
        return rows.iloc[:train].reset_index(drop=True), rows.iloc[train:].reset_index(drop=True)

    def run(
        self, prompt: str, rows: pd.DataFrame, generate: Generate = scripted_generator, *, workers: int = 1
    ) -> pd.DataFrame:
        def one(request: str) -> tuple[str, str, str]:
            try:
                return str(generate(prompt, request)), "completed", ""
            except BudgetExceeded:
                raise
            except Exception as error:  # one request's failure is that row's result, not the batch's
                return "", "error", f"{type(error).__name__}: {error}"

        requests = [str(r) for r in rows["request"]]
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            results = list(pool.map(one, requests))
        frame = rows.copy()
        frame[self.output_column] = [r[0] for r in results]
        frame["status"] = [r[1] for r in results]
        frame["error"] = [r[2] for r in results]
        return frame

    def score(self, frame: pd.DataFrame) -> pd.DataFrame:
        return score_frame(frame, self.rules, self.output_column)

    def feedback(self, frame: pd.DataFrame, kind: str = "explanations") -> pd.DataFrame:
        return feedback_frame(self.score(frame), kind)

    def summary(self, frame: pd.DataFrame) -> dict[str, Any]:
        """summarize() of the frame scored against this family's rules, with n_rules."""
        return {"n_rules": self.n_rules, **summarize(self.score(frame))}

    def rule_pass_rates(self, frame: pd.DataFrame) -> pd.DataFrame:
        return rule_pass_rates(self.score(frame), self.rules)

    def leaks(self, frame: pd.DataFrame) -> dict[str, set[str]]:
        """Names an instruction must not mention: a business or city that only one request has."""
        owners: dict[str, set[str]] = {}
        for row in frame.to_dict("records"):
            for column in ("business", "city"):
                name = str(row.get(column) or "").strip()
                if len(name) >= 4:
                    owners.setdefault(name, set()).add(str(row["instance_id"]))
        return {name: ids for name, ids in owners.items() if len(ids) == 1}


__all__ = ["LatentRulesFamily", "BASE_PROMPT", "OPTIMIZER_PROMPT", "prompt_with"]
