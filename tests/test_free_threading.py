"""The free-threading lab: its grid, the GIL A/B table, and real runs on a free-threaded build when there is one."""

from __future__ import annotations

import copy
import os

import pytest

from wakelab.core.model import MeasureParams
from wakelab.harness import grid
from wakelab.harness.interpreters import ENV_CACHE, discover, free_threading_pair, free_threading_pythons
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.evidence.matrix import MatrixDoc
from wakelab.analysis.lab_ab import FORCED_GIL, GIL_BUILD, MATRIX_VERDICTS, NO_GIL, gil_ab, interpreter_role
from wakelab.evidence.model import Interpreter as EvidenceInterpreter
from wakelab.labs import LAB_FREE_THREADING, RunShape, all_labs, custom_lab, get_lab, lab_for_run

REAL_CACHE = os.environ.get(ENV_CACHE) or os.path.join(os.path.expanduser("~"), ".cache", "wakelab")


def test_the_lab_and_its_grid() -> None:
    lab = get_lab("free-threading")
    assert lab is LAB_FREE_THREADING and get_lab("ft") is lab
    assert lab.grid is not None and (lab.grid.pythons, lab.grid.cpu_threads, lab.grid.placements) == (
        "free-threading", (0, 1, 2), ("same", "split"))
    assert {"event", "queue", "pipe"} <= set(lab.arms)
    ran = lab_for_run(lab, list(lab.arms), RunShape(in_process=False, workers=3, placements=("same", "split")))
    assert ran.grid == lab.grid and MATRIX_VERDICTS[str(ran.matrix_verdict)] is gil_ab
    # Choosing arms keeps the lab's grid and its table.
    chosen = custom_lab(lab, ["event"])
    assert chosen.id == "custom" and chosen.grid == lab.grid and MATRIX_VERDICTS[str(chosen.matrix_verdict)] is gil_ab


def test_every_lab_names_a_verdict_the_analysis_has() -> None:
    named = {lab.id: lab.matrix_verdict for lab in all_labs() if lab.matrix_verdict is not None}
    assert named == {"free-threading": "gil-ab", "realtime": "realtime-ab"}
    assert all(name in MATRIX_VERDICTS for name in named.values())


def test_roles_come_from_the_recorded_interpreter() -> None:
    def role(recorded):
        return interpreter_role(EvidenceInterpreter.from_dict(recorded))

    assert role({"free_threaded_build": False, "gil_enabled": True}) == GIL_BUILD
    assert role({"free_threaded_build": True, "gil_enabled": False}) == NO_GIL
    assert role({"free_threaded_build": True, "gil_enabled": True}) == FORCED_GIL
    assert role({"implementation": "PyPy", "free_threaded_build": False, "gil_enabled": True}) == GIL_BUILD
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
    ab = gil_ab(MatrixDoc.from_dict(doc))
    assert doc == before  # reads only
    assert [(r.arm, r.cpu_threads) for r in ab.rows] == [("event", 0), ("event", 1)]  # rate arms are not in it
    loaded = ab.rows[1]
    assert loaded.figures["p99"].role(GIL_BUILD) == 15700 and loaded.figures["p99"].role(NO_GIL) == 55_000_000
    assert loaded.figures["p99"].ratio == pytest.approx(55_000_000 / 15700)
    assert loaded.figures["max"].forced_ratio == pytest.approx(0.9)
    assert [s.cpu_threads for s in ab.summary] == [0, 1]
    text = " ".join(ab.sentences)
    assert ("1 busy Python thread, placement split (median of 1 arm): without the GIL p50 stayed about the same "
            "(5.60 → 7.30 µs, 1.3×; grew in 0 of 1 arms, shrank in 0)") in text
    assert "p99 grew (15.7 → 55000 µs, 3503×; grew in 1 of 1 arms, shrank in 0)" in text
    assert "Where the tail grew without the GIL (1 busy, split)" in text and "PYTHON_GIL=1" in text
    header = ab.tables[0].header
    assert header[3].startswith("p50 µs (GIL / no GIL / GIL=1)")
    assert ab.tables[0].rows[1][4] == "15.7 / 55000 / 16.0"


