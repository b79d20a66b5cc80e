"""Agent-agnostic helpers for the Prompt Learning cookbook, in layers whose imports only point down:

    core  <-  store  <-  llm  <-  tracking  <-  families  <-  learn  <-  analysis  <-  agents  <-  engine
          <-  testing  <-  continual  <-  app

(`tests/test_layers.py` keeps it so.) The public names below are importable from `helpers` itself, so
user code does not depend on the inner layout. They load lazily: `import helpers` costs nothing and has
no side effects; `from helpers import evaluate_results` imports only the judge's module.
"""

from helpers.core.lazy import lazy_exports

LAYERS = ("core", "store", "llm", "tracking", "families", "learn", "analysis", "agents", "engine", "testing",
          "continual", "app")

_EXPORTS = {
    # core: the seams, the rules format, statistics
    "Task": "helpers.core.protocols",
    "AgentResult": "helpers.core.protocols",
    "EvalResult": "helpers.core.protocols",
    "Agent": "helpers.core.protocols",
    "Evaluator": "helpers.core.protocols",
    "llm_settings": "helpers.core.config",
    "MissingCredentials": "helpers.core.config",
    "count_tokens": "helpers.core.tokens",
    "parse_ruleset": "helpers.core.rules",
    "render_ruleset": "helpers.core.rules",
    "apply_edits": "helpers.core.edits",
    "import_rules_file": "helpers.core.rules",
    "paired_comparison": "helpers.core.stats",
    "accuracy_interval": "helpers.core.stats",
    "run_outcome": "helpers.core.outcomes",
    "outcome_counts": "helpers.core.outcomes",
    "DECISION_RULE": "helpers.core.selection",
    "power_note": "helpers.core.selection",
    "make_agent": "helpers.core.registry",
    # store
    "RulesetStore": "helpers.store.rulesets",
    "completed_loops": "helpers.store.loops",
    "resolve_experiment": "helpers.store.loops",
    "load_results": "helpers.store.loops",
    "kept_version": "helpers.store.loops",
    # llm
    "LLMClient": "helpers.llm.client",
    "BudgetExceeded": "helpers.llm.client",
    "Gateway": "helpers.llm.gateway",
    "Upstream": "helpers.llm.gateway",
    "ScriptedModelServer": "helpers.llm.scripted_server",
    # tracking
    "log_experiment_to_phoenix": "helpers.tracking.phoenix_experiments",
    "upload_dataset": "helpers.tracking.phoenix_experiments",
    "PhoenixServer": "helpers.tracking.phoenix_server",
    # families
    "load_swebench": "helpers.families.coding.tasks",
    "load_house_suite": "helpers.families.coding.tasks",
    "load_tasks": "helpers.families.coding.tasks",
    "split_dataset": "helpers.families.coding.tasks",
    "evaluate_patch": "helpers.families.coding.evaluation",
    # learn
    "evaluate_results": "helpers.learn.judge",
    "PromptLearningOptimizer": "helpers.learn.optimizer",
    # analysis
    "evidence_summary": "helpers.analysis.evidence",
    "primary_result": "helpers.analysis.evidence",
    # engine
    "run_tasks": "helpers.engine.runs",
    "LoopSettings": "helpers.engine.loop",
    "run_loop": "helpers.engine.loop",
    "run_prompt_loop": "helpers.engine.loop",
    "run_one_loop": "helpers.engine.loop",
    "start_experiment": "helpers.engine.loop",
    "choose_start_version": "helpers.engine.loop",
    "check_runs": "helpers.engine.loop",
    "phoenix_metadata": "helpers.engine.loop",
    "log_loop_to_phoenix": "helpers.engine.loop",
    "finish_loop": "helpers.engine.loop",
    "describe_loop": "helpers.engine.loop_lines",
    "meta_prompt": "helpers.engine.loop",
    "CodingLoopFamily": "helpers.engine.families",
    "PromptLoopFamily": "helpers.engine.families",
    "load_or_make_split": "helpers.engine.splits",
    "split_summary": "helpers.engine.splits",
    "validation_note": "helpers.engine.splits",
    "upload_split": "helpers.engine.splits",
    "ablate": "helpers.engine.ablation",
    # continual
    "Inbox": "helpers.continual.learning",
    # app
    "open_session": "helpers.app.session",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports("helpers", _EXPORTS)


def __dir__() -> list[str]:
    return __all__
