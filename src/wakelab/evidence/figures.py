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


@dataclasses.dataclass(frozen=True)
class TraceFigures:
    """Where an arm's time goes (a run with ``--trace``; see ``wakelab.analysis.components``).

    ``traced`` False: ``reason`` says why the arm was not split.  Otherwise
    ``at_p50`` / ``at_p99`` map each component (notify, sched_wake,
    sched_queue, gil_wait, interpreter, unattributed) to its mean in ns over
    the wakes ranked around the median / at the tail (they sum to
    ``at_p50_ns`` / ``at_p99_ns``); ``percentiles`` are each component's own
    p50/p90/p99; the overhead is the traced pass's p50 against the untraced one.
    """

    traced: bool
    reason: Optional[str]
    untraced_p50_ns: Optional[float] = None
    traced_p50_ns: Optional[float] = None
    overhead_ratio: Optional[float] = None
    at_p50_ns: Optional[float] = None
    at_p99_ns: Optional[float] = None
    at_p50: Mapping[str, float] = dataclasses.field(default_factory=dict)
    at_p99: Mapping[str, float] = dataclasses.field(default_factory=dict)
    percentiles: Mapping[str, Mapping[str, Optional[float]]] = dataclasses.field(default_factory=dict)
    wakes: int = 0
    fully_attributed: int = 0
    #: Each band's re-blocks by cause (mean ns; they sum to its ``gil_wait``); None for a band from before
    #: re-blocks were named (or no band).
    at_p50_reblocks: Optional[Mapping[str, float]] = None
    at_p99_reblocks: Optional[Mapping[str, float]] = None
    #: The untraced p50 measured again after the traced pass (ns).
    untraced_after_p50_ns: Optional[float] = None
    #: Events perf dropped; wakes re-blocked; switch-ins placed at the waiter's return from its call.
    lost_events: int = 0
    with_gil_cycles: int = 0
    inferred_switch_ins: int = 0
    cross_cpu_fraction: Optional[float] = None
    from_idle_fraction: Optional[float] = None
    #: Who held what the waiter re-blocked on, most time first.
    holders: Tuple["TraceHolder", ...] = ()
    #: The sampled Python frames (``--trace-frames``), as stored (see :mod:`wakelab.analysis.frames`).
    frames: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "TraceFigures":
        comps = doc.get("components") if isinstance(doc.get("components"), Mapping) else {}
        overhead = doc.get("overhead") if isinstance(doc.get("overhead"), Mapping) else {}
        assert isinstance(comps, Mapping) and isinstance(overhead, Mapping)

        def band(key: str) -> Tuple[Optional[float], Dict[str, float]]:
            value = comps.get(key)
            if not isinstance(value, Mapping):
                return None, {}
            parts = value.get("parts_ns") if isinstance(value.get("parts_ns"), Mapping) else {}
            assert isinstance(parts, Mapping)
            return _opt_float(value.get("latency_ns")), {
                str(k): float(v) for k, v in parts.items() if _opt_float(v) is not None
            }

        def causes(key: str) -> Optional[Dict[str, float]]:
            found = _mapping(comps.get(key)).get("reblocks_ns")
            return {str(k): float(v or 0.0) for k, v in found.items()} if isinstance(found, Mapping) else None

        p50_ns, p50 = band("at_p50")
        p99_ns, p99 = band("at_p99")
        raw_percentiles = comps.get("percentiles") if isinstance(comps.get("percentiles"), Mapping) else {}
        assert isinstance(raw_percentiles, Mapping)
        return cls(
            traced=doc.get("traced") is True,
            reason=doc.get("reason") if isinstance(doc.get("reason"), str) else None,
            untraced_p50_ns=_opt_float(overhead.get("untraced_p50_ns")),
            traced_p50_ns=_opt_float(overhead.get("traced_p50_ns")),
            overhead_ratio=_opt_float(overhead.get("ratio")),
            at_p50_ns=p50_ns,
            at_p99_ns=p99_ns,
            at_p50=p50,
            at_p99=p99,
            percentiles={
                str(name): {str(k): _opt_float(v) for k, v in figures.items()}
                for name, figures in raw_percentiles.items()
                if isinstance(figures, Mapping)
            },
            wakes=_opt_int(comps.get("wakes")) or 0,
            fully_attributed=_opt_int(comps.get("fully_attributed")) or 0,
            at_p50_reblocks=causes("at_p50"),
            at_p99_reblocks=causes("at_p99"),
            untraced_after_p50_ns=_opt_float(overhead.get("untraced_after_p50_ns")),
            lost_events=_opt_int(doc.get("lost_events")) or 0,
            with_gil_cycles=_opt_int(comps.get("with_gil_cycles")) or 0,
            inferred_switch_ins=_opt_int(comps.get("inferred_switch_ins")) or 0,
            cross_cpu_fraction=_opt_float(comps.get("cross_cpu_fraction")),
            from_idle_fraction=_opt_float(comps.get("from_idle_fraction")),
            holders=tuple(TraceHolder.from_dict(h) for h in _mapping(comps.get("reblocks")).get("holders") or ()
                          if isinstance(h, Mapping)),
            frames=_mapping(doc.get("frames")),
        )

    @property
    def has_bands(self) -> bool:
        """True when the split recorded where the median wake goes (``at_p50``)."""
        return self.at_p50_ns is not None or bool(self.at_p50)


@dataclasses.dataclass(frozen=True)
class TraceHolder:
    """Who held what a traced arm's waiter re-blocked on: what (``on``), who (``role``), their thread ids, in how many wakes."""

    on: str
    role: str
    tids: Tuple[Any, ...]
    wakes: Any

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "TraceHolder":
        return cls(str(doc.get("on")), str(doc.get("role") or ""), tuple(doc.get("tids") or ()), doc.get("wakes"))

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


__all__ = ["CpuSide", "CpuSplit", "LATENCY", "LatencyFigures", "MedianSpread", "PERCENTILE_KEYS", "RATE", "RateFigures",
           "RepetitionSpread", "TraceFigures", "TraceHolder"]
