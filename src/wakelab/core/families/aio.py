"""asyncio arms: waking an event loop that sits idle in its selector.

(The module is called ``aio`` so that it never shadows the standard
library's ``asyncio``.)

Every arm uses the standard library's own ``asyncio.SelectorEventLoop``
(epoll on Linux), created explicitly so that an installed policy such as
uvloop cannot silently change the experiment.

How the loop is known to be *idle*: for each wake the loop itself
announces, from a callback, that it is about to have nothing to do (its
only pending item being the wake's timeout timer); the notifier then lets
``settle_us`` pass, so the loop is parked in ``epoll_wait`` when ``t0`` is
taken.  This mirrors the blocked-waiter handshake of the thread arms.

How waits stay bounded: every wake arms a ``loop.call_later(timeout_s)``
timer in the loop, which resolves the wake as lost if the notify never
lands; the notifier's own waits on the loop are bounded generously beyond
that, and a loop that stops answering raises :class:`HarnessError` instead
of hanging.  Wake numbers (``seq``) make a late notify from a lost wake
harmless to the next one.

Cross-thread arms run the loop in a waiter thread, which is stopped,
joined and whose loop is closed on the way out, whatever happened.  The
``add-signal-handler`` arm must run its loop in the main thread (CPython
installs signal handlers and the wakeup fd only there); it restores the
handler, the mask and the wakeup fd afterwards.

Placement (``params.placement``): the worker has pinned the calling thread
to the notifier's CPU.  The loop thread takes the waiter role as its first
act (:func:`~wakelab.core.placement.enter_role`).  In
``add-signal-handler`` the roles are the other way round -- the loop, and so
the waiter, is the main thread -- so the main thread moves to the waiter's
CPU for the arm's duration (its mask is restored afterwards) and the helper
thread that sends the signal takes the notifier role.  Each side reads the
CPU it last ran on at the end of its loop; the raw record's ``info`` has
them as ``notifier_cpu_seen`` and ``waiter_cpu_seen``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import selectors
import signal
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

from wakelab.core.drivers import HarnessError
from wakelab.core.model import (
    BLOCKED,
    CROSS_THREAD,
    LATENCY,
    Arm,
    LatencyCollector,
    MeasureParams,
    RawLatency,
    now_ns,
    plant_delay,
)
from wakelab.core.placement import NOTIFIER, WAITER, current_cpu, enter_role, preserved_affinity
from wakelab.core.sigstate import preserved_signal_state


def _handshake_s(params: MeasureParams) -> float:
    # The loop's own timeout timer always ends a wake; allow for it generously.
    return params.timeout_s + 5.0


def _new_loop() -> asyncio.AbstractEventLoop:
    """The stdlib selector loop, with debug mode off even under ``-X dev``.

    Debug mode records a traceback for every scheduled callback, which would
    measure asyncio's debugging aid instead of its wake path.
    """
    loop = asyncio.SelectorEventLoop()
    loop.set_debug(False)
    return loop


def _loop_info(
    params: MeasureParams, notifier_cpu_seen: Optional[int], waiter_cpu_seen: Optional[int]
) -> Dict[str, object]:
    return {
        "settle_us": params.settle_us,
        "loop": "asyncio.SelectorEventLoop",
        "selector": selectors.DefaultSelector.__name__,
        "asyncio_debug": False,
        "notifier_cpu_seen": notifier_cpu_seen,
        "waiter_cpu_seen": waiter_cpu_seen,
    }


def _cpu_seen_by_loop(loop: asyncio.AbstractEventLoop, timeout_s: float) -> Optional[int]:
    """The CPU the loop's own thread runs on, read in that thread (outside any timed window)."""
    seen: List[Optional[int]] = []
    answered = threading.Event()

    def read() -> None:
        seen.append(current_cpu())
        answered.set()

    loop.call_soon_threadsafe(read)
    if not answered.wait(timeout_s):
        raise HarnessError("the event loop did not answer")
    return seen[0]


def _cancel_tasks_and_stop(loop: asyncio.AbstractEventLoop) -> None:
    """Runs in the loop: cancel what is left, then stop once every task has finished.

    Stopping only after the tasks' done-callbacks ran lets a cancellation
    reach the futures chained to them (``run_coroutine_threadsafe``).
    """
    pending = set(asyncio.all_tasks(loop))
    if not pending:
        loop.stop()
        return

    def finished(task: "asyncio.Task[Any]") -> None:
        pending.discard(task)
        if not pending:
            loop.call_soon(loop.stop)

    for task in list(pending):
        task.add_done_callback(finished)
        task.cancel()


