"""``wakelab compare`` and :mod:`wakelab.analysis.compare`: exact statistics, comparability, CLI output."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
from typing import Callable, Dict, Optional, Tuple

import numpy as np
import pytest

from conftest import GOLDEN, summarize_raw
from wakelab.analysis import compare as cmp
from wakelab.core.model import RawLatency, RawRate, raw_from_dict, raw_to_dict
from wakelab.cli import main
from wakelab.evidence import bundle
from wakelab.harness import runner
from wakelab.labs import LAB_135

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

# The raw samples behind conftest's lab135_summary.
LAB135_RAWS = {
    "event": RawLatency(samples_ns=tuple(10_000 + 1000 * i for i in range(200)), lost=0, warmup_discarded=10),
    "sigusr1-self": RawLatency(samples_ns=tuple(2000 + i for i in range(200)), lost=0, warmup_discarded=10),
    "signal-install": RawRate(
        n_per_round=20000,
        round_ns=(20_000_000, 18_000_000, 19_000_000, 21_000_000, 22_000_000, 20_500_000, 19_500_000),
        baseline_round_ns=(400_000,) * 7,
        warmup_rounds=1,
    ),
}


# ---------------------------------------------------------------------------
# Helpers: bundles on disk
# ---------------------------------------------------------------------------


def write_bundle(folder, summary, raws) -> str:
    os.makedirs(folder, exist_ok=True)
    for name, raw in raws.items():
        bundle.write_samples(str(folder), name, bundle.samples_doc(name, raw_to_dict(raw)))
    bundle.atomic_write_text(os.path.join(folder, bundle.SUMMARY_JSON), bundle.dumps(summary))
    return str(folder)


def read_json(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def modified_copy(src, dst, edit_summary: Optional[Callable[[Dict], None]] = None,
                  scale: Optional[Dict[str, float]] = None,
                  edit_samples: Optional[Dict[str, Callable[[list], list]]] = None) -> str:
    """A copy of bundle ``src`` in ``dst``, with some arms' samples changed and their figures recomputed.

    ``scale`` multiplies every sample (latency) or round time (rate) of an arm;
    ``edit_samples`` maps an arm to a function of its list of samples / round times.
    """
    shutil.copytree(src, dst)
    summary = read_json(os.path.join(dst, "summary.json"))
    edits: Dict[str, Callable[[list], list]] = dict(edit_samples or {})
    for name, factor in (scale or {}).items():
        edits[name] = lambda values, f=factor: [int(round(v * f)) for v in values]
    for entry in summary["arms"]:
        if entry["name"] not in edits:
            continue
        path = os.path.join(dst, entry["samples_file"])
        doc = read_json(path)
        key = "samples_ns" if doc["kind"] == "latency" else "round_ns"
        doc[key] = edits[entry["name"]](doc[key])
        bundle.atomic_write_text(path, json.dumps(doc))
        summarize_raw(entry, raw_from_dict(doc))
    if edit_summary:
        edit_summary(summary)
    bundle.atomic_write_text(os.path.join(dst, "summary.json"), bundle.dumps(summary))
    return str(dst)


@pytest.fixture
def lab135_bundle(tmp_path, lab135_summary) -> str:
    return write_bundle(tmp_path / "a", lab135_summary, LAB135_RAWS)


@pytest.fixture(scope="module")
def real_bundle(tmp_path_factory) -> str:
    """A real run: tiny parameters, but enough rounds for the rate arm to be tested."""
    from wakelab.core.model import MeasureParams

    folder = str(tmp_path_factory.mktemp("real"))
    params = MeasureParams(n=30, warmup=2, settle_us=200, timeout_s=1.0, install_n=500, rounds=4)
    runner.run_plan(runner.RunPlan(lab=LAB_135, arm_names=list(LAB_135.arms), params=params, folder=folder))
    return folder


def _arm(summary, name):
    return next(a for a in summary["arms"] if a["name"] == name)


def run_compare(capsys, *args: str):
    status = main(["compare", *args])
    out, err = capsys.readouterr()
    return status, out, err


def compare_json(capsys, *args: str):
    status, out, err = run_compare(capsys, "--json", *args)
    assert err == ""
    doc = json.loads(out)
    assert doc["exit_status"] == status
    return status, doc


def verdicts(doc, index: int = 0) -> Dict[str, str]:
    return {arm["arm"]: arm["verdict"] for arm in doc["comparisons"][index]["arms"]}


def run_cli(*args: str, cwd=None):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


# ---------------------------------------------------------------------------
# Statistics, with exact fixtures
# ---------------------------------------------------------------------------

BASE = [10_000.0 + i for i in range(200)]


def ratio_cis(baseline, other, qs=(50.0,), seed=cmp.DEFAULT_SEED) -> Tuple[cmp.RatioCI, ...]:
    """The ratio intervals compare gives two arms of one unit each (no worker slices): the one-level bootstrap."""
    from wakelab.analysis.hierarchical import split_units

    plan = [("p%g" % q, q) for q in qs]
    ratios, _ = cmp.judge_arm(split_units(baseline, None), split_units(other, None), plan, cmp.LATENCY, cmp.DEFAULT_SETTINGS, seed)
    return tuple(ratios[key] for key, _ in plan)


def ratio_ci(baseline, other, q=50.0, seed=cmp.DEFAULT_SEED) -> cmp.RatioCI:
    return ratio_cis(baseline, other, (q,), seed)[0]


def test_doubled_sample_is_slower_with_ci_around_two() -> None:
    ci = ratio_ci(BASE, [2 * v for v in BASE])
    assert ci.ratio == 2.0
    assert ci.baseline == 10_099.5 and ci.other == 20_199.0
    assert 1.98 < ci.low <= 2.0 <= ci.high < 2.02
    assert ci.confidence == 0.95 and ci.resamples == cmp.DEFAULT_RESAMPLES
    test = cmp.mann_whitney(BASE, [2 * v for v in BASE])
    assert test.p_value < 1e-60
    assert test.p_greater == 1.0 and test.u == 200 * 200
    assert cmp.verdict(ci.low, ci.high, test.p_value) == cmp.SLOWER


def test_halved_sample_is_faster() -> None:
    ci = ratio_ci(BASE, [v / 2 for v in BASE])
    assert ci.ratio == 0.5 and ci.high < 1.0
    test = cmp.mann_whitney(BASE, [v / 2 for v in BASE])
    assert test.p_greater == 0.0
    assert cmp.verdict(ci.low, ci.high, test.p_value) == cmp.FASTER


def test_identical_samples_show_no_difference() -> None:
    ci = ratio_ci(BASE, BASE)
    assert ci.ratio == 1.0 and ci.low < 1.0 < ci.high
    test = cmp.mann_whitney(BASE, BASE)
    assert test.p_value == 1.0 and test.p_greater == 0.5
    assert cmp.verdict(ci.low, ci.high, test.p_value) == cmp.NO_DIFFERENCE


def test_constant_samples() -> None:
    ci = ratio_ci([5.0] * 10, [5.0] * 10)
    assert (ci.ratio, ci.low, ci.high) == (1.0, 1.0, 1.0)
    test = cmp.mann_whitney([5.0] * 10, [5.0] * 10)
    assert (test.p_value, test.p_greater, test.u) == (1.0, 0.5, 50.0)


def test_exact_small_rank_test() -> None:
    test = cmp.mann_whitney([1, 2, 3, 4], [5, 6, 7, 8])
    assert test.u == 16.0 and test.p_greater == 1.0
    assert test.p_value == pytest.approx(2 / 70)  # scipy's exact test: 2 / C(8, 4)


def test_bootstrap_is_deterministic_and_seeded() -> None:
    other = [v * 1.01 + (v % 7) * 10 for v in BASE]
    first = ratio_ci(BASE, other, seed=7)
    assert ratio_ci(BASE, other, seed=7) == first
    assert ratio_ci(BASE, other, seed=8) != first


def test_asking_for_p99_leaves_the_p50_interval_unchanged() -> None:
    p50, p99 = ratio_cis(BASE, [3 * v for v in BASE], (50.0, 99.0), seed=1)
    assert (p50.q, p99.q) == (50.0, 99.0)
    assert p50.ratio == 3.0 and p99.ratio == pytest.approx(3.0)
    assert p50.low <= 3.0 <= p50.high and p99.low <= 3.0 + 1e-12 and p99.high >= 3.0 - 1e-12
    assert ratio_ci(BASE, [3 * v for v in BASE], 50.0, seed=1) == p50


def test_point_percentile_is_type_7_as_in_the_summary() -> None:
    from wakelab.analysis.stats import percentile

    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    ci = ratio_ci([1.0] * 8, values, q=90.0)
    assert ci.other == percentile(sorted(values), 90.0) == pytest.approx(float(np.percentile(values, 90)))


def test_order_statistic_draws_match_brute_force_resampling() -> None:
    """The shortcut has the distribution of 'resample with replacement, recompute the percentile'."""
    x = np.sort(np.random.default_rng(1).lognormal(3.0, 1.0, size=57))
    resamples = 100_000
    fast = cmp.bootstrap._resampled_percentiles(x, [50.0, 90.0], resamples, np.random.default_rng(2))
    brute = np.percentile(x[np.random.default_rng(3).integers(0, x.size, size=(resamples, x.size))], [50, 90], axis=1)
    for i in range(2):
        for q in (0.025, 0.25, 0.5, 0.75, 0.975):
            assert np.quantile(fast[i], q) == pytest.approx(np.quantile(brute[i], q), rel=0.03)
        assert fast[i].mean() == pytest.approx(brute[i].mean(), rel=0.005)
    # Jointly, too: p50 and p90 of one resample are correlated as in brute force.
    assert np.corrcoef(fast[0], fast[1])[0, 1] == pytest.approx(np.corrcoef(brute[0], brute[1])[0, 1], abs=0.02)


def test_order_statistic_draws_of_two_values() -> None:
    # Resampling [1, 3]: medians 1 (1/4), 2 (1/2), 3 (1/4).
    draws = cmp.bootstrap._resampled_percentiles(np.array([1.0, 3.0]), [50.0], 100_000, np.random.default_rng(5))[0]
    assert set(np.unique(draws)) == {1.0, 2.0, 3.0}
    for value, share in ((1.0, 0.25), (2.0, 0.5), (3.0, 0.25)):
        assert np.mean(draws == value) == pytest.approx(share, abs=0.01)


def test_single_sample_each() -> None:
    ci = ratio_ci([4.0], [6.0])
    assert (ci.ratio, ci.low, ci.high) == (1.5, 1.5, 1.5)


@pytest.mark.parametrize(
    "baseline, other, message",
    [
        ([], [1.0], "non-empty"),
        ([1.0], [], "non-empty"),
        ([1.0, float("nan")], [1.0], "not finite"),
    ],
)
def test_bootstrap_rejects_bad_samples(baseline, other, message) -> None:
    with pytest.raises(ValueError, match=message):
        cmp.bootstrap_percentile_difference(baseline, other)


def test_a_ratio_to_a_zero_baseline_is_refused() -> None:
    with pytest.raises(ValueError, match="p50 is 0"):
        ratio_ci([0.0, 0.0, 0.0], [1.0, 2.0, 3.0])


def test_zero_in_a_resampled_baseline_gives_an_infinite_bound() -> None:
    ci = ratio_ci([0.0, 0.0, 10.0, 10.0, 10.0], [10.0] * 5)
    assert ci.ratio == 1.0 and ci.high == math.inf
    assert ci.to_dict()["ci_high"] is None


NAN = float("nan")


@pytest.mark.parametrize(
    "low, high, higher_is_better, expected",
    [
        (1.06, 2.5, False, "slower"),  # entirely above 1 + m
        (0.4, 0.94, False, "faster"),  # entirely below 1 / (1 + m)
        (1.06, 2.5, True, "faster"),  # rates: more ops/s is faster
        (0.4, 0.94, True, "slower"),
        (0.96, 1.04, False, "no difference"),  # inside [1 / 1.05, 1.05]
        (1.01, 1.04, False, "no difference"),  # excludes 1, but the change is below the practical threshold
        (1 / 1.05, 1.05, False, "no difference"),  # the band's ends belong to it
        (1.02, 1.10, False, "cannot tell"),  # above 1, but perhaps by less than 5%
        (0.5, 2.0, False, "cannot tell"),  # too wide to tell
        (1.05, 2.5, False, "cannot tell"),  # a bound at 1 + m does not lie above it
        (NAN, NAN, False, "not tested"),
    ],
)
def test_verdict(low, high, higher_is_better, expected) -> None:
    assert cmp.verdict(low, high, 5.0, higher_is_better) == expected


def test_verdict_threshold_and_rejects_bad_thresholds() -> None:
    assert cmp.verdict(1.02, 1.10, 1.0) == "slower"  # with m = 1% the same interval is slower
    assert cmp.verdict(1.02, 1.10, 20.0) == "no difference"
    for bad in (0.0, 100.0, -1.0):
        with pytest.raises(ValueError):
            cmp.verdict(1.0, 1.0, bad)


def test_minimum_detectable_effect() -> None:
    # Half-width in log terms h = ln 2 / 2: MDE = 1.05 * sqrt(2) - 1.
    assert cmp.minimum_detectable_effect(0.5, 1.0, 5.0) == pytest.approx((1.05 * math.sqrt(2) - 1) * 100)
    # An interval of zero width: the threshold itself.
    assert cmp.minimum_detectable_effect(1.2, 1.2, 5.0) == pytest.approx(5.0)
    assert cmp.minimum_detectable_effect(0.0, 1.0, 5.0) == math.inf
    assert cmp.minimum_detectable_effect(1.0, math.inf, 5.0) == math.inf
    assert math.isnan(cmp.minimum_detectable_effect(NAN, NAN, 5.0))


def test_testability() -> None:
    assert cmp.why_untestable(7, 7) is None
    assert cmp.why_untestable(3, 3, "rounds") is None
    assert cmp.why_untestable(2, 7, "rounds") == "too few rounds for an interval (2 against 7; at least 3 on each side)"


def test_across_names() -> None:
    assert cmp.parse_across("placement, cpu-threads,placement") == ("placement", "cpu-threads")
    with pytest.raises(ValueError, match="unknown name 'colour'"):
        cmp.parse_across("placement,colour")
    assert cmp.across_name_of_condition("applied_idle_hold") == "idle-hold"
    assert cmp.across_name_of_condition("switch_interval_s") == "switch-interval"
    assert cmp.across_name_of_condition("future_knob") is None


def test_the_package_root_exports_every_public_name_once() -> None:
    """Readers (the commands, the gate, the HTML report) import from the package root: each name of its
    __all__ is there, listed once, and is the submodule's own object."""
    assert len(cmp.__all__) == len(set(cmp.__all__))
    assert all(hasattr(cmp, name) for name in cmp.__all__)
    assert cmp.compare_runs is cmp.runs.compare_runs and cmp.mann_whitney is cmp.bootstrap.mann_whitney
    assert cmp.compare_grid is cmp.grid.compare_grid and cmp.comparability is cmp.comparable.comparability


