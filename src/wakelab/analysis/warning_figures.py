"""A measurement-quality record's figures as a typed record, one class per kind (stdlib only).

summary.json stores each warning as ``{"kind", "level", "arm", "figures"}``
(:mod:`wakelab.analysis.quality` writes them) and leaves ``figures`` open, so a
hand-edited or newer bundle may hold anything there.  :func:`figures_of` reads
a record's figures into the class of its kind -- reading exactly what the
wording needs, no more -- and raises ``KeyError``, ``TypeError`` or
``ValueError`` where they are not what the kind says; the renderer then shows
the record's stored figures instead (:class:`StoredEntry`).  Renderers word
these records and never read the mapping themselves.

The per-arm quality flags (``quality`` in summary.json, written by
:func:`wakelab.analysis.quality.quality_flags`) hold the same figures: their
populations (:class:`Populations` of :class:`Population`), their switch-interval
tail (:class:`SwitchTailFigures`) and their polling (:class:`PollingFigures`)
are these records, each written with ``to_dict()`` and read back with
``from_dict()``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from wakelab.evidence.model import WarningKind, WarningRecord


@dataclasses.dataclass(frozen=True)
class StoredEntry:
    """A record's entry as summary.json stores it (``arm`` and ``kind`` as stored, not as parsed), for a
    renderer that shows the figures it cannot word."""

    arm: Any
    kind: Any
    figures: Any

    @classmethod
    def of(cls, record: WarningRecord) -> "StoredEntry":
        raw: Mapping[str, Any] = record.raw if isinstance(record.raw, Mapping) else record.to_dict()
        return cls(raw.get("arm"), raw.get("kind"), raw.get("figures"))


@dataclasses.dataclass(frozen=True)
class OmittedPercentile:
    """A percentile left out: its key (``p99_9``), the arm's n and the n it needs, as stored."""

    percentile: Any
    n: Any
    needs_n: Any

    def to_dict(self) -> Dict[str, object]:
        return {"percentile": self.percentile, "n": self.n, "needs_n": self.needs_n}


@dataclasses.dataclass(frozen=True)
class OmittedFigures:
    """``percentiles-omitted``: each percentile left out for want of wakes."""

    left_out: Tuple[OmittedPercentile, ...]

    @classmethod
    def from_figures(cls, f: Mapping[str, Any]) -> "OmittedFigures":
        found = []
        for x in f.get("left_out") or []:
            if not isinstance(x, Mapping):
                raise TypeError("left_out")
            found.append(OmittedPercentile(x.get("percentile"), x.get("n"), x.get("needs_n")))
        return cls(tuple(found))


@dataclasses.dataclass(frozen=True)
class SpreadFigures:
    """``worker-spread``: of medians (else rates), between repetitions (else worker processes), how far apart."""

    medians: bool
    between_repetitions: bool
    max_over_min: Any

    @classmethod
    def from_figures(cls, f: Mapping[str, Any]) -> "SpreadFigures":
        return cls(f.get("of") == "p50_ns", f.get("between") == "repetitions", f.get("max_over_min"))


@dataclasses.dataclass(frozen=True)
class Population:
    """One population of wakes: its share (0-1) and the 10th and 90th percentile of its own wakes (ns)."""

    share: float
    low_ns: Any
    high_ns: Any

    def to_dict(self) -> Dict[str, object]:
        return {"share": self.share, "low_ns": self.low_ns, "high_ns": self.high_ns}

    @classmethod
    def from_dict(cls, p: Mapping[str, Any]) -> "Population":
        return cls(p["share"], p["low_ns"], p["high_ns"])


@dataclasses.dataclass(frozen=True)
class Populations:
    """The quality flag ``populations``: two or more populations of wakes, largest share first
    (see :func:`wakelab.analysis.quality.find_populations`)."""

    populations: Tuple[Population, ...]

    def to_dict(self) -> Dict[str, object]:
        return {"populations": [p.to_dict() for p in self.populations]}

    @classmethod
    def from_dict(cls, f: Mapping[str, Any]) -> "Populations":
        return cls(tuple(Population.from_dict(p) for p in f.get("populations") or []))


