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

"vs C" is declared here, once: :data:`FLOORS` maps each Python arm to its C
floor and says whether the two are *matched* (same scope, same waiter state,
same ``t1`` shape -- only then is the ratio the interpreter's share) or only
the *nearest* C experiment there is.  :data:`T1_SHAPES` declares, for both
sides, the wait ``t1`` follows and where it is taken, so that
``tests/test_native_pairs.py`` can check every "matched" claim from data.

The binary is compiled on first use; without a C compiler every arm here is
unavailable (``requires`` says why) and is skipped.
"""

from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from wakelab.core import realtime
from wakelab.core.drivers import floor
from wakelab.core.model import (
    BLOCKED,
    CROSS_PROCESS,
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

MATCHED = "matched"
NEAREST = "nearest"

#: The one table of "vs C": Python arm -> (its C floor, how the two relate).  "matched": the C
#: experiment has the same scope, waiter state and t1 shape (:data:`T1_SHAPES`) as the Python
#: arm, so the ratio of the two is the interpreter's share.  "nearest": the closest C experiment
#: there is, shown labelled as such and never called the interpreter's share.  The registry
#: copies each entry onto the Python arm (``Arm.native``, ``Arm.native_match``);
#: ``tests/test_native_pairs.py`` checks every entry against the arms' declarations.
FLOORS: Dict[str, Tuple[str, str]] = {
    # A waiter thread parked on a futex (Event, Condition, Lock, Semaphore, the queues and
    # Future all end in one), t1 right after the wait returns.
    "event": ("native-condvar", MATCHED),
    "event-fifo": ("native-condvar-fifo", MATCHED),
    "condition": ("native-condvar", MATCHED),
    "lock-handoff": ("native-condvar", MATCHED),
    "semaphore": ("native-condvar", MATCHED),
    "queue": ("native-condvar", MATCHED),
    "simplequeue": ("native-condvar", MATCHED),
    "future": ("native-condvar", MATCHED),
    "sigusr1-self": ("native-self-signal", MATCHED),
    "signal-install": ("native-sigaction-install", MATCHED),
    # _signal.signal: the C function under signal.signal's wrapper, one sigaction() deep.
    "signal-install-unwrapped": ("native-sigaction-install", MATCHED),
    # C's sigwait floor wakes a worker thread from the main one; sigwait-thread-to-main goes the
    # other way.  To the kernel a thread is a thread: same scope, state and t1.
    "sigwait-thread-to-main": ("native-sigwait", MATCHED),
    "pthread-kill-sigwait": ("native-sigwait", MATCHED),
    "pause-handler": ("native-pause-handler", MATCHED),
    "wakeup-fd-select": ("native-wakeup-fd-select", MATCHED),
    "pipe": ("native-pipe", MATCHED),
    "eventfd": ("native-eventfd", MATCHED),
    "socketpair": ("native-socketpair", MATCHED),
    "selector-pipe": ("native-selector-pipe", MATCHED),
    # Nearest only: the loop thread is parked in epoll_wait, as in native-selector-pipe, but the
    # Python t1 is the first statement of a callback (or of the woken task) that the loop runs
    # after it has read its self-pipe and dispatched its ready queue; C has no event loop to
    # dispatch, and the notify goes through the loop's self-pipe socket, not a bare pipe.
    "call-soon-threadsafe": ("native-selector-pipe", NEAREST),
    "asyncio-event": ("native-selector-pipe", NEAREST),
    # The async libraries (core/families/asynclibs), optional: the same shape as the asyncio arms,
    # each library's loop parked in epoll_wait, t1 in a callback or task it dispatches after.
    "uvloop-call-soon-threadsafe": ("native-selector-pipe", NEAREST),
    "trio-token-event": ("native-selector-pipe", NEAREST),
    "anyio-asyncio-run-sync": ("native-selector-pipe", NEAREST),
    "anyio-trio-run-sync": ("native-selector-pipe", NEAREST),
    "gevent-async-watcher": ("native-selector-pipe", NEAREST),
    "kill-sigwait-child": ("native-kill-sigwait-child", MATCHED),
    "pipe-process": ("native-pipe-process", MATCHED),
    "eventfd-fork": ("native-eventfd-fork", MATCHED),
    # Hand-offs (core/families/handoff): C has no subinterpreter and no executor, so nearest only.
    # A subinterpreter's thread polling a pipe is, to the kernel, a thread polling a pipe: same
    # scope, waiter and t1, so the ratio is the (sub)interpreter's share.
    "interp-pipe": ("native-pipe", MATCHED),
    # The queue's get() sleeps and retries (a timer, not a futex); the executors' workers are
    # parked on a futex (the work queue) and t1 is the task's first statement.
    "interp-queue": ("native-condvar", NEAREST),
    "thread-pool-submit": ("native-condvar", NEAREST),
    "interp-pool-submit": ("native-condvar", NEAREST),
    "process-pool-submit": ("native-pipe-process", NEAREST),
}

# Where t1 is taken, relative to the waiter's wait.
AFTER_WAIT = "after-wait"  # first statement after the wait returns, before anything is read
AFTER_READ = "after-read"  # after the call that waits *and* consumes returns (recv with a timeout)
HANDLER = "handler"  # first statement of the signal handler
CALLBACK = "callback"  # first statement of a callback the event loop dispatched after its wait
TASK = "task"  # first statement of a task an executor's worker runs after taking it off its queue


class T1Shape(NamedTuple):
    """Which wait a latency arm's ``t1`` follows, and where it is taken (one of the points above)."""

    wait: str  # the waiter's kernel wait: futex, poll, epoll, select, sigtimedwait, pause, spin
    point: str


#: The t1 shape of every latency arm on either side of :data:`FLOORS` (Python arms and C arms).
#: A "matched" pair must agree here, as well as in scope and waiter state.
T1_SHAPES: Dict[str, T1Shape] = {
    # Python
    "event": T1Shape("futex", AFTER_WAIT),
    "event-fifo": T1Shape("futex", AFTER_WAIT),
    "condition": T1Shape("futex", AFTER_WAIT),
    "lock-handoff": T1Shape("futex", AFTER_WAIT),
    "semaphore": T1Shape("futex", AFTER_WAIT),
    "queue": T1Shape("futex", AFTER_WAIT),
    "simplequeue": T1Shape("futex", AFTER_WAIT),
    "future": T1Shape("futex", AFTER_WAIT),
    "sigusr1-self": T1Shape("spin", HANDLER),
    "sigwait-thread-to-main": T1Shape("sigtimedwait", AFTER_WAIT),
    "pthread-kill-sigwait": T1Shape("sigtimedwait", AFTER_WAIT),
    "pause-handler": T1Shape("pause", HANDLER),
    "wakeup-fd-select": T1Shape("select", AFTER_WAIT),
    "pipe": T1Shape("poll", AFTER_WAIT),
    "eventfd": T1Shape("poll", AFTER_WAIT),
    "socketpair": T1Shape("poll", AFTER_READ),  # CPython's recv with a timeout: poll, then recv
    "selector-pipe": T1Shape("epoll", AFTER_WAIT),
    "call-soon-threadsafe": T1Shape("epoll", CALLBACK),
    "asyncio-event": T1Shape("epoll", CALLBACK),
    "uvloop-call-soon-threadsafe": T1Shape("epoll", CALLBACK),
    "trio-token-event": T1Shape("epoll", CALLBACK),
    "anyio-asyncio-run-sync": T1Shape("epoll", CALLBACK),
    "anyio-trio-run-sync": T1Shape("epoll", CALLBACK),
    "gevent-async-watcher": T1Shape("epoll", CALLBACK),
    "kill-sigwait-child": T1Shape("sigtimedwait", AFTER_WAIT),
    "interp-pipe": T1Shape("poll", AFTER_WAIT),
    "interp-queue": T1Shape("sleep-poll", AFTER_WAIT),
    "thread-pool-submit": T1Shape("futex", TASK),
    "interp-pool-submit": T1Shape("futex", TASK),
    "process-pool-submit": T1Shape("poll", TASK),
    "pipe-process": T1Shape("poll", AFTER_WAIT),
    "eventfd-fork": T1Shape("poll", AFTER_WAIT),
    # C
    "native-condvar": T1Shape("futex", AFTER_WAIT),
    "native-condvar-fifo": T1Shape("futex", AFTER_WAIT),
    "native-pipe": T1Shape("poll", AFTER_WAIT),
    "native-eventfd": T1Shape("poll", AFTER_WAIT),
    "native-socketpair": T1Shape("poll", AFTER_READ),
    "native-selector-pipe": T1Shape("epoll", AFTER_WAIT),
    "native-self-signal": T1Shape("spin", HANDLER),
    "native-sigwait": T1Shape("sigtimedwait", AFTER_WAIT),
    "native-pause-handler": T1Shape("pause", HANDLER),
    "native-wakeup-fd-select": T1Shape("select", AFTER_WAIT),
    "native-pipe-process": T1Shape("poll", AFTER_WAIT),
    "native-eventfd-fork": T1Shape("poll", AFTER_WAIT),
    "native-kill-sigwait-child": T1Shape("sigtimedwait", AFTER_WAIT),
}


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
    requires: Callable[[], Optional[str]] = requires_native_floor,
) -> Arm:
    """A C latency arm: run by the floor driver, available when the binary builds."""
    return Arm(
        name=name,
        family=FAMILY,
        kind=LATENCY,
        mechanism=mechanism,
        waiter=waiter,
        scope=scope,
        t0=t0,
        t1=t1,
        measure=measure,
        requires=requires,
        driver="floor",
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
    ),
    _latency_arm(
        "native-pipe",
        mechanism="C: write() of one byte to a pipe wakes a thread blocked in poll() on its non-blocking read end, which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="waiter thread: %s as the first statement after poll() returns readable (before read(); a poll whose read finds nothing is not the wake)" % _CLOCK,
        measure=measure_native_pipe,
    ),
    _latency_arm(
        "native-eventfd",
        mechanism="C: write() of 1 to an eventfd wakes a thread blocked in poll() on it, which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(eventfd, (uint64_t)1)" % _CLOCK,
        t1="waiter thread: %s as the first statement after poll() returns readable (before read(); a poll whose read finds nothing is not the wake)" % _CLOCK,
        measure=measure_native_eventfd,
    ),
    _latency_arm(
        "native-socketpair",
        mechanism="C: send() of one byte on an AF_UNIX stream socketpair wakes a thread that does what CPython's recv() with a timeout does: poll() on the non-blocking socket, then recv()",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before send(sock, 1 byte, 0)" % _CLOCK,
        t1="waiter thread: %s as the first statement after recv(sock, 1) returns the byte (after the poll and the read)" % _CLOCK,
        measure=measure_native_socketpair,
    ),
    _latency_arm(
        "native-selector-pipe",
        mechanism="C: write() of one byte to a pipe wakes a thread blocked in epoll_wait() on its read end (the selector of selectors.DefaultSelector on Linux), which then read()s it",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="notifier thread: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="waiter thread: %s as the first statement after epoll_wait() returns (before read(); a wait whose read finds nothing is not the wake)" % _CLOCK,
        measure=measure_native_selector_pipe,
    ),
    _latency_arm(
        "native-self-signal",
        mechanism="C: kill(getpid(), SIGUSR1) in a single-threaded process; the handler stamps the time and sets a flag the main thread busy-waits on",
        waiter=SPINNING,
        scope=SELF,
        t0="main thread: %s immediately before kill(getpid(), SIGUSR1)" % _CLOCK,
        t1="main thread: %s as the first statement of the C SIGUSR1 handler" % _CLOCK,
        measure=measure_native_self_signal,
    ),
    _latency_arm(
        "native-sigwait",
        mechanism="C: pthread_kill(waiter, SIGUSR1) from the main thread wakes a thread blocked in sigtimedwait() with SIGUSR1 blocked in every thread",
        waiter=BLOCKED,
        scope=CROSS_THREAD,
        t0="main thread: %s immediately before pthread_kill(waiter thread, SIGUSR1)" % _CLOCK,
        t1="waiter thread: %s as the first statement after sigtimedwait() returns" % _CLOCK,
        measure=measure_native_sigwait,
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
    ),
    _latency_arm(
        "native-pipe-process",
        mechanism="C: write() of one byte to a pipe in the parent wakes a forked child blocked in poll() on the read end (the child reads the byte after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: %s immediately before write(pipe_w, 1 byte)" % _CLOCK,
        t1="child: %s as the first statement after poll() on the pipe returns (before read())" % _CLOCK,
        measure=measure_native_pipe_process,
    ),
    _latency_arm(
        "native-eventfd-fork",
        mechanism="C: an eventfd shared with a child across fork(): write() of 1 in the parent wakes the child blocked in poll() on it (the child reads it after t1)",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: %s immediately before write(eventfd, (uint64_t)1)" % _CLOCK,
        t1="child: %s as the first statement after poll() on the eventfd returns (before read())" % _CLOCK,
        measure=measure_native_eventfd_fork,
    ),
    _latency_arm(
        "native-kill-sigwait-child",
        mechanism="C: kill(child_pid, SIGUSR1) from the parent wakes a forked child blocked in sigtimedwait() with SIGUSR1 blocked",
        waiter=BLOCKED,
        scope=CROSS_PROCESS,
        t0="parent: %s immediately before kill(child_pid, SIGUSR1)" % _CLOCK,
        t1="child: %s as the first statement after sigtimedwait() returns" % _CLOCK,
        measure=measure_native_kill_sigwait_child,
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
