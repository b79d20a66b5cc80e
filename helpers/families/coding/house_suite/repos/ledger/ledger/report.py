"""Human-readable reports."""

from ledger.money import format_amount


def summary(ledger) -> str:
    """One line per account: 'name: 1,234.50'."""
    return "\n".join(f"{name}: {format_amount(account.balance)}" for name, account in sorted(ledger.accounts.items()))
