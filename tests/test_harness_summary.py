"""The runner's summary building (wakelab.harness.summary) and traced-pass records (wakelab.harness.trace_pass):
frozen records with exact figures, written once, read back by the loader as the same records."""

from __future__ import annotations

import dataclasses
import json

import pytest

from conftest import is_complete
from wakelab.core.model import LATENCY, RATE, MeasureParams, RawLatency, RawRate
from wakelab.core.registry import get_arm
from wakelab.evidence.model import ArmRecord, WorkerRecord
from wakelab.harness.summary import (
    FAILED, OK, SKIPPED, ArmEntry, RunSummary, Spread, Taken, arm_figures, worker_record,
)
from wakelab.harness.trace_pass import ArmTrace, Overhead
from wakelab.harness.workers import pool_raws

FAST = RawLatency(samples_ns=tuple(1000 + i for i in range(101)), lost=0, warmup_discarded=5)  # p50 1050
SLOW = RawLatency(samples_ns=tuple(2000 + 2 * i for i in range(101)), lost=1, warmup_discarded=5)  # p50 2100
RATE_RAW = RawRate(n_per_round=1000, round_ns=(1_000_000, 2_000_000, 4_000_000), baseline_round_ns=(10_000,) * 3,
                   warmup_rounds=1)


def test_a_worker_record_is_written_as_before_and_read_back_the_same() -> None:
    latency = worker_record(FAST, 41, {"cpu_thread_tids": (7,)})
    assert latency.to_dict() == {"pid": 41, "applied": {"cpu_thread_tids": [7]}, "n": 101, "lost": 0, "p50_ns": 1050.0,
                                 "max_ns": 1100}
    assert list(latency.to_dict()) == ["pid", "applied", "n", "lost", "p50_ns", "max_ns"]
    rate = worker_record(RATE_RAW, 42, {})
    assert rate.to_dict() == {"pid": 42, "applied": {}, "rounds": 3, "ops_per_s": 500_000.0}
    for record in (latency, rate, dataclasses.replace(latency, repetition=3, warmup_discarded=5)):
        assert WorkerRecord.from_dict(record.to_dict()) == record


def test_two_repetitions_are_pooled_with_their_spread_and_the_loader_reads_the_same_workers() -> None:
    taken = Taken()
    taken.add(0, [FAST], [worker_record(FAST, 1, {})])
    taken.add(1, [SLOW], [worker_record(SLOW, 2, {})])
    figures = arm_figures(pool_raws(taken.raws), taken, LATENCY, 2, None, 500)
    doc = figures.to_dict()
    assert [w["repetition"] for w in doc["workers"]] == [0, 1]
    assert doc["spread"] == {"of": "p50_ns", "min": 1050.0, "max": 2100.0, "max_over_min": 2.0, "between": "repetitions"}
    assert doc["repetitions"]["count"] == 2 and doc["repetitions"]["of"] == "p50_ns"
    assert doc["repetitions"]["spread"]["values"] == [1050.0, 2100.0]
    assert doc["latency"]["n"] == 202 and doc["latency"]["lost"] == 1 and doc["warmup_discarded"] == 10
    assert "wall_s" not in doc and set(doc["quality"]) == {"populations", "switch_interval_tail", "polling"}
    # The entry the runner fills is the one the loader reads: the same worker records come back.
    entry = ArmEntry.of(get_arm("event"), MeasureParams()).to_dict()
    entry.update(doc)
    assert ArmRecord.from_dict(entry).workers == figures.workers
    # One repetition: the spread is between its workers.
    one = Taken()
    one.add(0, [FAST, SLOW], [worker_record(FAST, 1, {}), worker_record(SLOW, 2, {})])
    assert arm_figures(pool_raws(one.raws), one, LATENCY, 1, None, 500).to_dict()["spread"] == {
        "of": "p50_ns", "min": 1050.0, "max": 2100.0, "max_over_min": 2.0}


def test_a_rate_arm_leaves_the_latency_parts_of_its_entry_alone() -> None:
    taken = Taken()
    taken.add(0, [RATE_RAW], [worker_record(RATE_RAW, 1, {})])
    doc = arm_figures(pool_raws(taken.raws), taken, RATE, 1, None, None).to_dict()
    assert "latency" not in doc and "quality" not in doc and "cpu_split" not in doc and "components" not in doc
    assert doc["rate"]["ops_per_s"] == 500_000.0 and doc["warmup_discarded"] == 1 and doc["spread"] is None


@pytest.mark.parametrize("values, spread", [
    ([], None), ([5.0], None), ([5.0, None], None), ([0.0, 5.0], None),
    ([2.0, 5.0, None], {"of": "p50_ns", "min": 2.0, "max": 5.0, "max_over_min": 2.5}),
])
def test_spread(values, spread) -> None:
    found = Spread.of_values("p50_ns", values)
    assert (found.to_dict() if found is not None else None) == spread


def test_trace_records() -> None:
    assert ArmTrace.not_split("no perf").to_dict() == {"traced": False, "reason": "no perf"}
    assert Overhead(1000.0, 3000.0, 3000.0).ratio == 1.5
    assert Overhead(None, 0.0, 3000.0).ratio is None
    assert Overhead(1000.0, None, None).to_dict() == {"untraced_p50_ns": 1000.0, "untraced_after_p50_ns": None,
                                                      "traced_p50_ns": None, "ratio": None}


def _entry(taken: Taken, requested: int) -> ArmEntry:
    figures = arm_figures(pool_raws(taken.raws), taken, LATENCY, 1, None, 500)
    return dataclasses.replace(ArmEntry.of(get_arm("event"), MeasureParams(n=requested)), status=OK, wall_s=0.5, figures=figures)


def test_an_arm_entry_is_written_once_as_the_loader_reads_it() -> None:
    pending = ArmEntry.of(get_arm("event"), MeasureParams(n=101))
    assert pending.to_dict()["status"] == "pending" and pending.to_dict()["latency"] is None
    taken = Taken()
    taken.add(0, [FAST], [worker_record(FAST, 1, {})])
    doc = json.loads(json.dumps(_entry(taken, 101).to_dict()))
    assert doc["status"] == "ok" and doc["wall_s"] == 0.5 and doc["requested"] == 101 and doc["rate"] is None
    record = ArmRecord.from_dict(doc)
    assert record.latency is not None and record.latency.n == 101 and record.workers == tuple(taken.workers)
    assert str(OK) == "ok" and "%s" % FAILED == "failed"


@pytest.mark.parametrize("requested, statuses, complete", [
    (101, (OK,), True), (101, (OK, SKIPPED), True), (100, (OK,), False), (101, (SKIPPED,), False), (101, (OK, FAILED), False),
])
def test_a_run_is_complete_when_every_arm_that_ran_took_what_it_asked_for(requested, statuses, complete) -> None:
    taken = Taken()
    taken.add(0, [FAST], [worker_record(FAST, 1, {})])
    arms = tuple(dataclasses.replace(_entry(taken, requested), status=status, identity={"name": "a%d" % i, "kind": LATENCY})
                 for i, status in enumerate(statuses))
    summary = RunSummary({"conditions": {}}, {}, arms)
    assert summary.is_complete() is complete
    assert is_complete(summary.to_dict()) is complete  # the same answer from the document the loader reads
