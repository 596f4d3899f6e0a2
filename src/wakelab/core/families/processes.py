"""Cross-process arms: the parent process (notifier) wakes a blocked child process (waiter).

Measuring side: standard library only, Python 3.9+.

All of them run on the child-process driver (:mod:`wakelab.core.drivers.child`),
which owns the loop: it starts the child once per arm (start-up is never part
of a sample), hands each wake over outside the timed window (the child says
"ready" before it blocks), lets ``settle_us`` pass, takes ``t0`` and notifies,
and blocks on the child's reply, which carries ``t1``.  ``t0`` is taken in the
parent and ``t1`` in the child with ``time.perf_counter_ns()``: on Linux that
is ``clock_gettime(CLOCK_MONOTONIC)``, a single system-wide clock shared by
every process of the machine, so the two stamps can be subtracted; every arm
refuses to run where it is not (:func:`requires_shared_clock`).

This module holds only the primitives: for each arm, what the parent does to
notify (a :class:`~wakelab.core.drivers.child.Notifier`) and what the child
does to wait (a factory, run *in the child*, returning a
:class:`~wakelab.core.drivers.child_side.WaitSide`), in a
:class:`~wakelab.core.drivers.child.ChildPath` per arm (:data:`CHILD_PATHS`).

* ``kill-sigwait-child``, ``pipe-process`` and ``eventfd-fork`` start their
  child by fork+exec of ``sys.executable`` (``subprocess.Popen``), never a bare
  ``os.fork()`` (unsafe, and warned about on 3.12+, in a process with
  threads).  ``eventfd-fork`` therefore shares its eventfd with the child
  across fork+*exec* (inherited through ``pass_fds``): the kernel object and
  the wake path are those of a forked child, the child just runs a fresh
  interpreter.  The arm keeps its name; its ``mechanism`` says exactly this.
* ``mp-event`` and ``mp-queue`` use a ``multiprocessing`` spawn child (see the
  driver on the resource tracker and the ``__main__`` guard).

The waits: ``sigtimedwait`` with SIGUSR1 blocked; ``poll()`` on the fd, ``t1``,
then the read (as the C floor does); ``Event.wait``; ``Queue.get``.  Before
each wake the child throws away anything a late or lost wake left behind (a
pending signal, bytes, the eventfd counter, a set flag, a queue item), so that
every wake starts from a waiter truly parked in the kernel.  Queue items carry
their wake number, so an item that arrives after its wake was counted lost is
skipped rather than timed.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import multiprocessing
import os
import queue
import select
import signal
import time
from typing import Any, Callable, Dict, List, Optional

from wakelab.core.drivers import SRC_DIR
from wakelab.core.drivers import child as driver
from wakelab.core.drivers.child import (  # noqa: F401 (WaiterChildError: part of this family's API)
    SPAWN,
    ChildPath,
    ChildWaiter,
    Notifier,
    WaiterChildError,
    requires_shared_clock,
)
from wakelab.core.drivers.child_side import WaitSide
from wakelab.core.families import fds, no_sigtimedwait_reason
from wakelab.core.model import (
    AFTER_WAIT,
    BLOCKED,
    CROSS_PROCESS,
    GROUP_PROCESSES,
    LATENCY,
    MATCHED,
    ROLE_SIGWAIT,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    Role,
    T1Shape,
)

FAMILY = Family(id="processes", title="Processes", color="#E69F00", order=60, group=GROUP_PROCESSES, user_arms=True)

now_ns = time.perf_counter_ns

# --- availability -------------------------------------------------------------


def requires_sigwait() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1"):
        return "SIGUSR1 does not exist on this platform"
    if not hasattr(signal, "sigtimedwait"):
        return no_sigtimedwait_reason()
    return requires_shared_clock()


def requires_poll() -> Optional[str]:
    if not hasattr(select, "poll"):
        return "select.poll is not available on this platform"
    return requires_shared_clock()


def requires_eventfd() -> Optional[str]:
    return fds.requires_eventfd() or requires_poll()


def requires_multiprocessing() -> Optional[str]:
    if "spawn" not in multiprocessing.get_all_start_methods():
        return "multiprocessing has no 'spawn' start method here"
    try:
        # Fails on platforms without a working sem_open (some containers).
        importlib.import_module("multiprocessing.synchronize")
    except ImportError as exc:
        return "multiprocessing synchronisation is unavailable: %s" % exc
    return requires_shared_clock()


# --- kill-sigwait-child ---------------------------------------------------------


def sigwait_waiter() -> WaitSide:
    """In the child: ``sigtimedwait({SIGUSR1})``, with SIGUSR1 blocked so it stays pending until taken."""
    sigset = {signal.SIGUSR1}
    # Blocked before the child says hello: from then on a SIGUSR1 waits for
    # sigtimedwait() instead of killing the child (the default action).
    signal.pthread_sigmask(signal.SIG_BLOCK, sigset)
    sigtimedwait = signal.sigtimedwait

    def reset() -> None:
        while sigtimedwait(sigset, 0) is not None:
            pass

    def wait(index: int, timeout_s: float) -> Optional[int]:
        got = sigtimedwait(sigset, timeout_s)
        t1 = now_ns()
        return t1 if got is not None else None

    return WaitSide(reset=reset, wait=wait)


def _kill_notifier(pid: int) -> Notifier:
    return Notifier(notify=functools.partial(os.kill, pid, signal.SIGUSR1))


def kill_sigwait_path() -> ChildPath:
    """``os.kill(child, SIGUSR1)`` wakes the child in ``sigtimedwait``."""
    return ChildPath(waiter=ChildWaiter(sigwait_waiter, path_entry=SRC_DIR), notifier=_kill_notifier)


# --- pipe-process, eventfd-fork ---------------------------------------------------


def _poll_then_consume(fd: int, consume: Callable[[], None]) -> WaitSide:
    """In the child: ``poll()`` a non-blocking fd, take ``t1``, then ``consume()`` what arrived."""
    # Non-blocking, so that resetting and consuming never block; the wait
    # itself is poll(), which is what bounds it by the timeout.
    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poll = poller.poll
    ceil = math.ceil

    def reset() -> None:
        while poll(0):
            consume()

    def wait(index: int, timeout_s: float) -> Optional[int]:
        events = poll(max(0, int(ceil(timeout_s * 1000.0))))
        t1 = now_ns()
        if not events:
            return None
        consume()
        return t1

    return WaitSide(reset=reset, wait=wait)


def pipe_waiter(fd: int) -> WaitSide:
    """In the child: poll the pipe's read end ``fd``, then read the byte(s)."""

    def consume() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        if not data:
            raise RuntimeError("the wake pipe was closed by the parent")

    return _poll_then_consume(fd, consume)


