"""The loop driver: an asyncio event loop, idle in its selector, is the waiter.

Measuring side: standard library only, Python 3.9+.

Used by the asyncio arms.  The loop is the standard library's
``asyncio.SelectorEventLoop`` (epoll on Linux), created here with debug mode
off, so that neither an installed policy (uvloop) nor ``-X dev`` changes the
experiment; an arm that measures another asyncio loop passes its
``loop_factory`` (``uvloop-call-soon-threadsafe``).  A family describes its
primitive as a :class:`LoopPath`; this
module owns everything else: the loop and the thread it runs in, the
handshake, the settle, ``t0`` (through :func:`~wakelab.core.drivers.notify_step`),
the per-wake timeout, ``t1`` bookkeeping, lost and stale wakes, teardown.

Closed loop, per wake::

    notifier                                  loop (waiter)
    call_soon_threadsafe(arm) -------------->  arm: timer = call_later(timeout_s, lost)
                                               prepare(woke)     e.g. create the task that awaits
    ready.wait()             <--------------   ready.set()       queued after prepare's callbacks
    sleep(settle)                              idle in epoll_wait
    t0 = notify_step()       -------------->   callback / task resumes:
                                               t1 = perf_counter_ns(); woke(t1)
    done.wait()              <--------------   done.set()        (or the timer: a lost wake)

``ready`` is set by a callback queued *after* ``prepare`` returned, so
whatever ``prepare`` scheduled (a task's first step up to its ``await``) has
run and the loop's only pending item is the wake's timer: the loop then
parks in ``epoll_wait``, and the settle lets it get there before ``t0``.

Round trips.  A path with ``reply`` (``run-coroutine-threadsafe``) is two
wakes: the notify wakes the loop, whose ``woke`` stamp becomes the component
named ``first_leg``, and the loop's answer wakes the notifier, which takes
``t1`` itself as the first statement after its reply wait returns.  That
reply wait is the notify step's ``after`` (see
:mod:`wakelab.core.drivers`): it follows the notify call directly, and a
delay planted after the notify lands after the reply, as it does for every
other arm after the wake.

Where the loop runs (``loop_in``).  Normally (:data:`IN_THREAD`) the loop runs
in a waiter thread, pinned to the waiter's CPU by
:func:`~wakelab.core.placement.enter_role`, and the calling thread -- the
worker's main thread, already pinned to the notifier's CPU -- notifies.
``loop.add_signal_handler`` works only on a loop in the main thread
(CPython runs Python-level signal handlers, and lets a thread set the
wakeup fd, only there), so :data:`IN_MAIN` swaps the threads, not the code: the loop runs in
the calling thread (which must be the main thread, and takes the waiter's CPU
for the arm's duration, restored afterwards), and a helper thread runs the
very same notifier loop, pinned to the notifier's CPU and blocking every
signal, so that a signal sent to the process is delivered to the loop's
thread.

Bounded waits.  Every wake arms ``loop.call_later(timeout_s)``, which
resolves it as lost if the notify never lands; a round trip's reply wait has
the same bound.  The notifier's own waits on the loop allow
:func:`~wakelab.core.drivers.handshake_timeout_s`, and a loop that stops
answering raises :class:`~wakelab.core.drivers.HarnessError` instead of
hanging.  An exception that a callback or task of the loop does not handle is
a harness failure, raised in the notifier.  Wake numbers make a late notify
of a lost wake harmless: it resolves its own, finished wake, never the next
one.  A loop-side stamp taken before its own ``t0`` (an answer to an older
notify) is counted lost and, apart, as ``stale_wakes`` in ``info``; after a
lost or stale wake the notifier waits :data:`LATE_GRACE_S` (or the settle, if
longer) before the next one, so that a late notify without a wake number (a
signal) lands while its own wake is still the current one.

Teardown, whatever happened: the loop's leftover tasks are cancelled, the
loop stopped, the other thread joined and the loop closed.

Open loop: not offered (``OPEN_LOOP = False``).  A round trip's ``t1`` is the
notifier's return from the reply, which a notifier firing on a schedule does
not wait for; and two of the arms use a primitive that is new every wake,
prepared by the loop in the very handshake that open loop leaves out.
``OPEN_LOOP`` is a property of the driver, so the one-way arms do not get
one either; the runner skips them in open-loop runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import functools
import itertools
import selectors
import signal
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional

from wakelab.core.drivers import (
    HarnessError, handshake_timeout_s, native_tid, notify_step, recording_t0, settle_schedule_s, t0_info, wake_t0_log,
)
from wakelab.core.model import LatencyCollector, MeasureParams, RawLatency
from wakelab.core.placement import NOTIFIER, WAITER, cpu_reader, current_cpu, enter_role, preserved_affinity

#: This driver does not honour ``params.mode == "open"`` (see the module docstring).
OPEN_LOOP = False

#: ``loop_in``: the loop runs in a waiter thread, the calling thread notifies.
IN_THREAD = "thread"
#: ``loop_in``: the loop runs in the calling (main) thread, a helper thread notifies.
IN_MAIN = "main"

#: After a lost or stale wake, the least time the notifier leaves a late notify to land.
LATE_GRACE_S = 0.005

#: ``woke(t1)``: the loop side's report of a wake, with ``t1`` taken by the caller.
Woke = Callable[[int], object]


@dataclasses.dataclass(frozen=True)
class LoopPath:
    """One asyncio primitive's moves, as a family module declares them for the loop driver.

    * ``prepare(woke)`` runs in the loop before each wake, outside the window:
      it sets up that wake's primitive (a fresh ``asyncio.Event`` and the task
      awaiting it, say) and arranges for the wake to end in
      ``t1 = perf_counter_ns(); woke(t1)``, taken as the first statement of
      the callback or of the coroutine's resumption;
    * ``notify()`` is the notify call, made by the notifier right after
      ``t0``; or ``bind()``, for a notify that is new every wake, runs before
      ``t0`` and returns it (as in :class:`~wakelab.core.drivers.WakePath`);
    * ``reply(timeout_s)``, for a round trip only, is the notifier's wait for
      the loop's answer, called right after the notify: it returns ``t1 =
      perf_counter_ns()`` taken as the first statement after that wait
      returns, or None on timeout; the loop side's ``woke`` stamp then
      becomes the component named ``first_leg``.
    """

    prepare: Callable[[Woke], object]
    notify: Optional[Callable[[], object]] = None
    bind: Optional[Callable[[], Callable[[], object]]] = None
    reply: Optional[Callable[[float], Optional[int]]] = None
    first_leg: str = ""

    def __post_init__(self) -> None:
        if (self.notify is None) == (self.bind is None):
            raise ValueError("a LoopPath takes exactly one of notify and bind")
        if (self.reply is None) != (not self.first_leg):
            raise ValueError("a LoopPath with a reply (a round trip) names its first_leg, and only then")


def call_keeping_result(results: Deque[Any], fn: Callable[..., Any], *args: Any) -> Callable[[], None]:
    """``fn(*args)`` as a one-shot notify callable that puts what ``fn`` returns into ``results``.

    For a notify whose return value the notifier needs (the Future of
    ``asyncio.run_coroutine_threadsafe``).  It is C all the way to ``fn``:
    ``deque.extend`` pulls one item from a one-shot ``itertools.starmap``,
    which calls ``fn(*args)``, so no Python frame stands between ``t0`` and
    the call (as with ``functools.partial``), and the result is stored only
    after ``fn`` returned.  Build a new one for every wake.
    """
    return functools.partial(results.extend, itertools.starmap(fn, (args,)))


def new_loop() -> asyncio.AbstractEventLoop:
    """The stdlib selector loop, with debug mode off even under ``-X dev``.

    Debug mode records a traceback for every scheduled callback, which would
    measure asyncio's debugging aid instead of its wake path.
    """
    loop = asyncio.SelectorEventLoop()
    loop.set_debug(False)
    return loop


def measure(
    params: MeasureParams,
    make_path: Callable[[asyncio.AbstractEventLoop], LoopPath],
    *,
    loop_in: str = IN_THREAD,
    name: str = "wakelab-asyncio-loop",
    loop_factory: Callable[[], asyncio.AbstractEventLoop] = new_loop,
) -> RawLatency:
    """Time ``make_path(loop)``'s notify waking a fresh, idle event loop, one wake at a time.

    Samples are ``t1 - t0`` in nanoseconds (a round trip: to the notifier's
    return from its reply wait); a wake the loop does not see within
    ``params.timeout_s`` is lost.  ``make_path`` runs in the calling thread
    before the loop starts (with :data:`IN_MAIN`, that is the loop's thread:
    where ``loop.add_signal_handler`` must be called).  ``name`` names the
    driver's other thread.  ``loop_factory`` makes the loop: :func:`new_loop`
    unless an arm measures another asyncio loop (uvloop, in
    :mod:`wakelab.core.families.asynclibs`).
    """
    if params.mode != "closed":
        raise ValueError("the loop driver has no %r mode (OPEN_LOOP is False)" % (params.mode,))
    if loop_in not in (IN_THREAD, IN_MAIN):
        raise ValueError("loop_in must be %r or %r, not %r" % (IN_THREAD, IN_MAIN, loop_in))
    if loop_in == IN_MAIN and threading.current_thread() is not threading.main_thread():
        raise HarnessError("a loop driven in the main thread must be measured from the main thread")
    loop = loop_factory()
    try:
        if loop_in == IN_THREAD:
            side = _LoopSide(params, loop, make_path(loop))
            return _loop_in_waiter_thread(params, loop, side, name)
        with preserved_affinity():
            enter_role(params, WAITER)
            side = _LoopSide(params, loop, make_path(loop))
            return _loop_in_main_thread(params, loop, side, name)
    finally:
        if not loop.is_running():  # a loop thread that would not stop has been reported already
            loop.close()


class _LoopSide:
    """The loop's half of each wake, and the state both sides share (read under the GIL)."""

    def __init__(self, params: MeasureParams, loop: asyncio.AbstractEventLoop, path: LoopPath) -> None:
        self.path = path
        self.ready = threading.Event()  # the loop is about to be idle: the notifier may settle
        self.done = threading.Event()  # the wake is resolved: woken, lost, or failed
        self.seq = -1  # the wake in progress
        self.pending = False
        self.stamp: Optional[int] = None  # the loop side's t1 (a round trip: its first leg)
        self.reply_ns: Optional[int] = None  # a round trip's t1, taken by the notifier
        self.error: Optional[BaseException] = None
        self.getcpu = cpu_reader()
        self.woke_on = -1  # the loop thread's CPU as it resolved the wake (read after t1)
        self._loop = loop
        self._timeout_s = params.timeout_s
        self._timer: Optional[asyncio.TimerHandle] = None
        loop.set_exception_handler(self._unhandled)

    def arm(self, seq: int) -> None:
        """In the loop: open wake ``seq``, let the path prepare it, then announce idleness."""
        self.seq = seq
        self.pending = True
        self.stamp = None
        self._timer = self._loop.call_later(self._timeout_s, self.resolve, seq, None)
        self.path.prepare(functools.partial(self.resolve, seq))
        self._loop.call_soon(self.ready.set)  # after whatever prepare scheduled

    def resolve(self, seq: int, stamp: Optional[int]) -> None:
        """In the loop: wake ``seq`` woke at ``stamp`` (None: its timer fired, it is lost)."""
        if seq != self.seq or not self.pending:
            return  # a late notify of a wake already resolved
        self.pending = False
        if self._timer is not None:
            self._timer.cancel()
        self.stamp = stamp
        if self.getcpu is not None:
            self.woke_on = self.getcpu()  # after t1: outside the timed window
        self.done.set()

    def fail(self, exc: BaseException) -> None:
        """From either side: stop the notifier at its next handshake with ``exc``."""
        if self.error is None:
            self.error = exc
        self.ready.set()
        self.done.set()

    def _unhandled(self, loop: asyncio.AbstractEventLoop, context: Mapping[str, object]) -> None:
        exc = context.get("exception")
        self.fail(exc if isinstance(exc, BaseException) else HarnessError(str(context.get("message"))))


