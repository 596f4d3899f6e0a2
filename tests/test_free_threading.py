"""The free-threading lab: its grid, the GIL A/B table, and real runs on a free-threaded build when there is one."""

from __future__ import annotations

import copy
import os

import pytest

from wakelab.core.model import MeasureParams
from wakelab.harness import grid
from wakelab.harness.interpreters import ENV_CACHE, discover, free_threading_pair, free_threading_pythons
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.labs import (
    FORCED_GIL, GIL_BUILD, LAB_FREE_THREADING, NO_GIL, RunShape, custom_lab, get_lab, gil_ab, interpreter_role, lab_for_run,
)

REAL_CACHE = os.environ.get(ENV_CACHE) or os.path.join(os.path.expanduser("~"), ".cache", "wakelab")


def test_the_lab_and_its_grid() -> None:
    lab = get_lab("free-threading")
    assert lab is LAB_FREE_THREADING and get_lab("ft") is lab
    assert lab.grid is not None and (lab.grid.pythons, lab.grid.cpu_threads, lab.grid.placements) == (
        "free-threading", (0, 1, 2), ("same", "split"))
    assert {"event", "queue", "pipe"} <= set(lab.arms)
    ran = lab_for_run(lab, list(lab.arms), RunShape(in_process=False, workers=3, placements=("same", "split")))
    assert ran.grid == lab.grid and ran.matrix_verdict is gil_ab
    # Choosing arms keeps the lab's grid and its table.
    chosen = custom_lab(lab, ["event"])
    assert chosen.id == "custom" and chosen.grid == lab.grid and chosen.matrix_verdict is gil_ab


def test_roles_come_from_the_recorded_interpreter() -> None:
    assert interpreter_role({"free_threaded_build": False, "gil_enabled": True}) == GIL_BUILD
    assert interpreter_role({"free_threaded_build": True, "gil_enabled": False}) == NO_GIL
    assert interpreter_role({"free_threaded_build": True, "gil_enabled": True}) == FORCED_GIL
    assert interpreter_role({"implementation": "PyPy", "free_threaded_build": False, "gil_enabled": True}) == GIL_BUILD
    assert interpreter_role(None) is None


def _lat(p50, p99, mx):
    return {"n": 100, "lost": 0, "min_ns": p50 / 2, "p50_ns": p50, "p90_ns": p50, "p99_ns": p99, "max_ns": mx}


INTERP = {
    GIL_BUILD: {"implementation": "CPython", "version": "3.13.5", "free_threaded_build": False, "gil_enabled": True},
    NO_GIL: {"implementation": "CPython", "version": "3.13.5", "free_threaded_build": True, "gil_enabled": False},
    FORCED_GIL: {"implementation": "CPython", "version": "3.13.5", "free_threaded_build": True, "gil_enabled": True},
}


def _doc(figures):
    """A matrix document: figures[(role, busy)] = (p50, p99, max) in ns for one arm, placement split."""
    cells, rows = [], []
    for (role, busy), (p50, p99, mx) in figures.items():
        # Labels say nothing true about the build: pairing must not read them.
        label = "cell%d" % len(cells)
        cells.append({"label": label, "dimensions": {"python": "x", "placement": "split", "cpu_threads": busy},
                      "interpreter": INTERP[role], "complete": True, "status": "done"})
        rows.append({"cell": label, "status": "ok", "kind": "latency", "latency": _lat(p50, p99, mx)})
    return {"cells": cells, "arms": [{"name": "event", "rows": rows}, {"name": "signal-install", "rows": [
        {"cell": c["label"], "status": "ok", "kind": "rate", "rate": {"ops_per_s": 1.0}} for c in cells]}]}


