"""Which arms are compared with which, and how a group of them reads (stdlib only).

Only like with like: blocked Python waiters in this process are the *in-process wake paths*; signal
arms, cross-process arms, spinning waiters and the C floors are grouped apart (:data:`GROUPS`), because
their waiter state or scope makes them other experiments.

A group's arms are listed by p50, then name.  A fastest arm is named only when it is clearly faster
(:func:`~wakelab.analysis.guidance.noise.clearly_faster`) than every other arm of its group.  Otherwise the guidance
names the *leaders*: the arms from the lowest p50 up that are not clearly slower than it, up to the first one that is
-- so the group "within this run's noise" is always a prefix of the p50 order, never a higher ratio listed before a
lower one called clearly slower.  An arm after that prefix still not clearly slower (its own medians spread that wide)
is listed among the slower arms with the range that keeps it from being called slower.  ``×`` is always an arm's p50
over the lowest p50 of its group."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from wakelab.analysis.guidance.noise import (
    ALPHA, LARGE_RATIO, MIN_CLAIM_RATIO, NO_RANGE_RATIO, Level, beyond_noise, clear_of_noise, clearly_faster, format_times,
    measured_levels, positive, within_noise, within_phrase)
from wakelab.core.registry import declared_group
from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.formatting import format_ns, format_rate

# Groups of latency arms that are compared among themselves (see the module docstring).
IN_PROCESS = "in-process"
SIGNAL_GROUP = "signals"
PROCESS_GROUP = "processes"
HANDOFF_GROUP = "handoff"
SPINNING = "spinning"
NATIVE = "native"
STORM_GROUP = "storms"
GROUPS: Tuple[Tuple[str, str], ...] = (
    (IN_PROCESS, "in-process wake (blocked waiter)"),
    (SIGNAL_GROUP, "signal wake (blocked waiter)"),
    (PROCESS_GROUP, "across processes"),
    (HANDOFF_GROUP, "hand-offs (executor submit, or waking a subinterpreter)"),
    (SPINNING, "spinning waiters"),
    (STORM_GROUP, "reaction under a signal storm (see the storm table)"),
    (NATIVE, "C floor"),
)


# Groups whose arms are each an experiment of their own: listed by p50, never ranked.
UNRANKED_GROUPS = (SPINNING, NATIVE, STORM_GROUP)


def group_of(arm: ArmRecord) -> str:
    """Which group of :data:`GROUPS` a latency arm is compared within."""
    declared = declared_group(arm.name, arm.family)
    if declared in (NATIVE, STORM_GROUP):  # C floors, and each receiver of a storm: experiments of their own
        return declared
    if arm.waiter == "spinning":
        return SPINNING
    if declared == HANDOFF_GROUP:
        return HANDOFF_GROUP
    if arm.scope == "cross-process":
        return PROCESS_GROUP
    return declared or IN_PROCESS


# Where an arm stands in its group (:attr:`Ranked.standing`).
LEADER = "leader"      # the lowest p50, or not clearly slower than it and before any arm that is
SLOWER = "slower"      # clearly slower than the lowest
UNCLEAR = "unclear"    # after an arm that is clearly slower, yet not clearly slower itself: its own spread
UNRANKED = "unranked"  # in a group whose arms are each an experiment of their own


@dataclasses.dataclass(frozen=True)
class Ranked:
    """One arm in a ranking: its level, its p50 over the lowest p50 of its group, and where it stands."""

    level: Level
    ratio: float
    clearly_slower: bool
    standing: str = LEADER

    @property
    def name(self) -> str:
        return self.level.name

    @property
    def at_p50(self) -> str:
        """Its name and p50: "pipe 14.1 µs"."""
        return "%s %s" % (self.name, format_ns(self.level.p50_ns))


def rank_levels(levels: Sequence[Level], ranked: bool = True) -> Tuple[Ranked, ...]:
    """``levels`` by p50 (then name), each with its standing against the lowest."""
    members = sorted(levels, key=lambda lv: (lv.p50_ns, lv.name))
    if not members:
        return ()
    first = members[0]
    out: List[Ranked] = []
    leading = True
    for level in members:
        slower = ranked and level is not first and clearly_faster(first, level)
        if not ranked:
            standing = UNRANKED
        elif slower:
            standing, leading = SLOWER, False
        else:
            standing = LEADER if leading else UNCLEAR
        out.append(Ranked(level, level.p50_ns / first.p50_ns, slower, standing))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Ranking:
    """The measured arms of one group, lowest p50 first; ``open_loop``: p50s from each notify's scheduled instant."""

    group: str
    title: str
    ranked: Tuple[Ranked, ...]
    open_loop: bool = False

    @property
    def comparable(self) -> bool:
        return self.group not in UNRANKED_GROUPS

    @property
    def fastest(self) -> Ranked:
        return self.ranked[0]

    @property
    def slowest(self) -> Ranked:
        return self.ranked[-1]

    @property
    def leaders(self) -> Tuple[Ranked, ...]:
        return tuple(r for r in self.ranked if r.standing in (LEADER, UNRANKED))

    @property
    def unclear(self) -> Tuple[Ranked, ...]:
        return tuple(r for r in self.ranked if r.standing == UNCLEAR)

    @property
    def clear_fastest(self) -> bool:
        return self.comparable and len(self.ranked) > 1 and all(r.clearly_slower for r in self.ranked[1:])


