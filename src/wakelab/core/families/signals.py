"""Signal arms: delivery of a signal to a waiter, and handler install cost.

CPython runs a Python-level signal handler only in the main thread, and only
when the main thread's eval loop next checks for pending signals; the C-level
handler merely records that the signal arrived (and writes the signal number
to the wakeup fd, if one is set).  So "self-signal latency" is ``os.kill`` ->
kernel delivery -> C handler -> next eval-breaker check -> Python handler.
The original lab's arm busy-waits in the main thread, so the check comes
almost at once and no scheduler sleep is included.

Matched pairs.  A thread cannot be parked in the kernel and send itself a
signal at the same time, so the *blocked* counterparts of the spinning
``sigusr1-self`` arm are necessarily cross-thread: a helper thread notifies
the main thread, which waits in ``signal.pause()`` (handler path,
``pause-handler``), in ``signal.sigtimedwait()`` (no handler at all,
``sigwait-thread-to-main``) or in ``select()`` on the wakeup fd
(``wakeup-fd-select``, the path asyncio's ``add_signal_handler`` takes).
``pthread-kill-sigwait`` is the reverse direction: the main thread wakes a
worker thread parked in ``sigtimedwait()`` -- the only way a thread other
than the main one can wait for a signal in Python.

Drivers.  This module holds only the primitives' moves
(:class:`~wakelab.core.drivers.WakePath` factories) and the arms' setup and
tear-down of signal state; the wake loops are the drivers'.  The arms whose
waiter is the main thread run on :mod:`wakelab.core.drivers.main` (the
cross-thread ones with a helper notifier thread, ``sigusr1-self`` in its self
mode); ``pthread-kill-sigwait`` runs on :mod:`wakelab.core.drivers.thread`.

Three hazards shape the code below.

* Routing.  A process-directed signal (``os.kill``) goes to any thread that
  does not block it; the kernel prefers the main thread, but nothing forbids
  another one.  Arms whose waiter must receive the signal itself use the
  thread-directed ``signal.pthread_kill``; the wakeup-fd arm uses ``os.kill``
  like an outside sender would, and its notifier blocks SIGUSR1 so that it
  cannot take the signal itself.
* Leftovers.  A wake that arrives after its waiter gave up leaves SIGUSR1
  pending (or a Python handler call queued, or a byte in the wakeup fd).  In
  closed loop each path's ``reset`` -- or, for the worker thread of
  ``pthread-kill-sigwait``, its wait, before it blocks and so during the
  settle -- drains it before the next wake (``late_signals_drained``), and
  before the mask and handler are restored pending SIGUSR1 is drained and
  queued Python handlers are run, so that nothing of ours fires after the
  arm.  Arms that block SIGUSR1 also install a no-op handler for the arm's
  duration, so that a stray SIGUSR1 landing on some other thread cannot kill
  the process.  In open loop nothing is drained between wakes: a signal
  pending when the waiter comes back is the next wake, as it is for a
  program.
* ``pause()`` has no timeout.  The main-thread driver bounds it: when a wake
  has not ended ``timeout_s`` after its notify (the signal came before the
  main thread was inside ``pause``, the classic pause race), or the notifier
  failed mid-wake, the notifier re-sends SIGUSR1 process-directed (so that it
  works even if ``pthread_kill`` failed) until ``pause`` returns, and the
  wake counts as lost (``watchdog_rescues``).

Placement (``params.placement``): the worker has pinned the calling (main)
thread to the notifier's CPU.  In the arms whose waiter is the main thread
the roles are the other way round: the main-thread driver moves the main
thread to the waiter's CPU for the arm's duration (its CPU mask is restored
afterwards) and its helper thread takes the notifier role; in
``pthread-kill-sigwait`` the worker thread takes the waiter role.  Each side
reads the CPU it last ran on after its last wake: ``notifier_cpu_seen`` and
``waiter_cpu_seen`` in ``info``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import threading
from typing import Callable, Dict, Iterator, List, Optional, Tuple, cast

from wakelab.core.drivers import HarnessError, WakePath, handshake_timeout_s
from wakelab.core.drivers import main as main_driver
from wakelab.core.drivers import thread as thread_driver
from wakelab.core.model import (
    AFTER_WAIT,
    BLOCKED,
    CROSS_THREAD,
    GROUP_SIGNALS,
    HANDLER,
    LATENCY,
    MATCHED,
    NO_WAITER,
    RATE,
    ROLE_HANDLER,
    ROLE_HANDLER_COST,
    ROLE_SIGWAIT,
    ROLE_UNWRAPPED_INSTALL,
    SELF,
    SPINNING,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    RawRate,
    Role,
    T1Shape,
    now_ns,
    with_info,
)
from wakelab.core.families import no_sigtimedwait_reason, this_python
from wakelab.core.sigstate import preserved_signal_state

FAMILY = Family(id="signals", title="Signals", color="#D55E00", order=20, group=GROUP_SIGNALS, user_arms=True)

Components = main_driver.Components


def requires_main_thread_sigusr1() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1"):
        return "SIGUSR1 does not exist on this platform"
    if threading.current_thread() is not threading.main_thread():
        return "Python signal handlers can only be installed from the main thread"
    return None


def _noop() -> None:
    pass


# ---------------------------------------------------------------------------
# The spinning self-signal of the original lab.


def self_signal_path(seen: List[int]) -> WakePath:
    """``os.kill(os.getpid(), SIGUSR1)`` seen by the main thread spinning on the handler's stamp.

    The handler stores ``perf_counter_ns()`` in ``seen[0]`` as its first
    statement; the wait polls it (no sleep, no GIL release: the handler runs
    in this very thread) and returns it as ``t1``, or None at the deadline.
    """
    kill = functools.partial(os.kill, os.getpid(), signal.SIGUSR1)

    def reset() -> None:
        seen[0] = 0

    def wait(timeout_s: float) -> Optional[int]:
        deadline_ns = now_ns() + int(timeout_s * 1e9)
        while not seen[0]:
            if now_ns() > deadline_ns:
                return None
        return seen[0]

    return WakePath(reset=reset, wait_stamped=wait, notify=kill)


def measure_sigusr1_self(params: MeasureParams) -> RawLatency:
    """Self-signal round trip (ns): ``os.kill(getpid(), SIGUSR1)`` to the handler's first statement.

    The main thread busy-waits on a flag the handler sets, so the measured
    time is delivery plus CPython's deferred handler dispatch, without any
    scheduler sleep.  Runs on the main-thread driver's self mode.
    """
    seen = [0]

    def handler(signum: int, frame: object) -> None:
        seen[0] = now_ns()

    signum = signal.SIGUSR1
    with preserved_signal_state([signum]):
        signal.signal(signum, handler)
        # A blocked SIGUSR1 would stay pending forever: make sure it is not.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        try:
            return main_driver.measure_self(params, self_signal_path(seen))
        finally:
            _run_queued_handlers()


WARMUP_ROUND_CALLS = 2000
def measure_signal_install(params: MeasureParams, install: Optional[Callable[..., object]] = None) -> RawRate:
    """Rate of ``signal.signal(SIGUSR1, handler)`` rebinding, in rounds of ``install_n`` calls.

    Each round is followed by the same loop with an empty body, so the loop's
    own overhead is reported beside the figure (as lmbench does).  Warm-up
    rounds, discarded, are of at most ``WARMUP_ROUND_CALLS`` calls.
    ``install`` is the function timed (default ``signal.signal``; ``_signal.signal`` for the unwrapped arm).
    """

    def handler(signum: int, frame: object) -> None:
        pass

    install = install or signal.signal
    signum = signal.SIGUSR1
    counted = range(params.install_n)
    # Warming up (caches, CPython's specializing interpreter) takes far fewer calls than a round.
    warm = range(min(params.install_n, WARMUP_ROUND_CALLS))
    rounds: List[int] = []
    baseline: List[int] = []
    with preserved_signal_state([signum]):
        for i in range(params.warmup_rounds + params.rounds):
            loop = warm if i < params.warmup_rounds else counted
            t0 = now_ns()
            for _ in loop:
                install(signum, handler)
            elapsed = now_ns() - t0
            b0 = now_ns()
            for _ in loop:
                pass
            baseline_elapsed = now_ns() - b0
            if i >= params.warmup_rounds:
                rounds.append(elapsed)
                baseline.append(baseline_elapsed)
    return RawRate(
        n_per_round=params.install_n,
        round_ns=tuple(rounds),
        baseline_round_ns=tuple(baseline),
        warmup_rounds=params.warmup_rounds,
    )


def requires_unwrapped_install() -> Optional[str]:
    """None where ``_signal.signal`` (the C function under ``signal.signal``) can be timed here."""
    reason = requires_main_thread_sigusr1()
    if reason is not None:
        return reason
    try:
        import _signal  # noqa: F401
    except ImportError:
        return "%s has no _signal module (signal.signal is not a wrapper around one)" % this_python()
    return None


def measure_signal_install_unwrapped(params: MeasureParams) -> RawRate:
    """Rate of ``_signal.signal(SIGUSR1, handler)``: ``signal.signal`` without its Python wrapper.

    ``signal.signal`` is Lib/signal.py's wrapper, which converts the signal
    number and the previous handler to and from enums around the C function
    ``_signal.signal``; timed the same way as ``signal-install``, the two
    arms and ``native-sigaction-install`` split an install into wrapper, C
    function and kernel call.
    """
    import _signal

    return measure_signal_install(params, _signal.signal)


# ---------------------------------------------------------------------------
# Blocked signal waiters.


def _requires_main_thread_and(*names: str) -> Callable[[], Optional[str]]:
    """A ``requires`` function: main thread, SIGUSR1, and ``signal.<name>`` for each name."""

    def requires() -> Optional[str]:
        reason = requires_main_thread_sigusr1()
        if reason is not None:
            return reason
        for name in names:
            if not hasattr(signal, name):
                return no_sigtimedwait_reason() if name == "sigtimedwait" else "signal.%s does not exist in %s" % (name, this_python())
        return None

    return requires


requires_main_thread_sigwait = _requires_main_thread_and(
    "sigtimedwait", "sigpending", "pthread_sigmask", "pthread_kill"
)
requires_main_thread_pause = _requires_main_thread_and("pause", "pthread_sigmask", "pthread_kill")
requires_main_thread_wakeup_fd = _requires_main_thread_and("set_wakeup_fd", "pthread_sigmask")

# Upper bound on how many copies of a signal a drain consumes (a standard signal
# does not queue, so one is the usual count; the bound only guards against a
# sender that never stops).
_DRAIN_LIMIT = 64


def _drain_pending(signum: int) -> int:
    """Consume ``signum`` pending for the calling thread, which must block it; return the count."""
    drained = 0
    while drained < _DRAIN_LIMIT and signum in signal.sigpending():
        if signal.sigtimedwait([signum], 0) is None:
            break
        drained += 1
    return drained


def _run_queued_handlers() -> None:
    """Run, now, any Python handler whose C handler has already fired.

    CPython defers Python handlers to the main thread's next eval-breaker
    check; ``pthread_sigmask`` calls ``PyErr_CheckSignals()`` before it
    returns, and with an empty set it changes nothing.  Called before a
    handler is restored, so that a late SIGUSR1 of ours never reaches the
    caller's handler (or, on 3.9, the "ignored due to race condition" path).
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, [])