def eventfd_waiter(fd: int) -> WaitSide:
    """In the child: poll the eventfd ``fd``, then read it (which resets its counter to 0)."""
    eventfd_read = os.eventfd_read  # 3.10+, Linux

    def consume() -> None:
        try:
            eventfd_read(fd)
        except BlockingIOError:
            pass

    return _poll_then_consume(fd, consume)


def _closing(*fds_: int) -> Callable[[], None]:
    def close() -> None:
        for fd in fds_:
            os.close(fd)

    return close


def pipe_path() -> ChildPath:
    """``os.write`` of one byte to a pipe wakes the child polling its read end."""
    read_fd, write_fd = os.pipe()
    write = functools.partial(os.write, write_fd, b"w")
    return ChildPath(
        waiter=ChildWaiter(pipe_waiter, (read_fd,), pass_fds=(read_fd,), path_entry=SRC_DIR),
        notifier=lambda pid: Notifier(notify=write),
        close=_closing(read_fd, write_fd),
    )


def eventfd_path() -> ChildPath:
    """``os.eventfd_write(efd, 1)`` wakes the child polling the eventfd it inherited."""
    efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
    write = functools.partial(os.eventfd_write, efd, 1)
    return ChildPath(
        waiter=ChildWaiter(eventfd_waiter, (efd,), pass_fds=(efd,), path_entry=SRC_DIR),
        notifier=lambda pid: Notifier(notify=write),
        close=_closing(efd),
    )


