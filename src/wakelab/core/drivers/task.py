"""The task driver: a task (or greenlet) of a library's event loop, in a waiter thread, is the waiter.

Measuring side: standard library only, Python 3.9+.  The library itself
(trio, anyio, gevent) is imported by the family that describes it, inside its
``run`` function, never here.

Used by the async-library arms whose loop is not an asyncio loop (asyncio
loops, uvloop included, run on :mod:`wakelab.core.drivers.loop`).  Each such
library has its own way of entering a loop (``trio.run``, ``anyio.run``, a
gevent hub), its own events and timeouts, and its own thread-safe way in; what
it shares with every other is the shape of the experiment, which this module
owns: the waiter thread, the handshake, the settle, ``t0`` (through
:func:`~wakelab.core.drivers.notify_step`), the per-wake bound, stale and lost
wakes, ``t1`` bookkeeping, both sides' CPUs, teardown.

A family describes a library with a *runner*: a function, called in the
waiter thread, that enters the library's loop, builds a :class:`TaskPath`
there (the loop's token, the hub's watcher: things that exist only inside the
loop), awaits ``waiter_loop(path)`` -- this driver's half of every wake -- and
tears its loop down.  Closed loop, per wake::

    notifier (calling thread)              waiter task (the loop's thread)
    go.set()             ----------------> go.wait()          (the loop thread blocks here between wakes)
                                           path.prepare()     e.g. a fresh Event for this wake
    ready.wait()         <---------------- ready.set()
    sleep(settle)                          t1 = await path.wait(timeout_s)
                                             -> the loop is idle in its poll (epoll_wait)
    t0 = notify_step()   ----------------> the task resumes: t1 = perf_counter_ns()
    done.wait()          <---------------- done.set()         (t1 None: no wake within timeout_s)

Between wakes the waiter's thread blocks in ``go.wait()`` (a plain
``threading.Event``: outside the window); once woken it prepares the wake,
announces it, and awaits it, and the settle lets the loop reach its poll
before ``t0``.  ``wait`` is bounded by the library's own timeout
(``trio.move_on_after``, ``anyio.move_on_after``, ``gevent.Timeout``), so a
notify that never arrives is a lost wake, not a hang.  A wake whose ``t1`` is
earlier than its ``t0`` answered an older notify (a late one): it is counted
stale and lost.

Blocking libraries.  A gevent greenlet waits by blocking (``hub.wait`` switches
to the hub, which runs the loop), not by awaiting.  Its ``wait`` is still an
``async def`` that never suspends, and its runner drives ``waiter_loop`` with
:func:`run_unsuspended`, so that the waiter's loop is written once here for
every library.

Notifies that block.  ``anyio.from_thread.run_sync`` returns only once its
function has run in the loop, so the notifier blocks inside the notify call
(GIL released) rather than in ``done.wait``; ``t1`` is taken in the loop
before that call returns.  Its wait has no timeout of its own: a loop that
stops running callbacks would hold the notifier there, which the worker's
stall watch bounds (the loop is alive and idle at every notify: it has just
announced the wake).

No open loop (``OPEN_LOOP`` below): the waiter task must prepare each wake's
primitive before its notify, which a fixed schedule cannot wait for.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any, Awaitable, Callable, Coroutine, Dict, Optional, Tuple

from wakelab.core.drivers import HarnessError, handshake_timeout_s, native_tid, notify_step, settle_schedule_s, t0_info, wake_t0_log
from wakelab.core.model import LatencyCollector, MeasureParams, RawLatency
from wakelab.core.placement import WAITER, cpu_reader, current_cpu, enter_role

#: This driver does not honour ``params.mode == "open"`` (see the module docstring).
OPEN_LOOP = False


@dataclasses.dataclass(frozen=True)
class TaskPath:
    """One library's moves, built by its runner inside the loop, in the waiter thread.

    * ``prepare()`` runs in the loop's thread before each wake is announced,
      outside the window: a fresh primitive for that wake (an Event), so a
      late notify of a lost wake cannot touch the next one;
    * ``wait(timeout_s)`` is awaited by the waiter task right after the
      announcement: it returns ``t1 = perf_counter_ns()``, taken as the first
      statement after the task (greenlet) resumes -- or in the callback the
      notify runs, for a notify that runs a function in the loop -- or None
      when no wake came within ``timeout_s``;
    * ``notify()`` is the notify call, made by the notifier right after
      ``t0``; or ``bind()``, for a notify that is new every wake, runs before
      ``t0`` and returns it (as in :class:`~wakelab.core.drivers.WakePath`).
    """

    prepare: Callable[[], object]
    wait: Callable[[float], Awaitable[Optional[int]]]
    notify: Optional[Callable[[], object]] = None
    bind: Optional[Callable[[], Callable[[], object]]] = None

    def __post_init__(self) -> None:
        if (self.notify is None) == (self.bind is None):
            raise ValueError("a TaskPath takes exactly one of notify and bind")


#: The driver's half of every wake, handed to a runner: ``await waiter_loop(path)`` in the loop.
WaiterLoop = Callable[[TaskPath], Coroutine[Any, Any, None]]

#: A family's runner: in the waiter thread, enter the loop, build the path, await ``waiter_loop(path)``, tear down.
Runner = Callable[[WaiterLoop], object]


def run_unsuspended(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coroutine`` to its end, for a library whose waits block instead of suspending (gevent).

    A coroutine whose awaits all complete without suspending finishes in one
    ``send(None)``; one that suspends has nothing here to resume it, which is
    a harness error (the path's ``wait`` awaited something).
    """
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise HarnessError("a blocking library's wait suspended: nothing would resume it")


