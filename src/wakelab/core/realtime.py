"""Realtime scheduling of the waiter and the notifier, and locked memory.

Measuring side: standard library only, Python 3.9+ (PyPy: where its ``os``
has ``sched_setscheduler``).

cyclictest, the anchor of wake-latency measurement in C, runs its threads
under ``SCHED_FIFO`` with memory locked.  A Python waiter can do the same:
``os.sched_setscheduler(0, SCHED_FIFO, os.sched_param(80))`` called *from a
thread* changes that thread alone on Linux (pid 0 is the calling task, and
every thread is a task).  What it buys is a question of its own: the woken
waiter preempts every normal task on its CPU at once, but it still needs the
GIL, which a normal-priority Python thread may hold for a whole switch
interval.

How a request reaches the threads.  The worker sets :data:`WAITER` and
:data:`NOTIFIER` for the arm's duration (``wakelab.harness.conditions``);
the notifier side is the worker's main thread, which the worker switches
itself; a waiter thread calls :func:`enter_waiter` as it starts (the thread
driver does) and :func:`leave` before it ends; the C floor is handed both
requests and applies them in its own threads.  Every switch sets
``SCHED_RESET_ON_FORK``, so that a thread or process started by a realtime
thread -- a busy thread, a C floor, a storm's sender -- starts as a normal
task instead of inheriting the priority.  Whatever is switched is put back
(:func:`leave`, :func:`scheduled`).

Permission.  A realtime policy needs root (``CAP_SYS_NICE``) or an
``RLIMIT_RTPRIO`` at least the priority asked for, and the kernel must give
realtime tasks a budget (``kernel.sched_rt_runtime_us`` above 0, and, where
the cpu cgroup controller has realtime groups, ``cpu.rt_runtime_us`` of the
process's group).  :func:`permission_problem` tries the request in a
short-lived thread and says, in one line, why it cannot be had.

Throttling.  With ``sched_rt_runtime_us`` below ``sched_rt_period_us``
(950000 of 1000000 by default) realtime tasks together may run at most that
share of every period on a CPU; a realtime thread that never blocks is then
stopped for the rest of the period.  :func:`rt_budget` reads both, for the
evidence.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import platform
import sys
import threading
from typing import Any, Dict, Iterator, Optional, Tuple

#: The policies ``wakelab run --policy`` takes, by the names it takes them.
POLICIES = ("other", "fifo", "rr")
_KERNEL_NAMES = {"other": "SCHED_OTHER", "fifo": "SCHED_FIFO", "rr": "SCHED_RR"}

RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
RT_PERIOD = "/proc/sys/kernel/sched_rt_period_us"


class RealtimeError(RuntimeError):
    """A scheduling request or memory lock that could not be put in place."""


@dataclasses.dataclass(frozen=True)
class Scheduling:
    """A scheduling policy and its static priority (0 for ``other``)."""

    policy: str
    priority: int = 0

    @property
    def realtime(self) -> bool:
        return self.policy in ("fifo", "rr")

    def describe(self) -> str:
        """``SCHED_FIFO priority 80``, ``SCHED_OTHER``."""
        name = _KERNEL_NAMES.get(self.policy, self.policy)
        return "%s priority %d" % (name, self.priority) if self.realtime else name

    def to_dict(self) -> Dict[str, object]:
        return {"policy": self.policy, "priority": self.priority}


#: The scheduling a waiter thread takes as it starts (:func:`enter_waiter`); None: as created.
#: Set by the worker for an arm's duration, or by an arm for its own (:func:`waiter_scheduling`).
WAITER: Optional[Scheduling] = None
#: The notifier's, for drivers whose notifier is not the worker's main thread (the C floor).
NOTIFIER: Optional[Scheduling] = None

NORMAL = Scheduling("other", 0)
#: The realtime arms' own waiter (``event-fifo``, ``native-condvar-fifo``): cyclictest's usual priority.
FIFO_80 = Scheduling("fifo", 80)


def requires_realtime(request: Scheduling = FIFO_80) -> Optional[str]:
    """An arm's ``requires`` for a waiter under ``request``: None when permitted, else why not."""
    problem = permission_problem(request)
    return None if problem is None else "its waiter runs under %s, not permitted here: %s" % (request.describe(), problem)


def unavailable_reason() -> Optional[str]:
    """None where threads can change their scheduling policy here, else why not."""
    for name in ("sched_setscheduler", "sched_getscheduler", "sched_param", "SCHED_FIFO", "SCHED_RR"):
        if not hasattr(os, name):
            return "os.%s does not exist in %s %s on %s" % (
                name, platform.python_implementation(), platform.python_version(), platform.system())
    return None


def policy_number(policy: str) -> int:
    """The kernel's number for ``policy`` (``"fifo"``: ``os.SCHED_FIFO``)."""
    if policy not in _KERNEL_NAMES:
        raise ValueError("unknown scheduling policy %r (choose %s)" % (policy, ", ".join(POLICIES)))
    return int(getattr(os, _KERNEL_NAMES[policy]))


