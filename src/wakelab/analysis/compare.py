"""Comparing runs: is run B faster or slower than run A, arm by arm, and how sure is that?

Analysis side: numpy and scipy are imported lazily, inside the functions that
need them, so that importing this module costs nothing on the measuring side.

Three layers live here:

* **Pure statistics** on sample arrays, tested with exact fixtures:
  :func:`bootstrap_ratio_ci` (a one-level percentile bootstrap of
  ``percentile(B) / percentile(A)``, kept for pooled samples such as traced
  components), :func:`mann_whitney` (a two-sided Mann-Whitney U test, with the
  common-language effect size), :func:`verdict` (the word a reader sees) and
  :func:`minimum_detectable_effect`.
* **Run comparison**: loading bundles (:func:`load_run`), deciding whether two
  runs measured the same experiment (:func:`check_comparable`, which raises
  :class:`~wakelab.errors.EvidenceError` when they did not, unless every
  difference is named in ``across``), comparing every arm the two share
  (:func:`compare_runs`, intervals from the two-level bootstrap of
  :mod:`wakelab.analysis.hierarchical`) and gating a CI job
  (:func:`find_regressions`).
* **Grids**: :func:`load_grid` reads a grid folder (matrix.json and cells/*),
  :func:`compare_grid` compares every cell with a baseline cell across the
  dimensions the grid varies.

How a verdict is reached
------------------------
For each percentile (p50; p99 when both runs have n >= 100; p99.9 when both
have n >= 1000, the same rule as summary.json) and for a rate arm's median
round, the interval of the ratio other/baseline comes from independent
two-level bootstraps of the two runs: units (worker slices, see the
hierarchical module) first, then wakes within units.  With a practical
threshold m (``--min-effect``, 5% by default, like pyperf's ``--min-speed``),
and the ratio read as a *time* ratio (above 1 slower; a rate arm's ops/s
ratio is inverted):

* **slower**: the interval lies entirely above 1 + m;
* **faster**: the interval lies entirely below 1 / (1 + m);
* **no difference**: the interval lies inside [1 / (1 + m), 1 + m]: any change
  is smaller than m;
* **cannot tell**: anything else.  The runs' own spread is too wide for this
  threshold; the sentence names it: "repetitions vary ±X%" (X: the half-width,
  in log terms, of the wider of the two runs' own intervals of the percentile)
  and "the smallest change this comparison could detect is Y%".

Y, the **minimum detectable effect**, is ``(1 + m) exp(h) - 1`` where h is the
half-width of the ratio's interval in log terms, ``(ln high - ln low) / 2``:
a true change of Y would centre an interval of the same width at
``ln(1 + Y)``, whose lower end is then exactly ``ln(1 + m)``: the smallest
change that can still be called "slower" (found about half the time; twice
the half-width beyond m is found nearly always).  It is reported for every
arm and percentile, so a reader sees what a comparison could have found.

Tails are judged beside the median.  A tail verdict "slower" while the p50 is
not is a *tail regression*: it is noted, and ``--fail-on-regression`` gates on
p50 and p99 by default (``--metric``), so it fails the check even when the
median improved.  The Mann-Whitney U test of the pooled wakes stays as a
secondary column: it sees only wake-to-wake noise, so it never decides.

The one-level bootstrap below
-----------------------------
The interval is the plain percentile bootstrap: resample each run's samples
with replacement, recompute the percentile of each, take the ratio, repeat,
and read the interval off the quantiles of the ratios.  Materialising the
resamples costs ``resamples x n`` memory and time per run, which is minutes
for a catalogue of arms with 10^5 wakes each.  We draw the same thing without
building the resamples: resampling with replacement picks ``x[floor(n U_i)]``
for n uniform ``U_i``, and since that map is monotone the resample's k-th
smallest value is ``x[floor(n U_(k))]``, where ``U_(k)`` is the k-th order
statistic of n uniforms, distributed ``Beta(k, n - k + 1)``.  Order statistics
of uniforms are a Markov chain (given ``U_(a) = u``, ``U_(b)`` is
``u + (1 - u) Beta(b - a, n - b + 1)``), so the few order statistics a
percentile needs (two, for linear interpolation) are drawn jointly and exactly
in ``O(resamples)``.  The distribution is identical to brute-force
resampling; a test checks it against brute force.  A fixed seed (per arm)
makes every interval reproducible.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from wakelab.errors import EvidenceError
from wakelab.evidence.model import Bundle, Grid, Interpreter
from wakelab.analysis.stats import min_n_for
from wakelab.analysis.stats import percentile as type7_percentile

DEFAULT_ALPHA = 0.05
DEFAULT_RESAMPLES = 2000
# Fixed, so that the same inputs always give the same intervals.
DEFAULT_SEED = 135
# The practical threshold of a verdict, percent (pyperf's --min-speed is 5% too).
DEFAULT_MIN_EFFECT_PCT = 5.0
# A comparison on fewer samples (or rounds) per side than this is not tested.
MIN_PER_SIDE = 3
# Recomputed figures must match the summary's to this relative tolerance.
_FIGURE_TOLERANCE = 1e-9

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no difference"
CANNOT_TELL = "cannot tell"
NOT_TESTED = "not tested"
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, CANNOT_TELL, NOT_TESTED)

LATENCY = "latency"
RATE = "rate"

# Latency percentiles that are judged: key, percentile.  Each is judged when both runs
# report it (n >= 1 / (1 - q), the rule of summary.json).
LATENCY_PERCENTILES: Tuple[Tuple[str, float], ...] = (("p50", 50.0), ("p99", 99.0), ("p99_9", 99.9))
# What --metric names (p99.9 as people write it) -> ratio key.
METRIC_KEYS = {"p50": "p50", "p99": "p99", "p99.9": "p99_9", "p99_9": "p99_9"}
DEFAULT_METRICS = ("p50", "p99")

Seed = Union[int, Sequence[int]]

# Differences that may be compared on purpose with --across NAME.
ACROSS_NAMES: Tuple[str, ...] = (
    "placement", "settle", "planted-delay", "mode", "interval", "cpu-threads", "cpu-procs", "idle-hold",
    "switch-interval", "interpreter",
)

# Measurement parameters that make a different experiment: (key, value when a bundle
# predates the key, why, the --across name).  Others (n, rounds, timeout ...) change only precision.
EXPERIMENT_PARAMETERS: Tuple[Tuple[str, object, str, str], ...] = (
    ("settle_us", None, "a blocked waiter's settle time is part of the experiment; use the same --settle-us",
     "settle"),
    # Before random settles every settle was the same: a bundle without the key had no random part.
    ("settle_jitter_us", 0, "the settle's random part decides where a notify lands in a poll; use the same "
     "--settle-jitter-us", "settle"),
    ("planted_delay_us", 0, "a planted delay adds to every sample; compare runs with the same --planted-delay-us",
     "planted-delay"),
    ("placement", "any", "where notifier and waiter run can matter more than the mechanism; use the same --placement",
     "placement"),
    ("mode", "closed", "open-loop and closed-loop latencies time different things; use the same --mode", "mode"),
    ("interval_us", 1000, "an open-loop schedule's period sets the load; use the same --interval-us", "interval"),
)


def across_name_of_condition(key: str) -> Optional[str]:
    """The --across name that covers condition ``key`` (``applied_idle_hold`` -> ``idle-hold``), or None."""
    name = key[len("applied_"):] if key.startswith("applied_") else key
    if name.endswith("_s"):
        name = name[:-2]
    name = name.replace("_", "-")
    return name if name in ACROSS_NAMES else None


def parse_across(text: str) -> Tuple[str, ...]:
    """``placement,settle`` -> the names, in order; ValueError naming an unknown one and the known ones."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("expected one or more of %s" % ", ".join(ACROSS_NAMES))
    for name in names:
        if name not in ACROSS_NAMES:
            raise ValueError("unknown name %r (known: %s)" % (name, ", ".join(ACROSS_NAMES)))
    return tuple(dict.fromkeys(names))


