"""Reusable measuring loops shared by several arms (measuring side, stdlib only).

Every cross-thread arm built on these loops gets, from one place:

* a persistent waiter thread, pinned for the run's placement
  (:func:`~wakelab.core.placement.enter_role`), which reports the CPU it
  last ran on;
* closed-loop timing (the default): a handshake *outside* the timed window,
  the waiter announces its wait, the notifier lets ``settle_us`` pass, then
  ``t0`` -> notify -> ``t1`` in the waiter;
* open-loop timing (``params.mode == "open"``): the notifier fires on a
  fixed schedule, one notify every ``interval_us``, whether or not the waiter
  is ready, and each latency is taken from the *scheduled* instant, as
  cyclictest does.  A notifier or waiter that stalls cannot hide the stall by
  delaying the next sample (coordinated omission): the late wake shows up as
  a long latency, and a notify that found the waiter still busy with the
  previous one is counted lost.

Two notifier shapes: ``measure_thread_wake`` (the driver takes ``t0`` and
calls ``notify()``) and ``measure_thread_wake_stamped`` (the arm's notify
calls ``mark_t0()`` itself, for primitives that need a lock held around the
notify).
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Callable, Dict, List, Optional

from wakelab.core.drivers import HarnessError
from wakelab.core.model import LatencyCollector, MeasureParams, RawLatency, now_ns, plant_delay
from wakelab.core.placement import WAITER, current_cpu, enter_role



def measure_thread_wake(
    params: MeasureParams,
    *,
    reset: Callable[[], None],
    wait: Callable[[float], bool],
    notify: Callable[[], None],
    name: str = "wakelab-waiter",
) -> RawLatency:
    """Time ``notify()`` in the calling thread waking ``wait()`` in a waiter thread.

    ``reset()`` puts the primitive back in its un-notified state (closed
    loop: by the notifier before each wake; open loop: by the waiter after
    each wake); ``wait(timeout_s)`` returns False on timeout, which counts a
    lost wake.  ``t0 = perf_counter_ns()`` is taken immediately before
    ``notify()`` (after it, the planted delay if any); the waiter takes ``t1``
    as the first statement after ``wait`` returns.  Samples are ``t1 - t0``
    (closed) or ``t1 - scheduled`` (open), in nanoseconds.
    """

    def stamped_wait(timeout_s: float) -> Optional[int]:
        ok = wait(timeout_s)
        t1 = now_ns()
        return t1 if ok else None

    # Two variants, chosen once: without a planted delay nothing but notify() may stand
    # between t0 and the notify call, not even a call that would do nothing.
    if params.planted_delay_us:

        def notify_step() -> int:
            t0 = now_ns()
            plant_delay(params, t0)
            notify()
            return t0

    else:

        def notify_step() -> int:
            t0 = now_ns()
            notify()
            return t0

    return _drive(params, reset, stamped_wait, notify_step, name)


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
    planted delay, so the harness, not the arm, owns both.
    """
    marks: List[int] = []

    def mark_t0() -> None:
        t0 = now_ns()
        plant_delay(params, t0)
        marks.append(t0)

    def notify_step() -> int:
        del marks[:]
        notify(mark_t0)
        if len(marks) != 1:
            raise HarnessError("notify called mark_t0() %d times, not once" % len(marks))
        return marks[0]

    return _drive(params, reset, wait, notify_step, name)


def _drive(
    params: MeasureParams,
    reset: Callable[[], None],
    wait: Callable[[float], Optional[int]],
    notify_step: Callable[[], int],
    name: str,
) -> RawLatency:
    if params.mode == "open":
        return _drive_open(params, reset, wait, notify_step, name)
    return _drive_closed(params, reset, wait, notify_step, name)