def open_loop_interval(bundle: Bundle) -> Optional[float]:
    """The notify interval (µs) of an open-loop run, 0.0 where not recorded; None for a closed loop."""
    params = bundle.parameters
    if not params.open_loop:
        return None
    return positive(params.interval_us) or 0.0


def open_loop_note(bundle: Bundle) -> Optional[str]:
    """What an open-loop figure is, in a clause (None for a closed-loop run)."""
    interval = open_loop_interval(bundle)
    if interval is None:
        return None
    every = " (one every %s µs)" % format_rate(interval) if interval else ""
    return ("open loop: p50s from each notify's scheduled instant%s, so they include the notifier's lateness and "
            "any wait behind an earlier wake" % every)


def rank_wake_paths(bundle: Bundle) -> Tuple[Ranking, ...]:
    """Each group of measured latency arms (:data:`GROUPS` order) ranked by p50; empty groups left out."""
    levels: Dict[str, List[Level]] = {}
    for level in measured_levels(bundle).values():
        levels.setdefault(group_of(level.arm), []).append(level)
    open_loop = open_loop_interval(bundle) is not None
    rankings = []
    for group, title in GROUPS:
        ranked = rank_levels(levels.get(group, []), group not in UNRANKED_GROUPS)
        if ranked:
            rankings.append(Ranking(group, title, ranked, open_loop))
    return tuple(rankings)


def _times(ratio: float, explain: List[bool], base: str) -> str:
    if explain:
        return format_times(ratio)
    explain.append(True)
    return "%s %s" % (format_times(ratio), base)


