"""Amounts of money are Decimals with two places."""

from decimal import Decimal, InvalidOperation

from ledger.errors import ValidationError

CENT = Decimal("0.01")


def parse_amount(text: str | int | Decimal) -> Decimal:
    """'12.5' -> Decimal('12.50'). Raises ValidationError for anything that is not an amount."""
    try:
        value = Decimal(str(text).strip())
    except InvalidOperation:
        raise ValidationError(f"not an amount: {text!r}") from None
    return value.quantize(CENT)


def format_amount(value: Decimal) -> str:
    """Decimal('1234.5') -> '1,234.50'."""
    return f"{value:,.2f}"
