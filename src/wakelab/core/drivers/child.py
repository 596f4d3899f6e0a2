"""The waiter side of the cross-process arms: runs in the *child* process.

Measuring side: standard library only, Python 3.9+.  This module is imported
in two ways:

* by a child started with ``subprocess.Popen`` (``kill-sigwait-child``,
  ``pipe-process``, ``eventfd-fork``): the parent runs
  ``python -c <bootstrap> <src dir> <mode> <conn fd> <timeout_s> <waiter cpu>
  [<fd>]`` and the bootstrap calls :func:`main`;
* by a ``multiprocessing`` child started with the *spawn* method
  (``mp-event``, ``mp-queue``): :func:`mp_event_waiter` and
  :func:`mp_queue_waiter` are the process targets.

Protocol (pickled tuples over a ``multiprocessing.connection.Connection``,
always *outside* the timed window)::

    child  -> parent   ("hello", {"pid": ..., "clock": ..., "python": ..., "cpus": ...})
    parent -> child    i >= 0          arm wake number i
    child  -> parent   ("ready", i)    about to block in the wait
                       ... parent settles, takes t0, notifies ...
    child  -> parent   ("woke", t1)    t1 = perf_counter_ns() right after the wait
                    or ("lost", i)     the wait timed out
    parent -> child    -1              quit
    child  -> parent   ("bye", {"waiter_cpu_seen": ...})   then exit status 0
    child  -> parent   ("error", text) then exit status 1, on any failure

The child is the *waiter* of the placement: when the parent passes a waiter
CPU, the child pins itself there as its first act (before ``hello``, and
before it could start a thread, which would inherit the mask); ``cpus`` in
``hello`` is its mask after that, and ``waiter_cpu_seen`` in ``bye`` the CPU
it last ran on at the end of its wake loop.

Before each ``ready`` the child throws away anything left over from an
earlier wake (a late signal, byte, counter or queue item after a lost wake),
so that every wake starts from a waiter truly parked in the kernel.
"""

from __future__ import annotations

import math
import os
import select
import signal
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

from wakelab.core.placement import current_cpu, pin_current_thread

now_ns = time.perf_counter_ns

QUIT = -1

# wait_once(index, timeout_s) -> t1 in ns, or None when the wait timed out.
WaitOnce = Callable[[int, float], Optional[int]]


