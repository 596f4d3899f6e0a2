"""The thread driver: the worker's main thread notifies, a waiter thread waits.

Measuring side: standard library only, Python 3.9+.

Used by every arm whose waiter is a thread of the worker that the kernel
parks (thread primitives, fds, ``pthread-kill-sigwait``) or that polls.  One
persistent waiter thread per arm, pinned for the run's placement
(:func:`~wakelab.core.placement.enter_role`), reporting the CPU it last ran on.
With a realtime request (``wakelab run --policy fifo --priority 80``) the
waiter thread switches itself as it starts -- ``os.sched_setscheduler(0, ...)``
from the thread changes that thread alone on Linux -- and puts its policy back
before it ends (:func:`wakelab.core.realtime.enter_waiter`); ``info``'s
``waiter_sched`` says what it ran under.

Closed loop (the default), per wake::

    notifier                          waiter
    reset(); go.set()  ------------>  ready.set()          (outside the window)
    ready.wait()       <------------  wait(timeout)        parks in the kernel
    sleep(settle)                     (this wake's: fixed + random part)
    t0 = notify_step()                (see wakelab.core.drivers: t0, notify)
    done.wait()                       t1 = first statement after the wait
                       <------------  done.set()

Open loop (``params.mode == "open"``, ``OPEN_LOOP`` below): the notifier
fires on a fixed schedule, one notify every ``interval_us`` whether or not the
waiter is ready, and each latency is taken from the *scheduled* instant, as
cyclictest does.  A notifier or waiter that stalls cannot hide the stall by
delaying the next sample (coordinated omission): the late wake shows up as a
long latency.  A notify that found the waiter still busy with an earlier one
is merged into that wake by the primitive; it is counted lost and, apart from
wakes that timed out, as ``coalesced`` in ``info``.
"""

from __future__ import annotations

import bisect
import threading
import time
from typing import Callable, Dict, List, Optional, Tuple

from wakelab.core import realtime
from wakelab.core.drivers import HarnessError, WakePath, handshake_timeout_s, native_tid, settle_schedule_s, t0_info, wake_t0_log
from wakelab.core.model import LOST_NS, LatencyCollector, MeasureParams, RawLatency, now_ns
from wakelab.core.placement import WAITER, cpu_reader, current_cpu, enter_role

#: This driver honours ``params.mode == "open"``.
OPEN_LOOP = True


def measure(params: MeasureParams, path: WakePath, name: str = "wakelab-waiter") -> RawLatency:
    """Time ``path.notify()`` in the calling thread waking ``path``'s wait in a waiter thread.

    Samples are ``t1 - t0`` (closed loop) or ``t1 - scheduled`` (open loop),
    in nanoseconds; a wait that times out is a lost wake.
    """
    if params.mode == "open":
        return _drive_open(params, path, name)
    return _drive_closed(params, path, name)