def measure(params: MeasureParams, runner: Runner, *, name: str = "wakelab-task-loop") -> RawLatency:
    """Time the notify of the path ``runner`` builds waking a task of its loop, one wake at a time.

    Samples are ``t1 - t0`` in nanoseconds; a wake not seen within
    ``params.timeout_s`` is lost.  ``runner`` runs in a waiter thread called
    ``name``, pinned to the waiter's CPU; the calling thread notifies.
    """
    if params.mode != "closed":
        raise ValueError("the task driver has no %r mode (OPEN_LOOP is False)" % (params.mode,))
    side = _WaiterSide(params)
    thread = threading.Thread(target=side.run, args=(runner,), name=name, daemon=True)
    thread.start()
    handshake_s = handshake_timeout_s(params)
    try:
        if not side.started.wait(handshake_s):
            raise HarnessError("the %s thread did not enter its loop" % name)
        if side.error is not None:
            raise HarnessError("the %s thread failed before the first wake: %r" % (name, side.error)) from side.error
        collector, info = _notify_wakes(params, side)
    finally:
        side.stop = True
        side.go.set()
        thread.join(handshake_s)
        if thread.is_alive():
            raise HarnessError("the %s thread did not leave its loop within %.1f s" % (name, handshake_s))
    if side.error is not None:
        raise HarnessError("the %s thread failed leaving its loop: %r" % (name, side.error)) from side.error
    # The waiter read its CPU on its way out of the loop (None if it could not).
    return collector.result(waiter_cpu_seen=side.cpu, **info)


