"""The figures of one arm as the evidence records them: latency and rate figures, where a traced arm's time goes,
and the spreads of its medians and CPUs.

Part of the typed evidence model (:mod:`wakelab.evidence.model` re-exports every name): each record is parsed once from
its part of an arm's entry (:meth:`from_dict`) and read as attributes.  Stdlib only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Tuple

from wakelab.evidence.bundle import Of, Record, T, json_field, json_meta

LATENCY = "latency"
RATE = "rate"
PERCENTILE_KEYS = ("p50", "p90", "p99", "p99_9")


def _count(value: object) -> int:
    """A count as stored: a whole number, 0 for anything else (a bool too)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclasses.dataclass(frozen=True)
class LatencyFigures(Record):
    """One latency arm's figures, in nanoseconds (None: too few wakes; ``omitted`` says why)."""

    n: int
    lost: int
    min_ns: Optional[int]
    max_ns: Optional[int]
    mean_ns: Optional[float]
    stdev_ns: Optional[float]
    p50_ns: Optional[float]
    p90_ns: Optional[float]
    p99_ns: Optional[float]
    p99_9_ns: Optional[float]
    omitted: Mapping[str, str] = dataclasses.field(metadata=json_meta(read=lambda value: dict(value or {})))

    def percentile_ns(self, key: str) -> Optional[float]:
        """``p50``, ``p90``, ``p99`` or ``p99_9``."""
        if key not in PERCENTILE_KEYS:
            raise KeyError(key)
        value: Optional[float] = getattr(self, key + "_ns")
        return value


@dataclasses.dataclass(frozen=True)
class RateFigures(Record):
    """One rate arm's figures: operations per second per round."""

    rounds: int
    n_per_round: int
    ops_per_s: float
    min_ops_per_s: float
    max_ops_per_s: float
    baseline_ops_per_s: float
    net_ns_per_op: Optional[float]
    #: The median round's time per operation (ns).
    ns_per_op: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class ComponentBand(Record):
    """Where the wakes ranked in one band go (``at_p50``: 45th to 55th percentile, ``at_p99``: the tail).

    ``latency_ns`` is their mean latency, ``parts_ns`` each component's mean (they sum to it, up to rounding; a part
    stored as null is left out); ``reblocks_ns`` splits ``gil_wait`` by re-block cause (None: a band from before
    re-blocks were named).
    """

    wakes: int = dataclasses.field(metadata=json_meta(read=_count))
    latency_ns: Optional[float]
    parts_ns: Mapping[str, float] = dataclasses.field(metadata=json_meta(read=lambda value: {
        str(k): float(v) for k, v in value.items() if v is not None} if isinstance(value, Mapping) else {}))
    reblocks_ns: Optional[Mapping[str, float]] = json_field(omit_none=True, default=None)


@dataclasses.dataclass(frozen=True)
class ReblockCause(Record):
    """One re-block cause (``ON/WHO``) over a traced arm's wakes: in how many, its time in all, its p50 where present (ns)."""

    wakes: int = dataclasses.field(metadata=json_meta(read=_count))
    total_ns: int = dataclasses.field(metadata=json_meta(read=_count))
    p50_ns: Optional[float]


@dataclasses.dataclass(frozen=True)
class TraceHolder(Record):
    """Who held what a traced arm's waiter re-blocked on: what (``on``), who (``role``), their thread ids, in how
    many wakes, and the re-blocks' time in all (ns; None when the bundle did not record it)."""

    on: str = dataclasses.field(metadata=json_meta(read=str))
    role: str
    tids: Tuple[Any, ...] = dataclasses.field(metadata=json_meta(read=lambda value: tuple(value or ())))
    wakes: Any
    asleep_ns: Any = None


#: A component's own percentiles (``p50_ns``, ``p90_ns``, ``p99_ns``, ``mean_ns``, ``max_ns``; None: no wakes).
ComponentPercentiles = Mapping[str, Optional[float]]


@dataclasses.dataclass(frozen=True)
class TraceComponents(Record):
    """``trace.components``: where a traced arm's wakes go (computed by ``wakelab.analysis.components``).

    ``percentiles``: each component's (and ``scheduler``'s) own figures -- these do not sum; ``at_p50`` / ``at_p99``:
    the bands (:class:`ComponentBand`) -- these do; ``causes``: each re-block cause's figures; ``holders``: who held
    what the waiter re-blocked on, most time first.
    """

    wakes: int = 0
    fully_attributed: int = 0
    with_gil_cycles: int = 0
    from_idle_fraction: Optional[float] = None
    cross_cpu_fraction: Optional[float] = None
    parked_at_t0_fraction: Optional[float] = json_field(read=lambda value: float(value) if isinstance(value, (int, float)) else None,
                                                        default=None)
    inferred_switch_ins: int = 0
    percentiles: Mapping[str, ComponentPercentiles] = dataclasses.field(default_factory=dict)
    at_p50: Optional[ComponentBand] = None
    at_p99: Optional[ComponentBand] = None
    causes: Mapping[str, ReblockCause] = json_field("reblocks.causes", default_factory=dict)
    holders: Tuple[TraceHolder, ...] = json_field("reblocks.holders", default=())


class _OfComponents(Of[TraceComponents, T]):
    record = "components"


_NO_PARTS: Mapping[str, float] = {}


