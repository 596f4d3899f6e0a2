"""The records a comparison yields, each with the ``to_dict`` that ``wakelab compare --json`` (schema
``wakelab.analysis.compare``, version 2) writes; renderers lay them out and never recompute a figure."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from wakelab.analysis.compare.bootstrap import (
    DEFAULT_ALPHA, DEFAULT_MIN_EFFECT_PCT, DEFAULT_RESAMPLES, DEFAULT_SEED, SLOWER, DifferenceCI, RankTest, RatioCI, finite)
from wakelab.evidence.model import LATENCY as LATENCY, RATE, Bundle  # the kinds of arm, re-exported

# Latency percentiles that are judged: key, percentile.  Each is judged when both runs
# report it (n >= 1 / (1 - q), the rule of summary.json).
LATENCY_PERCENTILES: Tuple[Tuple[str, float], ...] = (("p50", 50.0), ("p99", 99.0), ("p99_9", 99.9))
# What --metric names (p99.9 as people write it) -> ratio key.
METRIC_KEYS = {"p50": "p50", "p99": "p99", "p99.9": "p99_9", "p99_9": "p99_9"}
DEFAULT_METRICS = ("p50", "p99")

# One evidence bundle, as loaded by the evidence model.
Run = Bundle


def label_of(key: str) -> str:
    """A ratio key as people write it: ``p99_9`` -> ``p99.9``."""
    return "p99.9" if key == "p99_9" else key


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


# The settings a comparison uses unless told (a frozen record: one instance serves every default argument).
DEFAULT_SETTINGS = Settings()


@dataclasses.dataclass(frozen=True)
class Judgement:
    """The verdict on one percentile of one arm (``key``: p50, p99, p99_9, or median for a rate): ``ci`` the ratio
    with its two-level interval; ``spread_pct`` the half-width (log terms, percent) of the wider of the runs' own
    intervals ("repetitions vary ±spread_pct"); ``mde_pct`` the minimum detectable effect; ``reason`` the sentence
    of a "cannot tell"."""

    key: str
    ci: RatioCI
    verdict: str
    spread_pct: float
    mde_pct: float
    reason: Optional[str] = None

    def to_dict(self) -> Dict[str, object]:
        return {"verdict": self.verdict, "spread_pct": finite(self.spread_pct),
                "min_detectable_effect_pct": finite(self.mde_pct), "reason": self.reason}


@dataclasses.dataclass(frozen=True)
class ComponentComparison:
    """Where an arm's wake moved between two traced runs: each component's p50 difference (``shifts``, other minus
    baseline, ns), ``moved_most`` (the largest whose interval excludes 0 -- ``significant`` -- else the largest), the
    traced wakes of each run, and each re-block cause's mean time per wake (``reblocks``, largest change first)."""

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
        return {"n_baseline": self.n_baseline, "n_other": self.n_other, "moved_most": self.moved_most,
                "significant": self.significant,
                "p50": {name: dict(shift.to_dict(), ratio=finite(self.ratio(name))) for name, shift in self.shifts.items()},
                **({"reblocks": [shift.to_dict() for shift in self.reblocks]} if self.reblocks else {})}


@dataclasses.dataclass(frozen=True)
class ArmComparison:
    """One arm in two runs: ``ratios`` keyed ``p50``, ``p99``, ``p99_9`` (wake times: above 1 is slower) or ``median``
    (a rate arm's ops/s: above 1 is faster), each judged in ``judgements`` (``verdict`` is the p50's or median's);
    ``test`` the secondary rank test (None: too few samples, ``notes`` says why); the units each side resampled."""

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
    def tail_regression(self) -> Optional[str]:
        """The first tail percentile judged "slower" while the p50 is not (None when there is none)."""
        if self.kind == RATE or self.verdict == SLOWER:
            return None
        for key in ("p99", "p99_9"):
            judged = self.judgements.get(key)
            if judged is not None and judged.verdict == SLOWER:
                return key
        return None

    def to_dict(self) -> Dict[str, object]:
        ratios = {key: dict(ratio.to_dict(), **(self.judgements[key].to_dict() if key in self.judgements else {}))
                  for key, ratio in self.ratios.items()}
        counts = ("kind", "waiter", "scope", "n_baseline", "n_other", "units_baseline", "units_other", "lost_baseline",
                  "lost_other")
        return {"arm": self.name, **{key: getattr(self, key) for key in counts}, "ratios": ratios,
                "mann_whitney": self.test.to_dict() if self.test else None, "verdict": self.verdict,
                "tail_regression": self.tail_regression, "notes": list(self.notes),
                **({"raw_kept": {side: dict(kept) for side, kept in self.raw_kept.items()}} if self.raw_kept else {}),
                **({"components": self.components.to_dict()} if self.components is not None else {})}


@dataclasses.dataclass(frozen=True)
class RunComparison:
    """``other`` against ``baseline``: every arm they share, and what they do not.  ``across`` lists the differences
    compared on purpose (``--across``, or a grid's dimensions)."""

    baseline: Run
    other: Run
    warnings: Tuple[str, ...]
    arms: Tuple[ArmComparison, ...]
    only_in_baseline: Tuple[str, ...]
    only_in_other: Tuple[str, ...]
    not_compared: Tuple[Tuple[str, str], ...]
    across: Tuple[str, ...] = ()

    @property
    def confidence(self) -> float:
        """The level of the comparison's intervals, for example 0.95 (0.95 when no arm has one)."""
        for arm in self.arms:
            for ratio in arm.ratios.values():
                return float(ratio.confidence)
        return 0.95

    def to_dict(self) -> Dict[str, object]:
        return {"baseline": self.baseline.label, "other": self.other.label, "warnings": list(self.warnings),
                "across": list(self.across), "arms": [a.to_dict() for a in self.arms],
                "only_in_baseline": list(self.only_in_baseline), "only_in_other": list(self.only_in_other),
                "not_compared": [{"arm": name, "reason": reason} for name, reason in self.not_compared]}


@dataclasses.dataclass(frozen=True)
class Regression:
    """An arm of run ``label`` significantly slower than the baseline by more than the limit."""

    label: str
    arm: str
    metric: str
    slowdown: float

    def to_dict(self) -> Dict[str, object]:
        return {"run": self.label, "arm": self.arm, "metric": self.metric, "slowdown": finite(self.slowdown)}
