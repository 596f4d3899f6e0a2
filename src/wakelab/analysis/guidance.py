"""Guidance: what this run's figures tell someone choosing a wake path (stdlib only).

The original Lab 135 write-up ended with advice for SRE work: Event (or
Condition/Queue) for in-process wake-ups; signals for process control, with
handlers that only set a flag or write a byte to a wakeup fd; handlers run in
the main thread only; a busy-wait figure says nothing about ``pause()`` or
``sigwait``; installing a handler is cheap.  This module turns a run's own
figures into that advice, so that it changes when the figures change and says
nothing about an arm the run did not measure.

:func:`guidance_for` returns a :class:`Guidance`: a one-line ``headline`` and
``items`` (:class:`Advice` records: ``topic``, ``text``, ``cites``), each
citing the arms and figures (:class:`Cite`) it rests on.  Only arms with
status ``ok`` and figures are cited.  :func:`rank_wake_paths` is the ranking
the verdict of a many-armed run lays out.

When is one arm faster than another?
------------------------------------
summary.json keeps no bootstrap interval of an arm's median, but it keeps the
median of each repetition (``repetitions``) or each worker process
(``workers``), and their range (``spread``): the run's own view of how far the
level moves from one process or pass to the next -- the variation that
dominates wake latency (DESIGN: the same arm at 5.7 µs in one run and 13 µs
in the next).  Those medians are the units of the comparison
(:func:`separation`): an arm is *clearly* slower than another only when its
units lie above the other's beyond chance -- the exact two-sided rank test
(Mann-Whitney) of the two sets of medians at :data:`ALPHA`, or no overlap at
all, the strongest result the test can give with three a side -- and its p50
is at least :data:`MIN_CLAIM_RATIO` times the other's (a planted delay makes
every arm's workers agree to a fraction of a percent, and a 4% edge does not
choose a wake path).  A bundle that kept only the range is judged by it
(ranges that do not overlap).  Where a side has no units (one worker,
``--in-process``), nothing measures the noise, and only a ratio of at least
:data:`NO_RANGE_RATIO` is called a difference.  Nothing random enters: the
test is exact and the order of arms is their p50, then their name, so the same
evidence always gives the same words.

How a group reads
-----------------
A group's arms are listed by p50.  A fastest arm is named only when it is
clearly faster than every other arm of its group (:attr:`Ranking.clear_fastest`).
Otherwise the guidance names the *leaders*: the arms, from the lowest p50 up,
that are not clearly slower than it, up to the first one that is -- so the
group "within this run's noise" is always a prefix of the p50 order, never a
higher ratio listed before a lower one called clearly slower.  An arm after
that prefix that is still not clearly slower than the lowest (its own medians
spread wide enough to reach the lowest's) is listed among the slower arms with
the range that keeps it from being called slower.  A ratio of
:data:`LARGE_RATIO` or more is called noise only together with the ranges that
make it so.  ``×`` is always an arm's p50 over the lowest p50 of its group.

Open loop
---------
``--mode open`` notifies on a fixed schedule (one notify every
``interval_us``, whether or not the waiter is ready) and takes each latency
from the notify's *scheduled* instant, not from ``t0``: an open-loop figure
includes the notifier's own lateness (its sleep overshooting the schedule,
the ``notify_late`` component) and any wait behind an earlier wake.  The
guidance says so first, and every figure it quotes from such a run is marked
as one (:func:`open_loop_note`).

Which arms are compared with which
----------------------------------
Only like with like: blocked Python waiters in this process (threads, file
descriptors, asyncio, and any other family that is not signals, processes or
the C floor) are the *in-process wake paths*; signal arms, cross-process arms,
spinning waiters and the C floors are grouped apart (:data:`GROUPS`), because
their waiter state or scope makes them other experiments.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from wakelab.evidence.model import LATENCY, ArmRecord, Bundle, WarningKind
from wakelab.core.model import ROLE_HANDLER, ROLE_HANDLER_COST, ROLE_POLLS, ROLE_POOL, ROLE_SIGWAIT, ROLE_UNWRAPPED_INSTALL
from wakelab.core.registry import arms_with_role, declared_group
from wakelab.formatting import format_ns, format_rate, format_ratio

# Without a range of worker medians, only a ratio this large is called a difference.
NO_RANGE_RATIO = 1.5
# Nor is a ratio below this, however tight the ranges: a 4% edge does not choose a wake path.
MIN_CLAIM_RATIO = 1.1
# The two-sided level of the rank test of two arms' repetition (or worker) medians.
ALPHA = 0.05
# A ratio this large is called noise only with the ranges that make it so.
LARGE_RATIO = 2.0

# Topics of the advice, in the order they are given.
PREFER = "in-process wake"
PROCESSES = "across processes"
SIGNALS = "signal delivery"
INSTALL = "handler install"
TAIL = "tail"
POLLING = "polling"
HANDOFF = "hand-off"
PITFALL = "pitfall"
SELF_TEST = "self-test"
OPEN_LOOP = "open loop"

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

# Which arm plays which part in the advice -- a handler's cost against the same path without one, the
# arms that run a handler or take a signal with sigwait, the executors, a polling wait's blocking
# alternative, the install without its Python wrapper -- each arm declares (wakelab.core.model.Role);
# arms_with_role reads them.
# How many handlers a reload re-installs in the install arithmetic (SIGHUP, SIGTERM, SIGINT).
RELOAD_HANDLERS = 3


@dataclasses.dataclass(frozen=True)
class Cite:
    """One figure a claim rests on: ``arm``'s ``figure`` (``p50``, ``p90``, ``p99``, ``min``, ``max``,
    ``notify_late_p50`` -- the p50 of an open-loop arm's notifier lateness -- or ``per_call`` for a rate
    arm: 1e9 / its median ops/s), in nanoseconds."""

    arm: str
    figure: str
    value_ns: float

    def to_dict(self) -> Dict[str, Any]:
        return {"arm": self.arm, "figure": self.figure, "value_ns": self.value_ns}


@dataclasses.dataclass(frozen=True)
class Advice:
    """One claim: its ``topic`` (one of the topic constants), its worded ``text``, and the figures it cites."""

    topic: str
    text: str
    cites: Tuple[Cite, ...]

    def to_dict(self) -> Dict[str, Any]:
        return {"topic": self.topic, "text": self.text, "cites": [c.to_dict() for c in self.cites]}


@dataclasses.dataclass(frozen=True)
class Guidance:
    """What a run's figures advise: a one-line ``headline`` and the :class:`Advice` ``items``.

    Iterating a Guidance gives its items.  ``to_dict()`` is its JSON form::

        {"headline": str,
         "items": [{"topic": str, "text": str,
                    "cites": [{"arm": str, "figure": str, "value_ns": float}, ...]}, ...]}
    """

    headline: str
    items: Tuple[Advice, ...]

    def __iter__(self) -> Iterator[Advice]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def cited_arms(self) -> List[str]:
        """Every arm any item cites, in first-cited order."""
        seen: List[str] = []
        for item in self.items:
            for cite in item.cites:
                if cite.arm not in seen:
                    seen.append(cite.arm)
        return seen

    def to_dict(self) -> Dict[str, Any]:
        return {"headline": self.headline, "items": [item.to_dict() for item in self.items]}


def format_times(ratio: float) -> str:
    """A ratio between arms: two decimals below 2× (``1.08×``, so that 1.08 and 1.12 do not both read
    1.1× on either side of :data:`MIN_CLAIM_RATIO`), else as :func:`~wakelab.formatting.format_ratio`."""
    if math.isfinite(ratio) and 0 < ratio < 1.995:
        return "%.2f×" % ratio
    return format_ratio(ratio)


# -- an arm's level and the noise around it ----------------------------------------------------


def _number(value: Any) -> Optional[float]:
    """A finite float, or None (evidence may hold nulls, booleans or out-of-range numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    result = float(value)
    return result if math.isfinite(result) else None


def _positive(value: Any) -> Optional[float]:
    number = _number(value)
    return number if number is not None and number > 0 else None


def _interval(low_ns: float, high_ns: float) -> str:
    """``2.49 µs to 6.74 µs``."""
    return "%s to %s" % (format_ns(low_ns), format_ns(high_ns))


@dataclasses.dataclass(frozen=True)
class Level:
    """A measured latency arm's median and the medians of its repetitions or worker processes (ns).

    ``units`` are those medians, sorted (empty where the bundle kept only
    their range); ``low_ns`` and ``high_ns`` their range, widened to hold the
    pooled median; ``between`` names what they are the medians of
    (``repetitions`` or ``workers``).  ``ranged`` is False when the run
    recorded no range (fewer than two workers): ``low_ns == high_ns == p50_ns``
    then.
    """

    arm: ArmRecord
    p50_ns: float
    low_ns: float
    high_ns: float
    ranged: bool
    units: Tuple[float, ...] = ()
    between: str = "workers"

    @property
    def name(self) -> str:
        return self.arm.name

    def figure(self, key: str) -> Optional[float]:
        """``p50``, ``p90``, ``p99`` or ``max`` of the arm, in ns (None when not reported)."""
        lat = self.arm.latency
        if lat is None:
            return None
        value = lat.max_ns if key == "max" else getattr(lat, key + "_ns", None)
        return _positive(value)

    def cite(self, key: str = "p50") -> Cite:
        value = self.p50_ns if key == "p50" else self.figure(key)
        return Cite(self.name, key, float(value if value is not None else self.p50_ns))

    @property
    def unit_noun(self) -> str:
        """``repetition`` or ``worker`` (``its 5 repetition medians``)."""
        return "repetition" if self.between == "repetitions" else "worker"

    @property
    def unit_words(self) -> str:
        """``repetitions'`` or ``worker processes'`` (whose medians the range spans)."""
        return "repetitions'" if self.between == "repetitions" else "worker processes'"

    def spread_words(self, own: str = "its") -> str:
        """``its 5 repetitions' medians ranged 2.49 µs to 6.74 µs`` (for the text; ``own`` for "its")."""
        count = "%d " % len(self.units) if self.units else ""
        return "%s %s%s medians ranged %s" % (own, count, self.unit_words, _interval(self.low_ns, self.high_ns))


def _units_of(arm: ArmRecord, between: str) -> Tuple[float, ...]:
    """The medians a spread spans: each repetition's (``between`` repetitions) or each worker's."""
    if between == "repetitions":
        raw: Sequence[Any] = arm.repetitions.values if arm.repetitions is not None else ()
    else:
        raw = [w.p50_ns for w in arm.workers or () if w.recorded]
    values = [_positive(v) for v in raw]
    if len(values) < 2 or any(v is None for v in values):
        return ()
    return tuple(sorted(float(v) for v in values if v is not None))


def level_of(arm: ArmRecord) -> Optional[Level]:
    """The arm's :class:`Level`, or None unless it is a measured latency arm with a positive p50."""
    if arm.kind != LATENCY or not arm.measured or arm.latency is None:
        return None
    p50 = _positive(arm.latency.p50_ns)
    if p50 is None:
        return None
    spread = arm.entry.get("spread") if isinstance(arm.entry, Mapping) else None
    if isinstance(spread, Mapping) and spread.get("of", "p50_ns") == "p50_ns":
        low, high = _positive(spread.get("min")), _positive(spread.get("max"))
        if low is not None and high is not None and low <= high:
            between = "repetitions" if spread.get("between") == "repetitions" else "workers"
            units = _units_of(arm, between)
            if units and (units[0] != low or units[-1] != high):
                units = ()  # medians that are not the ones the range spans: judge by the range alone
            return Level(arm, p50, min(low, p50), max(high, p50), True, units, between)
    return Level(arm, p50, p50, p50, False)


# How two arms are told apart (:attr:`Apart.basis`).
RANKS = "ranks"    # the exact rank test of their repetition (or worker) medians
RANGES = "ranges"  # only the range of those medians was kept: ranges that do not overlap
RATIO = "ratio"    # a side has no spread: only a ratio of NO_RANGE_RATIO or more


@dataclasses.dataclass(frozen=True)
class Apart:
    """How this run tells arm ``a`` from a slower-by-p50 arm ``b`` (:func:`separation`).

    ``ratio`` is b's p50 over a's; ``clear`` whether b is clearly slower;
    ``basis`` one of :data:`RANKS`, :data:`RANGES`, :data:`RATIO`.  For
    :data:`RANKS`: ``crossings``, how many of the ``pairs`` of medians (one of
    a's, one of b's) have b's not above a's, and ``p_value``, the exact
    two-sided rank test's.
    """

    ratio: float
    clear: bool
    basis: str
    crossings: int = 0
    pairs: int = 0
    p_value: Optional[float] = None


@functools.lru_cache(maxsize=64)
def _arrangements(m: int, n: int) -> Tuple[int, ...]:
    """How many orderings of m values of one side and n of the other give each count of crossings
    (0 .. m*n): the exact null distribution of the Mann-Whitney U statistic."""
    row: List[List[int]] = [[1] for _ in range(n + 1)]  # m = 0: one ordering, no crossings
    for i in range(1, m + 1):
        new: List[List[int]] = [[1]]  # n = 0
        for j in range(1, n + 1):
            counts = [0] * (i * j + 1)
            for u, c in enumerate(new[j - 1]):  # the largest value is one of b's: no new crossing
                counts[u] += c
            for u, c in enumerate(row[j]):  # the largest is one of a's: it crosses all j of b's
                counts[u + j] += c
            new.append(counts)
        row = new
    return tuple(row[n])


# Up to this many pairs the rank test is exact; beyond, its normal approximation (with a continuity correction).
EXACT_PAIRS = 900


def rank_test_p(crossings: int, m: int, n: int) -> float:
    """The two-sided p-value of ``crossings`` (pairs out of order) between m and n values: exact up to
    :data:`EXACT_PAIRS` pairs (the same for the same counts, whatever the values)."""
    if m * n > EXACT_PAIRS:
        z = (crossings + 0.5 - m * n / 2.0) / math.sqrt(m * n * (m + n + 1) / 12.0)
        return min(1.0, math.erfc(-z / math.sqrt(2.0)))
    counts = _arrangements(m, n)
    tail = sum(counts[: crossings + 1])
    return min(1.0, 2.0 * tail / sum(counts))


def separation(a: Level, b: Level) -> Apart:
    """Whether ``b`` is clearly slower than ``a`` in this run (module docstring), and on what basis."""
    ratio = b.p50_ns / a.p50_ns
    if a.ranged and b.ranged and a.units and b.units:
        crossings = sum(1 for x in a.units for y in b.units if y <= x)
        p_value = rank_test_p(crossings, len(a.units), len(b.units))
        clear = ratio >= MIN_CLAIM_RATIO and (crossings == 0 or p_value <= ALPHA)
        return Apart(ratio, clear, RANKS, crossings, len(a.units) * len(b.units), p_value)
    if a.ranged and b.ranged:
        return Apart(ratio, ratio >= MIN_CLAIM_RATIO and a.high_ns < b.low_ns, RANGES)
    return Apart(ratio, ratio >= max(MIN_CLAIM_RATIO, NO_RANGE_RATIO), RATIO)


def clearly_faster(a: Level, b: Level) -> bool:
    """True when ``a``'s median is below ``b``'s by more than this run's noise (module docstring)."""
    return separation(a, b).clear


def _noise_phrase(a: Level, b: Level) -> str:
    """How the run tells ``b`` from the faster ``a``, when it does (for the text)."""
    apart = separation(a, b)
    if apart.basis == RANKS:
        if apart.crossings == 0:
            return "every one of %s's %d %s medians is above every one of %s's %d, and the ratio is over %s×" % (
                b.name, len(b.units), b.unit_noun, a.name, len(a.units), MIN_CLAIM_RATIO)
        return ("%s's %s medians are above %s's in %d of %d pairings (exact rank test, two-sided p %.3f), and the "
                "ratio is over %s×" % (b.name, b.unit_noun, a.name, apart.pairs - apart.crossings,
                                        apart.pairs, apart.p_value or 0.0, MIN_CLAIM_RATIO))
    if apart.basis == RANGES:
        return "their %s medians do not overlap, and it is over %s×" % (b.unit_words, MIN_CLAIM_RATIO)
    return "no spread between workers to judge by (a single worker, or in-process), so only a %s× difference counts" % NO_RANGE_RATIO


def _within_phrase(a: Level, b: Level, own: str = "its") -> str:
    """Why ``b`` is not clearly slower than ``a``: the ranges that overlap, or the rule that applies (``own``:
    how the text refers to ``b``)."""
    apart = separation(a, b)
    if apart.ratio < MIN_CLAIM_RATIO:
        return "under %s×" % MIN_CLAIM_RATIO
    if apart.basis == RATIO:
        return "under %s× with no spread between workers to judge by" % NO_RANGE_RATIO
    return "%s, %s's %s" % (b.spread_words(own), a.name, _interval(a.low_ns, a.high_ns))


NO_SPREAD = "no spread between workers to judge noise by"


def _within(first: Level, of: str) -> str:
    """``within this run's noise of {of}``; without a spread to judge by, ``within 1.5× of {of} (...)``."""
    if first.ranged:
        return "within this run's noise of %s" % of
    return "within %s× of %s (%s)" % (NO_RANGE_RATIO, of, NO_SPREAD)


def _beyond(first: Level) -> str:
    """``beyond this run's noise``; without a spread to judge by, ``by 1.5× or more (...)``."""
    return "beyond this run's noise" if first.ranged else "by %s× or more (%s)" % (NO_RANGE_RATIO, NO_SPREAD)


def _clear_of(first: Level) -> str:
    """``beyond this run's noise``, inside a sentence; without a spread, ``by at least the 1.5× that counts ...``."""
    if first.ranged:
        return "beyond this run's noise"
    return "by at least the %s× that counts with %s" % (NO_RANGE_RATIO, NO_SPREAD)


def _judged(ranking: "Ranking") -> str:
    """How the ranking's noise was judged, in a sentence's words."""
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


# -- grouping and ranking ------------------------------------------------------------------------


# Groups whose arms are each an experiment of their own: listed by p50, never ranked.
UNRANKED_GROUPS = (SPINNING, NATIVE, STORM_GROUP)


def group_of(arm: ArmRecord) -> str:
    """Which group of :data:`GROUPS` a latency arm is compared within: the group its family or the arm
    declares (``Family.group``, ``Arm.group``), where its waiter state and scope do not say otherwise."""
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
    """One arm in a ranking: its level, its p50 over the lowest p50 of its group, whether it is clearly
    slower than that arm, and where it stands (:data:`LEADER`, :data:`SLOWER`, :data:`UNCLEAR`,
    :data:`UNRANKED`)."""

    level: Level
    ratio: float
    clearly_slower: bool
    standing: str = LEADER

    @property
    def name(self) -> str:
        return self.level.name


def rank_levels(levels: Sequence[Level], ranked: bool = True) -> Tuple[Ranked, ...]:
    """``levels`` by p50 (then name), each with its standing against the lowest (module docstring)."""
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
    """The measured arms of one group, lowest p50 first.

    ``leaders`` are the lowest-p50 arm and those after it not clearly slower
    than it, up to the first that is (within this run's noise); ``unclear``
    the arms after that which are not clearly slower either (their own
    spread is that wide); ``ranked`` is every arm, in order.  ``open_loop``:
    the p50s were taken from each notify's scheduled instant.
    """

    group: str
    title: str
    ranked: Tuple[Ranked, ...]
    open_loop: bool = False

    @property
    def comparable(self) -> bool:
        """False for groups whose arms differ in waiter state or scope (spinning waiters, C floors)."""
        return self.group not in UNRANKED_GROUPS

    @property
    def fastest(self) -> Ranked:
        """The arm with the lowest p50 (the fastest only where :attr:`clear_fastest`)."""
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
        """The lowest p50 is clearly below every other arm's: the group has a fastest arm."""
        return self.comparable and len(self.ranked) > 1 and all(r.clearly_slower for r in self.ranked[1:])


def _open_loop_interval(bundle: Bundle) -> Optional[float]:
    """The notify interval (µs) of an open-loop run, 0.0 where it is not recorded; None for a closed loop."""
    params = bundle.parameters
    if not params.open_loop:
        return None
    return _positive(params.interval_us) or 0.0


def open_loop_note(bundle: Bundle) -> Optional[str]:
    """What an open-loop figure is, in a clause (None for a closed-loop run): ``open loop: p50s from each
    notify's scheduled instant (one every 500 µs), so they include the notifier's lateness and any wait
    behind an earlier wake``."""
    interval = _open_loop_interval(bundle)
    if interval is None:
        return None
    every = " (one every %s µs)" % format_rate(interval) if interval else ""
    return ("open loop: p50s from each notify's scheduled instant%s, so they include the notifier's lateness and "
            "any wait behind an earlier wake" % every)


def rank_wake_paths(bundle: Bundle) -> Tuple[Ranking, ...]:
    """Each group of measured latency arms (:data:`GROUPS` order) ranked by p50; empty groups left out."""
    levels: Dict[str, List[Level]] = {}
    for arm in bundle.arms():
        level = level_of(arm)
        if level is not None:
            levels.setdefault(group_of(arm), []).append(level)
    open_loop = _open_loop_interval(bundle) is not None
    rankings = []
    for group, title in GROUPS:
        ranked = rank_levels(levels.get(group, []), group not in UNRANKED_GROUPS)
        if ranked:
            rankings.append(Ranking(group, title, ranked, open_loop))
    return tuple(rankings)


def _times(ratio: float, explain: List[bool], base: str) -> str:
    """``1.55×``, with what it is a ratio to the first time a text shows one (``explain`` holds that)."""
    if explain:
        return format_times(ratio)
    explain.append(True)
    return "%s %s" % (format_times(ratio), base)


def format_ranking(ranking: Ranking, limit: Optional[int] = None) -> str:
    """One group's arms by p50, in the words of the module docstring ("How a group reads")::

        within this run's noise of the lowest p50: pipe 14.1 µs, eventfd 15.3 µs, event 16.6 µs;
        clearly slower (× the lowest p50): queue 2.2×, ...; slowest: mp-queue 104 µs (7.4×)

    or ``fastest beyond this run's noise: event 10.0 µs; clearly slower (× its p50): ...``.  ``limit``
    keeps the text short: the leaders (at most ``limit`` after the first), the arms not clearly
    slower by their own spread, then only the slowest.
    """
    first = ranking.fastest
    text = "%s %s" % (first.name, format_ns(first.level.p50_ns))
    if len(ranking.ranked) == 1:
        return text
    if not ranking.comparable:
        if len(ranking.ranked) > (2 if limit is not None else 4):
            last = ranking.slowest
            return "%d arms, each its own experiment, from %s to %s %s" % (
                len(ranking.ranked), text, last.name, format_ns(last.level.p50_ns))
        return ", ".join("%s %s" % (r.name, format_ns(r.level.p50_ns)) for r in ranking.ranked) + " (each its own experiment)"
    clear = ranking.clear_fastest
    base = "its p50" if clear else "the lowest p50"
    explain: List[bool] = []
    leaders = ranking.leaders
    if clear:
        text = "fastest %s: %s" % (_beyond(first.level), text)
    elif len(leaders) > 1:
        shown = leaders if limit is None else leaders[:limit + 1]
        more = len(leaders) - len(shown)
        names = []
        for r in shown:
            name = "%s %s" % (r.name, format_ns(r.level.p50_ns))
            if r.ratio >= LARGE_RATIO:  # noise that wide: say how wide
                name += " (%s; %s)" % (_times(r.ratio, explain, base), _within_phrase(first.level, r.level))
            names.append(name)
        text = "%s: %s%s" % (_within(first.level, "the lowest p50"), ", ".join(names), " and %d more" % more if more else "")
    else:
        text = "lowest p50, clear of the next %s: %s" % (_beyond(first.level), text)
    if ranking.open_loop:
        text = "open loop, p50s from each notify's scheduled instant -- " + text
    rest = [r for r in ranking.ranked if r.standing != LEADER]
    if not rest:
        return text

    def entry(r: Ranked, short: bool, inside: bool = False) -> str:
        """``1.55×``; an arm not clearly slower says why (``inside`` parentheses already: after a semicolon)."""
        words = _times(r.ratio, explain, base)
        if r.standing == UNCLEAR:
            why = "not clearly slower: %s" % ("its own spread" if short else _within_phrase(first.level, r.level))
            words += ("; %s" if inside else " (%s)") % why
        return words

    last = rest[-1]
    middle = rest[:-1] if limit is None else [r for r in rest[:-1] if r.standing == UNCLEAR]
    if middle:
        header = "clearly slower" if all(r.standing == SLOWER for r in middle) else "slower by p50"
        explain.append(True)  # the header says what × is
        text += "; %s (× %s): %s" % (header, base, ", ".join("%s %s" % (r.name, entry(r, limit is not None)) for r in middle))
    text += "; slowest: %s %s (%s)" % (last.name, format_ns(last.level.p50_ns), entry(last, limit is not None, True))
    return text


# -- the advice ------------------------------------------------------------------------------------


def _measured_levels(bundle: Bundle) -> Dict[str, Level]:
    out: Dict[str, Level] = {}
    for arm in bundle.arms():
        level = level_of(arm)
        if level is not None:
            out[arm.name] = level
    return out


def _tail_figure(level: Level) -> Tuple[str, Optional[float]]:
    """The highest percentile the arm reports (p99, else p90), or its max."""
    for key in ("p99", "p90", "max"):
        value = level.figure(key)
        if value is not None:
            return key, value
    return "max", None


def _prefer_advice(ranking: Optional[Ranking]) -> Tuple[Optional[Advice], str]:
    """The in-process recommendation and its headline clause."""
    if ranking is None:
        return None, ""
    first = ranking.fastest
    cites = [first.level.cite("p50")]
    p50_word = "open-loop p50" if ranking.open_loop else "p50"
    if len(ranking.ranked) == 1:
        tail_key, tail = _tail_figure(first.level)
        if tail is not None:
            cites.append(first.level.cite(tail_key))
        text = ("%s is the only in-process wake path this run measured: %s %s%s. Nothing here ranks it against "
                "another (--lab catalogue ranks it against the other wake paths)."
                % (first.name, p50_word, format_ns(first.level.p50_ns),
                   ", %s %s" % (tail_key.replace("_", "."), format_ns(tail)) if tail is not None else ""))
        if first.name == "event":
            text += " threading.Event is the safe, idiomatic choice for waking a thread."
        return Advice(PREFER, text, tuple(cites)), "in-process, %s wakes a thread in %s (%s)" % (
            first.name, format_ns(first.level.p50_ns), p50_word)
    leaders = ranking.leaders
    unclear = ranking.unclear
    slower = [r for r in ranking.ranked if r.clearly_slower]
    if ranking.clear_fastest:
        runner_up = ranking.ranked[1]
        cites.append(runner_up.level.cite())
        parts = ["Fastest in-process wake: %s, %s %s, clear of every other %s." % (
                     first.name, p50_word, format_ns(first.level.p50_ns), _clear_of(first.level)),
                 "Prefer it where the wake path is hot: the next, %s (%s), is %s that (%s)." % (
                     runner_up.name, format_ns(runner_up.level.p50_ns), format_times(runner_up.ratio),
                     _noise_phrase(first.level, runner_up.level))]
        headline = "prefer %s in-process (%s %s; %s %s that, %s)" % (
            first.name, format_ns(first.level.p50_ns), p50_word, runner_up.name, format_times(runner_up.ratio),
            _clear_of(first.level))
        base_p50 = "the fastest's %s" % p50_word
    else:
        base_p50 = "the lowest %s" % p50_word
        if len(leaders) > 1:
            others = leaders[1:]
            cites += [r.level.cite() for r in others]
            parts = ["No in-process wake is fastest %s. %s of the lowest %s, %s's %s, with each %s's multiple of that: "
                     "%s -- choose among these by API, not speed." % (
                         _beyond(first.level), "Within it" if first.level.ranged else "Within %s×" % NO_RANGE_RATIO,
                         p50_word, first.name, format_ns(first.level.p50_ns), p50_word, ", ".join(
                             "%s %s (%s%s)" % (r.name, format_ns(r.level.p50_ns), format_times(r.ratio),
                                               "; %s" % _within_phrase(first.level, r.level) if r.ratio >= LARGE_RATIO else "")
                             for r in others))]
            named = [r for i, r in enumerate(others) if i < 2 or r.name == "event" or len(others) <= 3]
            rest = len(others) - len(named)
            headline = "in-process wakes %s: %s, %s%s (choose among them by API)%s" % (
                _within(first.level, "the lowest " + p50_word),
                "%s %s" % (first.name, format_ns(first.level.p50_ns)),
                ", ".join("%s %s" % (r.name, format_ns(r.level.p50_ns)) for r in named),
                " and %d more" % rest if rest else "", _wide_note(leaders))
        else:
            runner_up = ranking.ranked[1]
            cites.append(runner_up.level.cite())
            parts = ["Lowest in-process %s: %s, %s; the next, %s (%s), is %s that, %s (%s)." % (
                p50_word, first.name, format_ns(first.level.p50_ns), runner_up.name, format_ns(runner_up.level.p50_ns),
                format_times(runner_up.ratio), _clear_of(first.level), _noise_phrase(first.level, runner_up.level))]
            headline = "in-process, %s has the lowest %s (%s), though not clearly below %s" % (
                first.name, p50_word, format_ns(first.level.p50_ns), ", ".join(r.name for r in unclear))
        parts.append("How this run judges noise: %s." % _judged(ranking))
    if unclear:
        cites += [r.level.cite() for r in unclear]
        parts.append("Not clearly slower than %s either, though listed after an arm that is: %s." % (
            first.name, "; ".join("%s %s (%s %s; %s)" % (r.name, format_ns(r.level.p50_ns), format_times(r.ratio), base_p50,
                                                            _within_phrase(first.level, r.level)) for r in unclear)))
    event = next((r for r in ranking.ranked if r.name == "event"), None)
    if event is not None and event is not first:
        cites.append(event.level.cite())
        if event.clearly_slower:
            if not (ranking.clear_fastest and event is ranking.ranked[1]):  # else the headline names it already
                headline += "; event clearly slower (%s %s)" % (format_times(event.ratio), base_p50)
            parts.append("threading.Event (event, %s) is clearly slower, %s %s here; it stays the idiomatic choice "
                         "where a wake-up is not the bottleneck." % (format_ns(event.level.p50_ns), format_times(event.ratio), base_p50))
        elif event.standing == UNCLEAR:
            headline += "; event %s %s, not clearly slower" % (format_times(event.ratio), base_p50)
            parts.append("threading.Event (event, %s) is not clearly slower than %s: keep it where it fits." % (
                format_ns(event.level.p50_ns), first.name))
        else:
            parts.append("threading.Event (event, %s) is among them: keep it where it fits." % format_ns(event.level.p50_ns))
    if slower:
        last = slower[-1]
        cites.append(last.level.cite())
        parts.append("Slowest: %s, %s (%s %s)." % (last.name, format_ns(last.level.p50_ns), format_times(last.ratio), base_p50))
    return Advice(PREFER, " ".join(parts), tuple(_unique(cites))), headline


def _wide_note(leaders: Sequence[Ranked]) -> str:
    """Where arms :data:`LARGE_RATIO` or more apart are within the noise, how wide the noise is: `` -- noise
    that wide: X's 3 worker processes' medians ranged 6.01 µs to 72.1 µs`` (the widest range among them)."""
    if len(leaders) < 2 or max(r.ratio for r in leaders) < LARGE_RATIO:
        return ""
    widest = max((r.level for r in leaders), key=lambda lv: (lv.high_ns / lv.low_ns, lv.name))
    return " -- noise that wide: %s" % widest.spread_words(widest.name + "'s")


def _lowest_words(ranking: Ranking, noun: str) -> str:
    """``the fastest in-process wake`` where the group has a fastest arm, else ``the in-process wake with the
    lowest p50`` (or ``the only ...`` of a group of one)."""
    if len(ranking.ranked) == 1:
        return "the only %s measured" % noun
    if ranking.clear_fastest:
        return "the fastest %s" % noun
    return "the %s with the lowest p50" % noun


def _process_advice(ranking: Optional[Ranking]) -> Optional[Advice]:
    if ranking is None:
        return None
    first = ranking.fastest
    if len(ranking.ranked) == 1:
        return Advice(PROCESSES, "Across processes only %s was measured: p50 %s." % (first.name, format_ns(first.level.p50_ns)),
                      (first.level.cite(),))
    text = "Waking another process: %s." % format_ranking(ranking, limit=3)
    cites = [r.level.cite() for r in ranking.leaders[:4] + ranking.unclear]
    slowest = ranking.slowest
    if slowest.clearly_slower:
        cites.append(slowest.level.cite())
    return Advice(PROCESSES, text, tuple(_unique(cites)))


def _signal_advice(levels: Mapping[str, Level], in_process: Optional[Ranking],
                   signals: Optional[Ranking]) -> Tuple[List[Advice], str]:
    items: List[Advice] = []
    clause = ""
    for handler, pair in arms_with_role(ROLE_HANDLER_COST):
        plain, what, adds = str(pair.against), pair.isolates, pair.adds
        h, p = levels.get(handler), levels.get(plain)
        if h is None or p is None:
            continue
        extra = h.p50_ns - p.p50_ns
        if clearly_faster(p, h):
            text = ("A handler costs more than delivery: %s p50 %s against %s %s, %s more (%s %s's) for %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), format_ns(extra),
                       format_times(h.p50_ns / p.p50_ns), plain, what))
            clause = clause or "%s %s (%s vs %s)" % (adds, format_ns(extra), handler, plain)
        elif clearly_faster(h, p):
            text = ("%s (p50 %s) was faster than %s (%s) here, beyond this run's noise: %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), what))
        else:
            slow, fast = (h, p) if h.p50_ns >= p.p50_ns else (p, h)
            wide = (" (%s)" % _within_phrase(fast, slow, slow.name + "'s")
                    if slow.p50_ns >= LARGE_RATIO * fast.p50_ns else "")
            text = ("%s p50 %s against %s %s: no difference beyond this run's noise%s, for %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), wide, what))
        items.append(Advice(SIGNALS, text, (h.cite(), p.cite())))
    if signals is not None and in_process is not None:
        best_signal, best_wake = signals.fastest.level, in_process.fastest.level
        cites = (best_signal.cite(), best_wake.cite())
        signal_words, wake_words = _lowest_words(signals, "blocked signal path"), _lowest_words(in_process, "in-process wake")
        if clearly_faster(best_wake, best_signal):
            text = ("Signals are not a faster way to wake a thread: %s, %s (%s), is %s %s, %s (%s). Use signals for "
                    "process control (reload, graceful stop)."
                    % (signal_words, best_signal.name, format_ns(best_signal.p50_ns),
                       format_times(best_signal.p50_ns / best_wake.p50_ns), wake_words, best_wake.name,
                       format_ns(best_wake.p50_ns)))
            clause = clause or "signals are %s slower than %s" % (format_times(best_signal.p50_ns / best_wake.p50_ns), best_wake.name)
        else:
            text = ("%s, %s (%s), is not clearly slower than %s, %s (%s)%s; still, signals reach only the main thread's "
                    "handlers: keep them for process control."
                    % (signal_words[0].upper() + signal_words[1:], best_signal.name, format_ns(best_signal.p50_ns),
                       wake_words, best_wake.name, format_ns(best_wake.p50_ns),
                       " (%s)" % _within_phrase(best_wake, best_signal)
                       if best_signal.p50_ns >= LARGE_RATIO * best_wake.p50_ns else ""))
        items.append(Advice(SIGNALS, text, cites))
    spin = levels.get("sigusr1-self")
    if spin is not None and not items:
        cites_list = [spin.cite()]
        text = ("sigusr1-self's p50 %s is a self-signal round trip into a Python handler while the main thread "
                "spins: no thread sleeps, so no wake-up is in it." % format_ns(spin.p50_ns))
        wake = in_process.fastest.level if in_process is not None else None
        if wake is not None:
            cites_list.append(wake.cite())
            text += (" It does not make signals a faster wake than %s (%s): the two are not the same experiment. "
                     "Use %s for in-process wait/notify and signals for process control (reload, graceful stop), "
                     "with handlers that set a flag or write a byte to a wakeup fd."
                     % (wake.name, format_ns(wake.p50_ns), wake.name))
        else:
            text += " Use signals for process control (reload, graceful stop), with handlers that set a flag or write a byte to a wakeup fd."
        items.append(Advice(SIGNALS, text, tuple(cites_list)))
        clause = "signals for process control (sigusr1-self's %s is a busy-wait round trip, not a faster wake)" % format_ns(spin.p50_ns)
    return items, clause


def _install_advice(bundle: Bundle) -> Optional[Advice]:
    arms = bundle.arms_by_name()
    install = arms.get("signal-install")
    if install is None or not install.measured or install.rate is None:
        return None
    ops = _positive(install.rate.ops_per_s)
    if ops is None:
        return None
    per_call = 1e9 / ops
    cites = [Cite(install.name, "per_call", per_call)]
    text = ("signal.signal() rebinding ran at %s/s: %s per install, so a reload that re-installs %d handlers spends "
            "%s on it. Registration is not the bottleneck; what the handler and the reload do is (a SIGHUP handler "
            "that parses a config runs the whole parse in the main thread)."
            % (format_rate(ops), format_ns(per_call), RELOAD_HANDLERS, format_ns(RELOAD_HANDLERS * per_call)))
    slowest, fastest = _positive(install.rate.min_ops_per_s), _positive(install.rate.max_ops_per_s)
    if slowest is not None and fastest is not None and fastest / slowest >= NO_RANGE_RATIO:
        text += " Its rounds ranged from %s/s to %s/s." % (format_rate(slowest), format_rate(fastest))
    native = arms.get(str(install.native)) if install.native else None
    native_ops = _positive(native.rate.ops_per_s) if native is not None and native.measured and native.rate else None
    unwrapped = next((arms[n] for n, r in arms_with_role(ROLE_UNWRAPPED_INSTALL) if r.against == install.name and n in arms), None)
    unwrapped_ops = _positive(unwrapped.rate.ops_per_s) if unwrapped is not None and unwrapped.measured and unwrapped.rate else None
    if unwrapped is not None and unwrapped_ops is not None:
        # Where the rebinding cost goes: Lib/signal.py's wrapper, the C function under it, the kernel call.
        inner = 1e9 / unwrapped_ops
        cites.append(Cite(unwrapped.name, "per_call", inner))
        wrapper = per_call - inner
        if wrapper > 0:
            text += " Where it goes: signal.signal %s per call = _signal.signal %s + Python wrapper %s (%.0f%%: its enum " \
                    "conversions of the signal and the old handler)" % (
                        format_ns(per_call), format_ns(inner), format_ns(wrapper), 100 * wrapper / per_call)
        else:
            text += " Where it goes: _signal.signal (%s, the C function under the wrapper) took as long as signal.signal " \
                    "(%s): the wrapper's share is within this run's noise" % (format_ns(inner), format_ns(per_call))
        if native is not None and native_ops is not None:
            cites.append(Cite(native.name, "per_call", 1e9 / native_ops))
            text += "; C sigaction() (%s) %s." % (native.name, format_ns(1e9 / native_ops))
        else:
            text += "."
    elif native is not None and native_ops is not None:
        cites.append(Cite(native.name, "per_call", 1e9 / native_ops))
        text += " C's %s: %s per call (%s faster)." % (native.name, format_ns(1e9 / native_ops), format_ratio(native_ops / ops))
    return Advice(INSTALL, text, tuple(cites))


def _busy_threads(bundle: Bundle) -> int:
    """How many busy Python threads ran beside the waiter (``--cpu-threads``), 0 without load."""
    conditions = bundle.summary.get("conditions") or {}
    busy = conditions.get("cpu_threads") if isinstance(conditions, Mapping) else None
    return busy if isinstance(busy, int) and not isinstance(busy, bool) and busy > 0 else 0


def _tail_advice(bundle: Bundle, in_process: Optional[Ranking], levels: Mapping[str, Level]) -> Optional[Advice]:
    busy = _busy_threads(bundle)
    watched: List[Level] = []
    if in_process is not None:
        watched.append(in_process.fastest.level)
    if "event" in levels and levels["event"] not in watched:
        watched.append(levels["event"])
    if not watched:
        watched = sorted((lv for lv in levels.values() if group_of(lv.arm) not in (NATIVE, STORM_GROUP)),
                         key=lambda lv: (lv.p50_ns, lv.name))[:1]
    if not watched:
        return None
    parts: List[str] = []
    cites: List[Cite] = []
    for level in watched:
        key, tail = _tail_figure(level)
        top = level.figure("max")
        if tail is None:
            continue
        cites += [level.cite(), level.cite(key)]
        phrase = "%s: %s %s, %s its p50" % (level.name, key.replace("_", "."), format_ns(tail), format_ratio(tail / level.p50_ns))
        if top is not None and key != "max":
            cites.append(level.cite("max"))
            phrase += ", max %s" % format_ns(top)
        parts.append(phrase)
    if not parts:
        return None
    worst: Optional[Tuple[float, Level, str, float]] = None
    for level in sorted(levels.values(), key=lambda lv: lv.name):  # ties go to the first name, whatever the run order
        if group_of(level.arm) in (NATIVE, STORM_GROUP) or level.figure("p99") is None:
            continue
        p99 = level.figure("p99") or 0.0
        ratio = p99 / level.p50_ns
        if worst is None or ratio > worst[0]:
            worst = (ratio, level, "p99", p99)
    text = "Tail%s: %s." % (" with %d busy Python thread%s beside the waiter" % (busy, "" if busy == 1 else "s") if busy else "",
                             "; ".join(parts))
    if worst is not None and worst[1] not in watched:
        cites.append(worst[1].cite("p99"))
        text += " The widest tail among the wake paths: %s, p99 %s (%s its p50)." % (
            worst[1].name, format_ns(worst[3]), format_ratio(worst[0]))
    tails = [w for w in bundle.warnings() if w.kind is WarningKind.SWITCH_INTERVAL_TAIL and w.arm in levels]
    for warning in tails[:2]:
        figures = warning.figures
        share, interval = _number(figures.get("share")), _number(figures.get("interval_s"))
        if share is None or interval is None:
            continue
        arm = levels[str(warning.arm)]
        cites.append(arm.cite(_tail_figure(arm)[0]))
        text += (" %.1f%% of %s's wakes took just over a %s switch interval: a busy thread held the GIL; keep CPU-bound "
                 "work out of the process that must wake fast, or shorten sys.setswitchinterval." % (
                     100 * share, arm.name, format_ns(interval * 1e9)))
    if not busy:
        text += " No load was added: --cpu-threads 2 shows the tail with busy Python threads holding the GIL."
    return Advice(TAIL, text, tuple(_unique(cites)))


def _polling_advice(bundle: Bundle, levels: Mapping[str, Level], in_process: Optional[Ranking]) -> Tuple[List[Advice], str]:
    """What a wait that polls (a ``polling`` warning, :func:`wakelab.analysis.quality.find_polling`) means, and
    what to use instead; the headline's clause."""
    warnings = [w for w in bundle.warnings() if w.kind is WarningKind.POLLING and w.arm in levels]
    polling = [str(w.arm) for w in warnings]
    items: List[Advice] = []
    clause = ""
    for warning in warnings:
        figures = warning.figures
        period = _positive(figures.get("period_ns"))
        if period is None:
            continue
        level = levels[str(warning.arm)]
        at_least = bool(figures.get("spans_jitter"))
        every = ("every %s or more" if at_least else "about every %s") % format_ns(period)
        cites = [level.cite()]
        text = ("%s's wait polls %s: it looks for the notify, sleeps, and looks again, so a notify is seen only at its "
                "next look -- its wakes spread evenly up to the period, and its p50, %s, is about half of it. That cost "
                "does not shrink on a faster machine. Where the wake path matters, wait on something that blocks in the "
                "kernel until it is notified: threading.Event or Condition, queue.Queue, or a pipe or os.eventfd "
                "the waiter blocks on in select/poll" % (level.name, every, format_ns(level.p50_ns)))
        blocking = [r.level for r in in_process.ranked if r.name not in polling] if in_process is not None else []
        alternative = next((r.against for n, r in arms_with_role(ROLE_POLLS) if n == level.name), None)
        if alternative in levels:
            blocking = [levels[str(alternative)]]
        if blocking:
            cites.append(blocking[0].cite())
            text += " (%s took %s here)" % (blocking[0].name, format_ns(blocking[0].p50_ns))
        text += (". If the loop is your own, a shorter sleep only trades the latency for CPU time."
                 if not at_least else
                 ". The period may be longer than the settle's random part reached: rerun with a larger "
                 "--settle-jitter-us to measure it.")
        items.append(Advice(POLLING, text, tuple(cites)))
        clause = clause or "%s polls (%s): use a wait that blocks" % (level.name, every)
    return items, clause


def _handoff_advice(levels: Mapping[str, Level]) -> Tuple[List[Advice], str]:
    """Threads, subinterpreters or processes for a hand-off, from the executor arms; and what waking a
    subinterpreter by its queue costs against a pipe.  The headline's clause."""
    items: List[Advice] = []
    clause = ""
    ranked = rank_levels([levels[n] for n, _ in arms_with_role(ROLE_POOL) if n in levels])
    pools = [r.level for r in ranked]
    if ranked:
        first = ranked[0]
        text = ("Handing a task to an idle executor worker, submit() to the task's first statement: %s %s (p50)"
                % (first.name, format_ns(first.level.p50_ns)))
        entries = []
        for other in ranked[1:]:
            apart = ""
            if not other.clearly_slower:
                if not first.level.ranged or not other.level.ranged:
                    apart = "; %s" % _within_phrase(first.level, other.level)
                else:
                    apart = "; within this run's noise of %s" % first.name
                    if other.ratio >= LARGE_RATIO:
                        apart += ": %s" % _within_phrase(first.level, other.level)
            entries.append("%s %s (%s%s)" % (other.name, format_ns(other.level.p50_ns), format_times(other.ratio), apart))
        if entries:
            text += "; then, × its p50: %s" % ", ".join(entries)
        text += "."
        names = [lv.name for lv in pools]
        notes = []
        if "thread-pool-submit" in names:
            notes.append("a thread pool's worker shares the submitter's GIL (right for I/O, or C code that releases it)")
        if "interp-pool-submit" in names:
            notes.append("an interpreter pool pickles every task and switches interpreter, but each worker has a GIL of "
                         "its own, so CPU-bound Python runs in parallel: worth it when a task runs much longer than "
                         "the hand-off")
        if "process-pool-submit" in names:
            notes.append("a process pool adds a pipe and a feeder thread, and isolates the task completely")
        if notes:
            text += " Besides the hand-off: " + "; ".join(notes) + "."
        items.append(Advice(HANDOFF, text, tuple(lv.cite() for lv in pools)))
        leaders = [r for r in ranked if r.standing == LEADER]
        if len(ranked) == 1:
            clause = "to hand off a task, %s takes %s (p50)" % (first.name, format_ns(first.level.p50_ns))
        elif len(leaders) == 1:
            clause = "to hand off a task, %s is fastest (%s, %s)" % (first.name, format_ns(first.level.p50_ns), _clear_of(first.level))
            unclear = [r.name for r in ranked if r.standing == UNCLEAR]
            if unclear:
                clause += ", though not clearly faster than %s" % ", ".join(unclear)
        else:
            clause = "to hand off a task, %s are %s%s" % (
                _and(["%s %s" % (r.name, format_ns(r.level.p50_ns)) for r in leaders]), _within(first.level, "the lowest p50"),
                _wide_note(leaders))
    queue, pipe = levels.get("interp-queue"), levels.get("interp-pipe")
    if queue is not None:
        least = _min_ns(queue) or queue.p50_ns
        text = ("Waking a subinterpreter through concurrent.interpreters.Queue: p50 %s, min %s. Its get() does not "
                "block in the kernel but sleeps and looks again (every 10 ms in CPython 3.14 and 3.15), so a put() is "
                "seen at the waiter's next look" % (format_ns(queue.p50_ns), format_ns(least)))
        cites = [queue.cite(), Cite(queue.name, "min", float(least))]
        if pipe is not None:
            cites.append(pipe.cite())
            text += ("; a subinterpreter blocked on an os.pipe the main interpreter writes woke in %s (interp-pipe, %s "
                     "less). To wake one promptly, block it on a pipe or eventfd and pass the data through the queue "
                     "after the wake." % (format_ns(pipe.p50_ns), format_times(queue.p50_ns / pipe.p50_ns)))
        else:
            text += "."
        items.append(Advice(HANDOFF, text, tuple(cites)))
        if not clause:
            clause = "a subinterpreter's queue wakes in %s (it polls)" % format_ns(queue.p50_ns)
    return items, clause


def _and(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else "%s and %s" % (", ".join(words[:-1]), words[-1])


def _min_ns(level: Level) -> Optional[float]:
    lat = level.arm.latency
    return _positive(lat.min_ns) if lat is not None else None


def _pitfalls(levels: Mapping[str, Level]) -> List[Advice]:
    items: List[Advice] = []
    handlers = [levels[n] for n, _ in arms_with_role(ROLE_HANDLER) if n in levels]
    if handlers:
        h = handlers[0]
        items.append(Advice(PITFALL, (
            "Main-thread-only delivery: CPython runs a Python signal handler only in the main thread, between "
            "bytecodes (%s, p50 %s, with the main thread waiting for it). A main thread busy in C code or "
            "blocked elsewhere runs it late, and a signal aimed at a worker thread is still handled in the main one."
            % (h.name, format_ns(h.p50_ns))), (h.cite(),)))
        cites = tuple(lv.cite() for lv in handlers[:3])
        items.append(Advice(PITFALL, (
            "Heavy handlers: a trivial handler's whole path took %s here; keep a handler to setting a flag "
            "or writing a byte to a wakeup fd, and do the real work on a normal thread -- a handler that takes "
            "milliseconds delays everything the main thread does." % ", ".join(
                "%s (%s)" % (format_ns(lv.p50_ns), lv.name) for lv in handlers[:3])), cites))
    spinning = sorted((lv for lv in levels.values() if group_of(lv.arm) == SPINNING),
                      key=lambda lv: (lv.arm.family != "signals", lv.name))  # the original lab's busy-wait signal first
    for spin in spinning[:2]:
        blocked: Optional[Level] = None
        if spin.arm.family == "signals":
            sigwaits = [n for n, _ in arms_with_role(ROLE_SIGWAIT)]
            blocked = next((levels[n] for n in ["pause-handler"] + sigwaits if n in levels), None)
            about = "a thread blocked in pause() or sigwait"
        else:
            base = spin.name[:-len("-spin")] if spin.name.endswith("-spin") else ""
            blocked = levels.get(base) if base else None
            about = "a waiter blocked in wait()"
        text = "Busy-wait figures: %s's %s was measured with its waiter spinning; it does not apply to %s" % (
            spin.name, format_ns(spin.p50_ns), about)
        cites_list = [spin.cite()]
        if blocked is not None:
            cites_list.append(blocked.cite())
            text += " (%s, whose waiter blocks, took %s here)" % (blocked.name, format_ns(blocked.p50_ns))
        text += "."
        items.append(Advice(PITFALL, text, tuple(cites_list)))
    return items


def _group_clause(ranking: Ranking, scope: str) -> str:
    """The headline's clause for a group: its fastest arm only where it is clear of the noise."""
    first = ranking.fastest
    figure = "%s %s" % (first.name, format_ns(first.level.p50_ns))
    if len(ranking.ranked) == 1:
        return "%s, %s takes %s (p50)" % (scope, first.name, format_ns(first.level.p50_ns))
    if ranking.clear_fastest:
        return "%s, %s is fastest (%s, %s)" % (scope, first.name, format_ns(first.level.p50_ns), _clear_of(first.level))
    leaders = ranking.leaders
    if len(leaders) > 1:
        return "%s, %s are %s%s" % (scope, _and([figure] + [r.name for r in leaders[1:]]),
                                    _within(first.level, "the lowest p50"), _wide_note(leaders))
    return "%s, %s has the lowest p50 (%s), though not clearly below %s" % (
        scope, first.name, format_ns(first.level.p50_ns), _and([r.name for r in ranking.unclear]))


def _open_loop_words(interval_us: float) -> str:
    """``a notify every 500 µs; latencies from each notify's scheduled instant`` (the headline's parenthesis)."""
    every = "a notify every %s µs; " % format_rate(interval_us) if interval_us else ""
    return "%slatencies from each notify's scheduled instant, the notifier's lateness included" % every


def _notify_late_p50(level: Level) -> Optional[float]:
    """The p50 of the arm's ``notify_late`` component (open loop: how late the notifier's own notify was), ns."""
    for name, figures in level.arm.components:
        if name == "notify_late":
            return _positive(figures.p50_ns)
    return None


def _open_loop_advice(levels: Mapping[str, Level], in_process: Optional[Ranking], interval_us: float) -> Advice:
    """What an open-loop figure is (docs/run.md: ``--mode open``), said before any advice quotes one."""
    level = in_process.fastest.level if in_process is not None else min(levels.values(), key=lambda lv: (lv.p50_ns, lv.name))
    cites = [level.cite()]
    every = "one every %s µs, " % format_rate(interval_us) if interval_us else ""
    text = ("Open loop: every latency here is taken from its notify's scheduled instant (%swhether or not the waiter "
            "was ready), not from t0, the notify call itself, as in a closed loop. So it includes the notifier's own "
            "lateness -- its sleep overshooting the schedule" % every)
    late = _notify_late_p50(level)
    if late is not None:
        cites.append(Cite(level.name, "notify_late_p50", late))
        text += " (%s's p50 %s holds %s of it: notify_late)" % (level.name, format_ns(level.p50_ns), format_ns(late))
    text += (" -- and any wait behind an earlier wake still in progress (a notify merged into it is counted lost, as "
             "coalesced). It is the latency a steady stream of requests sees, not the wake alone: compare it only "
             "with open-loop figures at the same interval; --mode closed measures the wake from t0.")
    return Advice(OPEN_LOOP, text, tuple(cites))


def _unique(cites: Sequence[Cite]) -> List[Cite]:
    out: List[Cite] = []
    for cite in cites:
        if cite not in out:
            out.append(cite)
    return out


def guidance_for(bundle: Bundle, ranked: Optional[Sequence[Ranking]] = None) -> Guidance:
    """The advice this run's figures support (see the module docstring); nothing cited is unmeasured.

    ``bundle`` is a :class:`~wakelab.evidence.model.Bundle` (from a loaded
    folder, or ``Bundle(source="", folder="", summary=doc)`` for a summary
    document in memory).  Returns a :class:`Guidance`: ``headline`` (one line)
    and ``items``, each an :class:`Advice` with ``topic`` (``in-process wake``,
    ``across processes``, ``signal delivery``, ``handler install``, ``tail``,
    ``hand-off``, ``polling``, ``pitfall``, ``self-test`` or ``open loop``; ``signal storm`` and ``realtime``
    from :mod:`wakelab.analysis.storms`), ``text`` and ``cites`` (``arm``,
    ``figure`` -- ``p50``, ``p90``, ``p99``, ``max`` or ``per_call`` --
    and ``value_ns``).  Times are nanoseconds.  ``ranked``: the bundle's
    :func:`rank_wake_paths`, when the caller has them already.
    """
    levels = _measured_levels(bundle)
    rankings = {r.group: r for r in (rank_wake_paths(bundle) if ranked is None else ranked)}
    in_process = rankings.get(IN_PROCESS)
    items: List[Advice] = []
    clauses: List[str] = []
    params = bundle.summary.get("parameters") or {}
    planted = _positive(params.get("planted_delay_us")) if isinstance(params, Mapping) else None
    if planted is not None and levels:
        any_level = min(levels.values(), key=lambda lv: lv.name)
        items.append(Advice(SELF_TEST, (
            "Every notify had a planted delay of %s µs: these figures test the harness, and the advice below is "
            "about them, not about this machine." % format_rate(planted)), (any_level.cite(),)))
    interval = _open_loop_interval(bundle)
    if interval is not None and levels:
        items.append(_open_loop_advice(levels, in_process, interval))
    prefer, clause = _prefer_advice(in_process)
    if prefer is not None:
        items.append(prefer)
        clauses.append(clause)
    processes = _process_advice(rankings.get(PROCESS_GROUP))
    if processes is not None:
        items.append(processes)
        if prefer is None:
            clauses.append(_group_clause(rankings[PROCESS_GROUP], "across processes"))
    signal_items, signal_clause = _signal_advice(levels, in_process, rankings.get(SIGNAL_GROUP))
    items += signal_items
    if signal_clause:
        clauses.append(signal_clause)
    install = _install_advice(bundle)
    if install is not None:
        items.append(install)
        if not clauses:
            clauses.append("installing a signal handler costs %s" % format_ns(install.cites[0].value_ns))
    tail = _tail_advice(bundle, in_process, levels)
    if tail is not None:
        items.append(tail)
    handoff, handoff_clause = _handoff_advice(levels)
    items += handoff
    if handoff_clause:
        clauses.append(handoff_clause)
    from wakelab.analysis import storms  # lazily: it builds on this module

    for advise in (storms.storm_advice, storms.realtime_advice):
        more, more_clause = advise(bundle, levels)
        items += more
        if more_clause:
            clauses.append(more_clause)
    polling, polling_clause = _polling_advice(bundle, levels, in_process)
    items += polling
    if polling_clause:
        clauses.append(polling_clause)
    items += _pitfalls(levels)
    if not clauses and levels:
        lowest = min(levels.values(), key=lambda lv: (lv.p50_ns, lv.name))
        clauses.append("lowest p50 measured: %s (%s)" % (lowest.name, format_ns(lowest.p50_ns)))
    if not clauses:
        headline = "No arm produced figures in this run: nothing to advise."
    else:
        headline = "; ".join(clauses)
        headline = headline[0].upper() + headline[1:] + "."
        if interval is not None:
            headline = "Open loop (%s): %s" % (_open_loop_words(interval), headline[0].lower() + headline[1:])
        busy = _busy_threads(bundle)
        if busy:
            headline = "With %d busy Python thread%s beside the waiter: %s" % (busy, "" if busy == 1 else "s", headline[0].lower() + headline[1:])
        if planted is not None:
            headline = "Self-test (planted delay %s µs): %s" % (format_rate(planted), headline[0].lower() + headline[1:])
    return Guidance(headline, tuple(items))


def guidance_dict(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """:func:`guidance_for` of a summary document in memory, in its JSON form (for summary.json)."""
    return guidance_for(Bundle(source="", folder="", summary=summary)).to_dict()


__all__ = [
    "Advice", "Cite", "Guidance", "Level", "Ranked", "Ranking", "clearly_faster", "format_ranking",
    "guidance_dict", "guidance_for", "level_of", "rank_wake_paths",
]

