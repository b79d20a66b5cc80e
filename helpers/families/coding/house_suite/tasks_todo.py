"""The house suite's tasks on the `todo` command-line tool (repos/todo): issues, gold and naive edits, hidden
tests and, per convention, the edit that undoes it in the gold fix (the suite's own checks use it).

Edits as in tasks.py. The CLI's own conventions: every option and subcommand has help text (cli_help), and a
failing command goes through fail() with the exit status named for the failure (cli_exit).
"""

from textwrap import dedent, indent

from helpers.families.coding.house_suite.tasks import TEAM_CHECKS

CHECKS = '''\
import argparse
import inspect
import logging
from pathlib import Path

import pytest

from todo import TodoError, TodoList
from todo.cli import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def run(tmp_path, *argv):
    return main(["--file", str(tmp_path / "todo.json"), *argv])


def saved(tmp_path):
    return TodoList.load(tmp_path / "todo.json")


def raises_todo_error(call, *args):
    try:
        call(*args)
    except TodoError:
        return
    except Exception as error:
        raise AssertionError("house convention broken: raise the package's own errors (subclasses of "
                             f"TodoError), not {type(error).__name__}") from None
    raise AssertionError("expected an error, none was raised")


''' + TEAM_CHECKS + '''

def check_logged(caplog, capsys, fragment):
    printed = capsys.readouterr()
    assert fragment not in printed.out + printed.err, (
        f"house convention broken: report through the 'todo' logger, never print() (printed {fragment!r})")
    assert any(r.name.startswith("todo") and fragment in r.getMessage() for r in caplog.records), (
        f"house convention broken: expected a log record mentioning {fragment!r} on the 'todo' logger")


def check_help(command):
    """Every option of `command` (and the command itself) has help text."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = {a.dest: a.help for a in commands._choices_actions}
    assert listed.get(command), f"house convention broken (todo CLI): subcommand {command!r} needs help text"
    bare = [a.dest for a in commands.choices[command]._actions if a.dest != "help" and not a.help]
    assert not bare, f"house convention broken (todo CLI): options {bare} of {command!r} need help text"


def check_failed(status, expected, capsys):
    err = capsys.readouterr().err
    assert status == expected, (f"house convention broken (todo CLI): this failure exits with status {expected} "
                                f"(todo.cli's named exit status), not {status}")
    assert err.startswith("todo: ") and err.count("\\n") == 1, (
        f"house convention broken (todo CLI): a failure is one line 'todo: ...' on stderr (fail()), got {err!r}")
'''


def _changelog(entry):
    return {"path": "CHANGELOG.md", "find": "## Unreleased\n", "replace": f"## Unreleased\n- {entry}\n"}


def _command(code):
    """Insert a command function before build_parser."""
    return {"path": "todo/cli.py", "find": "\n\ndef build_parser()", "replace": "\n\n" + dedent(code).strip("\n") + "\n\n\ndef build_parser()"}


def _parser(code):
    """Add subcommands at the end of build_parser."""
    return {"path": "todo/cli.py", "find": "    done.set_defaults(run=cmd_done)\n",
            "replace": "    done.set_defaults(run=cmd_done)\n" + indent(dedent(code), "    ")}


def _method(code):
    """Insert a TodoList method before pending()."""
    return {"path": "todo/items.py", "find": "    def pending(self)",
            "replace": indent(dedent(code).strip("\n"), "    ") + "\n\n    def pending(self)"}


def _items(find, replace):
    return {"path": "todo/items.py", "find": find, "replace": replace}


def _cli(find, replace):
    return {"path": "todo/cli.py", "find": find, "replace": replace}


ITEMS_LOGGER = _items("import json\n", "import json\nimport logging\n")
ITEMS_LOGGER_DEF = _items("PRIORITIES = (1, 2, 3)", "logger = logging.getLogger(__name__)\n\nPRIORITIES = (1, 2, 3)")
ITEMS_USAGE = _items("from todo.errors import NotFoundError\n", "from todo.errors import NotFoundError, UsageError\n")
NO_CHANGELOG = "drop the changelog entry"

