"""The one owner of an experiment's files: run records, loops.jsonl, splits, results and the ruleset store."""
