"""What the machine was doing while a run measured: read at its start and at its end (stdlib only).

Two separate runs of the same code differ in more than their samples: the load beside them, a
busy process that kept the other vCPU awake (one made ``event`` *faster*, 0.73x, by sparing it
the idle exit), the CPUs' frequency and governor, which idle states were allowed.  A run's
``conditions`` say what wakelab asked for and applied; this record says what it *saw*, so that
``wakelab compare`` of two separate runs can name what differed between them besides the code
(:mod:`wakelab.analysis.run_conditions`).  It is summary.json's ``observed`` (schema: its
description there), and never part of the history's conditions key: it is an observation, not
a condition.

Read only from /proc and /sys, each file where it exists (``None`` where not: a container
without cpufreq, a kernel without cpuidle); reading every process's ``stat`` takes a few
milliseconds, done twice a run, never while an arm measures.

Busy processes are those, other than this run's own (this process and its descendants: the
worker template, the workers, a ``--cpu-procs`` hog), whose CPU time grew by at least
:data:`BUSY_SHARE` of one CPU's time between the two readings.  A process that started after
the first reading counts with all its CPU time; one that ended before the second is not seen
(said in ``method``).
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import time
from typing import Callable, Dict, List, Optional, Set, Tuple, TypeVar

#: A process at or above this share of one CPU over the run is a busy process.
BUSY_SHARE = 0.10
#: At most this many busy processes are recorded (the busiest first).
MOST_PROCESSES = 8
METHOD = (
    "read at the run's start and end from /proc and /sys; busy processes: other than this run's own "
    "(its process and descendants), CPU time (utime + stime) grown by at least %d%% of one CPU over the run, "
    "a process started during the run counted whole, one that ended before the end unseen; cpu_busy: the "
    "non-idle share of each CPU's time (/proc/stat), this run's own work included" % round(100 * BUSY_SHARE)
)
_CPU = "/sys/devices/system/cpu"

T = TypeVar("T")


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _cpus() -> List[int]:
    if hasattr(os, "sched_getaffinity"):
        try:
            return sorted(os.sched_getaffinity(0))
        except OSError:
            pass
    return list(range(os.cpu_count() or 1))


def _per_cpu(cpus: List[int], relative: str, parse: Callable[[str], T]) -> Optional[Dict[str, T]]:
    """``{cpu: parse(text)}`` of ``/sys/devices/system/cpu/cpuN/<relative>`` where readable; None if nowhere."""
    found: Dict[str, T] = {}
    for cpu in cpus:
        text = _read("%s/cpu%d/%s" % (_CPU, cpu, relative))
        if text is not None:
            try:
                found[str(cpu)] = parse(text)
            except ValueError:
                continue
    return found or None


def _idle_disabled(cpus: List[int]) -> Optional[Dict[str, List[str]]]:
    """``{cpu: [names of the idle states disabled there]}``; None without cpuidle."""
    found: Dict[str, List[str]] = {}
    for cpu in cpus:
        base = "%s/cpu%d/cpuidle" % (_CPU, cpu)
        try:
            states = sorted((n for n in os.listdir(base) if n.startswith("state")), key=lambda n: int(n[5:] or 0))
        except (OSError, ValueError):
            continue
        found[str(cpu)] = [str(_read(os.path.join(base, s, "name"))) for s in states
                           if _read(os.path.join(base, s, "disable")) == "1"]
    return found or None


def _cpu_ticks() -> Dict[str, Tuple[int, int]]:
    """``{cpu: (busy ticks, all ticks)}`` from /proc/stat (idle and iowait are not busy)."""
    text = _read("/proc/stat") or ""
    found: Dict[str, Tuple[int, int]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        try:
            values = [int(v) for v in rest.split()[:8]]
        except ValueError:
            continue
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        found[name[3:]] = (sum(values) - idle, sum(values))
    return found


@dataclasses.dataclass(frozen=True)
class _Process:
    name: str
    ppid: int
    ticks: int  # utime + stime
    start_ticks: int  # when it started, in ticks since boot


def _processes() -> Dict[int, _Process]:
    found: Dict[int, _Process] = {}
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return found
    for pid in pids:
        text = _read("/proc/%d/stat" % pid)
        if not text:
            continue
        # The name is in parentheses and may hold spaces and parentheses itself.
        name = text[text.find("(") + 1:text.rfind(")")]
        fields = text[text.rfind(")") + 2:].split()
        try:
            found[pid] = _Process(name, int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19]))
        except (IndexError, ValueError):
            continue
    return found


def _uptime_ticks() -> Optional[int]:
    text = _read("/proc/uptime")
    try:
        return int(float(text.split()[0]) * os.sysconf("SC_CLK_TCK")) if text else None
    except (ValueError, OSError):
        return None


@dataclasses.dataclass(frozen=True)
class Reading:
    """What is recorded at each end of the run (``observed.start``, ``observed.end``), None where not readable."""

    utc: str
    load_average: Optional[List[float]]  # 1, 5 and 15 minutes
    cpu_mhz: Optional[Dict[str, float]]  # by CPU
    cpufreq_governors: Optional[Dict[str, str]]  # by CPU
    cpuidle_governor: Optional[str]
    idle_disabled: Optional[Dict[str, List[str]]]  # by CPU: the names of the idle states disabled there


@dataclasses.dataclass(frozen=True)
class BusyProcess:
    """A process other than the run's own that was busy during it (``observed.busy_processes``)."""

    pid: int
    name: str
    cpu_share: float  # of one CPU's time over the run
    started_during_run: bool


