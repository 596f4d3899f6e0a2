"""Comparing two runs arm by arm: the ratio of each judged percentile (p50; p99 and p99.9 where both runs have the wakes
summary.json asks for; a rate arm's median round), its interval from independent two-level bootstraps of the two runs
(:mod:`wakelab.analysis.hierarchical`), its verdict against ``--min-effect``.

Tails are judged beside the median, so :func:`find_regressions` fails on a tail regression even when the median
improved.  The Mann-Whitney U test of the pooled wakes sees only wake-to-wake noise, so it never decides."""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.compare.bootstrap import (
    CANNOT_TELL, MIN_PER_SIDE, NOT_TESTED, SLOWER, DifferenceCI, RankTest, RatioCI, Seed, _ratio_interval, _resampled_percentiles,
    bootstrap_percentile_difference, format_pct, format_ratio_plain, mann_whitney, minimum_detectable_effect, verdict,
    why_untestable)
from wakelab.analysis.compare.comparable import comparability, parse_names
from wakelab.analysis.compare.records import (
    DEFAULT_METRICS, LATENCY, LATENCY_PERCENTILES, METRIC_KEYS, RATE, ArmComparison, ComponentComparison, Judgement, Regression,
    Run, RunComparison, DEFAULT_SETTINGS, Settings, label_of)
from wakelab.analysis.compare.series import TracedPass, arm_units, load_series, load_traced_components, status_reason, traced
from wakelab.analysis.stats import min_n_for
from wakelab.errors import EvidenceError
from wakelab.evidence.model import Bundle
from wakelab.percentile import percentile as type7_percentile


def load_run(path: str, label: str) -> Run:
    return Bundle.load(path, label, grid_hint="compare its cells")


def compare_components(baseline: TracedPass, other: TracedPass, name: str, settings: Settings) -> ComponentComparison:
    """Each component's p50 in two traced passes (``baseline``/``other``: :func:`load_traced_components`),
    with a bootstrap interval of the difference, and the component that moved most."""
    from wakelab.analysis.components import COMPONENTS

    n_a, n_b = baseline.wakes, other.wakes
    shifts: Dict[str, DifferenceCI] = {}
    for component in COMPONENTS:
        a, b = baseline.components[component], other.components[component]
        if min(n_a, n_b) >= MIN_PER_SIDE:
            shifts[component] = bootstrap_percentile_difference(
                a, b, 50.0, settings.confidence, settings.resamples, _arm_seed(settings.seed, "%s/%s" % (name, component)))
        else:
            base_q, other_q = (type7_percentile(sorted(map(float, x)), 50.0) for x in (a, b))
            shifts[component] = DifferenceCI(q=50.0, baseline=base_q, other=other_q, difference=other_q - base_q, low=math.nan,
                                             high=math.nan, confidence=settings.confidence, resamples=0)
    moved = [c for c in COMPONENTS if shifts[c].excludes_zero()]
    pool = moved or [c for c in COMPONENTS if shifts[c].difference != 0]
    most = max(pool, key=lambda c: (abs(shifts[c].difference), -COMPONENTS.index(c))) if pool else None
    reblocks: Tuple[Any, ...] = ()
    if baseline.reblocks is not None and other.reblocks is not None:
        from wakelab.analysis.reblock_shifts import compare_reblocks

        reblocks = tuple(compare_reblocks(baseline.reblocks, other.reblocks, n_a, n_b, settings.confidence,
                                          settings.resamples, settings.seed, name))
    return ComponentComparison(shifts, most, bool(moved), n_a, n_b, reblocks)


def _arm_seed(seed: int, name: str) -> List[int]:
    # One stream per arm: adding or dropping an arm never changes another arm's interval.
    return [seed, zlib.crc32(name.encode("utf-8"))]


def _percentile_plan(kind: str, n_a: int, n_b: int) -> List[Tuple[str, float]]:
    if kind != LATENCY:
        return [("median", 50.0)]
    return [(key, q) for key, q in LATENCY_PERCENTILES if min(n_a, n_b) >= min_n_for(q)]