def test_gil_ab_says_what_removing_the_gil_did() -> None:
    doc = _doc({
        (GIL_BUILD, 0): (6000, 90000, 100000), (NO_GIL, 0): (6000, 70000, 90000), (FORCED_GIL, 0): (6500, 91000, 95000),
        (GIL_BUILD, 1): (5600, 15700, 10_000_000), (NO_GIL, 1): (7300, 55_000_000, 60_000_000), (FORCED_GIL, 1): (5700, 16000, 9_000_000),
    })
    before = copy.deepcopy(doc)
    ab = gil_ab(doc)
    assert doc == before  # reads only
    assert [(r["arm"], r["cpu_threads"]) for r in ab["rows"]] == [("event", 0), ("event", 1)]  # rate arms are not in it
    loaded = ab["rows"][1]
    assert loaded["p99"][GIL_BUILD] == 15700 and loaded["p99"][NO_GIL] == 55_000_000
    assert loaded["p99"]["ratio"] == pytest.approx(55_000_000 / 15700)
    assert loaded["max"]["forced_ratio"] == pytest.approx(0.9)
    assert [s["cpu_threads"] for s in ab["summary"]] == [0, 1]
    text = " ".join(ab["sentences"])
    assert ("1 busy Python thread, placement split (median of 1 arm): without the GIL p50 stayed about the same "
            "(5.60 → 7.30 µs, 1.3×; grew in 0 of 1 arms, shrank in 0)") in text
    assert "p99 grew (15.7 → 55000 µs, 3503×; grew in 1 of 1 arms, shrank in 0)" in text
    assert "Where the tail grew without the GIL (1 busy, split)" in text and "PYTHON_GIL=1" in text
    header = ab["tables"][0]["header"]
    assert header[3].startswith("p50 µs (GIL / no GIL / GIL=1)")
    assert ab["tables"][0]["rows"][1][4] == "15.7 / 55000 / 16.0"


def test_gil_ab_without_a_pair_says_so() -> None:
    ab = gil_ab(_doc({(GIL_BUILD, 0): (6000, 9000, 10000)}))
    assert ab["sentences"] == ["No A/B: this grid has no pair of cells with the GIL build and the free-threaded build under the "
                               "same conditions, so nothing says what removing the GIL did."]


# -- real runs ----------------------------------------------------------------------------------

def _pair():
    found = discover(cache=REAL_CACHE)
    return free_threading_pair(found), found


(GIL, FT), FOUND = _pair()
needs_ft = pytest.mark.skipif(
    FT is None or GIL is None,
    reason="no free-threaded CPython with its GIL build here (PATH, pyenv, $WAKELAB_INTERPRETERS, cache %s): "
           "'wakelab interpreters build 3.13t' makes both (.ci/run does)" % REAL_CACHE)

SMALL = MeasureParams(n=20, warmup=2, settle_us=200, install_n=1000, rounds=2)


@needs_ft
def test_the_three_columns_are_labelled_as_they_ran(tmp_path) -> None:
    trio = free_threading_pythons(FOUND, cache=str(tmp_path / "cache"))
    assert [label.endswith(end) for (_, label), end in zip(trio, ("", "t", "t-gil"))] == [True, True, True]
    expected = [(False, True, None), (True, False, None), (True, True, "1")]
    for (path, label), (ft, gil, env) in zip(trio, expected):
        plan = RunPlan(lab=LAB_FREE_THREADING, arm_names=["event", "pipe"], params=SMALL, folder=str(tmp_path / label),
                       command=["test"], execution=Execution(workers=1, python=path))
        os.makedirs(plan.folder)
        summary = run_plan(plan)
        interp = summary["interpreter"]
        assert (interp["free_threaded_build"], interp["gil_enabled"], interp["python_gil_env"]) == (ft, gil, env), label
        assert [a["status"] for a in summary["arms"]] == ["ok", "ok"]


@needs_ft
def test_a_small_free_threading_grid_gives_the_ab_table(tmp_path) -> None:
    trio = free_threading_pythons(FOUND, cache=str(tmp_path / "cache"))
    lab = custom_lab(LAB_FREE_THREADING, ["event", "queue", "pipe"])
    base = RunPlan(lab=lab, arm_names=list(lab.arms), params=SMALL, folder=str(tmp_path / "grid"), command=["test"],
                   execution=Execution(workers=1))
    os.makedirs(base.folder)
    cells = grid.expand([p for p, _ in trio], [label for _, label in trio], [("any", None, None)], [200], [1])
    doc = grid.run_grid(base, cells)
    assert doc["complete"] is True
    ab = gil_ab(doc)
    assert [(r["arm"], r["cpu_threads"]) for r in ab["rows"]] == [("event", 1), ("queue", 1), ("pipe", 1)]
    for row in ab["rows"]:
        for key in ("p50", "max"):  # 20 wakes give no p99
            assert row[key]["ratio"] is not None and row[key]["forced_ratio"] is not None
    assert ab["sentences"][0].startswith("1 busy Python thread, placement any (median of 3 arms): without the GIL p50 ")