@dataclasses.dataclass(frozen=True)
class Observed:
    """summary.json's ``observed`` record: both readings, each CPU's busy share, the busy processes between them."""

    start: Reading
    end: Reading
    wall_s: float
    cpu_busy: Optional[Dict[str, float]]  # by CPU (None: /proc/stat not readable)
    busy_processes: Optional[List[BusyProcess]]  # the busiest first (None: no /proc, not seen)
    busy_share: float = BUSY_SHARE
    method: str = METHOD


def reading() -> Reading:
    """What is recorded at each end of the run: time, load, frequency, governors, idle settings."""
    cpus = _cpus()
    load = _read("/proc/loadavg")
    try:
        load_average: Optional[List[float]] = [float(x) for x in load.split()[:3]] if load else None
    except ValueError:
        load_average = None
    return Reading(
        utc=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        load_average=load_average,
        cpu_mhz=_per_cpu(cpus, "cpufreq/scaling_cur_freq", lambda t: round(int(t) / 1000.0, 1)),
        cpufreq_governors=_per_cpu(cpus, "cpufreq/scaling_governor", str),
        cpuidle_governor=_read(_CPU + "/cpuidle/current_governor_ro") or _read(_CPU + "/cpuidle/current_governor"),
        idle_disabled=_idle_disabled(cpus),
    )


class Observer:
    """Started as a run starts; :meth:`observe` gives the :class:`Observed` record (summary.json holds it as :func:`dataclasses.asdict`)."""

    def __init__(self) -> None:
        self._start = reading()
        self._t0 = time.monotonic()
        self._uptime0 = _uptime_ticks()
        self._cpu0 = _cpu_ticks()
        self._procs0 = _processes()

    def observe(self) -> Observed:
        """The record: both readings, each CPU's busy share and the busy processes seen between them."""
        end = reading()
        wall_s = max(time.monotonic() - self._t0, 1e-9)
        cpu1 = _cpu_ticks()
        busy: Dict[str, float] = {}
        for cpu, (busy1, all1) in cpu1.items():
            if cpu in self._cpu0:
                busy0, all0 = self._cpu0[cpu]
                if all1 > all0:
                    busy[cpu] = round((busy1 - busy0) / float(all1 - all0), 3)
        return Observed(self._start, end, round(wall_s, 3), busy or None, self._busy_processes(wall_s))

    def _busy_processes(self, wall_s: float) -> Optional[List[BusyProcess]]:
        procs1 = _processes()
        if not procs1:
            return None  # no /proc: not seen, which is not "none"
        try:
            hz = float(os.sysconf("SC_CLK_TCK"))
        except (ValueError, OSError):
            hz = 100.0
        own = _descendants(procs1, os.getpid())
        found: List[BusyProcess] = []
        for pid, proc in procs1.items():
            if pid in own:
                continue
            before = self._procs0.get(pid)
            new = before is None or before.start_ticks != proc.start_ticks
            if new and self._uptime0 is not None and proc.start_ticks < self._uptime0:
                continue  # there at the start but unseen then (it raced the first reading): no baseline
            share = (proc.ticks - (0 if new else before.ticks)) / hz / wall_s  # type: ignore[union-attr]
            if share >= BUSY_SHARE:
                found.append(BusyProcess(pid, proc.name, round(share, 3), new))
        found.sort(key=lambda p: (-p.cpu_share, p.pid))
        return found[:MOST_PROCESSES]


def _descendants(procs: Dict[int, _Process], root: int) -> Set[int]:
    children: Dict[int, List[int]] = {}
    for pid, proc in procs.items():
        children.setdefault(proc.ppid, []).append(pid)
    seen = {root}
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen
