"""The house suite's tasks on the `rows` data-processing package (repos/rows): issues, gold and naive edits,
hidden tests and, per convention, the edit that undoes it in the gold fix.

Edits as in tasks.py. The package's own conventions: a transform returns new rows and never changes the rows
it was given (rows_pure), and a missing value is None, which aggregates skip (rows_missing).
"""

from textwrap import dedent

from helpers.families.coding.house_suite.tasks import TEAM_CHECKS

CHECKS = '''\
import copy
import inspect
import logging
from pathlib import Path

import pytest

from rows import RowsError, read_csv

ROOT = Path(__file__).resolve().parents[1]
TEXT = "city,country,people\\nOslo,NO,700000\\nBergen,NO,\\nLund,SE,94000\\n"


def table():
    return read_csv(TEXT)


def raises_rows_error(call, *args):
    try:
        call(*args)
    except RowsError:
        return
    except Exception as error:
        raise AssertionError("house convention broken: raise the package's own errors (subclasses of "
                             f"RowsError), not {type(error).__name__}") from None
    raise AssertionError("expected an error, none was raised")


''' + TEAM_CHECKS + '''

def check_logged(caplog, capsys, fragment):
    printed = capsys.readouterr()
    assert not printed.out and not printed.err, (
        f"house convention broken: report through the 'rows' logger, never print() (printed {printed.out!r})")
    assert any(r.name.startswith("rows") and fragment in r.getMessage() for r in caplog.records), (
        f"house convention broken: expected a log record mentioning {fragment!r} on the 'rows' logger")


def check_pure(transform, *args):
    """`transform(rows, *args)` leaves the rows it was given as they were."""
    given = table()
    before = copy.deepcopy(given)
    result = transform(given, *args)
    assert given == before, "house convention broken (rows): a transform never changes the rows it was given"
    assert not any(a is b for a in result for b in given), (
        "house convention broken (rows): a transform returns new rows, not the ones it was given")
    return result
'''


def _changelog(entry):
    return {"path": "CHANGELOG.md", "find": "## Unreleased\n", "replace": f"## Unreleased\n- {entry}\n"}


def _append(path, code):
    """Add code at the end of a module (after its last function)."""
    anchors = {"rows/transforms.py": '    return [dict(row) for row in sorted(table, key=lambda row: row[column], reverse=descending)]\n',
               "rows/stats.py": '    return sum(1 for row in table if row.get(column) is not None)\n',
               "rows/io.py": '        writer.writerow([row.get(column) for column in columns])\n    return out.getvalue()\n'}
    return {"path": path, "find": anchors[path], "replace": anchors[path] + "\n\n" + dedent(code).strip("\n") + "\n"}


def _edit(path, find, replace):
    return {"path": f"rows/{path}", "find": find, "replace": replace}


NO_CHANGELOG = "drop the changelog entry"
IO_LOGGER = _edit("io.py", "import csv\nimport io\n", "import csv\nimport io\nimport logging\n")
IO_LOGGER_DEF = _edit("io.py", "Row = dict[str, str | float | None]\n",
                      "logger = logging.getLogger(__name__)\nRow = dict[str, str | float | None]\n")
T_ERRORS = _edit("transforms.py", "from rows.io import Row\n", "from rows.errors import RowsError\nfrom rows.io import Row\n")

