"""The figures of one arm as the evidence records them: latency and rate figures, where a traced arm's time goes,
and the spreads of its medians and CPUs.

Part of the typed evidence model (:mod:`wakelab.evidence.model` re-exports every name): each record is parsed
once from its part of an arm's entry (:meth:`from_dict`) and read as attributes.  Stdlib only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

LATENCY = "latency"
RATE = "rate"
PERCENTILE_KEYS = ("p50", "p90", "p99", "p99_9")


def _opt_float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def _opt_int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclasses.dataclass(frozen=True)
class LatencyFigures:
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
    omitted: Mapping[str, str]

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "LatencyFigures":
        return cls(
            n=int(doc.get("n") or 0),
            lost=int(doc.get("lost") or 0),
            min_ns=_opt_int(doc.get("min_ns")),
            max_ns=_opt_int(doc.get("max_ns")),
            mean_ns=_opt_float(doc.get("mean_ns")),
            stdev_ns=_opt_float(doc.get("stdev_ns")),
            p50_ns=_opt_float(doc.get("p50_ns")),
            p90_ns=_opt_float(doc.get("p90_ns")),
            p99_ns=_opt_float(doc.get("p99_ns")),
            p99_9_ns=_opt_float(doc.get("p99_9_ns")),
            omitted=dict(doc.get("omitted") or {}),
        )

    def percentile_ns(self, key: str) -> Optional[float]:
        """``p50``, ``p90``, ``p99`` or ``p99_9``."""
        if key not in PERCENTILE_KEYS:
            raise KeyError(key)
        value: Optional[float] = getattr(self, key + "_ns")
        return value


@dataclasses.dataclass(frozen=True)
class RateFigures:
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

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "RateFigures":
        return cls(
            rounds=int(doc.get("rounds") or 0),
            n_per_round=int(doc.get("n_per_round") or 0),
            ops_per_s=float(doc.get("ops_per_s") or 0.0),
            min_ops_per_s=float(doc.get("min_ops_per_s") or 0.0),
            max_ops_per_s=float(doc.get("max_ops_per_s") or 0.0),
            baseline_ops_per_s=float(doc.get("baseline_ops_per_s") or 0.0),
            net_ns_per_op=_opt_float(doc.get("net_ns_per_op")),
            ns_per_op=_opt_float(doc.get("ns_per_op")),
        )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclasses.dataclass(frozen=True)
class ComponentBand:
    """Where the wakes ranked in one band go (``at_p50``: 45th to 55th percentile, ``at_p99``: the tail).

    ``latency_ns`` is their mean latency, ``parts_ns`` each component's mean (they sum to it, up to
    rounding); ``reblocks_ns`` splits ``gil_wait`` by re-block cause (None: a band from before
    re-blocks were named).
    """

    wakes: int
    latency_ns: Optional[float]
    parts_ns: Mapping[str, float]
    reblocks_ns: Optional[Mapping[str, float]] = None

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {"wakes": self.wakes, "latency_ns": self.latency_ns, "parts_ns": dict(self.parts_ns)}
        if self.reblocks_ns is not None:
            out["reblocks_ns"] = dict(self.reblocks_ns)
        return out

    @classmethod
    def from_dict(cls, doc: object) -> Optional["ComponentBand"]:
        if not isinstance(doc, Mapping):
            return None
        parts = _mapping(doc.get("parts_ns"))
        found = doc.get("reblocks_ns")
        return cls(
            wakes=_count(doc.get("wakes")),
            latency_ns=_opt_float(doc.get("latency_ns")),
            parts_ns={str(k): float(v) for k, v in parts.items() if _opt_float(v) is not None},
            reblocks_ns={str(k): float(v or 0.0) for k, v in found.items()} if isinstance(found, Mapping) else None,
        )


@dataclasses.dataclass(frozen=True)
class ReblockCause:
    """One re-block cause (``ON/WHO``) over a traced arm's wakes: in how many, its time in all, its p50 where present (ns)."""

    wakes: int
    total_ns: int
    p50_ns: Optional[float]

    def to_dict(self) -> Dict[str, object]:
        return {"wakes": self.wakes, "total_ns": self.total_ns, "p50_ns": self.p50_ns}

    @classmethod
    def from_dict(cls, doc: object) -> "ReblockCause":
        d = _mapping(doc)
        return cls(_count(d.get("wakes")), _count(d.get("total_ns")), _opt_float(d.get("p50_ns")))


