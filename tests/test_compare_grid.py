"""``wakelab compare GRID``: every cell of a grid against a baseline cell, across its dimensions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import Dict

import pytest

from test_compare_levels import arms_of, compare_json, lab_slices, slices_bundle
from wakelab.analysis import compare as cmp
from wakelab.evidence.model import Grid
from wakelab.cli import main
from wakelab.core.model import MeasureParams
from wakelab.evidence import bundle
from wakelab.harness import grid as grid_mod
from wakelab.harness import runner
from wakelab.labs import LAB_135

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def run_cli(*args: str):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def one_error_line(result, status: int = 2) -> str:
    assert result.returncode == status and result.stdout == "", result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("wakelab: error: "), result.stderr
    return lines[0]


def _placement(name: str, notifier: int, waiter: int):
    def edit(summary: Dict) -> None:
        summary["parameters"].update(placement=name, notifier_cpu=notifier, waiter_cpu=waiter)
    return edit


def synthetic_grid(root, split_scale: float = 2.0, with_pending: bool = False) -> str:
    """A --placement same,split grid written as the runner writes one: cells/<label>/ and matrix.json."""
    folder = str(root)
    placements = [("same", 0, 0), ("split", 0, 1)] + ([("any", None, None)] if with_pending else [])
    cells = grid_mod.expand([None], [None], placements, [1000], [0])
    summaries = {}
    for cell, (name, notifier, waiter) in zip(cells, placements):
        if name == "any":
            continue  # never ran: pending
        scale = split_scale if name == "split" else 1.0
        path = slices_bundle(os.path.join(folder, "cells", cell.label), lab_slices(7 if name == "same" else 8,
                             event_scale=scale), edit=_placement(name, notifier or 0, waiter or 0))
        with open(os.path.join(path, "summary.json"), encoding="utf-8") as fh:
            summaries[cell.label] = json.load(fh)
    plan = runner.RunPlan(lab=LAB_135, arm_names=list(LAB_135.arms), params=MeasureParams(n=200, install_n=20000,
                          rounds=7), folder=folder, command=["wakelab", "run", "--placement", "same,split"])
    doc = grid_mod.matrix_doc(plan, cells, summaries, "2026-10-01T06:00:00Z")
    bundle.atomic_write_text(os.path.join(folder, bundle.MATRIX_JSON), bundle.dumps(doc))
    return folder


# ---------------------------------------------------------------------------
# Synthetic grids: direction can be asserted
# ---------------------------------------------------------------------------


def test_split_cell_is_slower_than_same(tmp_path, capsys) -> None:
    grid = synthetic_grid(tmp_path / "grid")
    status, doc = compare_json(capsys, grid, "--fail-on-regression", "10")
    assert status == 1
    assert doc["baseline"] == "same" and [c["other"] for c in doc["comparisons"]] == ["split"]
    assert doc["grid"]["across"] == ["placement"] and doc["grid"]["baseline_cell"] == "same"
    event = arms_of(doc)["event"]
    assert event["verdict"] == cmp.SLOWER
    assert 1.6 < event["ratios"]["p50"]["ci_low"] < 2.0 < event["ratios"]["p50"]["ci_high"] < 2.6
    assert arms_of(doc)["sigusr1-self"]["verdict"] in (cmp.NO_DIFFERENCE, cmp.CANNOT_TELL)
    assert doc["comparisons"][0]["across"][0] == "placement same vs split"
    assert doc["comparisons"][0]["warnings"] == []
    # The other cell as the baseline: same is faster.
    status, doc = compare_json(capsys, grid, "--baseline-cell", "split")
    assert doc["baseline"] == "split" and arms_of(doc)["event"]["verdict"] == cmp.FASTER


def test_grid_text_names_the_cells_and_what_varies(tmp_path, capsys) -> None:
    grid = synthetic_grid(tmp_path / "grid", with_pending=True)
    status = main(["compare", grid])
    out = capsys.readouterr().out
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == "wakelab compare: grid %s, cells split against baseline cell same" % grid
    assert lines[1] == "  compared across: placement"
    assert "  - cell any not compared: no evidence (pending)" in lines
    assert "split AGAINST same" in lines
    assert any(line.startswith("  event ") and " slower " in line for line in lines)


def test_a_baseline_cell_that_does_not_exist(tmp_path) -> None:
    grid = synthetic_grid(tmp_path / "grid", with_pending=True)
    line = one_error_line(run_cli("compare", grid, "--baseline-cell", "nosuch"))
    assert line == "wakelab: error: %s has no cell nosuch (its cells: same, split, any)" % grid
    line = one_error_line(run_cli("compare", grid, "--baseline-cell", "any"))
    assert line == ("wakelab: error: %s: the baseline cell any has no evidence (pending): choose another with "
                    "--baseline-cell" % grid)


def test_a_grid_mixed_with_a_run_is_refused(tmp_path) -> None:
    grid = synthetic_grid(tmp_path / "grid")

    def other_arms(summary: Dict) -> None:
        for arm in summary["arms"]:
            arm["name"] = "x-" + arm["name"]

    run = slices_bundle(tmp_path / "run", lab_slices(3))
    for args in ((grid, run), (run, grid)):
        line = one_error_line(run_cli("compare", *args))
        assert line.startswith("wakelab: error: %s is a grid of runs: compare it alone (wakelab compare %s "
                               "[--baseline-cell NAME])" % (grid, grid))


def test_a_run_alone_is_refused(tmp_path) -> None:
    run = slices_bundle(tmp_path / "run", lab_slices(3))
    line = one_error_line(run_cli("compare", run))
    assert line == ("wakelab: error: compare needs BASELINE and at least one RUN, or a grid folder alone (one with "
                    "matrix.json); %s is not a grid" % run)


def test_unknown_across_name_with_a_grid(tmp_path) -> None:
    grid = synthetic_grid(tmp_path / "grid")
    result = run_cli("compare", grid, "--across", "weather")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "wakelab compare: error: argument --across: unknown name 'weather' (known: placement, settle, planted-delay, "
        "mode, interval, cpu-threads, cpu-procs, idle-hold, switch-interval, interpreter) (see wakelab compare --help)"]


def test_a_corrupt_cell_is_one_line(tmp_path) -> None:
    grid = synthetic_grid(tmp_path / "grid")
    with open(os.path.join(grid, "cells", "split", "summary.json"), "w", encoding="utf-8") as fh:
        fh.write("{")
    assert "is not valid JSON" in one_error_line(run_cli("compare", grid))


def test_load_grid_reads_the_dimensions_that_vary(tmp_path) -> None:
    grid = Grid.load(synthetic_grid(tmp_path / "grid", with_pending=True))
    assert [c.label for c in grid.cells] == ["same", "split", "any"]
    assert grid.cells[2].bundle is None and cmp.grid_across(grid) == ("placement",)


# ---------------------------------------------------------------------------
# A real --placement same,split grid: verdict words and intervals, never a direction
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_grid(tmp_path_factory) -> str:
    folder = str(tmp_path_factory.mktemp("realgrid") / "grid")
    result = run_cli("run", "--arms", "event,sigusr1-self", "--n", "300", "--placement", "same,split", "-q",
                     "--no-history", "-o", folder)
    assert result.returncode == 0, result.stderr
    return folder


def test_real_placement_grid_gives_a_verdict_with_an_interval(real_grid, capsys) -> None:
    status, doc = compare_json(capsys, real_grid)
    assert status == 0
    assert doc["grid"]["across"] == ["placement"]
    assert [c["other"] for c in doc["comparisons"]] == ["split"]
    event = arms_of(doc)["event"]
    assert event["verdict"] in (cmp.SLOWER, cmp.FASTER, cmp.NO_DIFFERENCE, cmp.CANNOT_TELL)
    p50 = event["ratios"]["p50"]
    assert p50["verdict"] == event["verdict"]
    assert 0 < p50["ci_low"] <= p50["ratio"] <= p50["ci_high"]
    assert p50["min_detectable_effect_pct"] > 0
    assert event["units_baseline"] >= 2 and event["units_other"] >= 2
    status = main(["compare", real_grid])
    out = capsys.readouterr().out
    assert status == 0 and "split AGAINST same" in out.splitlines()
    row = next(line for line in out.splitlines() if line.startswith("  event "))
    assert "×" in row and "(" in row  # the ratio with its interval


def test_real_grid_cell_against_itself_never_differs(real_grid, tmp_path, capsys) -> None:
    cell = os.path.join(real_grid, "cells", "same")
    copy = str(tmp_path / "copy")
    shutil.copytree(cell, copy)
    status, doc = compare_json(capsys, cell, copy)
    for arm in doc["comparisons"][0]["arms"]:
        assert arm["verdict"] in (cmp.NO_DIFFERENCE, cmp.CANNOT_TELL)


def test_a_cell_whose_evidence_is_gone_is_one_line(tmp_path) -> None:
    grid = synthetic_grid(tmp_path / "grid")
    shutil.rmtree(os.path.join(grid, "cells", "split"))
    line = one_error_line(run_cli("compare", grid))
    assert "cell split ran" in line and "the grid's evidence is incomplete" in line
