"""Grid folders through every output: ``report``, ``export -f csv|markdown|pyperf`` and ``history add``.

The grids are synthetic: cells made from the fixed Lab 135 summary of
conftest, with samples written beside them and figures recomputed from those
samples, so a figure in a page can be checked exactly.  One grid plants the
case the HTML report once drew green: a cell whose p50 fell to 0.56x of the
first cell's while its p99 went from 46 us to 10,189 us.  Hostile and partial
grids (a cell's folder gone, matrix.json corrupt, cells/ without its index, a
cell listed twice, a cell folder that is the grid itself) must give one line
and exit 2 from every reader, and write nothing.
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any, Callable, Dict, List, Sequence

import pytest

from wakelab.analysis.stats import summarize_latency
from wakelab.cli import main
from wakelab.evidence import bundle

BASE_EVENT_NS = [10_000 + 2 * i for i in range(980)] + [46_000] * 20  # p50 ~11 us, p99 46 us
TAIL_EVENT_NS = [5_700 + i for i in range(970)] + [10_189_000] * 30  # p50 ~6.1 us (0.56x), p99 10,189 us (~220x)
SIGNAL_NS = [2000 + i for i in range(200)]
ROUND_NS = [20_000_000, 18_000_000, 19_000_000, 21_000_000, 22_000_000, 20_500_000, 19_500_000]


def write_cell(folder: str, summary: Dict[str, Any], event_ns: Sequence[int]) -> Dict[str, Any]:
    """A cell's bundle: ``summary`` with event's samples ``event_ns`` (figures recomputed) and the fixed others."""
    doc = copy.deepcopy(summary)
    os.makedirs(folder, exist_ok=True)
    latency = {"event": list(event_ns), "sigusr1-self": SIGNAL_NS}
    for entry in doc["arms"]:
        name = entry["name"]
        if name in latency:
            entry["latency"] = summarize_latency(latency[name], 0).to_dict()
            raw = {"kind": "latency", "samples_ns": latency[name], "lost": 0, "warmup_discarded": 10, "components_ns": {}}
        else:
            raw = {"kind": "rate", "n_per_round": 20000, "round_ns": ROUND_NS, "baseline_round_ns": [400_000] * 7,
                   "warmup_rounds": 1}
        entry["workers"] = []  # one pooled run: the samples were made up, not cut by worker
        bundle.write_samples(folder, name, bundle.samples_doc(name, raw))
    bundle.write_bundle(folder, doc, None)
    return doc


def write_grid(root: str, summary: Dict[str, Any], cells: Sequence[tuple], pending: Sequence[str] = ()) -> str:
    """A grid folder of ``cells`` ((label, placement, event samples), in order) and ``pending`` cells that never ran."""
    os.makedirs(root, exist_ok=True)
    entries = []
    for label, placement, event_ns in cells:
        doc = copy.deepcopy(summary)
        doc["parameters"].update(placement=placement, notifier_cpu=0, waiter_cpu=0 if placement == "same" else 1)
        doc = write_cell(os.path.join(root, "cells", label), doc, event_ns)
        entries.append({"label": label, "folder": "cells/" + label, "dimensions": {"placement": placement},
                        "status": "done", "complete": True, "interpreter": doc["interpreter"]})
    for label in pending:
        entries.append({"label": label, "folder": "cells/" + label, "dimensions": {"placement": "any"},
                        "status": "pending", "complete": False, "interpreter": None})
    matrix = {"schema": "wakelab.matrix", "schema_version": 1, "lab": {"id": "135-signal-vs-event-wakeup", "title": "Lab 135"},
              "started_utc": "2026-10-01T06:00:00Z", "command": ["wakelab", "run"], "dimensions": ["placement"],
              "cells": entries, "arms": [], "complete": not pending}
    bundle.atomic_write_text(os.path.join(root, "matrix.json"), bundle.dumps(matrix))
    return root


@pytest.fixture
def tail_grid(tmp_path, lab135_summary) -> str:
    """Two cells: ``same`` (event p50 ~11 us, p99 46 us) and ``threads1`` (p50 0.56x, p99 ~220x worse)."""
    return write_grid(str(tmp_path / "grid"), lab135_summary,
                      [("same", "same", BASE_EVENT_NS), ("threads1", "split", TAIL_EVENT_NS)])


def cli(capsys, *args: str):
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


# --- tails: never green when the p99 got worse -------------------------------------------------


def test_the_planted_tail_regression_has_the_figures_it_claims(tail_grid) -> None:
    base = json.loads(read(os.path.join(tail_grid, "cells", "same", "summary.json")))
    tail = json.loads(read(os.path.join(tail_grid, "cells", "threads1", "summary.json")))
    event = [next(a for a in s["arms"] if a["name"] == "event")["latency"] for s in (base, tail)]
    assert round(event[1]["p50_ns"] / event[0]["p50_ns"], 2) == 0.56
    assert event[1]["p99_ns"] / event[0]["p99_ns"] > 200


@pytest.mark.parametrize("p50, p99, css, tail_worse", [
    (0.56, 220.0, "slower", True),   # the planted case: p50 better, tail 220x worse
    (0.56, 1.05, "faster", False),   # p99 within the noise: green
    (0.56, 0.5, "faster", False),
    (0.56, 1.11, "slower", True),    # just beyond the noise
    (0.56, None, "", False),         # no p99 to vouch for the tail: no green
    (1.0, 3.0, "slower", True),
    (1.5, 1.0, "slower", False),
    (1.05, 1.0, "", False),
    (None, 2.0, "slower", True),
])
def test_ratio_tone_needs_p50_and_p99_for_green(p50, p99, css, tail_worse) -> None:
    pytest.importorskip("plotly")
    from wakelab.report.html.runs import ratio_tone

    tone = ratio_tone(p50, p99)
    assert (tone.css, tone.tail_worse) == (css, tail_worse)


def _matrix_rows(page: str, arm: str) -> Dict[str, str]:
    """The rows of the page's grid matrix table of ``arm``, by cell label (raw HTML)."""
    table = re.search(r'<table class="matrix" data-arm="%s">(.*?)</table>' % re.escape(arm), page, flags=re.S)
    assert table, "no matrix table for %s" % arm
    rows = re.findall(r'<tr><th scope="row">([^<]*)</th>(.*?)</tr>', table.group(1), flags=re.S)
    return dict(rows)