@dataclasses.dataclass(frozen=True)
class TraceFigures(Record):
    """Where an arm's time goes (a run with ``--trace``; see ``wakelab.analysis.components``).

    ``traced`` False: ``reason`` says why the arm was not split.  Otherwise ``components`` (:class:`TraceComponents`)
    holds the split as the analysis computed it: ``at_p50`` / ``at_p99`` map each component (notify, sched_wake,
    sched_queue, gil_wait, interpreter, unattributed) to its mean in ns over the wakes ranked around the median / at the
    tail (they sum to ``at_p50_ns`` / ``at_p99_ns``); ``percentiles`` are each component's own p50/p90/p99; the overhead
    is the traced pass's p50 against the untraced one.
    """

    traced: bool = json_field(read=lambda value: value is True)
    reason: Optional[str] = json_field(read=lambda value: value if isinstance(value, str) else None)
    untraced_p50_ns: Optional[float] = json_field("overhead.untraced_p50_ns", default=None)
    traced_p50_ns: Optional[float] = json_field("overhead.traced_p50_ns", default=None)
    overhead_ratio: Optional[float] = json_field("overhead.ratio", default=None)
    components: TraceComponents = dataclasses.field(default_factory=TraceComponents)
    #: The untraced p50 measured again after the traced pass (ns).
    untraced_after_p50_ns: Optional[float] = json_field("overhead.untraced_after_p50_ns", default=None)
    #: Events perf dropped.
    lost_events: int = 0
    #: The sampled Python frames (``--trace-frames``), as stored (see :mod:`wakelab.analysis.frames`).
    frames: Mapping[str, object] = dataclasses.field(default_factory=dict)

    # The counts and the bands, read from ``components``: a band's mean latency, its parts, and its re-blocks by cause
    # (mean ns; they sum to its ``gil_wait``; None for a band from before re-blocks were named, or no band).
    wakes = _OfComponents(lambda c: c.wakes)
    fully_attributed = _OfComponents(lambda c: c.fully_attributed)
    #: Wakes re-blocked.
    with_gil_cycles = _OfComponents(lambda c: c.with_gil_cycles)
    #: Switch-ins placed at the waiter's return from its call.
    inferred_switch_ins = _OfComponents(lambda c: c.inferred_switch_ins)
    cross_cpu_fraction = _OfComponents(lambda c: c.cross_cpu_fraction)
    from_idle_fraction = _OfComponents(lambda c: c.from_idle_fraction)
    percentiles = _OfComponents(lambda c: c.percentiles)
    #: Who held what the waiter re-blocked on, most time first.
    holders = _OfComponents(lambda c: c.holders)
    at_p50_ns = _OfComponents(lambda c: c.at_p50.latency_ns if c.at_p50 else None)
    at_p99_ns = _OfComponents(lambda c: c.at_p99.latency_ns if c.at_p99 else None)
    at_p50 = _OfComponents(lambda c: c.at_p50.parts_ns if c.at_p50 else _NO_PARTS)
    at_p99 = _OfComponents(lambda c: c.at_p99.parts_ns if c.at_p99 else _NO_PARTS)
    at_p50_reblocks = _OfComponents(lambda c: c.at_p50.reblocks_ns if c.at_p50 else None)
    at_p99_reblocks = _OfComponents(lambda c: c.at_p99.reblocks_ns if c.at_p99 else None)

    @property
    def has_bands(self) -> bool:
        """True when the split recorded where the median wake goes (``at_p50``)."""
        return self.at_p50_ns is not None or bool(self.at_p50)


@dataclasses.dataclass(frozen=True)
class RepetitionSpread(Record):
    """``repetitions``: how many repetitions an arm had, and each one's own figure (p50 or ops/s) with their range.

    ``range_pct`` is (largest - smallest) / their median, in percent.
    """

    EMPTY_IS_ABSENT = True
    count: Any = None
    #: The repetitions' spread was recorded (a run of one repetition has none).
    has_spread: bool = json_field("spread", lambda value: isinstance(value, Mapping) and bool(value), default=False)
    values: Tuple[Any, ...] = json_field("spread.values", default=())
    range_pct: Any = json_field("spread.range_pct", default=None)


@dataclasses.dataclass(frozen=True)
class MedianSpread(Record):
    """``spread``: how far apart an arm's own medians are (each worker's, or each repetition's): largest over smallest.

    ``of`` names the figure (``p50_ns``, ``ops_per_s``), ``between`` what they are of (``workers``, ``repetitions``).
    """

    EMPTY_IS_ABSENT = True
    max_over_min: Optional[float] = None
    of: Any = None
    between: Any = None


@dataclasses.dataclass(frozen=True)
class CpuSide(Record):
    """The wakes of one side of a CPU split: how many, their p50 and p99 (ns); ``recorded`` False when the split lacks the side."""

    n: Any = 0
    p50_ns: Any = None
    p99_ns: Any = None
    recorded: bool = json_field("", lambda value: isinstance(value, Mapping), default=True)


@dataclasses.dataclass(frozen=True)
class CpuSplit(Record):
    """``cpu_split``: an arm's wakes by where they ran -- notifier and waiter on the same CPU, or on two."""

    EMPTY_IS_ABSENT = True
    same_cpu: CpuSide
    cross_cpu: CpuSide
    cross_share: Any = None
    #: Wakes whose CPUs were not both read.
    unknown: Any = None


__all__ = ["ComponentBand", "ComponentPercentiles", "CpuSide", "CpuSplit", "LATENCY", "LatencyFigures", "MedianSpread",
           "PERCENTILE_KEYS", "RATE", "RateFigures", "ReblockCause", "RepetitionSpread", "TraceComponents", "TraceFigures",
           "TraceHolder"]