def _drive_closed(params: MeasureParams, path: WakePath, name: str) -> RawLatency:
    collector = LatencyCollector(params)
    slots = collector.slots
    reset = path.reset
    wait = path.stamped()
    step = path.step(params)
    go = threading.Event()
    ready = threading.Event()
    done = threading.Event()
    box: Dict[str, object] = {"t1": None, "stop": False, "error": None, "cpu": None, "tid": None, "woke_on": -1}
    getcpu = cpu_reader()
    waiter_cpus, notifier_cpus = collector.record_cpus() if getcpu is not None else (None, None)
    timeout_s = params.timeout_s
    t0s = wake_t0_log(params)

    def waiter() -> None:
        scheduling = None
        try:
            scheduling = _take_waiter_role(params)
            box["tid"] = native_tid()  # before the first wake: what the kernel's events call it
            while True:
                go.wait()
                go.clear()
                if box["stop"]:
                    box["cpu"] = current_cpu()  # where the wakes ran: read once, at the end
                    realtime.leave(scheduling)
                    return
                ready.set()
                box["t1"] = wait(timeout_s)
                if getcpu is not None:
                    box["woke_on"] = getcpu()  # after t1: outside the timed window
                done.set()
        except BaseException as exc:  # surfaced by the notifier below
            _leave_quietly(scheduling)
            box["error"] = exc
            done.set()
            ready.set()

    thread = threading.Thread(target=waiter, name=name, daemon=True)
    thread.start()
    handshake_s = handshake_timeout_s(params)
    settles = settle_schedule_s(params)
    done_wait = done.wait
    stale = 0
    try:
        for index in range(params.total_wakes):
            reset()
            ready.clear()
            done.clear()
            box["t1"] = None
            go.set()
            if not ready.wait(handshake_s) or box["error"] is not None:
                raise HarnessError("waiter thread did not announce itself: %r" % (box["error"],))
            time.sleep(settles[index])
            notified_on = getcpu() if getcpu is not None else -1  # before t0: outside the window
            t0 = step()
            if not done_wait(handshake_s):
                raise HarnessError("waiter thread did not return from its wait")
            if box["error"] is not None:
                raise HarnessError("waiter failed: %r" % (box["error"],))
            t1 = box["t1"]
            if t1 is not None and t1 < t0:  # type: ignore[operator]
                stale += 1  # the wait returned before this notify: an older wake, not this one
                t1 = None
            slots[index] = LOST_NS if t1 is None else t1 - t0  # type: ignore[operator]
            if waiter_cpus is not None and notifier_cpus is not None:
                waiter_cpus[index] = box["woke_on"]
                notifier_cpus[index] = notified_on
            if t0s is not None:
                t0s[index] = t0  # the wake is over: outside the timed window
    finally:
        box["stop"] = True
        go.set()
        thread.join(handshake_s)
    return collector.result(
        settle_us=params.settle_us,
        mode="closed",
        stale_wakes=stale,
        notifier_cpu_seen=current_cpu(),
        waiter_cpu_seen=box["cpu"],
        notifier_tid=native_tid(),
        waiter_tid=box["tid"],
        **t0_info(collector, t0s, params.warmup),
        **_scheduling_info(),
    )


def _drive_open(params: MeasureParams, path: WakePath, name: str) -> RawLatency:
    """Open loop: notify on schedule; match each wake to the notify that caused it."""
    interval_ns = params.interval_us * 1000
    total = params.total_wakes
    reset = path.reset
    wait = path.stamped()
    step = path.step(params)
    wakes: List[int] = []  # t1 of every wake, appended by the waiter
    box: Dict[str, object] = {"stop": False, "error": None, "cpu": None, "tid": None}
    started = threading.Event()
    poll_s = min(params.timeout_s, 0.05)

    def waiter() -> None:
        scheduling = None
        try:
            scheduling = _take_waiter_role(params)
            box["tid"] = native_tid()
            started.set()
            while not box["stop"]:
                t1 = wait(poll_s)
                if t1 is None:
                    continue  # nothing due yet, or the notifier is done: look at stop again
                reset()  # consume, so the next notify is a new wake
                wakes.append(t1)
            box["cpu"] = current_cpu()
            realtime.leave(scheduling)
        except BaseException as exc:
            _leave_quietly(scheduling)
            box["error"] = exc
            started.set()

    handshake_s = handshake_timeout_s(params)
    thread = threading.Thread(target=waiter, name=name, daemon=True)
    reset()
    thread.start()
    if not started.wait(handshake_s):
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
            issued.append(step())
            scheduled.append(due)
        # Let the last wake arrive (or time out).
        deadline = now_ns() + int(params.timeout_s * 1e9)
        while now_ns() < deadline and not last_notify_answered(issued, wakes, params.planted_delay_ns):
            time.sleep(0.001)
    finally:
        box["stop"] = True
        thread.join(handshake_s)
    if box["error"] is not None:
        raise HarnessError("waiter failed: %r" % (box["error"],))
    first_t1, coalesced = match_open_loop(issued, wakes, params.planted_delay_ns)
    collector = LatencyCollector(params)
    for i in range(total):
        woke = first_t1.get(i)
        # Each sample is measured from the schedule; the notifier's own lateness is a component.
        collector.add(None if woke is None else woke - scheduled[i], notify_late=issued[i] - scheduled[i])
    counted_coalesced = sum(1 for i in coalesced if i >= params.warmup)
    return collector.result(
        mode="open",
        interval_us=params.interval_us,
        coalesced=counted_coalesced,
        notifier_cpu_seen=current_cpu(),
        waiter_cpu_seen=box["cpu"],
        notifier_tid=native_tid(),
        waiter_tid=box["tid"],
        **_scheduling_info(),
    )


