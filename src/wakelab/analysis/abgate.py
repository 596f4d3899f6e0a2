"""The A/B gate: compare's comparison of the two sides of ``wakelab ab`` turned into the gate's answer (the rows every
output lays out, and the result), so that no renderer decides anything.  The rule is compare's ``--fail-on-regression``
(:func:`~wakelab.analysis.compare.find_regressions`); an arm that was not judged leaves the gate unable to answer: an
error, not a pass."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

from wakelab.analysis.compare import (
    DEFAULT_SETTINGS, LATENCY, METRIC_KEYS, NOT_TESTED, RatioCI, Regression, RunComparison, Settings, compare_grid,
    find_regressions, finite, label_of)
from wakelab.evidence.model import Grid

PASS = "pass"
REGRESSION = "regression"
ERROR = "error"


@dataclasses.dataclass(frozen=True)
class GateRow:
    """One judged percentile of one arm: both sides' figures and the ratio head/base with its interval (``ci``), the
    verdict and minimum detectable effect, whether the gate looks at it and whether it fails."""

    arm: str
    kind: str
    key: str  # p50, p99, p99_9 or median (a rate arm's ops/s)
    ci: RatioCI
    verdict: str
    mde_pct: Optional[float]
    gated: bool
    failed: bool

    @property
    def label(self) -> str:
        return label_of(self.key)

    def to_dict(self) -> Dict[str, object]:
        ci = self.ci
        return {
            "arm": self.arm, "kind": self.kind, "at": self.label, "base": finite(ci.baseline), "head": finite(ci.other),
            "ratio": finite(ci.ratio), "ci_low": finite(ci.low), "ci_high": finite(ci.high), "confidence": ci.confidence,
            "verdict": self.verdict, "min_detectable_effect_pct": finite(self.mde_pct), "gated": self.gated,
            "failed": self.failed,
        }


@dataclasses.dataclass(frozen=True)
class Gate:
    """The gate's answer for head against base: ``result`` (pass, regression or error), the rows, the
    regressions found, what could not be checked, and why the gate could not answer (``errors``)."""

    base: str
    head: str
    limit_pct: float
    metrics: Tuple[str, ...]
    min_effect_pct: float
    rows: Tuple[GateRow, ...]
    regressions: Tuple[Regression, ...]
    unchecked: Tuple[str, ...]
    errors: Tuple[str, ...]

    @property
    def result(self) -> str:
        if self.regressions:
            return REGRESSION
        return ERROR if self.errors else PASS

    def to_dict(self) -> Dict[str, object]:
        """The result, then every field in order, a tuple of records as a list of their mappings."""
        out: Dict[str, object] = {"result": self.result}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, tuple):
                value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
            out[field.name] = value
        return out


# What compare suggests for narrowing an interval, as an A/B says it (the A/B's own --rigorous).
_AB_RIGOR_HINT = "to tell smaller changes, run the A/B with --rigorous (more wakes and workers per turn)"


def compare_sides(grid: Grid, base: str, settings: Settings = DEFAULT_SETTINGS,
                  planted_delay: bool = False) -> Tuple[Optional[RunComparison], List[Tuple[str, str]]]:
    """Head against base (the other cell against cell ``base``; None when the head has no evidence), and the cells
    not compared with why.  Interpreters and a self-test's planted delay differ on purpose; notes are worded for an A/B."""
    across = ["interpreter"] + (["planted-delay"] if planted_delay else [])
    _base_run, comparisons, skipped = compare_grid(grid, base, settings, across)
    return (worded_for_ab(comparisons[0]) if comparisons else None), skipped


def worded_for_ab(comparison: RunComparison) -> RunComparison:
    """compare's notes as an A/B reads them: what narrows an interval is ``wakelab ab --rigorous``."""
    def reword(note: str) -> str:
        return _AB_RIGOR_HINT if "wakelab run --rigorous" in note else note

    arms = tuple(dataclasses.replace(arm, notes=tuple(reword(n) for n in arm.notes)) for arm in comparison.arms)
    return dataclasses.replace(comparison, arms=arms)


def judge_gate(comparison: RunComparison, limit_pct: float, metrics: Sequence[str], min_effect_pct: float,
               expected_arms: Sequence[str] = ()) -> Gate:
    """The gate on ``comparison`` (head against base); an arm of ``expected_arms`` missing from it, or not tested, is an
    error (the gate cannot say it passed)."""
    regressions, unchecked = find_regressions([comparison], limit_pct, metrics)
    failing = {(r.arm, r.metric) for r in regressions}
    gated_keys = {METRIC_KEYS[m] for m in metrics}
    rows: List[GateRow] = []
    errors: List[str] = []
    for arm in comparison.arms:
        if arm.verdict == NOT_TESTED:
            errors.append("%s was not tested (too few %s to compare)" % (arm.name, "samples" if arm.kind == LATENCY else "rounds"))
        for key, ci in arm.ratios.items():
            judged = arm.judgements.get(key)
            metric = "median ops/s" if arm.kind != LATENCY else label_of(key)
            rows.append(GateRow(arm=arm.name, kind=arm.kind, key=key, ci=ci, verdict=judged.verdict if judged else arm.verdict,
                                mde_pct=judged.mde_pct if judged else None, gated=arm.kind != LATENCY or key in gated_keys,
                                failed=(arm.name, metric) in failing))
    for name, reason in comparison.not_compared:
        errors.append("%s was not compared: %s" % (name, reason))
    judged_names = {arm.name for arm in comparison.arms} | {name for name, _ in comparison.not_compared}
    for name in expected_arms:
        if name not in judged_names:
            errors.append("%s has no figures on both sides" % name)
    return Gate(
        base=comparison.baseline.label, head=comparison.other.label, limit_pct=limit_pct, metrics=tuple(metrics),
        min_effect_pct=min_effect_pct, rows=tuple(rows), regressions=tuple(regressions), unchecked=tuple(unchecked),
        errors=tuple(errors))
