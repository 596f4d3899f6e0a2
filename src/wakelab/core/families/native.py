"""Native-floor arms: the Python arms' experiments, done in C.

Each arm runs one experiment of ``wakelab_floor.c`` (see :mod:`wakelab.core.drivers.floor`)
as a child process and reads back its raw nanosecond samples.  The C program
uses ``clock_gettime(CLOCK_MONOTONIC)`` -- the clock behind
``time.perf_counter_ns()`` on Linux -- and the same definitions of ``t0``,
``t1``, settle period, planted delay, timeout and lost wake as the Python arm
it mirrors, so the two can be read side by side: the gap between them is what
the interpreter adds.  Placement is honoured by the C program itself: it
pins its notifier (main) thread to ``params.notifier_cpu`` and its waiter
thread to ``params.waiter_cpu`` (the single-threaded self-signal and
sigaction experiments run on the notifier's CPU), and reports where each
side last ran as ``info["notifier_cpu_seen"]`` / ``info["waiter_cpu_seen"]``.

The binary is compiled on first use; without a C compiler every arm here is
unavailable (``requires`` says why) and is skipped.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from wakelab.core.drivers import floor
from wakelab.core.model import (
    BLOCKED,
    CROSS_THREAD,
    LATENCY,
    NO_WAITER,
    RATE,
    SELF,
    SPINNING,
    Arm,
    MeasureParams,
    RawLatency,
    RawRate,
)

FAMILY = "native"


def requires_native_floor() -> Optional[str]:
    """None when the C floor is built (compiling it on first call), else why not."""
    return floor.unavailable_reason()


def measure_native_condvar(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``pthread_cond_signal`` waking a thread in ``pthread_cond_timedwait``."""
    return floor.measure_latency("native-condvar", params)


def measure_native_pipe(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of a one-byte pipe ``write`` waking a thread blocked in ``poll``."""
    return floor.measure_latency("native-pipe", params)


def measure_native_eventfd(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of an eventfd ``write`` waking a thread blocked in ``poll``."""
    return floor.measure_latency("native-eventfd", params)


def measure_native_self_signal(params: MeasureParams) -> RawLatency:
    """Self-signal latency (ns): ``kill(getpid(), SIGUSR1)`` to the C handler's first statement."""
    return floor.measure_latency("native-self-signal", params)


def measure_native_sigwait(params: MeasureParams) -> RawLatency:
    """Wake latency (ns) of ``pthread_kill(SIGUSR1)`` waking a thread in ``sigtimedwait``."""
    return floor.measure_latency("native-sigwait", params)


def measure_native_sigaction_install(params: MeasureParams) -> RawRate:
    """Rate of ``sigaction(SIGUSR1, ...)`` installs, rounds of ``install_n`` calls, with baseline."""
    return floor.measure_rate("native-sigaction-install", params)


_CLOCK = "clock_gettime(CLOCK_MONOTONIC)"

MATCHED = "matched"
NEAREST = "nearest"

#: The one table of "vs C": Python arm -> (its C floor, how the two relate).  "matched": the C
#: experiment has the same scope, waiter state and t1 as the Python arm, so the ratio of the two
#: is the interpreter's share.  "nearest": the closest C experiment there is, shown labelled as
#: such and never called the interpreter's share.  The registry copies each entry onto the
#: Python arm (``Arm.native``, ``Arm.native_match``).
FLOORS: Dict[str, Tuple[str, str]] = {
    "event": ("native-condvar", MATCHED),
    "condition": ("native-condvar", MATCHED),
    "lock-handoff": ("native-condvar", MATCHED),
    "semaphore": ("native-condvar", MATCHED),
    "queue": ("native-condvar", MATCHED),
    "simplequeue": ("native-condvar", MATCHED),
    "future": ("native-condvar", MATCHED),
    "sigusr1-self": ("native-self-signal", MATCHED),
    "signal-install": ("native-sigaction-install", MATCHED),
    "sigwait-thread-to-main": ("native-sigwait", MATCHED),
    "pause-handler": ("native-sigwait", NEAREST),
    "wakeup-fd-select": ("native-sigwait", NEAREST),
    "pthread-kill-sigwait": ("native-sigwait", MATCHED),
    "pipe": ("native-pipe", MATCHED),
    "eventfd": ("native-eventfd", MATCHED),
    "socketpair": ("native-pipe", NEAREST),
    "selector-pipe": ("native-pipe", NEAREST),
    "call-soon-threadsafe": ("native-pipe", NEAREST),
    "asyncio-event": ("native-pipe", NEAREST),
    "kill-sigwait-child": ("native-sigwait", NEAREST),
    "pipe-process": ("native-pipe", NEAREST),
    "eventfd-fork": ("native-eventfd", NEAREST),
}

ARMS: List[Arm] = [
    Arm(
        name="native-condvar",
        family=FAMILY,
        kind=LATENCY,
        mechanism="C: flag + pthread_cond_signal() under the mutex wakes a thread blocked in pthread_cond_timedwait() (futex)",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before pthread_mutex_lock(); flag = 1; pthread_cond_signal()" % _CLOCK,
        t1="waiter thread: %s as the first statement after pthread_cond_timedwait() returns" % _CLOCK,
        measure=measure_native_condvar,
        requires=requires_native_floor,
    ),
    Arm(
        name="native-pipe",
        family=FAMILY,
        kind=LATENCY,
        mechanism="C: write() of one byte to a pipe wakes a thread blocked in poll() on its read end, which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="waiter thread: %s as the first statement after poll() returns (before read())" % _CLOCK,
        measure=measure_native_pipe,
        requires=requires_native_floor,
    ),
    Arm(
        name="native-eventfd",
        family=FAMILY,
        kind=LATENCY,
        mechanism="C: write() of 1 to an eventfd wakes a thread blocked in poll() on it, which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(eventfd, (uint64_t)1)" % _CLOCK,
        t1="waiter thread: %s as the first statement after poll() returns (before read())" % _CLOCK,
        measure=measure_native_eventfd,
        requires=requires_native_floor,
    ),
    Arm(
        name="native-self-signal",
        family=FAMILY,
        kind=LATENCY,
        mechanism="C: kill(getpid(), SIGUSR1) in a single-threaded process; the handler stamps the time and sets a flag the main thread busy-waits on",
        waiter=SPINNING,
        scope=SELF,
        t0="main thread: %s immediately before kill(getpid(), SIGUSR1)" % _CLOCK,
        t1="main thread: %s as the first statement of the C SIGUSR1 handler" % _CLOCK,
        measure=measure_native_self_signal,
        requires=requires_native_floor,
    ),
    Arm(
        name="native-sigwait",
        family=FAMILY,
        kind=LATENCY,
        mechanism="C: pthread_kill(waiter, SIGUSR1) wakes a thread blocked in sigtimedwait() with SIGUSR1 blocked in every thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before pthread_kill(waiter, SIGUSR1)" % _CLOCK,
        t1="waiter thread: %s as the first statement after sigtimedwait() returns" % _CLOCK,
        measure=measure_native_sigwait,
        requires=requires_native_floor,
    ),
    Arm(
        name="native-sigaction-install",
        family=FAMILY,
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
