"""The main-thread driver: the worker's main thread waits, a helper thread notifies.

Measuring side: standard library only, Python 3.9+.

Used by the signal arms whose waiter must be the main thread: CPython runs a
Python-level signal handler only there, ``signal.pause()`` only returns there
for the handler's sake, and ``set_wakeup_fd`` / the handler path are the main
thread's.  The roles are therefore the other way round from the thread
driver: the main thread takes the *waiter* role of the placement (its CPU
mask is restored when the arm ends) and one helper thread, started here, the
*notifier* role.  Call :func:`measure` from the main thread.

Closed loop (the default), per wake::

    main thread (waiter)                  notifier thread
    reset(); go.set()      ------------>  go.wait()          (outside the window)
    wait(timeout)                         sleep(settle)
      parks in the kernel                 t0 = notify_step() (see wakelab.core.drivers)
                                          done.wait()        blocks right after the notify
    t1 = first statement after the wait
    done.set()             ------------>  back.set()         hands t0 over
    back.wait()            <------------

``reset()`` runs in the main thread here, since what it clears (a pending
signal, a queued handler stamp, a byte in the wakeup fd) is the main thread's.
``t0`` stays in the notifier until the wake is over, so the notifier does
exactly what the thread driver's does between ``t0`` and its next GIL
release: the step, then ``done.wait``.

Bounded waits.  Every wait is bounded.  ``sigtimedwait`` and ``select`` take
a timeout.  ``signal.pause()`` has none, so a path whose wait has no bound of
its own passes ``interrupt``, a call that ends the main thread's wait from
another thread (``os.kill(getpid(), SIGUSR1)``): the notifier waits for the
wake only ``timeout_s`` after its notify, then calls ``interrupt`` every
50 ms until the main thread is out of its wait, and that wake counts as lost
(``watchdog_rescues`` in ``info``).  The same rescue runs in the notifier's
``finally`` whatever ended it mid-wake -- a notify that raised, a settle or
step that never reached the notify -- so a notifier that dies cannot leave
the main thread in ``pause()``.

Wakes that are not this wake's.  A wake whose ``t1`` is before this wake's
``t0`` answered an older notify (or a stranger's signal): it is counted lost
and in ``stale_wakes``.  ``components()``, if given, returns the absolute
instants of named parts of the wake just ended (the handler's first
statement ...); each is reported relative to ``t0``, and a wake for which it
returns None, or an instant before ``t0``, is lost and in ``foreign_wakes``.

Open loop (``params.mode == "open"``, ``OPEN_LOOP`` below), as in the thread
driver: the notifier fires on a fixed schedule, each latency is taken from
the scheduled instant, and each wake is matched to the notify that caused it
(:func:`~wakelab.core.drivers.thread.match_open_loop`); notifies merged into
one wake are counted lost and as ``coalesced``.  The main thread waits,
calls ``reset()`` after each wake and waits again, until the notifier says
the schedule is over (and, for an unbounded wait, interrupts it).

Self mode (:func:`measure_self`): notifier and waiter are the main thread
itself (``sigusr1-self``).  Per wake: ``reset()``; ``t0 = notify_step()``;
then the wait, a poll of the handler's stamp, which is also the completion
of the wake.  No settle, since the waiter spins; no placement of its own,
since there is one thread (it runs where the worker pinned it).
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Set

from wakelab.core.drivers import HarnessError, WakePath, handshake_timeout_s, native_tid, recording_t0, settle_schedule_s, t0_info
from wakelab.core.drivers.thread import last_notify_answered, match_open_loop
from wakelab.core.model import LOST_NS, LatencyCollector, MeasureParams, RawLatency, now_ns
from wakelab.core.placement import NOTIFIER, WAITER, cpu_reader, current_cpu, enter_role, preserved_affinity

#: This driver honours ``params.mode == "open"`` (both modes: cross-thread and self).
OPEN_LOOP = True

#: How often an unbounded wait is interrupted once a wake is overdue.
RESCUE_EVERY_S = 0.05

# components(): named absolute instants of the wake that just ended, or None when it was not ours.
Components = Callable[[], Optional[Dict[str, int]]]


def measure(
    params: MeasureParams,
    path: WakePath,
    *,
    interrupt: Optional[Callable[[], object]] = None,
    components: Optional[Components] = None,
    block: Iterable[int] = (),
    name: str = "wakelab-notifier",
) -> RawLatency:
    """Time ``path``'s notify in a helper thread waking ``path``'s wait in the main thread.

    Samples are ``t1 - t0`` (closed loop) or ``t1 - scheduled`` (open loop),
    in nanoseconds.  ``interrupt`` ends the main thread's wait from the
    notifier thread, for a wait with no timeout of its own; ``block`` lists
    signals the notifier thread blocks in itself (so that a process-directed
    signal cannot land on it).  Raises :class:`HarnessError` when a side
    fails; the main thread's CPU mask is restored either way.
    """
    if threading.current_thread() is not threading.main_thread():
        raise HarnessError("the main-thread driver must be called from the main thread")
    blocked = list(block)
    with preserved_affinity():
        try:
            enter_role(params, WAITER)
        except OSError as exc:
            raise HarnessError("the main thread could not take the waiter's CPU: %s" % exc) from exc
        if params.mode == "open":
            return _drive_open(params, path, interrupt, blocked, name)
        return _drive_closed(params, path, interrupt, components, blocked, name)


def _notifier_error(box: Dict[str, object]) -> Optional[HarnessError]:
    error = box["error"]
    if error is None:
        return None
    if isinstance(error, HarnessError):
        return HarnessError(str(error))
    return HarnessError("notifier thread failed: %r" % (error,))


def _enter_notifier_role(params: MeasureParams, block: List[int]) -> Optional[Set[Any]]:
    """Block ``block`` in the calling (notifier) thread and pin it; returns the old mask."""
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, block) if block else None
    try:
        enter_role(params, NOTIFIER)
    except OSError as exc:
        if old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        raise HarnessError("the notifier thread could not take the notifier's CPU: %s" % exc) from exc
    return old_mask


def _rescue(interrupt: Callable[[], object], out: threading.Event, deadline_ns: int) -> None:
    """Interrupt the main thread's wait until it says it is out (``out`` set) or the deadline passes."""
    while not out.is_set():
        interrupt()
        if out.wait(RESCUE_EVERY_S):
            return
        if now_ns() > deadline_ns:
            raise HarnessError("the main thread did not leave its wait although it was interrupted")


