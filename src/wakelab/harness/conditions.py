"""The conditions a wake is measured under, applied and always undone (stdlib only).

Two layers:

* :func:`worker_conditions` -- inside the process that measures: pins the
  main thread for the placement, sets ``sys.setswitchinterval``, and starts
  ``cpu_threads`` busy Python threads that compete for the GIL with the
  waiter.  The same code runs in a worker process and with ``--in-process``.
* :func:`run_conditions` -- around the whole run, in the runner's process:
  ``cpu_procs`` busy processes, and the low-latency idle request
  (``/dev/cpu_dma_latency`` held at 0, as cyclictest does).

Everything is restored in ``finally``: affinity, switch interval, threads
joined, processes killed and reaped, the idle request released.
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

    def to_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, object]) -> "Conditions":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError("unknown conditions: %s" % ", ".join(unknown))
        return cls(**data)  # type: ignore[arg-type]


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
            yield applied
        finally:
            stop.set()
            for thread in burners:
                thread.join(10.0)
            sys.setswitchinterval(old_interval)


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
