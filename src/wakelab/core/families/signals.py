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

Two hazards shape the code below.

* Routing.  A process-directed signal (``os.kill``) goes to any thread that
  does not block it; the kernel prefers the main thread, but nothing forbids
  another one.  Arms whose waiter must receive the signal itself use the
  thread-directed ``signal.pthread_kill``; the wakeup-fd arm uses ``os.kill``
  like an outside sender would, and its notifier blocks SIGUSR1 so that it
  cannot take the signal itself.
* Leftovers.  A wake that arrives after its waiter gave up leaves SIGUSR1
  pending (or a Python handler call queued).  Before the next round, and
  before the mask and handler are restored, pending SIGUSR1 is drained with
  ``sigtimedwait(..., 0)`` in every thread that blocks it, and queued Python
  handlers are run, so that nothing of ours fires after the arm.  Arms that
  block SIGUSR1 also install a no-op handler for the arm's duration, so that
  a stray SIGUSR1 landing on some other thread cannot kill the process.

Placement (``params.placement``): the worker has pinned the calling (main)
thread to the notifier's CPU.  In the arms whose waiter is the main thread
the roles are the other way round, so the main thread moves to the waiter's
CPU for the arm's duration (its CPU mask is restored afterwards) and the
helper thread takes the notifier role; in ``pthread-kill-sigwait`` the
worker takes the waiter role.  Each side reads the CPU it last ran on after
its last wake: ``notifier_cpu_seen`` and ``waiter_cpu_seen`` in ``info``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import threading
import time
from typing import Callable, Iterable, List, Optional, Tuple

from wakelab.core.drivers import HarnessError
from wakelab.core.model import (
    BLOCKED,
    CROSS_THREAD,
    LATENCY,
    NO_WAITER,
    RATE,
    SELF,
    SPINNING,
    Arm,
    LatencyCollector,
    MeasureParams,
    RawLatency,
    RawRate,
    now_ns,
    plant_delay,
    spin_until,
)
from wakelab.core.placement import NOTIFIER, WAITER, current_cpu, enter_role, preserved_affinity
from wakelab.core.sigstate import preserved_signal_state


def requires_main_thread_sigusr1() -> Optional[str]:
    if not hasattr(signal, "SIGUSR1"):
        return "SIGUSR1 does not exist on this platform"
    if threading.current_thread() is not threading.main_thread():
        return "Python signal handlers can only be installed from the main thread"
    return None


def measure_sigusr1_self(params: MeasureParams) -> RawLatency:
    """Self-signal round trip (ns): ``os.kill(getpid(), SIGUSR1)`` to the handler's first statement.

    The main thread busy-waits on a flag the handler sets, so the measured
    time is delivery plus CPython's deferred handler dispatch, without any
    scheduler sleep.
    """
    collector = LatencyCollector(params)
    seen = [0]

    def handler(signum: int, frame: object) -> None:
        seen[0] = now_ns()

    pid = os.getpid()
    kill = os.kill
    signum = signal.SIGUSR1
    timeout_ns = int(params.timeout_s * 1e9)
    with preserved_signal_state([signum]):
        signal.signal(signum, handler)
        # A blocked SIGUSR1 would stay pending forever: make sure it is not.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        slots = collector.slots
        delay_ns = params.planted_delay_ns  # tested inline: a call here would sit inside every sample
        for index in range(params.total_wakes):
            seen[0] = 0
            t0 = now_ns()
            if delay_ns:
                spin_until(t0 + delay_ns)
            kill(pid, signum)
            while not seen[0]:
                if now_ns() - t0 > timeout_ns:
                    break
            t1 = seen[0]
            slots[index] = t1 - t0 if t1 else None
    return collector.result()


WARMUP_ROUND_CALLS = 2000


def measure_signal_install(params: MeasureParams) -> RawRate:
    """Rate of ``signal.signal(SIGUSR1, handler)`` rebinding, in rounds of ``install_n`` calls.

    Each round is followed by the same loop with an empty body, so the loop's
    own overhead is reported beside the figure (as lmbench does).  Warm-up
    rounds, discarded, are of at most ``WARMUP_ROUND_CALLS`` calls.
    """

    def handler(signum: int, frame: object) -> None:
        pass

    install = signal.signal
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
                return "signal.%s does not exist on this platform" % name
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