def test_importing_compare_loads_no_numerics() -> None:
    code = ("import argparse, sys, wakelab.analysis.compare, wakelab.commands.compare as c; "
            "c.register(argparse.ArgumentParser().add_subparsers()); "
            "assert 'numpy' not in sys.modules and 'scipy' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, PYTHONPATH=SRC))


# ---------------------------------------------------------------------------
# The command, on the fixed Lab 135 bundle
# ---------------------------------------------------------------------------


def test_golden_comparison(tmp_path, lab135_bundle, capsys, monkeypatch) -> None:
    def older_python(summary) -> None:
        summary["interpreter"]["version"] = "3.11.7"

    modified_copy(lab135_bundle, tmp_path / "b", older_python, scale={"event": 3, "signal-install": 0.5})
    modified_copy(lab135_bundle, tmp_path / "c")
    monkeypatch.chdir(tmp_path)
    status, out, err = run_compare(capsys, "a", "b", "c", "--fail-on-regression", "10")
    if os.environ.get("WAKELAB_UPDATE_GOLDEN"):
        bundle.atomic_write_text(os.path.join(GOLDEN, "compare_lab135.txt"), out)
    with open(os.path.join(GOLDEN, "compare_lab135.txt"), encoding="utf-8") as fh:
        assert out == fh.read()
    assert err == ""
    assert status == 1


def test_self_comparison_shows_no_difference(lab135_bundle, capsys) -> None:
    status, doc = compare_json(capsys, lab135_bundle, lab135_bundle, "--fail-on-regression", "0")
    assert status == 0
    # sigusr1-self's wakes lie within 10% of each other: its interval is inside the 5% band.  event's
    # spread from 10 to 209 µs and 7 rounds of signal-install are too few: too wide to tell.
    assert verdicts(doc) == {"event": cmp.CANNOT_TELL, "sigusr1-self": cmp.NO_DIFFERENCE,
                             "signal-install": cmp.CANNOT_TELL}
    for arm in doc["comparisons"][0]["arms"]:
        assert arm["mann_whitney"]["p_value"] == 1.0
        assert arm["units_baseline"] == arm["units_other"] == 1  # no worker records in this fixture
        for ratio in arm["ratios"].values():
            assert ratio["ratio"] == 1.0 and ratio["ci_low"] < 1.0 < ratio["ci_high"]
            assert ratio["min_detectable_effect_pct"] > 5.0
    event = doc["comparisons"][0]["arms"][0]
    assert event["ratios"]["p50"]["reason"] == (
        "cannot tell: repetitions vary ±%s; the smallest change this comparison could detect is %s" % (
            cmp.format_pct(event["ratios"]["p50"]["spread_pct"]),
            cmp.format_pct(event["ratios"]["p50"]["min_detectable_effect_pct"])))
    assert doc["comparisons"][0]["warnings"] == []


def test_three_times_slower_fails_the_regression_check(tmp_path, lab135_bundle, capsys) -> None:
    slow = modified_copy(lab135_bundle, tmp_path / "slow", scale={"event": 3})
    status, doc = compare_json(capsys, lab135_bundle, slow, "--fail-on-regression", "10")
    assert status == 1
    assert verdicts(doc) == {"event": "slower", "sigusr1-self": cmp.NO_DIFFERENCE, "signal-install": cmp.CANNOT_TELL}
    event = doc["comparisons"][0]["arms"][0]
    assert event["ratios"]["p50"]["ratio"] == pytest.approx(3.0)
    # event's wakes spread from 10 to 209 µs, so the interval is wide, but far from 1.
    assert 2.3 < event["ratios"]["p50"]["ci_low"] < 3.0 < event["ratios"]["p50"]["ci_high"] < 3.8
    # The default --metric gates on p50 and p99: both moved.
    assert doc["regression_check"]["regressions"] == [
        {"run": "B", "arm": "event", "metric": "p50", "slowdown": pytest.approx(3.0)},
        {"run": "B", "arm": "event", "metric": "p99", "slowdown": pytest.approx(3.0)}]
    assert doc["regression_check"]["metrics"] == ["p50", "p99"]
    # Below the limit, or without the option, the command succeeds.
    assert compare_json(capsys, lab135_bundle, slow, "--fail-on-regression", "250")[0] == 0
    assert compare_json(capsys, lab135_bundle, slow)[0] == 0
    # The other way round it is faster, and never a regression.
    status, doc = compare_json(capsys, slow, lab135_bundle, "--fail-on-regression", "0")
    assert status == 0 and verdicts(doc)["event"] == "faster"


def test_slower_rate_arm(tmp_path, lab135_bundle, capsys) -> None:
    slow = modified_copy(lab135_bundle, tmp_path / "slow", scale={"signal-install": 2})
    status, doc = compare_json(capsys, lab135_bundle, slow, "--fail-on-regression", "10")
    assert status == 1
    arm = {a["arm"]: a for a in doc["comparisons"][0]["arms"]}["signal-install"]
    assert arm["verdict"] == "slower"
    assert arm["ratios"]["median"]["ratio"] == pytest.approx(0.5)
    assert arm["mann_whitney"]["p_value"] == pytest.approx(2 / 3432)  # 7 rounds against 7, fully separated
    assert doc["regression_check"]["regressions"] == [
        {"run": "B", "arm": "signal-install", "metric": "median ops/s", "slowdown": pytest.approx(2.0)}]


def test_tail_regression_is_reported_and_gated_by_default(tmp_path, lab135_bundle, capsys) -> None:
    def slow_tail(values):  # the ten slowest wakes ten times slower: the ranks and the median do not move
        ordered = sorted(values)
        return ordered[:-10] + [v * 10 for v in ordered[-10:]]

    tail = modified_copy(lab135_bundle, tmp_path / "tail", edit_samples={"sigusr1-self": slow_tail})
    status, doc = compare_json(capsys, lab135_bundle, tail, "--fail-on-regression", "10")
    assert status == 1
    arm = {a["arm"]: a for a in doc["comparisons"][0]["arms"]}["sigusr1-self"]
    assert arm["verdict"] == cmp.NO_DIFFERENCE and arm["ratios"]["p50"]["verdict"] == cmp.NO_DIFFERENCE
    assert arm["ratios"]["p99"]["verdict"] == cmp.SLOWER and arm["ratios"]["p99"]["ci_low"] > 1.05
    assert arm["tail_regression"] == "p99"
    assert any(note.startswith("tail regression: p99 is slower") for note in arm["notes"])
    assert [(r["arm"], r["metric"]) for r in doc["regression_check"]["regressions"]] == [("sigusr1-self", "p99")]
    # Gating on the p50 alone lets it pass; the tail is still reported.
    status, doc = compare_json(capsys, lab135_bundle, tail, "--fail-on-regression", "10", "--metric", "p50")
    assert status == 0
    assert {a["arm"]: a for a in doc["comparisons"][0]["arms"]}["sigusr1-self"]["tail_regression"] == "p99"


def test_several_runs_each_against_the_baseline(tmp_path, lab135_bundle, capsys) -> None:
    slow = modified_copy(lab135_bundle, tmp_path / "slow", scale={"event": 2})
    fast = modified_copy(lab135_bundle, tmp_path / "fast", scale={"event": 0.5})
    status, doc = compare_json(capsys, lab135_bundle, slow, fast)
    assert status == 0
    assert [(c["baseline"], c["other"]) for c in doc["comparisons"]] == [("A", "B"), ("A", "C")]
    assert verdicts(doc, 0)["event"] == "slower" and verdicts(doc, 1)["event"] == "faster"
    assert [r["label"] for r in doc["runs"]] == ["A", "B", "C"]


def test_json_is_deterministic(tmp_path, lab135_bundle, capsys) -> None:
    slow = modified_copy(lab135_bundle, tmp_path / "slow", scale={"event": 1.05})
    first = run_compare(capsys, "--json", lab135_bundle, slow)
    assert run_compare(capsys, "--json", lab135_bundle, slow) == first
    doc = json.loads(first[1])
    assert doc["schema"] == "wakelab.analysis.compare" and doc["schema_version"] == 2
    assert doc["settings"]["min_effect_pct"] == 5.0 and doc["grid"] is None
    assert doc["settings"]["seed"] == cmp.DEFAULT_SEED and doc["settings"]["resamples"] == 2000
    # Another seed moves the interval, not the point estimate.
    other_seed = json.loads(run_compare(capsys, "--json", "--seed", "1", lab135_bundle, slow)[1])
    a = doc["comparisons"][0]["arms"][0]["ratios"]["p50"]
    b = other_seed["comparisons"][0]["arms"][0]["ratios"]["p50"]
    assert a["ratio"] == b["ratio"] and (a["ci_low"], a["ci_high"]) != (b["ci_low"], b["ci_high"])


def test_alpha_sets_the_confidence_level(lab135_bundle, capsys) -> None:
    status, doc = compare_json(capsys, lab135_bundle, lab135_bundle, "--alpha", "0.01")
    assert doc["settings"]["confidence"] == pytest.approx(0.99)
    assert doc["comparisons"][0]["arms"][0]["ratios"]["p50"]["confidence"] == pytest.approx(0.99)


# ---------------------------------------------------------------------------
# Warnings, arms in one run only, skipped arms, too few rounds
# ---------------------------------------------------------------------------


def test_interpreter_and_machine_differences_are_warnings(tmp_path, lab135_bundle, capsys) -> None:
    def elsewhere(summary) -> None:
        summary["interpreter"]["version"] = "3.11.7"
        summary["machine"]["hostname"] = "otherbox"
        summary["machine"]["kernel"] = "6.8.0"

    other = modified_copy(lab135_bundle, tmp_path / "other", elsewhere)
    status, out, err = run_compare(capsys, lab135_bundle, other)
    assert status == 0 and err == ""
    assert ("  warning: interpreters differ (CPython 3.13.5 vs CPython 3.11.7): differences include the interpreter"
            in out.splitlines())
    assert ("  warning: machines differ (hostname testbox vs otherbox; kernel 6.1.0-test vs 6.8.0): differences "
            "include the machine" in out.splitlines())


def test_build_difference_is_named(tmp_path, lab135_bundle, capsys) -> None:
    def rebuilt(summary) -> None:
        summary["interpreter"]["build"] = "main, Jul 1 2025 10:00:00"

    other = modified_copy(lab135_bundle, tmp_path / "other", rebuilt)
    status, doc = compare_json(capsys, lab135_bundle, other)
    assert doc["comparisons"][0]["warnings"] == [
        "interpreters differ (build main, Jun 11 2025 15:36:57 vs main, Jul 1 2025 10:00:00): "
        "differences include the interpreter"]


def test_interpreters_are_compared_as_recorded(tmp_path, lab135_bundle, capsys) -> None:
    """A debug build, and a build kind one run does not record, are differences as the evidence stores them (not as
    the model reads a build kind that is not recorded: not free-threaded)."""
    def debug(summary) -> None:
        summary["interpreter"]["debug_build"] = True
        del summary["interpreter"]["free_threaded_build"]

    other = modified_copy(lab135_bundle, tmp_path / "other", debug)
    status, doc = compare_json(capsys, lab135_bundle, other)
    assert doc["comparisons"][0]["warnings"] == [
        "interpreters differ (free_threaded_build False vs None; debug_build False vs True): "
        "differences include the interpreter"]


def test_arms_in_one_run_and_skipped_arms_are_listed(tmp_path, lab135_bundle, capsys) -> None:
    def reshape(summary) -> None:
        event = next(a for a in summary["arms"] if a["name"] == "event")
        event.update(status="skipped", reason="not available here", latency=None, samples_file=None)
        summary["arms"] = [a for a in summary["arms"] if a["name"] != "signal-install"]
        extra = dict(event, name="pipe", status="failed", reason="OSError: boom")
        summary["arms"].append(extra)

    other = modified_copy(lab135_bundle, tmp_path / "other", reshape)
    status, out, err = run_compare(capsys, lab135_bundle, other)
    assert status == 0 and err == ""
    assert "  - only in A (not compared): signal-install" in out
    assert "  - only in B (not compared): pipe" in out
    assert "  - event not compared: skipped in B: not available here" in out
    status, doc = compare_json(capsys, lab135_bundle, other)
    comparison = doc["comparisons"][0]
    assert verdicts(doc) == {"sigusr1-self": cmp.NO_DIFFERENCE}
    assert comparison["only_in_baseline"] == ["signal-install"] and comparison["only_in_other"] == ["pipe"]
    assert comparison["not_compared"] == [{"arm": "event", "reason": "skipped in B: not available here"}]


def test_conditions_recorded_by_one_run_only_is_a_warning(lab135_summary) -> None:
    older = {k: v for k, v in lab135_summary.items() if k != "conditions"}
    a = cmp.Run(label="A", source="a", folder="a", summary=older)
    b = cmp.Run(label="B", source="b", folder="b", summary=lab135_summary)
    assert cmp.comparability(a, b)[0] == ["only B records its conditions: cannot check that the conditions match"]
    assert cmp.comparability(b, b)[0] == []


def test_parameters_missing_from_an_older_bundle_take_their_old_meaning(lab135_summary) -> None:
    older = json.loads(json.dumps(lab135_summary))
    for key in ("placement", "mode", "interval_us", "notifier_cpu", "waiter_cpu"):
        del older["parameters"][key]
    a = cmp.Run(label="A", source="a", folder="a", summary=older)
    b = cmp.Run(label="B", source="b", folder="b", summary=lab135_summary)
    assert cmp.comparability(a, b)[0] == []


def test_other_cpus_are_a_warning(tmp_path, lab135_bundle, capsys) -> None:
    def pinned(cpus):
        return lambda s: s["parameters"].update(placement="split", notifier_cpu=cpus[0], waiter_cpu=cpus[1])

    a = modified_copy(lab135_bundle, tmp_path / "pa", pinned((0, 1)))
    b = modified_copy(lab135_bundle, tmp_path / "pb", pinned((2, 3)))
    status, doc = compare_json(capsys, a, b)
    assert status == 0
    assert doc["comparisons"][0]["warnings"] == [
        "pinned to other CPUs (notifier_cpu 0 vs 2; waiter_cpu 1 vs 3): differences include the CPUs"]


def test_a_grid_folder_names_its_cells(tmp_path, lab135_bundle, capsys) -> None:
    grid = tmp_path / "grid"
    shutil.copytree(lab135_bundle, grid / "cells" / "same")
    shutil.copytree(lab135_bundle, grid / "cells" / "split")
    status, out, err = run_compare(capsys, str(grid), lab135_bundle)
    assert status == 2 and out == ""
    # A folder of cells with no matrix.json is a grid that lost its index, worded as every other reader words it.
    assert err == ("wakelab: error: %s has cells/ but no matrix.json: the grid's index is missing; give one of its cells "
                   "(%s, %s)\n" % (grid, grid / "cells" / "same", grid / "cells" / "split"))


def test_too_few_rounds_is_not_tested(tmp_path, lab135_bundle, capsys) -> None:
    short = modified_copy(lab135_bundle, tmp_path / "short", edit_samples={"signal-install": lambda v: v[:2]})
    status, out, err = run_compare(capsys, lab135_bundle, short, "--fail-on-regression", "10")
    assert status == 0
    text = " ".join(out.split())  # notes are wrapped at 100 columns
    assert "- signal-install: too few rounds for an interval (7 against 2; at least 3 on each side)" in text
    assert "- not checked: signal-install in B: not tested (too few rounds)" in text
    status, doc = compare_json(capsys, lab135_bundle, short)
    arm = {a["arm"]: a for a in doc["comparisons"][0]["arms"]}["signal-install"]
    assert arm["verdict"] == "not tested" and arm["mann_whitney"] is None
    assert arm["ratios"]["median"]["ci_low"] is None and arm["ratios"]["median"]["ratio"] is not None


def test_lost_wakes_are_noted(tmp_path, lab135_bundle, capsys) -> None:
    def lossy(summary) -> None:
        summary["arms"][0]["latency"]["lost"] = 3

    other = modified_copy(lab135_bundle, tmp_path / "other", lossy)
    status, doc = compare_json(capsys, lab135_bundle, other)
    assert "lost wakes are not in the samples: 0 in A, 3 in B" in doc["comparisons"][0]["arms"][0]["notes"]


# ---------------------------------------------------------------------------
# Real bundles made by the runner
# ---------------------------------------------------------------------------


def test_real_run_against_itself(real_bundle, capsys) -> None:
    status, doc = compare_json(capsys, real_bundle, real_bundle, "--fail-on-regression", "0")
    assert status == 0
    # The same wakes on both sides: never faster or slower (30 wakes may be too few to say "no difference").
    assert set(verdicts(doc).values()) <= {cmp.NO_DIFFERENCE, cmp.CANNOT_TELL}
    assert set(verdicts(doc)) == {a["name"] for a in read_json(os.path.join(real_bundle, "summary.json"))["arms"]
                                  if a["status"] == "ok"}


def test_real_run_made_a_hundred_times_slower(tmp_path, real_bundle, capsys) -> None:
    # A hundred times: the interval resamples the run's worker slices (a few wakes each), whose levels
    # differ by up to ten times on a loaded 2-vCPU VM (a wake on the waiter's own CPU against one that
    # wakes the other, idle, vCPU: 5 µs against 50 µs); ten times was once "cannot tell" in a full run.
    # A change far beyond that spread is always found.
    slow = modified_copy(real_bundle, tmp_path / "slow", scale={"event": 100})
    status, out, err = run_compare(capsys, real_bundle, slow, "--fail-on-regression", "10")
    assert status == 1 and err == ""
    assert any(line.startswith("  event ") and " slower " in line for line in out.splitlines())
    assert "FAIL: event in B is slower than in A" in out


def test_real_runs_with_different_settle_time_are_refused(tmp_path, real_bundle, capsys) -> None:
    other = modified_copy(real_bundle, tmp_path / "other", lambda s: s["parameters"].update(settle_us=1000))
    status, out, err = run_compare(capsys, real_bundle, other)
    assert status == 2 and out == ""
    assert err == ("wakelab: error: cannot compare %s with %s: settle_us differs (200 vs 1000): a blocked waiter's "
                   "settle time is part of the experiment; use the same --settle-us, or name it with --across settle to "
                   "compare on purpose\n" % (other, real_bundle))


# ---------------------------------------------------------------------------
# Refusals and bad input: one line, exit 2
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: [a.update(name="x-" + a["name"]) for a in s["arms"]],
         "no arm in common (A_PATH has event, sigusr1-self, signal-install; B_PATH has x-event, x-sigusr1-self, "
         "x-signal-install)"),
        (lambda s: _arm(s, "event").update(waiter="spinning"),
         "arm event differs in waiter state (blocked in A_PATH, spinning in B_PATH): not the same experiment"),
        (lambda s: _arm(s, "event").update(kind="rate"),
         "arm event differs in kind (latency in A_PATH, rate in B_PATH): not the same experiment"),
        (lambda s: _arm(s, "event").update(scope="cross-process"),
         "arm event differs in scope (cross-thread in A_PATH, cross-process in B_PATH): not the same experiment"),
        (lambda s: s["parameters"].update(planted_delay_us=50),
         "planted_delay_us differs (0 vs 50): a planted delay adds to every sample; compare runs with the same "
         "--planted-delay-us, or name it with --across planted-delay to compare on purpose"),
        (lambda s: s["parameters"].update(placement="split"),
         "placement differs (any vs split): where notifier and waiter run can matter more than the mechanism; "
         "use the same --placement, or name it with --across placement to compare on purpose"),
        (lambda s: s["parameters"].update(mode="open"),
         "mode differs (closed vs open): open-loop and closed-loop latencies time different things; use the same "
         "--mode, or name it with --across mode to compare on purpose"),
    ],
)
def test_refusals(tmp_path, lab135_bundle, capsys, edit, message) -> None:
    other = modified_copy(lab135_bundle, tmp_path / "other", edit)
    status, out, err = run_compare(capsys, lab135_bundle, other)
    assert status == 2 and out == ""
    expected = "wakelab: error: cannot compare %s with %s: %s\n" % (
        other, lab135_bundle, message.replace("A_PATH", lab135_bundle).replace("B_PATH", other))
    assert err == expected


