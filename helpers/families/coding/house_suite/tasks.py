"""The house suite's tasks: each an issue on the ledger repository, its gold and naive fixes as edits, and
hidden tests that check the fix AND the house conventions the issue does not mention.

An edit is {"path", "find", "replace"} (`find` must occur once) or {"path", "create"}. Patches are made
from the edits with git when the suite is built (helpers.families.coding.house_suite.build).
"""

# Helpers every hidden test file starts with. Their messages name the convention a failure breaks.
# The checks of two team-wide conventions (a changelog entry; type hints and a docstring), word for word the
# same in every library's hidden tests (tasks_todo and tasks_rows take them from here).
TEAM_CHECKS = '''\
def check_changelog():
    section = (ROOT / "CHANGELOG.md").read_text().split("## Unreleased", 1)[1].split("\\n## ", 1)[0]
    entries = [line for line in section.splitlines() if line.strip().startswith("- ")]
    assert entries, "house convention broken: every change needs an entry under '## Unreleased' in CHANGELOG.md"


def check_documented(func):
    signature = inspect.signature(func)
    bare = [name for name, p in signature.parameters.items() if name != "self" and p.annotation is p.empty]
    assert not bare and signature.return_annotation is not signature.empty, (
        f"house convention broken: public function {func.__qualname__} needs type hints (missing: {bare or 'return'})")
    assert inspect.getdoc(func), f"house convention broken: public function {func.__qualname__} needs a docstring"
'''

CHECKS = '''\
import inspect
import logging
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import pytest

from ledger import Ledger, LedgerError

ROOT = Path(__file__).resolve().parents[1]


def make_ledger():
    ledger = Ledger()
    ledger.open_account("alice")
    ledger.deposit("alice", "10")
    return ledger


@contextmanager
def raises_ledger_error():
    try:
        yield
    except LedgerError:
        return
    except Exception as error:
        raise AssertionError("house convention broken: raise the package's own errors (subclasses of "
                             f"LedgerError), not {type(error).__name__}") from None
    raise AssertionError("expected an error, none was raised")


''' + TEAM_CHECKS + '''

def check_logged(caplog, capsys, fragment):
    printed = capsys.readouterr()
    assert not printed.out and not printed.err, (
        f"house convention broken: report through the 'ledger' logger, never print() (printed {printed.out!r})")
    assert any(r.name.startswith("ledger") and fragment in r.getMessage() for r in caplog.records), (
        f"house convention broken: expected a log record mentioning {fragment!r} on the 'ledger' logger")
'''


def _changelog(entry):
    return {"path": "CHANGELOG.md", "find": "## Unreleased\n", "replace": f"## Unreleased\n- {entry}\n"}


ACCOUNTS_LOGGER = {"path": "ledger/accounts.py", "find": "from dataclasses import dataclass, field\n",
                   "replace": "import logging\nfrom dataclasses import dataclass, field\n"}
ACCOUNTS_LOGGER_DEF = {"path": "ledger/accounts.py", "find": "from ledger.money import parse_amount\n",
                       "replace": "from ledger.money import parse_amount\n\nlogger = logging.getLogger(__name__)\n"}

