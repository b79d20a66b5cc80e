"""The `todo` command: argparse subcommands over a TodoList kept in a JSON file.

Every command is a function (todos, args) -> exit status. Failures go through fail(): one line on stderr
and the exit status named for the failure.
"""

import argparse
import sys

from todo.errors import NotFoundError, UsageError
from todo.items import TodoList

EXIT_OK = 0
EXIT_USAGE = 2      # bad input: a title, a priority, an option
EXIT_NOT_FOUND = 3  # an item that does not exist


def fail(error: Exception, status: int) -> int:
    """Tell the user what went wrong in one line on stderr; returns `status`."""
    print(f"todo: {error}", file=sys.stderr)
    return status


def cmd_add(todos: TodoList, args: argparse.Namespace) -> int:
    """Add an item and print its id."""
    try:
        item = todos.add(args.title, args.priority, args.tag)
    except UsageError as error:
        return fail(error, EXIT_USAGE)
    print(f"added {item.id}: {item.title}")
    return EXIT_OK


def cmd_list(todos: TodoList, args: argparse.Namespace) -> int:
    """Print the pending items (every item with --all), one per line."""
    items = todos.items if args.all else todos.pending()
    for item in items:
        print(f"{item.id}. [{'x' if item.done else ' '}] {item.title} (p{item.priority})")
    return EXIT_OK


def cmd_done(todos: TodoList, args: argparse.Namespace) -> int:
    """Mark an item done."""
    try:
        item = todos.complete(args.id)
    except NotFoundError as error:
        return fail(error, EXIT_NOT_FOUND)
    print(f"done {item.id}: {item.title}")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The command line: `todo [--file PATH] COMMAND ...`."""
    parser = argparse.ArgumentParser(prog="todo", description="A small to-do list kept in a JSON file.")
    parser.add_argument("--file", default="todo.json", help="the JSON file holding the list")
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="add an item")
    add.add_argument("title", help="what to do")
    add.add_argument("--priority", type=int, default=2, help="1 (most urgent) to 3")
    add.add_argument("--tag", action="append", default=[], help="a tag for the item (repeatable)")
    add.set_defaults(run=cmd_add)
    show = commands.add_parser("list", help="print the pending items, most urgent first")
    show.add_argument("--all", action="store_true", help="print done items too")
    show.set_defaults(run=cmd_list)
    done = commands.add_parser("done", help="mark an item done")
    done.add_argument("id", type=int, help="the item's number")
    done.set_defaults(run=cmd_done)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status. The list is saved only when the command succeeded."""
    args = build_parser().parse_args(argv)
    todos = TodoList.load(args.file)
    status = args.run(todos, args)
    if status == EXIT_OK:
        todos.save(args.file)
    return status
