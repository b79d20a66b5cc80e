"""Every error the ledger raises derives from LedgerError."""


class LedgerError(Exception):
    """Base class of the ledger's errors."""


class ValidationError(LedgerError):
    """Bad input: an amount, an account name, a format."""


class NotFoundError(LedgerError):
    """An account that does not exist."""