TASKS = [
    {
        "slug": "overdraft", "created_at": "2026-01-05T09:12:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "Withdrawing more than the balance makes it negative\n\n"
            "`ledger.withdraw(\"alice\", \"50\")` on an account holding 10.00 leaves it at -40.00. A withdrawal "
            "larger than the balance should be refused, and the balance left as it was."),
        "gold": [
            {"path": "ledger/errors.py", "find": 'class NotFoundError(LedgerError):\n    """An account that does not exist."""\n',
             "replace": 'class NotFoundError(LedgerError):\n    """An account that does not exist."""\n\n\n'
                        'class InsufficientFundsError(LedgerError):\n    """A withdrawal larger than the balance."""\n'},
            {"path": "ledger/accounts.py", "find": "from ledger.errors import NotFoundError, ValidationError\n",
             "replace": "from ledger.errors import InsufficientFundsError, NotFoundError, ValidationError\n"},
            {"path": "ledger/accounts.py", "find": "        account = self.get(name)\n        account.balance -= value\n",
             "replace": "        account = self.get(name)\n        if value > account.balance:\n"
                        "            raise InsufficientFundsError(f\"cannot withdraw {value} from {name!r}: balance is {account.balance}\")\n"
                        "        account.balance -= value\n"},
            _changelog("Withdrawals larger than the balance are refused (InsufficientFundsError)."),
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": "        account = self.get(name)\n        account.balance -= value\n",
             "replace": "        account = self.get(name)\n        if value > account.balance:\n"
                        "            raise ValueError(\"insufficient funds\")\n        account.balance -= value\n"},
        ],
        "tests": ("overdraft", '''
def test_an_overdraft_is_refused_and_the_balance_kept():
    ledger = make_ledger()
    with pytest.raises(Exception):
        ledger.withdraw("alice", "50")
    assert ledger.balance("alice") == Decimal("10.00")


def test_an_overdraft_raises_a_ledger_error():
    with raises_ledger_error():
        make_ledger().withdraw("alice", "50")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "negative-deposit", "created_at": "2026-01-12T10:40:00Z", "conventions": ["errors"],
        "problem_statement": (
            "Deposits accept negative amounts\n\n"
            "`ledger.deposit(\"alice\", \"-5\")` lowers the balance, and a deposit of 0 is recorded in the history. "
            "A deposit must be a positive amount; anything else should be rejected without touching the account."),
        "gold": [
            {"path": "ledger/accounts.py", "find": "        value = parse_amount(amount)\n        account = self.get(name)\n        account.balance += value\n",
             "replace": "        value = parse_amount(amount)\n        if value <= 0:\n"
                        "            raise ValidationError(f\"a deposit must be positive, not {value}\")\n"
                        "        account = self.get(name)\n        account.balance += value\n"},
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": "        value = parse_amount(amount)\n        account = self.get(name)\n        account.balance += value\n",
             "replace": "        value = parse_amount(amount)\n        if value <= 0:\n"
                        "            raise ValueError(\"deposit must be positive\")\n"
                        "        account = self.get(name)\n        account.balance += value\n"},
        ],
        "tests": ("negative_deposit", '''
@pytest.mark.parametrize("amount", ["-5", "0"])
def test_non_positive_deposits_are_rejected_and_change_nothing(amount):
    ledger = make_ledger()
    with pytest.raises(Exception):
        ledger.deposit("alice", amount)
    assert ledger.balance("alice") == Decimal("10.00") and len(ledger.get("alice").history) == 1


def test_a_rejected_deposit_raises_a_ledger_error():
    with raises_ledger_error():
        make_ledger().deposit("alice", "-5")
'''),
    },
    {
        "slug": "csv-export", "created_at": "2026-01-19T14:05:00Z", "conventions": ["registry", "docs_types"],
        "problem_statement": (
            "Export balances as CSV\n\n"
            "We need a CSV export for the accounting team: `export_csv(ledger)` in `ledger/exporters.py`, returning "
            "a `name,balance` header and one line per account sorted by name, e.g. `name,balance\\nalice,10.00\\n`."),
        "gold": [
            {"path": "ledger/exporters.py", "find": "from typing import Callable\n",
             "replace": "from typing import Callable\n\nfrom ledger.accounts import Ledger\n"},
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\n@register("csv")\ndef export_csv(ledger: Ledger) -> str:\n'
                        '    """Balances as CSV: a `name,balance` header, then one row per account sorted by name."""\n'
                        '    rows = ["name,balance"] + [f"{name},{account.balance}" for name, account in sorted(ledger.accounts.items())]\n'
                        '    return "\\n".join(rows) + "\\n"\n\n\ndef export(ledger, fmt: str) -> str:'},
        ],
        "naive": [
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\ndef export_csv(ledger):\n    rows = ["name,balance"]\n'
                        '    for name in sorted(ledger.accounts):\n        rows.append(f"{name},{ledger.accounts[name].balance}")\n'
                        '    return "\\n".join(rows) + "\\n"\n\n\ndef export(ledger, fmt: str) -> str:'},
        ],
        "tests": ("csv_export", '''
from ledger.exporters import EXPORTERS


def test_csv_lists_every_balance_under_a_header():
    from ledger.exporters import export_csv

    ledger = make_ledger()
    ledger.open_account("bob")
    assert export_csv(ledger) == "name,balance\\nalice,10.00\\nbob,0.00\\n"


def test_the_csv_exporter_is_registered():
    from ledger.exporters import export_csv

    assert EXPORTERS.get("csv") is export_csv, "house convention broken: new exporters join EXPORTERS via @register"


def test_the_csv_exporter_is_documented():
    from ledger.exporters import export_csv

    check_documented(export_csv)
'''),
    },
    {
        "slug": "transfer", "created_at": "2026-01-26T08:30:00Z", "conventions": ["docs_types", "changelog"],
        "problem_statement": (
            "Transfers between accounts\n\n"
            "Moving money between two accounts takes a withdraw and a deposit today, and a typo in the second name "
            "loses the money. Please add `Ledger.transfer(source, target, amount)` that moves the amount and returns "
            "the source's new balance; an unknown target must not take money from the source."),
        "gold": [
            {"path": "ledger/accounts.py", "find": "    def balance(self, name: str) -> Decimal:",
             "replace": "    def transfer(self, source: str, target: str, amount: str | Decimal) -> Decimal:\n"
                        '        """Move `amount` from `source` to `target`; returns the source\'s new balance."""\n'
                        "        self.get(target)  # an unknown target fails before any money moves\n"
                        "        self.withdraw(source, amount)\n        self.deposit(target, amount)\n"
                        "        return self.balance(source)\n\n    def balance(self, name: str) -> Decimal:"},
            _changelog("Ledger.transfer moves money between two accounts."),
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": "    def balance(self, name: str) -> Decimal:",
             "replace": "    def transfer(self, source, target, amount):\n        self.get(target)\n"
                        "        self.withdraw(source, amount)\n        self.deposit(target, amount)\n"
                        "        return self.balance(source)\n\n    def balance(self, name: str) -> Decimal:"},
        ],
        "tests": ("transfer", '''
def test_a_transfer_moves_the_amount():
    ledger = make_ledger()
    ledger.open_account("bob")
    assert ledger.transfer("alice", "bob", "4") == Decimal("6.00")
    assert ledger.balance("bob") == Decimal("4.00")


def test_an_unknown_target_takes_nothing():
    ledger = make_ledger()
    with raises_ledger_error():
        ledger.transfer("alice", "nobody", "4")
    assert ledger.balance("alice") == Decimal("10.00")


def test_transfer_is_documented():
    check_documented(Ledger.transfer)


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "large-withdrawal", "created_at": "2026-02-02T16:20:00Z", "conventions": ["logging"],
        "problem_statement": (
            "Warn about large withdrawals\n\n"
            "Operations wants to notice withdrawals over 10,000. They should still go through, but produce a "
            "warning that names the account and the amount."),
        "gold": [
            ACCOUNTS_LOGGER, ACCOUNTS_LOGGER_DEF,
            {"path": "ledger/accounts.py", "find": "        account.balance -= value\n",
             "replace": "        if value > LARGE_WITHDRAWAL:\n"
                        "            logger.warning(\"large withdrawal of %s from %r\", value, name)\n"
                        "        account.balance -= value\n"},
            {"path": "ledger/accounts.py", "find": "from ledger.money import parse_amount\n",
             "replace": "from ledger.money import parse_amount\n\nLARGE_WITHDRAWAL = Decimal(\"10000\")\n"},
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": "        account.balance -= value\n",
             "replace": "        if value > 10000:\n            print(f\"Warning: large withdrawal of {value} from {name}\")\n"
                        "        account.balance -= value\n"},
        ],
        "tests": ("large_withdrawal", '''
def test_a_large_withdrawal_goes_through_with_a_warning(caplog, capsys):
    caplog.set_level(logging.INFO)
    ledger = make_ledger()
    ledger.deposit("alice", "20000")
    assert ledger.withdraw("alice", "15000") == Decimal("5010.00")
    shown = capsys.readouterr().out + caplog.text
    assert "alice" in shown and "15000" in shown


def test_the_warning_goes_to_the_ledger_logger(caplog, capsys):
    caplog.set_level(logging.INFO)
    ledger = make_ledger()
    ledger.deposit("alice", "20000")
    ledger.withdraw("alice", "15000")
    check_logged(caplog, capsys, "alice")
'''),
    },
    {
        "slug": "thousands-separator", "created_at": "2026-02-09T11:00:00Z", "conventions": ["decimal", "changelog"],
        "problem_statement": (
            "Amounts with thousands separators don't parse\n\n"
            "`parse_amount(\"1,234.50\")` raises ValidationError, although `format_amount` writes amounts exactly "
            "like that, so a report can't be read back. Commas between digit groups should be accepted."),
        "gold": [
            {"path": "ledger/money.py", "find": "        value = Decimal(str(text).strip())\n",
             "replace": "        value = Decimal(str(text).strip().replace(\",\", \"\"))\n"},
            _changelog("parse_amount accepts thousands separators (\"1,234.50\")."),
        ],
        "naive": [
            {"path": "ledger/money.py", "find": "    try:\n        value = Decimal(str(text).strip())\n",
             "replace": "    if isinstance(text, str) and \",\" in text:\n        return float(text.replace(\",\", \"\"))\n"
                        "    try:\n        value = Decimal(str(text).strip())\n"},
        ],
        "tests": ("thousands_separator", '''
from ledger.money import format_amount, parse_amount


def test_amounts_with_separators_parse():
    assert parse_amount("1,234.50") == Decimal("1234.50")
    assert parse_amount(format_amount(Decimal("1234.5"))) == Decimal("1234.50")


def test_parsed_amounts_are_decimals():
    value = parse_amount("1,234.50")
    assert isinstance(value, Decimal) and str(value) == "1234.50", (
        "house convention broken: money is decimal.Decimal, never float")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "interest", "created_at": "2026-02-16T09:45:00Z", "conventions": ["decimal", "docs_types"],
        "problem_statement": (
            "Pay interest on an account\n\n"
            "Please add `apply_interest(ledger, name, rate)` in a new module `ledger/interest.py`: it pays `rate` "
            "(e.g. 0.015 for 1.5 %) times the balance into the account, rounded to the cent, and returns the "
            "interest paid."),
        "gold": [
            {"path": "ledger/interest.py", "create":
                '"""Interest on account balances."""\n\nfrom decimal import ROUND_HALF_EVEN, Decimal\n\n'
                "from ledger.accounts import Ledger\nfrom ledger.money import CENT\n\n\n"
                "def apply_interest(ledger: Ledger, name: str, rate: str | float | Decimal) -> Decimal:\n"
                '    """Pay `rate` times the balance of `name` into it, rounded to the cent; returns the interest paid."""\n'
                "    interest = (ledger.balance(name) * Decimal(str(rate))).quantize(CENT, ROUND_HALF_EVEN)\n"
                "    ledger.deposit(name, interest)\n    return interest\n"},
        ],
        "naive": [
            {"path": "ledger/interest.py", "create":
                "def apply_interest(ledger, name, rate):\n"
                "    interest = round(float(ledger.balance(name)) * rate, 2)\n"
                "    ledger.deposit(name, str(interest))\n    return interest\n"},
        ],
        "tests": ("interest", '''
def test_interest_is_paid_into_the_account():
    from ledger.interest import apply_interest

    ledger = make_ledger()
    ledger.deposit("alice", "990")
    assert apply_interest(ledger, "alice", 0.015) == Decimal("15.00")
    assert ledger.balance("alice") == Decimal("1015.00")


def test_interest_is_a_decimal():
    from ledger.interest import apply_interest

    paid = apply_interest(make_ledger(), "alice", 0.015)
    assert isinstance(paid, Decimal), "house convention broken: money is decimal.Decimal, never float"


def test_apply_interest_is_documented():
    from ledger.interest import apply_interest

    check_documented(apply_interest)
'''),
    },
    {
        "slug": "markdown-export", "created_at": "2026-02-23T13:10:00Z", "conventions": ["registry", "changelog"],
        "problem_statement": (
            "Markdown table export\n\n"
            "For our wiki we'd like `export_markdown(ledger)` in `ledger/exporters.py`: a table with the header "
            "`| account | balance |`, the line `| --- | ---: |`, then `| alice | 10.00 |` per account, sorted by "
            "name, lines joined by newlines."),
        "gold": [
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\n@register("markdown")\ndef export_markdown(ledger) -> str:\n'
                        '    """Balances as a Markdown table, one row per account sorted by name."""\n'
                        '    rows = ["| account | balance |", "| --- | ---: |"]\n'
                        '    rows += [f"| {name} | {account.balance} |" for name, account in sorted(ledger.accounts.items())]\n'
                        '    return "\\n".join(rows)\n\n\ndef export(ledger, fmt: str) -> str:'},
            _changelog("Markdown table export (format \"markdown\")."),
        ],
        "naive": [
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\ndef export_markdown(ledger):\n    rows = ["| account | balance |", "| --- | ---: |"]\n'
                        '    for name in sorted(ledger.accounts):\n        rows.append(f"| {name} | {ledger.accounts[name].balance} |")\n'
                        '    return "\\n".join(rows)\n\n\ndef export(ledger, fmt: str) -> str:'},
        ],
        "tests": ("markdown_export", '''
from ledger.exporters import EXPORTERS


def test_markdown_is_a_table_of_balances():
    from ledger.exporters import export_markdown

    assert export_markdown(make_ledger()) == "| account | balance |\\n| --- | ---: |\\n| alice | 10.00 |"


def test_the_markdown_exporter_is_registered():
    from ledger.exporters import export_markdown

    assert EXPORTERS.get("markdown") is export_markdown, "house convention broken: new exporters join EXPORTERS via @register"


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "close-account", "created_at": "2026-03-02T15:55:00Z", "conventions": ["errors", "logging"],
        "problem_statement": (
            "Closing accounts\n\n"
            "There is no way to close an account. Please add `Ledger.close_account(name)`: it removes the account "
            "when its balance is zero; closing an account that still holds money must fail and keep it. Each "
            "closure should leave a trace for the audit trail, naming the account."),
        "gold": [
            ACCOUNTS_LOGGER, ACCOUNTS_LOGGER_DEF,
            {"path": "ledger/accounts.py", "find": "    def balance(self, name: str) -> Decimal:",
             "replace": "    def close_account(self, name: str) -> None:\n"
                        '        """Remove an empty account; refuses (ValidationError) while it holds money."""\n'
                        "        account = self.get(name)\n        if account.balance != 0:\n"
                        "            raise ValidationError(f\"account {name!r} still holds {account.balance}\")\n"
                        "        del self.accounts[name]\n        logger.info(\"closed account %r\", name)\n\n"
                        "    def balance(self, name: str) -> Decimal:"},
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": "    def balance(self, name: str) -> Decimal:",
             "replace": "    def close_account(self, name):\n        if self.get(name).balance != 0:\n"
                        "            raise Exception(\"balance is not zero\")\n        del self.accounts[name]\n"
                        "        print(f\"closed account {name}\")\n\n    def balance(self, name: str) -> Decimal:"},
        ],
        "tests": ("close_account", '''
def test_an_empty_account_closes_with_a_trace(caplog, capsys):
    caplog.set_level(logging.INFO)
    ledger = make_ledger()
    ledger.open_account("bob")
    ledger.close_account("bob")
    assert "bob" not in ledger.accounts
    assert "bob" in capsys.readouterr().out + caplog.text


def test_an_account_holding_money_stays_open():
    ledger = make_ledger()
    with pytest.raises(Exception):
        ledger.close_account("alice")
    assert ledger.balance("alice") == Decimal("10.00")


def test_refusing_to_close_raises_a_ledger_error():
    with raises_ledger_error():
        make_ledger().close_account("alice")


def test_closures_go_to_the_ledger_logger(caplog, capsys):
    caplog.set_level(logging.INFO)
    ledger = make_ledger()
    ledger.open_account("bob")
    ledger.close_account("bob")
    check_logged(caplog, capsys, "bob")
'''),
    },
    {
        "slug": "unknown-format", "created_at": "2026-03-09T10:25:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "Unknown export format gives a bare KeyError\n\n"
            "`export(ledger, \"xml\")` fails with `KeyError: 'xml'`, which tells the user nothing. Asking for an "
            "unknown format should fail with a message that lists the formats available."),
        "gold": [
            {"path": "ledger/exporters.py", "find": "from typing import Callable\n",
             "replace": "from typing import Callable\n\nfrom ledger.errors import ValidationError\n"},
            {"path": "ledger/exporters.py", "find": "    return EXPORTERS[fmt](ledger)\n",
             "replace": "    if fmt not in EXPORTERS:\n"
                        "        raise ValidationError(f\"unknown format {fmt!r}; available: {', '.join(sorted(EXPORTERS))}\")\n"
                        "    return EXPORTERS[fmt](ledger)\n"},
            _changelog("export() names the available formats when asked for an unknown one."),
        ],
        "naive": [
            {"path": "ledger/exporters.py", "find": "    return EXPORTERS[fmt](ledger)\n",
             "replace": "    if fmt not in EXPORTERS:\n"
                        "        raise ValueError(f\"unknown format {fmt}, available: {list(EXPORTERS)}\")\n"
                        "    return EXPORTERS[fmt](ledger)\n"},
        ],
        "tests": ("unknown_format", '''
from ledger.exporters import export


def test_an_unknown_format_lists_the_available_ones():
    with pytest.raises(Exception) as error:
        export(make_ledger(), "xml")
    assert "json" in str(error.value)


def test_an_unknown_format_raises_a_ledger_error():
    with raises_ledger_error():
        export(make_ledger(), "xml")


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "csv-import", "created_at": "2026-03-16T12:00:00Z", "conventions": ["logging", "docs_types"],
        "problem_statement": (
            "Import deposits from CSV\n\n"
            "Please add `import_csv(ledger, text)` in a new module `ledger/importers.py`: each line `name,amount` "
            "deposits the amount into the account (opening it if needed). Malformed lines are skipped with a "
            "warning that quotes the line. It returns the number of lines imported."),
        "gold": [
            {"path": "ledger/importers.py", "create":
                '"""Importing deposits from CSV text."""\n\nimport logging\n\nfrom ledger.accounts import Ledger\n'
                "from ledger.errors import LedgerError\nfrom ledger.money import parse_amount\n\n"
                "logger = logging.getLogger(__name__)\n\n\n"
                "def import_csv(ledger: Ledger, text: str) -> int:\n"
                '    """Deposit each `name,amount` line of `text`, opening accounts as needed; malformed lines are\n'
                '    skipped with a warning. Returns the number of lines imported."""\n'
                "    imported = 0\n    for line in text.splitlines():\n        if not line.strip():\n            continue\n"
                "        name, _, amount = (part.strip() for part in line.partition(\",\"))\n        try:\n"
                "            value = parse_amount(amount)\n        except LedgerError:\n"
                "            logger.warning(\"skipping malformed line %r\", line)\n            continue\n"
                "        if name not in ledger.accounts:\n            ledger.open_account(name)\n"
                "        ledger.deposit(name, value)\n        imported += 1\n    return imported\n"},
        ],
        "naive": [
            {"path": "ledger/importers.py", "create":
                "def import_csv(ledger, text):\n    count = 0\n    for line in text.splitlines():\n"
                "        if not line.strip():\n            continue\n        parts = line.split(\",\")\n"
                "        try:\n            name, amount = parts[0].strip(), str(float(parts[1]))\n"
                "        except (IndexError, ValueError):\n            print(f\"skipping bad line {line!r}\")\n"
                "            continue\n        if name not in ledger.accounts:\n            ledger.open_account(name)\n"
                "        ledger.deposit(name, amount)\n        count += 1\n    return count\n"},
        ],
        "tests": ("csv_import", '''
TEXT = "alice,5\\nbob,2.50\\nnot a line\\n"


def test_valid_lines_are_deposited_and_bad_ones_reported(caplog, capsys):
    from ledger.importers import import_csv

    caplog.set_level(logging.INFO)
    ledger = make_ledger()
    assert import_csv(ledger, TEXT) == 2
    assert ledger.balance("alice") == Decimal("15.00") and ledger.balance("bob") == Decimal("2.50")
    assert "not a line" in capsys.readouterr().out + caplog.text


def test_skipped_lines_go_to_the_ledger_logger(caplog, capsys):
    from ledger.importers import import_csv

    caplog.set_level(logging.INFO)
    import_csv(make_ledger(), TEXT)
    check_logged(caplog, capsys, "not a line")


def test_import_csv_is_documented():
    from ledger.importers import import_csv

    check_documented(import_csv)
'''),
    },
    {
        "slug": "totals-export", "created_at": "2026-03-23T09:05:00Z", "conventions": ["registry", "docs_types"],
        "problem_statement": (
            "Export the total of all balances\n\n"
            "Finance only needs one number. Please add `export_totals(ledger)` in `ledger/exporters.py`, returning "
            "a single line `total: 1,234.50` with the sum of all balances, formatted like `format_amount` does."),
        "gold": [
            {"path": "ledger/exporters.py", "find": "import json\nfrom typing import Callable\n",
             "replace": "import json\nfrom decimal import Decimal\nfrom typing import Callable\n\n"
                        "from ledger.accounts import Ledger\nfrom ledger.money import format_amount\n"},
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\n@register("totals")\ndef export_totals(ledger: Ledger) -> str:\n'
                        '    """One line with the sum of all balances: `total: 1,234.50`."""\n'
                        '    total = sum((account.balance for account in ledger.accounts.values()), Decimal("0.00"))\n'
                        '    return f"total: {format_amount(total)}"\n\n\ndef export(ledger, fmt: str) -> str:'},
        ],
        "naive": [
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\ndef export_totals(ledger):\n    total = sum(float(a.balance) for a in ledger.accounts.values())\n'
                        '    return f"total: {total:,.2f}"\n\n\ndef export(ledger, fmt: str) -> str:'},
        ],
        "tests": ("totals_export", '''
from ledger.exporters import EXPORTERS


def test_totals_sum_every_balance():
    from ledger.exporters import export_totals

    ledger = make_ledger()
    ledger.open_account("bob")
    ledger.deposit("bob", "1224.50")
    assert export_totals(ledger) == "total: 1,234.50"


def test_the_totals_exporter_is_registered():
    from ledger.exporters import export_totals

    assert EXPORTERS.get("totals") is export_totals, "house convention broken: new exporters join EXPORTERS via @register"


def test_export_totals_is_documented():
    from ledger.exporters import export_totals

    check_documented(export_totals)
'''),
    },
]

TASKS += [
    {
        "slug": "html-export", "created_at": "2026-03-30T10:20:00Z", "conventions": ["registry", "changelog"],
        "problem_statement": (
            "HTML table export\n\n"
            "The intranet page wants the balances as HTML. Please add `export_html(ledger)` in "
            "`ledger/exporters.py`: `<table>`, a header row `<tr><th>account</th><th>balance</th></tr>`, then "
            "`<tr><td>alice</td><td>10.00</td></tr>` per account sorted by name, then `</table>`, all on one line. "
            "Account names must be HTML-escaped."),
        "gold": [
            {"path": "ledger/exporters.py", "find": "import json\n", "replace": "import html\nimport json\n"},
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\n@register("html")\ndef export_html(ledger) -> str:\n'
                        '    """Balances as one line of HTML table, one row per account sorted by name (names escaped)."""\n'
                        '    rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{account.balance}</td></tr>"\n'
                        '                   for name, account in sorted(ledger.accounts.items()))\n'
                        '    return f"<table><tr><th>account</th><th>balance</th></tr>{rows}</table>"\n\n\n'
                        'def export(ledger, fmt: str) -> str:'},
            _changelog("HTML table export (format \"html\")."),
        ],
        "naive": [
            {"path": "ledger/exporters.py", "find": "\n\ndef export(ledger, fmt: str) -> str:",
             "replace": '\n\ndef export_html(ledger):\n    import html\n    out = "<table><tr><th>account</th><th>balance</th></tr>"\n'
                        '    for name in sorted(ledger.accounts):\n'
                        '        out += f"<tr><td>{html.escape(name)}</td><td>{ledger.accounts[name].balance}</td></tr>"\n'
                        '    return out + "</table>"\n\n\ndef export(ledger, fmt: str) -> str:'},
        ],
        "tests": ("html_export", '''
from ledger.exporters import EXPORTERS


def test_html_is_a_table_of_balances_with_escaped_names():
    from ledger.exporters import export_html

    ledger = make_ledger()
    ledger.open_account("<b>")
    assert export_html(ledger) == ("<table><tr><th>account</th><th>balance</th></tr><tr><td>&lt;b&gt;</td><td>0.00</td></tr>"
                                   "<tr><td>alice</td><td>10.00</td></tr></table>")


def test_the_html_exporter_is_registered():
    from ledger.exporters import export_html

    assert EXPORTERS.get("html") is export_html, "house convention broken: new exporters join EXPORTERS via @register"


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
    {
        "slug": "split-amount", "created_at": "2026-04-06T09:00:00Z", "conventions": ["decimal", "docs_types"],
        "problem_statement": (
            "Split a bill evenly\n\n"
            "Please add `split_amount(amount, parts)` to `ledger/money.py`: `parts` amounts in whole cents that add "
            "up exactly to `amount`, the first ones taking the odd cents: `split_amount(\"10\", 3)` gives 3.34, "
            "3.33 and 3.33."),
        "gold": [
            {"path": "ledger/money.py", "find": "\n\ndef format_amount(",
             "replace": "\n\ndef split_amount(amount: str | int | Decimal, parts: int) -> list[Decimal]:\n"
                        '    """`parts` amounts of whole cents adding up to `amount`; the first ones take the odd cents."""\n'
                        "    cents = int(parse_amount(amount) / CENT)\n    base, extra = divmod(cents, parts)\n"
                        "    return [(base + (1 if i < extra else 0)) * CENT for i in range(parts)]\n\n\ndef format_amount("},
        ],
        "naive": [
            {"path": "ledger/money.py", "find": "\n\ndef format_amount(",
             "replace": "\n\ndef split_amount(amount, parts):\n    cents = round(float(amount) * 100)\n"
                        "    base, extra = divmod(cents, parts)\n"
                        "    return [(base + (1 if i < extra else 0)) / 100 for i in range(parts)]\n\n\ndef format_amount("},
        ],
        "tests": ("split_amount", '''
from ledger.money import split_amount


def test_the_parts_add_up_with_the_odd_cents_first():
    assert [str(part) for part in split_amount("10", 3)] == ["3.34", "3.33", "3.33"]
    assert [str(part) for part in split_amount("0.05", 2)] == ["0.03", "0.02"]


def test_the_parts_are_decimals():
    parts = split_amount("10", 3)
    assert all(isinstance(part, Decimal) for part in parts) and sum(parts) == Decimal("10.00"), (
        "house convention broken: money is decimal.Decimal, never float")


def test_split_amount_is_documented():
    check_documented(split_amount)
'''),
    },
    {
        "slug": "rename-account", "created_at": "2026-04-13T14:30:00Z", "conventions": ["errors", "logging"],
        "problem_statement": (
            "Renaming an account\n\n"
            "Please add `Ledger.rename_account(old, new)`: the account keeps its balance and history under the new "
            "name. Renaming onto a name that is already taken must fail and change nothing. Each rename should "
            "leave a trace for the audit trail, naming both names."),
        "gold": [
            ACCOUNTS_LOGGER, ACCOUNTS_LOGGER_DEF,
            {"path": "ledger/accounts.py", "find": "    def balance(self, name: str) -> Decimal:",
             "replace": "    def rename_account(self, old: str, new: str) -> Account:\n"
                        '        """Give account `old` the name `new` (ValidationError if `new` is taken); returns it."""\n'
                        "        account = self.get(old)\n        if new in self.accounts:\n"
                        "            raise ValidationError(f\"account {new!r} already exists\")\n"
                        "        account.name = new\n        self.accounts[new] = self.accounts.pop(old)\n"
                        "        logger.info(\"renamed account %r to %r\", old, new)\n        return account\n\n"
                        "    def balance(self, name: str) -> Decimal:"},
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": "    def balance(self, name: str) -> Decimal:",
             "replace": "    def rename_account(self, old, new):\n        if new in self.accounts:\n"
                        "            raise KeyError(f\"{new} exists\")\n        account = self.accounts.pop(old)\n"
                        "        account.name = new\n        self.accounts[new] = account\n"
                        "        print(f\"renamed account {old!r} to {new!r}\")\n        return account\n\n"
                        "    def balance(self, name: str) -> Decimal:"},
        ],
        "tests": ("rename_account", '''
def test_the_account_keeps_its_money_under_the_new_name(caplog, capsys):
    caplog.set_level(logging.INFO)
    ledger = make_ledger()
    ledger.rename_account("alice", "alicia")
    assert ledger.balance("alicia") == Decimal("10.00") and "alice" not in ledger.accounts
    assert "alicia" in capsys.readouterr().out + caplog.text


def test_a_taken_name_is_refused_with_a_ledger_error():
    ledger = make_ledger()
    ledger.open_account("bob")
    with raises_ledger_error():
        ledger.rename_account("alice", "bob")
    assert ledger.balance("alice") == Decimal("10.00")


def test_renames_go_to_the_ledger_logger(caplog, capsys):
    caplog.set_level(logging.INFO)
    make_ledger().rename_account("alice", "alicia")
    check_logged(caplog, capsys, "alicia")
'''),
    },
    {
        "slug": "blank-name", "created_at": "2026-04-20T11:15:00Z", "conventions": ["errors", "changelog"],
        "problem_statement": (
            "Accounts with blank names\n\n"
            "`ledger.open_account(\"  \")` opens an account nobody can read in a report. Blank names should be "
            "refused, and names stored without surrounding spaces (`\" bob \"` opens `bob`)."),
        "gold": [
            {"path": "ledger/accounts.py", "find": '        """Open an empty account; names are unique."""\n',
             "replace": '        """Open an empty account; names are unique and not blank (stored stripped)."""\n'
                        "        name = name.strip()\n        if not name:\n"
                        "            raise ValidationError(\"an account name cannot be blank\")\n"},
            _changelog("Blank account names are refused; names are stored without surrounding spaces."),
        ],
        "naive": [
            {"path": "ledger/accounts.py", "find": '        """Open an empty account; names are unique."""\n',
             "replace": '        """Open an empty account; names are unique."""\n        name = name.strip()\n'
                        "        if name == \"\":\n            raise ValueError(\"blank name\")\n"},
        ],
        "tests": ("blank_name", '''
def test_names_are_stripped():
    ledger = Ledger()
    ledger.open_account(" bob ")
    assert list(ledger.accounts) == ["bob"]


@pytest.mark.parametrize("blank", ["empty", "spaces"])
def test_a_blank_name_is_refused_with_a_ledger_error(blank):
    ledger = Ledger()
    with raises_ledger_error():
        ledger.open_account({"empty": "", "spaces": "   "}[blank])
    assert ledger.accounts == {}


def test_the_change_is_in_the_changelog():
    check_changelog()
'''),
    },
]

