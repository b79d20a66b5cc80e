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


def test_headless_progress_is_a_line_per_quarter_and_always_the_last(monkeypatch, capsys):
    monkeypatch.setenv("PL_PROGRESS", "lines")
    bar = progress_bar(45, "mining x", "commit")
    for _ in range(45):
        bar.update(1)
    assert capsys.readouterr().out.splitlines() == [f"mining x: {n}/45 commits done" for n in (12, 23, 34, 45)]
    six = progress_bar(6, "train_0")
    six.update(5)  # a jump past several quarters says it once
    six.update(1)
    assert capsys.readouterr().out.splitlines() == ["train_0: 5/6 tasks done", "train_0: 6/6 tasks done"]
    one = progress_bar(1, "test_0")
    one.update(1)
    assert capsys.readouterr().out.splitlines() == ["test_0: 1/1 task done"]


def test_elsewhere_it_is_a_tqdm_bar_and_disabled_means_silent(monkeypatch, capsys):
    monkeypatch.delenv("PL_PROGRESS", raising=False)
    assert type(progress_bar(3, "x")).__module__.startswith("tqdm")
    monkeypatch.setenv("PL_PROGRESS", "lines")
    quiet = progress_bar(3, "x", disable=True)
    quiet.update(3)
    quiet.close()
    assert capsys.readouterr().out == ""