def test_report_of_a_grid_never_draws_a_worse_tail_green(tail_grid, tmp_path, capsys) -> None:
    pytest.importorskip("plotly")
    out = str(tmp_path / "r.html")
    status, _, err = cli(capsys, "report", tail_grid, "-o", out)
    assert status == 0, err
    page = read(out)
    # The matrix: every cell, then each arm cell by cell.
    assert 'id="matrix"' in page and '<table class="cells">' in page
    rows = _matrix_rows(page, "event")
    assert list(rows) == ["same", "threads1"]
    assert "first" in rows["same"]
    tail = rows["threads1"]
    assert 'class="ratio faster"' not in tail
    assert re.search(r'<span class="ratio slower" title="p50 0\.56× but p99 2\d\d×: the tail got worse">0\.56× · '
                     r'<span class="tail">p99 2\d\d×</span>', tail), tail
    # The unchanged arm is drawn without colour; its row says "1.0×".
    assert 'class="ratio "' in _matrix_rows(page, "sigusr1-self")["threads1"]
    # The comparison table of the runs (#1 against #2), compare's verdicts, follows the same rule: its p50 is
    # faster, its p99 slower, and nothing is drawn green.
    compare = re.search(r'<table class="compare">(.*?)</table>', page, flags=re.S)
    assert compare
    event_row = re.search(r'<a href="#arm-event">event</a></th>(.*?)</tr>', compare.group(1), flags=re.S)
    assert event_row and 'ratio faster' not in event_row.group(1)
    assert re.search(r'ratio same[^>]*>p50 faster 0\.56×', event_row.group(1)), event_row.group(1)
    assert re.search(r'ratio slower[^>]*>p99 slower 2\d\d', event_row.group(1)), event_row.group(1)
    assert "faster" not in re.sub(r"ratio (slower|faster)", "", " ".join(rows.values()))