@dataclasses.dataclass(frozen=True)
class TraceHolder:
    """Who held what a traced arm's waiter re-blocked on: what (``on``), who (``role``), their thread ids, in how
    many wakes, and the re-blocks' time in all (ns; None when the bundle did not record it)."""

    on: str
    role: str
    tids: Tuple[Any, ...]
    wakes: Any
    asleep_ns: Any = None

    def to_dict(self) -> Dict[str, object]:
        return {"on": self.on, "role": self.role, "tids": list(self.tids), "wakes": self.wakes, "asleep_ns": self.asleep_ns}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "TraceHolder":
        return cls(str(doc.get("on")), str(doc.get("role") or ""), tuple(doc.get("tids") or ()), doc.get("wakes"),
                   doc.get("asleep_ns"))


#: A component's own percentiles (``p50_ns``, ``p90_ns``, ``p99_ns``, ``mean_ns``, ``max_ns``; None: no wakes).
ComponentPercentiles = Mapping[str, Optional[float]]


@dataclasses.dataclass(frozen=True)
class TraceComponents:
    """``trace.components``: where a traced arm's wakes go (computed by ``wakelab.analysis.components``).

    ``percentiles``: each component's (and ``scheduler``'s) own figures -- these do not sum;
    ``at_p50`` / ``at_p99``: the bands (:class:`ComponentBand`) -- these do; ``causes``: each
    re-block cause's figures; ``holders``: who held what the waiter re-blocked on, most time first.
    """

    wakes: int = 0
    fully_attributed: int = 0
    with_gil_cycles: int = 0
    from_idle_fraction: Optional[float] = None
    cross_cpu_fraction: Optional[float] = None
    parked_at_t0_fraction: Optional[float] = None
    inferred_switch_ins: int = 0
    percentiles: Mapping[str, ComponentPercentiles] = dataclasses.field(default_factory=dict)
    at_p50: Optional[ComponentBand] = None
    at_p99: Optional[ComponentBand] = None
    causes: Mapping[str, ReblockCause] = dataclasses.field(default_factory=dict)
    holders: Tuple[TraceHolder, ...] = ()

    def to_dict(self) -> Dict[str, object]:
        return {
            "wakes": self.wakes,
            "fully_attributed": self.fully_attributed,
            "with_gil_cycles": self.with_gil_cycles,
            "from_idle_fraction": self.from_idle_fraction,
            "cross_cpu_fraction": self.cross_cpu_fraction,
            "parked_at_t0_fraction": self.parked_at_t0_fraction,
            "inferred_switch_ins": self.inferred_switch_ins,
            "percentiles": {name: dict(figures) for name, figures in self.percentiles.items()},
            "at_p50": self.at_p50.to_dict() if self.at_p50 is not None else None,
            "at_p99": self.at_p99.to_dict() if self.at_p99 is not None else None,
            "reblocks": {"causes": {cause: c.to_dict() for cause, c in self.causes.items()},
                         "holders": [h.to_dict() for h in self.holders]},
        }

    @classmethod
    def from_dict(cls, doc: object) -> "TraceComponents":
        comps = _mapping(doc)
        reblocks = _mapping(comps.get("reblocks"))
        return cls(
            wakes=_opt_int(comps.get("wakes")) or 0,
            fully_attributed=_opt_int(comps.get("fully_attributed")) or 0,
            with_gil_cycles=_opt_int(comps.get("with_gil_cycles")) or 0,
            from_idle_fraction=_opt_float(comps.get("from_idle_fraction")),
            cross_cpu_fraction=_opt_float(comps.get("cross_cpu_fraction")),
            parked_at_t0_fraction=_opt_float(comps.get("parked_at_t0_fraction")) if isinstance(
                comps.get("parked_at_t0_fraction"), (int, float)) else None,
            inferred_switch_ins=_opt_int(comps.get("inferred_switch_ins")) or 0,
            percentiles={
                str(name): {str(k): _opt_float(v) for k, v in figures.items()}
                for name, figures in _mapping(comps.get("percentiles")).items()
                if isinstance(figures, Mapping)
            },
            at_p50=ComponentBand.from_dict(comps.get("at_p50")),
            at_p99=ComponentBand.from_dict(comps.get("at_p99")),
            causes={str(k): ReblockCause.from_dict(v) for k, v in _mapping(reblocks.get("causes")).items()},
            holders=tuple(TraceHolder.from_dict(h) for h in reblocks.get("holders") or () if isinstance(h, Mapping)),
        )