def _read_available(fd: int) -> bytes:
    """Everything readable now from the non-blocking ``fd``."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 512)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@contextlib.contextmanager
def _sigusr1_blocked(strays: List[int], late: List[int]) -> Iterator[None]:
    """SIGUSR1 blocked in this thread (threads started inside inherit the block), for a sigwait arm.

    A no-op handler counts stray deliveries in ``strays[0]``; on the way out,
    whatever SIGUSR1 is still pending is drained (counted in ``late[0]``)
    before the handler and mask are restored, so nothing of ours fires after
    the arm.
    """
    signum = signal.SIGUSR1
    with preserved_signal_state([signum]):
        signal.signal(signum, _ignore_stray(strays))
        signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
        try:
            yield
        finally:
            late[0] += _drain_pending(signum)


def _ignore_stray(counter: List[int]) -> Callable[[int, object], None]:
    """A SIGUSR1 handler for arms that block SIGUSR1: it only counts strays.

    Installed so that a SIGUSR1 that reaches some thread which does not
    block it (a thread the arm did not start) runs this rather than the
    default action, which would end the process.
    """

    def handler(signum: int, frame: object) -> None:
        counter[0] += 1

    return handler


def _timestamping_handler(handled: List[int]) -> Callable[[int, object], None]:
    """A SIGUSR1 handler whose first statement takes ``t1``; it appends it to ``handled``."""

    def handler(signum: int, frame: object) -> None:
        t = now_ns()
        handled.append(t)

    return handler


# ---------------------------------------------------------------------------
# Blocked waiters in the main thread (main-thread driver).


def sigwait_main_path(params: MeasureParams, late: List[int]) -> WakePath:
    """``pthread_kill(main, SIGUSR1)`` ends the main thread's ``sigtimedwait``; SIGUSR1 is blocked.

    Build it in the main thread (the notify targets the calling thread).
    Closed loop: ``reset`` drains a SIGUSR1 left pending by a late wake,
    counting it in ``late[0]``.
    """
    signum = signal.SIGUSR1
    sigtimedwait = signal.sigtimedwait
    wait_set = [signum]

    def drain() -> None:
        late[0] += _drain_pending(signum)

    def wait(timeout_s: float) -> Optional[int]:
        got = sigtimedwait(wait_set, timeout_s)
        t1 = now_ns()
        return t1 if got is not None else None

    return WakePath(
        reset=_noop if params.mode == "open" else drain,
        wait_stamped=wait,
        notify=functools.partial(signal.pthread_kill, threading.get_ident(), signum),
    )


def pause_path(params: MeasureParams, handled: List[int], foreign: List[int]) -> Tuple[WakePath, Components]:
    """``pthread_kill(main, SIGUSR1)`` interrupts the main thread's ``signal.pause()``.

    ``t1`` is the first statement of the handler (:func:`_timestamping_handler`
    on ``handled``), which CPython runs inside ``pause()``; the components are
    ``handler`` and ``pause_return`` (the first statement after ``pause()``
    returns).  ``pause()`` has no timeout: the driver's ``interrupt`` bounds
    it.  If a handler has already run since ``reset`` the wait does not
    pause (the driver then sees a ``t1`` before ``t0``: stale); if ``pause()``
    returns with no handler run, another signal ended it (``foreign[0]``).
    In open loop each wait takes the oldest stamp not yet taken.
    """
    signum = signal.SIGUSR1
    pause = signal.pause
    open_loop = params.mode == "open"
    box = {"t1": 0, "returned": 0}

    def reset() -> None:
        del handled[:]

    def wait(timeout_s: float) -> Optional[int]:  # unbounded: see the driver's interrupt
        if not handled:
            pause()
        returned = now_ns()
        if not handled:
            foreign[0] += 1
            return None
        t1 = handled.pop(0) if open_loop else handled[0]
        box["t1"], box["returned"] = t1, returned
        return t1

    def components() -> Optional[Dict[str, int]]:
        return {"handler": box["t1"], "pause_return": box["returned"]}

    path = WakePath(
        reset=_noop if open_loop else reset,
        wait_stamped=wait,
        notify=functools.partial(signal.pthread_kill, threading.get_ident(), signum),
    )
    return path, components


def wakeup_fd_path(params: MeasureParams, rfd: int, handled: List[int], late: List[int]) -> Tuple[WakePath, Components]:
    """``os.kill(getpid(), SIGUSR1)`` makes the C handler write to the wakeup fd ``rfd`` the main thread selects on.

    ``t1`` is the first statement after ``select`` returns with ``rfd``
    readable, if what is then read holds SIGUSR1's byte (a byte of another
    signal, or a timeout, is no wake of ours); the components are
    ``delivery`` (that ``t1``) and ``handler`` (the Python handler's first
    statement, :func:`_timestamping_handler` on ``handled``), and a wake
    whose handler has not run is not counted.  Closed loop: ``reset`` drains
    the pipe, counting SIGUSR1 bytes in ``late[0]``.
    """
    signal_byte = int(signal.SIGUSR1)
    select_fn = select.select
    rlist = [rfd]
    woke = [0]

    def reset() -> None:
        del handled[:]
        late[0] += _read_available(rfd).count(signal_byte)

    def clear_stamps() -> None:  # open loop: components are not used, keep the list short
        del handled[:]

    def wait(timeout_s: float) -> Optional[int]:
        readable, _, _ = select_fn(rlist, [], [], timeout_s)
        t1 = now_ns()
        data = _read_available(rfd) if readable else b""
        if signal_byte not in data:
            return None
        woke[0] = t1
        return t1

    def components() -> Optional[Dict[str, int]]:
        if not handled:
            return None
        return {"delivery": woke[0], "handler": handled[0]}

    path = WakePath(
        reset=clear_stamps if params.mode == "open" else reset,
        wait_stamped=wait,
        notify=functools.partial(os.kill, os.getpid(), signal.SIGUSR1),
    )
    return path, components


def measure_sigwait_thread_to_main(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a thread's ``pthread_kill(main, SIGUSR1)`` ending the main thread's ``sigtimedwait``.

    The main thread blocks SIGUSR1 and parks in ``signal.sigtimedwait``
    (``sigwait`` has no timeout; this is it, bounded by ``timeout_s``); the
    wait consumes the signal, so no handler runs -- the handler-free,
    blocked counterpart of ``sigusr1-self``.  The main-thread driver's helper
    thread is the notifier.
    """
    strays = [0]
    late = [0]
    # Blocked before the notifier starts, so the notifier inherits the block.
    with _sigusr1_blocked(strays, late):
        pending_at_start = _drain_pending(signal.SIGUSR1)
        raw = main_driver.measure(
            params, sigwait_main_path(params, late), block=[signal.SIGUSR1], name="wakelab-sigwait-notifier"
        )
    return with_info(
        raw,
        signal_route="thread-directed: signal.pthread_kill to the main thread",
        pending_at_start=pending_at_start,
        late_signals_drained=late[0],
        stray_handler_runs=strays[0],
    )


