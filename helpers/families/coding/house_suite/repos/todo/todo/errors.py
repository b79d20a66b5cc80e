"""Every error the to-do list raises derives from TodoError."""


class TodoError(Exception):
    """Base class of the to-do list's errors."""


class UsageError(TodoError):
    """Bad input: a title, a priority, an option."""


class NotFoundError(TodoError):
    """An item that does not exist."""
