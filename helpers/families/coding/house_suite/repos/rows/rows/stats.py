"""Aggregates over a column; a missing value (None) is skipped, never counted as zero."""

from rows.io import Row


def total(table: list[Row], column: str) -> float:
    """The sum of the column's values that are present."""
    return sum(float(row[column]) for row in table if row.get(column) is not None)


def count(table: list[Row], column: str) -> int:
    """How many rows have a value in `column`."""
    return sum(1 for row in table if row.get(column) is not None)