def format_ranking(ranking: Ranking, limit: Optional[int] = None) -> str:
    """One group's arms by p50 ("within this run's noise of the lowest p50: pipe 14.1 µs, eventfd 15.3 µs; clearly
    slower (× the lowest p50): queue 2.2×, ...; slowest: mp-queue 104 µs (7.4×)"); ``limit`` keeps it short."""
    first = ranking.fastest
    text = first.at_p50
    if len(ranking.ranked) == 1:
        return text
    if not ranking.comparable:
        if len(ranking.ranked) > (2 if limit is not None else 4):
            last = ranking.slowest
            return "%d arms, each its own experiment, from %s to %s" % (len(ranking.ranked), text, last.at_p50)
        return ", ".join(r.at_p50 for r in ranking.ranked) + " (each its own experiment)"
    clear = ranking.clear_fastest
    base = "its p50" if clear else "the lowest p50"
    explain: List[bool] = []
    leaders = ranking.leaders
    if clear:
        text = "fastest %s: %s" % (beyond_noise(first.level), text)
    elif len(leaders) > 1:
        shown = leaders if limit is None else leaders[:limit + 1]
        more = len(leaders) - len(shown)
        names = []
        for r in shown:
            name = r.at_p50
            if r.ratio >= LARGE_RATIO:  # noise that wide: say how wide
                name += " (%s; %s)" % (_times(r.ratio, explain, base), within_phrase(first.level, r.level))
            names.append(name)
        text = "%s: %s%s" % (within_noise(first.level, "the lowest p50"), ", ".join(names), " and %d more" % more if more else "")
    else:
        text = "lowest p50, clear of the next %s: %s" % (beyond_noise(first.level), text)
    if ranking.open_loop:
        text = "open loop, p50s from each notify's scheduled instant -- " + text
    rest = [r for r in ranking.ranked if r.standing != LEADER]
    if not rest:
        return text

    def entry(r: Ranked, short: bool, inside: bool = False) -> str:
        words = _times(r.ratio, explain, base)
        if r.standing == UNCLEAR:
            why = "not clearly slower: %s" % ("its own spread" if short else within_phrase(first.level, r.level))
            words += ("; %s" if inside else " (%s)") % why
        return words

    last = rest[-1]
    middle = rest[:-1] if limit is None else [r for r in rest[:-1] if r.standing == UNCLEAR]
    if middle:
        header = "clearly slower" if all(r.standing == SLOWER for r in middle) else "slower by p50"
        explain.append(True)  # the header says what × is
        text += "; %s (× %s): %s" % (header, base, ", ".join("%s %s" % (r.name, entry(r, limit is not None)) for r in middle))
    text += "; slowest: %s (%s)" % (last.at_p50, entry(last, limit is not None, True))
    return text


def how_judged(ranking: "Ranking") -> str:
    first = ranking.fastest.level
    if not first.ranged:
        return ("no spread between workers was measured (one worker per arm, or --in-process), so only a p50 at "
                "least %s× the lowest counts as slower" % NO_RANGE_RATIO)
    what = first.unit_noun
    if first.units:
        return ("an arm is clearly slower only when its %s medians lie above the lowest arm's beyond chance (exact "
                "rank test, two-sided p at most %s, or no overlap at all) and its p50 is at least %s× the lowest"
                % (what, ALPHA, MIN_CLAIM_RATIO))
    return ("an arm is clearly slower only when its %s medians all lie above the lowest arm's and its p50 is at "
            "least %s× the lowest" % (what, MIN_CLAIM_RATIO))


def wide_note(leaders: Sequence[Ranked]) -> str:
    """Where arms :data:`LARGE_RATIO` or more apart are within the noise, how wide the noise is."""
    if len(leaders) < 2 or max(r.ratio for r in leaders) < LARGE_RATIO:
        return ""
    widest = max((r.level for r in leaders), key=lambda lv: (lv.high_ns / lv.low_ns, lv.name))
    return " -- noise that wide: %s" % widest.spread_words(widest.name + "'s")


def lowest_words(ranking: Ranking, noun: str) -> str:
    """"the fastest NOUN, NAME (P50)", or the only one measured, or the one with the lowest p50."""
    if len(ranking.ranked) == 1:
        which = "the only %s measured" % noun
    else:
        which = "the fastest %s" % noun if ranking.clear_fastest else "the %s with the lowest p50" % noun
    return "%s, %s (%s)" % (which, ranking.fastest.name, format_ns(ranking.fastest.level.p50_ns))


def and_list(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else "%s and %s" % (", ".join(words[:-1]), words[-1])


def group_clause(ranking: Ranking, scope: str) -> str:
    first = ranking.fastest
    if len(ranking.ranked) == 1:
        return "%s, %s takes %s (p50)" % (scope, first.name, format_ns(first.level.p50_ns))
    if ranking.clear_fastest:
        return "%s, %s is fastest (%s, %s)" % (scope, first.name, format_ns(first.level.p50_ns), clear_of_noise(first.level))
    leaders = ranking.leaders
    if len(leaders) > 1:
        return "%s, %s are %s%s" % (scope, and_list([first.at_p50] + [r.name for r in leaders[1:]]),
                                    within_noise(first.level, "the lowest p50"), wide_note(leaders))
    return "%s, %s has the lowest p50 (%s), though not clearly below %s" % (
        scope, first.name, format_ns(first.level.p50_ns), and_list([r.name for r in ranking.unclear]))
