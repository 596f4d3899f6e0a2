"""A measurement-quality record's figures as a typed record, one class per kind (stdlib only).

summary.json leaves a warning's ``figures`` open, so a hand-edited or newer bundle may hold anything there:
:func:`figures_of` parses them into the class of their kind, or raises ``KeyError``, ``TypeError`` or ``ValueError``
-- the renderer then shows the record as stored (:class:`StoredEntry`).  The per-arm quality flags are the same
records."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from wakelab.evidence.model import Record, WarningKind, WarningRecord


@dataclasses.dataclass(frozen=True)
class StoredEntry:
    """A record's entry as summary.json stores it, for a renderer that shows the figures it cannot word."""

    arm: Any
    kind: Any
    figures: Any

    @classmethod
    def of(cls, record: WarningRecord) -> "StoredEntry":
        raw = record.raw if isinstance(record.raw, Mapping) else record.to_dict()
        return cls(raw.get("arm"), raw.get("kind"), raw.get("figures"))


@dataclasses.dataclass(frozen=True)
class OmittedPercentile(Record):

    percentile: Any
    n: Any
    needs_n: Any


@dataclasses.dataclass(frozen=True)
class OmittedFigures(Record):

    left_out: Tuple[OmittedPercentile, ...]

    @classmethod
    def from_dict(cls, stored: Any) -> "OmittedFigures":
        left_out = tuple(stored.get("left_out") or ())
        if not all(isinstance(x, Mapping) for x in left_out):
            raise TypeError("left_out")
        return cls(tuple(OmittedPercentile(x.get("percentile"), x.get("n"), x.get("needs_n")) for x in left_out))


@dataclasses.dataclass(frozen=True)
class SpreadFigures:

    medians: bool
    between_repetitions: bool
    max_over_min: Any

    @classmethod
    def from_dict(cls, stored: Any) -> "SpreadFigures":
        return cls(stored.get("of") == "p50_ns", stored.get("between") == "repetitions", stored.get("max_over_min"))


@dataclasses.dataclass(frozen=True)
class Population(Record):

    share: float
    low_ns: Any
    high_ns: Any

    @classmethod
    def from_dict(cls, stored: object) -> "Population":
        if not isinstance(stored, Mapping) or not isinstance(stored["share"], (int, float)):
            raise TypeError("population")
        return cls(stored["share"], stored["low_ns"], stored["high_ns"])


@dataclasses.dataclass(frozen=True)
class Populations(Record):

    populations: Tuple[Population, ...]

    @classmethod
    def from_dict(cls, stored: Any) -> "Populations":
        return cls(tuple(map(Population.from_dict, stored.get("populations") or [])))


class CauseKind(str, enum.Enum):

    CPUS = "cpus"
    WORKERS = "workers"
    PLACEMENT = "placement"


#: The figures each kind of cause holds, in the order summary.json stores them.
_CAUSE_FIGURES = {
    CauseKind.CPUS: ("cross_share", "same_cpu_p50_ns", "cross_cpu_p50_ns", "same_cpu_n", "cross_cpu_n"),
    CauseKind.WORKERS: ("worker_p50_ns",),
    CauseKind.PLACEMENT: ("same_cpu_workers", "split_workers"),
}


@dataclasses.dataclass(frozen=True)
class PopulationCause(Record):
    """The cause a ``populations`` record names: ``kind`` a :class:`CauseKind` with its figures, or the kind as stored
    where it is none of them (``stored``: the cause as stored)."""

    kind: object
    stored: Any = None
    cross_share: Any = None
    cross_cpu_p50_ns: Any = None
    same_cpu_p50_ns: Any = None
    worker_p50_ns: Optional[Tuple[Any, ...]] = None
    same_cpu_workers: Any = None
    split_workers: Any = None
    same_cpu_n: Any = None
    cross_cpu_n: Any = None

    def to_dict(self) -> Dict[str, object]:
        if not isinstance(self.kind, CauseKind):
            return dict(self.stored)
        plain = super().to_dict()
        return {"kind": self.kind.value, **{name: plain[name] for name in _CAUSE_FIGURES[self.kind]}}

    @classmethod
    def from_stored(cls, cause: Any) -> Optional["PopulationCause"]:
        if not cause:
            return None
        if not isinstance(cause, Mapping):
            raise TypeError("cause")
        try:
            kind = CauseKind(cause.get("kind"))
        except ValueError:
            return cls(cause.get("kind"), cause)
        figures = {name: cause.get(name) for name in _CAUSE_FIGURES[kind]}
        if kind is CauseKind.WORKERS:
            figures["worker_p50_ns"] = tuple(cause.get("worker_p50_ns") or [])
        return cls(kind, **figures)