# ---------------------------------------------------------------------------
# Pure statistics
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RatioCI:
    """``other / baseline`` of one percentile, with its bootstrap confidence interval.

    ``baseline`` and ``other`` are the percentile (type 7, as in summary.json)
    of each sample, in the samples' unit; ``low``/``high`` bound the ratio
    at ``confidence`` (for example 0.95), from ``resamples`` bootstrap draws.
    ``high`` may be ``inf`` when a resampled baseline percentile is 0.
    """

    q: float
    baseline: float
    other: float
    ratio: float
    low: float
    high: float
    confidence: float
    resamples: int

    def excludes_one(self) -> bool:
        return self.low > 1.0 or self.high < 1.0

    def to_dict(self) -> Dict[str, object]:
        return _interval_dict(self, "ratio", self.ratio)


def _interval_dict(ci: Union["RatioCI", "DifferenceCI"], name: str, value: float) -> Dict[str, object]:
    """The JSON of an interval record: its percentile, both runs' figures, ``name`` (ratio or
    difference) and the interval, non-finite figures as null."""
    return {
        "q": ci.q,
        "baseline": _finite(ci.baseline),
        "other": _finite(ci.other),
        name: _finite(value),
        "ci_low": _finite(ci.low),
        "ci_high": _finite(ci.high),
        "confidence": ci.confidence,
        "resamples": ci.resamples,
    }


def _finite(value: Optional[float]) -> Optional[float]:
    """JSON has no infinity: a non-finite figure becomes null."""
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
    """Percentiles ``qs`` of ``resamples`` bootstrap resamples of ``sorted_x``, shape (len(qs), resamples).

    Exact in distribution to resampling with replacement (see the module
    docstring): draws the needed order statistics of n uniforms jointly.
    """
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
    uniform: Dict[int, Any] = {}
    previous_rank, previous = 0, np.zeros(resamples)
    for rank in sorted(ranks):
        step = rng.beta(rank - previous_rank, n - rank + 1, size=resamples)
        current = previous + (1.0 - previous) * step
        uniform[rank] = current
        previous_rank, previous = rank, current
    value = {
        rank: sorted_x[np.minimum((u * n).astype(np.int64), n - 1)]
        for rank, u in uniform.items()
    }
    out = np.empty((len(qs), resamples))
    for i, (rank_lo, rank_hi, fraction) in enumerate(plan):
        out[i] = value[rank_lo] + (value[rank_hi] - value[rank_lo]) * fraction
    return out


