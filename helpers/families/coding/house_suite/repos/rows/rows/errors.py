"""Every error the package raises derives from RowsError."""


class RowsError(Exception):
    """Base class of the package's errors."""


class ParseError(RowsError):
    """Text that is not a table."""


class SchemaError(RowsError):
    """A column that does not exist, or a value of the wrong kind."""