def priority_range(policy: str) -> Tuple[int, int]:
    """The static priorities ``policy`` takes (1..99 for fifo and rr on Linux, 0..0 for other)."""
    number = policy_number(policy)
    return os.sched_get_priority_min(number), os.sched_get_priority_max(number)


def range_problem(request: Scheduling) -> Optional[str]:
    """Why ``request``'s priority is out of its policy's range, or None."""
    low, high = priority_range(request.policy)
    if not low <= request.priority <= high:
        return "%s takes a priority from %d to %d, not %d" % (_KERNEL_NAMES[request.policy], low, high, request.priority)
    return None


def requested(policy: Optional[str], priority: Optional[int], policy_flag: str, priority_flag: str) -> Tuple[Optional[str], int]:
    """The ``(policy, priority)`` one side asks for with its two options (``(None, 0)``: none), checked against what
    this interpreter has and the policy's range; ValueError, worded for the command line, where it cannot be had."""
    if policy is None:
        if priority is not None:
            raise ValueError("%s needs %s fifo or rr" % (priority_flag, policy_flag))
        return None, 0
    reason = unavailable_reason()
    if reason is not None:
        raise ValueError("%s: %s" % (policy_flag, reason))
    if priority is None:
        if policy != "other":
            raise ValueError("%s %s needs %s N (1..99; higher runs first)" % (policy_flag, policy, priority_flag))
        priority = 0
    problem = range_problem(Scheduling(policy, priority))
    if problem is not None:
        raise ValueError("%s %s %s %d: %s" % (policy_flag, policy, priority_flag, priority, problem))
    return policy, priority


def current() -> Tuple[int, int]:
    """The calling thread's ``(policy, priority)``, the policy with any ``SCHED_RESET_ON_FORK`` bit."""
    return os.sched_getscheduler(0), os.sched_getparam(0).sched_priority


def _reset_on_fork() -> int:
    """``SCHED_RESET_ON_FORK`` (Linux's 0x40000000 where ``os`` lacks the name, as PyPy 3.9's does)."""
    return int(getattr(os, "SCHED_RESET_ON_FORK", 0x40000000 if sys.platform.startswith("linux") else 0))


def apply(request: Scheduling) -> Tuple[int, int]:
    """Switch the calling thread to ``request``; returns what it was (for :func:`leave`).

    Raises :class:`RealtimeError` (one line, naming what is missing) when the
    kernel refuses.
    """
    previous = current()
    try:
        os.sched_setscheduler(0, policy_number(request.policy) | _reset_on_fork(), os.sched_param(request.priority))
    except OSError as exc:
        raise RealtimeError("cannot switch to %s: %s" % (request.describe(), _why(exc))) from None
    return previous


def leave(previous: Optional[Tuple[int, int]]) -> None:
    """Put the calling thread back to ``previous`` (from :func:`apply`); None: nothing was switched."""
    if previous is None:
        return
    policy, priority = previous
    os.sched_setscheduler(0, policy, os.sched_param(priority))


@contextlib.contextmanager
def scheduled(request: Optional[Scheduling]) -> Iterator[Optional[Tuple[int, int]]]:
    """The calling thread under ``request`` for the block (None: unchanged), restored in ``finally``."""
    previous = apply(request) if request is not None else None
    try:
        yield previous
    finally:
        leave(previous)


def enter_waiter() -> Optional[Tuple[int, int]]:
    """A waiter thread's first move: take :data:`WAITER`, if set; returns what to :func:`leave` to.

    When only the notifier was asked for (:data:`NOTIFIER` set), the waiter is
    made a normal task explicitly, whatever it inherited.
    """
    request = WAITER if WAITER is not None else (NORMAL if NOTIFIER is not None else None)
    return apply(request) if request is not None else None


def waiter_request() -> Optional[Scheduling]:
    """What a waiter thread takes now (:func:`enter_waiter`), for the record."""
    return WAITER if WAITER is not None else (NORMAL if NOTIFIER is not None else None)


