"""asyncio arms: waking an event loop that sits idle in its selector.

(The module is called ``aio`` so that it never shadows the standard
library's ``asyncio``.)

Every arm here runs on the loop driver (:mod:`wakelab.core.drivers.loop`): a
fresh ``asyncio.SelectorEventLoop`` (epoll on Linux, debug mode off), which
for each wake announces that it is about to be idle, is left a settle period
to park in ``epoll_wait``, and is then notified right after ``t0``; the
driver owns the handshake, the settle, ``t0``, the per-wake timeout, lost
wakes and teardown.  This module only describes each primitive as a
:class:`~wakelab.core.drivers.loop.LoopPath` (prepare / notify / t1), so that
tests can run the very same loop against a notifier that never notifies.

What they have in common.  Every notify from another thread reaches the loop
the same way: ``call_soon_threadsafe`` appends a callback to the loop's ready
queue and writes a byte to its self-pipe (a socketpair), and the loop wakes
from ``epoll_wait``, reads the byte and runs the ready callbacks.  The arms
differ in what runs after that: the callback itself (``call-soon-threadsafe``),
a task resumed by ``asyncio.Event.set`` one loop iteration later
(``asyncio-event``), a new task for a submitted coroutine
(``run-coroutine-threadsafe``, which then also answers back: a round trip),
or, for ``add-signal-handler``, a signal whose number CPython's C handler
writes to that same socket as the loop's wakeup fd.

``add-signal-handler`` needs its loop in the main thread (CPython installs
signal handlers and the wakeup fd only there), so the driver runs it the
other way round: the loop, and so the waiter, is the main thread, and a
helper thread notifies.  The arm restores the handler, the mask and the
wakeup fd afterwards (:func:`~wakelab.core.sigstate.preserved_signal_state`).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import os
import signal
import sys
import threading
from typing import Any, Callable, Coroutine, Deque, Dict, List, Optional, Set

from wakelab.core.drivers import loop as driver
from wakelab.core.drivers.loop import LoopPath, Woke, call_keeping_result
from wakelab.core.model import (
    BLOCKED,
    CALLBACK,
    CROSS_THREAD,
    GROUP_SIGNALS,
    LATENCY,
    NEAREST,
    ROLE_HANDLER,
    ROLE_HANDLER_COST,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    Role,
    T1Shape,
    now_ns,
)
from wakelab.core.sigstate import preserved_signal_state

FAMILY = Family(id="asyncio", title="asyncio", color="#CC79A7", order=40, user_arms=True)

Loop = asyncio.AbstractEventLoop


def _no_wake_yet(t1: int) -> None:
    """The ``woke`` in place before the first wake is prepared: a stray notify changes nothing."""


def _stamp(woke: Woke) -> None:
    """The callback a notify schedules: ``t1`` is its first statement."""
    t1 = now_ns()
    woke(t1)


# -- call_soon_threadsafe -----------------------------------------------------


def call_soon_threadsafe_path(loop: Loop) -> LoopPath:
    """``loop.call_soon_threadsafe(cb)`` from another thread wakes the idle loop, which runs ``cb``.

    Each notify schedules a callback carrying its own wake's ``woke``, so a
    late callback of a lost wake resolves that wake, never the next one.
    """
    call_soon = loop.call_soon_threadsafe
    current: List[Woke] = [_no_wake_yet]

    def prepare(woke: Woke) -> None:
        current[0] = woke

    def bind() -> Callable[[], object]:
        return functools.partial(call_soon, _stamp, current[0])

    return LoopPath(prepare=prepare, bind=bind)


# -- asyncio.Event --------------------------------------------------------------


def asyncio_event_path(loop: Loop) -> LoopPath:
    """``asyncio.Event.set()``, sent with ``call_soon_threadsafe``, wakes the task awaiting ``event.wait()``.

    Each wake uses a fresh Event and a fresh task, created in the loop, so a
    late ``set`` of a lost wake cannot touch the next one.  The tasks are
    kept here until they finish (the loop holds them only weakly); the
    driver cancels whatever a lost wake left waiting when it stops the loop.
    """
    call_soon = loop.call_soon_threadsafe
    current: List[asyncio.Event] = []
    tasks: Set["asyncio.Task[None]"] = set()

    async def wait_for_set(event: asyncio.Event, woke: Woke) -> None:
        await event.wait()
        t1 = now_ns()
        woke(t1)

    def prepare(woke: Woke) -> None:
        # Created in the loop thread: on 3.9 asyncio.Event() binds to the running loop.
        event = asyncio.Event()
        task = loop.create_task(wait_for_set(event, woke))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        current[:] = [event]

    def bind() -> Callable[[], object]:
        return functools.partial(call_soon, current[0].set)

    return LoopPath(prepare=prepare, bind=bind)


# -- run_coroutine_threadsafe -----------------------------------------------------


async def _coroutine_started(woke: Woke) -> None:
    started = now_ns()
    woke(started)


def run_coroutine_threadsafe_path(
    loop: Loop, coroutine: Callable[[Woke], Coroutine[Any, Any, None]] = _coroutine_started
) -> LoopPath:
    """``asyncio.run_coroutine_threadsafe(coro, loop).result()``: a round trip (two wakes).

    The notify submits ``coroutine(woke)`` (created before ``t0``), whose
    first statement stamps the first leg (component ``coroutine_start``);
    the loop then finishes the task, which completes the
    ``concurrent.futures.Future`` and wakes the notifier blocked in
    ``result(timeout)``, whose return is ``t1``.  A reply that does not come
    within the timeout cancels the future (and so the task).
    """
    current: List[Woke] = [_no_wake_yet]
    replies: Deque["concurrent.futures.Future[None]"] = collections.deque(maxlen=1)
    submit = asyncio.run_coroutine_threadsafe
    timeout_error = concurrent.futures.TimeoutError

    def prepare(woke: Woke) -> None:
        current[0] = woke

    def bind() -> Callable[[], object]:
        return call_keeping_result(replies, submit, coroutine(current[0]), loop)

    def reply(timeout_s: float) -> Optional[int]:
        future = replies.pop()
        try:
            future.result(timeout_s)
            t1 = now_ns()
        except timeout_error:
            future.cancel()
            return None
        return t1

    return LoopPath(prepare=prepare, bind=bind, reply=reply, first_leg="coroutine_start")


# -- add_signal_handler -------------------------------------------------------------


def requires_add_signal_handler() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1"):
        return "SIGUSR1 does not exist on this platform"
    if sys.platform == "win32":
        return "loop.add_signal_handler() is not available on Windows"
    if threading.current_thread() is not threading.main_thread():
        return "loop.add_signal_handler() works only on a loop in the main thread"
    return None


def add_signal_handler_path(loop: Loop) -> LoopPath:
    """SIGUSR1 from ``os.kill(getpid())`` wakes the loop through ``loop.add_signal_handler``.

    Runs in the main thread, which is the loop's (the driver's ``IN_MAIN``):
    it unblocks SIGUSR1 there and installs the handler; the caller restores
    the signal state.  The path: ``os.kill`` -> the kernel delivers to the
    main thread (the notifier thread blocks every signal) -> CPython's C
    handler writes the signal number to the loop's wakeup socket ->
    ``epoll_wait`` returns -> the loop reads the socket and schedules the
    callback -> the next iteration runs it.
    """
    signum = signal.SIGUSR1
    current: List[Woke] = [_no_wake_yet]

    def on_signal() -> None:
        t1 = now_ns()
        current[0](t1)

    def prepare(woke: Woke) -> None:
        current[0] = woke

    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    loop.add_signal_handler(signum, on_signal)
    return LoopPath(prepare=prepare, notify=functools.partial(os.kill, os.getpid(), signum))


# Every arm of this family, by name: its LoopPath factory (tests run each loop against a
# notifier that never notifies).
LOOP_PATHS: Dict[str, Callable[[Loop], LoopPath]] = {
    "call-soon-threadsafe": call_soon_threadsafe_path,
    "asyncio-event": asyncio_event_path,
    "run-coroutine-threadsafe": run_coroutine_threadsafe_path,
    "add-signal-handler": add_signal_handler_path,
}


def measure_call_soon_threadsafe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``loop.call_soon_threadsafe(cb)`` reaching ``cb`` on an idle loop in a waiter thread."""
    return driver.measure(params, call_soon_threadsafe_path)


