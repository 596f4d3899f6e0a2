"""Soak runs (``wakelab run --duration``) and the log-linear histogram they carry the distribution in.

The histogram is checked against two independent oracles: numpy's percentiles
of the raw samples (within the stated precision) and the ``hdrh`` package's
HdrHistogram (same counters, and its decoder reads the encoded form).  The soak
is checked for behaviour: a valid bundle whose figures say where they come
from, bounded memory by count (raw samples capped, histogram counts adding
up), Ctrl-C leaving the last checkpoint readable, and bad command lines.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List

import numpy as np
import pytest

from wakelab.analysis.hdr import (
    COUNTS_LEN,
    RELATIVE_ERROR,
    LogLinearHistogram,
    counter_range,
    counts_index,
    encode_hdr,
)
from wakelab.core.model import MeasureParams
from wakelab.evidence.load import load_samples, load_summary
from wakelab.evidence.model import WorkerRecord
from wakelab.harness.runner import Execution, RunPlan
from wakelab.harness.soak import (
    MAX_CHUNK_WAKES,
    SoakState,
    _Chunk,
    check_soak,
    next_chunk_wakes,
    parse_duration_s,
    run_soak,
)
from wakelab.labs import LAB_135, RunShape, lab_for_run

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
PERCENTILES = (0.0, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0)


def _distributions() -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(135)
    return {
        "lognormal": rng.lognormal(9.5, 1.0, 100_000).astype(np.int64),
        "heavy tail": (rng.pareto(1.2, 50_000) * 3000 + 1500).astype(np.int64),
        "small values": rng.integers(0, 2048, 10_000),
        "two modes": np.concatenate([rng.normal(5_000, 300, 30_000), rng.normal(22_000, 2_000, 10_000)]).astype(np.int64),
        "one value": np.full(7, 123_456, dtype=np.int64),
    }


# --- the histogram -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(_distributions()))
def test_histogram_percentiles_are_within_the_stated_precision_of_numpy(name: str) -> None:
    values = _distributions()[name]
    hist = LogLinearHistogram()
    hist.record_many(values[: len(values) // 3])
    hist.record_many(values[len(values) // 3 :])  # recorded in two chunks, as a soak does
    for q in PERCENTILES:
        exact = float(np.percentile(values, q))  # numpy's default is type 7, as wakelab.analysis.stats
        got = hist.percentile_ns(q)
        assert abs(got - exact) <= exact * RELATIVE_ERROR, (q, got, exact)
        if exact < 2048:
            assert got == pytest.approx(exact, abs=1e-9)  # one counter per ns below 2048: exact
    assert hist.total == len(values) and sum(hist.counts) == len(values)
    assert (hist.min_ns, hist.max_ns) == (int(values.min()), int(values.max()))
    assert hist.mean_ns == pytest.approx(float(values.mean()), rel=1e-12)
    if len(values) > 1:
        assert hist.stdev_ns == pytest.approx(float(values.std(ddof=1)), rel=1e-9, abs=1e-9)


def test_histogram_figures_follow_the_summary_rules() -> None:
    hist = LogLinearHistogram()
    hist.record_many([1000 + i for i in range(150)])
    figures = hist.latency_figures(lost=2)
    assert figures["n"] == 150 and figures["lost"] == 2 and figures["min_ns"] == 1000 and figures["max_ns"] == 1149
    assert figures["p99_ns"] is not None and figures["p99_9_ns"] is None
    assert figures["omitted"] == {"p99_9": "needs n >= 1000, this arm has n = 150"}


def test_every_counter_holds_values_within_one_part_in_1024() -> None:
    for index in list(range(0, 4096)) + list(range(4096, COUNTS_LEN, 97)) + [COUNTS_LEN - 1]:
        low, width = counter_range(index)
        assert counts_index(low) == index and counts_index(low + width - 1) == index
        assert width == 1 or width / low <= 1 / 1024
    assert counts_index(2**63 - 1) == COUNTS_LEN - 1


def test_values_beyond_float_precision_are_indexed_exactly() -> None:
    big = [2**53 + 1, 2**60 + 12345, 2**63 - 1]
    hist = LogLinearHistogram()
    hist.record_many(big)
    assert hist.nonzero() == sorted([[counts_index(v), 1] for v in big])
    with pytest.raises(ValueError):
        hist.record_many([5, -1])


def test_histogram_round_trips_through_its_evidence_form() -> None:
    values = _distributions()["lognormal"]
    hist = LogLinearHistogram()
    hist.record_many(values)
    again = LogLinearHistogram.from_dict(json.loads(json.dumps(hist.to_dict())))
    assert again.counts == hist.counts and again.total == hist.total
    assert again.percentiles_ns([50, 99]) == hist.percentiles_ns([50, 99])
    assert again.stdev_ns == pytest.approx(hist.stdev_ns)
    broken = hist.to_dict()
    broken["total"] += 1
    with pytest.raises(ValueError, match="add up"):
        LogLinearHistogram.from_dict(broken)


def test_histogram_has_hdrhistograms_counters_and_encoded_form() -> None:
    hdrh = pytest.importorskip("hdrh.histogram")
    values = np.concatenate([_distributions()["heavy tail"], np.array([0, 1, 2047, 2048, 10**12])])
    ours = LogLinearHistogram()
    ours.record_many(values)
    theirs = hdrh.HdrHistogram(1, 2**62, 3)
    for value in values[::7]:
        assert theirs.get_counts_array_index(int(value)) == counts_index(int(value))
    decoded = hdrh.HdrHistogram.decode(encode_hdr(ours))
    assert decoded.get_total_count() == len(values)
    assert {i: c for i, c in ours.nonzero()} == {i: int(decoded.get_count_at_index(i)) for i, _ in ours.nonzero()}
    for q in (50.0, 90.0, 99.0, 99.9):
        exact = float(np.percentile(values, q))
        # HdrHistogram reports a counter's highest value: within its own 1/1024.
        assert abs(decoded.get_value_at_percentile(q) - exact) <= exact / 1024 + 1


# --- the soak's bookkeeping, without processes ---------------------------------------------------


def _chunk(values: List[int], lost: int = 0) -> _Chunk:
    return _Chunk(values, {}, WorkerRecord(pid=1, n=len(values), lost=lost, warmup_discarded=10))


def test_raw_samples_stop_at_the_cap_in_whole_chunks_and_the_histogram_counts_every_wake() -> None:
    state = SoakState(raw_cap=250)
    sizes = [100, 100, 100, 60, 100]
    for number, size in enumerate(sizes):
        state.fold(_chunk([1000 * (number + 1) + i for i in range(size)], lost=1))
    assert len(state.kept) == 200 and len(state.slices) == 2  # the third chunk would pass the cap: kept no more
    assert list(state.kept[:3]) == [1000, 1001, 1002] and state.kept[-1] == 2099
    assert state.n == sum(sizes) and sum(state.histogram.counts) == sum(sizes)
    assert state.lost == len(sizes) and state.kept_lost == 2 and state.warmup_discarded == 10 * len(sizes)
    record = state.soak_figures().to_dict()
    assert record["percentiles_from"] == "histogram"
    assert record["from_histogram"] == ["p50_ns", "p90_ns", "p99_ns", "p99_9_ns"]
    assert {"n", "lost", "min_ns", "max_ns", "mean_ns"} <= set(record["exact"])
    assert record["precision"]["p50_ns"]["relative_error"] == RELATIVE_ERROR
    figures = state.latency_figures()
    assert figures["n"] == sum(sizes) and figures["min_ns"] == 1000 and figures["max_ns"] == 5099


def test_while_every_wake_is_kept_the_figures_are_exact() -> None:
    state = SoakState(raw_cap=1000)
    state.fold(_chunk([5, 7, 9, 11]))
    assert state.every_wake_kept and state.soak_figures().to_dict()["from_histogram"] == []
    assert state.latency_figures()["p50_ns"] == 8.0


def test_chunks_are_bounded_and_never_outlast_the_time_left() -> None:
    params = MeasureParams(settle_us=1000, settle_jitter_us=0)
    assert next_chunk_wakes(None, 100.0, params) == int(1.0 / 1020e-6)
    # A random part of the settle adds its mean to every wake.
    assert next_chunk_wakes(None, 100.0, MeasureParams(settle_us=1000, settle_jitter_us=2000)) == int(1.0 / 2020e-6)
    assert next_chunk_wakes(1_000_000.0, 100.0, params) == MAX_CHUNK_WAKES
    assert next_chunk_wakes(1000.0, 0.5, params) == 500
    assert next_chunk_wakes(1000.0, 1e-6, params) == 1


@pytest.mark.parametrize(
    "text, seconds",
    [("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("2h", 7200.0), ("1d", 86400.0), ("1h30m", 5400.0), ("1.5m", 90.0), (" 5S ", 5.0)],
)
def test_durations_read_like_cyclictests(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["0", "0s", "-5m", "abc", "", "5x", "m", "5m3", "0.5", "31d", "nan", "inf"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration_s(text)


def test_a_zero_duration_is_refused_as_not_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        parse_duration_s("0m")


# --- real soaks ----------------------------------------------------------------------------------


def _plan(folder: str, arm: str = "event", **params: Any) -> RunPlan:
    return RunPlan(
        lab=lab_for_run(LAB_135, [arm], RunShape(in_process=False, workers=1)),
        arm_names=[arm],
        params=MeasureParams(n=1, warmup=5, settle_us=200, **params),
        folder=folder,
        execution=Execution(workers=1),
    )


def test_a_soak_past_its_raw_cap_takes_its_percentiles_from_the_histogram_and_says_so(tmp_path) -> None:
    events: List[str] = []
    summary, error = run_soak(_plan(str(tmp_path)), 3.0, lambda event, info: events.append(event), raw_cap=1500, checkpoint_s=1.0)
    assert error is None and summary["complete"] is True
    entry = summary["arms"][0]
    soak = summary["soak"]
    assert entry["status"] == "ok" and soak["finished"] is True and soak["chunks"] >= 2
    assert soak["duration_s"] == 3.0 and soak["elapsed_s"] >= 3.0
    # Bounded by count: the raw samples stop at the cap, the histogram holds every wake.
    latency = entry["latency"]
    assert latency["n"] > soak["raw_cap"] >= soak["raw_kept"] > 0
    assert soak["histogram"]["recorded"] == latency["n"] and entry["requested"] == latency["n"] + latency["lost"]
    assert soak["figures"]["percentiles_from"] == "histogram"
    assert set(soak["figures"]["from_histogram"]) == {"p50_ns", "p90_ns", "p99_ns", "p99_9_ns"}
    assert soak["figures"]["precision"]["p99_ns"]["relative_error"] == RELATIVE_ERROR
    on_disk = load_summary(str(tmp_path))
    assert on_disk["soak"]["figures"] == soak["figures"]
    samples = load_samples(str(tmp_path), on_disk["arms"][0])
    assert len(samples["samples_ns"]) == soak["raw_kept"] == sum(w["n"] for w in entry["workers"])
    hist = LogLinearHistogram.from_dict(samples["histogram"])
    assert hist.total == latency["n"] and hist.latency_figures(latency["lost"])["p50_ns"] == latency["p50_ns"]
    assert events[0] == "arm-start" and "soak-progress" in events and events[-1] == "arm-done"


def test_an_open_loop_soak_keeps_its_schedule(tmp_path) -> None:
    summary, error = run_soak(_plan(str(tmp_path), mode="open", interval_us=2000), 2.0, checkpoint_s=1.0)
    entry = summary["arms"][0]
    assert error is None and entry["status"] == "ok" and summary["soak"]["finished"] is True
    # On a loaded machine an open-loop wake may come after the next notify (coalesced: lost), as in any run.
    assert entry["info"]["mode"] == "open" and entry["latency"]["n"] > 100
    assert entry["requested"] == entry["latency"]["n"] + entry["latency"]["lost"]
    # Every wake kept: the percentiles are exact, and the evidence says so.
    assert summary["soak"]["figures"]["percentiles_from"] == "raw" and summary["soak"]["figures"]["from_histogram"] == []


def _wakelab(*args: str, **kwargs: Any) -> "subprocess.Popen[str]":
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.Popen([sys.executable, "-m", "wakelab", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, **kwargs)


def test_a_five_second_soak_of_event_from_the_command_line(tmp_path) -> None:
    out = tmp_path / "soak"
    proc = _wakelab("run", "--arms", "event", "--duration", "5s", "--settle-us", "200", "-o", str(out), "--no-history", "--json")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    summary = load_summary(str(out))
    assert json.loads(stdout)["run_id"] == summary["run_id"]
    assert summary["complete"] is True and summary["soak"]["finished"] is True and summary["soak"]["duration_s"] == 5.0
    entry = summary["arms"][0]
    assert entry["status"] == "ok" and entry["latency"]["n"] > 0
    # Under the cap every wake is kept: exact, and flagged so; the histogram is there all the same.
    figures = summary["soak"]["figures"]
    assert figures["percentiles_from"] == "raw" and "p99_ns" in figures["exact"]
    samples = load_samples(str(out), entry)
    assert len(samples["samples_ns"]) == entry["latency"]["n"] == samples["histogram"]["total"]


def test_ctrl_c_during_a_soak_leaves_the_last_checkpoint_readable(tmp_path) -> None:
    out = tmp_path / "soak"
    proc = _wakelab("run", "--arms", "event", "--duration", "10m", "--settle-us", "200", "-o", str(out), "--no-history", "-q")
    try:
        deadline = time.monotonic() + 90
        checkpointed = False
        while not checkpointed and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            try:
                doc = json.loads((out / "summary.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            checkpointed = doc.get("soak", {}).get("checkpoints", 0) >= 1 and bool(doc["arms"][0]["latency"])
        assert checkpointed, "no checkpoint within 90 s"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    summary = load_summary(str(out))
    assert summary["complete"] is False and summary["interrupted"] is True and summary["soak"]["finished"] is False
    entry = summary["arms"][0]
    assert entry["status"] == "interrupted" and entry["latency"]["n"] > 0
    assert len(load_samples(str(out), entry)["samples_ns"]) == summary["soak"]["raw_kept"]


def test_check_soak_refuses_what_a_soak_cannot_run_in_order() -> None:
    check_soak(["event"], [])
    with pytest.raises(ValueError, match="^--duration and --n exclude each other: a soak takes wakes until the time is up$"):
        check_soak(["event", "condition"], ["--n", "--trace"])
    with pytest.raises(ValueError, match=r"^--duration runs one arm, and this run has 2 \(choose one with --arms A\)$"):
        check_soak(["event", "condition"], ["--trace"])
    with pytest.raises(ValueError, match="^--duration needs a latency arm; signal-install measures a rate$"):
        check_soak(["signal-install"], [])
    with pytest.raises(ValueError, match="^--duration and --repeat exclude each other: a soak runs untraced, in consecutive fresh workers"):
        check_soak(["event"], ["--repeat", "--workers"])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--duration", "0"], "--duration"),
        (["--duration=-5m"], "--duration"),
        (["--duration", "abc"], "--duration"),
        (["--duration", "5s", "--n", "100"], "--duration and --n exclude each other"),
        (["--duration", "5s", "--arms", "event,pipe"], "--duration runs one arm"),
        (["--duration", "5s", "--arms", "signal-install"], "--duration needs a latency arm"),
        (["--duration", "5s", "--trace"], "--duration and --trace exclude each other"),
        (["--duration", "5s", "--in-process"], "--duration and --in-process exclude each other"),
        (["--duration", "5s", "--placement", "same,split"], "--duration runs one cell"),
    ],
)
def test_bad_soak_command_lines_exit_2_with_one_line(tmp_path, args: List[str], message: str) -> None:
    base = ["run", "--arms", "event"] if "--arms" not in args else ["run"]
    proc = _wakelab(*base, *args, "-o", str(tmp_path / "out"), "--no-history", "-q")
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert stdout == "" and message in stderr and len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_plain_progress_shows_the_soaks_live_figures_and_time_left_every_ten_seconds() -> None:
    import io

    from wakelab.progress import SOAK_LINE_S, make_progress

    now = [0.0]
    stream = io.StringIO()
    info = {"arm": "event", "n": 12345, "lost": 0, "p50_ns": 5210.0, "p99_ns": 40100.0, "max_ns": 1.2e6, "left_s": 250.0}
    with make_progress(1, quiet=False, stream=stream, clock=lambda: now[0], heartbeat_s=None) as shown:
        shown("arm-start", {"arm": "event", "index": 0, "total": 1})
        for at in (1.0, 1.0 + SOAK_LINE_S / 2, 1.0 + SOAK_LINE_S):
            now[0] = at
            shown("soak-progress", dict(info, n=int(at * 1000)))
    lines = stream.getvalue().splitlines()
    assert lines[1:] == [
        "wakelab:   event: 1,000 wakes, p50 5.21 µs, p99 40.1 µs, max 1.20 ms, about 4 min left",
        "wakelab:   event: 11,000 wakes, p50 5.21 µs, p99 40.1 µs, max 1.20 ms, about 4 min left",
    ]