class _WaiterSide:
    """The waiter thread's half of each wake, and the state both sides share (read under the GIL)."""

    def __init__(self, params: MeasureParams) -> None:
        self.params = params
        self.started = threading.Event()  # the loop is entered and the path is built (or it failed)
        self.go = threading.Event()  # the notifier asks for the next wake (or, with stop, for the end)
        self.ready = threading.Event()  # the wake is prepared and about to be awaited: settle, then notify
        self.done = threading.Event()  # the wake is resolved: woken, or timed out
        self.stop = False
        self.path: Optional[TaskPath] = None
        self.t1: Optional[int] = None
        self.woke_on = -1  # the waiter's CPU right after the wake (outside the window)
        self.error: Optional[BaseException] = None
        self.cpu: Optional[int] = None
        self.tid: Optional[int] = None

    def run(self, runner: Runner) -> None:
        """The waiter thread: take the waiter's CPU, then let the runner enter its loop."""
        try:
            try:
                enter_role(self.params, WAITER)  # only this thread's mask changes; it dies with the thread
            except OSError as exc:
                raise HarnessError("the waiter thread could not take the waiter's CPU: %s" % exc) from exc
            self.tid = native_tid()
            runner(self.waiter_loop)
            if self.path is None:
                raise HarnessError("the library's runner returned without running the waiter's loop")
        except BaseException as exc:  # surfaced by the notifier
            if self.error is None:
                self.error = exc
        finally:
            self.started.set()
            self.ready.set()
            self.done.set()

    async def waiter_loop(self, path: TaskPath) -> None:
        """Awaited by the runner inside its loop: every wake's waiter half, until the notifier stops."""
        self.path = path
        prepare = path.prepare
        wait = path.wait
        go, ready, done = self.go, self.ready, self.done
        timeout_s = self.params.timeout_s
        handshake_s = handshake_timeout_s(self.params)
        getcpu = cpu_reader()
        self.started.set()
        while True:
            if not go.wait(handshake_s):
                raise HarnessError("the notifier did not ask for the next wake")
            go.clear()
            if self.stop:
                break
            prepare()
            ready.set()
            self.t1 = await wait(timeout_s)
            if getcpu is not None:
                self.woke_on = getcpu()  # after t1: outside the timed window
            done.set()
        self.cpu = current_cpu()  # where the wakes ran: read once, at the end


def _notify_wakes(params: MeasureParams, side: _WaiterSide) -> Tuple[LatencyCollector, Dict[str, object]]:
    """The notifier's loop: every wake in turn, closed loop; the collector and the record's facts."""
    path = side.path
    assert path is not None
    collector = LatencyCollector(params)
    slots = collector.slots
    step = notify_step(params, path.notify, bind=path.bind)
    getcpu = cpu_reader()
    waiter_cpus, notifier_cpus = collector.record_cpus() if getcpu is not None else (None, None)
    handshake_s = handshake_timeout_s(params)
    settles = settle_schedule_s(params)
    go, ready, done = side.go, side.ready, side.done
    done_wait = done.wait
    t0s = wake_t0_log(params)
    stale = 0
    for index in range(params.total_wakes):
        ready.clear()
        done.clear()
        side.t1 = None
        go.set()
        if not ready.wait(handshake_s) or side.error is not None:
            raise HarnessError("the waiter task did not announce its wait: %r" % (side.error,))
        time.sleep(settles[index])
        notified_on = getcpu() if getcpu is not None else -1  # before t0: outside the window
        t0 = step()
        if not done_wait(handshake_s):
            raise HarnessError("the waiter task did not resolve wake %d" % index)
        if side.error is not None:
            raise HarnessError("the waiter task failed: %r" % (side.error,))
        t1 = side.t1
        if t1 is not None and t1 < t0:
            stale += 1  # resumed before this notify: an older wake's answer, not this one's
            t1 = None
        slots[index] = None if t1 is None else t1 - t0
        if waiter_cpus is not None and notifier_cpus is not None:
            waiter_cpus[index] = side.woke_on
            notifier_cpus[index] = notified_on
        if t0s is not None:
            t0s[index] = t0  # the wake is over: outside the timed window
    info: Dict[str, object] = {
        "settle_us": params.settle_us,
        "mode": "closed",
        "stale_wakes": stale,
        "notifier_cpu_seen": current_cpu(),
        "notifier_tid": native_tid(),
        "waiter_tid": side.tid,
    }
    info.update(t0_info(collector, t0s, params.warmup))
    return collector, info
