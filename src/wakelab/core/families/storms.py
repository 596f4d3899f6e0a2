"""Signal storms: many senders, one receiver; how much of the storm reaches the receiving code.

The original lab measured one signal at a time and said so ("not multiprocess
kill storms").  Here ``STORM_SENDERS`` processes (or threads) signal one
receiver at once, with ``SIGUSR1`` -- a standard signal, one pending bit, so
sends merge while it is pending -- or ``SIGRTMIN`` -- a real-time signal,
queued one entry a send -- and each arm counts what was sent and what the
receiving code saw, side by side for five receivers:

* ``handler`` -- a Python handler (``signal.signal``); CPython's C handler
  only sets a flag, and the main thread runs the Python handler at its next
  check between bytecodes, once however many deliveries set the flag;
* ``sigwait`` -- a thread loops in ``signal.sigtimedwait`` with the signal
  blocked everywhere: each return takes one signal off the kernel's queue;
* ``wakeup-fd`` -- ``signal.set_wakeup_fd``: CPython's C handler writes one
  byte per delivery it sees, and a thread reads them (the path asyncio's
  ``add_signal_handler`` takes);
* ``c-handler`` and ``c-sigwait`` -- the C floor: a ``sigaction`` handler
  that counts, and ``sigtimedwait`` in a thread, in a C process of its own.

The loop -- senders, probes, the receiver's work loop, the drain, the counts
and ``t0`` -- is the storm driver's (:mod:`wakelab.core.drivers.storm`, whose
docstring defines *sent*, *delivered*, *flushed* and the probes' latency).
This module holds the receivers: each sets up its signal state, gives the
driver its counts, and on the way out blocks the signal, consumes whatever
is still pending (``flushed``), runs any Python handler already queued, and
restores the handler, the mask and the wakeup fd
(:func:`~wakelab.core.sigstate.preserved_signal_state`), so nothing of the
storm fires after the arm.  Receivers that block the signal install a
counting handler (``strays``) so that a delivery to a thread that does not
block it (a busy thread of ``--cpu-threads``) cannot end the process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import sys
import threading
from typing import Callable, Dict, Iterator, List, Optional

from wakelab.core.drivers import storm as storm_driver
from wakelab.core.drivers.storm import PROCESS, THREAD, Receiver, StormPlan
from wakelab.core.families import no_sigtimedwait_reason, this_python
from wakelab.core.model import (
    BLOCKED,
    CROSS_PROCESS,
    CROSS_THREAD,
    GROUP_STORMS,
    LATENCY,
    SPINNING,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    now_ns,
)
from wakelab.core.sigstate import preserved_signal_state

FAMILY = Family(id="storms", title="Signal storms: many senders, one receiver", color="#332288", order=80, group=GROUP_STORMS)
#: How many processes (or threads) send in each storm.
STORM_SENDERS = 4

SIGNALS = {"usr1": "SIGUSR1", "rt": "SIGRTMIN"}
#: A bound on the clean-up's consumption of still-pending signals (a real-time queue holds at most
#: RLIMIT_SIGPENDING of them).
_FLUSH_LIMIT = 10_000_000


def signal_number(short: str) -> Optional[int]:
    """``signal.SIGUSR1`` for ``"usr1"``, ``signal.SIGRTMIN`` for ``"rt"``; None where it does not exist."""
    value = getattr(signal, SIGNALS[short], None)
    return None if value is None else int(value)


def _flush(signum: int) -> int:
    """Consume ``signum`` pending for this thread or the process (the caller blocks it); the count."""
    flushed = 0
    timed = getattr(signal, "sigtimedwait", None)
    while flushed < _FLUSH_LIMIT and signum in signal.sigpending():
        if timed is not None:
            if timed([signum], 0) is None:
                break
        else:
            signal.sigwait([signum])  # pending: returns at once
        flushed += 1
    return flushed


def _run_queued_handlers() -> None:
    """Run now any Python handler whose C handler already fired (``pthread_sigmask`` checks for
    signals before it returns; an empty set changes nothing)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [])


