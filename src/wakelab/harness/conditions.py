"""The conditions a wake is measured under, applied and always undone (stdlib only).

Two layers:

* :func:`worker_conditions` -- inside the process that measures: pins the
  main thread for the placement, sets ``sys.setswitchinterval``, and starts
  ``cpu_threads`` busy Python threads that compete for the GIL with the
  waiter; with a realtime request (``wakelab run --policy``,
  ``--notifier-policy``, ``--mlock``) it switches the main thread (the
  notifier of the thread driver) to its policy, tells the drivers the
  waiter's (:mod:`wakelab.core.realtime`), and locks the process's memory.
  The same code runs in a worker process and with ``--in-process``.
* :func:`run_conditions` -- around the whole run, in the runner's process:
  ``cpu_procs`` busy processes, and the low-latency idle request
  (``/dev/cpu_dma_latency`` held at 0, as cyclictest does).

Everything is restored in ``finally``: affinity, switch interval, threads
joined, the main thread's scheduling policy and priority, memory unlocked,
processes killed and reaped, the idle request released.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import struct
import subprocess
import sys
import threading
from typing import Dict, Iterator, List, Optional

from wakelab.core import realtime
from wakelab.core.placement import ANY, pin_current_thread, preserved_affinity

CPU_DMA_LATENCY = "/dev/cpu_dma_latency"


class ConditionError(RuntimeError):
    """A condition that cannot be put in place (for example no permission for the idle hold)."""


@dataclasses.dataclass(frozen=True)
class Conditions:
    """What competes with the wake, and how deep idle CPUs may sleep.

    ``cpu_threads`` busy Python threads in the measuring process (GIL
    contention); ``cpu_procs`` busy processes on the machine (CPU
    contention); ``switch_interval_s`` the GIL switch interval to use (None:
    leave the interpreter's default); ``idle_hold`` holds
    ``/dev/cpu_dma_latency`` at 0 for the run so idle CPUs stay shallow.
    """

    cpu_threads: int = 0
    cpu_procs: int = 0
    switch_interval_s: Optional[float] = None
    idle_hold: bool = False
    # Realtime scheduling (wakelab.core.realtime): the waiter's and the notifier's policy ("other",
    # "fifo", "rr"; None: left as the threads are created) and static priority, and mlockall.
    waiter_policy: Optional[str] = None
    waiter_priority: int = 0
    notifier_policy: Optional[str] = None
    notifier_priority: int = 0
    mlock: bool = False

    @property
    def waiter_scheduling(self) -> Optional[realtime.Scheduling]:
        """The waiter's requested scheduling, None when not asked for."""
        return None if self.waiter_policy is None else realtime.Scheduling(self.waiter_policy, self.waiter_priority)

    @property
    def notifier_scheduling(self) -> Optional[realtime.Scheduling]:
        """The notifier's requested scheduling, None when not asked for."""
        return None if self.notifier_policy is None else realtime.Scheduling(self.notifier_policy, self.notifier_priority)

    @property
    def realtime(self) -> bool:
        """True when any realtime condition (a policy or the memory lock) was asked for."""
        return self.waiter_policy is not None or self.notifier_policy is not None or self.mlock

    def to_dict(self) -> Dict[str, object]:
        """Every condition; the realtime ones only when asked for, so that a run without them
        records (and keys its history by) what runs before them recorded."""
        data = dataclasses.asdict(self)
        for role in ("waiter", "notifier"):
            if data[role + "_policy"] is None:
                del data[role + "_policy"], data[role + "_priority"]
        if not self.mlock:
            del data["mlock"]
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, object]) -> "Conditions":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError("unknown conditions: %s" % ", ".join(unknown))
        return cls(**data)  # type: ignore[arg-type]


def check_realtime(conditions: Conditions) -> None:
    """Raise :class:`ConditionError` now (one line) if a realtime condition could not be had later."""
    for flag, request in (("--policy", conditions.waiter_scheduling), ("--notifier-policy", conditions.notifier_scheduling)):
        if request is None:
            continue
        problem = realtime.permission_problem(request)
        if problem is not None:
            priority_flag = "--priority" if flag == "--policy" else "--notifier-priority"
            raise ConditionError("%s %s %s %d refused: %s" % (flag, request.policy, priority_flag, request.priority, problem))
    if conditions.mlock:
        problem = realtime.mlock_problem()
        if problem is not None:
            raise ConditionError(problem)