def _drive_closed(
    params: MeasureParams,
    reset: Callable[[], None],
    wait: Callable[[float], Optional[int]],
    notify_step: Callable[[], int],
    name: str,
) -> RawLatency:
    collector = LatencyCollector(params)
    slots = collector.slots
    go = threading.Event()
    ready = threading.Event()
    done = threading.Event()
    box: Dict[str, object] = {"t1": None, "stop": False, "error": None, "cpu": None}

    def waiter() -> None:
        try:
            enter_role(params, WAITER)
            while True:
                go.wait()
                go.clear()
                if box["stop"]:
                    box["cpu"] = current_cpu()  # where the wakes ran: read once, at the end
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
    # The waiter's own timeout always ends its wait; allow for it generously.
    handshake_s = params.timeout_s + 5.0
    settle_s = params.settle_s
    try:
        for index in range(params.total_wakes):
            reset()
            ready.clear()
            done.clear()
            box["t1"] = None
            go.set()
            if not ready.wait(handshake_s) or box["error"] is not None:
                raise HarnessError("waiter thread did not announce itself: %r" % (box["error"],))
            time.sleep(settle_s)
            t0 = notify_step()
            if not done.wait(handshake_s):
                raise HarnessError("waiter thread did not return from its wait")
            if box["error"] is not None:
                raise HarnessError("waiter failed: %r" % (box["error"],))
            t1 = box["t1"]
            slots[index] = None if t1 is None else t1 - t0  # type: ignore[operator]
    finally:
        box["stop"] = True
        go.set()
        thread.join(handshake_s)
    return collector.result(
        settle_us=params.settle_us, mode="closed", notifier_cpu_seen=current_cpu(), waiter_cpu_seen=box["cpu"]
    )


def _drive_open(
    params: MeasureParams,
    reset: Callable[[], None],
    wait: Callable[[float], Optional[int]],
    notify_step: Callable[[], int],
    name: str,
) -> RawLatency:
    """Open loop: notify on schedule; match each wake to the notify that caused it."""
    interval_ns = params.interval_us * 1000
    total = params.total_wakes
    wakes: List[int] = []  # t1 of every wake, appended by the waiter
    box: Dict[str, object] = {"stop": False, "error": None, "cpu": None}
    started = threading.Event()

    def waiter() -> None:
        try:
            enter_role(params, WAITER)
            started.set()
            while not box["stop"]:
                t1 = wait(min(params.timeout_s, 0.05))
                if t1 is None:
                    continue  # nothing due yet, or the notifier is done: look at stop again
                reset()  # consume, so the next notify is a new wake
                wakes.append(t1)
            box["cpu"] = current_cpu()
        except BaseException as exc:
            box["error"] = exc
            started.set()

    thread = threading.Thread(target=waiter, name=name, daemon=True)
    reset()
    thread.start()
    if not started.wait(params.timeout_s + 5.0):
        raise HarnessError("waiter thread did not start")
    scheduled: List[int] = []
    issued: List[int] = []
    try:
        # The first notify is one settle period away, so the waiter is parked when it comes.
        base = now_ns() + max(params.settle_us * 1000, interval_ns)
        for i in range(total):
            due = base + i * interval_ns
            # Sleep, never spin, up to the due instant: a spinning notifier would hold the GIL
            # the woken waiter needs.  Sleep's overshoot is the notifier's lateness, which the
            # latency from the schedule includes and the notify_late component shows.
            remaining = due - now_ns()
            if remaining > 0:
                time.sleep(remaining / 1e9)
            issued.append(notify_step())
            scheduled.append(due)
        # Let the last wake arrive (or time out).
        deadline = now_ns() + int(params.timeout_s * 1e9)
        while now_ns() < deadline and (not wakes or wakes[-1] < issued[-1]):
            time.sleep(0.001)
    finally:
        box["stop"] = True
        thread.join(params.timeout_s + 5.0)
    if box["error"] is not None:
        raise HarnessError("waiter failed: %r" % (box["error"],))
    # Match wakes to notifies conservatively: a wake answers the oldest notify still pending
    # whose notify call began before the wake (t0 plus any planted delay), and every other
    # notify that began before it was coalesced into the same wake and is counted lost.  So a
    # waiter that falls behind never gets credited with a later, shorter deadline.
    begun = [t0 + params.planted_delay_ns for t0 in issued]
    first_t1: Dict[int, int] = {}
    pending = 0
    for t1 in wakes:
        if pending < total and begun[pending] <= t1:
            first_t1[pending] = t1
            pending = bisect.bisect_right(begun, t1, lo=pending)
    collector = LatencyCollector(params)
    for i in range(total):
        woke = first_t1.get(i)
        # Each sample is measured from the schedule; the notifier's own lateness is a component.
        collector.add(None if woke is None else woke - scheduled[i], notify_late=issued[i] - scheduled[i])
    return collector.result(
        mode="open",
        interval_us=params.interval_us,
        notifier_cpu_seen=current_cpu(),
        waiter_cpu_seen=box["cpu"],
    )


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
