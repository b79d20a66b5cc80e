"""Transforms: each takes a table and returns a new one; the rows it was given are left as they were."""

from rows.io import Row


def select(table: list[Row], columns: list[str]) -> list[Row]:
    """Only `columns` of every row, in that order."""
    return [{column: row[column] for column in columns} for row in table]


def where(table: list[Row], column: str, value: str | float | None) -> list[Row]:
    """The rows whose `column` equals `value` (copies)."""
    return [dict(row) for row in table if row.get(column) == value]


def sort_by(table: list[Row], column: str, descending: bool = False) -> list[Row]:
    """The rows ordered by `column` (copies)."""
    return [dict(row) for row in sorted(table, key=lambda row: row[column], reverse=descending)]
