"""Agent-agnostic helpers for the Prompt Learning cookbook.

Public names load lazily, so `import helpers` costs nothing and has no side effects; e.g.
`from helpers import evaluate_results` imports only the judge's module.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    # tasks and evaluation
    "load_swebench": "helpers.tasks",
    "load_house_suite": "helpers.tasks",
    "split_dataset": "helpers.tasks",
    "evaluate_patch": "helpers.evaluation",
    "evaluate_results": "helpers.evals",
    # optimizer and rulesets
    "PromptLearningOptimizer": "helpers.optimizer",
    "RulesetStore": "helpers.rulesets",
    # tracking and plots
    "log_experiment_to_phoenix": "helpers.phoenix_experiments",
    "upload_dataset": "helpers.phoenix_experiments",
    "PhoenixServer": "helpers.phoenix_server",
    # LLM access
    "LLMClient": "helpers.llm",
    "BudgetExceeded": "helpers.llm",
    "llm_settings": "helpers.config",
    "MissingCredentials": "helpers.config",
    "ScriptedModelServer": "helpers.scripted_server",
    "count_tokens": "helpers.tokens",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'helpers' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)


def __dir__() -> list[str]:
    return __all__