@contextlib.contextmanager
def realtime_conditions(conditions: Conditions) -> Iterator[Dict[str, object]]:
    """The calling (main) thread under the notifier's policy, the waiter's told to the drivers, and
    memory locked, for the block; everything put back in ``finally``.  Yields what was applied."""
    applied: Dict[str, object] = {}
    if not conditions.realtime:
        yield applied
        return
    previous = None
    locked = False
    before = (realtime.WAITER, realtime.NOTIFIER)
    try:
        try:
            if conditions.mlock:
                realtime.lock_memory()
                locked = True
                applied["mlock"] = True
            notifier = conditions.notifier_scheduling  # None: the main thread stays as it is
            if notifier is not None:
                previous = realtime.apply(notifier)
                applied["notifier_sched"] = notifier.describe()
            realtime.WAITER = conditions.waiter_scheduling
            realtime.NOTIFIER = conditions.notifier_scheduling
            if conditions.waiter_scheduling is not None:
                applied["waiter_sched"] = conditions.waiter_scheduling.describe()
            applied["rt_budget"] = realtime.rt_budget()
        except realtime.RealtimeError as exc:
            raise ConditionError(str(exc)) from None
        yield applied
    finally:
        realtime.WAITER, realtime.NOTIFIER = before
        realtime.leave(previous)
        if locked:
            realtime.unlock_memory()


def _burn(stop: threading.Event) -> None:
    # Pure Python work: holds the GIL except when the interpreter forces a switch.
    while not stop.is_set():
        for _ in range(5000):
            pass


@contextlib.contextmanager
def worker_conditions(params: object, conditions: Conditions) -> Iterator[Dict[str, object]]:
    """Apply placement, switch interval and busy threads; yields what was applied."""
    applied: Dict[str, object] = {}
    stop = threading.Event()
    burners: List[threading.Thread] = []
    old_interval = sys.getswitchinterval()
    with preserved_affinity():
        try:
            if getattr(params, "placement", ANY) != ANY:
                pin_current_thread(getattr(params, "notifier_cpu", None))
                applied["main_thread_cpu"] = getattr(params, "notifier_cpu", None)
            if conditions.switch_interval_s is not None:
                sys.setswitchinterval(conditions.switch_interval_s)
            applied["switch_interval_s"] = sys.getswitchinterval()
            for i in range(conditions.cpu_threads):
                thread = threading.Thread(target=_burn, args=(stop,), name="wakelab-cpu-burner-%d" % i, daemon=True)
                thread.start()
                burners.append(thread)
            applied["cpu_threads"] = len(burners)
            if burners and _traced():
                # A traced run names a busy thread that holds what the waiter re-blocks on.
                applied["cpu_thread_tids"] = [getattr(t, "native_id", None) for t in burners]
            # After the busy threads have started: they stay normal tasks whatever the notifier becomes.
            with realtime_conditions(conditions) as scheduling:
                applied.update(scheduling)
                yield applied
        finally:
            stop.set()
            for thread in burners:
                thread.join(10.0)
            sys.setswitchinterval(old_interval)


def _traced() -> bool:
    from wakelab.core.drivers import recording_t0

    return recording_t0()


def check_idle_hold() -> None:
    """Raise :class:`ConditionError` now if the idle request could not be held later."""
    try:
        fd = os.open(CPU_DMA_LATENCY, os.O_WRONLY)
    except OSError as exc:
        raise ConditionError(
            "cannot hold %s at 0 (%s): it needs root and a Linux kernel with PM QoS; drop --idle-hold"
            % (CPU_DMA_LATENCY, exc.strerror or exc)
        ) from None
    os.close(fd)


_BURN_PROCESS = "while True:\n    pass\n"


@contextlib.contextmanager
def run_conditions(conditions: Conditions) -> Iterator[Dict[str, object]]:
    """Start busy processes and hold the idle request for the duration of the block."""
    applied: Dict[str, object] = {"cpu_procs": 0, "idle_hold": False}
    procs: List["subprocess.Popen[bytes]"] = []
    hold_fd: Optional[int] = None
    try:
        if conditions.idle_hold:
            try:
                hold_fd = os.open(CPU_DMA_LATENCY, os.O_WRONLY)
                os.write(hold_fd, struct.pack("i", 0))
            except OSError as exc:
                if hold_fd is not None:
                    os.close(hold_fd)
                    hold_fd = None
                raise ConditionError(
                    "cannot hold %s at 0 (%s): it needs root and a Linux kernel with PM QoS; drop --idle-hold"
                    % (CPU_DMA_LATENCY, exc.strerror or exc)
                ) from None
            applied["idle_hold"] = True
        for _ in range(conditions.cpu_procs):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", _BURN_PROCESS],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        applied["cpu_procs"] = len(procs)
        yield applied
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait()
        if hold_fd is not None:
            os.close(hold_fd)  # closing the fd releases the request