#: A populations record names its largest populations, up to this many; the rest are counted.
POPULATIONS_NAMED = 3


@dataclasses.dataclass(frozen=True)
class PopulationsFigures:

    count: int
    named: Tuple[Population, ...]
    cause: Optional[PopulationCause]

    @classmethod
    def from_dict(cls, stored: Any) -> "PopulationsFigures":
        populations = stored.get("populations") or []
        if not isinstance(populations, (list, tuple)):
            raise TypeError("populations")
        return cls(len(populations), tuple(map(Population.from_dict, populations[:POPULATIONS_NAMED])),
                   PopulationCause.from_stored(stored.get("cause")))


@dataclasses.dataclass(frozen=True)
class SwitchTailFigures(Record):

    share: float
    count: Any
    interval_s: float
    multiples: Tuple[int, ...]

    @classmethod
    def from_dict(cls, stored: Any) -> "SwitchTailFigures":
        return cls(float(stored.get("share") or 0), stored.get("count"), float(stored.get("interval_s") or 0),
                   tuple(sorted(int(k) for k in stored.get("multiples") or [])))


@dataclasses.dataclass(frozen=True)
class TimerFloorFigures(Record):

    series: Any
    p50_ns: Any
    floor_ns: Any
    multiple: Any
    clocksource: Any

    @classmethod
    def from_dict(cls, stored: Any) -> "TimerFloorFigures":
        return cls(stored.get("series") or None, stored.get("p50_ns"), stored.get("floor_ns"), stored.get("multiple"),
                   stored.get("clocksource") or None)


@dataclasses.dataclass(frozen=True)
class PollingFigures(Record):
    """``polling``: the even spread's ends and period (ns), the statistics judged (a warning's reader leaves them
    None), and the settle's random part (µs) with whether the period reached it."""

    low_ns: Any
    high_ns: Any
    period_ns: float
    distance: float
    edge: Optional[float] = None
    spread_over_floor: Optional[float] = None
    thinnest_part: Optional[float] = None
    thickest_part: Optional[float] = None
    n: Optional[int] = None
    settle_jitter_us: Any = None
    spans_jitter: Any = None

    @classmethod
    def from_dict(cls, stored: Any) -> "PollingFigures":
        return cls(**stored)

    @classmethod
    def from_figures(cls, stored: Any) -> "PollingFigures":
        return cls(stored["low_ns"], stored["high_ns"], float(stored["period_ns"]), float(stored["distance"]),
                   settle_jitter_us=stored.get("settle_jitter_us"), spans_jitter=stored.get("spans_jitter"))


Figures = Union[OmittedFigures, SpreadFigures, PopulationsFigures, SwitchTailFigures, TimerFloorFigures, PollingFigures]

_READERS: Dict[WarningKind, Callable[[Any], Figures]] = {WarningKind.PERCENTILES_OMITTED: OmittedFigures.from_dict,
                                                         WarningKind.WORKER_SPREAD: SpreadFigures.from_dict,
                                                         WarningKind.POPULATIONS: PopulationsFigures.from_dict,
                                                         WarningKind.SWITCH_INTERVAL_TAIL: SwitchTailFigures.from_dict,
                                                         WarningKind.TIMER_FLOOR: TimerFloorFigures.from_dict,
                                                         WarningKind.POLLING: PollingFigures.from_figures}


def figures_of(record: WarningRecord) -> Figures:
    """``record``'s figures as the record of its kind (see the module docstring)."""
    stored = StoredEntry.of(record).figures
    if not isinstance(record.kind, WarningKind) or (stored and not isinstance(stored, Mapping)):
        raise ValueError("kind %r" % (record.kind,))
    return _READERS[record.kind](record.figures)