def test_different_conditions_are_refused(tmp_path, lab135_bundle, capsys) -> None:
    b = modified_copy(lab135_bundle, tmp_path / "b", lambda s: s["conditions"].update(cpu_threads=2, future_knob="on"))
    status, out, err = run_compare(capsys, lab135_bundle, b)
    assert status == 2 and out == ""
    assert err == ("wakelab: error: cannot compare %s with %s: conditions differ (cpu_threads 0 vs 2; future_knob null "
                   "vs on): not the same experiment\n" % (b, lab135_bundle))
    # Equal conditions compare, whatever they hold.
    assert run_compare(capsys, b, b)[0] == 0


def test_different_sample_units_are_refused(tmp_path, lab135_bundle, capsys) -> None:
    other = modified_copy(lab135_bundle, tmp_path / "other")
    path = os.path.join(other, "samples", "event.json")
    doc = read_json(path)
    doc["unit"] = "us"
    bundle.atomic_write_text(path, json.dumps(doc))
    status, out, err = run_compare(capsys, lab135_bundle, other)
    assert status == 2 and out == ""
    assert err == "wakelab: error: cannot compare %s with %s: arm event is in ns in one and us in the other\n" % (
        other, lab135_bundle)


def test_samples_that_do_not_match_the_summary_are_refused(tmp_path, lab135_bundle, capsys) -> None:
    other = modified_copy(lab135_bundle, tmp_path / "other")
    path = os.path.join(other, "samples", "event.json")
    doc = read_json(path)
    doc["samples_ns"] = [3 * v for v in doc["samples_ns"]]  # samples edited, summary not
    bundle.atomic_write_text(path, json.dumps(doc))
    status, out, err = run_compare(capsys, lab135_bundle, other)
    assert status == 2 and out == ""
    assert err == ("wakelab: error: %s: arm event: the samples file does not match summary.json (p50 328500.0 from "
                   "the samples, 109500.0 in the summary): the bundle was edited or mixed\n" % other)