@contextlib.contextmanager
def _open_loop_thread(
    name: str, join_s: float, params: Optional[MeasureParams] = None
) -> Iterator[asyncio.AbstractEventLoop]:
    """A fresh SelectorEventLoop running forever in a daemon thread.

    The thread takes the waiter role of ``params``' placement before the
    loop starts.  On exit the loop's leftover tasks are cancelled, the loop
    stopped, the thread joined (at most ``join_s``) and the loop closed.
    """
    loop = _new_loop()
    thread = None  # type: Optional[threading.Thread]
    try:
        started = threading.Event()
        loop.call_soon(started.set)

        failed: List[BaseException] = []

        def run_loop() -> None:
            # Only this thread's mask changes; it dies with the thread.
            if params is not None:
                try:
                    enter_role(params, WAITER)
                except BaseException as exc:  # reported by the caller below
                    failed.append(exc)
                    started.set()
                    return
            loop.run_forever()

        thread = threading.Thread(target=run_loop, name=name, daemon=True)
        thread.start()
        if not started.wait(join_s):
            raise HarnessError("the event loop thread did not start")
        if failed:
            raise HarnessError("the event loop thread could not take the waiter's CPU: %s" % failed[0]) from failed[0]
        yield loop
    finally:
        if thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(_cancel_tasks_and_stop, loop)
            thread.join(join_s)
            if thread.is_alive():
                # A running loop cannot be closed; say so rather than hang.
                raise HarnessError("the event loop thread did not stop within %.1f s" % join_s)
        loop.close()


# -- call_soon_threadsafe -----------------------------------------------------


def measure_call_soon_threadsafe(params: MeasureParams, *, _deliver: bool = True) -> RawLatency:
    """Wake latency (ns) of ``loop.call_soon_threadsafe(cb)`` reaching ``cb`` on an idle loop.

    The loop runs in a waiter thread; the main thread is the notifier.
    ``_deliver=False`` (tests only) skips the notify, so every wake is lost.
    """
    collector = LatencyCollector(params)
    handshake_s = _handshake_s(params)
    ready = threading.Event()
    done = threading.Event()
    box = {"seq": -1, "t1": None, "timer": None}  # type: Dict[str, Any]

    def on_wake(seq: int) -> None:
        t1 = now_ns()
        if seq != box["seq"] or done.is_set():
            return  # a late notify of an earlier, already lost wake
        box["timer"].cancel()
        box["t1"] = t1
        done.set()

    def on_timeout(seq: int) -> None:
        if seq != box["seq"] or done.is_set():
            return
        box["t1"] = None
        done.set()

    with _open_loop_thread("wakelab-asyncio-loop", handshake_s, params) as loop:

        def prepare(seq: int) -> None:
            # Runs in the loop; once it returns the loop has only the timer left.
            box["timer"] = loop.call_later(params.timeout_s, on_timeout, seq)
            ready.set()

        for seq in range(params.total_wakes):
            ready.clear()
            done.clear()
            box["seq"] = seq
            box["t1"] = None
            loop.call_soon_threadsafe(prepare, seq)
            if not ready.wait(handshake_s):
                raise HarnessError("the event loop did not announce it was idle")
            time.sleep(params.settle_s)
            t0 = now_ns()
            plant_delay(params, t0)
            if _deliver:
                loop.call_soon_threadsafe(on_wake, seq)
            if not done.wait(handshake_s):
                raise HarnessError("the event loop did not resolve wake %d" % seq)
            t1 = box["t1"]  # type: Optional[int]
            collector.add(None if t1 is None else t1 - t0)
        notifier_cpu_seen = current_cpu()
        waiter_cpu_seen = _cpu_seen_by_loop(loop, handshake_s)
    return collector.result(**_loop_info(params, notifier_cpu_seen, waiter_cpu_seen))


# -- asyncio.Event --------------------------------------------------------------


