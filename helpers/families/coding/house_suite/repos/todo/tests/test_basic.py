from todo.cli import EXIT_NOT_FOUND, main


def run(tmp_path, *argv):
    return main(["--file", str(tmp_path / "todo.json"), *argv])


def test_add_and_list(tmp_path, capsys):
    assert run(tmp_path, "add", "write the report", "--priority", "1") == 0
    assert run(tmp_path, "list") == 0
    assert "1. [ ] write the report (p1)" in capsys.readouterr().out


def test_done(tmp_path, capsys):
    run(tmp_path, "add", "call bob")
    assert run(tmp_path, "done", "1") == 0
    run(tmp_path, "list", "--all")
    assert "1. [x] call bob" in capsys.readouterr().out


def test_done_unknown_item(tmp_path, capsys):
    assert run(tmp_path, "done", "9") == EXIT_NOT_FOUND
    assert capsys.readouterr().err.strip() == "todo: no item 9"