def _write(folder, relative, text) -> None:
    with open(os.path.join(folder, relative), "w", encoding="utf-8") as fh:
        fh.write(text)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda folder: os.remove(os.path.join(folder, "summary.json")), "no such file"),
        (lambda folder: _write(folder, "summary.json", "{"), "is not valid JSON"),
        (lambda folder: _write(folder, "samples/event.json", '{"schema": "wakelab.samp'), "is not valid JSON"),
        (lambda folder: os.remove(os.path.join(folder, "samples", "event.json")), "cannot read"),
        (lambda folder: _write(folder, "samples/event.json",
                               '{"schema": "wakelab.samples", "arm": "event", "kind": "latency", "samples_ns": [1, -2]}'),
         "samples_ns must be a list of non-negative integers"),
    ],
)
def test_missing_or_corrupt_input(tmp_path, lab135_bundle, damage, message) -> None:
    other = modified_copy(lab135_bundle, tmp_path / "other")
    damage(other)
    result = run_cli("compare", lab135_bundle, other)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("wakelab: error: ") and message in lines[0], result.stderr


def test_duplicate_arm_names_are_refused(tmp_path, lab135_bundle, capsys) -> None:
    other = modified_copy(lab135_bundle, tmp_path / "other", lambda s: s["arms"].append(dict(s["arms"][0])))
    status, out, err = run_compare(capsys, lab135_bundle, other)
    assert status == 2
    assert err == "wakelab: error: %s lists arm event more than once\n" % os.path.join(other, "summary.json")


