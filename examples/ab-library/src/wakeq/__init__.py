"""wakeq: a tiny notify-and-wait library, the code under test of the A/B example.

Its one wake path is ``Signal.notify()`` waking a thread blocked in ``Signal.wait()``.  To see
the A/B gate fail, copy this folder twice and give one copy's notify some work to do, e.g.
``NOTIFY_SPIN_US = 20``: ``wakelab ab base head --arm-file head/benchmarks/wakelab_arms.py``
names head slower and exits 1; two identical copies pass (exit 0).
"""

from __future__ import annotations

import threading
import time

__all__ = ["Signal"]

# Busy work in every notify, µs (0: none).  The examples and tests edit it in one copy.
NOTIFY_SPIN_US = 0


class Signal:
    """A reusable wake-up: ``notify()`` wakes ``wait()``; ``clear()`` re-arms it."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def clear(self) -> None:
        self._event.clear()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)

    def notify(self) -> None:
        if NOTIFY_SPIN_US:
            end = time.perf_counter_ns() + NOTIFY_SPIN_US * 1000
            while time.perf_counter_ns() < end:
                pass
        self._event.set()
