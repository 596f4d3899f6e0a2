"""Comparing runs: is run B faster or slower than run A, arm by arm, and how sure is that?

Layers, each importing only those above it: ``bootstrap`` (pure statistics on sample arrays),
``records`` (what a comparison yields, frozen, with its JSON), ``comparable`` (whether two runs
measured the same experiment, ``--across``), ``series`` (an arm's samples, checked against its record,
and their bootstrap units), ``runs`` (two runs arm by arm, traced components, the CI gate) and ``grid``
(every cell of a grid against a baseline cell).  Readers import the names below from this package;
numpy and scipy are imported lazily, so importing it costs the measuring side nothing."""

from __future__ import annotations

from wakelab.analysis.compare.bootstrap import (
    CANNOT_TELL, DEFAULT_ALPHA, DEFAULT_MIN_EFFECT_PCT, DEFAULT_RESAMPLES, DEFAULT_SEED, FASTER, NO_DIFFERENCE, NOT_TESTED,
    SLOWER, RatioCI, bootstrap_percentile_difference, finite, format_p, format_pct, format_ratio_plain, mann_whitney,
    minimum_detectable_effect, verdict, why_untestable)
from wakelab.analysis.compare.comparable import ACROSS_NAMES, across_name_of_condition, comparability, parse_across
from wakelab.analysis.compare.grid import compare_grid, grid_across
from wakelab.analysis.compare.records import (
    DEFAULT_METRICS, DEFAULT_SETTINGS, LATENCY, METRIC_KEYS, RATE, ArmComparison, Judgement, Regression, Run, RunComparison,
    Settings, label_of)
from wakelab.analysis.compare.runs import compare_runs, find_regressions, judge_arm, load_run, parse_metrics, rigor_hint

__all__ = [
    "CANNOT_TELL", "DEFAULT_ALPHA", "DEFAULT_MIN_EFFECT_PCT", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "FASTER", "NO_DIFFERENCE",
    "NOT_TESTED", "SLOWER", "RatioCI", "bootstrap_percentile_difference", "finite", "format_p", "format_pct",
    "format_ratio_plain", "mann_whitney", "minimum_detectable_effect", "verdict", "why_untestable",
    "ACROSS_NAMES", "across_name_of_condition", "comparability", "parse_across",
    "compare_grid", "grid_across",
    "DEFAULT_METRICS", "DEFAULT_SETTINGS", "LATENCY", "METRIC_KEYS", "RATE", "ArmComparison", "Judgement", "Regression", "Run",
    "RunComparison", "Settings", "label_of",
    "compare_runs", "find_regressions", "judge_arm", "load_run", "parse_metrics", "rigor_hint",
]
