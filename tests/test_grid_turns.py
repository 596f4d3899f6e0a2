"""Grid cells take turns, a repetition each (A B, B A, ...), each with its conditions for its turn only.

Real arms in real workers, small n: the tests assert the order of the work and what the evidence
says, never how fast anything was.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import time

import pytest

import wakelab.harness.runner as runner
from conftest import children
from wakelab.core.model import MeasureParams
from wakelab.evidence import bundle
from wakelab.errors import OutputError
from wakelab.evidence.load import load_summary
from wakelab.harness import grid
from wakelab.harness.runner import Execution, RunInterrupted, RunPlan, run_plan
from wakelab.labs import LAB_135
from wakelab.report.matrix_text import format_matrix
from wakelab.report.text import format_summary

SMALL = MeasureParams(n=12, warmup=1, settle_us=100, install_n=300, rounds=3)


def _base(tmp_path, repeat: int = 3) -> RunPlan:
    return RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=SMALL, folder=str(tmp_path),
                   execution=Execution(workers=1, repeat=repeat), render_text=format_summary)


def _cells():
    return grid.expand([None], [None], [("any", None, None)], [100, 300], [0])


def _recorder(log):
    state = {"cell": None}

    def progress(event, info) -> None:
        if event == "cell-start":
            state["cell"] = info["cell"]
            log.append(("turn", info["cell"], info["repetition"]))
        elif event == "arm-start":
            log.append(("arm", state["cell"], info["repetition"], info["arm"]))
    return progress


def test_cells_take_turns_a_repetition_each_in_alternating_order(tmp_path) -> None:
    log: list = []
    doc = grid.run_grid(_base(tmp_path), _cells(), _recorder(log), render_matrix=format_matrix)
    assert doc["complete"] is True
    a, b = "settle100us", "settle300us"
    assert [x[1:] for x in log if x[0] == "turn"] == [(a, 0), (b, 0), (b, 1), (a, 1), (a, 2), (b, 2)]
    # Within a turn, that cell's own pass over every arm, and nothing of the other cell's.
    arms = [x[1:] for x in log if x[0] == "arm"]
    assert arms == [(c, r, arm) for c, r in [(a, 0), (b, 0), (b, 1), (a, 1), (a, 2), (b, 2)]
                    for arm in ("event", "signal-install")]
    for cell in doc["cells"]:
        summary = load_summary(os.path.join(str(tmp_path), cell["folder"]))
        assert summary["complete"] is True and summary["execution"]["repeat"] == 3
        for entry in summary["arms"]:
            assert [w["repetition"] for w in entry["workers"]] == [0, 1, 2]
            assert entry["repetitions"]["count"] == 3
        # The cell's own parameters, whatever ran between its turns.
        assert summary["parameters"]["settle_us"] == cell["dimensions"]["settle_us"]
        assert not os.path.exists(os.path.join(str(tmp_path), cell["folder"], bundle.LOCK_FILE))
    assert (tmp_path / "matrix.txt").read_text(encoding="utf-8") == format_matrix(doc)


def _counting_conditions(monkeypatch, seen):
    real = runner.run_conditions

    @contextlib.contextmanager
    def counted(conditions):
        seen.append("enter")
        with real(conditions) as applied:
            yield applied
        seen.append("exit")
    monkeypatch.setattr(runner, "run_conditions", counted)


def test_a_cells_conditions_hold_for_its_turn_only_and_a_run_holds_them_once(tmp_path, monkeypatch) -> None:
    seen: list = []
    _counting_conditions(monkeypatch, seen)
    (tmp_path / "grid").mkdir()
    (tmp_path / "run").mkdir()
    grid.run_grid(_base(tmp_path / "grid"), _cells())
    # Applied and removed around every turn: never two cells' conditions at once.
    assert seen == ["enter", "exit"] * 6
    seen.clear()
    summary = run_plan(_base(tmp_path / "run"))
    assert summary["complete"] is True and seen == ["enter", "exit"]  # a plain run: once, for all its passes


def _interrupt_at(log, cell: str, repetition: int, exc: BaseException):
    record = _recorder(log)

    def progress(event, info) -> None:
        record(event, info)
        if event == "arm-start" and log[-1][1:3] == (cell, repetition) and info["arm"] == "signal-install":
            raise exc
    return progress


@pytest.mark.parametrize("signum, reason", [(None, "interrupted by the user (Ctrl-C)"), (signal.SIGTERM, "interrupted by SIGTERM")])
def test_an_interrupt_in_one_cells_turn_ends_every_cell_and_leaves_no_process(tmp_path, signum, reason) -> None:
    before = children()
    exc = KeyboardInterrupt()
    if signum is not None:
        exc.signum = signum  # type: ignore[attr-defined]
    log: list = []
    # The second turn of the second cell: the first cell has measured one repetition and waits.
    with pytest.raises(RunInterrupted) as caught:
        grid.run_grid(_base(tmp_path), _cells(), _interrupt_at(log, "settle300us", 1, exc), render_matrix=format_matrix)
    assert caught.value.signum == (signum or signal.SIGINT)
    doc = caught.value.summary
    assert doc["complete"] is False
    for cell in doc["cells"]:
        folder = os.path.join(str(tmp_path), cell["folder"])
        summary = load_summary(folder)
        assert summary["interrupted"] is True and summary["complete"] is False, cell["label"]
        assert all(e["status"] == "interrupted" and e["reason"] == reason for e in summary["arms"]), summary["arms"]
        assert not os.path.exists(os.path.join(folder, bundle.LOCK_FILE))
    assert (tmp_path / "matrix.txt").read_text(encoding="utf-8") == format_matrix(doc)
    deadline = time.monotonic() + 10
    while children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not children() - before


@pytest.mark.parametrize("failing_arms", [("signal-install",), ("event", "signal-install")])
def test_a_write_that_fails_in_one_cells_turn_cuts_the_waiting_cells_short_saying_why(tmp_path, monkeypatch,
                                                                                      failing_arms) -> None:
    real = bundle.write_samples

    def full_in_second_cell(folder_, arm_name, doc):
        if folder_.endswith("settle300us") and arm_name in failing_arms:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder_, arm_name, doc)

    monkeypatch.setattr(bundle, "write_samples", full_in_second_cell)
    cells = grid.expand([None], [None], [("any", None, None)], [100, 300, 500], [0])
    log: list = []
    doc = grid.run_grid(_base(tmp_path, repeat=2), cells, _recorder(log), render_matrix=format_matrix)
    # The first cell had its first turn, the second failed in its own: the third never started.
    assert [x[1:] for x in log if x[0] == "turn"] == [("settle100us", 0), ("settle300us", 0)]
    assert doc["cells"][0]["status"] == "done" and doc["cells"][2]["status"] == "pending" and doc["complete"] is False
    first = load_summary(os.path.join(str(tmp_path), doc["cells"][0]["folder"]))
    assert first["complete"] is False and first["finished_utc"]
    for entry in first["arms"]:
        assert entry["status"] == "failed", entry
        assert entry["reason"].startswith("cut short after 1 repetitions: cannot write evidence to ")
        assert "settle300us" in entry["reason"] and os.strerror(errno.ENOSPC) in entry["reason"]
    assert (tmp_path / doc["cells"][0]["folder"] / "summary.txt").exists()
    for cell in doc["cells"][:2]:
        assert not os.path.exists(os.path.join(str(tmp_path), cell["folder"], bundle.LOCK_FILE))


def test_a_cell_folder_another_run_holds_stops_the_grid_before_anything_is_measured(tmp_path) -> None:
    busy = tmp_path / "cells" / "settle300us"
    busy.mkdir(parents=True)
    with bundle.FolderLock(str(busy)):
        with pytest.raises(OutputError, match="another wakelab run is writing there"):
            grid.run_grid(_base(tmp_path), _cells())
        assert not (tmp_path / "cells" / "settle100us" / "summary.json").exists()  # nothing measured
        assert not (tmp_path / "cells" / "settle100us" / bundle.LOCK_FILE).exists()  # and nothing held
    doc = grid.run_grid(_base(tmp_path), _cells())  # free again: the grid runs
    assert doc["complete"] is True


def test_an_error_in_one_cells_turn_cuts_the_waiting_cells_short_saying_why(tmp_path, monkeypatch) -> None:
    real = grid.run_turns

    def failing_in_second_cell(plan, progress=None, take_turns=False):
        if plan.folder.endswith("settle300us"):
            def broken():
                raise RuntimeError("the interpreter went away")
                yield  # a generator, as run_turns is
            return broken()
        return real(plan, progress, take_turns)

    monkeypatch.setattr(grid, "run_turns", failing_in_second_cell)
    with pytest.raises(RuntimeError, match="went away"):
        grid.run_grid(_base(tmp_path), _cells(), render_matrix=format_matrix)
    first = load_summary(str(tmp_path / "cells" / "settle100us"))
    assert first["complete"] is False and first["finished_utc"]
    for entry in first["arms"]:
        assert entry["status"] == "failed"
        assert entry["reason"] == ("cut short after 1 repetitions: the grid stopped at cell settle300us: "
                                   "the interpreter went away")
    matrix = json.loads((tmp_path / "matrix.json").read_text())
    assert matrix["cells"][0]["status"] == "done" and matrix["complete"] is False
    for cell in ("settle100us", "settle300us"):
        assert not (tmp_path / "cells" / cell / bundle.LOCK_FILE).exists()


def test_a_ctrl_c_while_a_cell_writes_its_finished_run_leaves_the_matrix_agreeing(tmp_path, monkeypatch) -> None:
    real = runner._finish
    calls = []

    def interrupted_once(summary, started):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:  # the second cell to finish (A, after B: turns A0 B0 B1 A1)
            raise KeyboardInterrupt
        return real(summary, started)

    monkeypatch.setattr(runner, "_finish", interrupted_once)
    with pytest.raises(RunInterrupted) as caught:
        grid.run_grid(_base(tmp_path, repeat=2), _cells(), render_matrix=format_matrix)
    doc = caught.value.summary
    assert doc["complete"] is False
    assert json.loads((tmp_path / "matrix.json").read_text()) == doc
    for cell in doc["cells"]:
        summary = load_summary(os.path.join(str(tmp_path), cell["folder"]))
        assert cell["complete"] == summary["complete"], cell["label"]
        assert summary["finished_utc"]
    a = load_summary(str(tmp_path / "cells" / "settle100us"))
    assert a["interrupted"] is True and a["complete"] is False