class _RoundNotifier:
    """A helper thread that performs the notify side of each wake for a main-thread waiter.

    Per wake: the main thread calls :meth:`announce` just before it blocks;
    the notifier sleeps ``settle_s``, takes ``t0``, plants the delay if any,
    calls ``notify()`` and then ``after_notify()`` (a watchdog, for waits that
    have no timeout of their own -- it runs even when ``notify()`` raised).
    The main thread takes ``t1`` when its wait returns, then calls
    :meth:`collect` for ``t0`` and ``after_notify``'s result.  ``t0`` is handed
    over after the notify, so nothing but ``notify()`` sits between ``t0`` and
    the wake.  ``block`` lists signals the notifier blocks in itself (and
    unblocks before it exits), so that a process-directed signal cannot
    land on it.  The notifier takes the notifier role of ``params``'
    placement before its first wake and reports the CPU it last ran on
    (:attr:`cpu_seen`) when it stops.
    """

    def __init__(
        self,
        params: MeasureParams,
        notify: Callable[[], object],
        *,
        after_notify: Optional[Callable[[], object]] = None,
        block: Iterable[int] = (),
        name: str = "wakelab-notifier",
    ) -> None:
        self._params = params
        self._notify = notify
        self._after_notify = after_notify
        self._block = list(block)
        self._started = threading.Event()
        self._go = threading.Event()
        self._done = threading.Event()
        self._stopping = False
        self._t0 = 0
        self._after_result: object = None
        self._error: Optional[BaseException] = None
        self.cpu_seen: Optional[int] = None
        # The waiter's own timeout (or the watchdog) always ends a wake.
        self.handshake_s = params.timeout_s + 5.0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the notifier; raises HarnessError if it cannot take its role."""
        self._thread.start()
        if not self._started.wait(self.handshake_s):
            raise HarnessError("notifier thread did not start")
        if self._error is not None:
            raise HarnessError("notifier thread failed: %s" % (self._error,))

    def announce(self) -> None:
        """Main thread: I am about to block; start the settle period."""
        self._done.clear()
        self._go.set()

    def collect(self) -> Tuple[int, object]:
        """Main thread, after its wait: ``(t0, after_notify result)`` of this wake."""
        if not self._done.wait(self.handshake_s):
            raise HarnessError("notifier thread did not finish its wake")
        if self._error is not None:
            raise HarnessError("notifier thread failed: %s" % (self._error,))
        return self._t0, self._after_result

    def stop(self) -> None:
        """Let the notifier finish the wake it is in, then end and join it."""
        self._stopping = True
        self._go.set()
        if self._thread.ident is not None:
            self._thread.join(self.handshake_s)

    def _run(self) -> None:
        params = self._params
        settle_s = params.settle_s
        notify = self._notify
        after_notify = self._after_notify
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, self._block) if self._block else None
        try:
            try:
                enter_role(params, NOTIFIER)
            except OSError as exc:
                raise HarnessError("the notifier thread could not take the notifier's CPU: %s" % exc) from exc
            self._started.set()
            while True:
                self._go.wait()
                self._go.clear()
                if self._stopping:
                    self.cpu_seen = current_cpu()
                    return
                time.sleep(settle_s)
                t0 = now_ns()
                plant_delay(params, t0)
                try:
                    notify()
                finally:
                    after = after_notify() if after_notify is not None else None
                self._t0 = t0
                self._after_result = after
                self._done.set()
        except BaseException as exc:  # surfaced in the main thread by start() or collect()
            self._error = exc
            self._started.set()
            self._done.set()
        finally:
            if old_mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)


def _main_thread_takes_waiter_role(params: MeasureParams) -> None:
    """Move the main thread, this arm's waiter, to the waiter's CPU (caller restores its mask)."""
    try:
        enter_role(params, WAITER)
    except OSError as exc:
        raise HarnessError("the main thread could not take the waiter's CPU: %s" % exc) from exc


def _ignore_stray(counter: List[int]) -> Callable[[int, object], None]:
    """A SIGUSR1 handler for arms that block SIGUSR1: it only counts strays.

    Installed so that a SIGUSR1 that reaches some thread which does not
    block it (a thread the arm did not start) runs this rather than the
    default action, which would end the process.
    """

    def handler(signum: int, frame: object) -> None:
        counter[0] += 1

    return handler


def measure_sigwait_thread_to_main(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a thread's ``pthread_kill(main, SIGUSR1)`` ending the main thread's ``sigtimedwait``.

    The main thread blocks SIGUSR1 and parks in ``signal.sigtimedwait``
    (``sigwait`` has no timeout; this is it, bounded by ``timeout_s``); the
    wait consumes the signal, so no handler runs -- the handler-free,
    blocked counterpart of ``sigusr1-self``.  A helper thread is the notifier.
    """
    collector = LatencyCollector(params)
    signum = signal.SIGUSR1
    strays = [0]
    late = 0
    early = 0
    sigtimedwait = signal.sigtimedwait
    wait_set = [signum]
    timeout_s = params.timeout_s
    waiter_cpu_seen: Optional[int] = None
    with preserved_signal_state([signum]), preserved_affinity():
        _main_thread_takes_waiter_role(params)
        signal.signal(signum, _ignore_stray(strays))
        # Blocked before the notifier starts, so the notifier inherits the block.
        signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
        notifier = _RoundNotifier(
            params,
            functools.partial(signal.pthread_kill, threading.get_ident(), signum),
            name="wakelab-sigwait-notifier",
        )
        pending_at_start = _drain_pending(signum)
        try:
            notifier.start()
            for _ in range(params.total_wakes):
                notifier.announce()
                got = sigtimedwait(wait_set, timeout_s)
                t1 = now_ns()
                t0, _ = notifier.collect()
                if got is not None and t1 >= t0:
                    collector.add(t1 - t0)
                    continue
                # Timed out (the notify came after the wait gave up), or woken by
                # a SIGUSR1 that was not ours: either way ours is pending now.
                collector.add(None)
                if got is not None:
                    early += 1
                late += _drain_pending(signum)
            waiter_cpu_seen = current_cpu()
        finally:
            notifier.stop()
            late += _drain_pending(signum)
    return collector.result(
        settle_us=params.settle_us,
        signal_route="thread-directed: signal.pthread_kill to the main thread",
        pending_at_start=pending_at_start,
        late_signals_drained=late,
        early_wakes=early,
        stray_handler_runs=strays[0],
        notifier_cpu_seen=notifier.cpu_seen,
        waiter_cpu_seen=waiter_cpu_seen,
    )


