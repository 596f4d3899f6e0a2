"""Measurement-quality warnings gathered by what they say, so that a sentence is said once (stdlib only).

A catalogue run on a noisy machine holds fifty warnings, most of them "repetitions disagree" or "two populations
of wakes" about thirty arms: printed one by one they hid the one warning about a single arm.  :func:`group_warnings`
gathers the records of one kind and level whose figures choose the same sentence (:class:`Explanation`); inside a
group only the arm and one figure differ.  :func:`machine_load` says once for the run what kept the machine busy."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from wakelab.analysis.caveats import Run, bundle_of
from wakelab.analysis.warning_figures import (CauseKind, PollingFigures, Population, PopulationsFigures, SpreadFigures,
                                              SwitchTailFigures, TimerFloorFigures, figures_of)
from wakelab.evidence.model import Reading, WarningKind, WarningRecord


@dataclasses.dataclass(frozen=True)
class Explanation:
    """What a group's records share, the part of their figures that chooses its sentence; each kind fills its own."""

    between_repetitions: bool = False
    medians: bool = False
    cause: Optional[CauseKind] = None
    interval_s: Optional[float] = None
    floor_ns: Optional[float] = None
    multiple: Any = None
    clocksource: Optional[str] = None
    settle_jitter_us: Optional[float] = None


# How a group's figure reads: a ratio (``5.9×``), a share of the wakes (``3.1%``) or a duration in ns.
RATIO, SHARE, DURATION_NS = "ratio", "share", "ns"
_UNITS = {WarningKind.WORKER_SPREAD: RATIO, WarningKind.POPULATIONS: RATIO, WarningKind.SWITCH_INTERVAL_TAIL: SHARE,
          WarningKind.TIMER_FLOOR: DURATION_NS, WarningKind.POLLING: DURATION_NS}


@dataclasses.dataclass(frozen=True)
class GroupMember:
    """One arm of a group: its record, the figure that says how bad the warning is there, and the component
    (``series``) a timer-floor record is about."""

    record: WarningRecord
    arm: str
    figure: float
    series: Optional[str] = None

    @property
    def label(self) -> str:
        return self.arm if not self.series else "%s.%s" % (self.arm, self.series)


@dataclasses.dataclass(frozen=True)
class WarningGroup:
    """Records that say one thing about several arms (``members``, worst first), or one record said as it is
    (``single``, with no ``explanation``)."""

    kind: Union[WarningKind, str]
    level: str
    explanation: Optional[Explanation]
    members: Tuple[GroupMember, ...] = ()
    unit: str = RATIO
    single: Optional[WarningRecord] = None

    @property
    def records(self) -> Tuple[WarningRecord, ...]:
        return (self.single,) if self.single is not None else tuple(m.record for m in self.members)

    @property
    def grouped(self) -> bool:
        return len(self.records) > 1


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return number if math.isfinite(number) else None


def _population_level_ratio(populations: Sequence[Population]) -> Optional[float]:
    levels: List[float] = []
    for population in populations:
        low, high = _number(population.low_ns), _number(population.high_ns)
        if low is None or high is None or low <= 0 or high <= 0:
            return None
        levels.append(math.sqrt(low * high))
    return max(levels) / min(levels) if len(levels) >= 2 else None


def _explained(record: WarningRecord) -> Optional[Tuple[Explanation, float, Optional[str]]]:
    """``(explanation, figure, series)`` of a record that can join a group, None for one that is said on its own."""
    if record.text is not None or record.arm is None or record.kind not in _UNITS:
        return None
    try:
        f = figures_of(record)
    except (KeyError, OverflowError, TypeError, ValueError):
        return None
    if isinstance(f, SpreadFigures):
        ratio = _number(f.max_over_min)
        return None if ratio is None else (Explanation(f.between_repetitions, f.medians), ratio, None)
    if isinstance(f, PopulationsFigures):
        ratio = _population_level_ratio(f.named)
        cause = f.cause.kind if f.cause is not None else None
        if ratio is None or not isinstance(cause, (CauseKind, type(None))):
            return None
        return Explanation(cause=cause), ratio, None
    if isinstance(f, SwitchTailFigures):
        if not math.isfinite(f.share) or not math.isfinite(f.interval_s) or f.interval_s <= 0:
            return None
        return Explanation(interval_s=f.interval_s), f.share, None
    if isinstance(f, TimerFloorFigures):
        p50, floor = _number(f.p50_ns), _number(f.floor_ns)
        if p50 is None or floor is None or _number(f.multiple) is None \
                or not isinstance(f.series, (str, type(None))) or not isinstance(f.clocksource, (str, type(None))):
            return None
        return Explanation(floor_ns=floor, multiple=f.multiple, clocksource=f.clocksource), p50, f.series
    assert isinstance(f, PollingFigures)
    jitter = _number(f.settle_jitter_us)
    reached = bool(f.spans_jitter and f.settle_jitter_us)
    if not math.isfinite(f.period_ns) or not math.isfinite(f.distance) or _number(f.low_ns) is None \
            or _number(f.high_ns) is None or (reached and jitter is None):
        return None
    return Explanation(settle_jitter_us=jitter if reached else None), f.period_ns, None


def group_warnings(records: Sequence[WarningRecord]) -> Tuple[WarningGroup, ...]:
    """``records`` gathered into groups of one kind, level and explanation, in the order each first appears; members
    worst first -- the largest ratio or share, the smallest duration -- ties in run order."""
    found: Dict[Tuple[object, ...], List[Tuple[WarningRecord, Optional[Tuple[Explanation, float, Optional[str]]]]]] = {}
    for index, record in enumerate(records):
        explained = _explained(record)
        key = (index,) if explained is None else (record.kind, record.level, explained[0])
        found.setdefault(key, []).append((record, explained))
    groups: List[WarningGroup] = []
    for entries in found.values():
        first, explained = entries[0]
        if len(entries) == 1 or explained is None:
            groups.append(WarningGroup(first.kind, first.level, None, single=first))
            continue
        unit = _UNITS[WarningKind(first.kind)]
        members = [GroupMember(r, str(r.arm), e[1], e[2]) for r, e in entries if e is not None]
        sign = 1.0 if unit == DURATION_NS else -1.0
        order = sorted(range(len(members)), key=lambda i: (sign * members[i].figure, i))
        groups.append(WarningGroup(first.kind, first.level, explained[0], tuple(members[i] for i in order), unit))
    return tuple(groups)


@dataclasses.dataclass(frozen=True)
class BusyProcess:

    name: str
    pid: Any
    cpu_share: float
    started_during_run: bool


@dataclasses.dataclass(frozen=True)
class MachineLoad:
    """What kept the machine busy beside a run, and the 1-minute load average at its start and end."""

    busy: Tuple[BusyProcess, ...]
    load_start: Optional[float] = None
    load_end: Optional[float] = None


def _first_load(reading: Optional[Reading]) -> Optional[float]:
    values = reading.load_average if reading is not None else None
    return _number(values[0]) if isinstance(values, list) and values else None


def machine_load(run: Run) -> Optional[MachineLoad]:
    """The load beside the run when ``observed`` saw another process busy, else None: the load average alone counts
    the run's own workers too."""
    observed = bundle_of(run).observed
    if observed is None:
        return None
    shares = [(p, _number(p.cpu_share)) for p in observed.busy_processes or ()]
    busy = tuple(BusyProcess(str(p.name), p.pid, share, bool(p.started_during_run)) for p, share in shares if share is not None)
    return MachineLoad(busy, _first_load(observed.start), _first_load(observed.end)) if busy else None