def _ratio_interval(numerators: Any, denominators: Any, confidence: float) -> Tuple[float, float]:
    """The percentile interval of ``numerators / denominators`` (0/0 counts as 1, x/0 as inf)."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(
            denominators == 0,
            np.where(numerators == 0, 1.0, np.inf),
            numerators / np.where(denominators == 0, 1.0, denominators),
        )
    ratios.sort()
    tail = (1.0 - confidence) / 2.0
    last = ratios.size - 1
    # Outward rounding of the order statistics: never narrower than asked, and no
    # arithmetic on an infinite ratio.
    low = ratios[int(math.floor(tail * last))]
    high = ratios[int(math.ceil((1.0 - tail) * last))]
    return float(low), float(high)


def bootstrap_percentile_ratios(
    baseline: Sequence[float],
    other: Sequence[float],
    qs: Sequence[float] = (50.0,),
    confidence: float = 1.0 - DEFAULT_ALPHA,
    resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = DEFAULT_SEED,
) -> Tuple[RatioCI, ...]:
    """``percentile(other, q) / percentile(baseline, q)`` for each ``q`` in ``qs``, with bootstrap CIs.

    Each sample is resampled independently (the two runs are independent);
    all ``qs`` come from the same resamples, and adding a higher percentile
    to ``qs`` leaves the intervals of the lower ones unchanged.  Percentiles are type 7, as in
    summary.json.  Raises ValueError on an empty sample, a non-finite value,
    a baseline percentile of 0, or settings out of range.
    """
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1, got %r" % (confidence,))
    if resamples < 1:
        raise ValueError("resamples must be positive, got %r" % (resamples,))
    for q in qs:
        if not 0.0 <= q <= 100.0:
            raise ValueError("percentile must be within 0..100, got %r" % (q,))
    base = _as_sorted_array(baseline, "baseline")
    oth = _as_sorted_array(other, "other")
    # One stream per run, each drawing order statistics from the lowest rank up: the
    # p50 interval is the same whether or not p99 is asked for too.
    base_seed, other_seed = np.random.SeedSequence(seed).spawn(2)
    base_boot = _resampled_percentiles(base, qs, resamples, np.random.default_rng(base_seed))
    other_boot = _resampled_percentiles(oth, qs, resamples, np.random.default_rng(other_seed))
    results = []
    for i, q in enumerate(qs):
        base_q = type7_percentile(base.tolist(), q)
        other_q = type7_percentile(oth.tolist(), q)
        if base_q == 0:
            raise ValueError("the baseline's p%g is 0: a ratio to it is undefined" % q)
        low, high = _ratio_interval(other_boot[i], base_boot[i], confidence)
        results.append(
            RatioCI(q=q, baseline=base_q, other=other_q, ratio=other_q / base_q, low=low, high=high,
                    confidence=confidence, resamples=resamples)
        )
    return tuple(results)


def bootstrap_ratio_ci(
    baseline: Sequence[float],
    other: Sequence[float],
    q: float = 50.0,
    confidence: float = 1.0 - DEFAULT_ALPHA,
    resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = DEFAULT_SEED,
) -> RatioCI:
    """``percentile(other, q) / percentile(baseline, q)`` with its percentile-bootstrap CI."""
    return bootstrap_percentile_ratios(baseline, other, (q,), confidence, resamples, seed)[0]


@dataclasses.dataclass(frozen=True)
class DifferenceCI:
    """``percentile(other) - percentile(baseline)`` of one percentile, with its bootstrap interval.

    Used where a ratio is often undefined: a component of a wake (GIL wait,
    the unattributed remainder) has a p50 of 0 in many runs.  ``low``/``high``
    are NaN when the samples were too few to resample (``resamples`` 0).
    """

    q: float
    baseline: float
    other: float
    difference: float
    low: float
    high: float
    confidence: float
    resamples: int

    def excludes_zero(self) -> bool:
        return self.low > 0.0 or self.high < 0.0

    def to_dict(self) -> Dict[str, object]:
        return _interval_dict(self, "difference", self.difference)


def bootstrap_percentile_difference(
    baseline: Sequence[float],
    other: Sequence[float],
    q: float = 50.0,
    confidence: float = 1.0 - DEFAULT_ALPHA,
    resamples: int = DEFAULT_RESAMPLES,
    seed: Seed = DEFAULT_SEED,
) -> DifferenceCI:
    """``percentile(other, q) - percentile(baseline, q)`` with its percentile-bootstrap interval.

    The same resampling as :func:`bootstrap_percentile_ratios` (each sample
    independently, order statistics drawn exactly, one stream per run from
    ``seed``); the interval is read off the quantiles of the resampled
    differences, rounded outwards.  Raises ValueError as that function does
    (an empty sample, a non-finite value, settings out of range), but a
    percentile of 0 is fine here.
    """
    import numpy as np

    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1, got %r" % (confidence,))
    if resamples < 1:
        raise ValueError("resamples must be positive, got %r" % (resamples,))
    if not 0.0 <= q <= 100.0:
        raise ValueError("percentile must be within 0..100, got %r" % (q,))
    base = _as_sorted_array(baseline, "baseline")
    oth = _as_sorted_array(other, "other")
    base_seed, other_seed = np.random.SeedSequence(seed).spawn(2)
    base_boot = _resampled_percentiles(base, (q,), resamples, np.random.default_rng(base_seed))[0]
    other_boot = _resampled_percentiles(oth, (q,), resamples, np.random.default_rng(other_seed))[0]
    differences = np.sort(other_boot - base_boot)
    tail = (1.0 - confidence) / 2.0
    last = differences.size - 1
    low = float(differences[int(math.floor(tail * last))])
    high = float(differences[int(math.ceil((1.0 - tail) * last))])
    base_q = type7_percentile(base.tolist(), q)
    other_q = type7_percentile(oth.tolist(), q)
    return DifferenceCI(q=q, baseline=base_q, other=other_q, difference=other_q - base_q, low=low, high=high,
                        confidence=confidence, resamples=resamples)


@dataclasses.dataclass(frozen=True)
class RankTest:
    """A two-sided Mann-Whitney U test of ``other`` against ``baseline``.

    ``u`` is the U statistic of ``other``; ``p_greater`` the common-language
    effect size: the chance that a random value of ``other`` exceeds a random
    value of ``baseline``, ties counting half (0.5: no shift; 1.0: every value
    of ``other`` is larger).
    """

    u: float
    p_value: float
    p_greater: float
    n_baseline: int
    n_other: int

    def to_dict(self) -> Dict[str, object]:
        return dataclasses.asdict(self)


def mann_whitney(baseline: Sequence[float], other: Sequence[float]) -> RankTest:
    """Two-sided Mann-Whitney U test (scipy's exact or asymptotic method, as it chooses)."""
    base = _as_sorted_array(baseline, "baseline")
    oth = _as_sorted_array(other, "other")
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


def smallest_p_value(n_baseline: int, n_other: int) -> float:
    """The smallest two-sided p-value the exact Mann-Whitney test can give with these sizes.

    With 3 rounds against 3 it is 0.1: no difference, however large, could
    be significant at 0.05.
    """
    if n_baseline < 1 or n_other < 1:
        return 1.0
    if n_baseline + n_other <= 1000:
        return min(1.0, 2.0 / math.comb(n_baseline + n_other, n_baseline))
    # 2 / C(n + m, n) in logarithms: the coefficient for two large runs does not fit in a float.
    log_comb = math.lgamma(n_baseline + n_other + 1) - math.lgamma(n_baseline + 1) - math.lgamma(n_other + 1)
    return min(1.0, 2.0 * math.exp(-log_comb))


def why_untestable(n_baseline: int, n_other: int, unit: str = "samples") -> Optional[str]:
    """Why two samples of these sizes are not compared (too few per side), or None when they are."""
    if min(n_baseline, n_other) < MIN_PER_SIDE:
        return "too few %s for an interval (%d against %d; at least %d on each side)" % (
            unit, n_baseline, n_other, MIN_PER_SIDE)
    return None


def _time_bounds(ci_low: float, ci_high: float, higher_is_better: bool) -> Tuple[float, float]:
    """The interval as a time ratio (above 1: slower): a rate's ops/s interval is inverted."""
    if not higher_is_better:
        return ci_low, ci_high
    low = 1.0 / ci_high if ci_high > 0 else math.inf
    high = 1.0 / ci_low if ci_low > 0 else math.inf
    return low, high


def verdict(ci_low: float, ci_high: float, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT,
            higher_is_better: bool = False) -> str:
    """"slower", "faster", "no difference", "cannot tell", or "not tested" (no interval: NaN bounds).

    ``ci_low``/``ci_high`` bound the ratio other/baseline.  With m =
    ``min_effect_pct`` / 100 and the ratio as a time ratio (for rates,
    ``higher_is_better``, the ops/s ratio inverted): slower when the interval
    lies above 1 + m, faster when below 1 / (1 + m), no difference when inside
    [1 / (1 + m), 1 + m], and cannot tell otherwise.
    """
    if math.isnan(ci_low) or math.isnan(ci_high):
        return NOT_TESTED
    if not 0.0 < min_effect_pct < 100.0:
        raise ValueError("min_effect_pct must be above 0 and below 100, got %r" % (min_effect_pct,))
    limit = 1.0 + min_effect_pct / 100.0
    low, high = _time_bounds(ci_low, ci_high, higher_is_better)
    if low > limit:
        return SLOWER
    if high < 1.0 / limit:
        return FASTER
    if low >= 1.0 / limit and high <= limit:
        return NO_DIFFERENCE
    return CANNOT_TELL


def minimum_detectable_effect(ci_low: float, ci_high: float, min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT) -> float:
    """The smallest change (percent) that an interval this wide could still call "slower" or "faster".

    ``(1 + m) exp(h) - 1`` with h the interval's half-width in log terms,
    ``(ln high - ln low) / 2``: a true change of that size puts the lower end
    of an interval of the same width exactly at 1 + m.  ``inf`` when a bound
    is 0 or infinite, NaN without an interval.
    """
    if math.isnan(ci_low) or math.isnan(ci_high):
        return math.nan
    if ci_low <= 0 or not math.isfinite(ci_high):
        return math.inf
    half = (math.log(ci_high) - math.log(ci_low)) / 2.0
    return ((1.0 + min_effect_pct / 100.0) * math.exp(half) - 1.0) * 100.0


# ---------------------------------------------------------------------------
# Runs and their comparison
# ---------------------------------------------------------------------------


# One evidence bundle, as loaded by the evidence model.
Run = Bundle


@dataclasses.dataclass(frozen=True)
class Settings:
    """How runs are compared: the significance level (the CI level is 1 - alpha), the practical
    threshold of a verdict (``min_effect_pct``), resamples and seed."""

    alpha: float = DEFAULT_ALPHA
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    min_effect_pct: float = DEFAULT_MIN_EFFECT_PCT

    @property
    def confidence(self) -> float:
        return 1.0 - self.alpha

    def to_dict(self) -> Dict[str, object]:
        return {"alpha": self.alpha, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed,
                "min_effect_pct": self.min_effect_pct,
                "test": "Mann-Whitney U, two-sided, on the pooled wakes (secondary: never decides a verdict)",
                "interval": "two-level bootstrap of the ratio: worker slices, then wakes (rounds) within them",
                "verdict": "slower / faster: the interval beyond 1 + m / 1 / (1 + m); no difference: inside both; "
                           "cannot tell: otherwise (m = min_effect_pct / 100)"}


@dataclasses.dataclass(frozen=True)
class Judgement:
    """The verdict on one percentile of one arm (``key``: p50, p99, p99_9, or median for a rate).

    ``ci`` is the ratio with its two-level bootstrap interval; ``spread_pct``
    is how well the runs pin their own level (the half-width, in log terms, of
    the wider of the two runs' own intervals, percent: "repetitions vary
    ±spread_pct"); ``mde_pct`` the minimum detectable effect
    (:func:`minimum_detectable_effect`); ``reason`` the sentence of a
    "cannot tell".
    """

    key: str
    ci: RatioCI
    verdict: str
    spread_pct: float
    mde_pct: float
    reason: Optional[str] = None

    def to_dict(self) -> Dict[str, object]:
        return {"verdict": self.verdict, "spread_pct": _finite(self.spread_pct),
                "min_detectable_effect_pct": _finite(self.mde_pct), "reason": self.reason}


@dataclasses.dataclass(frozen=True)
class ComponentComparison:
    """Where an arm's wake moved between two traced runs: each component's p50 in both, and which moved most.

    ``shifts`` maps each component of a wake (:data:`wakelab.analysis.components.COMPONENTS`,
    in wake order) to its :class:`DifferenceCI` (ns, other minus baseline), bootstrapped from
    the per-wake components of each run's traced pass.  ``moved_most`` is the component with the
    largest difference whose interval excludes 0 (``significant``), or, when none does, the
    largest difference (``significant`` False).  ``n_baseline``/``n_other`` count traced wakes.
    ``reblocks``: each re-block cause's mean time per wake in both runs, largest change first
    (:mod:`wakelab.analysis.reblock_shifts`; empty unless both runs named their re-blocks).
    """

    shifts: Mapping[str, DifferenceCI]
    moved_most: Optional[str]
    significant: bool
    n_baseline: int
    n_other: int
    reblocks: Tuple[Any, ...] = ()

    def ratio(self, component: str) -> Optional[float]:
        """Other over baseline p50 of ``component`` (None where the baseline's is 0)."""
        shift = self.shifts[component]
        return shift.other / shift.baseline if shift.baseline else None

    def to_dict(self) -> Dict[str, object]:
        return {
            "n_baseline": self.n_baseline,
            "n_other": self.n_other,
            "moved_most": self.moved_most,
            "significant": self.significant,
            "p50": {name: dict(shift.to_dict(), ratio=_finite(self.ratio(name))) for name, shift in self.shifts.items()},
            **({"reblocks": [shift.to_dict() for shift in self.reblocks]} if self.reblocks else {}),
        }


@dataclasses.dataclass(frozen=True)
class ArmComparison:
    """One arm in two runs.

    Latency arms carry ``ratios`` keyed ``p50``, ``p99`` (both runs n >= 100)
    and ``p99_9`` (n >= 1000), of wake times in ns: above 1 is slower.  Rate
    arms carry ``median``, the ratio of the median round's ops/s: above 1 is
    faster (``higher_is_better``).  ``judgements`` holds the verdict of each
    ratio, ``verdict`` is the p50's (the median's); ``test`` is the secondary
    rank test, None when the samples are too few (``notes`` says why).
    ``units_baseline``/``units_other`` count the units the bootstrap resampled.
    """

    name: str
    kind: str
    waiter: str
    scope: str
    n_baseline: int
    n_other: int
    lost_baseline: int
    lost_other: int
    ratios: Mapping[str, RatioCI]
    test: Optional[RankTest]
    verdict: str
    notes: Tuple[str, ...] = ()
    # Both runs traced (wakelab run --trace): where the wake moved; None otherwise.
    components: Optional[ComponentComparison] = None
    judgements: Mapping[str, Judgement] = dataclasses.field(default_factory=dict)
    units_baseline: int = 1
    units_other: int = 1
    # A soak past its raw-sample cap, by side ("baseline", "other"): the raw samples compared, of how many wakes.
    raw_kept: Mapping[str, Mapping[str, int]] = dataclasses.field(default_factory=dict)

    @property
    def higher_is_better(self) -> bool:
        return self.kind == RATE

    @property
    def tail_regression(self) -> Optional[str]:
        """The first tail percentile judged "slower" while the p50 is not (None when there is none)."""
        if self.kind == RATE or self.verdict == SLOWER:
            return None
        for key in ("p99", "p99_9"):
            judged = self.judgements.get(key)
            if judged is not None and judged.verdict == SLOWER:
                return key
        return None

    def slowdown(self, metric: str) -> Optional[float]:
        """How many times slower ``other`` is at ``metric`` (a ratio key; rates use their median), or None."""
        key = "median" if self.kind == RATE else METRIC_KEYS.get(metric, metric)
        ratio = self.ratios.get(key)
        if ratio is None:
            return None
        if self.kind == RATE:
            return 1.0 / ratio.ratio if ratio.ratio else math.inf
        return ratio.ratio

    def significantly_slower(self, metric: str) -> bool:
        """The verdict at ``metric`` (rates: their median) is "slower"."""
        key = "median" if self.kind == RATE else METRIC_KEYS.get(metric, metric)
        judged = self.judgements.get(key)
        return judged is not None and judged.verdict == SLOWER

    def to_dict(self) -> Dict[str, object]:
        ratios: Dict[str, object] = {}
        for key, ratio in self.ratios.items():
            doc = ratio.to_dict()
            judged = self.judgements.get(key)
            if judged is not None:
                doc.update(judged.to_dict())
            ratios[key] = doc
        return {
            "arm": self.name,
            "kind": self.kind,
            "waiter": self.waiter,
            "scope": self.scope,
            "n_baseline": self.n_baseline,
            "n_other": self.n_other,
            "units_baseline": self.units_baseline,
            "units_other": self.units_other,
            "lost_baseline": self.lost_baseline,
            "lost_other": self.lost_other,
            "ratios": ratios,
            "mann_whitney": self.test.to_dict() if self.test else None,
            "verdict": self.verdict,
            "tail_regression": self.tail_regression,
            "notes": list(self.notes),
            **({"raw_kept": {side: dict(kept) for side, kept in self.raw_kept.items()}} if self.raw_kept else {}),
            **({"components": self.components.to_dict()} if self.components is not None else {}),
        }


@dataclasses.dataclass(frozen=True)
class RunComparison:
    """``other`` against ``baseline``: every arm they share, and what they do not.

    ``across`` lists the differences compared on purpose (``--across``, or a grid's dimensions).
    """

    baseline: Run
    other: Run
    warnings: Tuple[str, ...]
    arms: Tuple[ArmComparison, ...]
    only_in_baseline: Tuple[str, ...]
    only_in_other: Tuple[str, ...]
    not_compared: Tuple[Tuple[str, str], ...]
    across: Tuple[str, ...] = ()

    def to_dict(self) -> Dict[str, object]:
        return {
            "baseline": self.baseline.label,
            "other": self.other.label,
            "warnings": list(self.warnings),
            "across": list(self.across),
            "arms": [a.to_dict() for a in self.arms],
            "only_in_baseline": list(self.only_in_baseline),
            "only_in_other": list(self.only_in_other),
            "not_compared": [{"arm": name, "reason": reason} for name, reason in self.not_compared],
        }


@dataclasses.dataclass(frozen=True)
class Regression:
    """An arm of run ``label`` significantly slower than the baseline by more than the limit."""

    label: str
    arm: str
    metric: str
    slowdown: float

    def to_dict(self) -> Dict[str, object]:
        return {"run": self.label, "arm": self.arm, "metric": self.metric, "slowdown": _finite(self.slowdown)}


def load_run(path: str, label: str) -> Run:
    """Load and validate the summary at ``path`` (a bundle folder or its summary.json)."""
    return Bundle.load(path, label, grid_hint="compare its cells")


def _short_list(names: Sequence[str], limit: int = 8) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:limit])
    return shown + (", ... (%d in all)" % len(names) if len(names) > limit else "")


