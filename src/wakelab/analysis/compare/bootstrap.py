"""The statistics of a comparison, on sample arrays: bootstrap intervals, the rank test, the verdict word.

The one-level bootstrap (kept for pooled samples such as traced components) is the plain percentile bootstrap, drawn
without building the resamples: resampling with replacement picks ``x[floor(n U_i)]`` for n uniforms, a monotone map,
so the resample's k-th smallest value is ``x[floor(n U_(k))]`` with ``U_(k)`` ~ ``Beta(k, n - k + 1)``.  Order
statistics of uniforms are a Markov chain (given ``U_(a) = u``, ``U_(b)`` is ``u + (1 - u) Beta(b - a, n - b + 1)``),
so the two a percentile needs are drawn jointly and exactly in ``O(resamples)``, not ``O(resamples x n)``; a test
checks the distribution against brute force.  A fixed seed (per arm) makes every interval reproducible.  numpy and
scipy are imported lazily."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from wakelab.analysis.hierarchical import check_resampling, outward_interval
from wakelab.formatting import format_percent
from wakelab.percentile import percentile as type7_percentile

DEFAULT_ALPHA = 0.05
DEFAULT_RESAMPLES = 2000
# Fixed, so that the same inputs always give the same intervals.
DEFAULT_SEED = 135
# The practical threshold of a verdict, percent (pyperf's --min-speed is 5% too).
DEFAULT_MIN_EFFECT_PCT = 5.0
# A comparison on fewer samples (or rounds) per side than this is not tested.
MIN_PER_SIDE = 3

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no difference"
CANNOT_TELL = "cannot tell"
NOT_TESTED = "not tested"

Seed = Union[int, Sequence[int]]


@dataclasses.dataclass(frozen=True)
class _Interval:
    """A percentile of both samples (type 7, in the samples' unit) and the bootstrap interval ``low``/``high`` at
    ``confidence`` of the figure that compares them (the subclass's one field); NaN bounds: no interval."""

    q: float
    baseline: float
    other: float
    low: float
    high: float
    confidence: float
    resamples: int

    def to_dict(self) -> Dict[str, object]:
        name = dataclasses.fields(self)[-1].name
        return {"q": self.q, "baseline": finite(self.baseline), "other": finite(self.other), name: finite(getattr(self, name)),
                "ci_low": finite(self.low), "ci_high": finite(self.high), "confidence": self.confidence,
                "resamples": self.resamples}


@dataclasses.dataclass(frozen=True)
class RatioCI(_Interval):
    """``other / baseline``; ``high`` may be ``inf`` when a resampled baseline percentile is 0."""

    ratio: float


@dataclasses.dataclass(frozen=True)
class DifferenceCI(_Interval):
    """``other - baseline``, where a ratio is often undefined (a component such as the GIL wait has a p50 of 0 in
    many runs)."""

    difference: float

    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0


def finite(value: Optional[float]) -> Optional[float]:
    """JSON has no infinity: a non-finite figure becomes null (None)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _as_sorted_array(values: Sequence[float], what: str) -> Any:
    import numpy as np

    array = np.sort(np.asarray(values, dtype=np.float64))
    if array.ndim != 1 or array.size == 0:
        raise ValueError("%s must be a non-empty one-dimensional sample" % what)
    if not np.all(np.isfinite(array)):
        raise ValueError("%s holds a value that is not finite" % what)
    return array


def _resampled_percentiles(sorted_x: Any, qs: Sequence[float], resamples: int, rng: Any) -> Any:
    """Percentiles ``qs`` of ``resamples`` bootstrap resamples of ``sorted_x``, shape (len(qs), resamples)."""
    import numpy as np

    n = sorted_x.size
    # Type 7: position h = (n - 1) q / 100; value = s[lo] + frac (s[lo + 1] - s[lo]).
    plan: List[Tuple[int, int, float]] = []
    ranks: Set[int] = set()
    for q in qs:
        position = (n - 1) * q / 100.0
        lo = int(math.floor(position))
        hi = min(lo + 1, n - 1)
        plan.append((lo + 1, hi + 1, position - lo))  # 1-based ranks of the resample's order statistics
        ranks.update((lo + 1, hi + 1))
    value: Dict[int, Any] = {}  # by rank: the resamples' order statistic
    previous_rank, uniform = 0, np.zeros(resamples)
    for rank in sorted(ranks):
        uniform = uniform + (1.0 - uniform) * rng.beta(rank - previous_rank, n - rank + 1, size=resamples)
        previous_rank = rank
        value[rank] = sorted_x[np.minimum((uniform * n).astype(np.int64), n - 1)]
    out = np.empty((len(qs), resamples))
    for i, (rank_lo, rank_hi, fraction) in enumerate(plan):
        out[i] = value[rank_lo] + (value[rank_hi] - value[rank_lo]) * fraction
    return out


def _ratio_interval(numerators: Any, denominators: Any, confidence: float) -> Tuple[float, float]:
    """The percentile interval of ``numerators / denominators`` (0/0 counts as 1, x/0 as inf)."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(denominators == 0, np.where(numerators == 0, 1.0, np.inf),
                          numerators / np.where(denominators == 0, 1.0, denominators))
    ratios.sort()
    return outward_interval(ratios, confidence)


def bootstrap_percentile_difference(baseline: Sequence[float], other: Sequence[float], q: float = 50.0,
                                    confidence: float = 1.0 - DEFAULT_ALPHA, resamples: int = DEFAULT_RESAMPLES,
                                    seed: Seed = DEFAULT_SEED) -> DifferenceCI:
    """``percentile(other, q) - percentile(baseline, q)`` with its percentile-bootstrap interval: each sample resampled
    independently, one stream per sample, read off the resampled differences (a percentile of 0 is fine here).
    ValueError on settings out of range, an empty sample or a non-finite value."""
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1, got %r" % (confidence,))
    check_resampling((q,), resamples)
    base, oth = _as_sorted_array(baseline, "baseline"), _as_sorted_array(other, "other")
    base_boot, other_boot = (_resampled_percentiles(x, (q,), resamples, np.random.default_rng(s))
                             for x, s in zip((base, oth), np.random.SeedSequence(seed).spawn(2)))
    low, high = outward_interval(np.sort(other_boot[0] - base_boot[0]), confidence)
    base_q = type7_percentile(base.tolist(), q)
    other_q = type7_percentile(oth.tolist(), q)
    return DifferenceCI(q=q, baseline=base_q, other=other_q, difference=other_q - base_q, low=low, high=high,
                        confidence=confidence, resamples=resamples)


@dataclasses.dataclass(frozen=True)
class RankTest:
    """A two-sided Mann-Whitney U test of ``other`` against ``baseline``: ``u`` is the U statistic of ``other``;
    ``p_greater`` the chance that a random value of ``other`` exceeds one of ``baseline``, ties counting half."""

    u: float
    p_value: float
    p_greater: float
    n_baseline: int
    n_other: int

    def to_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


def mann_whitney(baseline: Sequence[float], other: Sequence[float]) -> RankTest:
    """Two-sided Mann-Whitney U test (scipy's exact or asymptotic method, as it chooses)."""
    base, oth = _as_sorted_array(baseline, "baseline"), _as_sorted_array(other, "other")
    n, m = base.size, oth.size
    if base[0] == base[-1] == oth[0] == oth[-1]:
        # Every value is the same: no evidence of any shift.  (Some scipy versions
        # divide by a zero variance here.)
        return RankTest(u=n * m / 2.0, p_value=1.0, p_greater=0.5, n_baseline=n, n_other=m)
    from scipy.stats import mannwhitneyu

    result = mannwhitneyu(oth, base, alternative="two-sided")
    u = float(result.statistic)
    p_value = float(result.pvalue)
    if not math.isfinite(p_value):  # pragma: no cover - defensive, scipy gives finite p here
        raise ValueError("the rank test gave no p-value")
    return RankTest(u=u, p_value=min(p_value, 1.0), p_greater=u / (n * m), n_baseline=n, n_other=m)


def why_untestable(n_baseline: int, n_other: int, unit: str = "samples") -> Optional[str]:
    """Why two samples of these sizes are not compared (too few per side), or None when they are."""
    if min(n_baseline, n_other) < MIN_PER_SIDE:
        return "too few %s for an interval (%d against %d; at least %d on each side)" % (
            unit, n_baseline, n_other, MIN_PER_SIDE)
    return None


def verdict(ci_low: float, ci_high: float, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT,
            higher_is_better: bool = False) -> str:
    """"slower", "faster", "no difference", "cannot tell", or "not tested" (no interval: NaN bounds).
    ``ci_low``/``ci_high`` bound the ratio other/baseline.  With m = ``min_effect_pct`` / 100 and the ratio as a time
    ratio (for rates, ``higher_is_better``, the ops/s ratio inverted): slower when the interval lies above 1 + m,
    faster when below 1 / (1 + m), no difference when inside [1 / (1 + m), 1 + m], and cannot tell otherwise."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return NOT_TESTED
    if not 0.0 < min_effect_pct < 100.0:
        raise ValueError("min_effect_pct must be above 0 and below 100, got %r" % (min_effect_pct,))
    limit = 1.0 + min_effect_pct / 100.0
    low, high = ci_low, ci_high
    if higher_is_better:  # as a time ratio
        low, high = (1.0 / ci_high if ci_high > 0 else math.inf), (1.0 / ci_low if ci_low > 0 else math.inf)
    if low > limit:
        return SLOWER
    if high < 1.0 / limit:
        return FASTER
    if low >= 1.0 / limit and high <= limit:
        return NO_DIFFERENCE
    return CANNOT_TELL


def minimum_detectable_effect(ci_low: float, ci_high: float, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT) -> float:
    """The smallest change (percent) that an interval this wide could still call "slower" or "faster".  ``(1 + m)
    exp(h) - 1`` with h the interval's half-width in log terms, ``(ln high - ln low) / 2``: a true change of that size
    puts the lower end of an interval of the same width exactly at 1 + m.  ``inf`` when a bound is 0 or infinite, NaN
    without an interval."""
    if math.isnan(ci_low) or math.isnan(ci_high):
        return math.nan
    if ci_low <= 0 or not math.isfinite(ci_high):
        return math.inf
    half = (math.log(ci_high) - math.log(ci_low)) / 2.0
    return ((1.0 + min_effect_pct / 100.0) * math.exp(half) - 1.0) * 100.0


def format_pct(value: float) -> str:
    """A percentage (at least 0) for a sentence: ``12%``, ``3.4%``; an infinite one is "an unbounded amount"."""
    return "an unbounded amount" if value == math.inf else format_percent(value)


def format_ratio_plain(value: Optional[float]) -> str:
    """A ratio for a table or a sentence, without its ×: ``1.23``, ``12.3``; ``inf``; ``-`` for none (None or NaN)."""
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf"
    return ("%.1f" if value >= 10 else "%.2f") % value


def format_p(p_value: float) -> str:
    """A p-value for people: ``<0.001`` below a thousandth, else three decimals."""
    return "<0.001" if p_value < 0.001 else "%.3f" % p_value
