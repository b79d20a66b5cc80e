"""The latent-rules benchmark (the method's own evaluation): a prompt writes page JSON for a request,
and the page must follow latent rules nobody told the model. Importing this package has no side effects.

- schema: the page-JSON schema, parse_page (an answer -> a page, or why not)
- rules: the catalogue of 100 latent rules, each with a statement and a deterministic checker
- requests: a seeded generator of page requests
- scoring: per-row and per-rule metrics, and the feedback columns the optimizer reads
- ideal: the page that follows every rule, which the scripted generator starts from
- scripted: the dry run's generator, which follows exactly the rules its prompt states
- family: LatentRulesFamily, the task family's seam (tasks, split, run, score, feedback, base_prompt)
"""

from helpers.families.latent_rules.family import BASE_PROMPT, LatentRulesFamily, prompt_with
from helpers.llm.client import llm_generator
from helpers.families.latent_rules.requests import generate_requests
from helpers.families.latent_rules.catalog import RULES, LatentRule, active_rules, check_page
from helpers.families.latent_rules.schema import SECTION_TYPES, parse_page
from helpers.families.latent_rules.scoring import (
    FEEDBACK_COLUMNS,
    feedback_frame,
    rule_pass_rates,
    score_frame,
    summarize,
)
from helpers.families.latent_rules.scripted import enable_dry_run, scripted_generator, stated_rules

__all__ = [
    "LatentRulesFamily",
    "BASE_PROMPT",
    "prompt_with",
    "llm_generator",
    "generate_requests",
    "RULES",
    "LatentRule",
    "active_rules",
    "check_page",
    "SECTION_TYPES",
    "parse_page",
    "FEEDBACK_COLUMNS",
    "feedback_frame",
    "rule_pass_rates",
    "score_frame",
    "summarize",
    "scripted_generator",
    "stated_rules",
    "enable_dry_run",
]