@dataclasses.dataclass(frozen=True)
class TraceFigures:
    """Where an arm's time goes (a run with ``--trace``; see ``wakelab.analysis.components``).

    ``traced`` False: ``reason`` says why the arm was not split.  Otherwise ``components``
    (:class:`TraceComponents`) holds the split as the analysis computed it: ``at_p50`` /
    ``at_p99`` map each component (notify, sched_wake, sched_queue, gil_wait, interpreter,
    unattributed) to its mean in ns over the wakes ranked around the median / at the tail (they
    sum to ``at_p50_ns`` / ``at_p99_ns``); ``percentiles`` are each component's own
    p50/p90/p99; the overhead is the traced pass's p50 against the untraced one.
    """

    traced: bool
    reason: Optional[str]
    untraced_p50_ns: Optional[float] = None
    traced_p50_ns: Optional[float] = None
    overhead_ratio: Optional[float] = None
    components: TraceComponents = dataclasses.field(default_factory=TraceComponents)
    #: The untraced p50 measured again after the traced pass (ns).
    untraced_after_p50_ns: Optional[float] = None
    #: Events perf dropped.
    lost_events: int = 0
    #: The sampled Python frames (``--trace-frames``), as stored (see :mod:`wakelab.analysis.frames`).
    frames: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "TraceFigures":
        overhead = _mapping(doc.get("overhead"))
        return cls(
            traced=doc.get("traced") is True,
            reason=doc.get("reason") if isinstance(doc.get("reason"), str) else None,
            untraced_p50_ns=_opt_float(overhead.get("untraced_p50_ns")),
            traced_p50_ns=_opt_float(overhead.get("traced_p50_ns")),
            overhead_ratio=_opt_float(overhead.get("ratio")),
            components=TraceComponents.from_dict(doc.get("components")),
            untraced_after_p50_ns=_opt_float(overhead.get("untraced_after_p50_ns")),
            lost_events=_opt_int(doc.get("lost_events")) or 0,
            frames=_mapping(doc.get("frames")),
        )

    # The bands and counts, read from ``components``.
    @property
    def at_p50_ns(self) -> Optional[float]:
        band = self.components.at_p50
        return band.latency_ns if band is not None else None

    @property
    def at_p99_ns(self) -> Optional[float]:
        band = self.components.at_p99
        return band.latency_ns if band is not None else None

    @property
    def at_p50(self) -> Mapping[str, float]:
        band = self.components.at_p50
        return band.parts_ns if band is not None else {}

    @property
    def at_p99(self) -> Mapping[str, float]:
        band = self.components.at_p99
        return band.parts_ns if band is not None else {}

    @property
    def at_p50_reblocks(self) -> Optional[Mapping[str, float]]:
        """The median band's re-blocks by cause (mean ns; they sum to its ``gil_wait``); None for a band from
        before re-blocks were named (or no band)."""
        band = self.components.at_p50
        return band.reblocks_ns if band is not None else None

    @property
    def at_p99_reblocks(self) -> Optional[Mapping[str, float]]:
        band = self.components.at_p99
        return band.reblocks_ns if band is not None else None

    @property
    def percentiles(self) -> Mapping[str, ComponentPercentiles]:
        return self.components.percentiles

    @property
    def wakes(self) -> int:
        return self.components.wakes

    @property
    def fully_attributed(self) -> int:
        return self.components.fully_attributed

    @property
    def with_gil_cycles(self) -> int:
        """Wakes re-blocked."""
        return self.components.with_gil_cycles

    @property
    def inferred_switch_ins(self) -> int:
        """Switch-ins placed at the waiter's return from its call."""
        return self.components.inferred_switch_ins

    @property
    def cross_cpu_fraction(self) -> Optional[float]:
        return self.components.cross_cpu_fraction

    @property
    def from_idle_fraction(self) -> Optional[float]:
        return self.components.from_idle_fraction

    @property
    def holders(self) -> Tuple[TraceHolder, ...]:
        """Who held what the waiter re-blocked on, most time first."""
        return self.components.holders

    @property
    def has_bands(self) -> bool:
        """True when the split recorded where the median wake goes (``at_p50``)."""
        return self.at_p50_ns is not None or bool(self.at_p50)