def _noop() -> None:
    pass


# -- the Python receivers ------------------------------------------------------------------------


@contextlib.contextmanager
def handler_receiver(signum: int, cap: int) -> Iterator[Receiver]:
    """A Python handler in the main thread: one stamp (its first statement) and one count per call."""
    slots = [0] * cap
    count = [0]
    flushed = [0]
    clock = now_ns

    def handler(sig: int, frame: object) -> None:
        t1 = clock()
        i = count[0]
        if i < cap:
            slots[i] = t1
        count[0] = i + 1

    with preserved_signal_state([signum]):
        signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        try:
            yield Receiver(
                delivered=lambda: count[0],
                stamps=lambda: slots[: min(count[0], cap)],
                stop=_noop,
                info=lambda: {"flushed": flushed[0]},
            )
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
            flushed[0] = _flush(signum)
            _run_queued_handlers()  # with our handler still installed


@contextlib.contextmanager
def _blocked_with_stray_counter(signum: int, strays: List[int], flushed: List[int]) -> Iterator[None]:
    """The signal blocked in this thread (threads started inside inherit it), a handler counting
    strays; on the way out what is still pending is flushed and counted, then all is restored."""

    def stray(sig: int, frame: object) -> None:
        strays[0] += 1

    with preserved_signal_state([signum]):
        signal.signal(signum, stray)
        signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
            flushed[0] = _flush(signum)
            _run_queued_handlers()


@contextlib.contextmanager
def sigwait_receiver(signum: int, cap: int) -> Iterator[Receiver]:
    """A thread looping in ``signal.sigtimedwait`` (10 ms at a time), the signal blocked in every
    thread the arm starts: one stamp (the first statement after it returns) and one count per return."""
    stamps: List[int] = []
    count = [0]
    strays = [0]
    flushed = [0]
    stopping = threading.Event()
    failure: List[BaseException] = []
    with _blocked_with_stray_counter(signum, strays, flushed):

        def loop() -> None:
            wait = signal.sigtimedwait
            clock = now_ns
            signals = [signum]
            try:
                while not stopping.is_set():
                    got = wait(signals, 0.01)
                    t1 = clock()
                    if got is not None:
                        stamps.append(t1)
                        count[0] += 1
            except BaseException as exc:  # surfaced when the receiver stops
                failure.append(exc)

        thread = threading.Thread(target=loop, name="wakelab-storm-sigwait", daemon=True)
        thread.start()

        def stop() -> None:
            stopping.set()
            thread.join(5.0)
            if failure:
                raise failure[0]

        try:
            yield Receiver(
                delivered=lambda: count[0],
                stamps=lambda: stamps,
                stop=stop,
                info=lambda: {"flushed": flushed[0], "strays": strays[0]},
                main_blocks=True,
            )
        finally:
            stopping.set()
            thread.join(5.0)


