"""What a run needs made ahead (a user namespace, a network namespace) is handed out once, and the next one is
made in the background, off the taker's path."""

import threading
import time

from helpers.isolation.ahead import MadeAhead


def test_the_first_take_makes_one_now_and_after_a_refill_the_next_is_the_one_made_in_the_background():
    def make() -> str:  # what it makes: the name of the thread that made it
        return threading.current_thread().name

    ahead = MadeAhead(make, "made-ahead")
    assert ahead.take() == threading.current_thread().name  # nothing was ready: made by the taker
    assert not ahead.ready and not ahead.making  # nothing is made beside the taker's set-up
    ahead.refill()
    stop = time.monotonic() + 60
    while not ahead.ready:
        assert time.monotonic() < stop, "the next one was never made"
        time.sleep(0.01)
    assert ahead.take() == "made-ahead"


def test_takers_at_once_never_get_the_same_one():
    counter = iter(range(10**6))
    lock = threading.Lock()

    def make() -> int:
        with lock:
            return next(counter)

    ahead = MadeAhead(make, "made-ahead")
    taken: list[int] = []

    def take() -> None:
        for _ in range(50):
            value = ahead.take()
            ahead.refill()
            with lock:
                taken.append(value)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(taken) == 400 and len(set(taken)) == 400