@contextlib.contextmanager
def waiter_scheduling(request: Optional[Scheduling]) -> Iterator[None]:
    """:data:`WAITER` set to ``request`` for the block (an arm whose waiter's policy is its own)."""
    global WAITER
    before = WAITER
    WAITER = request
    try:
        yield
    finally:
        WAITER = before


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path) as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def _cgroup_rt_runtime() -> Tuple[Optional[str], Optional[int]]:
    """The cpu cgroup (v1, realtime groups) of this process and its ``cpu.rt_runtime_us``."""
    try:
        with open("/proc/self/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpu" in parts[1].split(","):
            path = "/sys/fs/cgroup/%s%s/cpu.rt_runtime_us" % (parts[1], parts[2].rstrip("/"))
            alt = "/sys/fs/cgroup/cpu%s/cpu.rt_runtime_us" % parts[2].rstrip("/")
            for candidate in (path, alt):
                value = _read_int(candidate)
                if value is not None:
                    return candidate, value
    return None, None


def rt_budget() -> Dict[str, Optional[int]]:
    """The realtime budget: ``sched_rt_runtime_us`` of every ``sched_rt_period_us`` (None: unknown;
    runtime -1: unlimited, realtime tasks are never throttled), and the cgroup's where there is one."""
    budget: Dict[str, Optional[int]] = {
        "sched_rt_runtime_us": _read_int(RT_RUNTIME),
        "sched_rt_period_us": _read_int(RT_PERIOD),
    }
    where, value = _cgroup_rt_runtime()
    if where is not None:
        budget["cgroup_rt_runtime_us"] = value
    return budget


def _why(exc: OSError) -> str:
    """What is missing, in words, for a refused switch."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_RTPRIO)
        limit = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    except (ImportError, AttributeError, OSError, ValueError):
        limit = "unknown"
    budget = rt_budget()
    parts = [os.strerror(exc.errno) if exc.errno else str(exc)]
    if budget.get("sched_rt_runtime_us") == 0:
        parts.append("no realtime budget: kernel.sched_rt_runtime_us is 0")
    elif budget.get("cgroup_rt_runtime_us") == 0:
        parts.append("no realtime budget: this process's cpu cgroup has cpu.rt_runtime_us 0")
    elif hasattr(os, "geteuid") and os.geteuid() != 0:
        parts.append("it needs root (CAP_SYS_NICE) or an RLIMIT_RTPRIO of the priority (ulimit -r is %s)" % limit)
    return "; ".join(parts)


def permission_problem(request: Scheduling) -> Optional[str]:
    """None when the calling process may run a thread under ``request``, else why not (one line).

    The request is tried for real in a short-lived thread, which is put back
    before it ends: the kernel's answer, not a guess from uid and limits.
    """
    reason = unavailable_reason()
    if reason is not None:
        return reason
    problem = range_problem(request)
    if problem is not None:
        return problem
    if request.realtime and rt_budget().get("sched_rt_runtime_us") == 0:
        return "cannot switch to %s: no realtime budget (kernel.sched_rt_runtime_us is 0)" % request.describe()
    outcome: Dict[str, Optional[str]] = {"problem": "the trial thread did not finish"}

    def trial() -> None:
        try:
            with scheduled(request):
                pass
            outcome["problem"] = None
        except (OSError, RealtimeError) as exc:
            outcome["problem"] = str(exc)

    thread = threading.Thread(target=trial, name="wakelab-sched-trial", daemon=True)
    thread.start()
    thread.join(10.0)
    return outcome["problem"]


# -- locked memory ----------------------------------------------------------------------------

# mlockall(2)'s flags: 1 and 2 on x86, arm, riscv and s390; other values on alpha, powerpc, sparc.
_MCL = {"ppc": (0x2000, 0x4000), "sparc": (0x2000, 0x4000), "alpha": (0x2000, 0x4000)}


def _mcl_flags() -> Tuple[int, int]:
    machine = platform.machine().lower()
    for prefix, flags in _MCL.items():
        if machine.startswith(prefix):
            return flags
    return 1, 2


def _libc() -> Any:
    import ctypes
    import ctypes.util

    return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def mlock_problem() -> Optional[str]:
    """None when this process may lock all its memory now and later (``mlockall``), else why not.

    Root (``CAP_IPC_LOCK``) or an unlimited ``RLIMIT_MEMLOCK``: with a finite
    limit, ``MCL_FUTURE`` makes every later allocation beyond it fail, which
    would end a measurement half-way.
    """
    if platform.system() != "Linux":
        return "--mlock locks memory with Linux's mlockall; this is %s" % platform.system()
    try:
        import ctypes  # noqa: F401
        import resource
    except ImportError as exc:
        return "--mlock needs ctypes and resource (%s)" % exc
    if os.geteuid() == 0:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft != resource.RLIM_INFINITY:
        return ("--mlock needs root or an unlimited RLIMIT_MEMLOCK (ulimit -l is %d KiB: with MCL_FUTURE every "
                "allocation beyond it would fail mid-run)" % (soft // 1024))
    return None


def lock_memory() -> None:
    """``mlockall(MCL_CURRENT | MCL_FUTURE)``: no page of this process is paged out, now or later."""
    import ctypes

    current_flag, future_flag = _mcl_flags()
    libc = _libc()
    if libc.mlockall(current_flag | future_flag) != 0:
        err = ctypes.get_errno()
        raise RealtimeError("mlockall failed: %s" % os.strerror(err))


def unlock_memory() -> None:
    """``munlockall()``: undo :func:`lock_memory`."""
    import ctypes

    libc = _libc()
    if libc.munlockall() != 0:
        err = ctypes.get_errno()
        raise RealtimeError("munlockall failed: %s" % os.strerror(err))


def memory_locked() -> Optional[bool]:
    """Whether this process has locked memory (``VmLck`` above 0 in /proc/self/status); None: unknown."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmLck:"):
                    return int(line.split()[1]) > 0
    except (OSError, ValueError, IndexError):
        return None
    return None
