"""A measurement-quality record's figures as a typed record, one class per kind (stdlib only).

summary.json stores each warning as ``{"kind", "level", "arm", "figures"}``
(:mod:`wakelab.analysis.quality` writes them) and leaves ``figures`` open, so a
hand-edited or newer bundle may hold anything there.  :func:`figures_of` reads
a record's figures into the class of its kind -- reading exactly what the
wording needs, no more -- and raises ``KeyError``, ``TypeError`` or
``ValueError`` where they are not what the kind says; the renderer then shows
the record's stored figures instead (:class:`StoredEntry`).  Renderers word
these records and never read the mapping themselves.
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


@dataclasses.dataclass(frozen=True)
class PopulationCause:
    """What the run recorded that separates the populations (see :func:`wakelab.analysis.quality._population_cause`).

    ``kind`` is ``cpus``, ``workers``, ``placement`` or one this version does
    not know (``stored`` then holds the cause as stored); the figures of the
    other kinds are left unread.
    """

    kind: Any
    stored: Mapping[str, Any]
    cross_share: Any = None
    cross_cpu_p50_ns: Any = None
    same_cpu_p50_ns: Any = None
    worker_p50_ns: Tuple[Any, ...] = ()
    same_cpu_workers: Any = None
    split_workers: Any = None

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
                       same_cpu_p50_ns=cause.get("same_cpu_p50_ns"))
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
    """``switch-interval-tail``: the share of wakes (0-1) and their count, just above which multiples of which interval."""

    share: float
    count: Any
    multiples: Tuple[int, ...]
    interval_s: float

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
    (µs) with whether the period reached it (see :func:`wakelab.analysis.quality.find_polling`)."""

    period_ns: float
    low_ns: Any
    high_ns: Any
    distance: float
    settle_jitter_us: Any
    spans_jitter: Any

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
    "PopulationsFigures", "SpreadFigures", "StoredEntry", "SwitchTailFigures", "TimerFloorFigures", "figures_of",
]
