"""Thread-coordination arms: a notifier thread wakes a waiter thread."""

from __future__ import annotations

import threading
from typing import List

from wakelab.arms._drivers import measure_thread_wake
from wakelab.arms.base import BLOCKED, CROSS_THREAD, LATENCY, Arm, MeasureParams, RawLatency


def measure_event(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Event.set()`` waking a thread blocked in ``Event.wait()``."""
    event = threading.Event()
    return measure_thread_wake(params, reset=event.clear, wait=event.wait, notify=event.set)


ARMS: List[Arm] = [
    Arm(
        name="event",
        family="threads",
        kind=LATENCY,
        mechanism="threading.Event: set() in the main thread wakes a worker blocked in wait()",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Event.set()",
        t1="worker thread: perf_counter_ns() as the first statement after Event.wait() returns",
        measure=measure_event,
        native="native-condvar",
    ),
]
