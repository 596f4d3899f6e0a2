"""Typed records of summary.json's run-wide sections: the lab, its parameters, the conditions, how it executed,
the machine, the clock, the system, a soak.

Each is read once from its section (:meth:`~wakelab.evidence.load.Record.from_dict`) and read by the renderers as
attributes, never as a dict.  A field holds the value as the evidence stored it -- an int stays an int, a missing one is
None -- so that a renderer that writes it shows exactly what was recorded; ``present`` says whether the section was
recorded at all (older bundles lack some).  :class:`wakelab.evidence.model.Bundle` hands them out.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Tuple

from wakelab.evidence.bundle import Record, json_field


def _present() -> Any:
    return json_field("", lambda doc: isinstance(doc, Mapping) and bool(doc), default=False)


def _recorded() -> Any:
    return json_field("", default_factory=dict, repr=False, compare=False)


@dataclasses.dataclass(frozen=True)
class LabInfo(Record):
    """``lab``: which lab the run measured, its question, methodology and limits, and its reproduce script."""

    id: Any = None
    title: Any = None
    question: Any = None
    methodology: Tuple[str, ...] = ()
    limits: Tuple[str, ...] = ()
    reproduce_script: Any = None

    @property
    def name(self) -> Any:
        """The lab's title, else its id."""
        return self.title or self.id


@dataclasses.dataclass(frozen=True)
class Parameters(Record):
    """``parameters``: what every arm was measured with (counts, settle, timeout, placement, loop)."""

    present: bool = _present()
    n: Any = None
    warmup: Any = None
    settle_us: Any = None
    settle_jitter_us: Any = None  # absent from bundles before random settles
    seed: Any = None
    timeout_s: Any = None
    install_n: Any = None
    rounds: Any = None
    warmup_rounds: Any = None
    planted_delay_us: Any = None
    #: A wait right after every notify (a self-test's negative control; 0 in a real measurement; absent before 0.2).
    planted_after_us: Any = None
    placement: Any = None
    notifier_cpu: Any = None
    waiter_cpu: Any = None
    mode: Any = None
    interval_us: Any = None

    @property
    def open_loop(self) -> bool:
        return self.mode == "open"


@dataclasses.dataclass(frozen=True)
class Conditions(Record):
    """``conditions``: the load and scheduling the run added (busy threads and processes, switch interval, idle hold,
    realtime policies, mlock); ``applied_idle_hold`` True unless the run says the hold could not be taken."""

    present: bool = _present()
    #: Kept whole for readers that keep it opaque (a pyperf export's metadata).
    recorded: Mapping[str, object] = _recorded()
    cpu_threads: Any = None
    cpu_procs: Any = None
    switch_interval_s: Any = None
    idle_hold: Any = None
    applied_idle_hold: Any = True
    waiter_policy: Any = None
    waiter_priority: Any = None
    notifier_policy: Any = None
    notifier_priority: Any = None
    mlock: Any = None

    def policy(self, role: str) -> Any:
        """``waiter`` or ``notifier``'s scheduling policy (None: not asked for)."""
        return self.waiter_policy if role == "waiter" else self.notifier_policy

    def priority(self, role: str) -> Any:
        return self.waiter_priority if role == "waiter" else self.notifier_priority


@dataclasses.dataclass(frozen=True)
class Execution(Record):
    """``execution``: how the arms ran (worker processes or in-process, repetitions, compare-grade)."""

    present: bool = _present()
    mode: Any = None
    workers: Any = None
    repeat: Any = None
    rigorous: Any = None
    #: The interpreter the workers ran, when it is not the runner's own (``--python``).
    python: Any = None

    @property
    def in_process(self) -> bool:
        return self.mode == "in-process"

    @property
    def repetitions(self) -> int:
        """How many repetitions the run measured (1 when it does not say)."""
        return self.repeat or 1


@dataclasses.dataclass(frozen=True)
class Machine(Record):
    """``machine``: where the run measured."""

    present: bool = _present()
    os: Any = None
    kernel: Any = None
    architecture: Any = None
    cpu_model: Any = None
    cpu_count: Any = None
    cpus_allowed: Any = None
    hostname: Any = None
    #: An id of the machine, where a bundle records one: not in summary.schema.json (no wakelab writes it; the section
    #: takes keys it does not name), kept by the history to tell machines apart.
    machine_id: Any = None