# Per task (by slug) and convention: the edits that undo that convention in the gold fix (applied after it),
# or NO_CHANGELOG (the gold fix without its changelog entry). The suite's own checks use them: each
# must make the task fail, so every convention a task names is one its hidden tests check.
NO_CHANGELOG = "drop the changelog entry"


def _undo(path, find, replace):
    return [{"path": path, "find": find, "replace": replace}]


UNDO = {
    "overdraft": {"errors": _undo("ledger/accounts.py", "raise InsufficientFundsError(", "raise ValueError("),
                  "changelog": NO_CHANGELOG},
    "negative-deposit": {"errors": _undo("ledger/accounts.py", 'raise ValidationError(f"a deposit', 'raise ValueError(f"a deposit')},
    "csv-export": {"registry": _undo("ledger/exporters.py", '@register("csv")\n', ""),
                   "docs_types": _undo("ledger/exporters.py", "def export_csv(ledger: Ledger) -> str:", "def export_csv(ledger):")},
    "transfer": {"docs_types": _undo("ledger/accounts.py", "def transfer(self, source: str, target: str, amount: str | Decimal) -> Decimal:",
                                     "def transfer(self, source, target, amount):"),
                 "changelog": NO_CHANGELOG},
    "large-withdrawal": {"logging": _undo("ledger/accounts.py", 'logger.warning("large withdrawal of %s from %r", value, name)',
                                          'print(f"large withdrawal of {value} from {name!r}")')},
    "thousands-separator": {"decimal": _undo("ledger/money.py", "    return value.quantize(CENT)\n",
                                             "    return float(value.quantize(CENT)) if \",\" in str(text) else value.quantize(CENT)\n"),
                            "changelog": NO_CHANGELOG},
    "interest": {"decimal": _undo("ledger/interest.py", "    return interest\n", "    return float(interest)\n"),
                 "docs_types": _undo("ledger/interest.py", "def apply_interest(ledger: Ledger, name: str, rate: str | float | Decimal) -> Decimal:",
                                     "def apply_interest(ledger, name, rate):")},
    "markdown-export": {"registry": _undo("ledger/exporters.py", '@register("markdown")\n', ""), "changelog": NO_CHANGELOG},
    "close-account": {"errors": _undo("ledger/accounts.py", 'raise ValidationError(f"account {name!r} still holds', 'raise ValueError(f"account {name!r} still holds'),
                      "logging": _undo("ledger/accounts.py", 'logger.info("closed account %r", name)', 'print(f"closed account {name!r}")')},
    "unknown-format": {"errors": _undo("ledger/exporters.py", 'raise ValidationError(f"unknown format', 'raise ValueError(f"unknown format'),
                       "changelog": NO_CHANGELOG},
    "csv-import": {"logging": _undo("ledger/importers.py", 'logger.warning("skipping malformed line %r", line)', 'print(f"skipping malformed line {line!r}")'),
                   "docs_types": _undo("ledger/importers.py", "def import_csv(ledger: Ledger, text: str) -> int:", "def import_csv(ledger, text):")},
    "totals-export": {"registry": _undo("ledger/exporters.py", '@register("totals")\n', ""),
                      "docs_types": _undo("ledger/exporters.py", "def export_totals(ledger: Ledger) -> str:", "def export_totals(ledger):")},
    "html-export": {"registry": _undo("ledger/exporters.py", '@register("html")\n', ""), "changelog": NO_CHANGELOG},
    "split-amount": {"decimal": _undo("ledger/money.py", "    return [(base + (1 if i < extra else 0)) * CENT for i in range(parts)]\n",
                                      "    return [float((base + (1 if i < extra else 0)) * CENT) for i in range(parts)]\n"),
                     "docs_types": _undo("ledger/money.py", '    """`parts` amounts of whole cents adding up to `amount`; the first ones take the odd cents."""\n', "")},
    "rename-account": {"errors": _undo("ledger/accounts.py", 'raise ValidationError(f"account {new!r} already exists")', 'raise KeyError(f"account {new!r} already exists")'),
                       "logging": _undo("ledger/accounts.py", 'logger.info("renamed account %r to %r", old, new)', 'print(f"renamed account {old!r} to {new!r}")')},
    "blank-name": {"errors": _undo("ledger/accounts.py", 'raise ValidationError("an account name cannot be blank")', 'raise ValueError("an account name cannot be blank")'),
                   "changelog": NO_CHANGELOG},
}
for _task in TASKS:
    _task["undo"] = UNDO[_task["slug"]]