def _drive_closed(
    params: MeasureParams,
    path: WakePath,
    interrupt: Optional[Callable[[], object]],
    components: Optional[Components],
    block: List[int],
    name: str,
) -> RawLatency:
    collector = LatencyCollector(params)
    total = params.total_wakes
    reset = path.reset
    wait = path.stamped()
    step = path.step(params)
    timeout_s = params.timeout_s
    handshake_s = handshake_timeout_s(params)
    # How long the notifier waits for the wake before it interrupts an unbounded wait.
    bound_s = timeout_s if interrupt is not None else handshake_s
    go = threading.Event()
    done = threading.Event()
    back = threading.Event()
    started = threading.Event()
    t0s: List[int] = [0] * total
    rescued: List[bool] = [False] * total
    box: Dict[str, object] = {"stop": False, "error": None, "cpu": None, "waking": False, "tid": None}
    getcpu = cpu_reader()
    waiter_cpus, notifier_cpus = collector.record_cpus() if getcpu is not None else (None, None)

    def notifier() -> None:
        old_mask: Optional[Set[Any]] = None
        try:
            old_mask = _enter_notifier_role(params, block)
            box["tid"] = native_tid()
            started.set()
            settles = settle_schedule_s(params)
            done_wait = done.wait
            for index in range(total):
                if not go.wait(handshake_s):
                    raise HarnessError("the main thread did not start wake %d" % index)
                go.clear()
                if box["stop"]:
                    break
                box["waking"] = True
                time.sleep(settles[index])
                if notifier_cpus is not None:
                    notifier_cpus[index] = getcpu()  # type: ignore[misc]  # before t0: outside the window
                t0 = step()
                if not done_wait(bound_s):
                    if interrupt is None:
                        raise HarnessError("the main thread did not return from its wait")
                    rescued[index] = True
                    _rescue(interrupt, done, now_ns() + int(handshake_s * 1e9))
                t0s[index] = t0
                box["waking"] = False
                done.clear()
                back.set()
            box["cpu"] = current_cpu()
        except BaseException as exc:  # surfaced in the main thread
            box["error"] = exc
            if box["waking"] and interrupt is not None:
                try:
                    _rescue(interrupt, done, now_ns() + int(handshake_s * 1e9))
                except BaseException:  # the first error is the one worth reporting
                    pass
        finally:
            started.set()
            back.set()
            if old_mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    thread = threading.Thread(target=notifier, name=name, daemon=True)
    stale = 0
    foreign = 0
    try:
        thread.start()
        if not started.wait(handshake_s):
            raise HarnessError("notifier thread did not start")
        failed = _notifier_error(box)
        if failed is not None:
            raise failed
        for index in range(total):
            reset()
            go.set()
            t1 = wait(timeout_s)
            if waiter_cpus is not None:
                waiter_cpus[index] = getcpu()  # type: ignore[misc]  # after t1: outside the window
            done.set()
            if not back.wait(handshake_s):
                raise HarnessError("notifier thread did not finish its wake")
            back.clear()
            failed = _notifier_error(box)
            if failed is not None:
                raise failed
            t0 = t0s[index]
            if t1 is None or rescued[index]:
                collector.add(None)
            elif t1 < t0:
                stale += 1  # the wait returned before this notify: an older wake, not this one
                collector.add(None)
            elif components is None:
                collector.add(t1 - t0)
            else:
                instants = components()
                if instants is None or any(t < t0 for t in instants.values()):
                    foreign += 1
                    collector.add(None)
                else:
                    collector.add(t1 - t0, **{part: t - t0 for part, t in instants.items()})
    finally:
        box["stop"] = True
        done.set()  # ends a wait or a rescue the notifier may be in
        go.set()
        if thread.ident is not None:
            thread.join(handshake_s)
    info: Dict[str, object] = {}
    if interrupt is not None:
        info["watchdog_rescues"] = sum(rescued[params.warmup:])
    # t0s is kept anyway (the notifier hands t0 over in it); a traced run keeps it in info.
    info.update(t0_info(collector, t0s if recording_t0() else None, params.warmup))
    return collector.result(
        settle_us=params.settle_us,
        mode="closed",
        stale_wakes=stale,
        foreign_wakes=foreign,
        notifier_cpu_seen=box["cpu"],
        waiter_cpu_seen=current_cpu(),
        notifier_tid=box["tid"],
        waiter_tid=native_tid(),
        **info,
    )


