from decimal import Decimal

import pytest

from ledger import Ledger, NotFoundError
from ledger.exporters import export


def make_ledger():
    ledger = Ledger()
    ledger.open_account("alice")
    ledger.deposit("alice", "10")
    return ledger


def test_deposit_and_withdraw():
    ledger = make_ledger()
    assert ledger.withdraw("alice", "3.25") == Decimal("6.75")


def test_unknown_account():
    with pytest.raises(NotFoundError):
        make_ledger().balance("bob")


def test_json_export():
    assert export(make_ledger(), "json") == '{"alice": "10.00"}'
