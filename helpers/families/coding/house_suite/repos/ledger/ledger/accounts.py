"""Accounts and the ledger that holds them."""

from dataclasses import dataclass, field
from decimal import Decimal

from ledger.errors import NotFoundError, ValidationError
from ledger.money import parse_amount


@dataclass
class Account:
    name: str
    balance: Decimal = Decimal("0.00")
    history: list[tuple[str, Decimal]] = field(default_factory=list)


class Ledger:
    """Named accounts with deposits and withdrawals."""

    def __init__(self) -> None:
        self.accounts: dict[str, Account] = {}

    def open_account(self, name: str) -> Account:
        """Open an empty account; names are unique."""
        if name in self.accounts:
            raise ValidationError(f"account {name!r} already exists")
        self.accounts[name] = Account(name)
        return self.accounts[name]

    def get(self, name: str) -> Account:
        """The account called `name`."""
        try:
            return self.accounts[name]
        except KeyError:
            raise NotFoundError(f"no account {name!r}") from None

    def deposit(self, name: str, amount: str | Decimal) -> Decimal:
        """Add `amount` to the account; returns the new balance."""
        value = parse_amount(amount)
        account = self.get(name)
        account.balance += value
        account.history.append(("deposit", value))
        return account.balance

    def withdraw(self, name: str, amount: str | Decimal) -> Decimal:
        """Take `amount` from the account; returns the new balance."""
        value = parse_amount(amount)
        account = self.get(name)
        account.balance -= value
        account.history.append(("withdraw", value))
        return account.balance

    def balance(self, name: str) -> Decimal:
        """The account's balance."""
        return self.get(name).balance
