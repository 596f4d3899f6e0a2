"""The two-level bootstrap (:mod:`wakelab.analysis.hierarchical`) and the verdicts built on it.

Direction is asserted only on synthetic bundles (slices drawn from fixed generators and written
through the evidence writer); real runs are used where their timing cannot decide the outcome (a
planted 2 ms delay against wakes of tens of µs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import pytest

from conftest import build_lab135_summary, summarize_raw
from wakelab.analysis import compare as cmp
from wakelab.analysis import hierarchical as hb
from wakelab.cli import main
from wakelab.core.model import RawLatency, RawRate, raw_to_dict
from wakelab.evidence import bundle
from wakelab.evidence.arms import WorkerRecord

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
ALLOWED_AA = {cmp.NO_DIFFERENCE, cmp.CANNOT_TELL}


# ---------------------------------------------------------------------------
# Synthetic bundles: worker slices written through the evidence writer
# ---------------------------------------------------------------------------


def draw_slices(seed: int, level_ns: float, slices: int = 3, n: int = 400, between: float = 0.05,
                within: float = 0.3, tail: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> List[List[int]]:
    """``slices`` worker slices of ``n`` wakes: each slice's level varies by ``between`` (log sd), wakes by ``within``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(slices):
        level = level_ns * np.exp(rng.normal(0.0, between))
        wakes = level * rng.lognormal(0.0, within, size=n)
        if tail is not None:
            wakes = tail(wakes)
        out.append([max(1, int(v)) for v in wakes])
    return out


DEFAULT_ROUNDS = [[20_000_000, 18_000_000, 19_000_000], [21_000_000, 22_000_000], [20_500_000, 19_500_000]]


def slices_bundle(folder, latency: Dict[str, Sequence[Sequence[int]]],
                  rounds: Sequence[Sequence[int]] = DEFAULT_ROUNDS,
                  edit: Optional[Callable[[Dict], None]] = None) -> str:
    """A Lab 135 bundle whose arms hold the given worker slices (event, sigusr1-self: wakes; signal-install: rounds)."""
    summary = build_lab135_summary()
    os.makedirs(str(folder), exist_ok=True)
    for entry in summary["arms"]:  # type: ignore[union-attr]
        name = entry["name"]
        applied = {"cpu_threads": 0, "switch_interval_s": 0.005}
        if entry["kind"] == "latency":
            parts = latency[name]
            raw = RawLatency(samples_ns=tuple(v for part in parts for v in part), lost=0, warmup_discarded=10)
            workers = [{"pid": 1000 + i, "applied": applied, "n": len(p), "lost": 0,
                        "p50_ns": float(np.percentile(p, 50)), "max_ns": max(p)} for i, p in enumerate(parts)]
        else:
            pooled = tuple(v for part in rounds for v in part)
            raw = RawRate(n_per_round=20000, round_ns=pooled, baseline_round_ns=(400_000,) * len(pooled),
                          warmup_rounds=1)
            workers = [{"pid": 2000 + i, "applied": applied, "rounds": len(p),
                        "ops_per_s": 20000 * 1e9 / float(np.median(p))} for i, p in enumerate(rounds)]
        summarize_raw(entry, raw)
        entry["workers"] = workers
        bundle.write_samples(str(folder), name, bundle.samples_doc(name, raw_to_dict(raw)))
    if edit is not None:
        edit(summary)
    bundle.atomic_write_text(os.path.join(str(folder), bundle.SUMMARY_JSON), bundle.dumps(summary))
    return str(folder)


def lab_slices(seed: int, event_scale: float = 1.0, signal_scale: float = 1.0, **kwargs) -> Dict[str, List[List[int]]]:
    return {"event": draw_slices(seed, 20_000 * event_scale, **kwargs),
            "sigusr1-self": draw_slices(seed + 1, 2_400 * signal_scale, **kwargs)}


