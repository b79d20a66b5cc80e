"""One upstream's shared limits: a concurrency cap, and a "not before" time that a rate limit sets for
every client at once (so a storm slows everyone instead of each client hammering on its own)."""

from __future__ import annotations

import asyncio
import random

POOL_PAUSE_STATUS = {429, 503, 529}  # the upstream says it is overloaded: slow every client


class Pool:
    """One upstream's shared limits: a concurrency cap and a "not before" time set by rate limits."""

    def __init__(self, concurrency: int):
        self.slots = asyncio.Semaphore(concurrency)
        self.not_before = 0.0  # loop time

    def pause(self, seconds: float) -> None:
        loop_now = asyncio.get_running_loop().time()
        self.not_before = max(self.not_before, loop_now + seconds)

    async def wait_turn(self) -> float:
        """Sleep while the pool is paused; after a pause, a small random stagger so the waiters do not
        all hit the upstream in the same instant. Returns the seconds waited."""
        loop = asyncio.get_running_loop()
        begin = loop.time()
        while (delay := self.not_before - loop.time()) > 0:
            await asyncio.sleep(delay + random.uniform(0, min(1.0, 0.1 * delay)))
        return loop.time() - begin