# --- mp-event, mp-queue ---------------------------------------------------------------


def mp_event_waiter(event: Any) -> WaitSide:
    """In the child: ``Event.wait(timeout)``; reset clears the event (the child's own, shared flag)."""
    wait_event = event.wait

    def wait(index: int, timeout_s: float) -> Optional[int]:
        ok = wait_event(timeout_s)
        t1 = now_ns()
        return t1 if ok else None

    return WaitSide(reset=event.clear, wait=wait)


def mp_event_path() -> ChildPath:
    """``multiprocessing.Event.set()`` wakes the spawned child in ``Event.wait(timeout)``."""
    event = multiprocessing.get_context("spawn").Event()
    set_event = event.set
    return ChildPath(
        waiter=ChildWaiter(mp_event_waiter, (event,), start=SPAWN),
        notifier=lambda pid: Notifier(notify=set_event),
    )


def mp_queue_waiter(queue_: Any) -> WaitSide:
    """In the child: ``Queue.get(timeout)`` until an item numbered ``index`` or later arrives."""
    get = queue_.get
    get_nowait = queue_.get_nowait
    Empty = queue.Empty
    monotonic = time.monotonic

    def reset() -> None:
        while True:
            try:
                get_nowait()
            except Empty:
                return

    def wait(index: int, timeout_s: float) -> Optional[int]:
        deadline = monotonic() + timeout_s
        while True:
            try:
                item = get(timeout=max(0.0, deadline - monotonic()))
            except Empty:
                return None
            t1 = now_ns()
            if item >= index:  # an older item is a leftover of a lost wake
                return t1

    return WaitSide(reset=reset, wait=wait)


def mp_queue_path() -> ChildPath:
    """``multiprocessing.Queue.put(i)`` wakes the spawned child in ``Queue.get(timeout)``."""
    queue_ = multiprocessing.get_context("spawn").Queue()
    # The first put starts the queue's feeder thread: do it now, outside every window (the
    # child throws the item away).  The thread inherits the calling thread's CPU mask.
    queue_.put(-1)
    put = queue_.put
    numbers = itertools.count()

    def bind() -> Callable[[], object]:
        # Called once per wake, in order, before t0: item i is wake i.
        return functools.partial(put, next(numbers))

    def close() -> None:
        queue_.close()
        queue_.join_thread()  # the feeder thread must not outlive the arm

    return ChildPath(
        waiter=ChildWaiter(mp_queue_waiter, (queue_,), start=SPAWN),
        notifier=lambda pid: Notifier(bind=bind),
        close=close,
    )


# Every arm of this family, by name: its ChildPath factory.
CHILD_PATHS: Dict[str, Callable[[], ChildPath]] = {
    "kill-sigwait-child": kill_sigwait_path,
    "pipe-process": pipe_path,
    "eventfd-fork": eventfd_path,
    "mp-event": mp_event_path,
    "mp-queue": mp_queue_path,
}


def _measure(name: str) -> Callable[[MeasureParams], RawLatency]:
    make = CHILD_PATHS[name]

    def measure(params: MeasureParams) -> RawLatency:
        return driver.measure(params, make, name)

    measure.__name__ = "measure_" + name.replace("-", "_")
    measure.__doc__ = "Wake latency (ns) of the %s arm on the child-process driver." % name
    return measure


