"""Progress shows as a bar where a person watches and as lines where a log is read."""

from helpers.core.progress import LineProgress, progress_bar


def test_headless_runs_get_progress_as_plain_lines(monkeypatch, capsys):
    monkeypatch.setenv("PL_PROGRESS", "lines")
    bar = progress_bar(4, "train_0")
    assert isinstance(bar, LineProgress)
    for _ in range(4):
        bar.update(1)
    bar.close()
    assert capsys.readouterr().out.splitlines() == [f"train_0: {n}/4 tasks done" for n in (1, 2, 3, 4)]


def test_long_runs_print_about_ten_lines_and_always_the_last(monkeypatch, capsys):
    monkeypatch.setenv("PL_PROGRESS", "lines")
    bar = progress_bar(45, "mining x", "commit")
    for _ in range(45):
        bar.update(1)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 12 and lines[-1] == "mining x: 45/45 commits done"


def test_elsewhere_it_is_a_tqdm_bar_and_disabled_means_silent(monkeypatch, capsys):
    monkeypatch.delenv("PL_PROGRESS", raising=False)
    assert type(progress_bar(3, "x")).__module__.startswith("tqdm")
    monkeypatch.setenv("PL_PROGRESS", "lines")
    quiet = progress_bar(3, "x", disable=True)
    quiet.update(3)
    quiet.close()
    assert capsys.readouterr().out == ""