@dataclasses.dataclass(frozen=True)
class RepetitionSpread:
    """``repetitions``: how many repetitions an arm had, and each one's own figure (p50 or ops/s) with their range.

    ``range_pct`` is (largest - smallest) / their median, in percent.
    """

    count: Any = None
    #: The repetitions' spread was recorded (a run of one repetition has none).
    has_spread: bool = False
    values: Tuple[Any, ...] = ()
    range_pct: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["RepetitionSpread"]:
        d = _mapping(doc)
        if not d:
            return None
        spread = _mapping(d.get("spread"))
        values = spread.get("values")
        return cls(d.get("count"), bool(spread), tuple(values) if isinstance(values, (list, tuple)) else (),
                   spread.get("range_pct"))


@dataclasses.dataclass(frozen=True)
class MedianSpread:
    """``spread``: how far apart an arm's own medians are (each worker's, or each repetition's): largest over smallest.

    ``of`` names the figure (``p50_ns``, ``ops_per_s``), ``between`` what they are of (``workers``, ``repetitions``).
    """

    max_over_min: Optional[float] = None
    of: Any = None
    between: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["MedianSpread"]:
        d = _mapping(doc)
        return cls(_opt_float(d.get("max_over_min")), d.get("of"), d.get("between")) if d else None


@dataclasses.dataclass(frozen=True)
class CpuSide:
    """The wakes of one side of a CPU split: how many, their p50 and p99 (ns); ``recorded`` False when the split lacks the side."""

    n: Any = 0
    p50_ns: Any = None
    p99_ns: Any = None
    recorded: bool = True

    @classmethod
    def from_dict(cls, doc: object) -> "CpuSide":
        d = _mapping(doc)
        return cls(d.get("n", 0), d.get("p50_ns"), d.get("p99_ns"), isinstance(doc, Mapping))


@dataclasses.dataclass(frozen=True)
class CpuSplit:
    """``cpu_split``: an arm's wakes by where they ran -- notifier and waiter on the same CPU, or on two."""

    same_cpu: CpuSide
    cross_cpu: CpuSide
    cross_share: Any = None
    #: Wakes whose CPUs were not both read.
    unknown: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["CpuSplit"]:
        d = _mapping(doc)
        if not d:
            return None
        return cls(CpuSide.from_dict(d.get("same_cpu")), CpuSide.from_dict(d.get("cross_cpu")), d.get("cross_share"),
                   d.get("unknown"))


__all__ = ["ComponentBand", "ComponentPercentiles", "CpuSide", "CpuSplit", "LATENCY", "LatencyFigures", "MedianSpread",
           "PERCENTILE_KEYS", "RATE", "RateFigures", "ReblockCause", "RepetitionSpread", "TraceComponents", "TraceFigures",
           "TraceHolder"]
