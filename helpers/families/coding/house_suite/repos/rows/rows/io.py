"""Tables from and to CSV text. A table is a list of dicts, one per row, keyed by column name; an empty field
is None."""

import csv
import io

from rows.errors import ParseError

Row = dict[str, str | float | None]


def read_csv(text: str) -> list[Row]:
    """The rows of CSV `text` whose first line names the columns; empty fields are None."""
    lines = list(csv.reader(io.StringIO(text)))
    if not lines:
        raise ParseError("no header line")
    header, body = lines[0], [line for line in lines[1:] if line]
    return [{name: (value if value != "" else None) for name, value in zip(header, line)} for line in body]


def write_csv(table: list[Row], columns: list[str]) -> str:
    """CSV text of `table`'s `columns`, with a header line."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in table:
        writer.writerow([row.get(column) for column in columns])
    return out.getvalue()