def _drive_open(
    params: MeasureParams,
    path: WakePath,
    interrupt: Optional[Callable[[], object]],
    block: List[int],
    name: str,
) -> RawLatency:
    """Open loop: the notifier thread notifies on schedule; each wake is matched to its notify."""
    interval_ns = params.interval_us * 1000
    total = params.total_wakes
    reset = path.reset
    wait = path.stamped()
    step = path.step(params)
    handshake_s = handshake_timeout_s(params)
    poll_s = min(params.timeout_s, 0.05)
    wakes: List[int] = []  # t1 of every wake, appended by the main thread
    scheduled: List[int] = []
    issued: List[int] = []
    started = threading.Event()
    go = threading.Event()
    out = threading.Event()  # the main thread has left its wait loop
    box: Dict[str, object] = {"stop": False, "stop_ns": 0, "error": None, "cpu": None, "tid": None}

    def stop() -> None:
        box["stop_ns"] = now_ns()  # a wake after this instant is none of the schedule's
        box["stop"] = True

    def notifier() -> None:
        old_mask: Optional[Set[Any]] = None
        try:
            old_mask = _enter_notifier_role(params, block)
            box["tid"] = native_tid()
            started.set()
            if not go.wait(handshake_s):
                raise HarnessError("the main thread did not start waiting")
            # The first notify is one settle period away, so the waiter is parked when it comes.
            base = now_ns() + max(params.settle_us * 1000, interval_ns)
            for i in range(total):
                if out.is_set():
                    break  # the main thread failed: no one is waiting any more
                due = base + i * interval_ns
                remaining = due - now_ns()  # sleep, never spin: see the thread driver
                if remaining > 0:
                    time.sleep(remaining / 1e9)
                issued.append(step())
                scheduled.append(due)
            # Let the last wake arrive (or time out).
            deadline = now_ns() + int(params.timeout_s * 1e9)
            while issued and not out.is_set() and now_ns() < deadline and not last_notify_answered(issued, wakes, params.planted_delay_ns):
                time.sleep(0.001)
            box["cpu"] = current_cpu()
        except BaseException as exc:  # surfaced in the main thread
            box["error"] = exc
        finally:
            stop()
            started.set()
            try:
                if interrupt is not None and go.is_set():
                    _rescue(interrupt, out, now_ns() + int(handshake_s * 1e9))
            except BaseException as exc:
                if box["error"] is None:
                    box["error"] = exc
            finally:
                if old_mask is not None:
                    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    thread = threading.Thread(target=notifier, name=name, daemon=True)
    try:
        reset()
        thread.start()
        if not started.wait(handshake_s):
            raise HarnessError("notifier thread did not start")
        failed = _notifier_error(box)
        if failed is not None:
            raise failed
        go.set()
        while True:
            t1 = wait(poll_s)
            if t1 is not None:
                if box["stop"] and t1 >= box["stop_ns"]:  # type: ignore[operator]
                    break  # woken by the end of the run, not by a notify
                reset()  # consume, so the next notify is a new wake
                wakes.append(t1)
            if box["stop"]:
                break
    finally:
        out.set()
        if thread.ident is not None:
            thread.join(handshake_s)
    failed = _notifier_error(box)
    if failed is not None:
        raise failed
    first_t1, coalesced = match_open_loop(issued, wakes, params.planted_delay_ns)
    collector = LatencyCollector(params)
    for i in range(total):
        woke = first_t1.get(i)
        collector.add(None if woke is None else woke - scheduled[i], notify_late=issued[i] - scheduled[i])
    return collector.result(
        settle_us=params.settle_us,
        mode="open",
        interval_us=params.interval_us,
        coalesced=sum(1 for i in coalesced if i >= params.warmup),
        notifier_cpu_seen=box["cpu"],
        waiter_cpu_seen=current_cpu(),
        notifier_tid=box["tid"],
        waiter_tid=native_tid(),
    )