TASKS = [
    {
        "slug": "rename", "created_at": "2026-01-06T10:00:00Z", "conventions": ["docs_types", "changelog"],
        "problem_statement": (
            "Rename an item\n\n"
            "A typo in an item's title can only be fixed by adding a new item. Please add `TodoList.rename(item_id, "
            "title)` that changes the title and returns the item, and a `rename ID TITLE` command that prints "
            "`renamed 3: new title`."),
        "gold": [
            _method('''
                def rename(self, item_id: int, title: str) -> Item:
                    """Give the item numbered `item_id` a new title; returns it."""
                    item = self.get(item_id)
                    item.title = title
                    return item
            '''),
            _command('''
                def cmd_rename(todos: TodoList, args: argparse.Namespace) -> int:
                    """Give an item a new title."""
                    try:
                        item = todos.rename(args.id, args.title)
                    except NotFoundError as error:
                        return fail(error, EXIT_NOT_FOUND)
                    print(f"renamed {item.id}: {item.title}")
                    return EXIT_OK
            '''),
            _parser('''\
                rename = commands.add_parser("rename", help="give an item a new title")
                rename.add_argument("id", type=int, help="the item's number")
                rename.add_argument("title", help="the new title")
                rename.set_defaults(run=cmd_rename)
            '''),
            _changelog("`rename ID TITLE` and TodoList.rename give an item a new title."),
        ],
        "naive": [
            _method('''
                def rename(self, item_id, title):
                    item = self.get(item_id)
                    item.title = title
                    return item
            '''),
            _command('''
                def cmd_rename(todos, args):
                    try:
                        item = todos.rename(args.id, args.title)
                    except NotFoundError as error:
                        return fail(error, EXIT_NOT_FOUND)
                    print(f"renamed {item.id}: {item.title}")
                    return EXIT_OK
            '''),
            _parser('''\
                rename = commands.add_parser("rename", help="give an item a new title")
                rename.add_argument("id", type=int, help="the item's number")
                rename.add_argument("title", help="the new title")
                rename.set_defaults(run=cmd_rename)
            '''),
        ],
        "undo": {"docs_types": [_items('        """Give the item numbered `item_id` a new title; returns it."""\n', "")],
                 "changelog": NO_CHANGELOG},
        "tests": ("rename", '''
def test_rename_changes_the_title(tmp_path, capsys):
    run(tmp_path, "add", "wrte report")
    assert run(tmp_path, "rename", "1", "write report") == EXIT_OK
    assert "renamed 1: write report" in capsys.readouterr().out
    assert saved(tmp_path).get(1).title == "write report"


def test_rename_is_documented():
    check_documented(TodoList.rename)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "priority-range", "created_at": "2026-01-13T11:00:00Z", "conventions": ["errors", "cli_exit"],
        "problem_statement": (
            "Priorities outside 1-3 are accepted\n\n"
            "`todo add \"x\" --priority 7` adds an item with priority 7, and `TodoList.add(\"x\", 0)` does too, "
            "although priorities go from 1 (most urgent) to 3. Both should refuse such a priority and add nothing."),
        "gold": [
            ITEMS_USAGE,
            _items('        """Add an item; returns it with its new id."""\n',
                   '        """Add an item; returns it with its new id. Raises UsageError for a priority outside 1-3."""\n'
                   '        if priority not in PRIORITIES:\n'
                   '            raise UsageError(f"priority must be 1, 2 or 3, not {priority}")\n'),
        ],
        "naive": [
            _items('        """Add an item; returns it with its new id."""\n',
                   '        """Add an item; returns it with its new id."""\n'
                   '        if priority not in PRIORITIES:\n'
                   '            raise ValueError(f"bad priority {priority}")\n'),
            _cli("    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"added",
                 "    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n"
                 "    except ValueError as error:\n        print(error)\n        return 1\n    print(f\"added"),
        ],
        "undo": {"errors": [_items('raise UsageError(f"priority', 'raise ValueError(f"priority'),
                            _cli("    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"added",
                                 "    except (UsageError, ValueError) as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"added")],
                 "cli_exit": [_cli("    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"added",
                                   "    except UsageError as error:\n        return fail(error, 1)\n    print(f\"added")]},
        "tests": ("priority_range", '''
@pytest.mark.parametrize("priority", ["0", "7"])
def test_the_command_refuses_a_priority_outside_one_to_three(tmp_path, capsys, priority):
    assert run(tmp_path, "add", "x", "--priority", priority) != EXIT_OK
    assert saved(tmp_path).items == []


def test_the_list_refuses_it_with_a_todo_error():
    todos = TodoList()
    raises_todo_error(todos.add, "x", 0)
    assert todos.items == []


def test_the_command_fails_as_a_usage_error(tmp_path, capsys):
    check_failed(run(tmp_path, "add", "x", "--priority", "7"), EXIT_USAGE, capsys)
'''),
    },
    {
        "slug": "empty-title", "created_at": "2026-01-20T09:30:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "Empty titles are accepted\n\n"
            "`TodoList.add(\"   \")` adds an item whose title is blank, and it shows up in `todo list` as an empty "
            "line. A title that is empty or only spaces should be refused; other titles should be stored without "
            "their surrounding spaces."),
        "gold": [
            ITEMS_USAGE,
            _items('        """Add an item; returns it with its new id."""\n',
                   '        """Add an item; returns it with its new id. Raises UsageError for a blank title."""\n'
                   '        title = title.strip()\n        if not title:\n'
                   '            raise UsageError("a title cannot be empty")\n'),
            _changelog("Blank titles are refused; titles are stored without surrounding spaces."),
        ],
        "naive": [
            _items('        """Add an item; returns it with its new id."""\n',
                   '        """Add an item; returns it with its new id."""\n'
                   '        title = title.strip()\n        assert title, "empty title"\n'),
        ],
        "undo": {"errors": [_items('raise UsageError("a title', 'raise ValueError("a title')],
                 "changelog": NO_CHANGELOG},
        "tests": ("empty_title", '''
def test_titles_are_stripped():
    assert TodoList().add("  call bob ").title == "call bob"


@pytest.mark.parametrize("blank", ["empty", "spaces"])
def test_a_blank_title_is_refused_with_a_todo_error(blank):
    todos = TodoList()
    raises_todo_error(todos.add, {"empty": "", "spaces": "   "}[blank])
    assert todos.items == []


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "remove", "created_at": "2026-01-27T14:00:00Z", "conventions": ["cli_help", "cli_exit"],
        "problem_statement": (
            "Remove an item\n\n"
            "Items added by mistake stay forever. Please add a `remove ID` command that deletes the item and "
            "prints `removed 2: title`; removing an item that does not exist should fail with a message and leave "
            "the list as it was."),
        "gold": [
            _method('''
                def remove(self, item_id: int) -> Item:
                    """Delete the item numbered `item_id`; returns it."""
                    item = self.get(item_id)
                    self.items.remove(item)
                    return item
            '''),
            _command('''
                def cmd_remove(todos: TodoList, args: argparse.Namespace) -> int:
                    """Delete an item."""
                    try:
                        item = todos.remove(args.id)
                    except NotFoundError as error:
                        return fail(error, EXIT_NOT_FOUND)
                    print(f"removed {item.id}: {item.title}")
                    return EXIT_OK
            '''),
            _parser('''\
                remove = commands.add_parser("remove", help="delete an item")
                remove.add_argument("id", type=int, help="the item's number")
                remove.set_defaults(run=cmd_remove)
            '''),
        ],
        "naive": [
            _command('''
                def cmd_remove(todos, args):
                    for item in todos.items:
                        if item.id == args.id:
                            todos.items.remove(item)
                            print(f"removed {item.id}: {item.title}")
                            return EXIT_OK
                    print(f"no item {args.id}")
                    return 1
            '''),
            _parser('''\
                remove = commands.add_parser("remove")
                remove.add_argument("id", type=int)
                remove.set_defaults(run=cmd_remove)
            '''),
        ],
        "undo": {"cli_help": [_cli('remove = commands.add_parser("remove", help="delete an item")', 'remove = commands.add_parser("remove")')],
                 "cli_exit": [_cli("        item = todos.remove(args.id)\n    except NotFoundError as error:\n        return fail(error, EXIT_NOT_FOUND)",
                                   "        item = todos.remove(args.id)\n    except NotFoundError as error:\n        return fail(error, 1)")]},
        "tests": ("remove", '''
def test_remove_deletes_the_item(tmp_path, capsys):
    run(tmp_path, "add", "a")
    run(tmp_path, "add", "b")
    assert run(tmp_path, "remove", "1") == EXIT_OK
    assert "removed 1: a" in capsys.readouterr().out
    assert [i.title for i in saved(tmp_path).items] == ["b"]


def test_removing_an_unknown_item_fails_as_not_found(tmp_path, capsys):
    run(tmp_path, "add", "a")
    capsys.readouterr()
    check_failed(run(tmp_path, "remove", "9"), EXIT_NOT_FOUND, capsys)
    assert len(saved(tmp_path).items) == 1


def test_the_command_has_help():
    check_help("remove")
'''),
    },
    {
        "slug": "list-tag", "created_at": "2026-02-03T10:15:00Z", "conventions": ["cli_help", "changelog"],
        "problem_statement": (
            "Filter the list by tag\n\n"
            "Items can be tagged (`add --tag work`), but `todo list` always shows everything. Please let "
            "`todo list --tag work` show only the items carrying that tag."),
        "gold": [
            _cli("    items = todos.items if args.all else todos.pending()\n",
                 "    items = todos.items if args.all else todos.pending()\n"
                 "    if args.tag:\n        items = [item for item in items if args.tag in item.tags]\n"),
            _cli('    show.add_argument("--all", action="store_true", help="print done items too")\n',
                 '    show.add_argument("--all", action="store_true", help="print done items too")\n'
                 '    show.add_argument("--tag", help="only the items with this tag")\n'),
            _changelog("`list --tag TAG` shows only the items with that tag."),
        ],
        "naive": [
            _cli("    items = todos.items if args.all else todos.pending()\n",
                 "    items = todos.items if args.all else todos.pending()\n"
                 "    if args.tag:\n        items = [item for item in items if args.tag in item.tags]\n"),
            _cli('    show.add_argument("--all", action="store_true", help="print done items too")\n',
                 '    show.add_argument("--all", action="store_true", help="print done items too")\n'
                 '    show.add_argument("--tag")\n'),
        ],
        "undo": {"cli_help": [_cli('show.add_argument("--tag", help="only the items with this tag")', 'show.add_argument("--tag")')],
                 "changelog": NO_CHANGELOG},
        "tests": ("list_tag", '''
def test_list_shows_only_the_tagged_items(tmp_path, capsys):
    run(tmp_path, "add", "report", "--tag", "work")
    run(tmp_path, "add", "groceries", "--tag", "home")
    capsys.readouterr()
    assert run(tmp_path, "list", "--tag", "work") == EXIT_OK
    out = capsys.readouterr().out
    assert "report" in out and "groceries" not in out


def test_the_option_has_help():
    check_help("list")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "corrupt-file", "created_at": "2026-02-10T16:40:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "A damaged list file gives a traceback\n\n"
            "When todo.json is not valid JSON (say, a half-written file), `TodoList.load` fails with a "
            "JSONDecodeError and every command crashes with a traceback. Loading such a file should fail with one "
            "clear error that names the file."),
        "gold": [
            {"path": "todo/errors.py", "find": 'class NotFoundError(TodoError):\n    """An item that does not exist."""\n',
             "replace": 'class NotFoundError(TodoError):\n    """An item that does not exist."""\n\n\n'
                        'class StorageError(TodoError):\n    """A list file that cannot be read."""\n'},
            _items("from todo.errors import NotFoundError\n", "from todo.errors import NotFoundError, StorageError\n"),
            _items("        return cls([Item(**data) for data in json.loads(path.read_text())])\n",
                   "        try:\n            return cls([Item(**data) for data in json.loads(path.read_text())])\n"
                   "        except (ValueError, TypeError) as error:\n"
                   "            raise StorageError(f\"{path} is not a to-do list: {error}\") from None\n"),
            _changelog("A damaged list file is one StorageError naming the file, not a traceback."),
        ],
        "naive": [
            _items("        return cls([Item(**data) for data in json.loads(path.read_text())])\n",
                   "        try:\n            return cls([Item(**data) for data in json.loads(path.read_text())])\n"
                   "        except json.JSONDecodeError:\n            raise RuntimeError(f\"cannot read {path}\")\n"),
        ],
        "undo": {"errors": [_items('raise StorageError(f"{path} is not', 'raise RuntimeError(f"{path} is not')],
                 "changelog": NO_CHANGELOG},
        "tests": ("corrupt_file", '''
def test_a_damaged_file_is_one_error_naming_it(tmp_path):
    path = tmp_path / "todo.json"
    path.write_text('[{"id": 1, "title": "half')
    with pytest.raises(Exception) as error:
        TodoList.load(path)
    assert "todo.json" in str(error.value)


def test_the_error_is_a_todo_error(tmp_path):
    path = tmp_path / "todo.json"
    path.write_text("not json")
    raises_todo_error(TodoList.load, path)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "clear-done", "created_at": "2026-02-17T09:00:00Z", "conventions": ["logging", "cli_help"],
        "problem_statement": (
            "Clear the done items\n\n"
            "Done items pile up in the file. Please add a `clear` command that deletes every done item and prints "
            "`cleared 2 items`. For the record, each deleted item should leave a trace with its title, without "
            "cluttering the command's output."),
        "gold": [
            _cli("import argparse\nimport sys\n", "import argparse\nimport logging\nimport sys\n"),
            _cli("EXIT_OK = 0\n", "logger = logging.getLogger(__name__)\n\nEXIT_OK = 0\n"),
            _command('''
                def cmd_clear(todos: TodoList, args: argparse.Namespace) -> int:
                    """Delete every done item."""
                    done = [item for item in todos.items if item.done]
                    for item in done:
                        todos.items.remove(item)
                        logger.info("cleared item %d: %s", item.id, item.title)
                    print(f"cleared {len(done)} items")
                    return EXIT_OK
            '''),
            _parser('''\
                clear = commands.add_parser("clear", help="delete every done item")
                clear.set_defaults(run=cmd_clear)
            '''),
        ],
        "naive": [
            _command('''
                def cmd_clear(todos, args):
                    done = [item for item in todos.items if item.done]
                    for item in done:
                        todos.items.remove(item)
                        print(f"cleared item {item.id}: {item.title}")
                    print(f"cleared {len(done)} items")
                    return EXIT_OK
            '''),
            _parser('''\
                clear = commands.add_parser("clear")
                clear.set_defaults(run=cmd_clear)
            '''),
        ],
        "undo": {"logging": [_cli('logger.info("cleared item %d: %s", item.id, item.title)', 'print(f"cleared item {item.id}: {item.title}")')],
                 "cli_help": [_cli('clear = commands.add_parser("clear", help="delete every done item")', 'clear = commands.add_parser("clear")')]},
        "tests": ("clear_done", '''
def make_list(tmp_path):
    run(tmp_path, "add", "a")
    run(tmp_path, "add", "b")
    run(tmp_path, "done", "1")


def test_clear_deletes_the_done_items(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    make_list(tmp_path)
    capsys.readouterr()
    assert run(tmp_path, "clear") == EXIT_OK
    out = capsys.readouterr().out
    assert "cleared 1 items" in out
    assert "a" in out + caplog.text
    assert [i.title for i in saved(tmp_path).items] == ["b"]


def test_each_cleared_item_goes_to_the_todo_logger(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    make_list(tmp_path)
    capsys.readouterr()
    run(tmp_path, "clear")
    check_logged(caplog, capsys, "cleared item 1")


def test_the_command_has_help():
    check_help("clear")
'''),
    },
    {
        "slug": "search", "created_at": "2026-02-24T13:20:00Z", "conventions": ["cli_help", "docs_types"],
        "problem_statement": (
            "Search the items\n\n"
            "With many items, finding one is hard. Please add `TodoList.search(text)` returning the items whose "
            "title contains `text`, ignoring case, in id order, and a `search TEXT` command that prints them like "
            "`list` does."),
        "gold": [
            _method('''
                def search(self, text: str) -> list[Item]:
                    """The items whose title contains `text` (ignoring case), in id order."""
                    return [item for item in self.items if text.lower() in item.title.lower()]
            '''),
            _command('''
                def cmd_search(todos: TodoList, args: argparse.Namespace) -> int:
                    """Print the items whose title contains the text."""
                    for item in todos.search(args.text):
                        print(f"{item.id}. [{'x' if item.done else ' '}] {item.title} (p{item.priority})")
                    return EXIT_OK
            '''),
            _parser('''\
                search = commands.add_parser("search", help="print the items whose title contains a text")
                search.add_argument("text", help="the text to look for (case does not matter)")
                search.set_defaults(run=cmd_search)
            '''),
        ],
        "naive": [
            _method('''
                def search(self, text):
                    return [item for item in self.items if text.lower() in item.title.lower()]
            '''),
            _command('''
                def cmd_search(todos, args):
                    for item in todos.search(args.text):
                        print(f"{item.id}. [{'x' if item.done else ' '}] {item.title} (p{item.priority})")
                    return EXIT_OK
            '''),
            _parser('''\
                search = commands.add_parser("search")
                search.add_argument("text")
                search.set_defaults(run=cmd_search)
            '''),
        ],
        "undo": {"cli_help": [_cli('search.add_argument("text", help="the text to look for (case does not matter)")', 'search.add_argument("text")')],
                 "docs_types": [_items("def search(self, text: str) -> list[Item]:", "def search(self, text):")]},
        "tests": ("search", '''
def test_search_ignores_case(tmp_path, capsys):
    for title in ("Write report", "call Bob", "report taxes"):
        run(tmp_path, "add", title)
    assert [i.id for i in saved(tmp_path).search("REPORT")] == [1, 3]
    capsys.readouterr()
    assert run(tmp_path, "search", "bob") == EXIT_OK
    assert capsys.readouterr().out.strip() == "2. [ ] call Bob (p2)"


def test_search_is_documented():
    check_documented(TodoList.search)


def test_the_command_has_help():
    check_help("search")
'''),
    },
    {
        "slug": "duplicate-title", "created_at": "2026-03-03T10:00:00Z", "conventions": ["logging", "changelog"],
        "problem_statement": (
            "Warn about duplicate items\n\n"
            "Adding an item whose title is already on the list (pending, same text ignoring case) happens by "
            "accident. It should still be added, but with a warning that quotes the title."),
        "gold": [
            ITEMS_LOGGER, ITEMS_LOGGER_DEF,
            _items('        """Add an item; returns it with its new id."""\n',
                   '        """Add an item; returns it with its new id (a warning when the title is already pending)."""\n'
                   '        if any(i.title.lower() == title.lower() for i in self.items if not i.done):\n'
                   '            logger.warning("duplicate item %r", title)\n'),
            _changelog("Adding a title that is already pending warns."),
        ],
        "naive": [
            _items('        """Add an item; returns it with its new id."""\n',
                   '        """Add an item; returns it with its new id."""\n'
                   '        if any(i.title.lower() == title.lower() for i in self.items if not i.done):\n'
                   '            print(f"warning: duplicate item {title!r}")\n'),
        ],
        "undo": {"logging": [_items('logger.warning("duplicate item %r", title)', 'print(f"duplicate item {title!r}")')],
                 "changelog": NO_CHANGELOG},
        "tests": ("duplicate_title", '''
def test_a_duplicate_is_added_with_a_warning(caplog, capsys):
    caplog.set_level(logging.INFO)
    todos = TodoList()
    todos.add("Call Bob")
    todos.add("call bob")
    assert len(todos.items) == 2
    assert "call bob" in capsys.readouterr().out + caplog.text


def test_the_warning_goes_to_the_todo_logger(caplog, capsys):
    caplog.set_level(logging.INFO)
    todos = TodoList()
    todos.add("Call Bob")
    todos.add("call bob")
    check_logged(caplog, capsys, "call bob")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "reopen", "created_at": "2026-03-10T15:30:00Z", "conventions": ["cli_exit", "changelog"],
        "problem_statement": (
            "Reopen an item marked done by mistake\n\n"
            "`todo done 3` cannot be taken back. Please add a `reopen ID` command that marks the item not done "
            "and prints `reopened 3: title`. Reopening an item that does not exist should fail with a message."),
        "gold": [
            _command('''
                def cmd_reopen(todos: TodoList, args: argparse.Namespace) -> int:
                    """Mark a done item not done."""
                    try:
                        item = todos.get(args.id)
                    except NotFoundError as error:
                        return fail(error, EXIT_NOT_FOUND)
                    item.done = False
                    print(f"reopened {item.id}: {item.title}")
                    return EXIT_OK
            '''),
            _parser('''\
                reopen = commands.add_parser("reopen", help="mark a done item not done")
                reopen.add_argument("id", type=int, help="the item's number")
                reopen.set_defaults(run=cmd_reopen)
            '''),
            _changelog("`reopen ID` marks a done item not done."),
        ],
        "naive": [
            _command('''
                def cmd_reopen(todos, args):
                    try:
                        item = todos.get(args.id)
                    except NotFoundError:
                        print("no such item")
                        return 1
                    item.done = False
                    print(f"reopened {item.id}: {item.title}")
                    return EXIT_OK
            '''),
            _parser('''\
                reopen = commands.add_parser("reopen", help="mark a done item not done")
                reopen.add_argument("id", type=int, help="the item's number")
                reopen.set_defaults(run=cmd_reopen)
            '''),
        ],
        "undo": {"cli_exit": [_cli("        item = todos.get(args.id)\n    except NotFoundError as error:\n        return fail(error, EXIT_NOT_FOUND)",
                                   "        item = todos.get(args.id)\n    except NotFoundError as error:\n        return fail(error, 1)")],
                 "changelog": NO_CHANGELOG},
        "tests": ("reopen", '''
def test_reopen_marks_the_item_not_done(tmp_path, capsys):
    run(tmp_path, "add", "a")
    run(tmp_path, "done", "1")
    assert run(tmp_path, "reopen", "1") == EXIT_OK
    assert "reopened 1: a" in capsys.readouterr().out
    assert not saved(tmp_path).get(1).done


def test_reopening_an_unknown_item_fails_as_not_found(tmp_path, capsys):
    check_failed(run(tmp_path, "reopen", "4"), EXIT_NOT_FOUND, capsys)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "stats", "created_at": "2026-03-17T11:45:00Z", "conventions": ["cli_help", "docs_types"],
        "problem_statement": (
            "How much is left?\n\n"
            "Please add `TodoList.counts()` returning `{\"pending\": 2, \"done\": 1}`, and a `stats` command that "
            "prints `2 pending, 1 done`."),
        "gold": [
            _method('''
                def counts(self) -> dict[str, int]:
                    """How many items are pending and how many done: {"pending": n, "done": m}."""
                    done = sum(1 for item in self.items if item.done)
                    return {"pending": len(self.items) - done, "done": done}
            '''),
            _command('''
                def cmd_stats(todos: TodoList, args: argparse.Namespace) -> int:
                    """Print how many items are pending and done."""
                    counts = todos.counts()
                    print(f"{counts['pending']} pending, {counts['done']} done")
                    return EXIT_OK
            '''),
            _parser('''\
                stats = commands.add_parser("stats", help="print how many items are pending and done")
                stats.set_defaults(run=cmd_stats)
            '''),
        ],
        "naive": [
            _method('''
                def counts(self):
                    done = len([item for item in self.items if item.done])
                    return {"pending": len(self.items) - done, "done": done}
            '''),
            _command('''
                def cmd_stats(todos, args):
                    counts = todos.counts()
                    print(f"{counts['pending']} pending, {counts['done']} done")
                    return EXIT_OK
            '''),
            _parser('''\
                stats = commands.add_parser("stats")
                stats.set_defaults(run=cmd_stats)
            '''),
        ],
        "undo": {"cli_help": [_cli('commands.add_parser("stats", help="print how many items are pending and done")', 'commands.add_parser("stats")')],
                 "docs_types": [_items('        """How many items are pending and how many done: {"pending": n, "done": m}."""\n', "")]},
        "tests": ("stats", '''
def test_stats_counts_pending_and_done(tmp_path, capsys):
    for title in ("a", "b", "c"):
        run(tmp_path, "add", title)
    run(tmp_path, "done", "2")
    assert saved(tmp_path).counts() == {"pending": 2, "done": 1}
    capsys.readouterr()
    assert run(tmp_path, "stats") == EXIT_OK
    assert capsys.readouterr().out.strip() == "2 pending, 1 done"


def test_counts_is_documented():
    check_documented(TodoList.counts)


def test_the_command_has_help():
    check_help("stats")
'''),
    },
    {
        "slug": "done-twice", "created_at": "2026-03-24T09:10:00Z", "conventions": ["errors", "cli_exit"],
        "problem_statement": (
            "Marking an item done twice succeeds silently\n\n"
            "`todo done 2` on an item that is already done prints `done 2: ...` again, so a mistyped number goes "
            "unnoticed. `TodoList.complete` should refuse an item that is already done, and the command should "
            "fail with a message saying so."),
        "gold": [
            ITEMS_USAGE,
            _items("        item = self.get(item_id)\n        item.done = True\n",
                   "        item = self.get(item_id)\n        if item.done:\n"
                   "            raise UsageError(f\"item {item_id} is already done\")\n        item.done = True\n"),
            _cli("        item = todos.complete(args.id)\n    except NotFoundError as error:\n        return fail(error, EXIT_NOT_FOUND)\n",
                 "        item = todos.complete(args.id)\n    except NotFoundError as error:\n        return fail(error, EXIT_NOT_FOUND)\n"
                 "    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n"),
        ],
        "naive": [
            _items("        item = self.get(item_id)\n        item.done = True\n",
                   "        item = self.get(item_id)\n        if item.done:\n"
                   "            raise ValueError(\"already done\")\n        item.done = True\n"),
            _cli("        item = todos.complete(args.id)\n    except NotFoundError as error:\n        return fail(error, EXIT_NOT_FOUND)\n",
                 "        item = todos.complete(args.id)\n    except NotFoundError as error:\n        return fail(error, EXIT_NOT_FOUND)\n"
                 "    except ValueError as error:\n        print(error)\n        return 1\n"),
        ],
        "undo": {"errors": [_items('raise UsageError(f"item {item_id} is already done")', 'raise ValueError(f"item {item_id} is already done")'),
                            _cli("    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"done",
                                 "    except (UsageError, ValueError) as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"done")],
                 "cli_exit": [_cli("    except UsageError as error:\n        return fail(error, EXIT_USAGE)\n    print(f\"done",
                                   "    except UsageError as error:\n        return fail(error, 1)\n    print(f\"done")]},
        "tests": ("done_twice", '''
def test_the_second_done_fails(tmp_path, capsys):
    run(tmp_path, "add", "a")
    run(tmp_path, "done", "1")
    assert run(tmp_path, "done", "1") != EXIT_OK
    printed = capsys.readouterr()
    assert "already done" in printed.out + printed.err


def test_complete_refuses_with_a_todo_error():
    todos = TodoList()
    todos.add("a")
    todos.complete(1)
    raises_todo_error(todos.complete, 1)


def test_the_command_fails_as_a_usage_error(tmp_path, capsys):
    run(tmp_path, "add", "a")
    run(tmp_path, "done", "1")
    capsys.readouterr()
    check_failed(run(tmp_path, "done", "1"), EXIT_USAGE, capsys)
'''),
    },
    {
        "slug": "due-date", "created_at": "2026-03-31T10:30:00Z", "conventions": ["errors", "cli_help"],
        "problem_statement": (
            "Due dates\n\n"
            "Please let `todo add \"report\" --due 2026-05-01` record a due date (ISO `YYYY-MM-DD`, kept on the item "
            "as `due`, empty by default) and show it in `list` as ` due 2026-05-01` after the priority. "
            "`TodoList.add(..., due=\"2026-13-01\")` and the command should refuse a date that does not exist."),
        "gold": [
            ITEMS_USAGE,
            _items("import json\n", "import json\nfrom datetime import date\n"),
            _items("    tags: list[str] = field(default_factory=list)\n",
                   "    tags: list[str] = field(default_factory=list)\n    due: str | None = None\n"),
            _items("    def add(self, title: str, priority: int = 2, tags: list[str] | None = None) -> Item:\n"
                   '        """Add an item; returns it with its new id."""\n',
                   "    def add(self, title: str, priority: int = 2, tags: list[str] | None = None,\n"
                   "            due: str | None = None) -> Item:\n"
                   '        """Add an item; returns it with its new id. `due` is an ISO date (UsageError if it is not one)."""\n'
                   "        if due is not None:\n            try:\n                date.fromisoformat(due)\n"
                   "            except ValueError:\n                raise UsageError(f\"not a date (YYYY-MM-DD): {due!r}\") from None\n"),
            _items("item = Item(max((i.id for i in self.items), default=0) + 1, title, priority, tags=list(tags or []))",
                   "item = Item(max((i.id for i in self.items), default=0) + 1, title, priority, tags=list(tags or []), due=due)"),
            _cli("item = todos.add(args.title, args.priority, args.tag)", "item = todos.add(args.title, args.priority, args.tag, args.due)"),
            _cli("{item.title} (p{item.priority})\")\n    return EXIT_OK",
                 "{item.title} (p{item.priority})\" + (f\" due {item.due}\" if item.due else \"\"))\n    return EXIT_OK"),
            _cli('    add.add_argument("--tag", action="append", default=[], help="a tag for the item (repeatable)")\n',
                 '    add.add_argument("--tag", action="append", default=[], help="a tag for the item (repeatable)")\n'
                 '    add.add_argument("--due", help="the due date, YYYY-MM-DD")\n'),
        ],
        "naive": [
            _items("import json\n", "import json\nfrom datetime import date\n"),
            _items("    tags: list[str] = field(default_factory=list)\n",
                   "    tags: list[str] = field(default_factory=list)\n    due: str | None = None\n"),
            _items("    def add(self, title: str, priority: int = 2, tags: list[str] | None = None) -> Item:\n",
                   "    def add(self, title: str, priority: int = 2, tags: list[str] | None = None, due=None) -> Item:\n"
                   "        if due is not None:\n            date.fromisoformat(due)\n"),
            _items("item = Item(max((i.id for i in self.items), default=0) + 1, title, priority, tags=list(tags or []))",
                   "item = Item(max((i.id for i in self.items), default=0) + 1, title, priority, tags=list(tags or []), due=due)"),
            _cli("        item = todos.add(args.title, args.priority, args.tag)\n    except UsageError as error:",
                 "        item = todos.add(args.title, args.priority, args.tag, args.due)\n    except (UsageError, ValueError) as error:"),
            _cli("{item.title} (p{item.priority})\")\n    return EXIT_OK",
                 "{item.title} (p{item.priority})\" + (f\" due {item.due}\" if item.due else \"\"))\n    return EXIT_OK"),
            _cli('    add.add_argument("--tag", action="append", default=[], help="a tag for the item (repeatable)")\n',
                 '    add.add_argument("--tag", action="append", default=[], help="a tag for the item (repeatable)")\n'
                 '    add.add_argument("--due")\n'),
        ],
        "undo": {"errors": [_items('raise UsageError(f"not a date (YYYY-MM-DD): {due!r}") from None', "raise")],
                 "cli_help": [_cli('add.add_argument("--due", help="the due date, YYYY-MM-DD")', 'add.add_argument("--due")')]},
        "tests": ("due_date", '''
def test_a_due_date_is_kept_and_listed(tmp_path, capsys):
    assert run(tmp_path, "add", "report", "--due", "2026-05-01") == EXIT_OK
    assert saved(tmp_path).get(1).due == "2026-05-01"
    capsys.readouterr()
    run(tmp_path, "list")
    assert "report (p2) due 2026-05-01" in capsys.readouterr().out


def test_an_impossible_date_is_refused(tmp_path, capsys):
    assert run(tmp_path, "add", "report", "--due", "2026-13-01") != EXIT_OK
    raises_todo_error(lambda: TodoList().add("report", due="2026-13-01"))


def test_the_option_has_help():
    check_help("add")
'''),
    },
    {
        "slug": "set-priority", "created_at": "2026-04-07T14:00:00Z", "conventions": ["errors", "docs_types"],
        "problem_statement": (
            "Change an item's priority\n\n"
            "Please add `TodoList.set_priority(item_id, priority)` returning the item. It should refuse a priority "
            "other than 1, 2 or 3 and leave the item as it was."),
        "gold": [
            ITEMS_USAGE,
            _method('''
                def set_priority(self, item_id: int, priority: int) -> Item:
                    """Give the item numbered `item_id` a priority from 1 (most urgent) to 3; returns it."""
                    if priority not in PRIORITIES:
                        raise UsageError(f"priority must be 1, 2 or 3, not {priority}")
                    item = self.get(item_id)
                    item.priority = priority
                    return item
            '''),
        ],
        "naive": [
            _method('''
                def set_priority(self, item_id, priority):
                    if priority not in (1, 2, 3):
                        raise ValueError("bad priority")
                    item = self.get(item_id)
                    item.priority = priority
                    return item
            '''),
        ],
        "undo": {"errors": [_items('raise UsageError(f"priority must be 1, 2 or 3, not {priority}")\n        item = self.get(item_id)\n        item.priority',
                                   'raise ValueError(f"priority must be 1, 2 or 3, not {priority}")\n        item = self.get(item_id)\n        item.priority')],
                 "docs_types": [_items("def set_priority(self, item_id: int, priority: int) -> Item:", "def set_priority(self, item_id, priority):")]},
        "tests": ("set_priority", '''
def test_set_priority_changes_it():
    todos = TodoList()
    todos.add("a")
    assert todos.set_priority(1, 1).priority == 1


def test_a_bad_priority_is_refused_with_a_todo_error():
    todos = TodoList()
    todos.add("a")
    raises_todo_error(todos.set_priority, 1, 5)
    assert todos.get(1).priority == 2


def test_set_priority_is_documented():
    check_documented(TodoList.set_priority)
'''),
    },
    {
        "slug": "markdown", "created_at": "2026-04-14T09:20:00Z", "conventions": ["docs_types", "changelog"],
        "problem_statement": (
            "The list as a Markdown checklist\n\n"
            "For our wiki, please add `TodoList.to_markdown()` returning one line per item in id order, "
            "`- [ ] title` or `- [x] title`, joined by newlines."),
        "gold": [
            _method('''
                def to_markdown(self) -> str:
                    """The items as a Markdown checklist, one `- [ ] title` line each, in id order."""
                    return "\\n".join(f"- [{'x' if item.done else ' '}] {item.title}" for item in self.items)
            '''),
            _changelog("TodoList.to_markdown writes the list as a Markdown checklist."),
        ],
        "naive": [
            _method('''
                def to_markdown(self):
                    lines = []
                    for item in self.items:
                        lines.append("- [x] " + item.title if item.done else "- [ ] " + item.title)
                    return "\\n".join(lines)
            '''),
        ],
        "undo": {"docs_types": [_items('        """The items as a Markdown checklist, one `- [ ] title` line each, in id order."""\n', "")],
                 "changelog": NO_CHANGELOG},
        "tests": ("markdown", '''
def test_the_list_as_a_checklist():
    todos = TodoList()
    todos.add("a")
    todos.add("b")
    todos.complete(1)
    assert todos.to_markdown() == "- [x] a\\n- [ ] b"


def test_to_markdown_is_documented():
    check_documented(TodoList.to_markdown)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "tags-normalized", "created_at": "2026-04-21T11:00:00Z", "conventions": ["docs_types", "changelog"],
        "problem_statement": (
            "Tags differ by case and repeat\n\n"
            "`todo add x --tag Work --tag work` stores both tags. Please add `normalize_tags(tags)` to "
            "`todo/items.py` (lower case, surrounding spaces removed, empty ones dropped, duplicates dropped, first "
            "seen first) and store every item's tags through it."),
        "gold": [
            _items("\n\nclass TodoList:",
                   '\n\ndef normalize_tags(tags: list[str]) -> list[str]:\n'
                   '    """Lower-cased, stripped, non-empty tags without repeats, in first-seen order."""\n'
                   '    return list(dict.fromkeys(tag.strip().lower() for tag in tags if tag.strip()))\n\n\nclass TodoList:'),
            _items("tags=list(tags or []))", "tags=normalize_tags(tags or []))"),
            _changelog("Tags are stored lower-case, stripped and without repeats (normalize_tags)."),
        ],
        "naive": [
            _items("\n\nclass TodoList:",
                   '\n\ndef normalize_tags(tags):\n    result = []\n    for tag in tags:\n        tag = tag.strip().lower()\n'
                   '        if tag and tag not in result:\n            result.append(tag)\n    return result\n\n\nclass TodoList:'),
            _items("tags=list(tags or []))", "tags=normalize_tags(tags or []))"),
        ],
        "undo": {"docs_types": [_items("def normalize_tags(tags: list[str]) -> list[str]:", "def normalize_tags(tags):")],
                 "changelog": NO_CHANGELOG},
        "tests": ("tags_normalized", '''
def test_tags_are_normalized(tmp_path):
    from todo.items import normalize_tags

    assert normalize_tags([" Work", "work", "", "Home "]) == ["work", "home"]
    run(tmp_path, "add", "x", "--tag", "Work", "--tag", "work")
    assert saved(tmp_path).get(1).tags == ["work"]


def test_normalize_tags_is_documented():
    from todo.items import normalize_tags

    check_documented(normalize_tags)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
]
