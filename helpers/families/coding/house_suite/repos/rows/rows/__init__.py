"""rows: small data processing on tables held as lists of dicts (the house suite's data package)."""

import logging

logger = logging.getLogger("rows")

from rows.errors import ParseError, RowsError, SchemaError  # noqa: E402
from rows.io import read_csv, write_csv  # noqa: E402
from rows.stats import count, total  # noqa: E402
from rows.transforms import select, sort_by, where  # noqa: E402

__all__ = ["ParseError", "RowsError", "SchemaError", "count", "logger", "read_csv", "select", "sort_by", "total",
           "where", "write_csv"]