def test_without_the_tail_regression_a_faster_cell_is_green(tmp_path, lab135_summary, capsys) -> None:
    """The guard is the tail, not a refusal to colour: a cell faster at p50 and p99 is green."""
    pytest.importorskip("plotly")
    faster = [v // 2 for v in BASE_EVENT_NS]
    grid = write_grid(str(tmp_path / "grid"), lab135_summary, [("same", "same", BASE_EVENT_NS), ("fast", "split", faster)])
    out = str(tmp_path / "r.html")
    assert cli(capsys, "report", grid, "-o", out)[0] == 0
    assert '<span class="ratio faster" title="p50 faster and p99 not worse">0.5×' in _matrix_rows(read(out), "event")["fast"]


def test_markdown_marks_the_worse_tail(tail_grid, capsys) -> None:
    status, out, err = cli(capsys, "export", "-f", "markdown", tail_grid, "-o", "-")
    assert (status, err) == (0, "")
    event_rows = [line for line in out.splitlines() if line.startswith("| `event` |")]
    assert event_rows[0].endswith("| first | first |")
    assert re.search(r"\| 0\.56× \| 2\d\d× \(worse\) \|$", event_rows[1]), event_rows[1]


# --- every output takes a grid -----------------------------------------------------------------


def test_csv_markdown_and_pyperf_export_every_cell(tail_grid, tmp_path, capsys) -> None:
    status, out, err = cli(capsys, "export", "-f", "csv", tail_grid, "-o", "-")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split(",")[:4] == ["cell", "placement", "interpreter", "arm"]
    assert [line.split(",")[0] for line in lines[1:]] == ["same"] * 3 + ["threads1"] * 3
    status, out, err = cli(capsys, "export", "-f", "markdown", tail_grid, "-o", "-")
    assert (status, err) == (0, "")
    assert out.startswith("| Cell | Interpreter | Build | Placement | Complete |\n")
    pytest.importorskip("pyperf")
    status, out, err = cli(capsys, "export", "-f", "pyperf", tail_grid, "-o", str(tmp_path / "suites"))
    assert status == 0, err
    assert sorted(os.listdir(str(tmp_path / "suites"))) == ["same.json", "threads1.json"]


def test_a_cell_that_never_ran_is_noted_by_every_reader(tmp_path, lab135_summary, capsys) -> None:
    grid = write_grid(str(tmp_path / "grid"), lab135_summary, [("same", "same", BASE_EVENT_NS)], pending=["split"])
    status, out, err = cli(capsys, "export", "-f", "markdown", grid, "-o", "-")
    assert (status, err) == (0, "wakelab: cell split not exported: it has no evidence (the grid stopped before it)\n")
    assert "| split | - | - | any | not run |" in out
    status, out, err = cli(capsys, "history", "add", "--history", str(tmp_path / "h.db"), grid)
    assert (status, err) == (0, "")
    assert out.count("recorded as run") == 1
    pytest.importorskip("plotly")
    page_path = str(tmp_path / "r.html")
    assert cli(capsys, "report", grid, "-o", page_path)[0] == 0
    page = read(page_path)
    assert "%s: 1 cell not run yet (split)." % grid in page
    assert re.search(r'<tr><th scope="row">split</th><td>-</td><td>any</td><td><span class="badge bad">not run</span>', page)


# --- hostile and partial grids: one line, exit 2, nothing written -------------------------------


def _cell_folder_gone(grid: str) -> str:
    import shutil

    shutil.rmtree(os.path.join(grid, "cells", "threads1"))
    return "%s: cell threads1 ran (matrix.json says done) but its folder cells/threads1 is missing: the grid's evidence is incomplete" % grid


def _cell_summary_gone(grid: str) -> str:
    os.unlink(os.path.join(grid, "cells", "threads1", "summary.json"))
    return "%s: cell threads1 ran (matrix.json says done) but cells/threads1 has no summary.json: the grid's evidence" % grid


def _matrix_truncated(grid: str) -> str:
    path = os.path.join(grid, "matrix.json")
    text = read(path)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text[: len(text) // 2])
    return "%s is not valid JSON (line " % path


def _matrix_not_a_matrix(grid: str) -> str:
    with open(os.path.join(grid, "matrix.json"), "w", encoding="utf-8") as fh:
        fh.write('{"schema": "wakelab.summary"}')
    return "%s is not a wakelab matrix" % os.path.join(grid, "matrix.json")


def _edit_matrix(grid: str, edit: Callable[[Dict[str, Any]], None]) -> str:
    """Rewrite the grid's matrix.json with ``edit`` applied to its document; its path."""
    path = os.path.join(grid, "matrix.json")
    doc = json.loads(read(path))
    edit(doc)
    bundle.atomic_write_text(path, json.dumps(doc))
    return path


def _matrix_wrong_types(grid: str) -> str:
    path = _edit_matrix(grid, lambda doc: doc["cells"][0].update(status=7))
    return "%s is not a valid wakelab matrix: at cells/0/status" % path


def _matrix_gone(grid: str) -> str:
    os.unlink(os.path.join(grid, "matrix.json"))
    return "%s has cells/ but no matrix.json: the grid's index is missing; give one of its cells (%s" % (
        grid, os.path.join(grid, "cells", "same"))


def _cell_listed_twice(grid: str) -> str:
    path = _edit_matrix(grid, lambda doc: doc["cells"].append(dict(doc["cells"][0])))
    return "%s lists cell same more than once" % path


def _two_cells_one_folder(grid: str) -> str:
    path = _edit_matrix(grid, lambda doc: doc["cells"][1].update(folder="cells/same"))
    return "%s gives cells same and threads1 one folder (cells/same)" % path


def _cell_is_the_grid(grid: str) -> str:
    _edit_matrix(grid, lambda doc: doc["cells"][1].update(folder="cells/.."))
    return "%s: cell threads1's folder cells/.. leads outside the grid (to %s)" % (grid, os.path.realpath(grid))


def _matrix_is_a_fifo(grid: str) -> str:
    path = os.path.join(grid, "matrix.json")
    os.unlink(path)
    os.mkfifo(path)
    return "%s is a FIFO, not a regular file" % path


def _cell_summary_corrupt(grid: str) -> str:
    path = os.path.join(grid, "cells", "threads1", "summary.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("{")
    return "%s is not valid JSON" % path


HOSTILE = [_cell_folder_gone, _cell_summary_gone, _matrix_truncated, _matrix_not_a_matrix, _matrix_wrong_types, _matrix_gone,
           _cell_listed_twice, _two_cells_one_folder, _cell_is_the_grid, _matrix_is_a_fifo, _cell_summary_corrupt]
READERS = ["report", "csv", "markdown", "pyperf", "history"]


def _command(reader: str, grid: str, tmp_path) -> List[str]:
    if reader == "report":
        return ["report", grid, "-o", str(tmp_path / "out" / "r.html")]
    if reader == "history":
        return ["history", "add", "--history", str(tmp_path / "out" / "h.db"), grid]
    return ["export", "-f", reader, grid, "-o", str(tmp_path / "out") + os.sep]


@pytest.mark.parametrize("damage", HOSTILE, ids=[d.__name__.strip("_") for d in HOSTILE])
@pytest.mark.parametrize("reader", READERS)
def test_a_hostile_grid_is_one_line_exit_2_from_every_reader(tail_grid, tmp_path, capsys, damage, reader) -> None:
    if reader == "report":
        pytest.importorskip("plotly")
    if reader == "pyperf":
        pytest.importorskip("pyperf")
    expected = damage(tail_grid)
    os.mkdir(str(tmp_path / "out"))
    status, out, err = cli(capsys, *_command(reader, tail_grid, tmp_path))
    assert (status, out) == (2, ""), err
    assert err.startswith("wakelab: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert expected in err, err
    assert os.listdir(str(tmp_path / "out")) == []  # nothing written: no page, no export, no database


def test_show_and_compare_name_a_grid_that_lost_its_matrix(tail_grid, capsys) -> None:
    expected = "wakelab: error: %s, %s)\n" % (_matrix_gone(tail_grid), os.path.join(tail_grid, "cells", "threads1"))
    assert cli(capsys, "show", tail_grid) == (2, "", expected)
    assert cli(capsys, "compare", tail_grid) == (2, "", expected)
    assert cli(capsys, "compare", os.path.join(tail_grid, "cells", "same"), tail_grid) == (2, "", expected)


def test_a_grid_with_no_evidence_at_all_is_refused(tmp_path, lab135_summary, capsys) -> None:
    grid = write_grid(str(tmp_path / "grid"), lab135_summary, [], pending=["same", "split"])
    for args in (["export", "-f", "csv", grid, "-o", "-"], ["history", "add", "--history", str(tmp_path / "h.db"), grid]):
        status, out, err = cli(capsys, *args)
        assert (status, out, err) == (2, "", "wakelab: error: %s: no cell of this grid has evidence yet (it stopped before "
                                             "its first cell)\n" % grid)
    assert not os.path.exists(str(tmp_path / "h.db"))