def judge_arm(baseline_units: Any, other_units: Any, plan: Sequence[Tuple[str, float]], kind: str,
              settings: Settings, seed: Seed) -> Tuple[Dict[str, RatioCI], Dict[str, Judgement]]:
    """Ratios, intervals and verdicts of ``plan``'s percentiles from independent two-level bootstraps.
    ``baseline_units``/``other_units`` are :class:`~wakelab.analysis.hierarchical.Units`. Raises ValueError when a
    baseline percentile is 0."""
    import numpy as np

    from wakelab.analysis.hierarchical import level_interval, resample_percentiles, widen_for_few_units

    qs = [q for _key, q in plan]

    def boot(units: Any, seed_seq: Any) -> Tuple[List[float], Any]:
        """The pooled percentiles ``qs`` of one run, and their resampled draws (widened for few units)."""
        pooled = np.sort(np.concatenate(units.values))
        figures = [float(np.percentile(pooled, q)) for q in qs]
        rng = np.random.default_rng(seed_seq)
        # One unit: the first stage has nothing to choose, and the one-level draw of order
        # statistics is exact in distribution and costs O(resamples) whatever n.
        draws = (_resampled_percentiles(pooled, qs, settings.resamples, rng) if units.count == 1
                 else resample_percentiles(units, qs, settings.resamples, rng))
        for i, figure in enumerate(figures):
            draws[i] = widen_for_few_units(figure, draws[i], units.count)
        return figures, draws

    base_seed, other_seed = np.random.SeedSequence(seed).spawn(2)
    (base_qs, base_boot), (other_qs, other_boot) = boot(baseline_units, base_seed), boot(other_units, other_seed)
    ratios: Dict[str, RatioCI] = {}
    judgements: Dict[str, Judgement] = {}
    for i, (key, q) in enumerate(plan):
        base_q, other_q = base_qs[i], other_qs[i]
        if base_q == 0:
            raise ValueError("the baseline's %s is 0: a ratio to it is undefined" % label_of(key))
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


def rigor_hint(baseline: Run, other: Run, judgements: Mapping[str, Judgement]) -> Optional[str]:
    """What would narrow a "cannot tell", when a side was not made compare-grade (None otherwise)."""
    if not any(j.verdict == CANNOT_TELL for j in judgements.values()):
        return None
    plain = [run.label for run in (baseline, other) if not run.execution.rigorous]
    if not plain:
        return None  # both compare-grade already: more repetitions (--repeat) are what is left
    return "to tell smaller changes, make %s with wakelab run --rigorous (more wakes and workers per arm)" % (
        "both runs" if len(plain) == 2 else plain[0])


def compare_arm(baseline: Run, other: Run, name: str, settings: Settings) -> ArmComparison:
    """Compare arm ``name`` of two runs (both ``ok`` with samples); see :class:`ArmComparison`."""
    a_arm, b_arm = baseline.arms_by_name()[name], other.arms_by_name()[name]
    a_values, a_unit = load_series(baseline, a_arm)
    b_values, b_unit = load_series(other, b_arm)
    if a_unit != b_unit:
        raise EvidenceError("cannot compare %s with %s: arm %s is in %s in one and %s in the other" % (
            other.source, baseline.source, name, a_unit, b_unit))
    kind = a_arm.kind
    n_a, n_b = len(a_values), len(b_values)
    notes: List[str] = []
    plan = _percentile_plan(kind, n_a, n_b)
    unit_word = "samples" if kind == LATENCY else "rounds"
    lost_a, lost_b = (arm.latency.lost if kind == LATENCY and arm.latency is not None else 0 for arm in (a_arm, b_arm))
    a_units, b_units = arm_units(a_arm, a_values), arm_units(b_arm, b_values)
    raw_kept: Dict[str, Dict[str, int]] = {}
    for side, run, arm_record, values, units in (("baseline", baseline, a_arm, a_values, a_units),
                                                 ("other", other, b_arm, b_values, b_units)):
        figures = arm_record.latency
        total = figures.n if kind == LATENCY and figures is not None else None
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
            notes += ["%s: %s" % (run.label, units.note) for run, units in ((baseline, a_units), (other, b_units)) if units.note]
        notes += ["%s %s" % (label_of(key), judged.reason) for key, judged in judgements.items() if judged.reason]
        notes += [hint for hint in (rigor_hint(baseline, other, judgements),) if hint]
    arm = ArmComparison(name=name, kind=kind, waiter=a_arm.waiter, scope=a_arm.scope, n_baseline=n_a, n_other=n_b,
                        lost_baseline=lost_a, lost_other=lost_b, ratios=ratios, test=test, verdict=word, judgements=judgements,
                        units_baseline=a_units.count, units_other=b_units.count, raw_kept=raw_kept)
    tail = arm.tail_regression
    if tail is not None:
        ci = ratios[tail]
        notes.append("tail regression: %s is slower, %s× (CI %s–%s), while the p50 is %s (%s×)"
                     % (label_of(tail), format_ratio_plain(ci.ratio), format_ratio_plain(ci.low), format_ratio_plain(ci.high), word,
                        format_ratio_plain(ratios[main_key].ratio)))
    if lost_a or lost_b:
        notes.append("lost wakes are not in the samples: %d in %s, %d in %s"
                     % (lost_a, baseline.label, lost_b, other.label))
    components: Optional[ComponentComparison] = None
    if kind == LATENCY and traced(a_arm) and traced(b_arm):
        components = compare_components(load_traced_components(baseline, a_arm), load_traced_components(other, b_arm),
                                        name, settings)
    elif kind == LATENCY and traced(a_arm) != traced(b_arm):
        notes.append("only %s was traced: where the time goes is not compared"
                     % (baseline.label if traced(a_arm) else other.label))
    return dataclasses.replace(arm, notes=tuple(notes), components=components)


