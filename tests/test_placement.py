"""CPU placement: choosing CPUs, pinning, and what the evidence records."""

from __future__ import annotations

import os
import threading

import pytest

from wakelab.core.registry import get_arm
from wakelab.core.model import MeasureParams
from wakelab.core import placement
from wakelab.harness.conditions import Conditions, worker_conditions

ALLOWED = placement.allowed_cpus()
needs_two = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs")


def test_resolve_defaults_and_errors() -> None:
    assert placement.resolve_cpus("any") == (None, None)
    assert placement.resolve_cpus("same") == (ALLOWED[0], ALLOWED[0])
    with pytest.raises(placement.PlacementError, match="CPU 4000 is not available"):
        placement.resolve_cpus("same", [4000])
    with pytest.raises(placement.PlacementError, match="unknown placement"):
        placement.resolve_cpus("sideways")
    with pytest.raises(placement.PlacementError, match="needs --placement same or split"):
        placement.resolve_cpus("any", [0])



def test_resolve_placements_counts_the_cpus_a_grid_takes() -> None:
    assert placement.resolve_placements(["any"], None) == [("any", None, None)]
    with pytest.raises(placement.PlacementError, match="^--cpus needs --placement same or split$"):
        placement.resolve_placements(["any"], [0])
    # same and split together take two CPUs, same using the first: one is too few, three too many.
    with pytest.raises(placement.PlacementError, match=r"^--cpus lists 1 CPU, but --placement same,split takes 2 \("):
        placement.resolve_placements(("same", "split"), [0])
    with pytest.raises(placement.PlacementError, match="^--cpus lists 3 CPUs, but --placement split takes 2"):
        placement.resolve_placements(["split"], [0, 1, 2])
    assert placement.resolve_placements(["any", "same"], [ALLOWED[0]]) == [("any", None, None), ("same", ALLOWED[0], ALLOWED[0])]


@needs_two
def test_resolve_split() -> None:
    assert placement.resolve_cpus("split") == (ALLOWED[0], ALLOWED[1])
    assert placement.resolve_cpus("split", [ALLOWED[1], ALLOWED[0]]) == (ALLOWED[1], ALLOWED[0])
    with pytest.raises(placement.PlacementError, match="two different CPUs"):
        placement.resolve_cpus("split", [ALLOWED[0], ALLOWED[0]])


def test_current_cpu_is_an_allowed_cpu() -> None:
    assert placement.current_cpu() in ALLOWED


def test_preserved_affinity_restores_the_mask() -> None:
    before = os.sched_getaffinity(0)
    with placement.preserved_affinity():
        placement.pin_current_thread(ALLOWED[-1])
        assert os.sched_getaffinity(0) == {ALLOWED[-1]}
    assert os.sched_getaffinity(0) == before


def test_pinning_is_per_thread() -> None:
    seen = []

    def side() -> None:
        placement.pin_current_thread(ALLOWED[-1])
        seen.append(os.sched_getaffinity(0))

    before = os.sched_getaffinity(0)
    thread = threading.Thread(target=side)
    thread.start()
    thread.join()
    assert seen == [{ALLOWED[-1]}]
    assert os.sched_getaffinity(0) == before


@needs_two
@pytest.mark.parametrize("name", ["event", "queue", "pipe"])
def test_driver_arms_run_where_they_are_told(name) -> None:
    params = MeasureParams(n=10, warmup=1, settle_us=200, placement="split", notifier_cpu=ALLOWED[0], waiter_cpu=ALLOWED[1])
    before = os.sched_getaffinity(0)
    with worker_conditions(params, Conditions()):
        raw = get_arm(name).measure(params)
    assert os.sched_getaffinity(0) == before
    assert raw.info["notifier_cpu_seen"] == ALLOWED[0]
    assert raw.info["waiter_cpu_seen"] == ALLOWED[1]
    assert raw.lost == 0

    same = MeasureParams(n=10, warmup=1, settle_us=200, placement="same", notifier_cpu=ALLOWED[1], waiter_cpu=ALLOWED[1])
    with worker_conditions(same, Conditions()):
        raw = get_arm(name).measure(same)
    assert raw.info["notifier_cpu_seen"] == raw.info["waiter_cpu_seen"] == ALLOWED[1]
