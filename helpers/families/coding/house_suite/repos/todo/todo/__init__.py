"""todo: a small command-line to-do list (the house suite's command-line tool)."""

import logging

logger = logging.getLogger("todo")

from todo.errors import NotFoundError, TodoError, UsageError  # noqa: E402
from todo.items import Item, TodoList  # noqa: E402

__all__ = ["Item", "NotFoundError", "TodoError", "TodoList", "UsageError", "logger"]
