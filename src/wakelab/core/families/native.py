"""Native-floor arms: the Python arms' experiments, done in C.

Each arm runs one experiment of ``wakelab_floor.c`` through the floor driver
(:mod:`wakelab.core.drivers.floor`, ``driver="floor"``) as a child process
and reads back its raw nanosecond samples.  The C program uses
``clock_gettime(CLOCK_MONOTONIC)`` -- the clock behind
``time.perf_counter_ns()`` on Linux -- and the same definitions of ``t0``,
``t1``, settle period, planted delays, timeout, lost and stale wake as the
Python arm it mirrors, so the two can be read side by side.  Placement is
honoured by the C program itself: it pins its notifier to
``params.notifier_cpu`` and its waiter (a thread, or the forked child of the
cross-process experiments) to ``params.waiter_cpu`` (the single-threaded
self-signal and sigaction experiments run on the notifier's CPU), and reports
where each side last ran as ``info["notifier_cpu_seen"]`` /
``info["waiter_cpu_seen"]``.

"vs C" is declared by each Python arm, beside its other facts: its C floor
(``Arm.native``), whether the two are *matched* (same scope, same waiter
state, same ``t1`` shape -- only then is the ratio the interpreter's share)
or only the *nearest* C experiment there is (``Arm.native_match``), and,
for both sides, the wait ``t1`` follows and where it is taken
(``Arm.t1_shape``), so that ``tests/test_native_pairs.py`` can check every
"matched" claim from data.  ``FLOORS`` and ``T1_SHAPES`` here are the
tables derived from those declarations.

The binary is compiled on first use; without a C compiler every arm here is
unavailable (``requires`` says why) and is skipped.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from wakelab.core import realtime
from wakelab.core.drivers import floor
from wakelab.core.model import (  # noqa: F401 (MATCHED ... TASK, T1Shape: the "vs C" words, also read from here)
    AFTER_READ,
    AFTER_WAIT,
    BLOCKED,
    CALLBACK,
    CROSS_PROCESS,
    CROSS_THREAD,
    GROUP_NATIVE,
    HANDLER,
    LATENCY,
    MATCHED,
    NEAREST,
    NO_WAITER,
    RATE,
    ROLE_REALTIME,
    SELF,
    SPINNING,
    TASK,
    Arm,
    Family,
    MeasureParams,
    RawLatency,
    RawRate,
    Role,
    T1Shape,
)

FAMILY = Family(id="native", title="Native floor (C)", color="#555555", order=90, group=GROUP_NATIVE)


def requires_native_floor() -> Optional[str]:
    """None when the C floor is built (compiling it on first call), else why not."""
    return floor.unavailable_reason()


def measure_native_condvar(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``pthread_cond_signal`` waking a thread in ``pthread_cond_timedwait``."""
    return floor.measure_latency("native-condvar", params)


def requires_native_floor_fifo() -> Optional[str]:
    """None when the C floor is built and its waiter may run under ``SCHED_FIFO`` 80 here."""
    return requires_native_floor() or realtime.requires_realtime()


def measure_native_condvar_fifo(params: MeasureParams) -> RawLatency:
    """native-condvar with its waiter thread under ``SCHED_FIFO`` priority 80 (it sets its own)."""
    with realtime.waiter_scheduling(realtime.FIFO_80):
        return floor.measure_latency("native-condvar", params)


def measure_native_pipe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a one-byte pipe ``write`` waking a thread blocked in ``poll`` (t1 before the read)."""
    return floor.measure_latency("native-pipe", params)


def measure_native_eventfd(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of an eventfd ``write`` waking a thread blocked in ``poll`` (t1 before the read)."""
    return floor.measure_latency("native-eventfd", params)


