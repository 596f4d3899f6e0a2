"""Comparing runs: is run B faster or slower than run A, arm by arm, and how sure is that?

Analysis side: numpy and scipy are imported lazily, inside the functions that
need them, so that importing this module costs nothing on the measuring side.

Two layers live here:

* **Pure statistics** on sample arrays, tested with exact fixtures:
  :func:`bootstrap_ratio_ci` (a percentile bootstrap confidence interval of
  ``percentile(B) / percentile(A)``), :func:`mann_whitney` (a two-sided
  Mann-Whitney U test, with the common-language effect size) and
  :func:`verdict` (the word a reader sees).
* **Run comparison**: loading bundles (:func:`load_run`), deciding whether two
  runs measured the same experiment (:func:`check_comparable`, which raises
  :class:`~wakelab.errors.EvidenceError` when they did not, and returns
  warnings when they differ in ways that are often the point of comparing),
  comparing every arm the two share (:func:`compare_runs`) and gating a CI job
  (:func:`find_regressions`).

Why a verdict needs two tests
-----------------------------
Wake latencies are skewed, multi-modal and full of ties at the timer's
resolution, so a t-test on means would answer the wrong question.  A verdict
here needs *both* a shift in the median that a bootstrap of the raw samples
cannot explain away (the CI of the p50 ratio excludes 1) *and* a rank test
that finds the two samples stochastically different (Mann-Whitney U, p below
alpha).  The CI says how big the change is; the rank test guards against a
median that moved only because the sample is lumpy.  When they disagree the
verdict is "no significant difference" and the arm's notes say why.

How the bootstrap is computed
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
from wakelab.evidence.model import Bundle
from wakelab.analysis.stats import min_n_for
from wakelab.analysis.stats import percentile as type7_percentile

DEFAULT_ALPHA = 0.05
DEFAULT_RESAMPLES = 2000
# Fixed, so that the same inputs always give the same intervals.
DEFAULT_SEED = 135
# A rank test on fewer samples per side than this is meaningless.
MIN_PER_SIDE = 3
# Recomputed figures must match the summary's to this relative tolerance.
_FIGURE_TOLERANCE = 1e-9

FASTER = "faster"
SLOWER = "slower"
NO_DIFFERENCE = "no significant difference"
NOT_TESTED = "not tested"

LATENCY = "latency"
RATE = "rate"

Seed = Union[int, Sequence[int]]

# Measurement parameters that make a different experiment: (key, value when a bundle
# predates the key, why).  Others (n, rounds, timeout ...) change only precision.
EXPERIMENT_PARAMETERS: Tuple[Tuple[str, object, str], ...] = (
    ("settle_us", None, "a blocked waiter's settle time is part of the experiment; use the same --settle-us"),
    ("planted_delay_us", 0, "a planted delay adds to every sample; compare runs with the same --planted-delay-us"),
    ("placement", "any", "where notifier and waiter run can matter more than the mechanism; use the same --placement"),
    ("mode", "closed", "open-loop and closed-loop latencies time different things; use the same --mode"),
    ("interval_us", 1000, "an open-loop schedule's period sets the load; use the same --interval-us"),
)


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
        return {
            "q": self.q,
            "baseline": _finite(self.baseline),
            "other": _finite(self.other),
            "ratio": _finite(self.ratio),
            "ci_low": _finite(self.low),
            "ci_high": _finite(self.high),
            "confidence": self.confidence,
            "resamples": self.resamples,
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
        return {
            "q": self.q,
            "baseline": _finite(self.baseline),
            "other": _finite(self.other),
            "difference": _finite(self.difference),
            "ci_low": _finite(self.low),
            "ci_high": _finite(self.high),
            "confidence": self.confidence,
            "resamples": self.resamples,
        }


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


def why_untestable(n_baseline: int, n_other: int, alpha: float, unit: str = "samples") -> Optional[str]:
    """Why a rank test at ``alpha`` cannot find a difference with these sizes, or None when it can."""
    if min(n_baseline, n_other) < MIN_PER_SIDE:
        return "too few %s for a test (%d against %d; a rank test needs at least %d on each side)" % (
            unit, n_baseline, n_other, MIN_PER_SIDE)
    smallest = smallest_p_value(n_baseline, n_other)
    if smallest >= alpha:
        return "too few %s for a test (%d against %d: the smallest possible p is %.3g, not below alpha %g)" % (
            unit, n_baseline, n_other, smallest, alpha)
    return None


def verdict(ci_low: float, ci_high: float, p_value: Optional[float], alpha: float = DEFAULT_ALPHA,
            higher_is_better: bool = False) -> str:
    """"faster", "slower", "no significant difference", or "not tested" (no p-value).

    ``ci_low``/``ci_high`` bound the ratio other/baseline; a difference needs
    the interval to exclude 1 *and* ``p_value < alpha``.  For latencies a
    ratio above 1 is slower; for rates (``higher_is_better``) it is faster.
    """
    if p_value is None:
        return NOT_TESTED
    if p_value >= alpha or ci_low <= 1.0 <= ci_high:
        return NO_DIFFERENCE
    larger = ci_low > 1.0
    if higher_is_better:
        return FASTER if larger else SLOWER
    return SLOWER if larger else FASTER


# ---------------------------------------------------------------------------
# Runs and their comparison
# ---------------------------------------------------------------------------


# One evidence bundle, as loaded by the evidence model.
Run = Bundle


@dataclasses.dataclass(frozen=True)
class Settings:
    """How runs are compared: the significance level (the CI level is 1 - alpha), resamples and seed."""

    alpha: float = DEFAULT_ALPHA
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    @property
    def confidence(self) -> float:
        return 1.0 - self.alpha

    def to_dict(self) -> Dict[str, object]:
        return {"alpha": self.alpha, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed,
                "test": "Mann-Whitney U, two-sided", "interval": "percentile bootstrap of the ratio"}


@dataclasses.dataclass(frozen=True)
class ComponentComparison:
    """Where an arm's wake moved between two traced runs: each component's p50 in both, and which moved most.

    ``shifts`` maps each component of a wake (:data:`wakelab.analysis.components.COMPONENTS`,
    in wake order) to its :class:`DifferenceCI` (ns, other minus baseline), bootstrapped from
    the per-wake components of each run's traced pass.  ``moved_most`` is the component with the
    largest difference whose interval excludes 0 (``significant``), or, when none does, the
    largest difference (``significant`` False).  ``n_baseline``/``n_other`` count traced wakes.
    """

    shifts: Mapping[str, DifferenceCI]
    moved_most: Optional[str]
    significant: bool
    n_baseline: int
    n_other: int

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
        }


@dataclasses.dataclass(frozen=True)
class ArmComparison:
    """One arm in two runs.

    Latency arms carry ``ratios`` keyed ``p50`` and (when both runs have
    n >= 100) ``p99``, of wake times in ns: above 1 is slower.  Rate arms
    carry ``median``, the ratio of the median round's ops/s: above 1 is
    faster (``higher_is_better``).  ``test`` is None when the samples are too
    few for a rank test (``notes`` says why).
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

    @property
    def higher_is_better(self) -> bool:
        return self.kind == RATE

    def slowdown(self, metric: str) -> Optional[float]:
        """How many times slower ``other`` is at ``metric`` (p50/p99; rates use their median), or None."""
        key = "median" if self.kind == RATE else metric
        ratio = self.ratios.get(key)
        if ratio is None:
            return None
        if self.kind == RATE:
            return 1.0 / ratio.ratio if ratio.ratio else math.inf
        return ratio.ratio

    def significantly_slower(self, metric: str) -> bool:
        """Slower by the verdict (p50, rates), or by a p99 CI entirely on the slow side."""
        if self.kind == RATE or metric == "p50":
            return self.verdict == SLOWER
        ratio = self.ratios.get(metric)
        return ratio is not None and ratio.low > 1.0

    def to_dict(self) -> Dict[str, object]:
        return {
            "arm": self.name,
            "kind": self.kind,
            "waiter": self.waiter,
            "scope": self.scope,
            "n_baseline": self.n_baseline,
            "n_other": self.n_other,
            "lost_baseline": self.lost_baseline,
            "lost_other": self.lost_other,
            "ratios": {key: r.to_dict() for key, r in self.ratios.items()},
            "mann_whitney": self.test.to_dict() if self.test else None,
            "verdict": self.verdict,
            "notes": list(self.notes),
            **({"components": self.components.to_dict()} if self.components is not None else {}),
        }


