"""ledger: a small account ledger (the house suite's practice repository)."""

import logging

logger = logging.getLogger("ledger")

from ledger.errors import LedgerError, NotFoundError, ValidationError  # noqa: E402
from ledger.money import format_amount, parse_amount  # noqa: E402
from ledger.accounts import Account, Ledger  # noqa: E402

__all__ = ["Account", "Ledger", "LedgerError", "NotFoundError", "ValidationError", "format_amount",
           "logger", "parse_amount"]