def _notify_wakes(params: MeasureParams, loop: asyncio.AbstractEventLoop, side: _LoopSide) -> RawLatency:
    """The notifier's loop, the same in both shapes: every wake, then both sides' CPUs."""
    path = side.path
    collector = LatencyCollector(params)
    timeout_s = params.timeout_s
    after = None if path.reply is None else _reply_waiter(side, path.reply, timeout_s)
    step = notify_step(params, path.notify, bind=path.bind, after=after)
    first_leg = path.first_leg
    handshake_s = handshake_timeout_s(params)
    settles = settle_schedule_s(params)
    grace_s = max(params.settle_s, LATE_GRACE_S)
    call_soon = loop.call_soon_threadsafe
    arm = side.arm
    ready = side.ready
    done = side.done
    done_wait = done.wait
    stale = 0
    # A round trip's t1 is the notifier's (the reply), not the loop thread's: no t0 log for it.
    t0s = None if first_leg else wake_t0_log(params)
    getcpu = side.getcpu
    waiter_cpus, notifier_cpus = collector.record_cpus() if getcpu is not None else (None, None)
    for index in range(params.total_wakes):
        ready.clear()
        done.clear()
        side.reply_ns = None
        side.woke_on = -1
        call_soon(arm, index)
        if not ready.wait(handshake_s) or side.error is not None:
            raise HarnessError("the event loop did not announce it was idle: %r" % (side.error,))
        time.sleep(settles[index])
        notified_on = getcpu() if getcpu is not None else -1  # before t0: outside the window
        t0 = step()
        if not done_wait(handshake_s):
            raise HarnessError("the event loop did not resolve wake %d" % index)
        if side.error is not None:
            raise HarnessError("the event loop failed: %r" % (side.error,))
        stamp = side.stamp
        if stamp is not None and stamp < t0:
            stale += 1  # resolved before this notify: an older wake's answer, not this one's
            stamp = None
        latency: Optional[int] = None
        legs: Dict[str, int] = {}
        if stamp is not None:
            if not first_leg:
                latency = stamp - t0
            elif side.reply_ns is not None:  # a round trip counts when both legs were seen
                latency = side.reply_ns - t0
                legs[first_leg] = stamp - t0
        collector.add(latency, **legs)
        if waiter_cpus is not None and notifier_cpus is not None:
            waiter_cpus[index] = side.woke_on
            notifier_cpus[index] = notified_on
        if t0s is not None:
            t0s[index] = t0  # the wake is over: outside the timed window
        if latency is None:
            time.sleep(grace_s)
    waiter_cpu_seen = _call_in_loop(loop, current_cpu, handshake_s)
    waiter_tid = _call_in_loop(loop, native_tid, handshake_s)
    return collector.result(
        settle_us=params.settle_us,
        mode="closed",
        stale_wakes=stale,
        **_loop_facts(loop),
        notifier_cpu_seen=current_cpu(),
        waiter_cpu_seen=waiter_cpu_seen,
        notifier_tid=native_tid(),
        waiter_tid=waiter_tid,
        **t0_info(collector, t0s, params.warmup),
        **_round_trip_note(first_leg),
    )


