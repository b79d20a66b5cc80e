"""Agent-agnostic helpers for the Prompt Learning cookbook, in layers whose imports only point down:

    core  <-  isolation  <-  rules  <-  stats  <-  store  <-  llm  <-  tracking  <-  families  <-  learn
          <-  analysis  <-  agents  <-  engine  <-  stand_ins  <-  continual  <-  app

(`tests/test_layers.py` keeps it so.) The public names below are importable from `helpers` itself, so
user code does not depend on the inner layout. They load lazily: `import helpers` costs nothing and has
no side effects; `from helpers import evaluate_results` imports only the judge's module.
"""

from helpers.core.lazy import lazy_exports

LAYERS = (
    "core",
    "isolation",
    "rules",
    "stats",
    "store",
    "llm",
    "tracking",
    "families",
    "learn",
    "analysis",
    "agents",
    "engine",
    "stand_ins",
    "continual",
    "app",
)

_EXPORTS = {
    # core: the seams; rules: the rules format; stats: statistics
    "Task": "helpers.core.protocols",
    "AgentResult": "helpers.core.protocols",
    "EvalResult": "helpers.core.protocols",
    "Agent": "helpers.core.protocols",
    "Evaluator": "helpers.core.protocols",
    "llm_settings": "helpers.core.config",
    "MissingCredentials": "helpers.core.config",
    "count_tokens": "helpers.core.tokens",
    "parse_ruleset": "helpers.rules.ruleset",
    "render_ruleset": "helpers.rules.ruleset",
    "apply_edits": "helpers.rules.edits",
    "import_rules_file": "helpers.rules.ruleset",
    "paired_comparison": "helpers.stats.comparisons",
    "accuracy_interval": "helpers.stats.comparisons",
    "run_outcome": "helpers.stats.outcomes",
    "outcome_counts": "helpers.stats.outcomes",
    "DECISION_RULE": "helpers.stats.selection",
    "power_note": "helpers.stats.selection",
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
    "check_runs": "helpers.engine.loop_end",
    "phoenix_metadata": "helpers.engine.loop",
    "log_loop_to_phoenix": "helpers.engine.loop",
    "finish_loop": "helpers.engine.loop_end",
    "describe_loop": "helpers.engine.loop_lines",
    "meta_prompt": "helpers.engine.loop",
    "CodingLoopFamily": "helpers.engine.loop_family",
    "PromptLoopFamily": "helpers.engine.loop_family",
    "load_or_make_split": "helpers.engine.splits",
    "split_summary": "helpers.engine.splits",
    "validation_note": "helpers.engine.splits",
    "upload_split": "helpers.engine.splits",
    "ablate": "helpers.engine.ablation",
    # continual
    "Inbox": "helpers.continual.inbox",
    # app
    "open_session": "helpers.app.session",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports("helpers", _EXPORTS)


def __dir__() -> list[str]:
    return __all__