TASKS = [
    {
        "slug": "rename-column", "created_at": "2026-01-07T10:00:00Z", "conventions": ["rows_pure", "docs_types"],
        "problem_statement": (
            "Rename a column\n\n"
            "Please add `rename(table, old, new)` to `rows/transforms.py`: the table with column `old` called "
            "`new`, keeping the columns' order."),
        "gold": [_append("rows/transforms.py", '''
            def rename(table: list[Row], old: str, new: str) -> list[Row]:
                """The rows with column `old` called `new`, in the same column order (copies)."""
                return [{(new if name == old else name): value for name, value in row.items()} for row in table]
        ''')],
        "naive": [_append("rows/transforms.py", '''
            def rename(table, old, new):
                for row in table:
                    value = row.pop(old)
                    row[new] = value
                return table
        ''')],
        "undo": {"rows_pure": [_edit("transforms.py", "    return [{(new if name == old else name): value for name, value in row.items()} for row in table]\n",
                                     "    for row in table:\n        row[new] = row.pop(old)\n    return table\n")],
                 "docs_types": [_edit("transforms.py", "def rename(table: list[Row], old: str, new: str) -> list[Row]:", "def rename(table, old, new):")]},
        "tests": ("rename", '''
def test_rename_renames_the_column():
    from rows.transforms import rename

    result = rename(table(), "people", "population")
    assert result[0] == {"city": "Oslo", "country": "NO", "population": "700000"}


def test_rename_leaves_its_input_alone():
    from rows.transforms import rename

    check_pure(rename, "people", "population")


def test_rename_is_documented():
    from rows.transforms import rename

    check_documented(rename)
'''),
    },
    {
        "slug": "group-count", "created_at": "2026-01-14T11:00:00Z", "conventions": ["docs_types", "changelog"],
        "problem_statement": (
            "Count rows per value\n\n"
            "Please add `count_by(table, column)` to `rows/stats.py`, returning a dict from each value of the "
            "column to how many rows have it, e.g. `{\"NO\": 2, \"SE\": 1}`, with the most frequent value first."),
        "gold": [
            _edit("stats.py", "from rows.io import Row\n", "from collections import Counter\n\nfrom rows.io import Row\n"),
            _append("rows/stats.py", '''
                def count_by(table: list[Row], column: str) -> dict:
                    """How many rows have each value of `column`, the most frequent first."""
                    return dict(Counter(row.get(column) for row in table).most_common())
            '''),
            _changelog("count_by counts the rows per value of a column."),
        ],
        "naive": [_append("rows/stats.py", '''
            def count_by(table, column):
                counts = {}
                for row in table:
                    counts[row.get(column)] = counts.get(row.get(column), 0) + 1
                return dict(sorted(counts.items(), key=lambda kv: -kv[1]))
        ''')],
        "undo": {"docs_types": [_edit("stats.py", '    """How many rows have each value of `column`, the most frequent first."""\n', "")],
                 "changelog": NO_CHANGELOG},
        "tests": ("count_by", '''
def test_count_by_counts_each_value():
    from rows.stats import count_by

    assert list(count_by(table(), "country").items()) == [("NO", 2), ("SE", 1)]


def test_count_by_is_documented():
    from rows.stats import count_by

    check_documented(count_by)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "select-unknown", "created_at": "2026-01-21T09:30:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "select() with a misspelt column gives a bare KeyError\n\n"
            "`select(table, [\"cty\"])` fails with `KeyError: 'cty'`, which does not say what went wrong. Selecting "
            "a column the table does not have should fail with a message naming the column and the columns "
            "there are."),
        "gold": [
            _edit("transforms.py", "from rows.io import Row\n", "from rows.errors import SchemaError\nfrom rows.io import Row\n"),
            _edit("transforms.py", "    return [{column: row[column] for column in columns} for row in table]\n",
                  "    known = list(table[0]) if table else []\n"
                  "    missing = [column for column in columns if table and column not in known]\n"
                  "    if missing:\n        raise SchemaError(f\"no column {missing[0]!r}; the columns are {known}\")\n"
                  "    return [{column: row[column] for column in columns} for row in table]\n"),
            _changelog("select() names a missing column and the columns there are."),
        ],
        "naive": [
            _edit("transforms.py", "    return [{column: row[column] for column in columns} for row in table]\n",
                  "    for column in columns:\n        if table and column not in table[0]:\n"
                  "            raise KeyError(f\"no column {column}, columns are {list(table[0])}\")\n"
                  "    return [{column: row[column] for column in columns} for row in table]\n"),
        ],
        "undo": {"errors": [_edit("transforms.py", 'raise SchemaError(f"no column', 'raise KeyError(f"no column')],
                 "changelog": NO_CHANGELOG},
        "tests": ("select_unknown", '''
from rows.transforms import select


def test_a_missing_column_is_named():
    with pytest.raises(Exception) as error:
        select(table(), ["city", "cty"])
    assert "cty" in str(error.value) and "country" in str(error.value)


def test_a_missing_column_is_a_rows_error():
    raises_rows_error(select, table(), ["cty"])


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "mean", "created_at": "2026-01-28T14:00:00Z", "conventions": ["rows_missing", "docs_types"],
        "problem_statement": (
            "Average of a column\n\n"
            "Please add `mean(table, column)` to `rows/stats.py`: the average of the column's values as a float. "
            "Rows without a value do not count. A column with no values at all has no mean."),
        "gold": [_append("rows/stats.py", '''
            def mean(table: list[Row], column: str) -> float | None:
                """The average of the values present in `column`; None when there are none."""
                values = [float(row[column]) for row in table if row.get(column) is not None]
                return sum(values) / len(values) if values else None
        ''')],
        "naive": [_append("rows/stats.py", '''
            def mean(table, column):
                values = [float(row[column]) for row in table if row.get(column)]
                return sum(values) / len(values) if values else 0.0
        ''')],
        "undo": {"rows_missing": [_edit("stats.py", "    return sum(values) / len(values) if values else None\n",
                                        "    return sum(values) / len(values) if values else 0.0\n")],
                 "docs_types": [_edit("stats.py", "def mean(table: list[Row], column: str) -> float | None:", "def mean(table, column):")]},
        "tests": ("mean", '''
def test_mean_skips_rows_without_a_value():
    from rows.stats import mean

    assert mean(table(), "people") == 397000.0


def test_a_column_without_values_has_no_mean():
    from rows.stats import mean

    assert mean(read_csv("a,b\\n1,\\n2,\\n"), "b") is None, (
        "house convention broken (rows): a missing value is None, never 0 or ''")


def test_mean_is_documented():
    from rows.stats import mean

    check_documented(mean)
'''),
    },
    {
        "slug": "fill-missing", "created_at": "2026-02-04T10:15:00Z", "conventions": ["rows_pure", "changelog"],
        "problem_statement": (
            "Fill in missing values\n\n"
            "Please add `fill(table, column, value)` to `rows/transforms.py`: the table with every empty field of "
            "`column` set to `value`; fields that have a value keep it."),
        "gold": [
            _append("rows/transforms.py", '''
                def fill(table: list[Row], column: str, value: str | float) -> list[Row]:
                    """The rows with the missing values of `column` set to `value` (copies)."""
                    return [{**row, column: value if row.get(column) is None else row[column]} for row in table]
            '''),
            _changelog("fill() sets the missing values of a column."),
        ],
        "naive": [_append("rows/transforms.py", '''
            def fill(table, column, value):
                for row in table:
                    if row.get(column) is None:
                        row[column] = value
                return table
        ''')],
        "undo": {"rows_pure": [_edit("transforms.py", "    return [{**row, column: value if row.get(column) is None else row[column]} for row in table]\n",
                                     "    for row in table:\n        if row.get(column) is None:\n            row[column] = value\n    return table\n")],
                 "changelog": NO_CHANGELOG},
        "tests": ("fill", '''
def test_fill_sets_only_the_missing_values():
    from rows.transforms import fill

    assert [row["people"] for row in fill(table(), "people", "0")] == ["700000", "0", "94000"]


def test_fill_leaves_its_input_alone():
    from rows.transforms import fill

    check_pure(fill, "people", "0")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "ragged-lines", "created_at": "2026-02-11T16:40:00Z", "conventions": ["rows_missing", "logging"],
        "problem_statement": (
            "Short lines lose their columns\n\n"
            "`read_csv(\"a,b,c\\n1,2\\n\")` returns `[{\"a\": \"1\", \"b\": \"2\"}]`: column `c` is not in the row at "
            "all, so later steps fail with KeyError. A line with fewer fields than the header should still have "
            "every column (the absent ones empty), and the short line should be reported, with its line number."),
        "gold": [
            IO_LOGGER, IO_LOGGER_DEF,
            _edit("io.py", "    return [{name: (value if value != \"\" else None) for name, value in zip(header, line)} for line in body]\n",
                  "    for number, line in enumerate(lines[1:], 2):\n"
                  "        if line and len(line) < len(header):\n"
                  "            logger.warning(\"line %d has %d of %d fields\", number, len(line), len(header))\n"
                  "    padded = [line + [\"\"] * (len(header) - len(line)) for line in body]\n"
                  "    return [{name: (value if value != \"\" else None) for name, value in zip(header, line)} for line in padded]\n"),
        ],
        "naive": [
            _edit("io.py", "    return [{name: (value if value != \"\" else None) for name, value in zip(header, line)} for line in body]\n",
                  "    result = []\n    for number, line in enumerate(body, 2):\n"
                  "        row = {name: (value if value != \"\" else None) for name, value in zip(header, line)}\n"
                  "        if len(line) < len(header):\n            print(f\"line {number} is short\")\n"
                  "            for name in header[len(line):]:\n                row[name] = \"\"\n"
                  "        result.append(row)\n    return result\n"),
        ],
        "undo": {"rows_missing": [_edit("io.py", 'zip(header, line)} for line in padded]', 'zip(header, line)} | {name: "" for name in header[len(line):]} for line in body]')],
                 "logging": [_edit("io.py", 'logger.warning("line %d has %d of %d fields", number, len(line), len(header))',
                                   'print(f"line {number} has {len(line)} of {len(header)} fields")')]},
        "tests": ("ragged_lines", '''
def test_a_short_line_has_every_column_and_is_reported(caplog, capsys):
    caplog.set_level(logging.INFO)
    rows = read_csv("a,b,c\\n1,2\\n4,5,6\\n")
    assert set(rows[0]) == {"a", "b", "c"} and not rows[0]["c"]
    assert "2" in capsys.readouterr().out + caplog.text


def test_the_absent_field_is_none():
    assert read_csv("a,b,c\\n1,2\\n")[0]["c"] is None, "house convention broken (rows): a missing value is None, never ''"


def test_the_short_line_goes_to_the_rows_logger(caplog, capsys):
    caplog.set_level(logging.INFO)
    read_csv("a,b,c\\n1,2\\n")
    check_logged(caplog, capsys, "line 2")
'''),
    },
    {
        "slug": "to-number", "created_at": "2026-02-18T09:00:00Z", "conventions": ["rows_missing", "rows_pure"],
        "problem_statement": (
            "Convert a column to numbers\n\n"
            "Values come out of `read_csv` as text. Please add `to_number(table, column)` to `rows/transforms.py`, "
            "turning the column's values into floats; a value that is not a number (or absent) becomes empty."),
        "gold": [_append("rows/transforms.py", '''
            def to_number(table: list[Row], column: str) -> list[Row]:
                """The rows with `column` as floats; values that are not numbers become None (copies)."""
                return [{**row, column: _number(row.get(column))} for row in table]


            def _number(value: str | float | None) -> float | None:
                try:
                    return float(value) if value is not None else None
                except ValueError:
                    return None
        ''')],
        "naive": [_append("rows/transforms.py", '''
            def to_number(table, column):
                for row in table:
                    try:
                        row[column] = float(row[column])
                    except (TypeError, ValueError):
                        row[column] = ""
                return table
        ''')],
        "undo": {"rows_missing": [_edit("transforms.py", "    except ValueError:\n        return None\n", "    except ValueError:\n        return \"\"\n"),
                                  _edit("transforms.py", "return float(value) if value is not None else None", "return float(value) if value is not None else \"\"")],
                 "rows_pure": [_edit("transforms.py", "    return [{**row, column: _number(row.get(column))} for row in table]\n",
                                     "    for row in table:\n        row[column] = _number(row.get(column))\n    return table\n")]},
        "tests": ("to_number", '''
def test_to_number_converts_the_column():
    from rows.transforms import to_number

    result = to_number(read_csv("a\\n1.5\\nx\\n\\n3\\n"), "a")
    assert [row["a"] for row in result][::2] == [1.5, 3.0] and not result[1]["a"]


def test_what_is_not_a_number_becomes_none():
    from rows.transforms import to_number

    values = [row["a"] for row in to_number(read_csv("a,b\\nx,1\\n,2\\n"), "a")]
    assert values == [None, None], "house convention broken (rows): a missing value is None, never ''"


def test_to_number_leaves_its_input_alone():
    from rows.transforms import to_number

    check_pure(to_number, "people")
'''),
    },
    {
        "slug": "unique-values", "created_at": "2026-02-25T13:20:00Z", "conventions": ["rows_missing", "docs_types"],
        "problem_statement": (
            "Distinct values of a column\n\n"
            "Please add `unique(table, column)` to `rows/stats.py`: the column's distinct values, sorted, e.g. "
            "`[\"NO\", \"SE\"]` for the countries of a table of cities."),
        "gold": [_append("rows/stats.py", '''
            def unique(table: list[Row], column: str) -> list:
                """The distinct values present in `column`, sorted (missing values skipped)."""
                return sorted({row[column] for row in table if row.get(column) is not None})
        ''')],
        "naive": [_append("rows/stats.py", '''
            def unique(table, column):
                return sorted({str(row.get(column)) for row in table})
        ''')],
        "undo": {"rows_missing": [_edit("stats.py", "    return sorted({row[column] for row in table if row.get(column) is not None})\n",
                                        "    return sorted({row[column] if row.get(column) is not None else \"\" for row in table})\n")],
                 "docs_types": [_edit("stats.py", '    """The distinct values present in `column`, sorted (missing values skipped)."""\n', "")]},
        "tests": ("unique", '''
def test_unique_lists_the_distinct_values():
    from rows.stats import unique

    assert unique(table(), "country") == ["NO", "SE"]


def test_rows_without_a_value_add_nothing():
    from rows.stats import unique

    assert unique(table(), "people") == ["700000", "94000"], (
        "house convention broken (rows): a missing value is None and aggregates skip it")


def test_unique_is_documented():
    from rows.stats import unique

    check_documented(unique)
'''),
    },
    {
        "slug": "limit", "created_at": "2026-03-04T10:00:00Z", "conventions": ["errors", "rows_pure"],
        "problem_statement": (
            "First rows of a table\n\n"
            "Please add `limit(table, n)` to `rows/transforms.py`: the first `n` rows. A negative `n` is a mistake "
            "and should be refused (today's slicing habit would silently drop rows from the end)."),
        "gold": [T_ERRORS, _append("rows/transforms.py", '''
            def limit(table: list[Row], n: int) -> list[Row]:
                """The first `n` rows (copies); RowsError for a negative `n`."""
                if n < 0:
                    raise RowsError(f"limit needs n >= 0, not {n}")
                return [dict(row) for row in table[:n]]
        ''')],
        "naive": [_append("rows/transforms.py", '''
            def limit(table, n):
                if n < 0:
                    raise ValueError("n must not be negative")
                return table[:n]
        ''')],
        "undo": {"errors": [_edit("transforms.py", 'raise RowsError(f"limit needs', 'raise ValueError(f"limit needs')],
                 "rows_pure": [_edit("transforms.py", "    return [dict(row) for row in table[:n]]\n", "    return table[:n]\n")]},
        "tests": ("limit", '''
def test_limit_keeps_the_first_rows():
    from rows.transforms import limit

    assert [row["city"] for row in limit(table(), 2)] == ["Oslo", "Bergen"]


def test_a_negative_limit_is_a_rows_error():
    from rows.transforms import limit

    raises_rows_error(limit, table(), -1)


def test_limit_returns_new_rows():
    from rows.transforms import limit

    check_pure(limit, 2)
'''),
    },
    {
        "slug": "sort-missing", "created_at": "2026-03-11T15:30:00Z", "conventions": ["rows_missing", "changelog"],
        "problem_statement": (
            "sort_by fails on a column with gaps\n\n"
            "`sort_by(table, \"people\")` raises `TypeError: '<' not supported between instances of 'NoneType' and "
            "'str'` when a row has no value there. Rows without a value should sort after all the others (in "
            "both directions), keeping their order; the values keep the type they had."),
        "gold": [
            _edit("transforms.py", "    return [dict(row) for row in sorted(table, key=lambda row: row[column], reverse=descending)]\n",
                  "    present = [row for row in table if row.get(column) is not None]\n"
                  "    absent = [row for row in table if row.get(column) is None]\n"
                  "    ordered = sorted(present, key=lambda row: row[column], reverse=descending)\n"
                  "    return [dict(row) for row in ordered + absent]\n"),
            _changelog("sort_by puts rows without a value last instead of failing."),
        ],
        "naive": [
            _edit("transforms.py", "    return [dict(row) for row in sorted(table, key=lambda row: row[column], reverse=descending)]\n",
                  "    present = [dict(row) for row in table if row.get(column) is not None]\n"
                  "    absent = [{**row, column: \"\"} for row in table if row.get(column) is None]\n"
                  "    return sorted(present, key=lambda row: row[column], reverse=descending) + absent\n"),
        ],
        "undo": {"rows_missing": [_edit("transforms.py", "    return [dict(row) for row in ordered + absent]\n",
                                        "    return [dict(row) for row in ordered] + [{**row, column: \"\"} for row in absent]\n")],
                 "changelog": NO_CHANGELOG},
        "tests": ("sort_missing", '''
from rows.transforms import sort_by


@pytest.mark.parametrize("descending", ["no", "yes"])
def test_rows_without_a_value_sort_last(descending):
    cities = [row["city"] for row in sort_by(table(), "people", descending=descending == "yes")]
    assert cities[-1] == "Bergen" and len(cities) == 3


def test_the_missing_value_stays_none():
    assert sort_by(table(), "people")[-1]["people"] is None, (
        "house convention broken (rows): a missing value is None, never ''")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "add-column", "created_at": "2026-03-18T11:45:00Z", "conventions": ["rows_pure", "docs_types"],
        "problem_statement": (
            "Computed columns\n\n"
            "Please add `with_column(table, name, func)` to `rows/transforms.py`: every row gets a column `name` "
            "holding `func(row)`."),
        "gold": [
            _edit("transforms.py", "from rows.io import Row\n", "from typing import Callable\n\nfrom rows.io import Row\n"),
            _append("rows/transforms.py", '''
                def with_column(table: list[Row], name: str, func: Callable[[Row], object]) -> list[Row]:
                    """The rows with a column `name` holding `func(row)` (copies)."""
                    return [{**row, name: func(row)} for row in table]
            '''),
        ],
        "naive": [_append("rows/transforms.py", '''
            def with_column(table, name, func):
                for row in table:
                    row[name] = func(row)
                return table
        ''')],
        "undo": {"rows_pure": [_edit("transforms.py", "    return [{**row, name: func(row)} for row in table]\n",
                                     "    for row in table:\n        row[name] = func(row)\n    return table\n")],
                 "docs_types": [_edit("transforms.py", '    """The rows with a column `name` holding `func(row)` (copies)."""\n', "")]},
        "tests": ("with_column", '''
def test_with_column_adds_the_computed_column():
    from rows.transforms import with_column

    result = with_column(table(), "nordic", lambda row: row["country"] in ("NO", "SE"))
    assert [row["nordic"] for row in result] == [True, True, True]


def test_with_column_leaves_its_input_alone():
    from rows.transforms import with_column

    check_pure(with_column, "n", lambda row: 1)


def test_with_column_is_documented():
    from rows.transforms import with_column

    check_documented(with_column)
'''),
    },
    {
        "slug": "duplicate-header", "created_at": "2026-03-25T09:10:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "A repeated column name loses data\n\n"
            "`read_csv(\"a,b,a\\n1,2,3\\n\")` returns `{\"a\": \"3\", \"b\": \"2\"}`: the first `a` is silently "
            "overwritten. A header that names a column twice should be refused, naming the column."),
        "gold": [
            _edit("io.py", "    header, body = lines[0], [line for line in lines[1:] if line]\n",
                  "    header, body = lines[0], [line for line in lines[1:] if line]\n"
                  "    twice = sorted({name for name in header if header.count(name) > 1})\n"
                  "    if twice:\n        raise ParseError(f\"the header names {twice[0]!r} more than once\")\n"),
            _changelog("read_csv refuses a header that names a column twice."),
        ],
        "naive": [
            _edit("io.py", "    header, body = lines[0], [line for line in lines[1:] if line]\n",
                  "    header, body = lines[0], [line for line in lines[1:] if line]\n"
                  "    if len(set(header)) != len(header):\n        raise Exception(f\"duplicate column in {header}\")\n"),
        ],
        "undo": {"errors": [_edit("io.py", 'raise ParseError(f"the header names', 'raise ValueError(f"the header names')],
                 "changelog": NO_CHANGELOG},
        "tests": ("duplicate_header", '''
def test_a_repeated_column_is_refused_and_named():
    with pytest.raises(Exception) as error:
        read_csv("a,b,a\\n1,2,3\\n")
    assert "a" in str(error.value)


def test_the_refusal_is_a_rows_error():
    raises_rows_error(read_csv, "a,b,a\\n1,2,3\\n")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "drop-duplicates", "created_at": "2026-04-01T10:30:00Z", "conventions": ["logging", "rows_pure"],
        "problem_statement": (
            "Drop repeated rows\n\n"
            "Please add `distinct(table)` to `rows/transforms.py`: the table without rows equal to an earlier "
            "one, in order. How many rows were dropped should be reported (something like `dropped 2 repeated "
            "rows`) so a surprising count gets noticed."),
        "gold": [
            _edit("transforms.py", "from rows.io import Row\n", "import logging\n\nfrom rows.io import Row\n\nlogger = logging.getLogger(__name__)\n"),
            _append("rows/transforms.py", '''
                def distinct(table: list[Row]) -> list[Row]:
                    """The rows without those equal to an earlier one, in order (copies)."""
                    kept: list[Row] = []
                    for row in table:
                        if row not in kept:
                            kept.append(dict(row))
                    if len(kept) < len(table):
                        logger.info("dropped %d repeated rows", len(table) - len(kept))
                    return kept
            '''),
        ],
        "naive": [_append("rows/transforms.py", '''
            def distinct(table):
                kept = []
                for row in table:
                    if row not in kept:
                        kept.append(row)
                print(f"dropped {len(table) - len(kept)} repeated rows")
                return kept
        ''')],
        "undo": {"logging": [_edit("transforms.py", 'logger.info("dropped %d repeated rows", len(table) - len(kept))',
                                   'print(f"dropped {len(table) - len(kept)} repeated rows")')],
                 "rows_pure": [_edit("transforms.py", "            kept.append(dict(row))\n", "            kept.append(row)\n")]},
        "tests": ("distinct", '''
def test_distinct_drops_repeats_and_reports_them(caplog, capsys):
    from rows.transforms import distinct

    caplog.set_level(logging.INFO)
    doubled = table() + table()
    assert [row["city"] for row in distinct(doubled)] == ["Oslo", "Bergen", "Lund"]
    assert "dropped 3" in capsys.readouterr().out + caplog.text


def test_the_count_goes_to_the_rows_logger(caplog, capsys):
    from rows.transforms import distinct

    caplog.set_level(logging.INFO)
    distinct(table() + table())
    check_logged(caplog, capsys, "dropped 3")


def test_distinct_returns_new_rows():
    from rows.transforms import distinct

    check_pure(distinct)
'''),
    },
    {
        "slug": "join", "created_at": "2026-04-08T14:00:00Z", "conventions": ["rows_missing", "docs_types"],
        "problem_statement": (
            "Join two tables\n\n"
            "Please add `left_join(left, right, on)` to `rows/transforms.py`: every row of `left` with the columns "
            "of the first row of `right` whose `on` equals its own. A left row with no match still gets the "
            "right table's columns, left empty."),
        "gold": [_append("rows/transforms.py", '''
            def left_join(left: list[Row], right: list[Row], on: str) -> list[Row]:
                """Each left row with the columns of the first right row matching on `on`; None where none matches."""
                columns = [name for name in (right[0] if right else {}) if name != on]
                first: dict = {}
                for row in right:
                    first.setdefault(row.get(on), row)
                return [{**row, **{name: first.get(row.get(on), {}).get(name) for name in columns}} for row in left]
        ''')],
        "naive": [_append("rows/transforms.py", '''
            def left_join(left, right, on):
                result = []
                for row in left:
                    match = next((r for r in right if r.get(on) == row.get(on)), None)
                    new = dict(row)
                    for name in (right[0] if right else {}):
                        if name != on:
                            new[name] = match[name] if match else ""
                    result.append(new)
                return result
        ''')],
        "undo": {"rows_missing": [_edit("transforms.py", "{name: first.get(row.get(on), {}).get(name) for name in columns}",
                                        "{name: first.get(row.get(on), {}).get(name, \"\") for name in columns}")],
                 "docs_types": [_edit("transforms.py", "def left_join(left: list[Row], right: list[Row], on: str) -> list[Row]:",
                                      "def left_join(left, right, on):")]},
        "tests": ("left_join", '''
COUNTRIES = "country,name\\nNO,Norway\\nDK,Denmark\\n"


def test_left_join_adds_the_matching_columns():
    from rows.transforms import left_join

    joined = left_join(table(), read_csv(COUNTRIES), "country")
    assert joined[0] == {"city": "Oslo", "country": "NO", "people": "700000", "name": "Norway"}
    assert "name" in joined[2] and not joined[2]["name"]


def test_an_unmatched_row_gets_none():
    from rows.transforms import left_join

    assert left_join(table(), read_csv(COUNTRIES), "country")[2]["name"] is None, (
        "house convention broken (rows): a missing value is None, never ''")


def test_left_join_is_documented():
    from rows.transforms import left_join

    check_documented(left_join)
'''),
    },
    {
        "slug": "total-text", "created_at": "2026-04-15T09:20:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "total() on a text column gives a confusing error\n\n"
            "`total(table, \"city\")` fails with `ValueError: could not convert string to float: 'Oslo'`, which "
            "does not say which column or row is at fault. It should fail with a message naming the column and "
            "the row number (counting from 1)."),
        "gold": [
            _edit("stats.py", "from rows.io import Row\n", "from rows.errors import SchemaError\nfrom rows.io import Row\n"),
            _edit("stats.py", "    return sum(float(row[column]) for row in table if row.get(column) is not None)\n",
                  "    result = 0.0\n    for number, row in enumerate(table, 1):\n        if row.get(column) is None:\n"
                  "            continue\n        try:\n            result += float(row[column])\n        except ValueError:\n"
                  "            raise SchemaError(f\"column {column!r} row {number}: not a number: {row[column]!r}\") from None\n"
                  "    return result\n"),
            _changelog("total() names the column and row of a value that is not a number."),
        ],
        "naive": [
            _edit("stats.py", "    return sum(float(row[column]) for row in table if row.get(column) is not None)\n",
                  "    for number, row in enumerate(table, 1):\n        value = row.get(column)\n"
                  "        if value is not None and not value.replace('.', '', 1).isdigit():\n"
                  "            raise TypeError(f\"bad value in column {column} row {number}\")\n"
                  "    return sum(float(row[column]) for row in table if row.get(column) is not None)\n"),
        ],
        "undo": {"errors": [_edit("stats.py", 'raise SchemaError(f"column {column!r} row', 'raise ValueError(f"column {column!r} row')],
                 "changelog": NO_CHANGELOG},
        "tests": ("total_text", '''
from rows.stats import total


def test_the_error_names_the_column_and_row():
    with pytest.raises(Exception) as error:
        total(table(), "city")
    assert "city" in str(error.value) and "1" in str(error.value)
    assert total(table(), "people") == 794000.0


def test_the_error_is_a_rows_error():
    raises_rows_error(total, table(), "city")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "head-text", "created_at": "2026-04-22T11:00:00Z", "conventions": ["docs_types", "changelog"],
        "problem_statement": (
            "Show a table as text\n\n"
            "For quick looks in a terminal, please add `show(table, columns)` to `rows/io.py`: a line with the "
            "columns separated by ` | `, then one such line per row, empty fields shown as `-`, lines joined by "
            "newlines."),
        "gold": [
            _append("rows/io.py", '''
                def show(table: list[Row], columns: list[str]) -> str:
                    """`table`'s `columns` as text: a ` | `-separated header, then one line per row ('-' where empty)."""
                    lines = [" | ".join(columns)]
                    lines += [" | ".join("-" if row.get(c) is None else str(row[c]) for c in columns) for row in table]
                    return "\\n".join(lines)
            '''),
            _changelog("show() renders a table as text for a terminal."),
        ],
        "naive": [_append("rows/io.py", '''
            def show(table, columns):
                out = " | ".join(columns)
                for row in table:
                    out += "\\n" + " | ".join(str(row.get(c)) if row.get(c) is not None else "-" for c in columns)
                return out
        ''')],
        "undo": {"docs_types": [_edit("io.py", "def show(table: list[Row], columns: list[str]) -> str:", "def show(table, columns):")],
                 "changelog": NO_CHANGELOG},
        "tests": ("show", '''
def test_show_renders_the_table():
    from rows.io import show

    assert show(table()[:2], ["city", "people"]) == "city | people\\nOslo | 700000\\nBergen | -"


def test_show_is_documented():
    from rows.io import show

    check_documented(show)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
]
