"""The MEASUREMENT QUALITY section: the load the run saw beside it, then its warnings gathered by what they say
(:mod:`wakelab.analysis.warning_groups`), kept to :data:`QUALITY_MAX_LINES` bullet lines by naming fewer arms of the
largest groups; the populations groups sit under one head, a line per cause."""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Dict, List, Optional, Sequence

from wakelab.analysis.view import RunView
from wakelab.analysis.warning_figures import CauseKind
from wakelab.analysis.warning_groups import DURATION_NS, RATIO, SHARE, Explanation, MachineLoad, WarningGroup
from wakelab.evidence.model import WarningKind
from wakelab.formatting import DASH, format_ns, format_percent, format_ratio
from wakelab.report.text.warnings import format_warning
from wakelab.report.text.wrap import KEEP, bullets, bullets_figures, wrap_figures


QUALITY_TITLE = "MEASUREMENT QUALITY (warnings, not errors)"
#: The title when arms that share a warning were gathered on one line: where each arm's own is.
QUALITY_TITLE_GROUPED = "MEASUREMENT QUALITY (warnings, not errors; arm by arm: wakelab show --full)"
#: The quality section's bullets, the machine's load among them, are kept to this many lines, where the arms a group
#: lists can be cut short (a group still names its worst arms); a warning about one arm is never cut.
QUALITY_MAX_LINES = 12
#: A group cut short still names this many arms, its worst -- but a cause under the populations head gives its count
#: alone when the section would pass :data:`QUALITY_MAX_LINES` lines otherwise.
GROUP_MIN_SHOWN = 1

#: What explains a group of populations records, by the cause the run recorded (None: nothing did).
_POPULATION_CAUSES = {
    CauseKind.CPUS: "where each wake ran explains them",
    CauseKind.WORKERS: "the level shifted between worker processes",
    CauseKind.PLACEMENT: "the sides' CPUs differed between worker processes (--placement same,split measures each apart)",
    None: "nothing recorded tells why (measure --placement same,split)",
}
_POPULATIONS_HEAD = "Two or more populations of wakes (a single percentile hides them)"
_LEVELS_APART = "levels apart by"


def _polling_sentence(e: Explanation) -> str:
    if e.settle_jitter_us:
        return ("These waits poll (their wakes spread evenly, as far as the settle's random part (%s) reaches, so a "
                "period may be longer: --settle-jitter-us %d would measure it; a wake costs up to a whole period, "
                "half of it on average), every" % (format_ns(e.settle_jitter_us * 1000), 2 * int(e.settle_jitter_us)))
    return ("These waits poll (their wakes spread evenly instead of bunching near a floor; a wake costs up to a "
            "whole period, half of it on average), about every")


#: What a group's arms share, worded once, up to the colon that the arms and their figures follow; by kind.
_SENTENCES: Dict[WarningKind, Callable[[Explanation], str]] = {
    WarningKind.WORKER_SPREAD: lambda e: "%s, %s apart by" % (
        "Repetitions disagree (the level shifts over the run; compare widens the interval, --repeat narrows it)"
        if e.between_repetitions else
        "Worker processes disagree (the level shifts between processes; raise --workers, compare runs side by side)",
        "medians" if e.medians else "rates"),
    WarningKind.POPULATIONS: lambda e: "%s; %s, %s" % (_POPULATIONS_HEAD, _POPULATION_CAUSES[e.cause], _LEVELS_APART),
    WarningKind.SWITCH_INTERVAL_TAIL: lambda e: (
        "Wakes just over multiples of the switch interval of %s (a busy Python thread held the GIL and the "
        "waiter waited for the interpreter to force a switch), share of the wakes" % format_ns(float(e.interval_s or 0) * 1e9)),
    WarningKind.TIMER_FLOOR: lambda e: (
        "p50 under %s× the timer floor, %s ns per perf_counter_ns() pair%s: the clock's own cost is a tenth of the "
        "figure or more; p50" % (e.multiple, _plain(float(e.floor_ns or 0)),
                                 " (clocksource %s)" % e.clocksource if e.clocksource else "")),
    WarningKind.POLLING: _polling_sentence,
}


def _plain(value: float) -> str:
    """``300`` for 300.0, ``312.5`` as it is (a floor stored as a whole number prints as one)."""
    return "%d" % value if float(value).is_integer() else "%s" % value


#: How a member's figure reads, by its group's unit.
_FIGURE: Dict[str, Callable[[float], str]] = {
    SHARE: lambda figure: format_percent(100 * figure), DURATION_NS: format_ns, RATIO: format_ratio}


def format_group_arms(group: WarningGroup, shown: Optional[int] = None) -> str:
    """A group's arms worst first with their figure -- the first ``shown`` (all when None) and how many more --
    and their count: ``pipe 3.5×, queue 2.0× and 4 more (6 arms)``; ``shown`` 0: the count alone (``6 arms``)."""
    members, count = group.members, len(group.members)
    shown = count if shown is None else max(0, min(shown, count))
    # A timer-floor group may name an arm and its components apart: each is a figure, not an arm.
    what = "figures" if any(m.series for m in members) else "arms"
    if not shown:
        return "%d %s" % (count, what)
    arms = ", ".join("%s %s" % (m.label, _FIGURE[group.unit](m.figure)) for m in members[:shown])
    more = " and %d more" % (count - shown) if shown < count else ""
    return "%s%s (%d %s)" % (arms, more, count, what)


def format_warning_group(group: WarningGroup, shown: Optional[int] = None) -> str:
    """A group's sentence, said once, then its arms (:func:`format_group_arms`); a group of one is its
    record worded in full (:func:`format_warning`)."""
    if not group.grouped:
        return format_warning(group.records[0])
    assert group.explanation is not None
    return "%s: %s." % (_SENTENCES[WarningKind(group.kind)](group.explanation), format_group_arms(group, shown))


