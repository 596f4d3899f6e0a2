"""Compact raw samples: the collector's slots, the raw record and the worker's streamed reply.

A million wakes must fit a worker in 30 MB (bench/worker_memory.py measures
it); here the behaviour that makes that possible is checked: large arms keep
their slots in an int64 array, the record's samples are those slots (no
copy), the record round-trips exactly through its JSON form, and the worker's
reply streams every compact series without json.dumps ever seeing it.
"""

from __future__ import annotations

import array
import dataclasses
import json
import subprocess
import sys
from typing import Any, Dict, List, Optional

import pytest

from wakelab.core.model import (
    LIST_SLOTS_MAX,
    LOST_NS,
    IntSeries,
    LatencyCollector,
    MeasureParams,
    RawLatency,
    int64s,
    raw_from_dict,
    raw_to_dict,
)
from wakelab.harness import worker
from wakelab.harness.workers import worker_env

# A pattern of wakes: a value, or None for a lost one.
PATTERN: List[Optional[int]] = [500, None, 2**40, 0, None, 7, 123456789, 42]


def _collect(total: int, warmup: int, store_none: bool) -> RawLatency:
    """Fill a collector's slots as a tight-loop driver does, with CPUs, stopping two wakes short."""
    collector = LatencyCollector(MeasureParams(n=total - warmup, warmup=warmup))
    waiter, notifier = collector.record_cpus()
    slots = collector.slots
    for index in range(total - 2):
        value = PATTERN[index % len(PATTERN)]
        slots[index] = (None if store_none else LOST_NS) if value is None else value
        waiter[index], notifier[index] = index % 2, 1 - index % 2
    return collector.result(mode="closed")


def _expected(total: int, warmup: int) -> Dict[str, Any]:
    taken = [PATTERN[i % len(PATTERN)] for i in range(total - 2)]
    indices = [i for i in range(warmup, total - 2) if taken[i] is not None]
    return {
        "samples": [taken[i] for i in indices],
        "lost": len(range(warmup, total - 2)) - len(indices),
        "waiter": [i % 2 for i in indices],
        "notifier": [1 - i % 2 for i in indices],
    }


@pytest.mark.parametrize("total", [40, LIST_SLOTS_MAX + 1000])
def test_the_collector_splits_warmup_lost_and_counted_wakes_in_both_forms(total: int) -> None:
    expected = _expected(total, warmup=5)
    forms = [False] if total > LIST_SLOTS_MAX else [False, True]  # None is a list-form lost wake only
    for store_none in forms:
        raw = _collect(total, 5, store_none)
        assert list(raw.samples_ns) == expected["samples"]
        assert raw.lost == expected["lost"] and raw.warmup_discarded == 5
        assert list(raw.waiter_cpus) == expected["waiter"] and list(raw.notifier_cpus) == expected["notifier"]
        assert isinstance(raw.samples_ns, IntSeries) and raw.samples_ns.itemsize == 8


def test_a_large_arm_keeps_its_slots_compact_and_its_samples_are_those_slots() -> None:
    collector = LatencyCollector(MeasureParams(n=LIST_SLOTS_MAX + 1, warmup=0))
    slots = collector.slots
    assert isinstance(slots, array.array) and slots.itemsize == 8  # 8 bytes a wake, not a list of ints
    for index in range(len(slots)):
        slots[index] = index
    raw = collector.result()
    assert raw.samples_ns is slots  # the slots became the samples, in place: no second copy
    assert len(raw.samples_ns) == LIST_SLOTS_MAX + 1 and raw.lost == 0
    small = LatencyCollector(MeasureParams(n=10, warmup=0))
    assert isinstance(small.slots, list)  # small arms keep the cheapest store


def test_add_marks_lost_wakes_and_refuses_a_negative_latency_in_the_compact_form() -> None:
    collector = LatencyCollector(MeasureParams(n=LIST_SLOTS_MAX + 3, warmup=1))
    for value in (9, 10, None, 11):
        collector.add(value, part=1)
    with pytest.raises(ValueError, match="negative"):
        collector.add(-5)
    raw = collector.result()
    assert raw.samples_ns == (10, 11) and raw.lost == 1 and raw.components_ns == {"part": (1, 1)}


def test_a_compact_series_compares_like_the_tuple_it_replaces() -> None:
    series = int64s([1, 2, 3])
    assert series == (1, 2, 3) and series == [1, 2, 3] and series == array.array("q", [1, 2, 3])
    assert series != (1, 2) and series != (1, 2, 4) and int64s() == ()
    with pytest.raises(TypeError):
        hash(series)


def test_a_raw_record_round_trips_exactly() -> None:
    raw = RawLatency(
        samples_ns=int64s([0, 1, 2**63 - 1, 123456]),
        lost=2,
        warmup_discarded=10,
        components_ns={"delivery": int64s([5, 6, 7, 8])},
        info={"mode": "closed"},
        waiter_cpus=IntSeries("i", [0, 1, 1, 0]),
        notifier_cpus=IntSeries("i", [1, 1, 0, -1]),
    )
    doc = json.loads(json.dumps(raw_to_dict(raw)))
    again = raw_from_dict(doc)
    assert again == raw and isinstance(again.samples_ns, IntSeries)
    with pytest.raises(ValueError, match="64 bits"):
        raw_from_dict(dict(doc, samples_ns=[2**64]))
    with pytest.raises(ValueError, match="list of integers"):
        raw_from_dict(dict(doc, samples_ns=[1, True]))


def test_the_reply_streams_every_compact_series_and_reads_back_exactly(tmp_path) -> None:
    big = int64s(range(0, 3 * worker._CHUNK + 7, 3))  # several chunks and a short last one
    raw = RawLatency(
        samples_ns=big,
        lost=1,
        warmup_discarded=3,
        components_ns={"handler": int64s(range(len(big)))},
        info={"wake_t0_ns": list(range(worker._CHUNK + 1)), "text": "\u0000series-0\u0000 is not a marker"},
        waiter_cpus=IntSeries("i", [1]) * len(big),
        notifier_cpus=IntSeries("i", [0]) * len(big),
    )
    doc = {"protocol": 1, "ok": True, "raw": raw_to_dict(raw, compact=True), "pid": 1}
    assert doc["raw"]["samples_ns"] is big  # handed over as it is: json.dumps could not write it
    path = tmp_path / "reply"
    with open(path, "wb") as fh:
        worker._reply(fh.fileno(), doc)
    data = path.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    reply = json.loads(data)
    assert raw_from_dict(reply["raw"]) == raw
    assert reply["raw"]["info"] == {"wake_t0_ns": list(range(worker._CHUNK + 1)), "text": "\u0000series-0\u0000 is not a marker"}


def test_a_worker_returns_a_large_compact_arm_whole() -> None:
    n = LIST_SLOTS_MAX + 5000  # the compact slots, with the real driver
    request = {"protocol": 1, "arm": "sigusr1-self", "family": "signals",
               "params": dataclasses.asdict(MeasureParams(n=n, warmup=3)), "conditions": {}}
    done = subprocess.run([sys.executable, "-S", "-m", "wakelab.harness.worker"], input=json.dumps(request).encode(),
                          capture_output=True, env=worker_env(), timeout=300)
    reply = json.loads(done.stdout)
    assert reply["ok"], reply
    raw = raw_from_dict(reply["raw"])
    assert len(raw.samples_ns) + raw.lost == n and raw.warmup_discarded == 3
    assert all(0 <= v < 2**63 for v in raw.samples_ns)