def measure_pause_handler(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a thread's ``pthread_kill(main, SIGUSR1)`` to the Python handler's first statement, the main thread parked in ``signal.pause()``.

    The handler runs inside ``signal.pause()`` (CPython checks for signals
    before ``pause`` returns), so the sample is the handler time and the
    return from ``pause`` is the component ``pause_return``; ``handler`` is
    recorded too.  ``pause`` has no timeout: if it has not returned
    ``timeout_s`` after the notify -- the signal arrived before the main
    thread was inside ``pause``, the classic pause race -- the driver's
    notifier re-sends SIGUSR1 (process-directed this time, so that it still
    works if ``pthread_kill`` failed) until ``pause`` returns, and the wake
    counts as lost (``watchdog_rescues``).
    """
    signum = signal.SIGUSR1
    handled: List[int] = []
    foreign = [0]
    with preserved_signal_state([signum]):
        signal.signal(signum, _timestamping_handler(handled))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        path, components = pause_path(params, handled, foreign)
        try:
            raw = main_driver.measure(
                params,
                path,
                interrupt=functools.partial(os.kill, os.getpid(), signum),
                components=components,
                # The rescue is process-directed: keep it off the notifier.
                block=[signum],
                name="wakelab-pause-notifier",
            )
        finally:
            _run_queued_handlers()
    return with_info(
        raw,
        signal_route="thread-directed: signal.pthread_kill to the main thread",
        foreign_wakes=cast(int, raw.info.get("foreign_wakes", 0)) + foreign[0],
    )


def measure_wakeup_fd_select(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``os.kill(getpid(), SIGUSR1)`` from a thread to the main thread's ``select`` on the wakeup fd.

    The main thread waits in ``select.select`` on the read end of a
    non-blocking pipe registered with ``signal.set_wakeup_fd``; the C-level
    handler writes the signal number there.  The sample is *delivery* (the
    first statement after ``select`` returns with the byte readable), with
    components ``delivery`` and ``handler`` (the Python handler's first
    statement).  Neither order is guaranteed: when the kernel delivers the
    signal to the main thread (it prefers it, and the notifier blocks
    SIGUSR1), ``select`` fails with EINTR, CPython runs the handler, then
    retries ``select``, which sees the byte -- so the handler usually comes
    first; had another thread taken the signal, ``select`` would return on
    the byte and the handler would follow at the next eval-breaker check.
    """
    signum = signal.SIGUSR1
    handled: List[int] = []
    late = [0]
    with contextlib.ExitStack() as cleanup:
        # Exit order (reverse of entry): run queued handlers, restore the wakeup
        # fd, close the pipe, restore handler and mask.
        cleanup.enter_context(preserved_signal_state([signum]))
        rfd, wfd = os.pipe()
        cleanup.callback(os.close, rfd)
        cleanup.callback(os.close, wfd)
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)  # set_wakeup_fd insists on it
        signal.signal(signum, _timestamping_handler(handled))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        old_wakeup_fd = signal.set_wakeup_fd(wfd)
        cleanup.callback(signal.set_wakeup_fd, old_wakeup_fd)
        cleanup.callback(_run_queued_handlers)
        path, components = wakeup_fd_path(params, rfd, handled, late)
        raw = main_driver.measure(
            params, path, components=components, block=[signum], name="wakelab-wakeup-fd-notifier"
        )
        _run_queued_handlers()
        late[0] += _read_available(rfd).count(int(signum))
    return with_info(
        raw,
        signal_route="process-directed: os.kill(os.getpid()) from a thread that blocks SIGUSR1",
        wakeup_fd="non-blocking os.pipe()",
        lost_or_foreign=raw.lost,
        late_signals_drained=late[0],
    )