@dataclasses.dataclass(frozen=True)
class RunComparison:
    """``other`` against ``baseline``: every arm they share, and what they do not."""

    baseline: Run
    other: Run
    warnings: Tuple[str, ...]
    arms: Tuple[ArmComparison, ...]
    only_in_baseline: Tuple[str, ...]
    only_in_other: Tuple[str, ...]
    not_compared: Tuple[Tuple[str, str], ...]

    def to_dict(self) -> Dict[str, object]:
        return {
            "baseline": self.baseline.label,
            "other": self.other.label,
            "warnings": list(self.warnings),
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
    text = "%s %s" % (interp.get("implementation"), interp.get("version"))
    if interp.get("free_threaded_build"):
        text += " free-threaded"
    return text


def _differences(a: Mapping[str, Any], b: Mapping[str, Any], keys: Sequence[str]) -> List[str]:
    return ["%s %s vs %s" % (k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def check_comparable(baseline: Run, other: Run) -> List[str]:
    """Raise :class:`EvidenceError` unless the runs measured the same experiments; return warnings.

    Refused: no arm in common; a shared arm whose kind, waiter state, scope
    or unit differs; different :data:`EXPERIMENT_PARAMETERS` (settle_us,
    planted_delay_us, placement, mode, and interval_us in open-loop mode);
    different ``conditions`` (when both runs record them).  Warned: different
    interpreters, machines, pinned CPUs or wakelab versions, conditions
    recorded by one run only, an incomplete run.
    """
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
    a_params, b_params = a_sum.get("parameters") or {}, b_sum.get("parameters") or {}
    for key, default, why in EXPERIMENT_PARAMETERS:
        if key == "interval_us" and a_params.get("mode", "closed") != "open":
            continue  # the schedule period only matters in open-loop mode
        a_value, b_value = a_params.get(key, default), b_params.get(key, default)
        if a_value != b_value:
            raise EvidenceError("%s: %s differs (%s vs %s): %s" % (where, key, a_value, b_value, why))
    warnings: List[str] = []
    cpu_diffs = _differences(a_params, b_params, ("notifier_cpu", "waiter_cpu"))
    if cpu_diffs:
        warnings.append("pinned to other CPUs (%s): differences include the CPUs" % "; ".join(cpu_diffs))
    has_a, has_b = "conditions" in a_sum, "conditions" in b_sum
    if has_a and has_b:
        a_cond, b_cond = a_sum["conditions"], b_sum["conditions"]
        if a_cond != b_cond:
            if isinstance(a_cond, Mapping) and isinstance(b_cond, Mapping):
                keys = sorted(set(a_cond) | set(b_cond), key=str)
                detail = "; ".join("%s %s vs %s" % (k, _compact(a_cond.get(k)), _compact(b_cond.get(k)))
                                   for k in keys if a_cond.get(k) != b_cond.get(k))
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
        if not run.summary.get("complete"):
            state = "interrupted" if run.summary.get("interrupted") else "see its caveats"
            warnings.append("%s is not a complete run (%s)" % (run.label, state))
    return warnings


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

    Latency arms: the wake times (ns), one float64 array.  Rate arms: each round's ops/s.
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
            raise _mismatch(run, name, "n", samples.size, latency.get("n"))
        if samples.size:
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

    from wakelab.analysis.components import COMPONENTS, TracedSeriesError, traced_series
    from wakelab.evidence.load import load_samples

    name = str(entry["name"])
    doc = load_samples(run.folder, dict(entry))
    try:
        series = traced_series(doc)
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
    return {key: np.asarray(series[key], dtype=np.float64) for key in ("latency",) + COMPONENTS}


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
    return ComponentComparison(shifts, most, bool(moved), n_a, n_b)


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
    if kind == LATENCY:
        qs = [50.0]
        if min(n_a, n_b) >= min_n_for(99.0):
            qs.append(99.0)
        keys = ["p50", "p99"][: len(qs)]
        unit_word = "samples"
        lost_a = int((a_entry.get("latency") or {}).get("lost") or 0)
        lost_b = int((b_entry.get("latency") or {}).get("lost") or 0)
    else:
        qs, keys, unit_word = [50.0], ["median"], "rounds"
        lost_a = lost_b = 0
    untestable = why_untestable(n_a, n_b, settings.alpha, unit_word)
    try:
        if untestable is None:
            cis = bootstrap_percentile_ratios(a_values, b_values, qs, settings.confidence, settings.resamples,
                                              _arm_seed(settings.seed, name))
        else:
            cis = tuple(_point_ratio(a_values, b_values, q, settings) for q in qs)
    except ValueError as exc:
        raise EvidenceError("cannot compare arm %s of %s with %s: %s" % (name, other.source, baseline.source, exc)) from None
    ratios = dict(zip(keys, cis))
    test: Optional[RankTest] = None
    if untestable is not None:
        notes.append(untestable)
        word = NOT_TESTED
    else:
        test = mann_whitney(a_values, b_values)
        main = ratios[keys[0]]
        word = verdict(main.low, main.high, test.p_value, settings.alpha, higher_is_better=(kind == RATE))
        if word == NO_DIFFERENCE and (test.p_value < settings.alpha) != main.excludes_one():
            if test.p_value < settings.alpha:
                notes.append("the rank test finds a difference (p = %s) but the %s ratio's CI includes 1"
                             % (format_p(test.p_value), keys[0]))
            else:
                notes.append("the %s ratio's CI excludes 1 but the rank test does not find a difference (p = %s)"
                             % (keys[0], format_p(test.p_value)))
        tail = ratios.get("p99")
        if tail is not None and word == NO_DIFFERENCE and tail.excludes_one():
            notes.append("the p99 moved (%.2f×, CI %.2f–%.2f) though the median did not"
                         % (tail.ratio, tail.low, tail.high))
    spread_note = _spread_note(a_entry, b_entry, ratios[keys[0]].ratio, baseline, other)
    if spread_note and word in (FASTER, SLOWER):
        notes.append(spread_note)
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
    return ArmComparison(
        name=name, kind=kind, waiter=str(a_entry.get("waiter")), scope=str(a_entry.get("scope")),
        n_baseline=n_a, n_other=n_b, lost_baseline=lost_a, lost_other=lost_b,
        ratios=ratios, test=test, verdict=word, notes=tuple(notes), components=components,
    )


def _spread_note(a_entry: Mapping[str, Any], b_entry: Mapping[str, Any], ratio: float,
                 baseline: Run, other: Run) -> Optional[str]:
    """A note when the change is no larger than the spread between one run's worker processes.

    Each worker is a fresh process with its own placement and memory layout;
    how far apart their medians are is a direct look at run-to-run variation,
    which neither the bootstrap nor the rank test (both within one run) sees.
    """
    widest: Optional[Tuple[float, str]] = None
    for run, entry in ((baseline, a_entry), (other, b_entry)):
        spread = entry.get("spread")
        if not isinstance(spread, Mapping):
            continue
        value = spread.get("max_over_min")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 1.0:
            if widest is None or value > widest[0]:
                widest = (float(value), run.label)
    if widest is None or not ratio or not math.isfinite(ratio):
        return None
    change = max(ratio, 1.0 / ratio)
    if change > widest[0]:
        return None
    return ("the change (%.2f×) is within the spread between %s's worker processes (%.2f×): it may be run-to-run "
            "variation" % (ratio, widest[1], widest[0]))


def _point_ratio(baseline: Sequence[float], other: Sequence[float], q: float, settings: Settings) -> RatioCI:
    """The ratio alone (no interval) when the samples are too few to test."""
    base_q = type7_percentile(sorted(baseline), q)
    other_q = type7_percentile(sorted(other), q)
    if base_q == 0:
        raise ValueError("the baseline's p%g is 0: a ratio to it is undefined" % q)
    nan = float("nan")
    return RatioCI(q=q, baseline=base_q, other=other_q, ratio=other_q / base_q, low=nan, high=nan,
                   confidence=settings.confidence, resamples=0)


def compare_runs(baseline: Run, other: Run, settings: Settings = Settings()) -> RunComparison:
    """Every arm of ``other`` against the same arm of ``baseline`` (raises EvidenceError when not comparable)."""
    warnings = check_comparable(baseline, other)
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
    )


def find_regressions(comparisons: Sequence[RunComparison], limit_pct: float,
                     metric: str = "p50") -> Tuple[List[Regression], List[str]]:
    """Arms significantly slower than the baseline by more than ``limit_pct`` percent at ``metric``.

    Latency arms gate on ``metric`` (p50: the verdict must be "slower"; p99:
    the p99 ratio's CI must lie above 1); rate arms gate on their median
    ops/s.  Also returns, as sentences, the arms that could not be checked
    (for example no p99 with fewer than 100 wakes).
    """
    if metric not in ("p50", "p99"):
        raise ValueError("metric must be p50 or p99, got %r" % (metric,))
    limit = 1.0 + limit_pct / 100.0
    found: List[Regression] = []
    unchecked: List[str] = []
    for comparison in comparisons:
        for arm in comparison.arms:
            slowdown = arm.slowdown(metric)
            if slowdown is None:
                unchecked.append("%s in %s: no %s (needs n >= %d in both runs)"
                                 % (arm.name, comparison.other.label, metric, min_n_for(99.0)))
                continue
            if arm.verdict == NOT_TESTED:
                unchecked.append("%s in %s: not tested (too few %s)"
                                 % (arm.name, comparison.other.label, "rounds" if arm.kind == RATE else "samples"))
                continue
            if arm.significantly_slower(metric) and slowdown > limit:
                found.append(Regression(comparison.other.label, arm.name, "median ops/s" if arm.kind == RATE else metric,
                                        slowdown))
    return found, unchecked


def format_p(p_value: float) -> str:
    """A p-value for people: ``<0.001`` below a thousandth, else three decimals."""
    return "<0.001" if p_value < 0.001 else "%.3f" % p_value