def measure_self(params: MeasureParams, path: WakePath) -> RawLatency:
    """Time ``path``'s notify waking ``path``'s wait in the same (main) thread: a self wake.

    Closed loop, per wake: ``reset()``, ``t0 = notify_step()``, then the
    wait -- for ``sigusr1-self`` a spin on the handler's stamp -- which
    returns ``t1`` (None at ``timeout_s``: lost).  Open loop: the same, each
    notify on a fixed schedule and each latency from the scheduled instant
    (a self wake cannot be merged into another: each ends, or times out,
    before the next notify).  A ``t1`` before its ``t0`` answered an older
    notify: lost, counted in ``stale_wakes``.
    """
    collector = LatencyCollector(params)
    slots = collector.slots
    reset = path.reset
    wait = path.stamped()
    step = path.step(params)
    timeout_s = params.timeout_s
    stale = 0
    if params.mode != "open":
        for index in range(params.total_wakes):
            reset()
            t0 = step()
            t1 = wait(timeout_s)
            if t1 is not None and t1 < t0:
                stale += 1
                t1 = None
            slots[index] = LOST_NS if t1 is None else t1 - t0
        cpu = current_cpu()
        tid = native_tid()
        return collector.result(
            mode="closed", stale_wakes=stale, notifier_cpu_seen=cpu, waiter_cpu_seen=cpu, notifier_tid=tid, waiter_tid=tid
        )

    interval_ns = params.interval_us * 1000
    base = now_ns() + max(params.settle_us * 1000, interval_ns)
    for index in range(params.total_wakes):
        due = base + index * interval_ns
        remaining = due - now_ns()
        if remaining > 0:
            time.sleep(remaining / 1e9)
        reset()
        t0 = step()
        t1 = wait(timeout_s)
        if t1 is not None and t1 < t0:
            stale += 1
            t1 = None
        collector.add(None if t1 is None else t1 - due, notify_late=t0 - due)
    cpu = current_cpu()
    return collector.result(
        mode="open",
        interval_us=params.interval_us,
        coalesced=0,
        stale_wakes=stale,
        notifier_cpu_seen=cpu,
        waiter_cpu_seen=cpu,
    )
