"""Repetitions (``--repeat R``) and per-wake placement: what the evidence keeps, and what it says.

Real arms in real workers, small n: the tests assert what was recorded and how it adds up,
never how fast anything was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import wakelab.core.registry as registry
from wakelab.analysis.quality import derive_warnings
from wakelab.analysis.stats import cpu_split, percentile, repetition_spread
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, Arm, MeasureParams, RawLatency, raw_from_dict, raw_to_dict
from wakelab.core.placement import allowed_cpus, can_pin, cpu_reader
from wakelab.evidence.load import load_summary
from wakelab.evidence.model import DEFAULT_REPEAT
from wakelab.harness.runner import Execution, RunInterrupted, RunPlan, repetition_params, run_plan, workers_in_repetition
from wakelab.labs import LAB_135
from wakelab.report.text import format_summary, reproduce_commands

PARAMS = MeasureParams(n=30, warmup=2, settle_us=200, install_n=300, rounds=4)
TWO_CPUS = can_pin() and len(allowed_cpus()) >= 2 and cpu_reader() is not None


def _plan(tmp_path, arms=("event", "pipe", "signal-install"), repeat=3, workers=2, params=PARAMS, in_process=False) -> RunPlan:
    return RunPlan(lab=LAB_135, arm_names=list(arms), params=params, folder=str(tmp_path), command=["test"],
                   execution=Execution(workers=workers, repeat=repeat, in_process=in_process), render_text=format_summary)


def _slices(entry):
    start = 0
    for worker in entry["workers"]:
        yield worker["repetition"], start, start + worker["n"]
        start += worker["n"]


def test_each_repetition_runs_every_arm_in_fresh_workers_and_the_slices_add_up(tmp_path) -> None:
    starts = []
    summary = run_plan(_plan(tmp_path), lambda event, info: starts.append((info.get("arm"), info.get("repetition")))
                       if event == "arm-start" else None)
    assert summary["complete"] is True and summary["execution"]["repeat"] == 3
    assert load_summary(str(tmp_path)) == summary
    # Interleaved: one pass over all the arms, then the next.
    assert starts == [(arm, rep) for rep in range(3) for arm in ("event", "pipe", "signal-install")]
    for entry in summary["arms"]:
        reps = [w["repetition"] for w in entry["workers"]]
        assert reps == sorted(reps) and set(reps) == {0, 1, 2}
        assert len({w["pid"] for w in entry["workers"]}) == len(entry["workers"])  # a fresh process each
        assert entry["repetitions"]["count"] == 3
        if entry["kind"] == LATENCY:
            assert sum(w["n"] for w in entry["workers"]) == entry["latency"]["n"] == PARAMS.n
            samples = json.loads((tmp_path / entry["samples_file"]).read_text())["samples_ns"]
            assert len(samples) == PARAMS.n
            # Each repetition's own median is the p50 of its workers' slices of the samples file.
            for rep, value in enumerate(entry["repetitions"]["spread"]["values"]):
                mine = sorted(v for r, a, b in _slices(entry) if r == rep for v in samples[a:b])
                assert value == percentile(mine, 50)
            assert entry["spread"]["between"] == "repetitions"
        else:
            assert sum(w["rounds"] for w in entry["workers"]) == entry["rate"]["rounds"] == PARAMS.rounds


def test_the_counted_wakes_are_split_between_repetitions_not_multiplied() -> None:
    split = [repetition_params(PARAMS, LATENCY, 4, r).n for r in range(4)]
    assert split == [8, 8, 7, 7] and sum(split) == PARAMS.n
    rounds = [repetition_params(PARAMS, "rate", 3, r).rounds for r in range(3)]
    assert rounds == [2, 1, 1]
    # More repetitions than wakes: the later ones have none left, and the arm still takes n.
    few = MeasureParams(n=2, warmup=0)
    assert [repetition_params(few, LATENCY, 3, r).n for r in range(3)] == [1, 1, 0]


@pytest.mark.parametrize("workers, repeat, spread", [(3, 3, [1, 1, 1]), (4, 3, [2, 1, 1]), (3, 5, [1] * 5), (3, 1, [3]),
                                                    (1, 2, [1, 1])])
def test_an_arms_workers_are_spread_over_the_repetitions_at_least_one_each(workers, repeat, spread) -> None:
    execution = Execution(workers=workers, repeat=repeat)
    assert [workers_in_repetition(execution, r) for r in range(repeat)] == spread


def test_more_workers_than_repetitions_run_back_to_back_within_one(tmp_path) -> None:
    summary = run_plan(_plan(tmp_path, arms=("event",), repeat=2, workers=5))
    assert [w["repetition"] for w in summary["arms"][0]["workers"]] == [0, 0, 0, 1, 1]


def test_repeat_one_is_a_single_pass(tmp_path) -> None:
    summary = run_plan(_plan(tmp_path, arms=("event",), repeat=1, workers=3))
    entry = summary["arms"][0]
    assert [w["repetition"] for w in entry["workers"]] == [0, 0, 0]
    assert entry["repetitions"] == {"count": 1, "of": "p50_ns", "spread": None}
    assert "between" not in (entry["spread"] or {})


def test_ctrl_c_between_repetitions_keeps_what_was_measured(tmp_path) -> None:
    def stop(event, info) -> None:
        if event == "arm-start" and info.get("repetition") == 1 and info.get("arm") == "pipe":
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        run_plan(_plan(tmp_path, arms=("event", "pipe")), stop)
    summary = load_summary(str(tmp_path))
    assert summary["complete"] is False and summary["interrupted"] is True
    event, pipe = summary["arms"]
    # Both arms had their first repetition in; event had its second too.  Neither is ok.
    assert event["status"] == pipe["status"] == "interrupted"
    assert event["repetitions"]["count"] == 2 and pipe["repetitions"]["count"] == 1
    for entry in (event, pipe):
        samples = json.loads((tmp_path / entry["samples_file"]).read_text())["samples_ns"]
        assert len(samples) == entry["latency"]["n"] == sum(w["n"] for w in entry["workers"]) < PARAMS.n


def test_an_arm_that_fails_in_a_later_repetition_is_failed_and_not_run_again(tmp_path, monkeypatch) -> None:
    calls = []

    def flaky(params):
        calls.append(params.n)
        if len(calls) == 2:
            raise RuntimeError("planted crash")
        return RawLatency(samples_ns=tuple(range(1000, 1000 + params.n)), lost=0, warmup_discarded=params.warmup)

    registry.all_arms()
    monkeypatch.setitem(registry._REGISTRY, "fake-flaky", Arm(
        name="fake-flaky", family="threads", kind=LATENCY, mechanism="fake", waiter=BLOCKED, scope=CROSS_THREAD,
        t0="t0", t1="t1", measure=flaky))
    summary = run_plan(_plan(tmp_path, arms=("fake-flaky", "event"), in_process=True))
    flaky_entry, event = summary["arms"]
    assert calls == [10, 10]  # the third repetition never ran it
    assert flaky_entry["status"] == "failed" and flaky_entry["reason"] == "RuntimeError: planted crash (repetition 2 of 3)"
    assert event["status"] == "ok" and event["repetitions"]["count"] == 3
    assert summary["complete"] is False


@pytest.mark.skipif(cpu_reader() is None, reason="sched_getcpu is not reachable through ctypes here")
def test_per_wake_cpus_are_recorded_and_add_up(tmp_path) -> None:
    summary = run_plan(_plan(tmp_path, arms=("event", "pipe", "sigwait-thread-to-main", "call-soon-threadsafe",
                                             "pipe-process", "native-condvar", "native-pause-handler"), repeat=2))
    for entry in summary["arms"]:
        split = entry["cpu_split"]
        assert split is not None, entry["name"]
        assert split["same_cpu"]["n"] + split["cross_cpu"]["n"] + split["unknown"] == entry["latency"]["n"]
        doc = json.loads((tmp_path / entry["samples_file"]).read_text())
        assert len(doc["waiter_cpu"]) == len(doc["notifier_cpu"]) == len(doc["samples_ns"])
        cpus = set(allowed_cpus())
        assert set(doc["waiter_cpu"]) | set(doc["notifier_cpu"]) <= cpus | {-1}
        # The split recomputes from the samples file.
        assert cpu_split(doc["samples_ns"], doc["waiter_cpu"], doc["notifier_cpu"]) == split


@pytest.mark.skipif(not TWO_CPUS, reason="needs two CPUs to pin to and sched_getcpu")
@pytest.mark.parametrize("placement, same, cross", [("same", True, False), ("split", False, True)])
def test_pinned_placement_puts_every_wake_on_its_side(tmp_path, placement, same, cross) -> None:
    a, b = allowed_cpus()[:2]
    params = MeasureParams(n=24, warmup=2, settle_us=200, placement=placement, notifier_cpu=a,
                           waiter_cpu=a if placement == "same" else b)
    summary = run_plan(_plan(tmp_path, arms=("event", "pipe", "pipe-process", "native-pipe", "native-pipe-process"),
                             repeat=2, params=params))
    for entry in summary["arms"]:
        split = entry["cpu_split"]
        assert (split["same_cpu"]["n"] == entry["latency"]["n"]) is same, (entry["name"], split)
        assert (split["cross_cpu"]["n"] == entry["latency"]["n"]) is cross, (entry["name"], split)
        assert split["cross_share"] == (1.0 if cross else 0.0)


def test_arms_that_cannot_record_cpus_say_so_with_no_split(tmp_path) -> None:
    summary = run_plan(_plan(tmp_path, arms=("sigusr1-self", "native-self-signal"), repeat=1))
    for entry in summary["arms"]:
        assert entry["status"] == "ok" and entry["cpu_split"] is None, entry["name"]
        assert "waiter_cpu" not in json.loads((tmp_path / entry["samples_file"]).read_text())


def test_cpu_split_counts_and_percentiles() -> None:
    samples = [10, 20, 30, 1000, 2000, 3000, 5]
    waiter = [0, 0, 0, 1, 1, 1, -1]
    notifier = [0, 0, 0, 0, 0, 0, 0]
    split = cpu_split(samples, waiter, notifier)
    assert split == {"same_cpu": {"n": 3, "p50_ns": 20, "p99_ns": None}, "cross_cpu": {"n": 3, "p50_ns": 2000, "p99_ns": None},
                     "unknown": 1, "cross_share": 0.5}
    assert cpu_split(samples, [], []) is None
    assert cpu_split(samples, [-1] * 7, notifier) is None
    assert cpu_split([1] * 100, [0] * 100, [0] * 100)["same_cpu"]["p99_ns"] == 1


def test_repetition_spread_is_the_range_over_the_median() -> None:
    assert repetition_spread([10.0, 20.0, 15.0]) == {"values": [10.0, 20.0, 15.0], "min": 10.0, "max": 20.0, "range_pct": 66.67}
    assert repetition_spread([5.0]) is None and repetition_spread([None, 3.0]) is None


def test_raw_records_carry_the_cpus_and_refuse_a_misaligned_series() -> None:
    raw = RawLatency(samples_ns=(5, 6), lost=0, warmup_discarded=0, waiter_cpus=(1, 0), notifier_cpus=(0, 0))
    doc = raw_to_dict(raw)
    assert doc["waiter_cpu"] == [1, 0] and raw_from_dict(doc) == raw
    doc["waiter_cpu"] = [1]
    with pytest.raises(ValueError, match="one CPU per sample"):
        raw_from_dict(doc)
    assert "waiter_cpu" not in raw_to_dict(RawLatency(samples_ns=(5,), lost=0, warmup_discarded=0))


def _population_entry(split):
    return {"name": "event", "kind": LATENCY, "latency": {"n": 200}, "workers": [], "spread": None, "cpu_split": split,
            "quality": {"populations": {"populations": [
                {"low_ns": 5000, "high_ns": 8000, "share": 0.4}, {"low_ns": 20000, "high_ns": 30000, "share": 0.6}]}}}


def test_two_populations_are_blamed_on_placement_when_each_wakes_cpus_show_it() -> None:
    split = {"same_cpu": {"n": 78, "p50_ns": 6000, "p99_ns": None}, "cross_cpu": {"n": 122, "p50_ns": 24000, "p99_ns": 40000},
             "unknown": 0, "cross_share": 0.61}
    records = [r for r in derive_warnings({"arms": [_population_entry(split)], "parameters": {"placement": "any"}})
               if r["kind"] == "populations"]
    assert records[0]["figures"]["cause"]["kind"] == "cpus"
    text = format_summary({"arms": [], "warnings": records, "lab": {}, "parameters": {}})
    assert "61% of wakes crossed CPUs, p50 24.0 µs against 6.00 µs on one CPU" in " ".join(text.split())
    # Both sides' medians in one population: placement does not explain the two.
    alike = dict(split, cross_cpu={"n": 122, "p50_ns": 6500, "p99_ns": None})
    records = [r for r in derive_warnings({"arms": [_population_entry(alike)], "parameters": {"placement": "any"}})
               if r["kind"] == "populations"]
    assert (records[0]["figures"]["cause"] or {}).get("kind") != "cpus"


def test_the_summary_shows_each_repetition_and_the_cpu_split(tmp_path) -> None:
    summary = run_plan(_plan(tmp_path, arms=("event", "signal-install")))
    text = (tmp_path / "summary.txt").read_text(encoding="utf-8")
    assert "REPETITIONS AND PLACEMENT" in text
    row = next(line for line in text.splitlines() if line.strip().startswith("event ") and "%" in line)
    assert len(row.split()) >= 5
    assert ("3 repetitions (one pass over all arms after another), 3 fresh worker processes per arm spread over them"
            in " ".join(text.split()))
    assert reproduce_commands(summary)[-1].endswith(" --repeat 3")  # not the default: said
    summary["execution"]["repeat"] = DEFAULT_REPEAT
    assert "--repeat" not in reproduce_commands(summary)[-1]  # the default: not repeated


def _cli(*args, timeout=120):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("value", ["0", "-2", "1001", "many", "1.5"])
def test_bad_repeat_values_are_one_line_and_exit_2(value) -> None:
    result = _cli("run", "--repeat", value, "--no-history", "-q")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--repeat" in lines[0] and "Traceback" not in result.stderr


def test_the_cli_defaults_to_five_repetitions_and_takes_another(tmp_path) -> None:
    result = _cli("run", "--arms", "event", "--n", "12", "--warmup", "1", "--settle-us", "100", "--repeat", "2",
                  "-o", str(tmp_path / "two"), "--no-history", "-q")
    assert result.returncode == 0, result.stderr
    two = json.loads((tmp_path / "two" / "summary.json").read_text())
    assert two["execution"]["repeat"] == 2 and two["arms"][0]["repetitions"]["count"] == 2
    result = _cli("run", "--arms", "event", "--n", "12", "--warmup", "1", "--settle-us", "100",
                  "-o", str(tmp_path / "default"), "--no-history", "-q")
    assert result.returncode == 0, result.stderr
    default = json.loads((tmp_path / "default" / "summary.json").read_text())
    assert default["execution"]["repeat"] == DEFAULT_REPEAT == 5
    assert sorted({w["repetition"] for w in default["arms"][0]["workers"]}) == list(range(DEFAULT_REPEAT))