def test_gil_ab_pairs_each_free_threaded_build_with_its_own_release() -> None:
    # 3.13 and 3.14, each with its GIL build and its free-threaded build: a 3.14t cell must never be set
    # beside the 3.13 GIL build, and every row and table says which release it is.
    doc = _doc({(GIL_BUILD, 0): (6000, 9000, 10000), (NO_GIL, 0): (12000, 18000, 20000)})
    later = _doc({(GIL_BUILD, 0): (5000, 8000, 9000), (NO_GIL, 0): (5000, 8000, 9000)})
    for cell, row in zip(later["cells"], later["arms"][0]["rows"]):
        cell["label"] = row["cell"] = "late-" + cell["label"]
        cell["interpreter"] = dict(cell["interpreter"], version="3.14.10")
    doc["cells"] += later["cells"]
    doc["arms"][0]["rows"] += later["arms"][0]["rows"]
    ab = gil_ab(MatrixDoc.from_dict(doc))
    assert [(r.release, r.figures["p50"].ratio) for r in ab.rows] == [("3.13", 2.0), ("3.14", 1.0)]
    assert [s.release for s in ab.summary] == ["3.13", "3.14"]
    assert ab.tables[0].header[0] == "release" and [r[0] for r in ab.tables[0].rows] == ["3.13", "3.14"]
    text = " ".join(ab.sentences)
    assert "CPython 3.13, no busy thread, placement split" in text and "p50 grew (6.00 → 12.0 µs, 2.0×" in text
    assert "CPython 3.14, no busy thread, placement split" in text and "p50 stayed about the same (5.00 → 5.00 µs" in text
    # One release: no release column, no release key (the single-release tables stay as they were).
    single = gil_ab(MatrixDoc.from_dict(_doc({(GIL_BUILD, 0): (6000, 9000, 10000), (NO_GIL, 0): (12000, 18000, 20000)})))
    assert "release" not in single.to_dict()["rows"][0] and single.tables[0].header[0] == "busy threads"


def test_the_lab_takes_a_column_trio_for_every_release_with_both_builds(tmp_path, monkeypatch) -> None:
    from test_interpreters import fake_python

    from wakelab.harness.interpreters import Interpreter, free_threading_pairs

    monkeypatch.delenv("PYTHON_GIL", raising=False)

    def make(folder, name, version, ft):
        path = fake_python(tmp_path / folder / name, version=version, free_threaded=ft)
        return Interpreter(path, tuple(int(p) for p in version.split(".")), "cpython", ft, gil_enabled=False if ft else None)

    g13, t13 = make("a", "python3.13", "3.13.5", False), make("a", "python3.13t", "3.13.5", True)
    g14, t14 = make("b", "python3.14", "3.14.10", False), make("b", "python3.14t", "3.14.10", True)
    t15 = make("c", "python3.15t", "3.15.2", True)  # no 3.15 GIL build: no pair
    g12 = make("d", "python3.12", "3.12.1", False)  # no 3.12t: no pair
    assert free_threading_pairs([t15, g14, t13, g12, t14, g13]) == [(g13, t13), (g14, t14)]
    columns = free_threading_pythons([t15, g14, t13, g12, t14, g13], cache=str(tmp_path / "cache"))
    assert [label for _, label in columns] == ["cpython-3.13.5", "cpython-3.13.5t", "cpython-3.13.5t-gil",
                                               "cpython-3.14.10", "cpython-3.14.10t", "cpython-3.14.10t-gil"]
    with pytest.raises(ValueError, match=r"needs the GIL build of CPython 3.15 beside"):
        free_threading_pythons([t15, g14], cache=str(tmp_path / "cache"))


def test_gil_ab_without_a_pair_says_so() -> None:
    ab = gil_ab(MatrixDoc.from_dict(_doc({(GIL_BUILD, 0): (6000, 9000, 10000)})))
    assert list(ab.sentences) == ["No A/B: this grid has no pair of cells with the GIL build and the free-threaded build under the "
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
    ab = gil_ab(MatrixDoc.from_dict(doc))
    assert [(r.arm, r.cpu_threads) for r in ab.rows] == [("event", 1), ("queue", 1), ("pipe", 1)]
    for row in ab.rows:
        for key in ("p50", "max"):  # 20 wakes give no p99
            assert row.figures[key].ratio is not None and row.figures[key].forced_ratio is not None
    assert ab.sentences[0].startswith("1 busy Python thread, placement any (median of 3 arms): without the GIL p50 ")
