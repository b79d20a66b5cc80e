"""Where a gateway call's time goes: each stage of the request path timed (wall, perf_counter) and summed over
calls, so that benchmarks/bench_gateway.py can say which stage took the time when it misses a target.

The stages, in the order a call meets them: `read` (the token's check and the request body read), `policy`
(path, model, the body's allow-list, its serialisation), `budget` (the worst case priced and reserved, a wait for
calls under way included), `key_swap` (the headers that go upstream), `upstream` (a pool slot, the connection
opened or reused, the request sent and the answer's head read: the model server's own time to its first bytes
included), `forward` (the answer's events checked and written to the client; waits for the upstream's next bytes
excluded), `metering` (usage read from each event, the record's tokens and cost), `tracing` (a trace's payload
handed to its worker thread) and `record` (the record kept). Written on the gateway's loop only."""

from __future__ import annotations

import threading
from time import perf_counter

STAGES = ("read", "policy", "budget", "key_swap", "upstream", "forward", "metering", "tracing", "record")


class StageTimes:
    """Seconds spent in each stage, summed over the calls counted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # a reader on another thread takes a consistent copy
        self.calls = 0
        self.seconds = dict.fromkeys(STAGES, 0.0)

    def lap(self, stage: str, since: float) -> float:
        """Adds the time from `since` to now to `stage`; returns now (the next stage's start)."""
        now = perf_counter()
        self.seconds[stage] += now - since
        return now

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] += seconds

    def count(self) -> None:
        """One more call finished."""
        with self._lock:
            self.calls += 1

    def per_call_ms(self, reset: bool = False) -> dict[str, float]:
        """{"calls": n, "<stage>_ms": mean ms per call}; `reset` starts the sums again."""
        with self._lock:
            calls, seconds = self.calls, dict(self.seconds)
            if reset:
                self.calls, self.seconds = 0, dict.fromkeys(STAGES, 0.0)
        return {"calls": calls, **{f"{name}_ms": s * 1e3 / max(calls, 1) for name, s in seconds.items()}}


__all__ = ["STAGES", "StageTimes"]  # documented in CODE_APPENDIX.md
