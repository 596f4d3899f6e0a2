"""Typed records of summary.json's run-wide sections: the lab, its parameters, the conditions, how it executed,
the machine, the clock, the system, a soak.

Each is parsed once from its section (:meth:`from_dict`) and read by the renderers as attributes, never as a
dict.  A field holds the value as the evidence stored it -- an int stays an int, a missing one is None -- so
that a renderer that writes it shows exactly what was recorded; ``present`` says whether the section was
recorded at all (older bundles lack some).  :class:`wakelab.evidence.model.Bundle` hands them out.

Stdlib only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Tuple


def _section(doc: object) -> Mapping[str, Any]:
    return doc if isinstance(doc, Mapping) else {}


def _texts(value: object) -> Tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, (list, tuple)) else ()


@dataclasses.dataclass(frozen=True)
class LabInfo:
    """``lab``: which lab the run measured, its question, methodology and limits, and its reproduce script."""

    id: Any = None
    title: Any = None
    question: Any = None
    methodology: Tuple[str, ...] = ()
    limits: Tuple[str, ...] = ()
    reproduce_script: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> "LabInfo":
        d = _section(doc)
        return cls(d.get("id"), d.get("title"), d.get("question"), _texts(d.get("methodology")), _texts(d.get("limits")),
                   d.get("reproduce_script"))

    @property
    def name(self) -> Any:
        """The lab's title, else its id."""
        return self.title or self.id


@dataclasses.dataclass(frozen=True)
class Parameters:
    """``parameters``: what every arm was measured with (counts, settle, timeout, placement, loop)."""

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

    @classmethod
    def from_dict(cls, doc: object) -> "Parameters":
        d = _section(doc)
        return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})

    @property
    def open_loop(self) -> bool:
        return self.mode == "open"


@dataclasses.dataclass(frozen=True)
class Conditions:
    """``conditions``: the load and scheduling the run added (busy threads and processes, switch interval, idle hold,
    realtime policies, mlock); ``applied_idle_hold`` True unless the run says the hold could not be taken."""

    present: bool = False
    #: The section as recorded, whole (readers that keep it opaque: a pyperf export's metadata).
    recorded: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
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

    @classmethod
    def from_dict(cls, doc: object) -> "Conditions":
        d = _section(doc)
        values = {f.name: d.get(f.name) for f in dataclasses.fields(cls) if f.name not in ("present", "recorded", "applied_idle_hold")}
        return cls(present=bool(d), recorded=d, applied_idle_hold=d.get("applied_idle_hold", True), **values)

    def policy(self, role: str) -> Any:
        """``waiter`` or ``notifier``'s scheduling policy (None: not asked for)."""
        return self.waiter_policy if role == "waiter" else self.notifier_policy

    def priority(self, role: str) -> Any:
        return self.waiter_priority if role == "waiter" else self.notifier_priority


@dataclasses.dataclass(frozen=True)
class Execution:
    """``execution``: how the arms ran (worker processes or in-process, repetitions, compare-grade)."""

    present: bool = False
    mode: Any = None
    workers: Any = None
    repeat: Any = None
    rigorous: Any = None
    #: The interpreter the workers ran, when it is not the runner's own (``--python``).
    python: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> "Execution":
        d = _section(doc)
        return cls(bool(d), d.get("mode"), d.get("workers"), d.get("repeat"), d.get("rigorous"), d.get("python"))

    @property
    def in_process(self) -> bool:
        return self.mode == "in-process"

    @property
    def repetitions(self) -> int:
        """How many repetitions the run measured (1 when it does not say)."""
        return self.repeat or 1


@dataclasses.dataclass(frozen=True)
class Machine:
    """``machine``: where the run measured."""

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

    @classmethod
    def from_dict(cls, doc: object) -> "Machine":
        d = _section(doc)
        return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class HarnessCost:
    """``timer.harness``: the bookkeeping each sample costs against a bare pair of clock reads."""

    per_sample_ns: Any = None
    bare_pair_ns: Any = None
    overhead_ratio: Any = None


@dataclasses.dataclass(frozen=True)
class Timer:
    """``timer``: the clock and its back-to-back floor (ns)."""

    present: bool = False
    clock: Any = None
    implementation: Any = None
    floor_p50_ns: Any = None
    floor_min_ns: Any = None
    resolution_ns: Any = None
    harness: Optional[HarnessCost] = None

    @classmethod
    def from_dict(cls, doc: object) -> "Timer":
        d = _section(doc)
        harness = d.get("harness")
        cost = HarnessCost(harness.get("per_sample_ns"), harness.get("bare_pair_ns"), harness.get("overhead_ratio")) \
            if isinstance(harness, Mapping) and harness else None
        return cls(bool(d), d.get("clock"), d.get("implementation"), d.get("floor_p50_ns"), d.get("floor_min_ns"),
                   d.get("resolution_ns"), cost)


@dataclasses.dataclass(frozen=True)
class IdleState:
    """One CPU idle state the run saw (``system.idle_states``): its name, exit latency (µs), whether it was disabled."""

    name: Any = None
    exit_latency_us: Any = None
    disabled: Any = None


@dataclasses.dataclass(frozen=True)
class System:
    """``system``: the clock source, CPU idle and frequency settings, load and hypervisor the run saw."""

    present: bool = False
    #: The section as recorded, whole (the report lists every setting, those it does not know too).
    recorded: Mapping[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)
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

    @classmethod
    def from_dict(cls, doc: object) -> "System":
        d = _section(doc)
        return cls(present=bool(d), recorded=d,
                   **{f.name: d.get(f.name) for f in dataclasses.fields(cls) if f.name not in ("present", "recorded")})

    @property
    def states(self) -> Tuple[IdleState, ...]:
        """The recorded idle states, in order (entries that are not records left out)."""
        states = self.idle_states if isinstance(self.idle_states, list) else []
        return tuple(IdleState(s.get("name"), s.get("exit_latency_us"), s.get("disabled")) for s in states if isinstance(s, Mapping))


@dataclasses.dataclass(frozen=True)
class Tracing:
    """``tracing``: whether the run asked to split each wake at the scheduler's events (``--trace``), whether it did,
    with which tool, and why not."""

    requested: Any = None
    traced: Any = None
    tool: Any = None
    reason: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> "Tracing":
        d = _section(doc)
        return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})


@dataclasses.dataclass(frozen=True)
class Soak:
    """``soak``: a run of a given duration in consecutive workers, its figures exact or from a log-linear histogram."""

    duration_s: Any = None
    elapsed_s: Any = None
    chunks: Any = None
    finished: Any = None
    raw_kept: Any = None
    raw_kept_slices: Any = None
    #: Which figures come from the histogram (a list of their names; empty: every figure is exact).
    from_histogram: Any = None
    significant_digits: Any = None
    relative_error: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["Soak"]:
        """The soak record, or None for a run that was not a soak."""
        d = _section(doc)
        if not d:
            return None
        histogram, figures = _section(d.get("histogram")), _section(d.get("figures"))
        return cls(d.get("duration_s"), d.get("elapsed_s"), d.get("chunks"), d.get("finished"), d.get("raw_kept"),
                   d.get("raw_kept_slices"), figures.get("from_histogram"), histogram.get("significant_digits"),
                   histogram.get("relative_error"))


__all__ = ["Conditions", "Execution", "HarnessCost", "LabInfo", "Machine", "Parameters", "Soak", "System", "Timer"]
