"""Thread-coordination arms: a notifier thread wakes a waiter thread.

Every arm here runs the same experiment shape (see ``_drivers``): one
persistent waiter thread, a handshake outside the timed window, a settle
period, then ``t0`` in the notifier, the notify call, and ``t1`` in the
waiter.  They differ only in the primitive.  Each primitive is described by a
:class:`WakePath` (reset / wait / notify), so that tests can run the very same
waiter against a notifier that never notifies.

What the blocked arms have in common.  On Linux every CPython lock parks a
thread on a futex (through a POSIX semaphore in older versions, through
``PyMutex`` and its parking lot in newer ones), and ``Condition``, ``Event``,
``Semaphore``, ``queue.Queue`` and ``concurrent.futures.Future`` are Python
code layered on such locks.  A wake is therefore always one futex wake of a
parked thread; the arms differ in how much Python runs around it
(``SimpleQueue`` and a bare ``Lock`` almost none, ``Future.set_result`` the
most) and in whether the waiter must also win back a lock the notifier still
holds (``Condition``).  Their native counterpart is the C condvar arm, a futex
wake with no interpreter around it.

Spinning waiters and the GIL.  With the GIL, a cross-thread waiter cannot be
polling at ``t0``: the notifier must hold the GIL to take ``t0`` and to
notify, so at that instant the waiter sits in CPython's ``take_gil`` (or is
just entering it), parked on the GIL's condition variable.  ``t1 - t0`` of a
"spinning" thread arm is therefore the rest of the notifier's run up to its
next GIL release (the driver's ``done.wait``) plus a GIL hand-off to a waiter
that parked a few microseconds earlier; it is not a futex wake of the
primitive.  Only a free-threaded build (3.13t with the GIL off) lets the
waiter really spin.

How the waiter polls matters too.  A pure busy loop (``while not
event.is_set(): pass``) keeps the GIL until the notifier, woken from its
settle sleep, forces a switch after ``sys.getswitchinterval()`` (5 ms).  Every
wake then costs two forced switches of wall time (about 11 ms: n=200 took
2.4 s against 0.25 s), the settle period silently becomes settle + 5 ms, and
the samples follow the switch interval: on the 2-vCPU development VM (Python
3.11 twice, 3.13 once) p50 was 32-45 / 53-59 / 62-67 us at a switch interval
of 0.5 / 5 / 50 ms, with p99 up to 4.8 ms at 50 ms.  The spin arms here
therefore poll with ``time.sleep(0)`` between polls, which releases and
re-takes the GIL without sleeping: the notifier gets the GIL within a poll,
the settle period means what it says, and the samples do not follow the
switch interval (p50 17-39 us at all three, run-to-run noise).  Their
mechanism lines say so.  Compare them with the original lab's spinning signal
arm knowing that the signal arm needs no GIL hand-off at all (its handler and
its busy-wait share the main thread).
"""

from __future__ import annotations

import dataclasses
import queue
import threading
from typing import Callable, Dict, List, Optional, Union

from wakelab.core.drivers.thread import measure_thread_wake, measure_thread_wake_stamped, poll_wait
from wakelab.core.model import (
    BLOCKED,
    CROSS_THREAD,
    LATENCY,
    SPINNING,
    Arm,
    MeasureParams,
    RawLatency,
    now_ns,
)


