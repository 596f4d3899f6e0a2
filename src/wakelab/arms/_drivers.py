"""Reusable measuring loops shared by several arms (measuring side, stdlib only).

``measure_thread_wake`` is the blocked- or spinning-waiter loop used by every
cross-thread arm: a persistent waiter thread, a handshake *outside* the timed
window, a settle period, then ``t0`` -> notify -> ``t1`` in the waiter.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from wakelab.arms.base import LatencyCollector, MeasureParams, RawLatency, now_ns, plant_delay


class HarnessError(RuntimeError):
    """The harness itself failed (a waiter thread that never came up ...)."""


def measure_thread_wake(
    params: MeasureParams,
    *,
    reset: Callable[[], None],
    wait: Callable[[float], bool],
    notify: Callable[[], None],
    name: str = "wakelab-waiter",
) -> RawLatency:
    """Time ``notify()`` in the calling thread waking ``wait()`` in a waiter thread.

    Per wake: ``reset()`` puts the primitive back in its un-notified state; the
    waiter announces it is about to call ``wait(timeout_s)``; the notifier
    sleeps ``settle_us`` so the waiter is parked; then ``t0 = perf_counter_ns()``,
    the planted delay if any, ``notify()``.  The waiter takes ``t1`` as the first
    statement after ``wait`` returns.  ``wait`` returns False on timeout, which
    counts a lost wake.  Each sample is ``t1 - t0`` in nanoseconds.
    """
    collector = LatencyCollector(params)
    go = threading.Event()
    ready = threading.Event()
    done = threading.Event()
    box = {"t1": None, "stop": False, "error": None}  # type: dict

    def waiter() -> None:
        try:
            while True:
                go.wait()
                go.clear()
                if box["stop"]:
                    return
                ready.set()
                ok = wait(params.timeout_s)
                t1 = now_ns()
                box["t1"] = t1 if ok else None
                done.set()
        except BaseException as exc:  # surfaced by the notifier below
            box["error"] = exc
            done.set()
            ready.set()

    thread = threading.Thread(target=waiter, name=name, daemon=True)
    thread.start()
    # The waiter's own timeout always ends its wait; allow for it generously.
    handshake_s = params.timeout_s + 5.0
    try:
        for _ in range(params.total_wakes):
            reset()
            ready.clear()
            done.clear()
            box["t1"] = None
            go.set()
            if not ready.wait(handshake_s) or box["error"] is not None:
                raise HarnessError("waiter thread did not announce itself: %r" % (box["error"],))
            time.sleep(params.settle_s)
            t0 = now_ns()
            plant_delay(params, t0)
            notify()
            if not done.wait(handshake_s):
                raise HarnessError("waiter thread did not return from its wait")
            if box["error"] is not None:
                raise HarnessError("waiter failed: %r" % (box["error"],))
            t1: Optional[int] = box["t1"]
            collector.add(None if t1 is None else t1 - t0)
    finally:
        box["stop"] = True
        go.set()
        thread.join(handshake_s)
    return collector.result(settle_us=params.settle_us)


def spin_wait(predicate: Callable[[], bool]) -> Callable[[float], bool]:
    """A ``wait(timeout)`` that polls ``predicate`` in a busy loop (spinning waiter)."""

    def wait(timeout_s: float) -> bool:
        deadline = now_ns() + int(timeout_s * 1e9)
        while not predicate():
            if now_ns() > deadline:
                return False
        return True

    return wait


def measure_thread_wake_stamped(
    params: MeasureParams,
    *,
    reset: Callable[[], None],
    wait: Callable[[float], Optional[int]],
    notify: Callable[[Callable[[], None]], None],
    name: str = "wakelab-waiter",
) -> RawLatency:
    """Like :func:`measure_thread_wake`, but each side stamps its own instant.

    Some wake paths are more than one call on either side: a notifier that
    must hold a lock around ``notify()``, a waiter that resumes inside a
    ``with`` block or must release what it acquired.  Here ``wait(timeout_s)``
    takes ``t1 = perf_counter_ns()`` itself, as the first statement after the
    primitive's wait returns, and returns it (``None`` on timeout, a lost
    wake).  ``notify(mark_t0)`` must call ``mark_t0()`` exactly once,
    immediately before its notify call: ``mark_t0`` takes ``t0`` and runs the
    planted delay, so the harness, not the arm, owns both.  Everything else
    (persistent waiter thread, announce, settle, timeouts) is as in
    :func:`measure_thread_wake`.  Each sample is ``t1 - t0`` in nanoseconds.
    """
    collector = LatencyCollector(params)
    go = threading.Event()
    ready = threading.Event()
    done = threading.Event()
    box = {"t1": None, "stop": False, "error": None}  # type: dict
    marks: list[int] = []

    def mark_t0() -> None:
        t0 = now_ns()
        plant_delay(params, t0)
        marks.append(t0)

    def waiter() -> None:
        try:
            while True:
                go.wait()
                go.clear()
                if box["stop"]:
                    return
                ready.set()
                box["t1"] = wait(params.timeout_s)
                done.set()
        except BaseException as exc:  # surfaced by the notifier below
            box["error"] = exc
            done.set()
            ready.set()

    thread = threading.Thread(target=waiter, name=name, daemon=True)
    thread.start()
    handshake_s = params.timeout_s + 5.0
    try:
        for _ in range(params.total_wakes):
            reset()
            ready.clear()
            done.clear()
            box["t1"] = None
            del marks[:]
            go.set()
            if not ready.wait(handshake_s) or box["error"] is not None:
                raise HarnessError("waiter thread did not announce itself: %r" % (box["error"],))
            time.sleep(params.settle_s)
            notify(mark_t0)
            if not done.wait(handshake_s):
                raise HarnessError("waiter thread did not return from its wait")
            if box["error"] is not None:
                raise HarnessError("waiter failed: %r" % (box["error"],))
            if len(marks) != 1:
                raise HarnessError("notify called mark_t0() %d times, not once" % len(marks))
            t1: Optional[int] = box["t1"]
            collector.add(None if t1 is None else t1 - marks[0])
    finally:
        box["stop"] = True
        go.set()
        thread.join(handshake_s)
    return collector.result(settle_us=params.settle_us)


def poll_wait(predicate: Callable[[], bool], *, yield_gil: bool) -> Callable[[float], Optional[int]]:
    """A stamped ``wait(timeout)`` that polls ``predicate`` (spinning waiter).

    Returns ``t1 = perf_counter_ns()`` taken as the first statement after the
    poll that saw the wake, or ``None`` at the deadline.  With ``yield_gil``
    each empty poll is followed by ``time.sleep(0)``, which releases and
    re-takes the GIL without sleeping, so that another thread can run Python
    code between polls without waiting for the switch interval.
    """
    pause = time.sleep

    def wait(timeout_s: float) -> Optional[int]:
        deadline = now_ns() + int(timeout_s * 1e9)
        if yield_gil:
            while not predicate():
                if now_ns() > deadline:
                    return None
                pause(0)
        else:
            while not predicate():
                if now_ns() > deadline:
                    return None
        return now_ns()

    return wait