@pytest.mark.parametrize(
    "args, message",
    [
        (["A"], "wakelab: error: compare needs BASELINE and at least one RUN, or a grid folder alone (one with "
                "matrix.json); A_PATH is not a grid"),
        (["A", "A", "--alpha", "0"], "wakelab compare: error: argument --alpha: must be above 0 and at most 0.5, got 0"),
        (["A", "A", "--alpha", "nan"], "wakelab compare: error: argument --alpha: must be above 0 and at most 0.5, got nan"),
        (["A", "A", "--alpha", "x"], "wakelab compare: error: argument --alpha: expected a number such as 0.05, got 'x'"),
        (["A", "A", "--fail-on-regression", "-5"],
         "wakelab compare: error: argument --fail-on-regression: must be between 0 and 10,000 (percent), got -5"),
        (["A", "A", "--fail-on-regression", "inf"],
         "wakelab compare: error: argument --fail-on-regression: must be between 0 and 10,000 (percent), got inf"),
        (["A", "A", "--resamples", "0"], "wakelab compare: error: argument --resamples: must be between 100 and 100,000, got 0"),
        (["A", "A", "--metric", "p90"],
         "wakelab compare: error: argument --metric: unknown percentile 'p90' (known: p50, p99, p99.9)"),
        (["A", "A", "--min-effect", "0"],
         "wakelab compare: error: argument --min-effect: must be above 0 and below 100 (percent), got 0"),
        (["A", "A", "--min-effect", "100"],
         "wakelab compare: error: argument --min-effect: must be above 0 and below 100 (percent), got 100"),
        (["A", "A", "--min-effect", "nan"],
         "wakelab compare: error: argument --min-effect: must be above 0 and below 100 (percent), got nan"),
        (["A", "A", "--min-effect", "five"],
         "wakelab compare: error: argument --min-effect: expected a percentage such as 5, got 'five'"),
        (["A", "A", "--across", "placement,colour"],
         "wakelab compare: error: argument --across: unknown name 'colour' (known: placement, settle, planted-delay"),
        (["A", "A", "--across", ","], "wakelab compare: error: argument --across: expected one or more of placement"),
        (["A", "A", "--baseline-cell", "same"],
         "wakelab: error: --baseline-cell applies to a grid folder given alone; A_PATH is a run"),
        (["A", "A", "--seed", "-1"], "wakelab compare: error: argument --seed: must be between 0 and 4,294,967,295, got -1"),
    ],
)
def test_bad_options(tmp_path, lab135_bundle, args, message) -> None:
    args = [lab135_bundle if a == "A" else a for a in args]
    result = run_cli("compare", *args)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message.replace("A_PATH", lab135_bundle)), result.stderr