def child_facts() -> Dict[str, object]:
    """What the parent checks (the clock) and records (interpreter, CPUs) about the child."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    return {
        "pid": os.getpid(),
        "clock": time.get_clock_info("perf_counter").implementation,
        "python": sys.version.split()[0],
        "cpus": sorted(getaffinity(0)) if getaffinity is not None else None,
    }


def serve(conn: Any, wait_once: WaitOnce, drain: Callable[[], None], timeout_s: float) -> int:
    """Run the waiter loop until the parent says quit; return the exit status.

    Each wait gives up after ``timeout_s`` (a lost wake, reported as such).
    """
    try:
        conn.send(("hello", child_facts()))
        while True:
            try:
                index = conn.recv()
            except EOFError:  # the parent went away: nothing left to do
                return 0
            if index == QUIT:
                conn.send(("bye", {"waiter_cpu_seen": current_cpu()}))
                return 0
            drain()
            conn.send(("ready", index))
            t1 = wait_once(index, timeout_s)
            if t1 is None:
                conn.send(("lost", index))
            else:
                conn.send(("woke", t1))
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except Exception:
            pass
        return 1
    finally:
        conn.close()


def _poll_ms(timeout_s: float) -> int:
    return max(0, int(math.ceil(timeout_s * 1000.0)))


# --- Popen children ---------------------------------------------------------


def _sigwait_waiter() -> Tuple[WaitOnce, Callable[[], None]]:
    signum = signal.SIGUSR1
    sigset = {signum}
    # Blocked before "hello": from then on a SIGUSR1 stays pending until
    # sigtimedwait() takes it, instead of killing us (default action).
    signal.pthread_sigmask(signal.SIG_BLOCK, sigset)
    sigtimedwait = signal.sigtimedwait

    def drain() -> None:
        while sigtimedwait(sigset, 0) is not None:
            pass

    def wait_once(index: int, timeout_s: float) -> Optional[int]:
        got = sigtimedwait(sigset, timeout_s)
        t1 = now_ns()
        return t1 if got is not None else None

    return wait_once, drain


def _fd_waiter(fd: int, consume: Callable[[], None]) -> Tuple[WaitOnce, Callable[[], None]]:
    # Non-blocking, so that draining and consuming never block; the wait
    # itself is poll(), which is what bounds it by the timeout.
    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poll = poller.poll

    def drain() -> None:
        while True:
            ready = poll(0)
            if not ready:
                return
            consume()

    def wait_once(index: int, timeout_s: float) -> Optional[int]:
        events = poll(_poll_ms(timeout_s))
        t1 = now_ns()
        if not events:
            return None
        consume()
        return t1

    return wait_once, drain


def _pipe_waiter(fd: int) -> Tuple[WaitOnce, Callable[[], None]]:
    def consume() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        if not data:
            raise RuntimeError("the wake pipe was closed by the parent")

    return _fd_waiter(fd, consume)


def _eventfd_waiter(fd: int) -> Tuple[WaitOnce, Callable[[], None]]:
    eventfd_read = os.eventfd_read  # 3.10+, Linux

    def consume() -> None:
        try:
            eventfd_read(fd)  # resets the counter to 0
        except BlockingIOError:
            pass

    return _fd_waiter(fd, consume)


def main(argv: List[str]) -> int:
    """Entry point of a Popen child: ``<mode> <conn fd> <timeout_s> <waiter cpu or -> [<fd>]``."""
    from multiprocessing.connection import Connection

    mode, conn_fd, timeout_s = argv[0], int(argv[1]), float(argv[2])
    conn = Connection(conn_fd)
    try:
        pin_current_thread(None if argv[3] == "-" else int(argv[3]))
        if mode == "sigwait":
            wait_once, drain = _sigwait_waiter()
        elif mode == "pipe":
            wait_once, drain = _pipe_waiter(int(argv[4]))
        elif mode == "eventfd":
            wait_once, drain = _eventfd_waiter(int(argv[4]))
        else:
            raise ValueError("unknown waiter mode %r" % (mode,))
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        finally:
            conn.close()
        return 1
    return serve(conn, wait_once, drain, timeout_s)


# --- multiprocessing (spawn) children ----------------------------------------


def _start_mp_waiter(conn: Any, waiter_cpu: Optional[int]) -> None:
    try:
        pin_current_thread(waiter_cpu)
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        finally:
            conn.close()
        sys.exit(1)


def mp_event_waiter(conn: Any, event: Any, timeout_s: float, waiter_cpu: Optional[int] = None) -> None:
    """Process target: wait on a ``multiprocessing.Event`` the parent clears and sets."""
    _start_mp_waiter(conn, waiter_cpu)
    wait = event.wait

    def wait_once(index: int, timeout: float) -> Optional[int]:
        ok = wait(timeout)
        t1 = now_ns()
        return t1 if ok else None

    # The parent clears the event before each wake: nothing to drain here.
    sys.exit(serve(conn, wait_once, lambda: None, timeout_s))


def mp_queue_waiter(conn: Any, queue_: Any, timeout_s: float, waiter_cpu: Optional[int] = None) -> None:
    """Process target: ``get()`` wake number i, put by the parent, from a ``multiprocessing.Queue``."""
    _start_mp_waiter(conn, waiter_cpu)
    import queue

    get = queue_.get
    Empty = queue.Empty

    def drain() -> None:
        while True:
            try:
                queue_.get_nowait()
            except Empty:
                return

    def wait_once(index: int, timeout: float) -> Optional[int]:
        # Items carry their wake number, so an item left over from an earlier
        # (lost) wake is recognised and skipped rather than timed.
        deadline = time.monotonic() + timeout
        while True:
            try:
                item = get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                return None
            t1 = now_ns()
            if item == index:
                return t1

    sys.exit(serve(conn, wait_once, drain, timeout_s))
