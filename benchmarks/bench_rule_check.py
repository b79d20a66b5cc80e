"""Benchmark: how many harmful learned rules are refused, and how many ordinary ones wrongly, by the floor
(helpers.rules.planted) and by the check by meaning (helpers.learn.rule_check), on our corpus.

    .venv/bin/python benchmarks/bench_rule_check.py                      # the floor alone (no model)
    .venv/bin/python benchmarks/bench_rule_check.py --model gpt-6.1-sol  # and the check by meaning with a model
    .venv/bin/python benchmarks/bench_rule_check.py --local              # ... with the local llama.cpp SmolLM2-135M

The corpus is tests/fixtures/planted/corpus.jsonl: harmful rules of five categories and benign conventions,
in a "tuning" part the floor's patterns were written against and a "held-out" part written after them.
`--model` uses the same settings as the loop (OPENAI_API_KEY / ANTHROPIC_API_KEY / OPENAI_BASE_URL, or
--base-url and --api-key), with the cache off so every rule is asked. A rule the check could not answer
counts as refused (that is what the optimizer does with it) and is counted apart. Figures as measured are in
docs/security.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers.core.config import REPO_ROOT
from helpers.rules.planted import planted_reasons

CORPUS = REPO_ROOT / "tests" / "fixtures" / "planted" / "corpus.jsonl"


def load(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def rates(rows: list[dict], refused: dict[str, bool]) -> str:
    """'harmful refused a/b (p%), benign refused c/d' for `rows`, `refused` saying what each text got."""
    harmful = [r for r in rows if r["harmful"]]
    benign = [r for r in rows if not r["harmful"]]
    hit = sum(refused[r["text"]] for r in harmful)
    false = sum(refused[r["text"]] for r in benign)
    return (f"harmful refused {hit}/{len(harmful)} ({hit / max(1, len(harmful)):.0%}), "
            f"benign refused {false}/{len(benign)} ({false / max(1, len(benign)):.0%})")


def report(name: str, rows: list[dict], refused: dict[str, bool]) -> None:
    for split in ("tuning", "held-out"):
        part = [r for r in rows if r["split"] == split]
        print(f"{name:>28} {split:>9}: {rates(part, refused)}")
    print(f"{name:>28} {'all':>9}: {rates(rows, refused)}")


def meaning(rows: list[dict], model: str, base_url: str | None, api_key: str | None) -> tuple[dict[str, bool], int]:
    from helpers.learn.rule_check import RuleCheck
    from helpers.llm.client import LLMClient

    check = RuleCheck(LLMClient(model, base_url=base_url, api_key=api_key, cache=False))
    refused, errors = {}, 0
    for row in rows:
        verdict = check(row["text"])
        refused[row["text"]] = verdict.harmful
        errors += bool(verdict.error)
        if verdict.harmful != row["harmful"]:
            print(f"  {'MISSED' if row['harmful'] else 'FALSE'}: {row['text'][:90]!r} -> {verdict.note() if verdict.harmful else verdict.reason[:90]}")
    return refused, errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="ask this model too (the check by meaning)")
    parser.add_argument("--base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--local", action="store_true", help="ask the local llama.cpp model (builds it once, ~6 min)")
    args = parser.parse_args(argv)
    rows = load()
    floor = {r["text"]: bool(planted_reasons(r["text"])) for r in rows}
    report("floor (patterns)", rows, floor)
    if args.local:
        from helpers.stand_ins.local_model import LocalModelServer

        with LocalModelServer() as server:
            refused, errors = meaning(rows, server.model, server.base_url, "local")
            report(f"meaning ({server.model[:18]})", rows, refused)
            report("floor + meaning", rows, {t: floor[t] or refused[t] for t in floor})
            print(f"check failures (counted as refused): {errors}")
    elif args.model:
        refused, errors = meaning(rows, args.model, args.base_url, args.api_key)
        report(f"meaning ({args.model[:18]})", rows, refused)
        report("floor + meaning", rows, {t: floor[t] or refused[t] for t in floor})
        print(f"check failures (counted as refused): {errors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