def test_too_many_runs(lab135_bundle, capsys) -> None:
    status, out, err = run_compare(capsys, *([lab135_bundle] * 27))
    assert status == 2 and out == ""
    assert err == "wakelab: error: compare takes at most 26 runs (a baseline and 25 others), got 27\n"


def test_help_documents_the_exit_status(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "exit status:" in out
    for line in ("  0  compared", "  1  --fail-on-regression", "  2  bad input"):
        assert line in out


def test_regression_check_without_p99(tmp_path, real_bundle, capsys) -> None:
    # n = 30: no p99, so --metric p99 cannot check latency arms, and says so.
    status, out, err = run_compare(capsys, real_bundle, real_bundle, "--fail-on-regression", "10", "--metric", "p99")
    assert status == 0
    assert "  - not checked: event in B: no p99 (needs n >= 100 in both runs)" in out.splitlines()


def test_settings_are_recorded() -> None:
    settings = dataclasses.replace(cmp.Settings(), alpha=0.1)
    assert settings.confidence == pytest.approx(0.9)
    assert settings.to_dict()["alpha"] == 0.1


# ---------------------------------------------------------------------------
# Where the time goes: two traced runs (wakelab run --trace)
# ---------------------------------------------------------------------------

TRACED_WAKES = 200


def traced_components(notify_extra: int = 0, queue_extra: int = 0) -> Dict[str, list]:
    """Per-wake components of a traced pass of ``TRACED_WAKES`` wakes (ns), with a shift planted in some."""
    series = {
        "notify": [3000 + 10 * (i % 50) + notify_extra for i in range(TRACED_WAKES)],
        "sched_wake": [2000 + (i % 13) for i in range(TRACED_WAKES)],
        "sched_queue": [4000 + 7 * (i % 31) + queue_extra for i in range(TRACED_WAKES)],
        "gil_wait": [0 if i % 10 else 5000 for i in range(TRACED_WAKES)],
        "interpreter": [1000 + (i % 7) for i in range(TRACED_WAKES)],
        "unattributed": [0] * TRACED_WAKES,
    }
    return series


def add_trace(folder: str, arm: str, series: Dict[str, list]) -> str:
    """Mark ``arm`` of the bundle in ``folder`` traced, with ``series`` as its traced pass (as the runner stores it)."""
    summary = read_json(os.path.join(folder, "summary.json"))
    entry = _arm(summary, arm)
    path = os.path.join(folder, entry["samples_file"])
    doc = read_json(path)
    samples = [sum(values) for values in zip(*series.values())]
    doc["traced"] = {"samples_ns": samples, "components_ns": dict(series, gil_cycles=[0] * len(samples)),
                     "components": list(series), "unit": "ns"}
    bundle.atomic_write_text(path, json.dumps(doc))
    entry["trace"] = {"traced": True, "reason": None, "components": {"wakes": len(samples)}}
    summary["tracing"] = {"requested": True, "traced": True, "reason": None}
    bundle.atomic_write_text(os.path.join(folder, "summary.json"), bundle.dumps(summary))
    return folder


def test_percentile_difference_with_its_interval() -> None:
    shifted = [v + 500.0 for v in BASE]
    moved = cmp.bootstrap_percentile_difference(BASE, shifted)
    assert (moved.baseline, moved.other, moved.difference) == (10_099.5, 10_599.5, 500.0)
    assert moved.low <= 500.0 <= moved.high and moved.excludes_zero()
    same = cmp.bootstrap_percentile_difference(BASE, BASE)
    assert same.difference == 0.0 and same.low < 0.0 < same.high and not same.excludes_zero()
    # A p50 of 0 (a GIL wait most wakes do not have) is no obstacle, unlike a ratio.
    zeros = cmp.bootstrap_percentile_difference([0.0] * 50, [0.0] * 50)
    assert (zeros.difference, zeros.low, zeros.high) == (0.0, 0.0, 0.0)
    assert cmp.bootstrap_percentile_difference(BASE, shifted, seed=7) == cmp.bootstrap_percentile_difference(BASE, shifted, seed=7)
    with pytest.raises(ValueError, match="non-empty"):
        cmp.bootstrap_percentile_difference([], BASE)


def test_traced_runs_name_the_component_that_moved(tmp_path, lab135_bundle, capsys) -> None:
    a = add_trace(modified_copy(lab135_bundle, tmp_path / "ta"), "event", traced_components())
    b = add_trace(modified_copy(lab135_bundle, tmp_path / "tb"), "event", traced_components(notify_extra=5000, queue_extra=300))
    status, doc = compare_json(capsys, a, b)
    assert status == 0
    event = next(arm for arm in doc["comparisons"][0]["arms"] if arm["arm"] == "event")
    found = event["components"]
    assert (found["moved_most"], found["significant"]) == ("notify", True)
    assert (found["n_baseline"], found["n_other"]) == (TRACED_WAKES, TRACED_WAKES)
    notify = found["p50"]["notify"]
    assert (notify["baseline"], notify["other"], notify["difference"]) == (3245.0, 8245.0, 5000.0)
    assert notify["ci_low"] <= 5000.0 <= notify["ci_high"]
    assert notify["ratio"] == pytest.approx(8245 / 3245)
    assert found["p50"]["sched_queue"]["difference"] == 300.0  # moved too, but less
    assert found["p50"]["interpreter"]["difference"] == 0.0 and found["p50"]["gil_wait"]["ratio"] is None  # 0 in A: no ratio
    # Rate arms and untraced arms carry nothing new.
    assert all("components" not in arm for arm in doc["comparisons"][0]["arms"] if arm["arm"] != "event")
    status, out, err = run_compare(capsys, a, b)
    assert status == 0 and err == ""
    assert ("event: the component that moved most: notify path p50 3.25 µs in A, 8.24 in B (+5.00 µs, CI +"
            in " ".join(out.split()))
    table = out.split("where the time goes (µs)", 1)[1].split("\n\n", 1)[0].splitlines()
    rows = [" ".join(line.split()) for line in table[1:]]
    assert rows[0].startswith("event notify * 200/200 3.25 8.24 +5.00 (")
    assert not any(row.startswith("other") for row in rows)  # 0 in both runs: left out
    assert "* marks the component that moved most" in " ".join(out.split())


def test_traced_runs_with_nothing_moved_say_so(tmp_path, lab135_bundle, capsys) -> None:
    a = add_trace(modified_copy(lab135_bundle, tmp_path / "ta"), "event", traced_components())
    b = add_trace(modified_copy(lab135_bundle, tmp_path / "tb"), "event", traced_components())
    status, doc = compare_json(capsys, a, b)
    found = next(arm for arm in doc["comparisons"][0]["arms"] if arm["arm"] == "event")["components"]
    assert (found["moved_most"], found["significant"]) == (None, False)
    _, out, _ = run_compare(capsys, a, b)
    assert "event: no component's p50 moved" in out


def test_untraced_runs_compare_as_before(tmp_path, lab135_bundle, capsys) -> None:
    status, doc = compare_json(capsys, lab135_bundle, lab135_bundle)
    assert all("components" not in arm for arm in doc["comparisons"][0]["arms"])
    _, out, _ = run_compare(capsys, lab135_bundle, lab135_bundle)
    assert "where the time goes" not in out.lower() and "--trace" not in out
    # One run traced, the other not: said, and nothing compared.
    b = add_trace(modified_copy(lab135_bundle, tmp_path / "tb"), "event", traced_components())
    status, doc = compare_json(capsys, lab135_bundle, b)
    event = next(arm for arm in doc["comparisons"][0]["arms"] if arm["arm"] == "event")
    assert "components" not in event
    assert "only B was traced: where the time goes is not compared" in event["notes"]


@pytest.mark.parametrize("damage, message", [
    (lambda doc: doc["traced"]["components_ns"]["notify"].__setitem__(0, 10**9), "do not sum"),
    (lambda doc: doc["traced"]["components_ns"].pop("gil_wait"), "component gil_wait must be 200"),
    (lambda doc: doc.pop("traced"), "has no traced part"),
    # Consistent in itself, but one wake fewer than summary.json's trace.components.wakes.
    (lambda doc: [v.pop() for v in [doc["traced"]["samples_ns"], *doc["traced"]["components_ns"].values()]],
     "traced wakes 199 from the samples, 200 in the summary"),
])
def test_a_damaged_traced_part_is_one_line(tmp_path, lab135_bundle, capsys, damage, message) -> None:
    a = add_trace(modified_copy(lab135_bundle, tmp_path / "ta"), "event", traced_components())
    b = add_trace(modified_copy(lab135_bundle, tmp_path / "tb"), "event", traced_components())
    path = os.path.join(b, "samples", "event.json")
    doc = read_json(path)
    damage(doc)
    bundle.atomic_write_text(path, json.dumps(doc))
    status, out, err = run_compare(capsys, a, b)
    assert status == 2 and out == ""
    assert err.startswith("wakelab: ") and err.count("\n") == 1 and message in err, err


def test_compare_and_the_ab_gate_word_their_regression_check_alike() -> None:
    from wakelab.commands.compare import regression_items

    slower = cmp.Regression("head", "event", "p99", 1.25)
    assert regression_items([slower], "base", 10, ["p50", "p99"], ["queue in head: not tested (too few samples)"]) == [
        "FAIL: event in head is slower than in base: 1.25× at p99, above the 1.10× limit",
        "not checked: queue in head: not tested (too few samples)"]
    assert regression_items([], "base", 10, ["p50"], [], head="head") == [
        "pass: no arm of head is slower than base by more than 10% at p50"]
    # A gate that could not answer does not pass.
    assert regression_items([], "base", 10, ["p50"], [], ["pipe has no figures on both sides"], "head") == [
        "error: pipe has no figures on both sides"]