def compare_json(capsys, *args: str):
    status = main(["compare", "--json", *args])
    out, err = capsys.readouterr()
    assert err == ""
    doc = json.loads(out)
    assert doc["exit_status"] == status
    return status, doc


def arms_of(doc, index: int = 0) -> Dict[str, Dict]:
    return {arm["arm"]: arm for arm in doc["comparisons"][index]["arms"]}


def run_cli(*args: str):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, env=env,
                          timeout=300)


# ---------------------------------------------------------------------------
# The bootstrap itself
# ---------------------------------------------------------------------------


def test_units_are_the_worker_slices_and_fall_back_to_one() -> None:
    values = list(range(10))
    units = hb.split_units(values, [4, 0, 6])
    assert units.sizes == (4, 6) and units.note is None
    assert units.values[1].tolist() == [4.0, 5, 6, 7, 8, 9]
    assert hb.split_units(values, None).sizes == (10,)
    assert "no worker slices" in str(hb.split_units(values, None).note)
    mismatch = hb.split_units(values, [4, 4])
    assert mismatch.sizes == (10,) and "do not add up" in str(mismatch.note)
    def workers(*records: object) -> List[WorkerRecord]:
        return [WorkerRecord.from_dict(r) for r in records]

    assert hb.slice_sizes(workers({"n": 3}, {"n": 4}), "n") == [3, 4]
    assert hb.slice_sizes(workers({"rounds": 3}, {"n": 4}), "rounds") is None  # one record without it
    assert hb.slice_sizes(workers({"n": True}), "n") is None
    assert hb.slice_sizes(workers({"n": 3}, "not a record"), "n") is None
    assert hb.slice_sizes(None, "n") is None and hb.slice_sizes([], "n") is None


def _spread(boot) -> float:
    low, high = np.percentile(boot, [2.5, 97.5])
    return float(high / low)


def test_first_stage_sees_level_shifts_between_units() -> None:
    # Three slices at 10, 15 and 22 µs: a one-level bootstrap of the pooled wakes is narrow, the
    # two-level one must be several times wider (it resamples the slices).
    slices = [np.full(300, level) + np.arange(300) % 7 for level in (10_000.0, 15_000.0, 22_000.0)]
    two = hb.resample_percentiles(hb.Units(tuple(slices)), [50.0], 2000, np.random.default_rng(1))[0]
    one = hb.resample_percentiles(hb.Units((np.concatenate(slices),)), [50.0], 2000, np.random.default_rng(1))[0]
    assert _spread(one) < 1.1
    assert _spread(two) > 1.5


def test_second_stage_resamples_wakes_within_units() -> None:
    # Every unit holds the same wakes: only the within-unit draws can move the percentile.
    same = np.arange(1_000.0, 1_300.0)
    boot = hb.resample_percentiles(hb.Units((same, same, same)), [50.0], 2000, np.random.default_rng(2))[0]
    assert boot.std() > 0
    assert 1_120 < np.percentile(boot, 2.5) < 1_150 < np.percentile(boot, 97.5) < 1_180


