"""Benchmark: latent-rule checker throughput, in page x rule checks per second, over 300 pages x 100 rules.

The pages are the scripted generator's, each following a random share of the catalogue (so checkers see
both passing and failing pages). Three timings, best of `--repeat`:
- check: every rule's checker on every parsed page (check_page);
- parse + check: from the answer text, as scoring a frame does (score_answer);
- generate: the scripted generator writing the 300 answers (pages per second, for the dry run's cost);
- the scripted loop (dry-run session, 10 rules, --loop-size requests per split): wall time of 1 and of 5
  loops, and each loop's optimizer prompt size against its token budget.
Floor: >= 10,000 checks per second for parse + check, so scoring a 300-row frame on 100 rules takes
about 3 s at most.

    .venv/bin/python benchmarks/bench_latent_rules.py
    .venv/bin/python benchmarks/bench_latent_rules.py --pages 300 --rules 100 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from helpers.families.latent_rules import RULES, active_rules, check_page, generate_requests, prompt_with, scripted_generator
from helpers.families.latent_rules.schema import parse_page
from helpers.families.latent_rules.scoring import score_answer

FLOOR_CHECKS_PER_S = 10_000


def answers(n_pages: int, seed: int = 0) -> list[str]:
    """n scripted answers, page i following a random subset of the catalogue (a fresh prompt for each)."""
    rng = random.Random(seed)
    requests = generate_requests(n_pages, seed)["request"]
    prompts = [prompt_with("\n".join(f"- {r.statement}" for r in rng.sample(RULES, rng.randint(0, len(RULES)))))
               for _ in range(n_pages)]
    return [scripted_generator(prompt, request) for prompt, request in zip(prompts, requests)]


def best_of(repeat: int, work) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--rules", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loop-size", type=int, default=50, help="requests per split in the scripted loop timing")
    args = parser.parse_args()
    rules = active_rules(args.rules)

    started = time.perf_counter()
    texts = answers(args.pages)
    generate_s = time.perf_counter() - started
    pages = [parse_page(text)[0] for text in texts]
    checks = args.pages * len(rules)

    check_s = best_of(args.repeat, lambda: [check_page(page, rules) for page in pages])
    score_s = best_of(args.repeat, lambda: [score_answer(text, rules) for text in texts])
    followed = sum(not message for page in pages for message in check_page(page, rules).values())

    print(f"{args.pages} pages x {len(rules)} rules = {checks} checks ({followed / checks:.0%} followed)")
    print(f"check:         {check_s:.2f} s, {checks / check_s:,.0f} checks/s")
    print(f"parse + check: {score_s:.2f} s, {checks / score_s:,.0f} checks/s, {args.pages / score_s:,.0f} pages/s")
    print(f"generate:      {generate_s:.2f} s for {args.pages} scripted answers ({args.pages / generate_s:,.0f} pages/s, "
          f"{sum(map(len, texts)) / len(texts) / 1000:.1f} kB each)")
    ok = checks / score_s >= FLOOR_CHECKS_PER_S
    print(f"floor >= {FLOOR_CHECKS_PER_S:,} checks/s for parse + check: {'OK' if ok else 'MISSED'}")
    scripted_loops(args.loop_size)
    return 0 if ok else 1


def scripted_loops(size: int) -> None:
    """Wall time of the scripted dry-run loop (1 and 5 loops) and the optimizer's prompt per loop."""
    import os
    import tempfile

    from helpers.families.latent_rules import LatentRulesFamily, enable_dry_run
    from helpers.engine.loop import LoopSettings, run_prompt_loop
    from helpers.store.rulesets import RulesetStore
    from helpers.app.session import open_session

    with tempfile.TemporaryDirectory() as scratch:
        for name in ("PL_RESULTS_DIR", "PL_RULESETS_DIR", "PL_CACHE_DIR"):
            os.environ[name] = os.path.join(scratch, name)
        family = LatentRulesFamily(n_rules=10)
        train, test = family.split(size, size)
        with open_session(dry_run=True, phoenix=False) as session:
            enable_dry_run(session)
            for loops in (1, 5):
                started = time.perf_counter()
                run_prompt_loop(family, train, test, LoopSettings(f"bench-{loops}", loops=loops, workers=4,
                                                                  agent="latent-rules"), session, verbose=False)
                print(f"scripted loop, 10 rules, {size}+{size} requests: {loops} loop(s) in {time.perf_counter() - started:.2f} s")
        store = RulesetStore("bench-5")
        for version in store.versions()[1:]:
            report = store.metadata(version).get("optimizer_report") or {}
            for batch in report.get("batches", []):
                print(f"  loop {store.metadata(version)['loop']}: optimizer prompt {batch['prompt_tokens']:,} tokens "
                      f"of a {batch['budget_tokens']:,}-token budget ({len(batch['instance_ids'])} examples)")


if __name__ == "__main__":
    sys.exit(main())
