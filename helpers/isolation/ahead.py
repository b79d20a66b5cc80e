"""Things a run needs that take a helper process or a slow kernel step to make (a user namespace, a network
namespace), made one ahead in the background while runs run, so a run's start only takes one.

    users = MadeAhead(make_user)       # make: () -> T; made once per take, never handed out twice
    user = users.take()                # the one made ahead if it is ready, else one made now

Nothing is made until the first take (no side effect on import); one is kept ready at most.
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
        """The one made ahead, or one made now; the next is then made in a daemon thread (nothing of it needs an
        end: what it holds is a descriptor, closed by whoever takes it)."""
        with self.lock:
            taken = self.ready.pop() if self.ready else None
            start, self.making = not self.making, True
        if start:
            threading.Thread(target=self._make, daemon=True, name=self.name).start()
        return taken if taken is not None else self.make()

    def _make(self) -> None:
        try:
            made = self.make()
        finally:
            with self.lock:
                self.making = False
        with self.lock:
            self.ready.append(made)


__all__ = ["MadeAhead"]  # documented in CODE_APPENDIX.md (helpers.isolation.confinement)