def format_machine_load(load: MachineLoad) -> str:
    """The other processes that kept the machine busy (the busiest two) and the 1-minute load average at the
    run's start and end, in one line where it fits: ``The machine was busy: stress (pid 42) 97% of a CPU; load
    average 0.27 → 2.10 over the run.``"""
    named = ["%s (pid %s) %s of a CPU" % (p.name, p.pid, format_percent(100 * p.cpu_share)) for p in load.busy[:2]]
    more = " and %d more" % (len(load.busy) - 2) if len(load.busy) > 2 else ""
    loads = ""
    if load.load_start is not None or load.load_end is not None:
        loads = "; load average %s → %s over the run" % tuple(
            DASH if v is None else "%.2f" % v for v in (load.load_start, load.load_end))
    return "The machine was busy: %s%s%s." % (", ".join(named), more, loads)


# -- the quality section's layout: a bullet per group, the populations' causes one line each under one head


@dataclasses.dataclass
class _Item:
    """One bullet of the quality section: the groups it lays out and how many arms each names."""

    groups: List[WarningGroup]
    shown: List[Optional[int]]

    def lines(self) -> List[str]:
        if len(self.groups) == 1:
            group = self.groups[0]
            if not group.grouped:
                return bullets([format_warning(group.records[0])])
            return bullets_figures([_keep_counts(format_warning_group(group, self.shown[0]))])
        lines = wrap_figures("%s, %s:" % (_POPULATIONS_HEAD, _LEVELS_APART), "  - ", "    ")
        for group, shown in zip(self.groups, self.shown):
            cause = group.explanation.cause if group.explanation is not None else None
            lines.extend(wrap_figures(_keep_counts("%s: %s;" % (_POPULATION_CAUSES[cause],
                                                                format_group_arms(group, shown))), "    ", "      "))
        lines[-1] = lines[-1][:-1] + "."
        return lines

    def grow(self) -> None:
        """Name more arms where the bullet's last lines have room for them (no line more)."""
        for index, group in enumerate(self.groups):
            count = len(self.lines())
            while self.shown[index] is not None and int(self.shown[index] or 0) < len(group.members):
                self.shown[index] = int(self.shown[index] or 0) + 1
                if len(self.lines()) > count:
                    self.shown[index] = int(self.shown[index] or 0) - 1
                    break

    def cut(self, least: int = GROUP_MIN_SHOWN) -> bool:
        """Name one arm fewer in the group that names the most, beyond ``least`` arms; False when none can.  ``least``
        below :data:`GROUP_MIN_SHOWN` holds under the populations head only, where a cause's line still reads with its
        count alone (a bullet of one group would end "apart by: 27 arms")."""
        least = least if len(self.groups) > 1 else GROUP_MIN_SHOWN
        cuttable = [i for i, (g, n) in enumerate(zip(self.groups, self.shown))
                    if n is not None and n > min(least, len(g.members))]
        if not cuttable:
            return False
        index = max(cuttable, key=lambda i: (self.shown[i] or 0, i))
        self.shown[index] = int(self.shown[index] or 0) - 1
        return True


_COUNTS = re.compile(r"(and \d+) (more) \((\d+) (arms|figures)\)")


def _keep_counts(text: str) -> str:
    """``and 24 more (27 arms)`` kept on one line by :func:`wrap_figures`."""
    return _COUNTS.sub(lambda m: "%s%s%s (%s%s%s)" % (m.group(1), KEEP, m.group(2), m.group(3), KEEP, m.group(4)), text)


def _quality_items(groups: Sequence[WarningGroup]) -> List[_Item]:
    """A bullet per group; the populations groups of several arms together, under one head, where there are several."""
    populations = [g for g in groups if g.grouped and g.kind is WarningKind.POPULATIONS]
    items: List[_Item] = []
    for group in groups:
        if len(populations) > 1 and group in populations:
            if group is populations[0]:
                items.append(_Item(list(populations), [len(g.members) for g in populations]))
            continue
        items.append(_Item([group], [len(group.members) if group.grouped else None]))
    return items


def format_quality(view: RunView, arm_by_arm: bool = False) -> List[str]:
    """The measurement-quality section's bullets: the load the run saw beside it, then its warnings gathered
    by what they say, each group naming its worst arms first, cut short where the bullets would pass
    :data:`QUALITY_MAX_LINES` lines (``arm_by_arm``: every warning on its own, as summary.json records them)."""
    lines: List[str] = []
    if view.machine_load is not None:
        lines.extend(bullets_figures([format_machine_load(view.machine_load)]))
    if arm_by_arm:
        return lines + bullets([format_warning(w) for w in view.warnings])
    items = _quality_items(view.warning_groups)
    blocks = [item.lines() for item in items]
    least = GROUP_MIN_SHOWN
    # The load line counts: on a busy machine the warnings' bullets have a line fewer.
    while len(lines) + sum(len(b) for b in blocks) > QUALITY_MAX_LINES:
        # Shorten the longest bullet that can still be cut by a line (of equals, the later one).
        order = sorted(range(len(items)), key=lambda i: (-len(blocks[i]), -i))
        for index in order:
            before = len(blocks[index])
            while len(blocks[index]) >= before and items[index].cut(least):
                blocks[index] = items[index].lines()
            if len(blocks[index]) < before:
                break
        else:
            if not least:
                break  # every group names as few arms as it can: the rest is warnings about one arm each
            least = 0  # last, a cause under the populations head gives its count alone
    for item in items:
        item.grow()  # a cut bullet's last line may have room for arms again
        lines.extend(item.lines())
    return lines