def _interpreter_text(interp: Mapping[str, Any]) -> str:
    return Interpreter.from_dict(interp).label


def _differences(a: Mapping[str, Any], b: Mapping[str, Any], keys: Sequence[str]) -> List[str]:
    return ["%s %s vs %s" % (k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def check_comparable(baseline: Run, other: Run, across: Sequence[str] = ()) -> List[str]:
    """Raise :class:`EvidenceError` unless the runs measured the same experiments; return warnings.

    Refused: no arm in common; a shared arm whose kind, waiter state, scope
    or unit differs; different :data:`EXPERIMENT_PARAMETERS` (settle_us,
    planted_delay_us, placement, mode, and interval_us in open-loop mode);
    different ``conditions`` (when both runs record them) -- unless ``across``
    names the difference (:data:`ACROSS_NAMES`).  Warned: different
    interpreters (unless ``across`` names ``interpreter``), machines, pinned
    CPUs or wakelab versions, conditions recorded by one run only, an
    incomplete run.
    """
    return comparability(baseline, other, across)[0]


def comparability(baseline: Run, other: Run, across: Sequence[str] = ()) -> Tuple[List[str], List[str]]:
    """:func:`check_comparable`'s warnings, and the differences compared on purpose (named in ``across``)."""
    named = set(across)
    a_sum, b_sum = baseline.summary, other.summary
    a_arms, b_arms = baseline.entries_by_name(), other.entries_by_name()
    where = "cannot compare %s with %s" % (other.source, baseline.source)
    common = [name for name in a_arms if name in b_arms]
    if not common:
        raise EvidenceError("%s: no arm in common (%s has %s; %s has %s)" % (
            where, baseline.source, _short_list(list(a_arms)), other.source, _short_list(list(b_arms))))
    for name in common:
        a, b = a_arms[name], b_arms[name]
        for key, what in (("kind", "kind"), ("waiter", "waiter state"), ("scope", "scope"), ("unit", "unit")):
            if a.get(key) != b.get(key):
                raise EvidenceError("%s: arm %s differs in %s (%s in %s, %s in %s): not the same experiment" % (
                    where, name, what, a.get(key), baseline.source, b.get(key), other.source))
    on_purpose: List[str] = []
    a_params, b_params = a_sum.get("parameters") or {}, b_sum.get("parameters") or {}
    for key, default, why, name in EXPERIMENT_PARAMETERS:
        if key == "interval_us" and (a_params.get("mode", "closed") != "open" or b_params.get("mode", "closed") != "open"):
            continue  # the schedule period only matters when both runs are open-loop
        a_value, b_value = a_params.get(key, default), b_params.get(key, default)
        if a_value != b_value:
            if name not in named:
                raise EvidenceError("%s: %s differs (%s vs %s): %s, or name it with --across %s to compare on purpose"
                                    % (where, key, a_value, b_value, why, name))
            on_purpose.append("%s %s vs %s" % (key, a_value, b_value))
    warnings: List[str] = []
    cpu_diffs = _differences(a_params, b_params, ("notifier_cpu", "waiter_cpu"))
    if cpu_diffs:
        if "placement" in named:
            on_purpose.extend(cpu_diffs)
        else:
            warnings.append("pinned to other CPUs (%s): differences include the CPUs" % "; ".join(cpu_diffs))
    has_a, has_b = "conditions" in a_sum, "conditions" in b_sum
    if has_a and has_b:
        a_cond, b_cond = a_sum["conditions"], b_sum["conditions"]
        if a_cond != b_cond:
            if isinstance(a_cond, Mapping) and isinstance(b_cond, Mapping):
                keys = sorted(set(a_cond) | set(b_cond), key=str)
                differing = [k for k in keys if a_cond.get(k) != b_cond.get(k)]
                names = [across_name_of_condition(str(k)) for k in differing]
                detail = "; ".join("%s %s vs %s" % (k, _compact(a_cond.get(k)), _compact(b_cond.get(k)))
                                   for k in differing)
                unnamed = [n for n in names if n not in named]
                if unnamed:
                    hint = ""
                    if all(n is not None for n in unnamed):
                        hint = " (name it with --across %s to compare on purpose)" % ",".join(
                            dict.fromkeys(str(n) for n in unnamed))
                    raise EvidenceError("%s: conditions differ (%s): not the same experiment%s" % (where, detail, hint))
                on_purpose.extend("%s %s vs %s" % (k, _compact(a_cond.get(k)), _compact(b_cond.get(k)))
                                  for k in differing)
            else:
                detail = "%s vs %s" % (_compact(a_cond), _compact(b_cond))
                raise EvidenceError("%s: conditions differ (%s): not the same experiment" % (where, detail))
    elif has_a != has_b:
        warnings.append("only %s records its conditions: cannot check that the conditions match"
                        % (baseline.label if has_a else other.label))
    a_int, b_int = a_sum.get("interpreter") or {}, b_sum.get("interpreter") or {}
    interp_keys = ("implementation", "version", "build", "free_threaded_build", "gil_enabled", "debug_build")
    if any(a_int.get(k) != b_int.get(k) for k in interp_keys):
        detail = "%s vs %s" % (_interpreter_text(a_int), _interpreter_text(b_int))
        if _interpreter_text(a_int) == _interpreter_text(b_int):
            detail = "; ".join(_differences(a_int, b_int, interp_keys))
        if "interpreter" in named:
            on_purpose.append("interpreter %s" % detail)
        else:
            warnings.append("interpreters differ (%s): differences include the interpreter" % detail)
    a_mach, b_mach = a_sum.get("machine") or {}, b_sum.get("machine") or {}
    machine_diffs = _differences(a_mach, b_mach, ("hostname", "cpu_model", "kernel"))
    if machine_diffs:
        warnings.append("machines differ (%s): differences include the machine" % "; ".join(machine_diffs))
    a_tool, b_tool = (a_sum.get("tool") or {}).get("version"), (b_sum.get("tool") or {}).get("version")
    if a_tool != b_tool:
        warnings.append("wakelab versions differ (%s vs %s): check that the arms still time the same instants"
                        % (a_tool, b_tool))
    for run in (baseline, other):
        if not run.run_state.good:
            warnings.append("%s is not a complete run (%s)" % (run.label, run.run_state.reason))
    return warnings, on_purpose


def _compact(value: Any) -> str:
    import json

    text = json.dumps(value, sort_keys=True, separators=(",", ":")) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def _mismatch(run: Run, name: str, what: str, from_samples: object, in_summary: object) -> EvidenceError:
    return EvidenceError("%s: arm %s: the samples file does not match summary.json (%s %s from the samples, %s in the "
                         "summary): the bundle was edited or mixed" % (run.source, name, what, from_samples, in_summary))


def _close(a: float, b: Optional[float]) -> bool:
    return b is not None and math.isclose(a, b, rel_tol=_FIGURE_TOLERANCE, abs_tol=1e-6)


def load_series(run: Run, entry: Mapping[str, Any]) -> Tuple[Any, str]:
    """The values an arm is compared on, checked against its summary figures, and their unit.

    Latency arms: the wake times (ns), one float64 array: every wake, or the
    raw samples a soak past its raw-sample cap keeps (its first whole chunks,
    each checked against its worker record: :meth:`Bundle.raw_kept`).  Rate
    arms: each round's ops/s.
    """
    from wakelab.evidence.load import load_samples

    name = str(entry["name"])
    doc = load_samples(run.folder, dict(entry))
    if doc.get("kind") != entry.get("kind"):
        raise EvidenceError("%s: arm %s: the samples file holds %s samples, summary.json says %s" % (
            run.source, name, doc.get("kind"), entry.get("kind")))
    unit = str(doc.get("unit", "ns"))
    if entry.get("kind") == LATENCY:
        import numpy as np

        # One float64 array, the parsed document dropped at once: a large bundle's samples are
        # held as 8 bytes each, not as Python numbers (two 80 MB bundles fit in a few hundred MB).
        samples = np.asarray(doc.pop("samples_ns"), dtype=np.float64)
        del doc
        latency = entry.get("latency") or {}
        if samples.size != latency.get("n"):
            # A soak past its raw-sample cap keeps its first chunks (EvidenceError when they do not line up
            # with its worker records); its p50 is the histogram's, so each chunk's is checked instead.
            if run.raw_kept(entry, samples) is None:
                raise _mismatch(run, name, "n", samples.size, latency.get("n"))
        elif samples.size:
            p50 = float(np.percentile(samples, 50.0))  # linear interpolation: type 7
            if not _close(p50, latency.get("p50_ns")):
                raise _mismatch(run, name, "p50", p50, latency.get("p50_ns"))
        return samples, unit
    n_per_round = doc.get("n_per_round")
    if not isinstance(n_per_round, int) or isinstance(n_per_round, bool) or n_per_round <= 0:
        raise EvidenceError("%s: arm %s: the samples file has no valid n_per_round" % (run.source, name))
    rates = [n_per_round * 1e9 / max(t, 1) for t in doc["round_ns"]]
    rate = entry.get("rate") or {}
    if len(rates) != rate.get("rounds"):
        raise _mismatch(run, name, "rounds", len(rates), rate.get("rounds"))
    if rates:
        median = type7_percentile(sorted(rates), 50.0)
        if not _close(median, rate.get("ops_per_s")):
            raise _mismatch(run, name, "median ops/s", median, rate.get("ops_per_s"))
    return rates, unit


def _traced(entry: Mapping[str, Any]) -> bool:
    trace = entry.get("trace")
    return isinstance(trace, Mapping) and trace.get("traced") is True


def load_traced_components(run: Run, entry: Mapping[str, Any]) -> Dict[str, Any]:
    """The per-wake components of a traced arm's traced pass, one float64 array each (ns).

    Checked: the samples file's ``traced`` part is well formed, each wake's components sum to
    its latency, and it holds as many wakes as the summary's ``trace.components.wakes``.
    """
    import numpy as np

    from wakelab.analysis.components import COMPONENTS, TracedSeriesError, traced_reblocks, traced_series
    from wakelab.evidence.load import load_samples

    name = str(entry["name"])
    doc = load_samples(run.folder, dict(entry))
    try:
        series = traced_series(doc)
        reblocks = traced_reblocks(doc)
    except TracedSeriesError as exc:
        raise EvidenceError("%s: arm %s: the samples file's traced part is unusable: %s" % (run.source, name, exc)) from None
    del doc
    if series is None:
        raise EvidenceError("%s: arm %s: summary.json says it was traced, but its samples file has no traced part"
                            % (run.source, name))
    wakes = ((entry.get("trace") or {}).get("components") or {}).get("wakes")
    if len(series["latency"]) != wakes:
        raise _mismatch(run, name, "traced wakes", len(series["latency"]), wakes)
    if not series["latency"]:
        raise EvidenceError("%s: arm %s: the traced pass holds no wake" % (run.source, name))
    arrays: Dict[str, Any] = {key: np.asarray(series[key], dtype=np.float64) for key in ("latency",) + COMPONENTS}
    if reblocks is not None:  # each re-block cause's series (a bundle from before they were named has none)
        arrays["reblocks"] = {cause: np.asarray(values, dtype=np.float64) for cause, values in reblocks.items()}
    return arrays


def compare_components(baseline: Mapping[str, Any], other: Mapping[str, Any], name: str,
                       settings: Settings) -> ComponentComparison:
    """Each component's p50 in two traced passes (``baseline``/``other``: :func:`load_traced_components`),
    with a bootstrap interval of the difference, and the component that moved most."""
    from wakelab.analysis.components import COMPONENTS

    n_a, n_b = len(baseline["latency"]), len(other["latency"])
    shifts: Dict[str, DifferenceCI] = {}
    for component in COMPONENTS:
        a, b = baseline[component], other[component]
        if min(n_a, n_b) >= MIN_PER_SIDE:
            shifts[component] = bootstrap_percentile_difference(
                a, b, 50.0, settings.confidence, settings.resamples, _arm_seed(settings.seed, "%s/%s" % (name, component)))
        else:
            base_q, other_q = type7_percentile(sorted(a.tolist()), 50.0), type7_percentile(sorted(b.tolist()), 50.0)
            nan = float("nan")
            shifts[component] = DifferenceCI(50.0, base_q, other_q, other_q - base_q, nan, nan, settings.confidence, 0)
    moved = [c for c in COMPONENTS if shifts[c].excludes_zero()]
    pool = moved or [c for c in COMPONENTS if shifts[c].difference != 0]
    most = max(pool, key=lambda c: (abs(shifts[c].difference), -COMPONENTS.index(c))) if pool else None
    reblocks: Tuple[Any, ...] = ()
    if "reblocks" in baseline and "reblocks" in other:
        from wakelab.analysis.reblock_shifts import compare_reblocks

        reblocks = tuple(compare_reblocks(baseline["reblocks"], other["reblocks"], n_a, n_b, settings.confidence,
                                          settings.resamples, settings.seed, name))
    return ComponentComparison(shifts, most, bool(moved), n_a, n_b, reblocks)


def _arm_seed(seed: int, name: str) -> List[int]:
    # One stream per arm: adding or dropping an arm never changes another arm's interval.
    return [seed, zlib.crc32(name.encode("utf-8"))]


def _status_reason(run: Run, entry: Mapping[str, Any]) -> Optional[str]:
    status = entry.get("status")
    if status != "ok":
        reason = entry.get("reason")
        return "%s in %s%s" % (status, run.label, (": %s" % reason) if reason else "")
    figures = entry.get("latency") if entry.get("kind") == LATENCY else entry.get("rate")
    if not figures or (entry.get("kind") == LATENCY and not figures.get("n")):
        return "no samples in %s" % run.label
    return None


def arm_units(entry: Mapping[str, Any], values: Any) -> Any:
    """The arm's values split into the units of the two-level bootstrap (its worker slices).

    Latency arms split on each worker record's ``n``, rate arms on its
    ``rounds``; see :func:`wakelab.analysis.hierarchical.split_units` for the
    fallback to one unit.
    """
    from wakelab.analysis.hierarchical import slice_sizes, split_units

    key = "n" if entry.get("kind") == LATENCY else "rounds"
    return split_units(values, slice_sizes(entry, key))


def _percentile_plan(kind: str, n_a: int, n_b: int) -> List[Tuple[str, float]]:
    if kind != LATENCY:
        return [("median", 50.0)]
    return [(key, q) for key, q in LATENCY_PERCENTILES if min(n_a, n_b) >= min_n_for(q)]


def _label_of(key: str) -> str:
    return "p99.9" if key == "p99_9" else key


def judge_arm(baseline_units: Any, other_units: Any, plan: Sequence[Tuple[str, float]], kind: str,
              settings: Settings, seed: Seed) -> Tuple[Dict[str, RatioCI], Dict[str, Judgement]]:
    """Ratios, intervals and verdicts of ``plan``'s percentiles from independent two-level bootstraps.

    ``baseline_units``/``other_units`` are :class:`~wakelab.analysis.hierarchical.Units`.
    Raises ValueError when a baseline percentile is 0.
    """
    import numpy as np

    from wakelab.analysis.hierarchical import level_interval, resample_percentiles, widen_for_few_units

    qs = [q for _key, q in plan]
    base_sorted = np.sort(np.concatenate(baseline_units.values))
    other_sorted = np.sort(np.concatenate(other_units.values))
    base_seed, other_seed = np.random.SeedSequence(seed).spawn(2)

    def boot(units: Any, pooled: Any, seed_seq: Any) -> Any:
        rng = np.random.default_rng(seed_seq)
        if units.count == 1:
            # One unit: the first stage has nothing to choose, and the one-level draw of order
            # statistics is exact in distribution and costs O(resamples) whatever n.
            return _resampled_percentiles(pooled, qs, settings.resamples, rng)
        return resample_percentiles(units, qs, settings.resamples, rng)

    base_boot = boot(baseline_units, base_sorted, base_seed)
    other_boot = boot(other_units, other_sorted, other_seed)
    for i, q in enumerate(qs):
        base_boot[i] = widen_for_few_units(float(np.percentile(base_sorted, q)), base_boot[i], baseline_units.count)
        other_boot[i] = widen_for_few_units(float(np.percentile(other_sorted, q)), other_boot[i], other_units.count)
    ratios: Dict[str, RatioCI] = {}
    judgements: Dict[str, Judgement] = {}
    for i, (key, q) in enumerate(plan):
        base_q = float(np.percentile(base_sorted, q))
        other_q = float(np.percentile(other_sorted, q))
        if base_q == 0:
            raise ValueError("the baseline's %s is 0: a ratio to it is undefined" % _label_of(key))
        low, high = _ratio_interval(other_boot[i], base_boot[i], settings.confidence)
        ci = RatioCI(q=q, baseline=base_q, other=other_q, ratio=other_q / base_q, low=low, high=high,
                     confidence=settings.confidence, resamples=settings.resamples)
        spread = max(level_interval(base_q, base_boot[i], settings.confidence).half_width_pct,
                     level_interval(other_q, other_boot[i], settings.confidence).half_width_pct)
        word = verdict(low, high, settings.min_effect_pct, higher_is_better=(kind == RATE))
        mde = minimum_detectable_effect(low, high, settings.min_effect_pct)
        reason = None
        if word == CANNOT_TELL:
            reason = "cannot tell: repetitions vary ±%s; the smallest change this comparison could detect is %s" % (
                format_pct(spread), format_pct(mde))
        ratios[key] = ci
        judgements[key] = Judgement(key, ci, word, spread, mde, reason)
    return ratios, judgements


def format_pct(value: float) -> str:
    """A percentage for a sentence: ``12%``, ``3.4%``; an infinite one is "an unbounded amount"."""
    if not math.isfinite(value):
        return "an unbounded amount" if value > 0 else "-"
    return ("%.0f%%" if value >= 10 else "%.1f%%") % value


def rigor_hint(baseline: Run, other: Run, judgements: Mapping[str, Judgement]) -> Optional[str]:
    """What would narrow a "cannot tell", when a side was not made compare-grade (None otherwise)."""
    if not any(j.verdict == CANNOT_TELL for j in judgements.values()):
        return None
    plain = [run.label for run in (baseline, other) if not (run.summary.get("execution") or {}).get("rigorous")]
    if not plain:
        return None  # both compare-grade already: more repetitions (--repeat) are what is left
    return "to tell smaller changes, make %s with wakelab run --rigorous (more wakes and workers per arm)" % (
        "both runs" if len(plain) == 2 else plain[0])


def compare_arm(baseline: Run, other: Run, name: str, settings: Settings) -> ArmComparison:
    """Compare arm ``name`` of two runs (both ``ok`` with samples); see :class:`ArmComparison`."""
    a_entry, b_entry = baseline.entries_by_name()[name], other.entries_by_name()[name]
    a_values, a_unit = load_series(baseline, a_entry)
    b_values, b_unit = load_series(other, b_entry)
    if a_unit != b_unit:
        raise EvidenceError("cannot compare %s with %s: arm %s is in %s in one and %s in the other" % (
            other.source, baseline.source, name, a_unit, b_unit))
    kind = str(a_entry.get("kind"))
    n_a, n_b = len(a_values), len(b_values)
    notes: List[str] = []
    plan = _percentile_plan(kind, n_a, n_b)
    if kind == LATENCY:
        unit_word = "samples"
        lost_a = int((a_entry.get("latency") or {}).get("lost") or 0)
        lost_b = int((b_entry.get("latency") or {}).get("lost") or 0)
    else:
        unit_word = "rounds"
        lost_a = lost_b = 0
    a_units, b_units = arm_units(a_entry, a_values), arm_units(b_entry, b_values)
    raw_kept: Dict[str, Dict[str, int]] = {}
    for side, run, entry, values, units in (("baseline", baseline, a_entry, a_values, a_units),
                                            ("other", other, b_entry, b_values, b_units)):
        total = (entry.get("latency") or {}).get("n") if kind == LATENCY else None
        if total is not None and len(values) != total:  # load_series let it through: a soak past its raw-sample cap
            raw_kept[side] = {"kept": len(values), "of": int(total), "units": units.count}
            notes.append("%s: compared on the first %d of %d wakes: the raw samples kept; the rest are in the histogram"
                         % (run.label, len(values), total))
    untestable = why_untestable(n_a, n_b, unit_word)
    judgements: Dict[str, Judgement] = {}
    try:
        if untestable is None:
            ratios, judgements = judge_arm(a_units, b_units, plan, kind, settings, _arm_seed(settings.seed, name))
        else:
            ratios = {key: _point_ratio(a_values, b_values, q, settings) for key, q in plan}
    except ValueError as exc:
        raise EvidenceError("cannot compare arm %s of %s with %s: %s" % (name, other.source, baseline.source, exc)) from None
    test: Optional[RankTest] = None
    main_key = plan[0][0]
    if untestable is not None:
        notes.append(untestable)
        word = NOT_TESTED
    else:
        test = mann_whitney(a_values, b_values)
        word = judgements[main_key].verdict
        if a_units.note and a_units.note == b_units.note:
            notes.append("%s and %s: %s" % (baseline.label, other.label, a_units.note))
        else:
            for run, units in ((baseline, a_units), (other, b_units)):
                if units.note:
                    notes.append("%s: %s" % (run.label, units.note))
        for key, judged in judgements.items():
            if judged.reason:
                notes.append("%s %s" % (_label_of(key), judged.reason))
        hint = rigor_hint(baseline, other, judgements)
        if hint:
            notes.append(hint)
    arm = ArmComparison(
        name=name, kind=kind, waiter=str(a_entry.get("waiter")), scope=str(a_entry.get("scope")),
        n_baseline=n_a, n_other=n_b, lost_baseline=lost_a, lost_other=lost_b,
        ratios=ratios, test=test, verdict=word, notes=(), components=None,
        judgements=judgements, units_baseline=a_units.count, units_other=b_units.count, raw_kept=raw_kept,
    )
    tail = arm.tail_regression
    if tail is not None:
        ci = ratios[tail]
        notes.append("tail regression: %s is slower, %s× (CI %s–%s), while the p50 is %s (%s×)"
                     % (_label_of(tail), _fmt_ratio(ci.ratio), _fmt_ratio(ci.low), _fmt_ratio(ci.high), word,
                        _fmt_ratio(ratios[main_key].ratio)))
    if lost_a or lost_b:
        notes.append("lost wakes are not in the samples: %d in %s, %d in %s"
                     % (lost_a, baseline.label, lost_b, other.label))
    components: Optional[ComponentComparison] = None
    if kind == LATENCY and _traced(a_entry) and _traced(b_entry):
        components = compare_components(load_traced_components(baseline, a_entry), load_traced_components(other, b_entry),
                                        name, settings)
    elif kind == LATENCY and _traced(a_entry) != _traced(b_entry):
        notes.append("only %s was traced: where the time goes is not compared"
                     % (baseline.label if _traced(a_entry) else other.label))
    return dataclasses.replace(arm, notes=tuple(notes), components=components)


def _fmt_ratio(value: float) -> str:
    if not math.isfinite(value):
        return "inf"
    return ("%.1f" if value >= 10 else "%.2f") % value


def _point_ratio(baseline: Sequence[float], other: Sequence[float], q: float, settings: Settings) -> RatioCI:
    """The ratio alone (no interval) when the samples are too few to test."""
    base_q = type7_percentile(sorted(baseline), q)
    other_q = type7_percentile(sorted(other), q)
    if base_q == 0:
        raise ValueError("the baseline's p%g is 0: a ratio to it is undefined" % q)
    nan = float("nan")
    return RatioCI(q=q, baseline=base_q, other=other_q, ratio=other_q / base_q, low=nan, high=nan,
                   confidence=settings.confidence, resamples=0)


def compare_runs(baseline: Run, other: Run, settings: Settings = Settings(),
                 across: Sequence[str] = ()) -> RunComparison:
    """Every arm of ``other`` against the same arm of ``baseline`` (raises EvidenceError when not comparable).

    ``across`` names the differences compared on purpose (see :func:`check_comparable`).
    """
    warnings, on_purpose = comparability(baseline, other, across)
    a_arms, b_arms = baseline.entries_by_name(), other.entries_by_name()
    arms: List[ArmComparison] = []
    not_compared: List[Tuple[str, str]] = []
    for name in a_arms:
        if name not in b_arms:
            continue
        reasons = [r for r in (_status_reason(baseline, a_arms[name]), _status_reason(other, b_arms[name])) if r]
        if reasons:
            not_compared.append((name, "; ".join(reasons)))
            continue
        arms.append(compare_arm(baseline, other, name, settings))
    return RunComparison(
        baseline=baseline,
        other=other,
        warnings=tuple(warnings),
        arms=tuple(arms),
        only_in_baseline=tuple(n for n in a_arms if n not in b_arms),
        only_in_other=tuple(n for n in b_arms if n not in a_arms),
        not_compared=tuple(not_compared),
        across=tuple(on_purpose),
    )


def parse_metrics(text: str) -> Tuple[str, ...]:
    """``p50,p99`` -> the names --fail-on-regression gates on; ValueError for an unknown one."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ValueError("expected p50, p99 or p99.9, or a list of them such as p50,p99")
    for name in names:
        if name not in METRIC_KEYS:
            raise ValueError("unknown percentile %r (known: p50, p99, p99.9)" % name)
    return tuple(dict.fromkeys(names))


def find_regressions(comparisons: Sequence[RunComparison], limit_pct: float,
                     metrics: Union[str, Sequence[str]] = DEFAULT_METRICS) -> Tuple[List[Regression], List[str]]:
    """Arms slower than the baseline by more than ``limit_pct`` percent at any of ``metrics``.

    A latency arm regresses at a percentile of ``metrics`` (p50, p99, p99.9)
    when that percentile's verdict is "slower" (its interval lies above 1 +
    the minimum effect) and its ratio exceeds 1 + ``limit_pct`` / 100, so a
    tail regression fails the check even when the p50 improved.  Rate arms
    gate on their median ops/s.  Also returns, as sentences, what could not be
    checked (a percentile the runs are too small for, an arm not tested).
    """
    if isinstance(metrics, str):
        metrics = (metrics,)
    keys: List[str] = []
    for metric in metrics:
        if metric not in METRIC_KEYS:
            raise ValueError("metric must be p50, p99 or p99.9, got %r" % (metric,))
        keys.append(METRIC_KEYS[metric])
    keys = list(dict.fromkeys(keys))
    limit = 1.0 + limit_pct / 100.0
    found: List[Regression] = []
    unchecked: List[str] = []
    for comparison in comparisons:
        for arm in comparison.arms:
            if arm.verdict == NOT_TESTED:
                unchecked.append("%s in %s: not tested (too few %s)"
                                 % (arm.name, comparison.other.label, "rounds" if arm.kind == RATE else "samples"))
                continue
            for key in (["median"] if arm.kind == RATE else keys):
                slowdown = arm.slowdown(key)
                if slowdown is None:
                    q = dict(LATENCY_PERCENTILES)[key]
                    unchecked.append("%s in %s: no %s (needs n >= %d in both runs)"
                                     % (arm.name, comparison.other.label, _label_of(key), min_n_for(q)))
                    continue
                if arm.significantly_slower(key) and slowdown > limit:
                    found.append(Regression(comparison.other.label, arm.name,
                                            "median ops/s" if arm.kind == RATE else _label_of(key), slowdown))
    return found, unchecked


# ---------------------------------------------------------------------------
# Grids: every cell against a baseline cell
# ---------------------------------------------------------------------------

# A grid's dimensions (matrix.json) -> the --across name that compares them.
GRID_DIMENSIONS = {"python": "interpreter", "placement": "placement", "settle_us": "settle",
                   "cpu_threads": "cpu-threads", "cpu_procs": "cpu-procs", "idle_hold": "idle-hold",
                   "switch_interval_s": "switch-interval", "mode": "mode"}


def load_grid(path: str) -> Grid:
    """Read the grid at ``path`` (:meth:`wakelab.evidence.model.Grid.load`, the loader every reader of a grid
    shares: it refuses a cell listed twice, leading outside the grid, or missing although it ran); a cell that
    never ran is kept, without a run."""
    return Grid.load(path)


def grid_across(grid: Grid) -> Tuple[str, ...]:
    """The --across names of the dimensions whose values differ between ``grid``'s cells (every cell, run or not)."""
    values: Dict[str, Set[str]] = {}
    for cell in grid.cells:
        for key, value in cell.dimensions.items():
            values.setdefault(str(key), set()).add(_compact(value))
    across: List[str] = []
    for key in sorted(values):
        if len(values[key]) > 1:
            name = GRID_DIMENSIONS.get(key) or across_name_of_condition(key)
            if name is not None and name not in across:
                across.append(name)
    return tuple(across)


def compare_grid(grid: Grid, baseline_cell: Optional[str] = None, settings: Settings = Settings(),
                 across: Sequence[str] = ()) -> Tuple[Run, List[RunComparison], List[Tuple[str, str]]]:
    """Every cell of ``grid`` against ``baseline_cell`` (default: the first), across the grid's dimensions.

    Returns the baseline run, one comparison per other cell with evidence, and
    the cells not compared with why.  EvidenceError when the baseline cell does
    not exist or has no evidence.
    """
    base = grid.cell(baseline_cell) if baseline_cell is not None else grid.cells[0]
    if base.bundle is None:
        raise EvidenceError("%s: the baseline cell %s has %s: choose another with --baseline-cell" % (
            grid.source, base.label, base.why_missing))
    names = tuple(dict.fromkeys(list(grid_across(grid)) + list(across)))
    comparisons: List[RunComparison] = []
    skipped: List[Tuple[str, str]] = []
    for cell in grid.cells:
        if cell is base:
            continue
        if cell.bundle is None:
            skipped.append((cell.label, str(cell.why_missing)))
            continue
        comparisons.append(compare_runs(base.bundle, cell.bundle, settings, names))
    return base.bundle, comparisons, skipped


def format_p(p_value: float) -> str:
    """A p-value for people: ``<0.001`` below a thousandth, else three decimals."""
    return "<0.001" if p_value < 0.001 else "%.3f" % p_value