@contextlib.contextmanager
def wakeup_fd_receiver(signum: int, cap: int) -> Iterator[Receiver]:
    """``signal.set_wakeup_fd`` on a pipe a thread reads: CPython's C handler writes a byte per
    delivery; one count per byte read, one stamp (the first statement after ``os.read`` returns)
    per read.  A Python handler is installed too (the wakeup fd is written only for a signal with
    one); its calls are ``handler_runs``."""
    stamps: List[int] = []
    count = [0]
    runs = [0]
    flushed = [0]
    unread = [0]
    stopping = threading.Event()
    failure: List[BaseException] = []
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)

        def handler(sig: int, frame: object) -> None:
            runs[0] += 1

        with preserved_signal_state([signum]):
            signal.signal(signum, handler)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
            signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)

            def loop() -> None:
                signal.pthread_sigmask(signal.SIG_BLOCK, [signum])  # the main thread takes the signal
                clock = now_ns
                try:
                    while not stopping.is_set():
                        ready, _, _ = select.select([read_fd], [], [], 0.01)
                        if not ready:
                            continue
                        try:
                            data = os.read(read_fd, 1 << 16)
                        except BlockingIOError:
                            continue
                        t1 = clock()
                        stamps.append(t1)
                        count[0] += len(data)
                except BaseException as exc:
                    failure.append(exc)

            thread = threading.Thread(target=loop, name="wakelab-storm-wakeup-fd", daemon=True)
            thread.start()

            def stop() -> None:
                stopping.set()
                thread.join(5.0)
                if failure:
                    raise failure[0]

            try:
                yield Receiver(
                    delivered=lambda: count[0],
                    stamps=lambda: stamps,
                    stop=stop,
                    info=lambda: {"flushed": flushed[0], "handler_runs": runs[0], "unread_bytes": unread[0]},
                )
            finally:
                stopping.set()
                thread.join(5.0)
                signal.pthread_sigmask(signal.SIG_BLOCK, [signum])
                flushed[0] = _flush(signum)
                _run_queued_handlers()
        # The wakeup fd is restored (preserved_signal_state): what is left in the pipe was never read.
        while True:
            try:
                left = os.read(read_fd, 1 << 16)
            except BlockingIOError:
                break
            if not left:
                break
            unread[0] += len(left)
    finally:
        os.close(read_fd)
        os.close(write_fd)


RECEIVERS: Dict[str, Callable[[int, int], "contextlib.AbstractContextManager[Receiver]"]] = {
    "handler": handler_receiver,
    "sigwait": sigwait_receiver,
    "wakeup-fd": wakeup_fd_receiver,
}
C_RECEIVERS = {"c-handler": storm_driver.C_HANDLER, "c-sigwait": storm_driver.C_SIGWAIT}


# -- requirements ------------------------------------------------------------------------------


def _requires(short: str, receiver: str) -> Callable[[], Optional[str]]:
    def requires() -> Optional[str]:
        if not sys.platform.startswith("linux"):
            return "signal storms are measured on Linux only (this is %s)" % sys.platform
        if signal_number(short) is None:
            return "signal.%s does not exist in %s" % (SIGNALS[short], this_python())
        for name in ("pthread_sigmask", "sigpending"):
            if not hasattr(signal, name):
                return "signal.%s does not exist in %s" % (name, this_python())
        if receiver in C_RECEIVERS:
            from wakelab.core.drivers import floor

            return floor.unavailable_reason()
        if threading.current_thread() is not threading.main_thread():
            return "Python signal handlers can only be installed from the main thread"
        if receiver == "sigwait" and not hasattr(signal, "sigtimedwait"):
            return no_sigtimedwait_reason()
        if receiver == "wakeup-fd" and not hasattr(signal, "set_wakeup_fd"):
            return "signal.set_wakeup_fd does not exist in %s" % this_python()
        return None

    return requires


# -- the arms ------------------------------------------------------------------------------------


def measure_storm(params: MeasureParams, short: str, receiver: str, sender_kind: str = PROCESS,
                  hold_s: float = 0.0, senders: int = STORM_SENDERS) -> RawLatency:
    """One storm of ``SIGNALS[short]`` from ``senders`` senders at ``receiver`` (see
    :mod:`wakelab.core.drivers.storm` for what is counted and timed; ``hold_s``: its planted hold)."""
    signum = signal_number(short)
    if signum is None:
        raise RuntimeError("no %s here" % SIGNALS[short])
    plan = StormPlan(signum=signum, senders=senders, sender_kind=sender_kind)
    if receiver in C_RECEIVERS:
        raw = storm_driver.measure_c(params, plan, C_RECEIVERS[receiver])
    else:
        raw = storm_driver.measure(params, plan, functools.partial(RECEIVERS[receiver], signum), hold_s=hold_s)
    raw.info["receiver"] = receiver
    return raw