# ---------------------------------------------------------------------------
# A worker thread parked in sigtimedwait (thread driver).


def sigwait_thread_path(params: MeasureParams, late: List[int]) -> WakePath:
    """``pthread_kill(worker, SIGUSR1)`` ends the driver's waiter thread's ``sigtimedwait``.

    The waiter's ident is known only once the driver's waiter thread runs:
    its first wait records it (and blocks SIGUSR1 in itself, which it has
    also inherited from the main thread), and ``bind`` -- which runs before
    ``t0`` -- hands the notifier ``pthread_kill`` aimed at it.  Closed loop:
    a signal left pending on the waiter by a late wake is drained by the
    waiter itself before it blocks again (during the settle, outside the
    window), counting it in ``late[0]``; a late signal after the last wake
    ends with the waiter thread, where it can reach no handler.
    """
    signum = signal.SIGUSR1
    sigtimedwait = signal.sigtimedwait
    wait_set = [signum]
    drain = params.mode != "open"
    kill: List[Optional[Callable[[], object]]] = [None]
    known = threading.Event()
    handshake_s = handshake_timeout_s(params)

    def wait(timeout_s: float) -> Optional[int]:
        if kill[0] is None:
            signal.pthread_sigmask(signal.SIG_BLOCK, wait_set)
            kill[0] = functools.partial(signal.pthread_kill, threading.get_ident(), signum)
            known.set()
        if drain:
            late[0] += _drain_pending(signum)
        got = sigtimedwait(wait_set, timeout_s)
        t1 = now_ns()
        return t1 if got is not None else None

    def bind() -> Callable[[], object]:
        fire = kill[0]
        if fire is None:
            if not known.wait(handshake_s):
                raise HarnessError("the sigwait worker thread never reached its wait")
            fire = kill[0]
            assert fire is not None
        return fire

    return WakePath(reset=_noop, wait_stamped=wait, bind=bind)