@dataclasses.dataclass(frozen=True)
class PopulationCause:
    """What the run recorded that separates the populations (see :func:`wakelab.analysis.quality._population_cause`).

    ``kind`` is ``cpus``, ``workers``, ``placement`` or one this version does
    not know (``stored`` then holds the cause as stored, and is what
    :meth:`to_dict` writes); the figures of the other kinds are left unread.
    """

    kind: Any
    stored: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    cross_share: Any = None
    cross_cpu_p50_ns: Any = None
    same_cpu_p50_ns: Any = None
    worker_p50_ns: Tuple[Any, ...] = ()
    same_cpu_workers: Any = None
    split_workers: Any = None
    same_cpu_n: Any = None
    cross_cpu_n: Any = None

    def to_dict(self) -> Dict[str, object]:
        """The cause as a ``populations`` warning's figures hold it."""
        if self.kind == "cpus":
            return {"kind": self.kind, "cross_share": self.cross_share, "same_cpu_p50_ns": self.same_cpu_p50_ns,
                    "cross_cpu_p50_ns": self.cross_cpu_p50_ns, "same_cpu_n": self.same_cpu_n, "cross_cpu_n": self.cross_cpu_n}
        if self.kind == "workers":
            return {"kind": self.kind, "worker_p50_ns": list(self.worker_p50_ns)}
        if self.kind == "placement":
            return {"kind": self.kind, "same_cpu_workers": self.same_cpu_workers, "split_workers": self.split_workers}
        return dict(self.stored)

    @classmethod
    def from_stored(cls, cause: Any) -> Optional["PopulationCause"]:
        """None for no cause recorded; a cause that is not a mapping is a ``TypeError``."""
        if not cause:
            return None
        if not isinstance(cause, Mapping):
            raise TypeError("cause")
        kind = cause.get("kind")
        if kind == "cpus":
            return cls(kind, cause, cross_share=cause.get("cross_share"), cross_cpu_p50_ns=cause.get("cross_cpu_p50_ns"),
                       same_cpu_p50_ns=cause.get("same_cpu_p50_ns"), same_cpu_n=cause.get("same_cpu_n"),
                       cross_cpu_n=cause.get("cross_cpu_n"))
        if kind == "workers":
            return cls(kind, cause, worker_p50_ns=tuple(cause.get("worker_p50_ns") or []))
        if kind == "placement":
            return cls(kind, cause, same_cpu_workers=cause.get("same_cpu_workers"), split_workers=cause.get("split_workers"))
        return cls(kind, cause)


#: A populations record names its largest populations, up to this many; the rest are counted.
POPULATIONS_NAMED = 3


@dataclasses.dataclass(frozen=True)
class PopulationsFigures:
    """``populations``: how many, the largest :data:`POPULATIONS_NAMED` of them, and the cause recorded (or None)."""

    count: int
    named: Tuple[Population, ...]
    cause: Optional[PopulationCause]

    @classmethod
    def from_figures(cls, f: Mapping[str, Any]) -> "PopulationsFigures":
        populations = f.get("populations") or []
        if not isinstance(populations, (list, tuple)):
            raise TypeError("populations")
        named = []
        for p in populations[:POPULATIONS_NAMED]:
            if not isinstance(p, Mapping):
                raise TypeError("population")
            share = p["share"]
            if not isinstance(share, (int, float)):
                raise TypeError("share")
            named.append(Population(share, p["low_ns"], p["high_ns"]))
        return cls(len(populations), tuple(named), PopulationCause.from_stored(f.get("cause")))


@dataclasses.dataclass(frozen=True)
class SwitchTailFigures:
    """``switch-interval-tail``: the share of wakes (0-1) and their count, just above which multiples of which interval.

    Also the quality flag ``switch_interval_tail`` (see :func:`wakelab.analysis.quality.switch_interval_tail`).
    """

    share: float
    count: Any
    multiples: Tuple[int, ...]
    interval_s: float

    def to_dict(self) -> Dict[str, object]:
        return {"share": self.share, "count": self.count, "interval_s": self.interval_s, "multiples": list(self.multiples)}

    @classmethod
    def from_dict(cls, f: Mapping[str, Any]) -> "SwitchTailFigures":
        """The flag as written (its values as stored; :meth:`from_figures` reads a warning's leniently)."""
        return cls(f["share"], f["count"], tuple(f["multiples"]), f["interval_s"])

    @classmethod
    def from_figures(cls, f: Mapping[str, Any]) -> "SwitchTailFigures":
        return cls(float(f.get("share") or 0), f.get("count"), tuple(sorted(int(k) for k in f.get("multiples") or [])),
                   float(f.get("interval_s") or 0))


