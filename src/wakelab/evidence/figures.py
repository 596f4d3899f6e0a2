"""The figures of one arm as the evidence records them: latency and rate figures, where a traced arm's time goes,
and the spreads of its medians and CPUs."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Tuple

from wakelab.evidence.bundle import Of, Record, T, json_field, json_meta

LATENCY = "latency"
RATE = "rate"


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
    ns_per_op: Optional[float] = None  # the median round's


@dataclasses.dataclass(frozen=True)
class ComponentBand(Record):
    """Where the wakes ranked in one band go (``at_p50``: 45th to 55th percentile, ``at_p99``: the tail): their mean
    latency, each component's mean (they sum to it, up to rounding; a part stored as null is left out), and ``gil_wait``
    by re-block cause (None: a band from before re-blocks were named)."""

    wakes: int = dataclasses.field(metadata=json_meta(read=_count))
    latency_ns: Optional[float]
    parts_ns: Mapping[str, float] = dataclasses.field(metadata=json_meta(read=lambda value: {
        str(k): float(v) for k, v in value.items() if v is not None} if isinstance(value, Mapping) else {}))
    reblocks_ns: Optional[Mapping[str, float]] = json_field(omit_none=True, default=None)


@dataclasses.dataclass(frozen=True)
class ReblockCause(Record):
    """One re-block cause (``ON/WHO``) over a traced arm's wakes."""

    wakes: int = dataclasses.field(metadata=json_meta(read=_count))
    total_ns: int = dataclasses.field(metadata=json_meta(read=_count))
    p50_ns: Optional[float]


@dataclasses.dataclass(frozen=True)
class TraceHolder(Record):
    """Who held what a traced arm's waiter re-blocked on, in how many wakes, and the re-blocks' time in all."""

    on: str = dataclasses.field(metadata=json_meta(read=str))
    role: str
    tids: Tuple[Any, ...]
    wakes: Any
    asleep_ns: Any = None


#: A component's own percentiles (``p50_ns``, ``p90_ns``, ``p99_ns``, ``mean_ns``, ``max_ns``; None: no wakes).
ComponentPercentiles = Mapping[str, Optional[float]]


@dataclasses.dataclass(frozen=True)
class TraceComponents(Record):
    """``trace.components``: where a traced arm's wakes go (computed by ``wakelab.analysis.components``): each
    component's (and ``scheduler``'s) own ``percentiles``, which do not sum, and the bands, which do; who held what the
    waiter re-blocked on, most time first."""

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
    """Where an arm's time goes (a run with ``--trace``): ``reason`` says why an arm was not split; ``components`` holds
    the split, the overhead is the traced pass's p50 against the untraced ones (before it and after)."""

    traced: bool = json_field(read=lambda value: value is True)
    reason: Optional[str] = json_field(read=lambda value: value if isinstance(value, str) else None)
    untraced_p50_ns: Optional[float] = json_field("overhead.untraced_p50_ns", default=None)
    traced_p50_ns: Optional[float] = json_field("overhead.traced_p50_ns", default=None)
    overhead_ratio: Optional[float] = json_field("overhead.ratio", default=None)
    components: TraceComponents = dataclasses.field(default_factory=TraceComponents)
    untraced_after_p50_ns: Optional[float] = json_field("overhead.untraced_after_p50_ns", default=None)
    lost_events: int = 0  # perf's
    #: The sampled Python frames (``--trace-frames``), as stored (see :mod:`wakelab.analysis.frames`).
    frames: Mapping[str, object] = dataclasses.field(default_factory=dict)

    # The counts and the bands, read from ``components``: a band's mean latency, its parts, and its re-blocks by cause.
    wakes = _OfComponents(lambda c: c.wakes)
    fully_attributed = _OfComponents(lambda c: c.fully_attributed)
    with_gil_cycles = _OfComponents(lambda c: c.with_gil_cycles)  # wakes re-blocked
    #: Switch-ins placed at the waiter's return from its call.
    inferred_switch_ins = _OfComponents(lambda c: c.inferred_switch_ins)
    cross_cpu_fraction = _OfComponents(lambda c: c.cross_cpu_fraction)
    from_idle_fraction = _OfComponents(lambda c: c.from_idle_fraction)
    holders = _OfComponents(lambda c: c.holders)
    at_p50_ns = _OfComponents(lambda c: c.at_p50.latency_ns if c.at_p50 else None)
    at_p99_ns = _OfComponents(lambda c: c.at_p99.latency_ns if c.at_p99 else None)
    at_p50 = _OfComponents(lambda c: c.at_p50.parts_ns if c.at_p50 else _NO_PARTS)
    at_p99 = _OfComponents(lambda c: c.at_p99.parts_ns if c.at_p99 else _NO_PARTS)
    at_p50_reblocks = _OfComponents(lambda c: c.at_p50.reblocks_ns if c.at_p50 else None)
    at_p99_reblocks = _OfComponents(lambda c: c.at_p99.reblocks_ns if c.at_p99 else None)

    @property
    def has_bands(self) -> bool:
        return self.at_p50_ns is not None or bool(self.at_p50)


@dataclasses.dataclass(frozen=True)
class RepetitionSpread(Record):
    """``repetitions``: how many an arm had, and each one's own figure (p50 or ops/s) with their range (``range_pct``:
    (largest - smallest) / their median, in percent; a run of one repetition has none)."""

    EMPTY_IS_ABSENT = True
    count: Any = None
    has_spread: bool = json_field("spread", lambda value: isinstance(value, Mapping) and bool(value), default=False)
    values: Tuple[Any, ...] = json_field("spread.values", default=())
    range_pct: Any = json_field("spread.range_pct", default=None)


@dataclasses.dataclass(frozen=True)
class MedianSpread(Record):
    """``spread``: how far apart an arm's own medians (``of``: p50_ns, ops_per_s) are (``between``: its workers or
    repetitions): largest over smallest."""

    EMPTY_IS_ABSENT = True
    max_over_min: Optional[float] = None
    of: Any = None
    between: Any = None


@dataclasses.dataclass(frozen=True)
class CpuSide(Record):
    """The wakes of one side of a CPU split (``recorded`` False: the split lacks the side)."""

    n: Any = 0
    p50_ns: Any = None
    p99_ns: Any = None
    recorded: bool = json_field("", lambda value: isinstance(value, Mapping), default=True)


@dataclasses.dataclass(frozen=True)
class CpuSplit(Record):
    """``cpu_split``: an arm's wakes by where they ran -- notifier and waiter on the same CPU, or on two (``unknown``: their
    CPUs were not both read)."""

    EMPTY_IS_ABSENT = True
    same_cpu: CpuSide
    cross_cpu: CpuSide
    cross_share: Any = None
    unknown: Any = None