def measure_asyncio_event(params: MeasureParams, *, _deliver: bool = True) -> RawLatency:
    """Wake latency (ns) of ``asyncio.Event.set()`` (sent with call_soon_threadsafe) reaching the waiting task.

    Each wake uses a fresh Event and a fresh task, created in the loop, so a
    late ``set`` of a lost wake cannot touch the next one.
    ``_deliver=False`` (tests only) skips the notify, so every wake is lost.
    """
    collector = LatencyCollector(params)
    handshake_s = _handshake_s(params)
    ready = threading.Event()
    done = threading.Event()
    box = {"event": None, "t1": None, "timed_out": -1}  # type: Dict[str, Any]

    def on_timeout(seq: int, event: asyncio.Event) -> None:
        box["timed_out"] = seq
        event.set()

    async def wait_for_set(seq: int, event: asyncio.Event, timer: asyncio.TimerHandle) -> None:
        await event.wait()
        t1 = now_ns()
        timer.cancel()
        box["t1"] = None if box["timed_out"] == seq else t1
        done.set()

    with _open_loop_thread("wakelab-asyncio-loop", handshake_s, params) as loop:

        def prepare(seq: int) -> None:
            # Created in the loop thread: on 3.9 asyncio.Event() binds to the running loop.
            event = asyncio.Event()
            box["event"] = event
            timer = loop.call_later(params.timeout_s, on_timeout, seq, event)
            loop.create_task(wait_for_set(seq, event, timer))
            # Queued after the task's first step, so it runs once the task is parked in wait().
            loop.call_soon(ready.set)

        for seq in range(params.total_wakes):
            ready.clear()
            done.clear()
            box["t1"] = None
            loop.call_soon_threadsafe(prepare, seq)
            if not ready.wait(handshake_s):
                raise HarnessError("the event loop did not announce it was idle")
            event = box["event"]
            time.sleep(params.settle_s)
            t0 = now_ns()
            plant_delay(params, t0)
            if _deliver:
                loop.call_soon_threadsafe(event.set)
            if not done.wait(handshake_s):
                raise HarnessError("the event loop did not resolve wake %d" % seq)
            t1 = box["t1"]  # type: Optional[int]
            collector.add(None if t1 is None else t1 - t0)
        notifier_cpu_seen = current_cpu()
        waiter_cpu_seen = _cpu_seen_by_loop(loop, handshake_s)
    return collector.result(**_loop_info(params, notifier_cpu_seen, waiter_cpu_seen))


# -- run_coroutine_threadsafe -----------------------------------------------------


async def _coroutine_start_ns() -> int:
    return now_ns()


def measure_run_coroutine_threadsafe(params: MeasureParams) -> RawLatency:
    """Round trip (ns) of ``asyncio.run_coroutine_threadsafe(coro, loop).result()`` to an idle loop.

    The sample runs from just before the call to the calling thread's return
    from ``future.result()``; the component ``coroutine_start`` is the time
    from ``t0`` to the coroutine's first statement in the loop thread.
    """
    collector = LatencyCollector(params)
    handshake_s = _handshake_s(params)
    ready = threading.Event()
    with _open_loop_thread("wakelab-asyncio-loop", handshake_s, params) as loop:
        for _ in range(params.total_wakes):
            ready.clear()
            loop.call_soon_threadsafe(ready.set)
            if not ready.wait(handshake_s):
                raise HarnessError("the event loop did not announce it was idle")
            time.sleep(params.settle_s)
            coro = _coroutine_start_ns()  # created outside the timed window
            t0 = now_ns()
            plant_delay(params, t0)
            future = asyncio.run_coroutine_threadsafe(coro, loop)
            try:
                started_ns = future.result(params.timeout_s)
                t1 = now_ns()
            except concurrent.futures.TimeoutError:
                future.cancel()
                collector.add(None)
                continue
            collector.add(t1 - t0, coroutine_start=started_ns - t0)
        notifier_cpu_seen = current_cpu()
        waiter_cpu_seen = _cpu_seen_by_loop(loop, handshake_s)
    return collector.result(**_loop_info(params, notifier_cpu_seen, waiter_cpu_seen))


# -- add_signal_handler -------------------------------------------------------------


def requires_add_signal_handler() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1"):
        return "SIGUSR1 does not exist on this platform"
    if sys.platform == "win32":
        return "loop.add_signal_handler() is not available on Windows"
    if threading.current_thread() is not threading.main_thread():
        return "loop.add_signal_handler() works only on a loop in the main thread"
    return None


