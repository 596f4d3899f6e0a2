"""wakelab against an independent probe: a constant extra inside the window cannot hide.

The paired tests in ``test_timed_window.py`` prove that a planted delay shows by its size and
that the settle stays outside the window, but a *constant* extra in the window (a stray sleep,
a slow hook) would shift planted and unplanted runs alike.  So the ``event`` arm is also run
side by side with a minimal stdlib probe written here, independently of the driver: the same
experiment (settle, ``t0``, ``Event.set()``, ``t1`` after ``wait()`` returns) with nothing else.
The bound is loose -- a few times the probe plus a few hundred µs, since one run may land both
threads on one CPU and the next on two -- yet a 1 ms sleep anywhere in the window fails it.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import List

from wakelab.core.model import MeasureParams
from wakelab.core.registry import get_arm

N = 40
SETTLE_S = 0.001


def probe_event_median_us(n: int = N) -> float:
    """Median Event wake (µs) from a loop that shares no code with wakelab's drivers."""
    event, ready, done = threading.Event(), threading.Event(), threading.Event()
    stamps: List[int] = []
    stop = [False]

    def waiter() -> None:
        while True:
            ready.set()
            event.wait(2.0)
            t1 = time.perf_counter_ns()
            event.clear()
            stamps.append(t1)
            done.set()
            if stop[0]:
                return

    thread = threading.Thread(target=waiter, daemon=True)
    samples = []
    try:
        thread.start()
        for i in range(n):
            ready.wait(2.0)
            ready.clear()
            time.sleep(SETTLE_S)
            if i == n - 1:
                stop[0] = True
            t0 = time.perf_counter_ns()
            event.set()
            done.wait(2.0)
            done.clear()
            samples.append(stamps[-1] - t0)
    finally:
        stop[0] = True
        event.set()
        thread.join(5.0)
    return statistics.median(samples) / 1000.0


def test_event_arm_agrees_with_an_independent_probe() -> None:
    arm = get_arm("event")
    params = MeasureParams(n=N, warmup=3, settle_us=int(SETTLE_S * 1e6), timeout_s=2.0)
    probes, ours = [], []
    for _ in range(3):  # interleaved, so a drift hits both alike
        probes.append(probe_event_median_us())
        raw = arm.measure(params)
        ours.append(statistics.median(raw.samples_ns) / 1000.0)
    probe, wakelab = min(probes), min(ours)
    assert wakelab <= 3 * probe + 300, "event: wakelab median %.1f µs against the probe's %.1f µs" % (wakelab, probe)