_SENT = "sent: os.kill calls that returned without error (EAGAIN, a full real-time queue: refused)"
_FLUSH = "what is still pending when the receiver stops looking is flushed, not delivered"
_WORK = "lost work: the receiver main thread's work-loop rate against a storm-free pass"
_RECEIVER_TEXT = {
    "handler": ("a Python handler (signal.signal) in the receiver's main thread, which runs a work loop; "
                "delivered: handler calls"),
    "sigwait": ("a thread of the receiver loops in signal.sigtimedwait, the signal blocked in the threads "
                "the arm starts, while the main thread runs a work loop; delivered: sigtimedwait returns"),
    "wakeup-fd": ("signal.set_wakeup_fd on a pipe that a thread of the receiver reads (select, then os.read), "
                  "a Python handler installed, while the main thread runs a work loop; delivered: bytes read "
                  "(CPython's C handler writes one per delivery it sees)"),
    "c-handler": ("the C floor: a sigaction handler in a C process whose main thread runs a work loop; "
                  "delivered: handler runs"),
    "c-sigwait": ("the C floor: a thread of a C process loops in sigtimedwait, the signal blocked in every "
                  "thread, while the main thread runs a work loop; delivered: sigtimedwait returns"),
}
_T1_TEXT = {
    "handler": "receiver main thread: perf_counter_ns() as the first statement of the Python handler",
    "sigwait": "receiver thread: perf_counter_ns() as the first statement after signal.sigtimedwait returns with the signal",
    "wakeup-fd": "receiver thread: perf_counter_ns() as the first statement after os.read of the wakeup fd returns",
    "c-handler": "C receiver: clock_gettime(CLOCK_MONOTONIC) as the first statement of the sigaction handler",
    "c-sigwait": "C receiver thread: clock_gettime(CLOCK_MONOTONIC) as the first statement after sigtimedwait returns",
}


def _arm(short: str, receiver: str, sender_kind: str = PROCESS) -> Arm:
    name = "storm-%s-%s%s" % (short, receiver, "-threads" if sender_kind == THREAD else "")
    who = ("%d processes" % STORM_SENDERS if sender_kind == PROCESS
           else "%d threads of the receiving process" % STORM_SENDERS)
    mechanism = (
        "%s each os.kill(receiver, %s) as fast as they can (open loop: one every interval_us), %d sends a "
        "probe (open loop: %d); %s; %s; ratio delivered/sent; %s; %s"
        % (who, SIGNALS[short], storm_driver.SENDS_PER_PROBE, storm_driver.SENDS_PER_PROBE_OPEN,
           _RECEIVER_TEXT[receiver], _SENT, _FLUSH, _WORK)
    )
    return Arm(
        name=name,
        family=FAMILY.id,
        driver="storm",
        kind=LATENCY,
        mechanism=mechanism,
        # A receiver that runs its work loop and is interrupted (handler) is not parked: it is
        # the spinning kind; a thread parked in sigtimedwait or select is blocked.
        waiter=SPINNING if receiver in ("handler", "c-handler") else BLOCKED,
        scope=CROSS_PROCESS if sender_kind == PROCESS else CROSS_THREAD,
        t0=("sender 0: perf_counter_ns() immediately before a probe's os.kill (one of its sends in %d, in %d in open "
            "loop, where latency is taken from the send's scheduled instant)"
            % (storm_driver.SENDS_PER_PROBE, storm_driver.SENDS_PER_PROBE_OPEN)),
        t1="%s, of the first delivery at or after the probe's kill" % _T1_TEXT[receiver],
        measure=functools.partial(measure_storm, short=short, receiver=receiver, sender_kind=sender_kind),
        requires=_requires(short, receiver),
        needs_main_thread=receiver not in C_RECEIVERS,
        settles=False,
    )


ARMS: List[Arm] = [
    _arm(short, receiver)
    for receiver in ("handler", "sigwait", "wakeup-fd", "c-handler", "c-sigwait")
    for short in ("usr1", "rt")
] + [_arm(short, "handler", THREAD) for short in ("usr1", "rt")]