def measure_native_socketpair(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a one-byte ``send`` waking a thread in ``poll`` + ``recv`` (t1 after the recv)."""
    return floor.measure_latency("native-socketpair", params)


def measure_native_selector_pipe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a one-byte pipe ``write`` waking a thread in ``epoll_wait`` (t1 before the read)."""
    return floor.measure_latency("native-selector-pipe", params)


def measure_native_self_signal(params: MeasureParams) -> RawLatency:
    """Self-signal latency (ns): ``kill(getpid(), SIGUSR1)`` to the C handler's first statement."""
    return floor.measure_latency("native-self-signal", params)


def measure_native_sigwait(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``pthread_kill(SIGUSR1)`` waking a thread in ``sigtimedwait``."""
    return floor.measure_latency("native-sigwait", params)


def measure_native_pause_handler(params: MeasureParams) -> RawLatency:
    """Latency (ns) of a thread's ``pthread_kill(main, SIGUSR1)`` to the C handler, the main thread in ``pause``."""
    return floor.measure_latency("native-pause-handler", params)


def measure_native_wakeup_fd_select(params: MeasureParams) -> RawLatency:
    """Latency (ns) of ``kill(getpid(), SIGUSR1)`` from a thread to the main thread's ``select`` on a wakeup pipe."""
    return floor.measure_latency("native-wakeup-fd-select", params)


def measure_native_pipe_process(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a one-byte pipe ``write`` waking a forked child in ``poll`` (t1 before the read)."""
    return floor.measure_latency("native-pipe-process", params)


def measure_native_eventfd_fork(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of an eventfd ``write`` waking a forked child in ``poll`` (t1 before the read)."""
    return floor.measure_latency("native-eventfd-fork", params)


def measure_native_kill_sigwait_child(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``kill(child, SIGUSR1)`` waking a forked child in ``sigtimedwait``."""
    return floor.measure_latency("native-kill-sigwait-child", params)


def measure_native_sigaction_install(params: MeasureParams) -> RawRate:
    """Rate of ``sigaction(SIGUSR1, ...)`` installs, rounds of ``install_n`` calls, with baseline."""
    return floor.measure_rate("native-sigaction-install", params)


# -- "vs C" -------------------------------------------------------------------
#
# Each Python arm declares its C floor itself (``Arm.native``, ``Arm.native_match``: MATCHED or
# NEAREST) and its t1 shape (``Arm.t1_shape``), as each C arm here declares its own; the registry
# derives the tables from the declarations (:func:`wakelab.core.registry.floors`,
# :func:`~wakelab.core.registry.t1_shapes`), and ``tests/test_native_pairs.py`` checks every pairing.


def __getattr__(name: str) -> Any:
    """``FLOORS`` and ``T1_SHAPES``: the "vs C" tables, derived from every arm's declaration."""
    from wakelab.core import registry

    if name == "FLOORS":
        return registry.floors()
    if name == "T1_SHAPES":
        return registry.t1_shapes()
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


# -- the arms -------------------------------------------------------------------

_CLOCK = "clock_gettime(CLOCK_MONOTONIC)"


def _latency_arm(
    name: str,
    *,
    mechanism: str,
    waiter: str,
    scope: str,
    t0: str,
    t1: str,
    measure: Callable[[MeasureParams], RawLatency],
    t1_shape: T1Shape,
    requires: Callable[[], Optional[str]] = requires_native_floor,
    roles: Tuple[Role, ...] = (),
) -> Arm:
    """A C latency arm: run by the floor driver, available when the binary builds."""
    return Arm(
        name=name,
        family=FAMILY.id,
        kind=LATENCY,
        mechanism=mechanism,
        waiter=waiter,
        scope=scope,
        t0=t0,
        t1=t1,
        measure=measure,
        requires=requires,
        driver="floor",
        t1_shape=t1_shape,
        roles=roles,
    )


ARMS: List[Arm] = [
    _latency_arm(
        "native-condvar",
        mechanism="C: flag + pthread_cond_signal() under the mutex wakes a thread blocked in pthread_cond_timedwait() (futex)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before pthread_mutex_lock(); flag = 1; pthread_cond_signal()" % _CLOCK,
        t1="waiter thread: %s as the first statement after pthread_cond_timedwait() returns" % _CLOCK,
        measure=measure_native_condvar,
        t1_shape=T1Shape("futex", AFTER_WAIT),
    ),
    _latency_arm(
        "native-condvar-fifo",
        mechanism=("C: flag + pthread_cond_signal() under the mutex wakes a thread blocked in pthread_cond_timedwait() "
                   "(futex); the waiter thread runs under SCHED_FIFO priority 80, set by itself, the notifier as it is"),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before pthread_mutex_lock(); flag = 1; pthread_cond_signal()" % _CLOCK,
        t1="waiter thread (SCHED_FIFO 80): %s as the first statement after pthread_cond_timedwait() returns" % _CLOCK,
        measure=measure_native_condvar_fifo,
        requires=requires_native_floor_fifo,
        t1_shape=T1Shape("futex", AFTER_WAIT),
        roles=(Role(ROLE_REALTIME, against="native-condvar"),),
    ),
    _latency_arm(
        "native-pipe",
        mechanism="C: write() of one byte to a pipe wakes a thread blocked in poll() on its non-blocking read end, which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="waiter thread: %s as the first statement after poll() returns readable (before read(); a poll whose read finds nothing is not the wake)" % _CLOCK,
        measure=measure_native_pipe,
        t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    _latency_arm(
        "native-eventfd",
        mechanism="C: write() of 1 to an eventfd wakes a thread blocked in poll() on it, which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(eventfd, (uint64_t)1)" % _CLOCK,
        t1="waiter thread: %s as the first statement after poll() returns readable (before read(); a poll whose read finds nothing is not the wake)" % _CLOCK,
        measure=measure_native_eventfd,
        t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    _latency_arm(
        "native-socketpair",
        mechanism="C: send() of one byte on an AF_UNIX stream socketpair wakes a thread that does what CPython's recv() with a timeout does: poll() on the non-blocking socket, then recv()",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before send(sock, 1 byte, 0)" % _CLOCK,
        t1="waiter thread: %s as the first statement after recv(sock, 1) returns the byte (after the poll and the read)" % _CLOCK,
        measure=measure_native_socketpair,
        t1_shape=T1Shape("poll", AFTER_READ),
    ),
    _latency_arm(
        "native-selector-pipe",
        mechanism="C: write() of one byte to a pipe wakes a thread blocked in epoll_wait() on its read end (the selector of selectors.DefaultSelector on Linux), which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="waiter thread: %s as the first statement after epoll_wait() returns (before read(); a wait whose read finds nothing is not the wake)" % _CLOCK,
        measure=measure_native_selector_pipe,
        t1_shape=T1Shape("epoll", AFTER_WAIT),
    ),
    _latency_arm(
        "native-self-signal",
        mechanism="C: kill(getpid(), SIGUSR1) in a single-threaded process; the handler stamps the time and sets a flag the main thread busy-waits on",
        waiter=SPINNING,
        scope=SELF,
        t0="main thread: %s immediately before kill(getpid(), SIGUSR1)" % _CLOCK,
        t1="main thread: %s as the first statement of the C SIGUSR1 handler" % _CLOCK,
        measure=measure_native_self_signal,
        t1_shape=T1Shape("spin", HANDLER),
    ),
    _latency_arm(
        "native-sigwait",
        mechanism="C: pthread_kill(waiter, SIGUSR1) from the main thread wakes a thread blocked in sigtimedwait() with SIGUSR1 blocked in every thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: %s immediately before pthread_kill(waiter thread, SIGUSR1)" % _CLOCK,
        t1="waiter thread: %s as the first statement after sigtimedwait() returns" % _CLOCK,
        measure=measure_native_sigwait,
        t1_shape=T1Shape("sigtimedwait", AFTER_WAIT),
    ),
    _latency_arm(
        "native-pause-handler",
        mechanism=(
            "C: pthread_kill(main, SIGUSR1) from a notifier thread (SIGUSR1 blocked) interrupts the main thread's pause(), "
            "running a C handler installed with SA_ONSTACK; the notifier re-sends if pause() has not returned timeout_ms "
            "later (counted lost)"
        ),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before pthread_kill(main thread, SIGUSR1)" % _CLOCK,
        t1="main thread: %s as the first statement of the C SIGUSR1 handler, run inside pause()" % _CLOCK,
        measure=measure_native_pause_handler,
        t1_shape=T1Shape("pause", HANDLER),
    ),
    _latency_arm(
        "native-wakeup-fd-select",
        mechanism=(
            "C: kill(getpid(), SIGUSR1) from a notifier thread that blocks SIGUSR1; the C handler writes the signal number "
            "to a non-blocking pipe (as CPython's does to the set_wakeup_fd pipe) the main thread waits on in select(), "
            "which fails with EINTR and is retried, as CPython retries it"
        ),
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before kill(getpid(), SIGUSR1)" % _CLOCK,
        t1="main thread: %s as the first statement after select() returns with the wakeup pipe readable (before read())" % _CLOCK,
        measure=measure_native_wakeup_fd_select,
        t1_shape=T1Shape("select", AFTER_WAIT),
    ),
    _latency_arm(
        "native-pipe-process",
        mechanism="C: write() of one byte to a pipe in the parent wakes a forked child blocked in poll() on the read end (the child reads the byte after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="child: %s as the first statement after poll() on the pipe returns (before read())" % _CLOCK,
        measure=measure_native_pipe_process,
        t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    _latency_arm(
        "native-eventfd-fork",
        mechanism="C: an eventfd shared with a child across fork(): write() of 1 in the parent wakes the child blocked in poll() on it (the child reads it after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: %s immediately before write(eventfd, (uint64_t)1)" % _CLOCK,
        t1="child: %s as the first statement after poll() on the eventfd returns (before read())" % _CLOCK,
        measure=measure_native_eventfd_fork,
        t1_shape=T1Shape("poll", AFTER_WAIT),
    ),
    _latency_arm(
        "native-kill-sigwait-child",
        mechanism="C: kill(child_pid, SIGUSR1) from the parent wakes a forked child blocked in sigtimedwait() with SIGUSR1 blocked",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: %s immediately before kill(child_pid, SIGUSR1)" % _CLOCK,
        t1="child: %s as the first statement after sigtimedwait() returns" % _CLOCK,
        measure=measure_native_kill_sigwait_child,
        t1_shape=T1Shape("sigtimedwait", AFTER_WAIT),
    ),
    Arm(
        name="native-sigaction-install",
        family=FAMILY.id,
        kind=RATE,
        mechanism="C: sigaction(SIGUSR1, handler, SA_ONSTACK) in a tight loop; the same loop with an empty asm-volatile body as baseline",
        waiter=NO_WAITER,
        scope=SELF,
        t0="%s before a round of install_n sigaction() calls" % _CLOCK,
        t1="%s after the round; ops/s = install_n / (t1 - t0)" % _CLOCK,
        measure=measure_native_sigaction_install,
        requires=requires_native_floor,
    ),
]
