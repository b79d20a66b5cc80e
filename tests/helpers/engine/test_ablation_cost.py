"""What an ablation will cost is said before it runs, as every other line says cost."""

from helpers.engine.ablation import ablation_cost
from helpers.store.records import append_jsonl, loops_path


def test_a_dry_runs_ablation_is_said_to_cost_nothing_and_a_priced_ones_cost_is_estimated(tmp_path, monkeypatch):
    monkeypatch.setenv("PL_RESULTS_DIR", str(tmp_path))  # ablation_cost reads the results root
    append_jsonl(loops_path("dry", tmp_path), {"loop": 0, "dry_run": True, "train_size": 4, "test_size": 4,
                                               "agent_cost_usd": None, "unpriced": ["agent"]})
    append_jsonl(loops_path("paid", tmp_path), {"loop": 0, "dry_run": False, "train_size": 4, "test_size": 4,
                                                "agent_cost_usd": 0.8, "unpriced": []})
    assert ablation_cost("dry", 10) == (None, "10 agent runs; scripted: no charge.")
    cost, said = ablation_cost("paid", 10)
    assert abs(cost - 1.0) < 1e-9 and said == "10 agent runs at the observed $0.1000 per run: about $1.00."
