"""An arm's level and the noise around it: when is one arm clearly faster than another? (stdlib only)

summary.json keeps the median of each repetition or worker process, and their range: the run's own view of how far the
level moves from one process to the next -- the variation that dominates wake latency (the same arm at 5.7 µs in one
run and 13 µs in the next).  Those medians are the units of the comparison (:func:`separation`): an arm is *clearly*
slower than another only when its units lie above the other's beyond chance (the exact two-sided rank test at
:data:`ALPHA`, or no overlap at all) and its p50 is at least :data:`MIN_CLAIM_RATIO` times the other's (a 4% edge does
not choose a wake path).  A bundle that kept only the range is judged by it; where a side has no units (one worker),
only a ratio of at least :data:`NO_RANGE_RATIO` is called a difference."""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.guidance.records import Cite
from wakelab.evidence.model import LATENCY, ArmRecord, Bundle
from wakelab.formatting import format_ns, format_ratio

# Without a range of worker medians, only a ratio this large is called a difference.
NO_RANGE_RATIO = 1.5
# Nor is a ratio below this, however tight the ranges: a 4% edge does not choose a wake path.
MIN_CLAIM_RATIO = 1.1
# The two-sided level of the rank test of two arms' repetition (or worker) medians.
ALPHA = 0.05
# A ratio this large is called noise only with the ranges that make it so.
LARGE_RATIO = 2.0


def format_times(ratio: float) -> str:
    """A ratio between arms: two decimals below 2×, so that 1.08 and 1.12 do not both read 1.1× on either side of
    :data:`MIN_CLAIM_RATIO`."""
    if math.isfinite(ratio) and 0 < ratio < 1.995:
        return "%.2f×" % ratio
    return format_ratio(ratio)


def positive(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def _interval(low_ns: float, high_ns: float) -> str:
    return "%s to %s" % (format_ns(low_ns), format_ns(high_ns))


@dataclasses.dataclass(frozen=True)
class Level:
    """A measured latency arm's median and the medians of its repetitions or worker processes (ns): ``units`` (empty
    where the bundle kept only their range), ``low_ns``/``high_ns`` their range widened to hold the pooled median."""

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
        return positive(getattr(self.arm.latency, key + "_ns", None))

    def cite(self, key: str = "p50") -> Cite:
        value = self.p50_ns if key == "p50" else self.figure(key)
        return Cite(self.name, key, float(value if value is not None else self.p50_ns))

    @property
    def unit_noun(self) -> str:
        return "repetition" if self.between == "repetitions" else "worker"

    @property
    def unit_words(self) -> str:
        return "repetitions'" if self.between == "repetitions" else "worker processes'"

    def spread_words(self, own: str = "its") -> str:
        count = "%d " % len(self.units) if self.units else ""
        return "%s %s%s medians ranged %s" % (own, count, self.unit_words, _interval(self.low_ns, self.high_ns))


def _units_of(arm: ArmRecord, between: str) -> Tuple[float, ...]:
    if between == "repetitions":
        raw: Sequence[Any] = arm.repetitions.values if arm.repetitions is not None else ()
    else:
        raw = [w.p50_ns for w in arm.workers or () if w.recorded]
    values = [positive(v) for v in raw]
    if len(values) < 2 or any(v is None for v in values):
        return ()
    return tuple(sorted(float(v) for v in values if v is not None))


def level_of(arm: ArmRecord) -> Optional[Level]:
    """The arm's :class:`Level`, or None unless it is a measured latency arm with a positive p50."""
    if arm.kind != LATENCY or not arm.measured or arm.latency is None:
        return None
    p50 = positive(arm.latency.p50_ns)
    if p50 is None:
        return None
    spread = arm.entry.get("spread") if isinstance(arm.entry, Mapping) else None
    if isinstance(spread, Mapping) and spread.get("of", "p50_ns") == "p50_ns":
        low, high = positive(spread.get("min")), positive(spread.get("max"))
        if low is not None and high is not None and low <= high:
            between = "repetitions" if spread.get("between") == "repetitions" else "workers"
            units = _units_of(arm, between)
            if units and (units[0] != low or units[-1] != high):
                units = ()  # medians that are not the ones the range spans: judge by the range alone
            return Level(arm, p50, min(low, p50), max(high, p50), True, units, between)
    return Level(arm, p50, p50, p50, False)


def measured_levels(bundle: Bundle) -> Dict[str, Level]:
    """The :class:`Level` of each measured latency arm, by name, in run order."""
    return {level.name: level for level in map(level_of, bundle.arms()) if level is not None}


def tail_figure(level: Level) -> Tuple[str, Optional[float]]:
    """The highest percentile the arm reports (p99, else p90), or its max (ns)."""
    for key in ("p99", "p90", "max"):
        value = level.figure(key)
        if value is not None:
            return key, value
    return "max", None


# How two arms are told apart (:attr:`Apart.basis`).
RANKS = "ranks"    # the exact rank test of their repetition (or worker) medians
RANGES = "ranges"  # only the range of those medians was kept: ranges that do not overlap
RATIO = "ratio"    # a side has no spread: only a ratio of NO_RANGE_RATIO or more


@dataclasses.dataclass(frozen=True)
class Apart:
    """How this run tells arm ``a`` from a slower-by-p50 arm ``b``; for :data:`RANKS`, ``crossings`` of the ``pairs``
    of medians with b's not above a's, and the exact test's ``p_value``."""

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
    """The two-sided p-value of ``crossings`` (pairs out of order) between m and n values."""
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
    """True when ``a``'s median is below ``b``'s by more than this run's noise."""
    return separation(a, b).clear


def noise_phrase(a: Level, b: Level) -> str:
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


def within_phrase(a: Level, b: Level, own: str = "its") -> str:
    apart = separation(a, b)
    if apart.ratio < MIN_CLAIM_RATIO:
        return "under %s×" % MIN_CLAIM_RATIO
    if apart.basis == RATIO:
        return "under %s× with no spread between workers to judge by" % NO_RANGE_RATIO
    return "%s, %s's %s" % (b.spread_words(own), a.name, _interval(a.low_ns, a.high_ns))


NO_SPREAD = "no spread between workers to judge noise by"


def within_noise(first: Level, of: str) -> str:
    if first.ranged:
        return "within this run's noise of %s" % of
    return "within %s× of %s (%s)" % (NO_RANGE_RATIO, of, NO_SPREAD)


def beyond_noise(first: Level) -> str:
    return "beyond this run's noise" if first.ranged else "by %s× or more (%s)" % (NO_RANGE_RATIO, NO_SPREAD)


def clear_of_noise(first: Level) -> str:
    if first.ranged:
        return "beyond this run's noise"
    return "by at least the %s× that counts with %s" % (NO_RANGE_RATIO, NO_SPREAD)
