"""compare names what moved in re-blocks (analysis/reblock_shifts.py): each cause's mean time per
wake in two traced runs, the difference with its bootstrap interval, the one that moved most, and
the line `wakelab compare` prints."""

from __future__ import annotations

import json
import os
from typing import Dict, List

import pytest

from test_compare import (  # noqa: F401  (lab135_bundle: the fixture)
    add_trace,
    compare_json,
    lab135_bundle,
    modified_copy,
    read_json,
    run_compare,
    traced_components,
)
from wakelab.analysis import reblock_shifts as shifts
from wakelab.evidence import bundle

N = 200


def _gil_busy(extra_ns: int, every: int = 5) -> Dict[str, List[int]]:
    """A cause present in one wake in ``every``: most wakes' p50 is 0, its mean is not."""
    return {"gil/busy": [(3_000_000 + extra_ns) if i % every == 0 else 0 for i in range(N)],
            "lock/notifier": [1_000 + (i % 7) for i in range(N)]}


def test_a_cause_that_grew_is_named_by_its_mean_time_per_wake() -> None:
    found = shifts.compare_reblocks(_gil_busy(0), _gil_busy(2_000_000), N, N, seed=135, name="event")
    assert [s.cause for s in found] == ["gil/busy", "lock/notifier"]  # largest change first
    gil = found[0]
    assert (gil.baseline_ns, gil.other_ns, gil.difference_ns) == (600_000.0, 1_000_000.0, 400_000.0)
    assert (gil.wakes_baseline, gil.wakes_other) == (40, 40)
    assert gil.low_ns <= 400_000.0 <= gil.high_ns and gil.excludes_zero()
    assert shifts.moved_most(found) is gil
    assert not found[1].excludes_zero() and found[1].difference_ns == 0.0
    # Deterministic for a seed; a cause only one run has is 0 in every wake of the other.
    assert found == shifts.compare_reblocks(_gil_busy(0), _gil_busy(2_000_000), N, N, seed=135, name="event")
    (only,) = [s for s in shifts.compare_reblocks({}, {"fd/process": [10] * N}, N, N) if s.cause == "fd/process"]
    assert (only.baseline_ns, only.other_ns, only.wakes_baseline) == (0.0, 10.0, 0)


def test_identical_runs_move_nothing_and_few_wakes_get_no_interval() -> None:
    same = shifts.compare_reblocks(_gil_busy(0), _gil_busy(0), N, N)
    assert all(not s.excludes_zero() for s in same)
    assert shifts.moved_most(same) is None
    few = shifts.compare_reblocks({"gil/busy": [5_000] * 5}, {"gil/busy": [7_000] * 5}, 5, 5)
    (shift,) = few
    assert shift.difference_ns == 2_000.0 and shift.low_ns != shift.low_ns  # NaN: not resampled
    line = shifts.format_reblocks_moved("event", few, "A", "B")
    assert line == ("event: no re-block moved beyond its interval; the largest change, on the GIL a busy thread "
                    "held: 5.00 µs a wake in A (5 wakes), 7.00 in B (5) (+2.00 µs)")
    assert shifts.format_reblocks_moved("event", [], "A", "B") is None


def _add_named(folder: str, arm: str, causes: Dict[str, List[int]]) -> None:
    """Give a traced arm's traced pass its re-blocks by cause (they must sum to its gil_wait)."""
    summary = read_json(os.path.join(folder, "summary.json"))
    entry = next(a for a in summary["arms"] if a["name"] == arm)
    path = os.path.join(folder, entry["samples_file"])
    doc = read_json(path)
    doc["traced"]["reblocks_ns"] = causes
    bundle.atomic_write_text(path, json.dumps(doc))


def test_compare_of_two_named_runs_says_which_reblock_moved(tmp_path, lab135_bundle, capsys) -> None:  # noqa: F811
    gil = traced_components()["gil_wait"]  # 5000 ns in one wake in ten
    a = add_trace(modified_copy(lab135_bundle, tmp_path / "ta"), "event", traced_components())
    b = add_trace(modified_copy(lab135_bundle, tmp_path / "tb"), "event", traced_components())
    _add_named(a, "event", {"lock/notifier": gil})
    _add_named(b, "event", {"gil/busy": gil})
    status, doc = compare_json(capsys, a, b)
    assert status == 0
    event = next(arm for arm in doc["comparisons"][0]["arms"] if arm["arm"] == "event")
    named = {s["cause"]: s for s in event["components"]["reblocks"]}
    assert named["gil/busy"]["baseline_mean_ns"] == 0.0 and named["gil/busy"]["other_mean_ns"] == 500.0
    assert named["lock/notifier"]["difference_ns"] == -500.0
    status, out, err = run_compare(capsys, a, b)
    assert ("event: of its re-blocks, on the GIL a busy thread held moved most: 0.00 µs a wake in A (0 wakes), 0.50 in B"
            " (20) (+0.50 µs, CI +0.30 to +0.72)") in " ".join(out.split())
    # A run from before re-blocks were named: nothing new.
    plain = add_trace(modified_copy(lab135_bundle, tmp_path / "tc"), "event", traced_components())
    status, doc = compare_json(capsys, plain, b)
    event = next(arm for arm in doc["comparisons"][0]["arms"] if arm["arm"] == "event")
    assert "reblocks" not in event["components"]


def test_named_reblocks_that_do_not_sum_to_the_gil_wait_are_refused(tmp_path, lab135_bundle, capsys) -> None:  # noqa: F811
    a = add_trace(modified_copy(lab135_bundle, tmp_path / "ta"), "event", traced_components())
    b = add_trace(modified_copy(lab135_bundle, tmp_path / "tb"), "event", traced_components())
    _add_named(a, "event", {"gil/busy": [1] * 200})
    status, out, err = run_compare(capsys, a, b)
    assert status != 0 and "re-blocks do not sum" in err


@pytest.fixture(autouse=True)
def _numpy() -> None:
    pytest.importorskip("numpy")