def measure_asyncio_event(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``asyncio.Event.set()`` (sent with call_soon_threadsafe) reaching the waiting task."""
    return driver.measure(params, asyncio_event_path)


def measure_run_coroutine_threadsafe(params: MeasureParams) -> RawLatency:
    """Round trip (ns) of ``asyncio.run_coroutine_threadsafe(coro, loop).result()`` to an idle loop.

    The sample runs from just before the call to the calling thread's return
    from ``future.result()``; the component ``coroutine_start`` is the time
    from ``t0`` to the coroutine's first statement in the loop thread.
    """
    return driver.measure(params, run_coroutine_threadsafe_path)


def measure_add_signal_handler(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of SIGUSR1 sent by a helper thread reaching a ``loop.add_signal_handler`` callback.

    The loop runs in the main thread, idle in ``epoll_wait``; for the arm's
    duration the main thread moves to the waiter's CPU and the helper thread
    takes the notifier's.  Handler, mask and wakeup fd are restored.
    """
    with preserved_signal_state([signal.SIGUSR1]):
        # Inside preserved_signal_state: closing the loop resets the handler to SIG_DFL and
        # the wakeup fd to -1, and the restore then puts the originals back.
        return driver.measure(params, add_signal_handler_path, loop_in=driver.IN_MAIN, name="wakelab-signal-sender")


# Native floor ("vs C"): call_soon_threadsafe writes a byte to the loop's self-pipe (a socketpair)
# and the loop wakes from epoll, so native-selector-pipe is the nearest C experiment, but t1 here is
# in a callback the loop dispatches after it has read its self-pipe and run its ready queue, which C
# has no counterpart of: a nearest floor, labelled so.  run-coroutine-threadsafe is a round trip (two wakes) and
# add-signal-handler a signal through the wakeup fd: no C arm matches them.
ARMS: List[Arm] = [
    Arm(
        name="call-soon-threadsafe",
        family="asyncio",
        driver="loop",
        kind=LATENCY,
        mechanism="loop.call_soon_threadsafe(cb) from the main thread wakes an idle asyncio loop (epoll) in a worker thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before loop.call_soon_threadsafe(cb)",
        t1="loop thread: perf_counter_ns() as the first statement of cb",
        measure=measure_call_soon_threadsafe,
        native="native-selector-pipe", native_match=NEAREST, t1_shape=T1Shape("epoll", CALLBACK),
    ),
    Arm(
        name="asyncio-event",
        family="asyncio",
        driver="loop",
        kind=LATENCY,
        mechanism="asyncio.Event.set() sent with call_soon_threadsafe wakes a task awaiting event.wait() on an idle loop in a worker thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before loop.call_soon_threadsafe(event.set)",
        t1="loop thread: perf_counter_ns() as the first statement after `await event.wait()` returns in the waiting task",
        measure=measure_asyncio_event,
        native="native-selector-pipe", native_match=NEAREST, t1_shape=T1Shape("epoll", CALLBACK),
    ),
    Arm(
        name="run-coroutine-threadsafe",
        family="asyncio",
        driver="loop",
        kind=LATENCY,
        mechanism="asyncio.run_coroutine_threadsafe(coro, loop).result() from the main thread to an idle loop in a worker thread: a round trip of two wakes (main thread to loop, loop back to the main thread blocked in result())",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before asyncio.run_coroutine_threadsafe(coro, loop)",
        t1="main thread: perf_counter_ns() as the first statement after future.result() returns (component coroutine_start: the coroutine's first statement)",
        measure=measure_run_coroutine_threadsafe,
    ),
    Arm(
        name="add-signal-handler",
        family="asyncio",
        driver="loop",
        kind=LATENCY,
        mechanism="os.kill(getpid(), SIGUSR1) from a helper thread wakes an idle asyncio loop in the main thread through loop.add_signal_handler",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="helper thread: perf_counter_ns() immediately before os.kill(os.getpid(), SIGUSR1)",
        t1="main thread: perf_counter_ns() as the first statement of the add_signal_handler callback",
        measure=measure_add_signal_handler,
        requires=requires_add_signal_handler,
        needs_main_thread=True,
        group=GROUP_SIGNALS,  # a signal's wake, compared with the signal arms
        roles=(
            Role(ROLE_HANDLER),
            Role(ROLE_HANDLER_COST, against="call-soon-threadsafe",
                 isolates="asyncio's loop.add_signal_handler, against call_soon_threadsafe() from a thread",
                 adds="asyncio's signal handler adds"),
        ),
    ),
]
