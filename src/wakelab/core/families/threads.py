"""Thread-coordination arms: a notifier thread wakes a waiter thread.

Every arm here runs on the thread driver (:mod:`wakelab.core.drivers.thread`):
one persistent waiter thread, a handshake outside the timed window, a settle
period, then ``t0`` in the notifier, the notify call, and ``t1`` in the
waiter.  They differ only in the primitive, which this module describes as a
:class:`~wakelab.core.drivers.WakePath` (reset / wait / notify), so that tests
can run the very same waiter against a notifier that never notifies.

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

import functools
import queue
import threading
from typing import Callable, Dict, List, Optional, Union

from wakelab.core import realtime
from wakelab.core.drivers import WakePath
from wakelab.core.drivers import thread as driver
from wakelab.core.drivers.thread import poll_wait
from wakelab.core.model import (
    AFTER_WAIT,
    BLOCKED,
    CROSS_THREAD,
    LATENCY,
    MATCHED,
    ROLE_REALTIME,
    SPINNING,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    Role,
    T1Shape,
    now_ns,
)

FAMILY = Family(id="threads", title="Threads", color="#0072B2", order=10, user_arms=True)


def event_path() -> WakePath:
    """``Event.set()`` wakes ``Event.wait(timeout)``."""
    event = threading.Event()
    return WakePath(reset=event.clear, wait=event.wait, notify=event.set)


def condition_path() -> WakePath:
    """``Condition.notify()`` under the lock wakes ``Condition.wait()`` guarded by a flag.

    The waiter re-checks the flag after every return from ``wait()``, so an
    early or spurious return is not counted as the wake; ``t1`` is taken right
    after the ``wait()`` call that precedes seeing the flag, i.e. after
    ``wait()`` has re-acquired the condition's lock and before the waiter
    releases it.  The notifier takes the lock and sets the flag before ``t0``
    (the waiter cannot look at it without the lock), so the window holds
    ``notify()``, the notifier's release of the lock, and the waiter's wake and
    re-acquire.  The lock is the default ``RLock``.
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

    def take_lock_and_flag() -> None:
        cond.acquire()
        flag[0] = True

    return WakePath(reset=reset, wait_stamped=wait, before=take_lock_and_flag, notify=cond.notify, after=cond.release)


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

    return WakePath(reset=reset, wait_stamped=wait, notify=lock.release)


def semaphore_path() -> WakePath:
    """``Semaphore.release()`` wakes ``Semaphore.acquire(timeout=...)`` on a count of 0."""
    sem = threading.Semaphore(0)

    def reset() -> None:
        while sem.acquire(blocking=False):  # drain a late release
            pass

    return WakePath(reset=reset, wait=functools.partial(_acquire, sem), notify=sem.release)


def _acquire(sem: threading.Semaphore, timeout_s: float) -> bool:
    return sem.acquire(timeout=timeout_s)


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

    return WakePath(reset=reset, wait_stamped=wait, notify=functools.partial(q.put, True))


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

    def bind() -> Callable[[], object]:
        return functools.partial(current[0].set_result, True)

    return WakePath(reset=reset, wait_stamped=wait, bind=bind)


def event_spin_path() -> WakePath:
    """A waiter polling ``Event.is_set()``, with ``time.sleep(0)`` between polls, sees ``set()``."""
    event = threading.Event()
    return WakePath(reset=event.clear, wait_stamped=poll_wait(event.is_set, yield_gil=True), notify=event.set)


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

    return WakePath(reset=reset, wait_stamped=poll_wait(took_one, yield_gil=True), notify=functools.partial(q.put, True))


# Every arm of this family, by name: its WakePath (tests run each waiter against a notifier
# that never notifies).
WAKE_PATHS: Dict[str, Callable[[], WakePath]] = {
    "event": event_path,
    "condition": condition_path,
    "lock-handoff": lock_handoff_path,
    "semaphore": semaphore_path,
    "queue": queue_path,
    "simplequeue": simplequeue_path,
    "future": future_path,
    "event-spin": event_spin_path,
    "queue-spin": queue_spin_path,
}


def _measure(name: str) -> Callable[[MeasureParams], RawLatency]:
    make = WAKE_PATHS[name]

    def measure(params: MeasureParams) -> RawLatency:
        return driver.measure(params, make(), "wakelab-waiter-" + name)

    measure.__name__ = "measure_" + name.replace("-", "_")
    measure.__doc__ = "Wake latency (ns) of the %s arm on the thread driver." % name
    return measure