def measure_event(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Event.set()`` waking a thread blocked in ``Event.wait()``."""
    event = threading.Event()
    return measure_thread_wake(params, reset=event.clear, wait=event.wait, notify=event.set)


@dataclasses.dataclass(frozen=True)
class WakePath:
    """One primitive's three moves, in the form ``measure_thread_wake_stamped`` takes.

    ``reset()`` (notifier, between wakes) returns the primitive to its
    un-notified state, clearing whatever a late or lost wake left behind;
    ``wait(timeout_s)`` (waiter) returns ``t1`` or ``None`` on timeout;
    ``notify(mark_t0)`` (notifier) calls ``mark_t0()`` immediately before the
    notify call.
    """

    reset: Callable[[], None]
    wait: Callable[[float], Optional[int]]
    notify: Callable[[Callable[[], None]], None]


def condition_path() -> WakePath:
    """``Condition.notify()`` under the lock wakes ``Condition.wait()`` guarded by a flag.

    The waiter re-checks the flag after every return from ``wait()``, so an
    early or spurious return is not counted as the wake; ``t1`` is taken right
    after the ``wait()`` call that precedes seeing the flag, i.e. after
    ``wait()`` has re-acquired the condition's lock and before the waiter
    releases it.  The notifier sets the flag before ``t0`` (the waiter cannot
    look at it without the lock), so the window holds ``notify()``, the
    notifier's release of the lock on leaving its ``with`` block, and the
    waiter's wake and re-acquire.  The lock is the default ``RLock``.
    """
    cond = threading.Condition()
    flag = [False]

    def reset() -> None:
        with cond:
            flag[0] = False

    def wait(timeout_s: float) -> Optional[int]:
        deadline_ns = now_ns() + int(timeout_s * 1e9)
        with cond:
            if flag[0]:  # notified before we could wait: not blocked, but not lost
                return now_ns()
            while True:
                remaining_ns = deadline_ns - now_ns()
                if remaining_ns <= 0:
                    return None
                cond.wait(remaining_ns / 1e9)
                t1 = now_ns()
                if flag[0]:
                    return t1

    def notify(mark_t0: Callable[[], None]) -> None:
        with cond:
            flag[0] = True
            mark_t0()
            cond.notify()

    return WakePath(reset, wait, notify)


def lock_handoff_path() -> WakePath:
    """``Lock.release()`` by the holder wakes ``Lock.acquire(timeout=...)``.

    ``reset`` takes the lock for the notifier with a non-blocking acquire: after
    a good wake the waiter has released it, after a lost one the notifier may
    still hold it (``threading.Lock`` has no owner, so either way it ends up
    held, without deadlocking on ourselves).  The waiter takes ``t1`` and only
    then releases the lock it was handed.
    """
    lock = threading.Lock()

    def reset() -> None:
        lock.acquire(blocking=False)

    def wait(timeout_s: float) -> Optional[int]:
        ok = lock.acquire(timeout=timeout_s)
        t1 = now_ns()
        if not ok:
            return None
        lock.release()
        return t1

    def notify(mark_t0: Callable[[], None]) -> None:
        mark_t0()
        lock.release()

    return WakePath(reset, wait, notify)


def semaphore_path() -> WakePath:
    """``Semaphore.release()`` wakes ``Semaphore.acquire(timeout=...)`` on a count of 0."""
    sem = threading.Semaphore(0)

    def reset() -> None:
        while sem.acquire(blocking=False):  # drain a late release
            pass

    def wait(timeout_s: float) -> Optional[int]:
        ok = sem.acquire(timeout=timeout_s)
        t1 = now_ns()
        return t1 if ok else None

    def notify(mark_t0: Callable[[], None]) -> None:
        mark_t0()
        sem.release()

    return WakePath(reset, wait, notify)


def _drain(get_nowait: Callable[[], object]) -> None:
    while True:
        try:
            get_nowait()
        except queue.Empty:
            return


def _queue_path(q: Union[queue.Queue[object], queue.SimpleQueue[object]]) -> WakePath:
    def reset() -> None:
        _drain(q.get_nowait)

    def wait(timeout_s: float) -> Optional[int]:
        try:
            q.get(timeout=timeout_s)
            t1 = now_ns()
        except queue.Empty:
            return None
        return t1

    def notify(mark_t0: Callable[[], None]) -> None:
        mark_t0()
        q.put(True)

    return WakePath(reset, wait, notify)


def queue_path() -> WakePath:
    """``queue.Queue.put()`` wakes ``get(timeout=...)`` on an empty queue."""
    return _queue_path(queue.Queue())


def simplequeue_path() -> WakePath:
    """``queue.SimpleQueue.put()`` (C implementation) wakes ``get(timeout=...)``."""
    return _queue_path(queue.SimpleQueue())


def future_path() -> WakePath:
    """``Future.set_result()`` wakes ``Future.result(timeout=...)``, a fresh Future per wake."""
    # Imported here so that loading the registry does not pull in
    # concurrent.futures (and logging) for workers that never run this arm.
    import concurrent.futures

    timeout_error = concurrent.futures.TimeoutError
    current: List[concurrent.futures.Future[object]] = [concurrent.futures.Future()]

    def reset() -> None:
        current[0] = concurrent.futures.Future()

    def wait(timeout_s: float) -> Optional[int]:
        try:
            current[0].result(timeout=timeout_s)
            t1 = now_ns()
        except timeout_error:
            return None
        return t1

    def notify(mark_t0: Callable[[], None]) -> None:
        future = current[0]
        mark_t0()
        future.set_result(True)

    return WakePath(reset, wait, notify)


def event_spin_path() -> WakePath:
    """A waiter polling ``Event.is_set()``, with ``time.sleep(0)`` between polls, sees ``set()``."""
    event = threading.Event()

    def notify(mark_t0: Callable[[], None]) -> None:
        mark_t0()
        event.set()

    return WakePath(event.clear, poll_wait(event.is_set, yield_gil=True), notify)


def queue_spin_path() -> WakePath:
    """A waiter polling ``Queue.get_nowait()``, with ``time.sleep(0)`` between polls, sees ``put()``."""
    q: queue.Queue[object] = queue.Queue()

    def took_one() -> bool:
        try:
            q.get_nowait()
        except queue.Empty:
            return False
        return True

    def reset() -> None:
        _drain(q.get_nowait)

    def notify(mark_t0: Callable[[], None]) -> None:
        mark_t0()
        q.put(True)

    return WakePath(reset, poll_wait(took_one, yield_gil=True), notify)


def _measure_path(params: MeasureParams, path: WakePath, name: str) -> RawLatency:
    return measure_thread_wake_stamped(
        params,
        reset=path.reset,
        wait=path.wait,
        notify=path.notify,
        name="wakelab-waiter-" + name,
    )


def measure_condition(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Condition.notify()`` waking a thread in ``Condition.wait()``."""
    return _measure_path(params, condition_path(), "condition")


def measure_lock_handoff(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Lock.release()`` waking a thread blocked in ``Lock.acquire()``."""
    return _measure_path(params, lock_handoff_path(), "lock-handoff")


def measure_semaphore(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Semaphore.release()`` waking a thread in ``acquire()``."""
    return _measure_path(params, semaphore_path(), "semaphore")


def measure_queue(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``queue.Queue.put()`` waking a thread in ``get()``."""
    return _measure_path(params, queue_path(), "queue")


def measure_simplequeue(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``queue.SimpleQueue.put()`` waking a thread in ``get()``."""
    return _measure_path(params, simplequeue_path(), "simplequeue")


def measure_future(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``Future.set_result()`` waking a thread in ``result()``."""
    return _measure_path(params, future_path(), "future")


def measure_event_spin(params: MeasureParams) -> RawLatency:
    """Latency (ns) from ``Event.set()`` to a polling thread seeing ``is_set()`` true."""
    return _measure_path(params, event_spin_path(), "event-spin")


def measure_queue_spin(params: MeasureParams) -> RawLatency:
    """Latency (ns) from ``Queue.put()`` to a polling thread's ``get_nowait()`` succeeding."""
    return _measure_path(params, queue_spin_path(), "queue-spin")


# The arms built from a WakePath, by name (tests run each waiter against a
# notifier that never notifies).  ``event`` keeps the original driver.
WAKE_PATHS: Dict[str, Callable[[], WakePath]] = {
    "condition": condition_path,
    "lock-handoff": lock_handoff_path,
    "semaphore": semaphore_path,
    "queue": queue_path,
    "simplequeue": simplequeue_path,
    "future": future_path,
    "event-spin": event_spin_path,
    "queue-spin": queue_spin_path,
}


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
        open_loop=True,
    ),
    Arm(
        name="condition",
        family="threads",
        kind=LATENCY,
        mechanism="threading.Condition: notify() with the lock held (flag set first) wakes a worker in wait(); the worker must re-acquire the lock the notifier then releases",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread, holding the condition's lock: perf_counter_ns() immediately before Condition.notify()",
        t1="worker thread: perf_counter_ns() right after Condition.wait() returns (lock re-acquired, still inside the with block) and before checking the flag",
        measure=measure_condition,
        native="native-condvar",
    ),
    Arm(
        name="lock-handoff",
        family="threads",
        kind=LATENCY,
        mechanism="threading.Lock held by the main thread: release() wakes a worker blocked in acquire(timeout=...)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Lock.release()",
        t1="worker thread: perf_counter_ns() as the first statement after Lock.acquire() returns (before it releases the lock)",
        measure=measure_lock_handoff,
        native="native-condvar",
    ),
    Arm(
        name="semaphore",
        family="threads",
        kind=LATENCY,
        mechanism="threading.Semaphore(0): release() in the main thread wakes a worker blocked in acquire(timeout=...)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Semaphore.release()",
        t1="worker thread: perf_counter_ns() as the first statement after Semaphore.acquire() returns",
        measure=measure_semaphore,
        native="native-condvar",
        open_loop=True,
    ),
    Arm(
        name="queue",
        family="threads",
        kind=LATENCY,
        mechanism="queue.Queue: put() in the main thread wakes a worker blocked in get(timeout=...) on the empty queue",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Queue.put()",
        t1="worker thread: perf_counter_ns() as the first statement after Queue.get() returns",
        measure=measure_queue,
        native="native-condvar",
        open_loop=True,
    ),
    Arm(
        name="simplequeue",
        family="threads",
        kind=LATENCY,
        mechanism="queue.SimpleQueue (C): put() in the main thread wakes a worker blocked in get(timeout=...) on the empty queue",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before SimpleQueue.put()",
        t1="worker thread: perf_counter_ns() as the first statement after SimpleQueue.get() returns",
        measure=measure_simplequeue,
        native="native-condvar",
        open_loop=True,
    ),
    Arm(
        name="future",
        family="threads",
        kind=LATENCY,
        mechanism="concurrent.futures.Future (a fresh one per wake): set_result() in the main thread wakes a worker blocked in result(timeout=...)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Future.set_result()",
        t1="worker thread: perf_counter_ns() as the first statement after Future.result() returns",
        measure=measure_future,
        native="native-condvar",
    ),
    Arm(
        name="event-spin",
        family="threads",
        kind=LATENCY,
        mechanism="threading.Event: set() in the main thread seen by a worker polling is_set() with time.sleep(0) between polls (GIL released, no sleep); under the GIL the worker waits for the GIL at t0",
        waiter=SPINNING,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Event.set()",
        t1="worker thread: perf_counter_ns() as the first statement after the is_set() poll that returned True",
        measure=measure_event_spin,
    ),
    Arm(
        name="queue-spin",
        family="threads",
        kind=LATENCY,
        mechanism="queue.Queue: put() in the main thread seen by a worker polling get_nowait() with time.sleep(0) between polls (GIL released, no sleep); under the GIL the worker waits for the GIL at t0",
        waiter=SPINNING,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Queue.put()",
        t1="worker thread: perf_counter_ns() as the first statement after the get_nowait() poll that returned an item",
        measure=measure_queue_spin,
    ),
]