def _take_waiter_role(params: MeasureParams) -> Optional[Tuple[int, int]]:
    """Pin the waiter thread for the run's placement and give it the waiter's scheduling policy
    (:func:`wakelab.core.realtime.enter_waiter`); returns what to put back before the thread ends.
    A CPU or a policy it cannot take is a harness error."""
    try:
        enter_role(params, WAITER)
    except OSError as exc:
        raise HarnessError("the waiter thread could not take the waiter's CPU: %s" % exc) from exc
    try:
        return realtime.enter_waiter()
    except realtime.RealtimeError as exc:
        raise HarnessError("the waiter thread could not take its scheduling policy: %s" % exc) from exc


def _leave_quietly(scheduling: Optional[Tuple[int, int]]) -> None:
    """Put a failing waiter thread's policy back; the failure it is leaving with is the one to report."""
    try:
        realtime.leave(scheduling)
    except OSError:
        pass


def _scheduling_info() -> Dict[str, object]:
    """``{"waiter_sched": "SCHED_FIFO priority 80", "rt_budget": {...}}`` when the waiter was given a
    policy (the budget for a realtime one), else nothing."""
    request = realtime.waiter_request()
    if request is None:
        return {}
    info: Dict[str, object] = {"waiter_sched": request.describe()}
    if request.realtime:
        info["rt_budget"] = realtime.rt_budget()  # how much of each period realtime tasks may run
    return info


def last_notify_answered(issued: List[int], wakes: List[int], planted_delay_ns: int = 0) -> bool:
    """True once a wake came after the last notify call began (its ``t0`` plus any planted delay).

    A wake between the last ``t0`` and its notify call is an earlier notify's, late: the open
    loop must wait on for the last one's, or end the run with it still on the way.
    """
    return bool(issued) and bool(wakes) and wakes[-1] >= issued[-1] + planted_delay_ns


def match_open_loop(issued: List[int], wakes: List[int], planted_delay_ns: int = 0) -> Tuple[Dict[int, int], List[int]]:
    """Match open-loop wakes to the notifies that caused them.

    ``issued`` are the notifies' ``t0`` in order, ``wakes`` the waiter's
    ``t1`` in order.  A wake answers the oldest notify still pending whose
    notify call began before the wake (``t0`` plus any planted delay); every
    other notify that began before it was merged into the same wake by the
    primitive (*coalesced*).  So a waiter that falls behind is never credited
    with a later, shorter deadline.  Returns ``({notify index: t1}, [indices
    of coalesced notifies])``; the notifies in neither timed out.
    """
    total = len(issued)
    begun = [t0 + planted_delay_ns for t0 in issued]
    first_t1: Dict[int, int] = {}
    coalesced: List[int] = []
    pending = 0
    for t1 in wakes:
        if pending < total and begun[pending] <= t1:
            first_t1[pending] = t1
            after = bisect.bisect_right(begun, t1, lo=pending)
            coalesced.extend(range(pending + 1, after))
            pending = after
    return first_t1, coalesced


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