def measure_event_fifo(params: MeasureParams) -> RawLatency:
    """The event arm with its waiter thread under ``SCHED_FIFO`` priority 80, which it takes itself
    (:func:`wakelab.core.realtime.enter_waiter`): what realtime scheduling buys a Python waiter."""
    with realtime.waiter_scheduling(realtime.FIFO_80):
        return driver.measure(params, WAKE_PATHS["event"](), "wakelab-waiter-event-fifo")


# "vs C": a waiter thread parked on a futex (Event, Condition, Lock, Semaphore, the queues and Future
# all end in one), t1 right after the wait returns -- the C condvar arm's experiment exactly.
FUTEX_AFTER_WAIT = T1Shape("futex", AFTER_WAIT)

ARMS: List[Arm] = [
    Arm(
        name="event",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="threading.Event: set() in the main thread wakes a worker blocked in wait()",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Event.set()",
        t1="worker thread: perf_counter_ns() as the first statement after Event.wait() returns",
        measure=_measure("event"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="event-fifo",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism=("threading.Event: set() in the main thread wakes a worker blocked in wait(); the worker runs under "
                   "SCHED_FIFO priority 80, set by itself (os.sched_setscheduler(0, ...)), the notifier as it is"),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Event.set()",
        t1="worker thread (SCHED_FIFO 80): perf_counter_ns() as the first statement after Event.wait() returns",
        measure=measure_event_fifo,
        requires=realtime.requires_realtime,
        native="native-condvar-fifo", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
        roles=(Role(ROLE_REALTIME, against="event"),),
    ),
    Arm(
        name="condition",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="threading.Condition: notify() with the lock held (flag set first) wakes a worker in wait(); the worker must re-acquire the lock the notifier then releases",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread, holding the condition's lock: perf_counter_ns() immediately before Condition.notify()",
        t1="worker thread: perf_counter_ns() right after Condition.wait() returns (lock re-acquired, still inside the with block) and before checking the flag",
        measure=_measure("condition"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="lock-handoff",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="threading.Lock held by the main thread: release() wakes a worker blocked in acquire(timeout=...)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Lock.release()",
        t1="worker thread: perf_counter_ns() as the first statement after Lock.acquire() returns (before it releases the lock)",
        measure=_measure("lock-handoff"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="semaphore",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="threading.Semaphore(0): release() in the main thread wakes a worker blocked in acquire(timeout=...)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Semaphore.release()",
        t1="worker thread: perf_counter_ns() as the first statement after Semaphore.acquire() returns",
        measure=_measure("semaphore"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="queue",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="queue.Queue: put() in the main thread wakes a worker blocked in get(timeout=...) on the empty queue",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Queue.put()",
        t1="worker thread: perf_counter_ns() as the first statement after Queue.get() returns",
        measure=_measure("queue"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="simplequeue",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="queue.SimpleQueue (C): put() in the main thread wakes a worker blocked in get(timeout=...) on the empty queue",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before SimpleQueue.put()",
        t1="worker thread: perf_counter_ns() as the first statement after SimpleQueue.get() returns",
        measure=_measure("simplequeue"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="future",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="concurrent.futures.Future (a fresh one per wake): set_result() in the main thread wakes a worker blocked in result(timeout=...)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Future.set_result()",
        t1="worker thread: perf_counter_ns() as the first statement after Future.result() returns",
        measure=_measure("future"),
        native="native-condvar", native_match=MATCHED, t1_shape=FUTEX_AFTER_WAIT,
    ),
    Arm(
        name="event-spin",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="threading.Event: set() in the main thread seen by a worker polling is_set() with time.sleep(0) between polls (GIL released, no sleep); under the GIL the worker waits for the GIL at t0",
        waiter=SPINNING,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Event.set()",
        t1="worker thread: perf_counter_ns() as the first statement after the is_set() poll that returned True",
        measure=_measure("event-spin"),
    ),
    Arm(
        name="queue-spin",
        family="threads",
        driver="thread",
        kind=LATENCY,
        mechanism="queue.Queue: put() in the main thread seen by a worker polling get_nowait() with time.sleep(0) between polls (GIL released, no sleep); under the GIL the worker waits for the GIL at t0",
        waiter=SPINNING,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before Queue.put()",
        t1="worker thread: perf_counter_ns() as the first statement after the get_nowait() poll that returned an item",
        measure=_measure("queue-spin"),
    ),
]
