"""The budget as an account: every call reserves its worst case before it is forwarded and settles at its metered
cost after, so calls at once cannot pass it (docs/security.md).

A call's worst case is its input's upper bound (its JSON bytes: a token is at least one byte of text; plus
config.GATEWAY_MEDIA_PART_TOKENS per image or document part) and its output cap (allowlist.py clamps or sets it),
priced by helpers.llm.pricing at the model's rates for that many tokens. A reservation that fits once the calls
under way settle waits for them; one that cannot fit even then is refused at once ("budget", as a spent budget).
One whose worst case is more than the whole budget is refused at once (413, the caller's own error, never a spent
budget's status). `Ledger.admit` says which, with the answer the client gets.
The reservations are made and settled on the gateway's event loop; `spent_usd` is read from any thread.
"""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web

from helpers.core import config
from helpers.llm.gateway.policy import error_response
from helpers.llm.pricing import call_cost_usd

BUDGET_HEADER = "x-gateway-budget"
# A spent budget stays spent, so a client should stop at once rather than back off and ask again: the OpenAI and
# Anthropic SDKs honour x-should-retry; the AI SDK in Cline ignores it and retries a 429 five times, 2 s doubling
# (62 s per run, measured), unless retry-after-ms names a shorter wait: 0, so its retries are refused at once.
BUDGET_SPENT_HEADERS = {BUDGET_HEADER: "spent", "x-should-retry": "false", "retry-after-ms": "0"}


def worst_case_usd(model: str | None, body_bytes: int, media_parts: int, output_tokens: int) -> float:
    """The most one call can cost: its input's upper bound and its output cap at the model's prices (0 unpriced)."""
    input_tokens = _rounded_up(body_bytes + media_parts * config.GATEWAY_MEDIA_PART_TOKENS)
    return call_cost_usd(model, input_tokens, output_tokens) or 0.0


def _rounded_up(tokens: int) -> int:
    """`tokens` rounded up to one of 8 steps per power of two (at most 1/8 more; a price is monotone in its
    tokens), so the price table's cache serves most calls: pricing a new count costs 0.15 ms."""
    step = 1 << max(0, tokens.bit_length() - 3)
    return -(-tokens // step) * step


class Ledger:
    """Spent (settled calls) and reserved (calls under way, at their worst case) against a budget (None: none)."""

    def __init__(self, budget_usd: float | None):
        self.budget_usd = budget_usd
        self._spent_usd, self.reserved_usd = 0.0, 0.0
        self._lock = threading.Lock()  # for readers on other threads
        self._settled: asyncio.Condition | None = None  # made on the gateway's loop
        self._waiting = 0  # reservations waiting for calls under way to settle

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent_usd

    def spent(self) -> bool:
        """Whether the budget is spent: no call may start, whatever it would cost."""
        return self.budget_usd is not None and self.spent_usd >= self.budget_usd

    async def reserve(self, worst_usd: float) -> bool:
        """Holds `worst_usd` of the budget for one call: True once it fits, False at once when it cannot fit
        even after every call under way settles."""
        if self.budget_usd is None:
            return True
        if not self._waiting:  # no one waits ahead of this call: it is decided here, as the first check below would
            fits = self._take(worst_usd)
            if fits is not None:
                return fits
        if self._settled is None:
            self._settled = asyncio.Condition()
        async with self._settled:
            while True:
                fits = self._take(worst_usd)
                if fits is not None:
                    return fits
                self._waiting += 1
                try:
                    await self._settled.wait()
                finally:
                    self._waiting -= 1

    def _take(self, worst_usd: float) -> bool | None:
        """True once `worst_usd` is reserved, False when it cannot fit even after the calls under way settle, None
        when it fits only after some of them settle."""
        budget = self.budget_usd or 0.0
        with self._lock:
            if self._spent_usd >= budget or self._spent_usd + worst_usd > budget:
                return False
            if self._spent_usd + self.reserved_usd + worst_usd <= budget:
                self.reserved_usd += worst_usd
                return True
        return None

    async def admit(self, worst_usd: float, api: str) -> tuple[int | str, str, web.Response] | None:
        """None once `worst_usd` is reserved (or there is no budget); else the refused call's record status and
        error, and the answer its client gets in its wire format (`api`)."""
        budget = self.budget_usd
        if budget is None:
            return None
        if worst_usd > budget:  # never fits, spent or not: the caller's own
            return (
                413,
                "worst case over the budget",
                error_response(
                    413,
                    f"gateway: refused: this call's worst case (${worst_usd:.4f}: its input and output cap at the "
                    f"model's prices) is more than the whole budget of ${budget:.2f}; send less or ask for fewer "
                    f"output tokens",
                    "call_exceeds_budget",
                    api=api,
                ),
            )
        if await self.reserve(worst_usd):
            return None
        spent = self.spent_usd
        why = (
            "is spent"
            if self.spent()
            else f"cannot cover this call's worst case (${worst_usd:.4f}; ${budget - spent:.4f} left)"
        )
        return (
            "budget",
            f"budget of ${budget:.2f} spent",
            error_response(
                429,
                f"gateway: the budget of ${budget:.2f} for model calls {why} (${spent:.2f} used); no new model "
                f"calls are made.",
                "budget_exceeded",
                BUDGET_SPENT_HEADERS,
                api=api,
            ),
        )

    def settle(self, reserved_usd: float, cost_usd: float) -> None:
        """One call's end: its reservation released, its metered cost spent (call from the gateway's loop)."""
        with self._lock:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
            self._spent_usd += cost_usd
        if self._waiting:  # a wake-up task only when a reservation waits (not one per call)
            asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        settled = self._settled  # made by the first reservation, before any could wait
        if settled is None:
            return
        async with settled:
            settled.notify_all()


__all__ = ["BUDGET_HEADER", "worst_case_usd", "Ledger"]  # documented in CODE_APPENDIX.md