def _loop_facts(loop: asyncio.AbstractEventLoop) -> Dict[str, object]:
    """What the evidence says of the loop: the stdlib selector loop and its selector, or another loop's class."""
    if isinstance(loop, asyncio.SelectorEventLoop):
        return {"loop": "asyncio.SelectorEventLoop", "selector": selectors.DefaultSelector.__name__, "asyncio_debug": False}
    return {"loop": "%s.%s" % (type(loop).__module__, type(loop).__qualname__), "asyncio_debug": loop.get_debug()}


def _round_trip_note(first_leg: Optional[str]) -> Dict[str, object]:
    """Why a traced round trip keeps no ``t0`` log (see ``_notify_wakes``)."""
    if not first_leg or not recording_t0():
        return {}
    return {"not_split": "a round trip: t1 is the notifier's reply, so no one waiter's events span the wake"}


def _reply_waiter(side: _LoopSide, reply: Callable[[float], Optional[int]], timeout_s: float) -> Callable[[], None]:
    """A round trip's notify step ``after``: the notifier waits for the loop's answer (the second wake)."""

    def await_reply() -> None:
        side.reply_ns = reply(timeout_s)

    return await_reply


def _call_in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any], timeout_s: float) -> Any:
    """``fn()`` run in the loop's thread (outside any timed window); its exception is raised here."""
    answer: concurrent.futures.Future[Any] = concurrent.futures.Future()

    def run() -> None:
        try:
            answer.set_result(fn())
        except BaseException as exc:
            answer.set_exception(exc)

    loop.call_soon_threadsafe(run)
    try:
        return answer.result(timeout_s)
    except concurrent.futures.TimeoutError:
        raise HarnessError("the event loop did not answer") from None


