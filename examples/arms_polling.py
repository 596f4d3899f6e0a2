"""A wait that polls: check a flag, sleep 2 ms, check again.

Run it::

    wakelab run --arm-file examples/arms_polling.py
    wakelab run --arm-file examples/arms_polling.py --settle-jitter-us 0   # a fixed settle hides the poll

Many waits in the wild do not block in the kernel until they are woken:
they check, sleep a while, and check again (``concurrent.interpreters.Queue.get()``
retries every 10 ms; a job queue that looks at a table every second; a
``while not done: time.sleep(0.002)`` loop).  Such a wait answers a notify
at its next check, so a wake costs up to a whole period, half of it on
average, however fast the machine.

wakelab's settle -- the quiet time it leaves between the waiter announcing
its wait and ``t0`` -- has a random part (``--settle-jitter-us``, 2 ms by
default) for this: a notify then lands anywhere in the poll's period, the
wakes spread evenly up to the period, and the summary's quality section
says "this wait polls about every 2 ms".  With the random part set to 0 the
settle is the same for every wake, the notify always lands at the same
phase of the poll, and the arm reports a narrow figure that is not the
wait's latency at all (tests/test_polling.py shows both).

Only the standard library and wakelab.api.v1 are imported, so the arm runs
on every interpreter ``--python all`` finds.
"""

from __future__ import annotations

import time
from typing import Optional

from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath, now_ns

#: How long the waiter sleeps between two looks at the flag, seconds.
POLL_PERIOD_S = 0.002


class PolledFlag:
    """A flag a waiter polls: ``set()`` only records it; the waiter sees it at its next look."""

    def __init__(self, period_s: float = POLL_PERIOD_S) -> None:
        self.period_s = period_s
        self.is_set = False

    def set(self) -> None:
        self.is_set = True

    def clear(self) -> None:
        self.is_set = False

    def wait(self, timeout_s: float) -> bool:
        """Look at the flag every ``period_s`` until it is set (True) or ``timeout_s`` passed (False)."""
        deadline = time.monotonic() + timeout_s
        while not self.is_set:
            if time.monotonic() >= deadline:
                return False
            time.sleep(self.period_s)
        return True


def polled_flag_path() -> WakePath:
    """A fresh flag: ``set()`` in the main thread is seen by the waiter at its next look."""
    flag = PolledFlag()

    def wait(timeout_s: float) -> Optional[int]:
        woken = flag.wait(timeout_s)
        t1 = now_ns()
        return t1 if woken else None

    return WakePath(reset=flag.clear, wait_stamped=wait, notify=flag.set)


ARMS = [
    Arm(
        name="poll-2ms",
        family="threads",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        mechanism="a flag polled every 2 ms: set() in the main thread is seen by a worker that checks it and "
                  "sleeps 2 ms between checks (time.sleep, parked in the kernel between looks)",
        t0="main thread: perf_counter_ns() immediately before PolledFlag.set()",
        t1="worker thread: perf_counter_ns() as the first statement after PolledFlag.wait() returns (the look that saw the flag)",
        path=polled_flag_path,
    ),
]