@dataclasses.dataclass(frozen=True)
class HarnessCost(Record):
    """``timer.harness``: the bookkeeping each sample costs against a bare pair of clock reads."""

    EMPTY_IS_ABSENT = True
    per_sample_ns: Any = None
    bare_pair_ns: Any = None
    overhead_ratio: Any = None


@dataclasses.dataclass(frozen=True)
class Timer(Record):
    """``timer``: the clock and its back-to-back floor (ns)."""

    present: bool = _present()
    clock: Any = None
    implementation: Any = None
    floor_p50_ns: Any = None
    floor_min_ns: Any = None
    resolution_ns: Any = None
    harness: Optional[HarnessCost] = None


@dataclasses.dataclass(frozen=True)
class IdleState(Record):
    """One CPU idle state the run saw (``system.idle_states``): its name, exit latency (µs), whether it was disabled."""

    name: Any = None
    exit_latency_us: Any = None
    disabled: Any = None


@dataclasses.dataclass(frozen=True)
class System(Record):
    """``system``: the clock source, CPU idle and frequency settings, load and hypervisor the run saw."""

    present: bool = _present()
    #: Kept whole: the report lists every setting, those it does not know too.
    recorded: Mapping[str, object] = _recorded()
    clocksource: Any = None
    cpuidle_driver: Any = None
    cpuidle_governor: Any = None
    cpufreq_governor: Any = None
    idle_states: Any = None
    load_average: Any = None
    hypervisor: Any = None
    smt_active: Any = None
    isolated_cpus: Any = None
    nohz_full: Any = None

    @property
    def states(self) -> Tuple[IdleState, ...]:
        """The recorded idle states, in order (entries that are not records left out)."""
        states = self.idle_states if isinstance(self.idle_states, list) else []
        return tuple(IdleState.from_dict(s) for s in states if isinstance(s, Mapping))


@dataclasses.dataclass(frozen=True)
class Tracing(Record):
    """``tracing``: whether the run asked to split each wake at the scheduler's events (``--trace``), whether it did,
    with which tool, and why not."""

    requested: Any = None
    traced: Any = None
    tool: Any = None
    reason: Any = None


@dataclasses.dataclass(frozen=True)
class Reading(Record):
    """One reading of the machine (``observed.start`` / ``observed.end``), each CPU's settings by CPU number; a value as
    stored (None: not readable), a map empty where it is not one."""

    load_average: Any = None
    cpu_mhz: Mapping[str, float] = dataclasses.field(default_factory=dict)
    cpufreq_governors: Mapping[str, str] = dataclasses.field(default_factory=dict)
    cpuidle_governor: Any = None
    #: The names of the idle states disabled on each CPU (empty where none is).
    idle_disabled: Mapping[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def load_1min(self) -> Optional[float]:
        """The 1-minute load average (None: not recorded)."""
        values = self.load_average
        return float(values[0]) if isinstance(values, list) and values and isinstance(values[0], (int, float)) else None


@dataclasses.dataclass(frozen=True)
class ObservedProcess(Record):
    """A process other than the run's own that was busy while it measured (``observed.busy_processes``), as stored."""

    pid: Any = None
    name: Any = None
    cpu_share: Any = None
    started_during_run: Any = None


@dataclasses.dataclass(frozen=True)
class Observed(Record):
    """``observed``: what the machine was doing while the run measured, read at its start and its end (an observation,
    never a condition of the run); each CPU's busy share and the busy processes between the readings."""

    EMPTY_IS_ABSENT = True
    start: Optional[Reading] = None
    end: Optional[Reading] = None
    cpu_busy: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: Busiest first (None: not readable).
    busy_processes: Optional[Tuple[ObservedProcess, ...]] = None


@dataclasses.dataclass(frozen=True)
class Soak(Record):
    """``soak``: a run of a given duration in consecutive workers, its figures exact or from a log-linear histogram."""

    EMPTY_IS_ABSENT = True
    duration_s: Any = None
    elapsed_s: Any = None
    chunks: Any = None
    finished: Any = None
    raw_kept: Any = None
    raw_kept_slices: Any = None
    #: Which figures come from the histogram (a list of their names; empty: every figure is exact).
    from_histogram: Any = json_field("figures.from_histogram", default=None)
    significant_digits: Any = json_field("histogram.significant_digits", default=None)
    relative_error: Any = json_field("histogram.relative_error", default=None)


__all__ = ["Conditions", "Execution", "HarnessCost", "LabInfo", "Machine", "Observed", "ObservedProcess", "Parameters", "Reading", "Soak",
           "System", "Timer"]