def measure_pthread_kill_sigwait(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of the main thread's ``pthread_kill(worker, SIGUSR1)`` ending a worker's ``sigtimedwait``.

    The worker (the thread driver's waiter thread) blocks SIGUSR1 and parks
    in ``signal.sigtimedwait`` (bounded by ``timeout_s``); the main thread
    blocks SIGUSR1 too (and a no-op handler is installed), so a
    process-directed SIGUSR1 from elsewhere can neither kill the process nor
    run a handler mid-measurement.  ``pthread_kill`` is thread-directed: only
    the worker can take it.
    """
    strays = [0]
    late = [0]
    # Blocked before the driver starts its waiter thread, which inherits the block.
    with _sigusr1_blocked(strays, late):
        raw = thread_driver.measure(params, sigwait_thread_path(params, late), "wakelab-sigwait-worker")
    return with_info(
        raw,
        signal_route="thread-directed: signal.pthread_kill to the worker",
        late_signals_drained=late[0],
        stray_handler_runs=strays[0],
    )


ARMS: List[Arm] = [
    Arm(
        name="sigusr1-self",
        family="signals",
        driver="main",
        kind=LATENCY,
        mechanism="os.kill(os.getpid(), SIGUSR1); the Python handler runs in the main thread, which busy-waits on its flag",
        waiter=SPINNING,
        scope=SELF,
        t0="main thread: perf_counter_ns() immediately before os.kill(os.getpid(), SIGUSR1)",
        t1="main thread: perf_counter_ns() as the first statement of the Python SIGUSR1 handler",
        measure=measure_sigusr1_self,
        requires=requires_main_thread_sigusr1,
        needs_main_thread=True,
        native="native-self-signal", native_match=MATCHED, t1_shape=T1Shape("spin", HANDLER),
        roles=(Role(ROLE_HANDLER),),
    ),
    Arm(
        name="signal-install",
        family="signals",
        kind=RATE,
        mechanism="signal.signal(SIGUSR1, handler) rebinding in a tight loop; empty loop as baseline",
        waiter=NO_WAITER,
        scope=SELF,
        t0="perf_counter_ns() before a round of install_n calls",
        t1="perf_counter_ns() after the round; ops/s = install_n / (t1 - t0)",
        measure=measure_signal_install,
        requires=requires_main_thread_sigusr1,
        needs_main_thread=True,
        native="native-sigaction-install", native_match=MATCHED,
    ),
    Arm(
        name="signal-install-unwrapped",
        family="signals",
        kind=RATE,
        mechanism=(
            "_signal.signal(SIGUSR1, handler) rebinding in a tight loop: the C function under signal.signal, "
            "without the wrapper's enum conversions; empty loop as baseline"
        ),
        waiter=NO_WAITER,
        scope=SELF,
        t0="perf_counter_ns() before a round of install_n calls",
        t1="perf_counter_ns() after the round; ops/s = install_n / (t1 - t0)",
        measure=measure_signal_install_unwrapped,
        requires=requires_unwrapped_install,
        needs_main_thread=True,
        # _signal.signal: the C function under signal.signal's wrapper, one sigaction() deep.
        native="native-sigaction-install", native_match=MATCHED,
        roles=(Role(ROLE_UNWRAPPED_INSTALL, against="signal-install"),),
    ),
    Arm(
        name="sigwait-thread-to-main",
        family="signals",
        driver="main",
        kind=LATENCY,
        mechanism=(
            "signal.pthread_kill(main, SIGUSR1) from a notifier thread ends the main thread's "
            "signal.sigtimedwait (sigwait bounded by timeout_s), SIGUSR1 blocked, no handler run; "
            "blocked counterpart of sigusr1-self"
        ),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: perf_counter_ns() immediately before signal.pthread_kill(main thread, SIGUSR1)",
        t1="main thread: perf_counter_ns() as the first statement after signal.sigtimedwait([SIGUSR1]) returns",
        measure=measure_sigwait_thread_to_main,
        requires=requires_main_thread_sigwait,
        needs_main_thread=True,
        # C's sigwait floor wakes a worker thread from the main one; this arm goes the other way.
        # To the kernel a thread is a thread: same scope, state and t1.
        native="native-sigwait", native_match=MATCHED, t1_shape=T1Shape("sigtimedwait", AFTER_WAIT),
        roles=(Role(ROLE_SIGWAIT),),
    ),
    Arm(
        name="pause-handler",
        family="signals",
        driver="main",
        kind=LATENCY,
        mechanism=(
            "signal.pthread_kill(main, SIGUSR1) from a notifier thread interrupts the main thread's "
            "signal.pause(); if pause() has not returned timeout_s after the notify, the notifier re-sends "
            "SIGUSR1 (process-directed) until it does (counted lost); blocked counterpart of sigusr1-self"
        ),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: perf_counter_ns() immediately before signal.pthread_kill(main thread, SIGUSR1)",
        t1=(
            "main thread: perf_counter_ns() as the first statement of the Python SIGUSR1 handler, "
            "run inside signal.pause() (component pause_return: first statement after pause() returns)"
        ),
        measure=measure_pause_handler,
        requires=requires_main_thread_pause,
        needs_main_thread=True,
        native="native-pause-handler", native_match=MATCHED, t1_shape=T1Shape("pause", HANDLER),
        roles=(
            Role(ROLE_HANDLER),
            Role(ROLE_HANDLER_COST, against="sigwait-thread-to-main",
                 isolates="running a Python handler in a main thread blocked in pause(), against taking the same "
                          "signal with sigtimedwait() and no handler",
                 adds="a Python handler adds"),
        ),
    ),
    Arm(
        name="wakeup-fd-select",
        family="signals",
        driver="main",
        kind=LATENCY,
        mechanism=(
            "os.kill(os.getpid(), SIGUSR1) from a notifier thread; the C handler writes to the "
            "signal.set_wakeup_fd pipe the main thread waits on in select.select (the asyncio path); "
            "components delivery and handler"
        ),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: perf_counter_ns() immediately before os.kill(os.getpid(), SIGUSR1)",
        t1=(
            "main thread: perf_counter_ns() as the first statement after select.select() returns with "
            "the wakeup fd readable (component delivery; component handler: the Python handler's first statement)"
        ),
        measure=measure_wakeup_fd_select,
        requires=requires_main_thread_wakeup_fd,
        needs_main_thread=True,
        native="native-wakeup-fd-select", native_match=MATCHED, t1_shape=T1Shape("select", AFTER_WAIT),
        roles=(
            Role(ROLE_HANDLER),
            Role(ROLE_HANDLER_COST, against="pipe",
                 isolates="a signal whose C handler writes the set_wakeup_fd pipe (the asyncio path), against a "
                          "thread writing a pipe itself",
                 adds="waking through the signal wakeup fd adds"),
        ),
    ),
    Arm(
        name="pthread-kill-sigwait",
        family="signals",
        driver="thread",
        kind=LATENCY,
        mechanism=(
            "signal.pthread_kill(worker, SIGUSR1) from the main thread ends a worker thread's "
            "signal.sigtimedwait; SIGUSR1 blocked in both threads, no handler run"
        ),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: perf_counter_ns() immediately before signal.pthread_kill(worker thread, SIGUSR1)",
        t1="worker thread: perf_counter_ns() as the first statement after signal.sigtimedwait([SIGUSR1]) returns",
        measure=measure_pthread_kill_sigwait,
        requires=requires_main_thread_sigwait,
        needs_main_thread=True,
        native="native-sigwait", native_match=MATCHED, t1_shape=T1Shape("sigtimedwait", AFTER_WAIT),
        roles=(Role(ROLE_SIGWAIT),),
    ),
]
