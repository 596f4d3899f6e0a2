"""Grids of runs: interpreters and conditions side by side."""

from __future__ import annotations

import json
import os

import pytest

from wakelab.core.model import MeasureParams
from wakelab.evidence.load import load_summary
from wakelab.harness import grid
from wakelab.core.placement import allowed_cpus
from wakelab.harness.runner import Execution, RunPlan
from wakelab.labs import LAB_135
from wakelab.report.matrix_text import format_matrix
from wakelab.report.text import format_summary

SMALL = MeasureParams(n=10, warmup=1, settle_us=200, install_n=300, rounds=2)


def test_expand_labels_only_what_varies() -> None:
    cells = grid.expand([None], [None], [("any", None, None)], [1000], [0, 1])
    assert [c.label for c in cells] == ["threads0", "threads1"]
    cells = grid.expand(["/a", "/b"], ["cpython-3.9.1", "cpython-3.13.0"], [("same", 0, 0), ("split", 0, 1)], [50], [0])
    assert [c.label for c in cells] == [
        "cpython-3.9.1_same", "cpython-3.9.1_split", "cpython-3.13.0_same", "cpython-3.13.0_split",
    ]
    assert grid.expand([None], [None], [("any", None, None)], [1000], [0])[0].label == "run"


def test_grid_writes_a_bundle_per_cell_and_a_matrix(tmp_path) -> None:
    base = RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=SMALL, folder=str(tmp_path),
                   execution=Execution(workers=1), render_text=format_summary)
    cells = grid.expand([None], [None], [("any", None, None)], [100, 2000], [0, 1])
    events = []
    doc = grid.run_grid(base, cells, lambda e, info: events.append(e), render_matrix=format_matrix)
    assert events.count("cell-start") == 4
    assert doc["complete"] is True
    assert [c["label"] for c in doc["cells"]] == ["settle100us_threads0", "settle100us_threads1", "settle2000us_threads0", "settle2000us_threads1"]
    for cell in doc["cells"]:
        summary = load_summary(os.path.join(str(tmp_path), cell["folder"]))
        assert summary["parameters"]["settle_us"] == cell["dimensions"]["settle_us"]
        assert summary["conditions"]["cpu_threads"] == cell["dimensions"]["cpu_threads"]
    assert json.loads((tmp_path / "matrix.json").read_text()) == doc
    text = (tmp_path / "matrix.txt").read_text(encoding="utf-8")
    assert text == format_matrix(doc)
    assert "\nevent\n" in text and "\nsignal-install\n" in text
    assert [a["name"] for a in doc["arms"]] == ["event", "signal-install"]
    assert [r["cell"] for r in doc["arms"][0]["rows"]] == [c["label"] for c in doc["cells"]]


@pytest.mark.skipif(len(allowed_cpus()) < 2, reason="needs two CPUs")
def test_placement_grid_records_where_each_side_ran(tmp_path) -> None:
    base = RunPlan(lab=LAB_135, arm_names=["event"], params=SMALL, folder=str(tmp_path), execution=Execution(workers=1))
    a, b = allowed_cpus()[:2]
    cells = grid.expand([None], [None], [("same", a, a), ("split", a, b)], [200], [0])
    doc = grid.run_grid(base, cells)
    same = load_summary(os.path.join(str(tmp_path), doc["cells"][0]["folder"]))["arms"][0]["info"]
    split = load_summary(os.path.join(str(tmp_path), doc["cells"][1]["folder"]))["arms"][0]["info"]
    assert (same["notifier_cpu_seen"], same["waiter_cpu_seen"]) == (a, a)
    assert (split["notifier_cpu_seen"], split["waiter_cpu_seen"]) == (a, b)


def test_show_renders_a_grid_folder_and_refuses_a_bad_matrix(tmp_path, capsys) -> None:
    from wakelab.cli import main

    base = RunPlan(lab=LAB_135, arm_names=["event"], params=SMALL, folder=str(tmp_path), execution=Execution(workers=1))
    doc = grid.run_grid(base, grid.expand([None], [None], [("any", None, None)], [100, 200], [0]))
    assert main(["show", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == format_matrix(doc) and err == ""
    for bad in ('{"schema": "wakelab.matrix", "schema_version": 1}', "[1]", '{"schema": "wakelab.matrix", "schema_version": 1, "cells": "x"}'):
        (tmp_path / "matrix.json").write_text(bad, encoding="utf-8")
        assert main(["show", str(tmp_path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and err.startswith("wakelab: error: ")
    doc["cells"][0]["folder"] = "../../etc"
    (tmp_path / "matrix.json").write_text(json.dumps(doc), encoding="utf-8")
    assert main(["show", str(tmp_path)]) == 2
    assert "not a valid wakelab matrix: at cells/0/folder" in capsys.readouterr().err