@dataclasses.dataclass(frozen=True)
class TimerFloorFigures:
    """``timer-floor``: a p50 (of the arm, or of its component ``series``) under ``multiple`` times the floor."""

    series: Any
    p50_ns: Any
    multiple: Any
    floor_ns: Any
    clocksource: Any

    @classmethod
    def from_figures(cls, f: Mapping[str, Any]) -> "TimerFloorFigures":
        return cls(f.get("series") or None, f.get("p50_ns"), f.get("multiple"), f.get("floor_ns"), f.get("clocksource") or None)


@dataclasses.dataclass(frozen=True)
class PollingFigures:
    """``polling``: the even spread's period and ends (ns), its distance to the wakes, and the settle's random part
    (µs) with whether the period reached it (see :func:`wakelab.analysis.quality.find_polling`).

    Also the quality flag ``polling``, which holds the rest of the statistics
    judged (:func:`wakelab.analysis.quality.polling_statistics`): a warning's
    reader (:meth:`from_figures`) leaves them None, the flag's (:meth:`from_dict`) reads them.
    """

    period_ns: float
    low_ns: Any
    high_ns: Any
    distance: float
    settle_jitter_us: Any
    spans_jitter: Any
    edge: Optional[float] = None
    spread_over_floor: Optional[float] = None
    thinnest_part: Optional[float] = None
    thickest_part: Optional[float] = None
    n: Optional[int] = None

    def statistics(self) -> Dict[str, object]:
        """The statistics judged, without the settle's: :func:`wakelab.analysis.quality.polling_statistics`."""
        return {"low_ns": self.low_ns, "high_ns": self.high_ns, "period_ns": self.period_ns, "distance": self.distance,
                "edge": self.edge, "spread_over_floor": self.spread_over_floor, "thinnest_part": self.thinnest_part,
                "thickest_part": self.thickest_part, "n": self.n}

    def to_dict(self) -> Dict[str, object]:
        out = self.statistics()
        out["settle_jitter_us"] = self.settle_jitter_us
        out["spans_jitter"] = self.spans_jitter
        return out

    @classmethod
    def from_dict(cls, f: Mapping[str, Any]) -> "PollingFigures":
        """The flag as written (its values as stored)."""
        return cls(f["period_ns"], f["low_ns"], f["high_ns"], f["distance"], f.get("settle_jitter_us"),
                   f.get("spans_jitter"), f["edge"], f["spread_over_floor"], f["thinnest_part"], f["thickest_part"], f["n"])

    @classmethod
    def from_figures(cls, f: Mapping[str, Any]) -> "PollingFigures":
        return cls(float(f["period_ns"]), f["low_ns"], f["high_ns"], float(f["distance"]), f.get("settle_jitter_us"),
                   f.get("spans_jitter"))


Figures = Union[OmittedFigures, SpreadFigures, PopulationsFigures, SwitchTailFigures, TimerFloorFigures, PollingFigures]

#: How each kind's figures are read.
_READERS: Dict[WarningKind, Callable[[Mapping[str, Any]], Figures]] = {
    WarningKind.PERCENTILES_OMITTED: OmittedFigures.from_figures,
    WarningKind.WORKER_SPREAD: SpreadFigures.from_figures,
    WarningKind.POPULATIONS: PopulationsFigures.from_figures,
    WarningKind.SWITCH_INTERVAL_TAIL: SwitchTailFigures.from_figures,
    WarningKind.TIMER_FLOOR: TimerFloorFigures.from_figures,
    WarningKind.POLLING: PollingFigures.from_figures,
}


def figures_of(record: WarningRecord) -> Figures:
    """``record``'s figures as the record of its kind; ``KeyError``, ``TypeError`` or ``ValueError`` when they are
    not what the kind says, or the kind is none of :class:`WarningKind`."""
    if not isinstance(record.kind, WarningKind):
        raise ValueError("kind %r" % (record.kind,))
    return _READERS[record.kind](record.figures)


__all__ = [
    "Figures", "OmittedFigures", "OmittedPercentile", "PollingFigures", "Population", "PopulationCause",
    "Populations", "PopulationsFigures", "SpreadFigures", "StoredEntry", "SwitchTailFigures", "TimerFloorFigures", "figures_of",
]
