"""Measurement-quality warnings gathered by what they say, so that a sentence is said once (stdlib only).

A catalogue run on a noisy machine holds fifty warnings, most of them one of
two sentences -- "repetitions disagree", "two populations of wakes" -- about
thirty arms, each with its own figure.  Printed one by one they made a wall
that hid the one warning that was about a single arm (a wait that polls).
:func:`group_warnings` gathers the records that say the same thing: the same
kind, the same level (a note is never grouped with a warning) and the same
*explanation* -- the part of the figures that chooses the sentence (repetitions
or worker processes, medians or rates; what explains two populations; the switch
interval; the timer floor; whether a poll's period reached the settle's random
part).  What differs inside a group is the arm and one figure that says how bad
it is there (:class:`GroupMember`), and the members come worst first.

A group of one is the record as it was, worded in full by the renderers; a record
whose figures are not what its kind says, of a kind this version does not know,
or worded by an older runner (a sentence) is never grouped.  summary.json keeps
every record as it is: grouping is layout, computed once here
(:attr:`wakelab.analysis.view.RunView.warning_groups`) and placed by each renderer.

:func:`machine_load` reads what the run *saw* beside it (summary.json's
``observed``, :mod:`wakelab.harness.observed`): the other processes that kept a
CPU busy and the load average at both ends, said once for the run rather than
in each arm's warning.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from wakelab.analysis.warning_figures import (
    PollingFigures,
    Population,
    PopulationsFigures,
    SpreadFigures,
    SwitchTailFigures,
    TimerFloorFigures,
    figures_of,
)
from wakelab.evidence.model import WarningKind, WarningRecord

# -- what a group's members share --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SpreadExplanation:
    """``worker-spread``: between ``repetitions`` or worker processes, of ``medians`` or rates."""

    between_repetitions: bool
    medians: bool


@dataclasses.dataclass(frozen=True)
class PopulationsExplanation:
    """``populations``: what the run recorded that separates them -- ``cause`` is ``cpus`` (where each
    wake ran), ``workers`` (the worker processes' levels), ``placement`` (the sides' CPUs differed
    between workers) or None (nothing recorded tells)."""

    cause: Optional[str]


@dataclasses.dataclass(frozen=True)
class SwitchTailExplanation:
    """``switch-interval-tail``: wakes just above multiples of one switch interval (s)."""

    interval_s: float


@dataclasses.dataclass(frozen=True)
class TimerFloorExplanation:
    """``timer-floor``: p50s under ``multiple`` times one timer floor (ns per clock pair) on one clocksource."""

    floor_ns: float
    multiple: Any
    clocksource: Optional[str]


@dataclasses.dataclass(frozen=True)
class PollingExplanation:
    """``polling``: ``settle_jitter_us`` is the settle's random part when the period found reached it
    (the period may be longer), None when the period was measured whole."""

    settle_jitter_us: Optional[float]


Explanation = Union[SpreadExplanation, PopulationsExplanation, SwitchTailExplanation, TimerFloorExplanation,
                    PollingExplanation]

# How a group's figure reads: a ratio (``5.9×``), a share of the wakes (``3.1%``) or a duration in ns.
RATIO, SHARE, DURATION_NS = "ratio", "share", "ns"


@dataclasses.dataclass(frozen=True)
class GroupMember:
    """One arm of a group: its record, and the figure that says how bad the warning is there.

    ``series`` is the part of the arm the record is about (a timer-floor record of
    a component), None for the arm as a whole.
    """

    record: WarningRecord
    arm: str
    figure: float
    series: Optional[str] = None

    @property
    def label(self) -> str:
        """``arm`` or ``arm.series``."""
        return self.arm if not self.series else "%s.%s" % (self.arm, self.series)


@dataclasses.dataclass(frozen=True)
class WarningGroup:
    """Records that say one thing about several arms, or one record said as it is.

    ``explanation`` is what the members share (None for a record that is not
    grouped: it is :attr:`records`' only one); ``members`` come worst first
    (the largest ratio or share, the smallest duration), and ``unit`` says how
    their figure reads (:data:`RATIO`, :data:`SHARE` or :data:`DURATION_NS`).
    """

    kind: Union[WarningKind, str]
    level: str
    explanation: Optional[Explanation]
    members: Tuple[GroupMember, ...] = ()
    unit: str = RATIO
    #: The record of a group of one that is not grouped (no explanation); None for a group.
    single: Optional[WarningRecord] = None

    @property
    def records(self) -> Tuple[WarningRecord, ...]:
        """The records the group stands for: each member's, worst first, or the single one."""
        return (self.single,) if self.single is not None else tuple(m.record for m in self.members)

    @property
    def grouped(self) -> bool:
        """True when the group speaks for more than one record (renderers word it once, the arms after it)."""
        return len(self.records) > 1


# -- what a record says, read from its figures -------------------------------------------------


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _population_level_ratio(populations: Sequence[Population]) -> Optional[float]:
    """The slowest population's level over the fastest's, each at the middle of its range (geometric)."""
    levels: List[float] = []
    for population in populations:
        low, high = _number(population.low_ns), _number(population.high_ns)
        if low is None or high is None or low <= 0 or high <= 0:
            return None
        levels.append(math.sqrt(low * high))
    return max(levels) / min(levels) if len(levels) >= 2 else None


def _explained(record: WarningRecord) -> Optional[Tuple[Explanation, GroupMember, str]]:
    """``(explanation, member, unit)`` of a record that can join a group, None for one that is said on its own
    (worded by an older runner, about no arm, of a kind this version does not know, or with figures that are
    not what its kind says)."""
    if record.text is not None or record.arm is None or not isinstance(record.kind, WarningKind):
        return None
    try:
        f = figures_of(record)
    except (KeyError, OverflowError, TypeError, ValueError):
        return None
    if isinstance(f, SpreadFigures):
        ratio = _number(f.max_over_min)
        if ratio is None:
            return None
        return SpreadExplanation(f.between_repetitions, f.medians), GroupMember(record, record.arm, ratio), RATIO
    if isinstance(f, PopulationsFigures):
        ratio = _population_level_ratio(f.named)
        cause = f.cause.kind if f.cause is not None else None
        if ratio is None or cause not in (None, "cpus", "workers", "placement"):
            return None
        return PopulationsExplanation(cause), GroupMember(record, record.arm, ratio), RATIO
    if isinstance(f, SwitchTailFigures):
        if not math.isfinite(f.share) or not math.isfinite(f.interval_s) or f.interval_s <= 0:
            return None
        return SwitchTailExplanation(f.interval_s), GroupMember(record, record.arm, f.share), SHARE
    if isinstance(f, TimerFloorFigures):
        p50, floor = _number(f.p50_ns), _number(f.floor_ns)
        if p50 is None or floor is None or _number(f.multiple) is None \
                or not isinstance(f.series, (str, type(None))) or not isinstance(f.clocksource, (str, type(None))):
            return None
        return (TimerFloorExplanation(floor, f.multiple, f.clocksource),
                GroupMember(record, record.arm, p50, f.series), DURATION_NS)
    if isinstance(f, PollingFigures):
        jitter = _number(f.settle_jitter_us)
        reached = bool(f.spans_jitter and f.settle_jitter_us)
        if not math.isfinite(f.period_ns) or not math.isfinite(f.distance) or _number(f.low_ns) is None \
                or _number(f.high_ns) is None or (reached and jitter is None):
            return None
        return PollingExplanation(jitter if reached else None), GroupMember(record, record.arm, f.period_ns), DURATION_NS
    return None  # percentiles-omitted: about the run, not an arm


def _worst_first(members: Sequence[GroupMember], unit: str) -> Tuple[GroupMember, ...]:
    """Largest ratio or share first, smallest duration first (nearest the floor, or the fastest poll); ties in run order."""
    sign = 1.0 if unit == DURATION_NS else -1.0
    order = sorted(range(len(members)), key=lambda i: (sign * members[i].figure, i))
    return tuple(members[i] for i in order)


def group_warnings(records: Sequence[WarningRecord]) -> Tuple[WarningGroup, ...]:
    """``records`` gathered into groups that each say one thing, in the order each first appears.

    Records group when they have the same kind, level and explanation (see the
    module docstring); a group of one, and a record that cannot be grouped,
    stand as themselves (:attr:`WarningGroup.single`).
    """
    slots: List[Union[WarningRecord, Tuple[Any, ...]]] = []
    found: Dict[Tuple[Any, ...], List[GroupMember]] = {}
    units: Dict[Tuple[Any, ...], str] = {}
    for record in records:
        explained = _explained(record)
        if explained is None:
            slots.append(record)
            continue
        explanation, member, unit = explained
        key = (record.kind, record.level, explanation)
        if key not in found:
            found[key] = []
            units[key] = unit
            slots.append(key)
        found[key].append(member)
    groups: List[WarningGroup] = []
    for slot in slots:
        if isinstance(slot, WarningRecord):
            groups.append(WarningGroup(slot.kind, slot.level, None, single=slot))
            continue
        members = found[slot]
        if len(members) == 1:
            groups.append(WarningGroup(slot[0], slot[1], None, single=members[0].record))
        else:
            groups.append(WarningGroup(slot[0], slot[1], slot[2], _worst_first(members, units[slot]), units[slot]))
    return tuple(groups)


# -- the load the run saw ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BusyProcess:
    """A process other than the run's own that used at least a tenth of a CPU over the run."""

    name: str
    pid: Any
    cpu_share: float
    started_during_run: bool


@dataclasses.dataclass(frozen=True)
class MachineLoad:
    """What kept the machine busy beside a run: the busy processes seen (busiest first) and the
    1-minute load average at the run's start and end (None where not recorded)."""

    busy: Tuple[BusyProcess, ...]
    load_start: Optional[float] = None
    load_end: Optional[float] = None


def _first_load(reading: Any) -> Optional[float]:
    values = reading.get("load_average") if isinstance(reading, Mapping) else None
    return _number(values[0]) if isinstance(values, list) and values else None


def machine_load(summary: Mapping[str, Any]) -> Optional[MachineLoad]:
    """The load beside the run when ``observed`` saw another process busy, else None (a quiet machine, or not recorded).

    The load average alone does not say the machine was loaded: it counts the
    run's own worker processes too.
    """
    observed = summary.get("observed")
    if not isinstance(observed, Mapping):
        return None
    procs = observed.get("busy_processes")
    busy: List[BusyProcess] = []
    for proc in procs if isinstance(procs, list) else ():
        share = _number(proc.get("cpu_share")) if isinstance(proc, Mapping) else None
        if share is None:
            continue
        busy.append(BusyProcess(str(proc.get("name")), proc.get("pid"), share, bool(proc.get("started_during_run"))))
    if not busy:
        return None
    return MachineLoad(tuple(busy), _first_load(observed.get("start")), _first_load(observed.get("end")))


__all__ = [
    "DURATION_NS", "RATIO", "SHARE",
    "BusyProcess", "Explanation", "GroupMember", "MachineLoad", "PollingExplanation", "PopulationsExplanation",
    "SpreadExplanation", "SwitchTailExplanation", "TimerFloorExplanation", "WarningGroup",
    "group_warnings", "machine_load",
]