def measure_add_signal_handler(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of SIGUSR1 sent by a helper thread reaching a ``loop.add_signal_handler`` callback.

    The loop runs in the main thread, idle in ``epoll_wait``.  The path:
    ``os.kill`` -> kernel delivers to the main thread (the helper blocks
    SIGUSR1 in its own mask) -> CPython's C handler writes the signal number
    to the loop's wakeup socket -> ``epoll_wait`` returns -> the loop reads
    the socket and schedules the callback -> next iteration runs it.

    Here the main thread is the *waiter*: for the arm's duration it moves to
    the waiter's CPU (its mask is restored afterwards) and the helper thread
    takes the notifier role.
    """
    signum = signal.SIGUSR1
    collector = LatencyCollector(params)
    handshake_s = _handshake_s(params)
    pid = os.getpid()
    go = threading.Event()
    sent = threading.Event()
    box = {
        "stop": False,
        "t0": None,
        "error": None,
        "future": None,
        "notifier_cpu_seen": None,
        "waiter_cpu_seen": None,
    }  # type: Dict[str, Any]

    def notifier() -> None:
        # Runs in the helper thread; its signal mask and CPU mask die with it.
        try:
            enter_role(params, NOTIFIER)
            signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
            while True:
                while not go.wait(handshake_s):
                    pass
                go.clear()
                if box["stop"]:
                    box["notifier_cpu_seen"] = current_cpu()
                    return
                time.sleep(params.settle_s)
                t0 = now_ns()
                plant_delay(params, t0)
                os.kill(pid, signum)
                box["t0"] = t0
                sent.set()
        except BaseException as exc:  # surfaced by the loop below
            box["error"] = exc
            sent.set()

    def on_signal() -> None:
        t1 = now_ns()
        future = box["future"]
        if future is not None and not future.done():
            future.set_result(t1)

    def on_timeout(future: "asyncio.Future[Optional[int]]") -> None:
        if not future.done():
            future.set_result(None)

    async def run_wakes(loop: asyncio.AbstractEventLoop) -> None:
        for _ in range(params.total_wakes):
            future = loop.create_future()  # type: asyncio.Future[Optional[int]]
            box["future"] = future
            sent.clear()
            timer = loop.call_later(params.timeout_s, on_timeout, future)
            go.set()  # "about to wait": the helper now settles, then signals
            t1 = await future
            timer.cancel()
            box["future"] = None
            # Wait for the helper to finish its notify (outside the timed window).
            if not sent.wait(handshake_s):
                raise HarnessError("the signalling thread did not finish its notify")
            if box["error"] is not None:
                raise HarnessError("the signalling thread failed: %r" % (box["error"],))
            if t1 is None:
                collector.add(None)
                # Let a straggling signal land here rather than in the next wake.
                await asyncio.sleep(params.settle_s)
            else:
                collector.add(t1 - box["t0"])
        box["waiter_cpu_seen"] = current_cpu()

    with preserved_signal_state([signum]), preserved_affinity():
        loop = _new_loop()
        thread = None  # type: Optional[threading.Thread]
        try:
            enter_role(params, WAITER)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            loop.add_signal_handler(signum, on_signal)
            thread = threading.Thread(target=notifier, name="wakelab-signal-sender", daemon=True)
            thread.start()
            loop.run_until_complete(run_wakes(loop))
        finally:
            try:
                if thread is not None:
                    box["stop"] = True
                    go.set()
                    thread.join(handshake_s)
            finally:
                # Inside preserved_signal_state: close() would reset the wakeup fd
                # to -1, and the restore then puts the original back.
                loop.remove_signal_handler(signum)
                loop.close()
        if thread is not None and thread.is_alive():
            raise HarnessError("the signalling thread did not stop")
    return collector.result(**_loop_info(params, box["notifier_cpu_seen"], box["waiter_cpu_seen"]))


# Native floor: call_soon_threadsafe writes a byte to the loop's self-pipe (a socketpair) and the
# loop wakes from epoll, the experiment native-pipe does in C.  run-coroutine-threadsafe is a round
# trip (two wakes) and add-signal-handler a signal through the wakeup fd: no C arm matches them.
ARMS: List[Arm] = [
    Arm(
        name="call-soon-threadsafe",
        family="asyncio",
        kind=LATENCY,
        mechanism="loop.call_soon_threadsafe(cb) from the main thread wakes an idle asyncio loop (epoll) in a worker thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before loop.call_soon_threadsafe(cb)",
        t1="loop thread: perf_counter_ns() as the first statement of cb",
        measure=measure_call_soon_threadsafe,
    ),
    Arm(
        name="asyncio-event",
        family="asyncio",
        kind=LATENCY,
        mechanism="asyncio.Event.set() sent with call_soon_threadsafe wakes a task awaiting event.wait() on an idle loop in a worker thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before loop.call_soon_threadsafe(event.set)",
        t1="loop thread: perf_counter_ns() as the first statement after `await event.wait()` returns in the waiting task",
        measure=measure_asyncio_event,
    ),
    Arm(
        name="run-coroutine-threadsafe",
        family="asyncio",
        kind=LATENCY,
        mechanism="asyncio.run_coroutine_threadsafe(coro, loop).result() from the main thread to an idle loop in a worker thread (round trip)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before asyncio.run_coroutine_threadsafe(coro, loop)",
        t1="main thread: perf_counter_ns() as the first statement after future.result() returns (component coroutine_start: the coroutine's first statement)",
        measure=measure_run_coroutine_threadsafe,
    ),
    Arm(
        name="add-signal-handler",
        family="asyncio",
        kind=LATENCY,
        mechanism="os.kill(getpid(), SIGUSR1) from a helper thread wakes an idle asyncio loop in the main thread through loop.add_signal_handler",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="helper thread: perf_counter_ns() immediately before os.kill(os.getpid(), SIGUSR1)",
        t1="main thread: perf_counter_ns() as the first statement of the add_signal_handler callback",
        measure=measure_add_signal_handler,
        requires=requires_add_signal_handler,
        needs_main_thread=True,
    ),
]