def _ks(a, b) -> float:
    """The two-sample Kolmogorov-Smirnov statistic."""
    grid = np.sort(np.concatenate([a, b]))
    fa = np.searchsorted(np.sort(a), grid, side="right") / a.size
    fb = np.searchsorted(np.sort(b), grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


@pytest.mark.parametrize("sizes", [(300, 300, 300), (100, 250, 400), (1000, 1500, 2000)])
def test_direct_and_binned_methods_agree(sizes) -> None:
    rng = np.random.default_rng(3)
    # The last case holds more distinct values than BINS: the binned method bins them, and must still agree.
    units = hb.Units(tuple(rng.lognormal(np.log(10_000) + shift, 0.5, size=n) for n, shift in zip(sizes, (0, .3, -.2))))
    qs = [50.0, 99.0]
    direct = hb.resample_percentiles(units, qs, 4000, np.random.default_rng(4), hb.DIRECT)
    binned = hb.resample_percentiles(units, qs, 4000, np.random.default_rng(5), hb.BINNED)
    for i in range(len(qs)):
        # Same distribution: the KS distance stays within sampling noise (0.044 at 4000 each, alpha 0.001).
        assert _ks(direct[i], binned[i]) < 0.05, qs[i]
        assert abs(np.median(direct[i]) / np.median(binned[i]) - 1) < 0.03


def test_binned_method_is_exact_with_few_distinct_values() -> None:
    rng = np.random.default_rng(5)
    units = hb.Units(tuple(rng.integers(100, 140, size=300).astype(float) for _ in range(3)))
    qs = [50.0, 90.0]
    direct = hb.resample_percentiles(units, qs, 20_000, np.random.default_rng(6), hb.DIRECT)
    binned = hb.resample_percentiles(units, qs, 20_000, np.random.default_rng(7), hb.BINNED)
    # Same distribution: means agree to well within their standard errors, and the values are the data's.
    for i in range(len(qs)):
        se = direct[i].std() / np.sqrt(direct[i].size) * 2
        assert abs(direct[i].mean() - binned[i].mean()) < 4 * se + 1e-9
    assert set(np.unique(binned[0] * 2).tolist()) <= set(range(200, 281))  # halves: interpolated neighbours


def test_memory_stays_bounded_for_large_samples() -> None:
    rng = np.random.default_rng(8)
    big = hb.Units(tuple(rng.lognormal(9.0, 0.5, size=200_000) for _ in range(3)))
    middling = hb.Units(tuple(rng.lognormal(9.0, 0.5, size=5_000) for _ in range(3)))
    assert hb.choose_method(big) == hb.BINNED and hb.choose_method(middling) == hb.DIRECT
    for units, resamples in ((big, 300), (middling, 2000)):
        tracemalloc.start()
        try:
            out = hb.resample_percentiles(units, [50.0, 99.0, 99.9], resamples, np.random.default_rng(9))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert out.shape == (3, resamples) and np.all(np.isfinite(out))
        # Unchunked, the middling case alone would hold 2000 x 15000 values several times over (> 700 MB).
        assert peak < 120 * 2**20, peak


def test_few_units_widen_the_spread_by_the_small_sample_factor() -> None:
    boot = np.array([5.0, 10.0, 20.0])
    # K = 3: the log-distance from the point grows by sqrt(3/2).
    widened = hb.widen_for_few_units(10.0, boot, 3)
    assert widened[1] == 10.0
    assert np.log(widened[2] / 10.0) == pytest.approx(np.log(2.0) * np.sqrt(1.5))
    assert np.log(10.0 / widened[0]) == pytest.approx(np.log(2.0) * np.sqrt(1.5))
    assert hb.widen_for_few_units(10.0, boot, 1).tolist() == boot.tolist()  # one unit: one-level bootstrap
    assert hb.widen_for_few_units(10.0, np.array([0.0, 10.0]), 3).tolist() == [0.0, 10.0]  # a 0: left alone


def test_comparisons_widen_both_runs_for_few_units(tmp_path, capsys, monkeypatch) -> None:
    a = slices_bundle(tmp_path / "a", lab_slices(1))
    b = slices_bundle(tmp_path / "b", lab_slices(2))

    def width(doc) -> float:
        p50 = arms_of(doc)["event"]["ratios"]["p50"]
        return float(np.log(p50["ci_high"] / p50["ci_low"]))

    widened = width(compare_json(capsys, a, b)[1])
    calls = []
    original = hb.widen_for_few_units

    def only_baseline(point, boot, units):  # called for the baseline, then the other run, per percentile
        calls.append(units)
        return original(point, boot, units) if len(calls) % 2 else boot

    monkeypatch.setattr(hb, "widen_for_few_units", only_baseline)
    half = width(compare_json(capsys, a, b)[1])
    monkeypatch.setattr(hb, "widen_for_few_units", lambda point, boot, units: boot)
    plain = width(compare_json(capsys, a, b)[1])
    assert plain < half < widened


def test_resample_percentiles_rejects_bad_settings() -> None:
    units = hb.Units((np.arange(10.0),))
    for kwargs, message in (({"resamples": 0}, "resamples"), ({"qs": [101.0]}, "percentile"),
                            ({"method": "magic"}, "method")):
        args = {"units": units, "qs": [50.0], "resamples": 10, "rng": np.random.default_rng(0)}
        args.update(kwargs)
        with pytest.raises(ValueError, match=message):
            hb.resample_percentiles(**args)


# ---------------------------------------------------------------------------
# Verdicts on synthetic bundles
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seeds", [(10, 20), (30, 40), (50, 60)])
def test_identical_runs_never_differ(tmp_path, capsys, seeds) -> None:
    a = slices_bundle(tmp_path / "a", lab_slices(seeds[0]))
    b = slices_bundle(tmp_path / "b", lab_slices(seeds[1]))
    status, doc = compare_json(capsys, a, b, "--fail-on-regression", "0")
    assert status == 0
    for arm in doc["comparisons"][0]["arms"]:
        assert arm["units_baseline"] == arm["units_other"] == 3
        for key, ratio in arm["ratios"].items():
            assert ratio["verdict"] in ALLOWED_AA, (arm["arm"], key, ratio)
            assert ratio["min_detectable_effect_pct"] is not None and ratio["min_detectable_effect_pct"] > 5.0


def test_a_level_shift_between_runs_is_not_hidden_by_many_wakes(tmp_path, capsys) -> None:
    # Slices that disagree by ±30% (a run-to-run level shift) and 2000 wakes each: a pooled
    # bootstrap would call a 10% difference certain; the two-level one cannot tell.
    a = slices_bundle(tmp_path / "a", lab_slices(1, n=2000, between=0.3))
    b = slices_bundle(tmp_path / "b", lab_slices(2, event_scale=1.1, n=2000, between=0.3))
    status, doc = compare_json(capsys, a, b)
    event = arms_of(doc)["event"]
    assert event["ratios"]["p50"]["verdict"] == cmp.CANNOT_TELL
    assert event["ratios"]["p50"]["spread_pct"] > 10
    assert any(note.startswith("p50 cannot tell: repetitions vary ±") for note in event["notes"])


def test_a_fifty_percent_slower_run_is_slower(tmp_path, capsys) -> None:
    a = slices_bundle(tmp_path / "a", lab_slices(1))
    b = slices_bundle(tmp_path / "b", lab_slices(2, event_scale=1.5, signal_scale=1.5))
    status, doc = compare_json(capsys, a, b, "--fail-on-regression", "10", "--metric", "p50")
    assert status == 1
    arms = arms_of(doc)
    assert arms["event"]["verdict"] == arms["sigusr1-self"]["verdict"] == cmp.SLOWER
    p50 = arms["event"]["ratios"]["p50"]
    assert 1.3 < p50["ratio"] < 1.7 and 1.05 < p50["ci_low"] < p50["ratio"] < p50["ci_high"] < 2.0
    # The other way round it is faster.
    status, doc = compare_json(capsys, b, a)
    assert arms_of(doc)["event"]["verdict"] == cmp.FASTER


def test_min_effect_moves_the_verdict(tmp_path, capsys) -> None:
    # 8% slower with tight slices: slower against a 5% threshold, no difference against 20%.
    a = slices_bundle(tmp_path / "a", lab_slices(1, between=0.005, within=0.05, n=2000))
    b = slices_bundle(tmp_path / "b", lab_slices(2, event_scale=1.08, between=0.005, within=0.05, n=2000))
    assert arms_of(compare_json(capsys, a, b)[1])["event"]["verdict"] == cmp.SLOWER
    status, doc = compare_json(capsys, a, b, "--min-effect", "20")
    assert arms_of(doc)["event"]["verdict"] == cmp.NO_DIFFERENCE
    assert doc["settings"]["min_effect_pct"] == 20.0


def test_p99_9_is_judged_only_when_both_runs_have_a_thousand_wakes(tmp_path, capsys) -> None:
    small = slices_bundle(tmp_path / "small", lab_slices(1, n=300))
    large_a = slices_bundle(tmp_path / "la", lab_slices(1, n=400))
    large_b = slices_bundle(tmp_path / "lb", lab_slices(2, n=400))
    assert set(arms_of(compare_json(capsys, small, large_b)[1])["event"]["ratios"]) == {"p50", "p99"}
    event = arms_of(compare_json(capsys, large_a, large_b)[1])["event"]  # 3 x 400 = 1200 wakes
    assert set(event["ratios"]) == {"p50", "p99", "p99_9"}
    assert event["ratios"]["p99_9"]["verdict"] in (cmp.FASTER, cmp.SLOWER, cmp.NO_DIFFERENCE, cmp.CANNOT_TELL, cmp.NOT_TESTED)


def _cpu_threads(value: int) -> Callable[[Dict], None]:
    return lambda summary: summary["conditions"].update(cpu_threads=value)


def test_tail_regression_fails_even_when_the_median_improves(tmp_path, capsys) -> None:
    # Like --cpu-threads 0,1: the busy thread keeps the CPU awake (p50 0.56x) but 2% of wakes wait for
    # the GIL switch interval (p99 100x worse).
    def gil_tail(wakes: np.ndarray) -> np.ndarray:
        out = wakes.copy()
        out[::50] *= 400  # 2% of the wakes
        return out

    a = slices_bundle(tmp_path / "threads0", lab_slices(1, n=400), edit=_cpu_threads(0))
    b = slices_bundle(tmp_path / "threads1", lab_slices(2, event_scale=0.56, n=400, tail=gil_tail),
                      edit=_cpu_threads(1))
    result = run_cli("compare", a, b)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().endswith("conditions differ (cpu_threads 0 vs 1): not the same experiment (name it "
                                          "with --across cpu-threads to compare on purpose)")
    status, doc = compare_json(capsys, a, b, "--across", "cpu-threads", "--fail-on-regression", "10")
    assert status == 1
    event = arms_of(doc)["event"]
    assert event["verdict"] == cmp.FASTER and event["ratios"]["p50"]["ratio"] < 0.7
    assert event["ratios"]["p99"]["verdict"] == cmp.SLOWER and event["ratios"]["p99"]["ratio"] > 50
    assert event["tail_regression"] == "p99"
    assert {(r["arm"], r["metric"]) for r in doc["regression_check"]["regressions"]} >= {("event", "p99")}
    assert doc["comparisons"][0]["across"] == ["cpu_threads 0 vs 1"]
    # The text names it too.
    status = main(["compare", a, b, "--across", "cpu-threads", "--fail-on-regression", "10"])
    out = " ".join(capsys.readouterr().out.split())
    assert status == 1
    assert "event: tail regression: p99 is slower" in out and "while the p50 is faster" in out
    assert "FAIL: event in B is slower than in A" in out and "at p99" in out
    assert "across: cpu_threads 0 vs 1" in out


def test_across_names_only_what_it_names(tmp_path, capsys) -> None:
    def split(summary: Dict) -> None:
        summary["parameters"].update(placement="split", notifier_cpu=0, waiter_cpu=1)
        summary["conditions"].update(cpu_threads=1)

    a = slices_bundle(tmp_path / "a", lab_slices(1))
    b = slices_bundle(tmp_path / "b", lab_slices(2), edit=split)
    # Naming placement alone still refuses the cpu_threads difference.
    result = run_cli("compare", a, b, "--across", "placement")
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert "conditions differ (cpu_threads 0 vs 1)" in result.stderr
    status, doc = compare_json(capsys, a, b, "--across", "placement,cpu-threads")
    assert status == 0
    comparison = doc["comparisons"][0]
    assert comparison["across"] == ["placement any vs split", "notifier_cpu None vs 0", "waiter_cpu None vs 1",
                                    "cpu_threads 0 vs 1"]
    assert comparison["warnings"] == []  # pinned CPUs are part of the placement compared on purpose


def test_json_keeps_every_figure(tmp_path, capsys) -> None:
    a = slices_bundle(tmp_path / "a", lab_slices(1))
    b = slices_bundle(tmp_path / "b", lab_slices(2))
    status, doc = compare_json(capsys, a, b)
    assert doc["schema_version"] == 2
    for arm in doc["comparisons"][0]["arms"]:
        for ratio in arm["ratios"].values():
            for key in ("baseline", "other", "ratio", "ci_low", "ci_high", "verdict", "spread_pct",
                        "min_detectable_effect_pct", "reason", "confidence", "resamples", "q"):
                assert key in ratio
        assert "mann_whitney" in arm and "tail_regression" in arm


# ---------------------------------------------------------------------------
# Real runs whose timing cannot decide the outcome
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def planted_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    plain, delayed = str(root / "plain"), str(root / "delayed")
    for folder, extra in ((plain, []), (delayed, ["--planted-delay-us", "2000"])):
        result = run_cli("run", "--arms", "event,sigusr1-self", "--n", "300", "-q", "--no-history", "-o", folder, *extra)
        assert result.returncode == 0, result.stderr
    return plain, delayed


def test_a_planted_delay_compares_as_slower(planted_pair, capsys) -> None:
    plain, delayed = planted_pair
    result = run_cli("compare", plain, delayed)
    assert result.returncode == 2
    assert "--across planted-delay" in result.stderr and len(result.stderr.splitlines()) == 1
    status, doc = compare_json(capsys, plain, delayed, "--across", "planted-delay", "--fail-on-regression", "10")
    assert status == 1
    arms = arms_of(doc)
    assert arms["event"]["verdict"] == cmp.SLOWER
    assert arms["event"]["units_baseline"] >= 2  # the worker slices of a real run
    assert arms["event"]["ratios"]["p50"]["ci_low"] > 1.05
    assert doc["comparisons"][0]["across"] == ["planted_delay_us 0 vs 2000"]


def test_a_real_run_against_its_slices_reordered(planted_pair, tmp_path, capsys) -> None:
    # The same wakes, the worker slices in another order: an identical run.
    import shutil

    plain = planted_pair[0]
    other = str(tmp_path / "reordered")
    shutil.copytree(plain, other)
    with open(os.path.join(other, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    for entry in summary["arms"]:
        if entry["kind"] != "latency" or entry["status"] != "ok":
            continue
        path = os.path.join(other, entry["samples_file"])
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        bounds = np.cumsum([0] + [w["n"] for w in entry["workers"]])
        parts = [doc["samples_ns"][bounds[i]:bounds[i + 1]] for i in range(len(entry["workers"]))]
        doc["samples_ns"] = [v for part in reversed(parts) for v in part]
        entry["workers"] = list(reversed(entry["workers"]))
        for key in ("waiter_cpu", "notifier_cpu"):
            if key in doc:
                doc[key] = [v for part in reversed([doc[key][bounds[i]:bounds[i + 1]] for i in range(len(parts))])
                            for v in part]
        bundle.atomic_write_text(path, json.dumps(doc))
    bundle.atomic_write_text(os.path.join(other, "summary.json"), bundle.dumps(summary))
    status, doc = compare_json(capsys, plain, other, "--fail-on-regression", "0")
    assert status == 0
    for arm in doc["comparisons"][0]["arms"]:
        assert arm["verdict"] in ALLOWED_AA
        for ratio in arm["ratios"].values():
            assert ratio["ratio"] == 1.0 and ratio["verdict"] in ALLOWED_AA