def _loop_in_waiter_thread(params: MeasureParams, loop: asyncio.AbstractEventLoop, side: _LoopSide, name: str) -> RawLatency:
    handshake_s = handshake_timeout_s(params)
    started = threading.Event()
    pin_failed: List[BaseException] = []

    def run_loop() -> None:
        try:
            enter_role(params, WAITER)  # only this thread's mask changes; it dies with the thread
        except BaseException as exc:  # reported by the notifier below
            pin_failed.append(exc)
            started.set()
            return
        loop.call_soon(started.set)
        try:
            loop.run_forever()
        except BaseException as exc:
            side.fail(exc)

    thread = threading.Thread(target=run_loop, name=name, daemon=True)
    thread.start()
    try:
        if not started.wait(handshake_s):
            raise HarnessError("the event loop thread did not start")
        if pin_failed:
            raise HarnessError("the event loop thread could not take the waiter's CPU: %s" % pin_failed[0]) from pin_failed[0]
        return _notify_wakes(params, loop, side)
    finally:
        if thread.is_alive():
            loop.call_soon_threadsafe(_cancel_tasks_and_stop, loop)
            thread.join(handshake_s)
            if thread.is_alive():
                # A running loop cannot be closed; say so rather than hang.
                raise HarnessError("the event loop thread did not stop within %.1f s" % handshake_s)


def _loop_in_main_thread(params: MeasureParams, loop: asyncio.AbstractEventLoop, side: _LoopSide, name: str) -> RawLatency:
    handshake_s = handshake_timeout_s(params)
    done: List[RawLatency] = []
    failed: List[BaseException] = []

    def notifier() -> None:
        try:
            enter_role(params, NOTIFIER)  # this thread's CPU and signal masks die with it
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
            done.append(_notify_wakes(params, loop, side))
        except BaseException as exc:  # raised in the main thread below
            failed.append(exc)
        finally:
            loop.call_soon_threadsafe(_cancel_tasks_and_stop, loop)

    thread = threading.Thread(target=notifier, name=name, daemon=True)
    thread.start()
    try:
        loop.run_forever()
    finally:
        if thread.is_alive():
            side.fail(HarnessError("the event loop stopped before the wakes were done"))
        thread.join(handshake_s)
    if thread.is_alive():
        raise HarnessError("the notifier thread did not stop within %.1f s" % handshake_s)
    if failed:
        raise failed[0]
    return done[0]


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
