"""Exporters turn a ledger into text; each is registered under a format name."""

import json
from typing import Callable

EXPORTERS: dict[str, Callable] = {}


def register(name: str) -> Callable:
    """Decorator: make an exporter available as export(ledger, name)."""

    def add(func: Callable) -> Callable:
        EXPORTERS[name] = func
        return func

    return add


@register("json")
def export_json(ledger) -> str:
    """Balances as a JSON object {"name": "12.50"}, sorted by name."""
    return json.dumps({name: str(account.balance) for name, account in sorted(ledger.accounts.items())})


def export(ledger, fmt: str) -> str:
    """The ledger in format `fmt`."""
    return EXPORTERS[fmt](ledger)
