"""Throwaway machine paths never reach what is kept."""

import json
import sys
import tempfile

from helpers.isolation.processes import scratch_dir, remove_scratch
from helpers.core.redact import scrub_machine_paths
from helpers.store.records import append_jsonl, read_jsonl, write_csv, write_json


def test_scratch_and_evaluation_folders_and_the_python_install_are_replaced():
    scratch = scratch_dir("run")
    try:
        text = (f"cd {scratch}/ws && {sys.prefix}/bin/python -m pytest\n"
                f"  File \"{sys.base_prefix}/lib/python3.11/json/decoder.py\"\n"
                f"log at {tempfile.gettempdir()}/eval-k3j_x/repo/test.log")
        scrubbed = scrub_machine_paths(text)
    finally:
        remove_scratch(scratch)
    assert str(scratch) not in scrubbed and "pl-runs" not in scrubbed
    assert sys.prefix not in scrubbed and sys.base_prefix not in scrubbed
    assert "eval-k3j_x" not in scrubbed
    assert "cd <scratch>/" in scrubbed and "<python>/bin/python" in scrubbed and "log at <eval>/repo/test.log" in scrubbed


def test_other_paths_are_kept_as_they_are():
    text = f"{tempfile.gettempdir()}/my-repo/.git and /home/me/project/src/a.py and a/src/x.py"
    assert scrub_machine_paths(text) == text


def test_records_json_and_csv_files_are_written_without_machine_paths(tmp_path):
    import pandas as pd

    error = f"FileNotFoundError: {tempfile.gettempdir()}/pl-runs/123-456/run-ab/ws/x.py"
    append_jsonl(tmp_path / "runs.jsonl", {"error": error})
    write_json(tmp_path / "t.json", [{"text": error}])
    write_csv(pd.DataFrame([{"error": error}]), tmp_path / "t.csv")
    assert read_jsonl(tmp_path / "runs.jsonl") == [{"error": "FileNotFoundError: <scratch>/run-ab/ws/x.py"}]
    assert json.loads((tmp_path / "t.json").read_text())[0]["text"].endswith("<scratch>/run-ab/ws/x.py")
    assert "pl-runs" not in (tmp_path / "t.csv").read_text()
