"""The A/B gate (:mod:`wakelab.analysis.abgate`): the comparison of the two sides, and the gate's answer."""

from __future__ import annotations

import math
import os
from typing import Dict

import pytest

pytest.importorskip("numpy")
pytest.importorskip("scipy")

from wakelab.analysis import abgate  # noqa: E402
from wakelab.analysis.compare import (  # noqa: E402
    CANNOT_TELL, NOT_TESTED, SLOWER, ArmComparison, Judgement, RatioCI, RunComparison, Settings,
)
from wakelab.evidence.model import Bundle, Grid  # noqa: E402

GRID = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "bundles", "grid")


def _run(label: str) -> Bundle:
    return Bundle(source="/nowhere/" + label, folder="/nowhere/" + label, summary={}, label=label)


def _arm(name: str, ratios: Dict[str, float], verdicts: Dict[str, str], notes=()) -> ArmComparison:
    cis = {key: RatioCI(q=50.0, baseline=10_000.0, other=10_000.0 * r, ratio=r, low=r * 0.98, high=r * 1.02,
                        confidence=0.95, resamples=200) for key, r in ratios.items()}
    judged = {key: Judgement(key, cis[key], verdicts[key], 2.0, 6.0) for key in ratios}
    word = verdicts.get("p50", NOT_TESTED)
    return ArmComparison(name=name, kind="latency", waiter="blocked", scope="cross-thread", n_baseline=200, n_other=200,
                         lost_baseline=0, lost_other=0, ratios=cis, test=None, verdict=word, notes=tuple(notes),
                         judgements=judged)


def _comparison(*arms: ArmComparison) -> RunComparison:
    return RunComparison(baseline=_run("main"), other=_run("pr"), warnings=(), arms=arms, only_in_baseline=(),
                         only_in_other=(), not_compared=())


def test_a_tail_regression_fails_the_gate_and_an_arm_not_judged_is_an_error() -> None:
    slow_tail = _arm("event", {"p50": 1.0, "p99": 1.5, "p99_9": 1.6}, {"p50": CANNOT_TELL, "p99": SLOWER, "p99_9": SLOWER})
    gate = abgate.judge_gate(_comparison(slow_tail), 10.0, ("p50", "p99"), 5.0, expected_arms=("event", "pipe"))
    assert gate.result == abgate.REGRESSION
    assert [(r.arm, r.metric) for r in gate.regressions] == [("event", "p99")]
    assert [(row.label, row.gated, row.failed) for row in gate.rows] == [
        ("p50", True, False), ("p99", True, True), ("p99.9", False, False)]
    assert gate.errors == ("pipe has no figures on both sides",)
    doc = gate.to_dict()["rows"][2]
    assert doc["at"] == "p99.9" and doc["ratio"] == 1.6 and doc["min_detectable_effect_pct"] == 6.0


def test_without_a_regression_an_error_is_not_a_pass() -> None:
    gate = abgate.judge_gate(_comparison(_arm("event", {"p50": 1.0}, {"p50": CANNOT_TELL})), 10.0, ("p50",), 5.0,
                             expected_arms=("event", "pipe"))
    assert gate.result == abgate.ERROR
    ci = RatioCI(q=50.0, baseline=1.0, other=math.inf, ratio=math.inf, low=math.nan, high=math.inf, confidence=0.95, resamples=1)
    row = abgate.GateRow("event", "latency", "p50", ci, SLOWER, None, True, True)
    assert row.to_dict()["ratio"] is None and row.to_dict()["ci_low"] is None  # JSON has no infinity


def test_compare_notes_are_worded_for_an_ab() -> None:
    hint = "to tell smaller changes, make both runs with wakelab run --rigorous (more wakes and workers per arm)"
    worded = abgate.worded_for_ab(_comparison(_arm("event", {"p50": 1.0}, {"p50": CANNOT_TELL}, notes=("kept", hint))))
    assert worded.arms[0].notes == (
        "kept", "to tell smaller changes, run the A/B with --rigorous (more wakes and workers per turn)")


def test_the_sides_are_compared_across_the_interpreter() -> None:
    grid = Grid.load(GRID)
    comparison, skipped = abgate.compare_sides(grid, "settle1000us", Settings(resamples=200))
    assert skipped == [] and comparison is not None
    assert (comparison.baseline.label, comparison.other.label) == ("settle1000us", "settle1001us")
    assert comparison.arms and all("wakelab run --rigorous" not in n for arm in comparison.arms for n in arm.notes)