def measure_pause_handler(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a thread's ``pthread_kill(main, SIGUSR1)`` to the Python handler's first statement, the main thread parked in ``signal.pause()``.

    The handler runs inside ``signal.pause()`` (CPython checks for signals
    before ``pause`` returns), so the sample is the handler time and the
    return from ``pause`` is the component ``pause_return``; ``handler`` is
    recorded too.  ``pause`` has no timeout: the notifier is also a watchdog.
    If ``pause`` has not returned ``timeout_s`` after the notify -- the
    signal arrived before the main thread was inside ``pause``, the classic
    pause race -- it re-sends SIGUSR1 (process-directed this time, so that it
    still works if ``pthread_kill`` failed) until ``pause`` returns, and the
    wake counts as lost.
    """
    collector = LatencyCollector(params)
    signum = signal.SIGUSR1
    handled: List[int] = []

    def handler(signum: int, frame: object) -> None:
        t = now_ns()
        handled.append(t)

    pid = os.getpid()
    # Set by the main thread once pause() has returned (and on the way out,
    # whatever happened, which also ends a rescue in progress).
    woken = threading.Event()
    rescue_every_s = min(params.timeout_s, 0.05)

    def watchdog() -> bool:
        """Notifier side, after the notify: True if the wake had to be re-sent."""
        if woken.wait(params.timeout_s):
            return False
        while not woken.is_set():
            os.kill(pid, signum)
            woken.wait(rescue_every_s)
        return True

    rescued = 0
    out_of_order = 0
    waiter_cpu_seen: Optional[int] = None
    with preserved_signal_state([signum]), preserved_affinity():
        _main_thread_takes_waiter_role(params)
        signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        pause = signal.pause
        notifier = _RoundNotifier(
            params,
            functools.partial(signal.pthread_kill, threading.get_ident(), signum),
            after_notify=watchdog,
            # The rescue is process-directed: keep it off the notifier.
            block=[signum],
            name="wakelab-pause-notifier",
        )
        try:
            notifier.start()
            for _ in range(params.total_wakes):
                del handled[:]
                woken.clear()
                notifier.announce()
                pause()
                t_return = now_ns()
                woken.set()
                t0, was_rescued = notifier.collect()
                t_handler = next((t for t in handled if t >= t0), None)
                if was_rescued:
                    rescued += 1
                    collector.add(None)
                elif t_handler is None or t_return < t_handler:
                    # pause() returned for some other signal before ours arrived.
                    out_of_order += 1
                    collector.add(None)
                else:
                    collector.add(
                        t_handler - t0, handler=t_handler - t0, pause_return=t_return - t0
                    )
            waiter_cpu_seen = current_cpu()
        finally:
            woken.set()
            notifier.stop()
            _run_queued_handlers()
    return collector.result(
        settle_us=params.settle_us,
        signal_route="thread-directed: signal.pthread_kill to the main thread",
        watchdog_rescues=rescued,
        foreign_wakes=out_of_order,
        notifier_cpu_seen=notifier.cpu_seen,
        waiter_cpu_seen=waiter_cpu_seen,
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
    collector = LatencyCollector(params)
    signum = signal.SIGUSR1
    signal_byte = int(signum)
    handled: List[int] = []

    def handler(signum: int, frame: object) -> None:
        t = now_ns()
        handled.append(t)

    select_fn = select.select
    timeout_s = params.timeout_s
    missed = 0
    with contextlib.ExitStack() as cleanup:
        # Exit order (reverse of entry): stop the notifier and run queued
        # handlers, restore the wakeup fd, close the pipe, restore handler/mask.
        cleanup.enter_context(preserved_signal_state([signum]))
        cleanup.enter_context(preserved_affinity())
        _main_thread_takes_waiter_role(params)
        rfd, wfd = os.pipe()
        cleanup.callback(os.close, rfd)
        cleanup.callback(os.close, wfd)
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)  # set_wakeup_fd insists on it
        rlist = [rfd]
        signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        old_wakeup_fd = signal.set_wakeup_fd(wfd)
        cleanup.callback(signal.set_wakeup_fd, old_wakeup_fd)
        notifier = _RoundNotifier(
            params,
            functools.partial(os.kill, os.getpid(), signum),
            block=[signum],
            name="wakelab-wakeup-fd-notifier",
        )
        cleanup.callback(_run_queued_handlers)
        cleanup.callback(notifier.stop)
        notifier.start()
        for _ in range(params.total_wakes):
            del handled[:]
            notifier.announce()
            readable, _, _ = select_fn(rlist, [], [], timeout_s)
            t1 = now_ns()
            data = _read_available(rfd) if readable else b""
            t0, _ = notifier.collect()
            t_handler = next((t for t in handled if t >= t0), None)
            if signal_byte in data and t1 >= t0 and t_handler is not None:
                collector.add(t1 - t0, delivery=t1 - t0, handler=t_handler - t0)
                continue
            # Timed out, or woken by another signal's byte: ours came (or comes)
            # later; its byte is in the pipe now, since collect() returned.
            collector.add(None)
            missed += 1
            _read_available(rfd)
        waiter_cpu_seen = current_cpu()
    return collector.result(
        settle_us=params.settle_us,
        signal_route="process-directed: os.kill(os.getpid()) from a thread that blocks SIGUSR1",
        wakeup_fd="non-blocking os.pipe()",
        lost_or_foreign=missed,
        notifier_cpu_seen=notifier.cpu_seen,
        waiter_cpu_seen=waiter_cpu_seen,
    )


def measure_pthread_kill_sigwait(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of the main thread's ``pthread_kill(worker, SIGUSR1)`` ending a worker's ``sigtimedwait``.

    The worker blocks SIGUSR1 in itself and parks in ``signal.sigtimedwait``
    (bounded by ``timeout_s``); the main thread blocks SIGUSR1 too (and a
    no-op handler is installed), so a process-directed SIGUSR1 from elsewhere
    can neither kill the process nor run a handler mid-measurement.
    ``pthread_kill`` is thread-directed: only the worker can take it.
    """
    collector = LatencyCollector(params)
    signum = signal.SIGUSR1
    strays = [0]
    started = threading.Event()
    go = threading.Event()
    ready = threading.Event()
    done = threading.Event()
    box = {"t1": None, "stop": False, "error": None, "drain": False, "late": 0, "cpu": None}  # type: dict

    def worker() -> None:
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
        sigtimedwait = signal.sigtimedwait
        wait_set = [signum]
        timeout_s = params.timeout_s
        try:
            try:
                enter_role(params, WAITER)
            except OSError as exc:
                raise HarnessError("the worker thread could not take the waiter's CPU: %s" % exc) from exc
            started.set()
            while True:
                go.wait()
                go.clear()
                if box["stop"]:
                    box["cpu"] = current_cpu()
                    return
                if box["drain"]:
                    # The last wake came after this thread gave up: it is pending.
                    box["late"] += _drain_pending(signum)
                    box["drain"] = False
                ready.set()
                got = sigtimedwait(wait_set, timeout_s)
                t1 = now_ns()
                box["t1"] = t1 if got is not None else None
                done.set()
        except BaseException as exc:  # surfaced by the main thread below
            box["error"] = exc
            started.set()
            ready.set()
            done.set()
        finally:
            box["late"] += _drain_pending(signum)
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)

    handshake_s = params.timeout_s + 5.0
    notifier_cpu_seen: Optional[int] = None
    with preserved_signal_state([signum]):
        signal.signal(signum, _ignore_stray(strays))
        signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
        thread = threading.Thread(target=worker, name="wakelab-sigwait-worker", daemon=True)
        try:
            thread.start()
            if not started.wait(handshake_s) or box["error"] is not None:
                raise HarnessError("worker thread did not start: %s" % (box["error"],))
            assert thread.ident is not None
            kill_worker = functools.partial(signal.pthread_kill, thread.ident, signum)
            for _ in range(params.total_wakes):
                ready.clear()
                done.clear()
                box["t1"] = None
                go.set()
                if not ready.wait(handshake_s) or box["error"] is not None:
                    raise HarnessError("worker thread did not announce itself: %s" % (box["error"],))
                time.sleep(params.settle_s)
                t0 = now_ns()
                plant_delay(params, t0)
                kill_worker()
                if not done.wait(handshake_s):
                    raise HarnessError("worker thread did not return from sigtimedwait")
                if box["error"] is not None:
                    raise HarnessError("worker failed: %s" % (box["error"],))
                t1: Optional[int] = box["t1"]
                if t1 is not None and t1 >= t0:
                    collector.add(t1 - t0)
                else:
                    collector.add(None)
                    box["drain"] = True
            notifier_cpu_seen = current_cpu()
        finally:
            box["stop"] = True
            go.set()
            if thread.ident is not None:
                thread.join(handshake_s)
            box["late"] += _drain_pending(signum)
    return collector.result(
        settle_us=params.settle_us,
        signal_route="thread-directed: signal.pthread_kill to the worker",
        late_signals_drained=box["late"],
        stray_handler_runs=strays[0],
        notifier_cpu_seen=notifier_cpu_seen,
        waiter_cpu_seen=box["cpu"],
    )


ARMS: List[Arm] = [
    Arm(
        name="sigusr1-self",
        family="signals",
        kind=LATENCY,
        mechanism="os.kill(os.getpid(), SIGUSR1); the Python handler runs in the main thread, which busy-waits on its flag",
        waiter=SPINNING,
        scope=SELF,
        t0="main thread: perf_counter_ns() immediately before os.kill(os.getpid(), SIGUSR1)",
        t1="main thread: perf_counter_ns() as the first statement of the Python SIGUSR1 handler",
        measure=measure_sigusr1_self,
        requires=requires_main_thread_sigusr1,
        needs_main_thread=True,
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
    ),
    Arm(
        name="sigwait-thread-to-main",
        family="signals",
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
    ),
    Arm(
        name="pause-handler",
        family="signals",
        kind=LATENCY,
        mechanism=(
            "signal.pthread_kill(main, SIGUSR1) from a notifier thread interrupts the main thread's "
            "signal.pause(); the notifier re-sends if pause() has not returned timeout_s later "
            "(counted lost); blocked counterpart of sigusr1-self"
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
    ),
    Arm(
        name="wakeup-fd-select",
        family="signals",
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
    ),
    Arm(
        name="pthread-kill-sigwait",
        family="signals",
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
    ),
]