def _point_ratio(baseline: Sequence[float], other: Sequence[float], q: float, settings: Settings) -> RatioCI:
    """The ratio alone (no interval) when the samples are too few to test."""
    base_q, other_q = (type7_percentile(sorted(x), q) for x in (baseline, other))
    if base_q == 0:
        raise ValueError("the baseline's p%g is 0: a ratio to it is undefined" % q)
    return RatioCI(q=q, baseline=base_q, other=other_q, ratio=other_q / base_q, low=math.nan, high=math.nan,
                   confidence=settings.confidence, resamples=0)


def compare_runs(baseline: Run, other: Run, settings: Settings = DEFAULT_SETTINGS,
                 across: Sequence[str] = ()) -> RunComparison:
    """Every arm of ``other`` against the same arm of ``baseline`` (raises EvidenceError when not comparable).
    ``across`` names the differences compared on purpose (see :func:`~wakelab.analysis.compare.comparable.comparability`)."""
    warnings, on_purpose = comparability(baseline, other, across)
    a_arms, b_arms = baseline.arms_by_name(), other.arms_by_name()
    arms: List[ArmComparison] = []
    not_compared: List[Tuple[str, str]] = []
    for name in (name for name in a_arms if name in b_arms):
        reasons = [r for r in (status_reason(baseline, a_arms[name]), status_reason(other, b_arms[name])) if r]
        if reasons:
            not_compared.append((name, "; ".join(reasons)))
            continue
        arms.append(compare_arm(baseline, other, name, settings))
    return RunComparison(baseline=baseline, other=other, warnings=tuple(warnings), arms=tuple(arms),
                         only_in_baseline=tuple(n for n in a_arms if n not in b_arms),
                         only_in_other=tuple(n for n in b_arms if n not in a_arms), not_compared=tuple(not_compared),
                         across=tuple(on_purpose))


def parse_metrics(text: str) -> Tuple[str, ...]:
    """``p50,p99`` -> the names --fail-on-regression gates on; ValueError for an unknown one."""
    return parse_names(text, METRIC_KEYS, "expected p50, p99 or p99.9, or a list of them such as p50,p99",
                       "unknown percentile %r (known: p50, p99, p99.9)")


def find_regressions(comparisons: Sequence[RunComparison], limit_pct: float,
                     metrics: Sequence[str] = DEFAULT_METRICS) -> Tuple[List[Regression], List[str]]:
    """Arms slower than the baseline by more than ``limit_pct`` percent at any of ``metrics`` (a latency
    arm's percentiles, a rate arm's median ops/s): a verdict "slower" with a ratio above 1 + ``limit_pct`` / 100.
    Also returns, as sentences, what could not be checked (a percentile the runs are too small for, an arm not tested)."""
    keys = list(dict.fromkeys(METRIC_KEYS[metric] for metric in metrics))
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
                ci, judged = arm.ratios.get(key), arm.judgements.get(key)
                if ci is None:
                    q = dict(LATENCY_PERCENTILES)[key]
                    unchecked.append("%s in %s: no %s (needs n >= %d in both runs)"
                                     % (arm.name, comparison.other.label, label_of(key), min_n_for(q)))
                    continue
                # How many times slower: a rate's ops/s ratio inverted.
                slowdown = (1.0 / ci.ratio if ci.ratio else math.inf) if arm.kind == RATE else ci.ratio
                if judged is not None and judged.verdict == SLOWER and slowdown > limit:
                    found.append(Regression(comparison.other.label, arm.name,
                                            "median ops/s" if arm.kind == RATE else label_of(key), slowdown))
    return found, unchecked
