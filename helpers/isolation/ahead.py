"""Things a run needs that take a helper process or a slow kernel step to make (a user namespace, a network
namespace), made one ahead in the background while runs run, so a run's start only takes one.

    users = MadeAhead(make_user, "thread name")   # make: () -> T; each one made is handed out once
    user = users.take()                            # the one made ahead if it is ready, else one made now
    users.refill()                                 # once the taker's own set-up is done: the next, in the background

Nothing is made until the first take (no side effect on import); at most one is kept ready, and the next is made
after the taker's set-up (not beside it: a helper process started then would compete with it for the CPU).
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class MadeAhead(Generic[T]):
    def __init__(self, make: Callable[[], T], name: str):
        self.make, self.name = make, name
        self.lock = threading.Lock()
        self.ready: list[T] = []
        self.making = False

    def take(self) -> T:
        """The one made ahead, or one made now."""
        with self.lock:
            taken = self.ready.pop() if self.ready else None
        return taken if taken is not None else self.make()

    def refill(self) -> None:
        """Make the next one in a daemon thread, unless one is ready or being made (nothing of it needs an end:
        what it holds is a descriptor, closed by whoever takes it)."""
        with self.lock:
            start = not self.making and not self.ready
            self.making = self.making or start
        if start:
            threading.Thread(target=self._make, daemon=True, name=self.name).start()

    def _make(self) -> None:
        try:
            made = self.make()
        finally:
            with self.lock:
                self.making = False
        with self.lock:
            self.ready.append(made)


__all__ = ["MadeAhead"]  # documented in CODE_APPENDIX.md (helpers.isolation.confinement)