measure_kill_sigwait_child = _measure("kill-sigwait-child")
measure_pipe_process = _measure("pipe-process")
measure_eventfd_fork = _measure("eventfd-fork")
measure_mp_event = _measure("mp-event")
measure_mp_queue = _measure("mp-queue")


ARMS: List[Arm] = [
    Arm(
        name="kill-sigwait-child",
        family="processes",
        driver="child",
        kind=LATENCY,
        mechanism="os.kill(child_pid, SIGUSR1) from the parent wakes a fork+exec'd child process blocked in "
        "signal.sigtimedwait() with SIGUSR1 blocked",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before os.kill(child_pid, SIGUSR1)",
        t1="child: perf_counter_ns() as the first statement after signal.sigtimedwait() returns",
        measure=measure_kill_sigwait_child,
        requires=requires_sigwait,
        native="native-kill-sigwait-child", native_match=MATCHED, t1_shape=T1Shape("sigtimedwait", AFTER_WAIT),
        roles=(Role(ROLE_SIGWAIT),),
    ),
    Arm(
        name="pipe-process",
        family="processes",
        driver="child",
        kind=LATENCY,
        mechanism="os.write() of one byte to a pipe wakes a fork+exec'd child process blocked in poll() on "
        "the read end (the child reads the byte after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before os.write(pipe_w, b'w')",
        t1="child: perf_counter_ns() as the first statement after poll() on the pipe returns, before the read",
        measure=measure_pipe_process,
        requires=requires_poll,
        native="native-pipe-process", native_match=MATCHED, t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    Arm(
        name="mp-event",
        family="processes",
        driver="child",
        kind=LATENCY,
        mechanism="multiprocessing.Event (spawn context), three hand-offs between the processes: set() in "
        "the parent, holding the event's condition lock, posts the condition's wait semaphore, which wakes "
        "the spawned child blocked in Event.wait(timeout) (parent to child); set() then waits on the "
        "condition's woken-count semaphore until the child posts it (child to parent); the child's wait "
        "re-takes the condition lock, which set() releases as it returns (parent to child).  A hand-off "
        "is a kernel sleep and wake-up when its receiver is already blocked: always so for the first; "
        "for the other two it depends on which side gets there first",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before multiprocessing.Event.set(), which returns only "
        "after the child has posted the woken-count semaphore",
        t1="child: perf_counter_ns() as the first statement after Event.wait() returns True, i.e. after the "
        "child re-took the condition lock released at the end of set() and re-checked the event's flag",
        measure=measure_mp_event,
        requires=requires_multiprocessing,
    ),
    Arm(
        name="mp-queue",
        family="processes",
        driver="child",
        kind=LATENCY,
        mechanism="multiprocessing.Queue (spawn context): put(i) in the parent appends i to the queue's "
        "buffer and wakes the queue's feeder thread in the parent (a threading.Condition: a cross-thread "
        "wake under the GIL), which pickles i and writes it to the queue's pipe under the queue's write "
        "lock; that write wakes the spawned child blocked in poll() on the pipe inside Queue.get(timeout)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before multiprocessing.Queue.put(i)",
        t1="child: perf_counter_ns() as the first statement after Queue.get() returns item i, i.e. after "
        "the read from the pipe and the unpickling of i",
        measure=measure_mp_queue,
        requires=requires_multiprocessing,
    ),
    Arm(
        name="eventfd-fork",
        family="processes",
        driver="child",
        kind=LATENCY,
        mechanism="os.eventfd shared with a child process (inherited across fork+exec via "
        "pass_fds): os.eventfd_write() wakes the child blocked in poll() on it (the child reads the "
        "counter after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: perf_counter_ns() immediately before os.eventfd_write(efd, 1)",
        t1="child: perf_counter_ns() as the first statement after poll() on the eventfd returns, before the read",
        measure=measure_eventfd_fork,
        requires=requires_eventfd,
        native="native-eventfd-fork", native_match=MATCHED, t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
]
