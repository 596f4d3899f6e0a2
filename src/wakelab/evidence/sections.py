"""Typed records of summary.json's run-wide sections, as :class:`wakelab.evidence.model.Bundle` hands them out.

A field holds the value as the evidence stored it -- an int stays an int, a missing one is None -- so that a renderer
that writes it shows exactly what was recorded; ``present`` says whether the section was recorded at all (older bundles
lack some).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Tuple

from wakelab.evidence.bundle import Record, json_field, read_as


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
        return self.title or self.id


@dataclasses.dataclass(frozen=True)
class Parameters(Record):
    """``parameters``: what every arm was measured with."""

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
    #: A wait after every notify: a self-test's negative control (0 in a real measurement; absent before 0.2).
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
    """``conditions``: the load and scheduling the run added; ``applied_idle_hold`` True unless the run says the hold
    could not be taken.  ``recorded`` is kept whole for readers that keep it opaque (a pyperf export's metadata)."""

    present: bool = _present()
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
        return getattr(self, role + "_policy")

    def priority(self, role: str) -> Any:
        return getattr(self, role + "_priority")


@dataclasses.dataclass(frozen=True)
class Execution(Record):
    """``execution``: how the arms ran; ``python`` the interpreter the workers ran, when not the runner's own."""

    present: bool = _present()
    mode: Any = None
    workers: Any = None
    repeat: Any = None
    rigorous: Any = None
    python: Any = None

    @property
    def in_process(self) -> bool:
        return self.mode == "in-process"

    @property
    def repetitions(self) -> int:
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
    #: Not in summary.schema.json (no wakelab writes it): kept by the history to tell machines apart where recorded.
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
    """One CPU idle state the run saw (``system.idle_states``)."""

    name: Any = None
    exit_latency_us: Any = None
    disabled: Any = None


@dataclasses.dataclass(frozen=True)
class System(Record):
    """``system``: the clock source, CPU idle and frequency settings, load and hypervisor the run saw (``recorded``
    whole: the report lists every setting, those it does not know too)."""

    present: bool = _present()
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
        return read_as(Tuple[IdleState, ...], self.idle_states)


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
    """One reading of the machine (``observed.start`` / ``observed.end``), each CPU's settings by CPU number (a map is
    empty where it was not read)."""

    load_average: Any = None
    cpu_mhz: Mapping[str, float] = dataclasses.field(default_factory=dict)
    cpufreq_governors: Mapping[str, str] = dataclasses.field(default_factory=dict)
    cpuidle_governor: Any = None
    idle_disabled: Mapping[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict)  # disabled idle states' names

    @property
    def load_1min(self) -> Optional[float]:
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
    never a condition of the run); each CPU's busy share and the busy processes (busiest first) between the readings."""

    EMPTY_IS_ABSENT = True
    start: Optional[Reading] = None
    end: Optional[Reading] = None
    cpu_busy: Mapping[str, float] = dataclasses.field(default_factory=dict)
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
    #: The names of the figures that come from the histogram (empty: every figure is exact).
    from_histogram: Any = json_field("figures.from_histogram", default=None)
    significant_digits: Any = json_field("histogram.significant_digits", default=None)
    relative_error: Any = json_field("histogram.relative_error", default=None)
