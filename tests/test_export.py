"""``wakelab export``: rounded CSV, raw-samples CSV, golden Markdown, canonical JSON, pyperf suites
read by the real pyperf, grids, and where the files go by default."""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import re
import subprocess
import sys
from typing import Any, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import GOLDEN
from wakelab.core.model import MeasureParams
from wakelab.cli import main
from wakelab.errors import EvidenceError, UsageError
from wakelab.evidence import bundle
from wakelab.evidence.model import Bundle, Grid
from wakelab.export import EXPORTERS
from wakelab.export.csv_format import INTEGER_COLUMNS, format_decimal, format_integer
from wakelab.export.markdown import escape
from wakelab.export.pyperf_format import pyperf_date, split_by_worker
from wakelab.export.samples_csv import worker_slices
from wakelab.harness import grid as grid_mod
from wakelab.harness.runner import RunPlan, run_plan
from wakelab.labs import LAB_135

# The fixed samples behind conftest's lab135_summary (event 10..209 µs, signal 2.000..2.199 µs).
EVENT_NS = [10_000 + 1000 * i for i in range(200)]
SIGNAL_NS = [2000 + i for i in range(200)]
ROUND_NS = [20_000_000, 18_000_000, 19_000_000, 21_000_000, 22_000_000, 20_500_000, 19_500_000]
BASELINE_NS = [400_000] * 7

# conftest's lab135_summary as CSV, every figure column in its one fixed format.
EXPECTED_CSV = """\
arm,family,kind,waiter,scope,status,native,n,lost,min_ns,p50_ns,p90_ns,p99_ns,p99_9_ns,max_ns,mean_ns,stdev_ns,\
rounds,n_per_round,ops_per_s,min_ops_per_s,max_ops_per_s,baseline_ops_per_s,ns_per_op,net_ns_per_op
event,threads,latency,blocked,cross-thread,ok,native-condvar,200,0,10000,109500.0,189100.0,207010.0,,209000,109500.0,57879.2,\
,,,,,,,
sigusr1-self,signals,latency,spinning,self,ok,native-self-signal,200,0,2000,2099.5,2179.1,2197.0,,2199,2099.5,57.9,\
,,,,,,,
signal-install,signals,rate,none,self,ok,native-sigaction-install,,,,,,,,,,,7,20000,1000000,909091,1111111,50000000,1000.0,980.0
"""


def write_bundle(folder, summary: Dict[str, Any], with_samples: bool = True, event_scale: int = 1) -> str:
    """A bundle of ``summary`` in ``folder``, with the samples conftest's figures come from
    (``event``'s times ``event_scale``)."""
    os.makedirs(folder, exist_ok=True)
    (folder / "summary.json").write_text(bundle.dumps(summary), encoding="utf-8")
    if with_samples:
        latency = {"event": [ns * event_scale for ns in EVENT_NS], "sigusr1-self": SIGNAL_NS}
        for arm_name, samples in latency.items():
            raw = {"kind": "latency", "samples_ns": samples, "lost": 0, "warmup_discarded": 10, "components_ns": {}}
            bundle.write_samples(str(folder), arm_name, bundle.samples_doc(arm_name, raw))
        raw = {"kind": "rate", "n_per_round": 20000, "round_ns": ROUND_NS, "baseline_round_ns": BASELINE_NS, "warmup_rounds": 1}
        bundle.write_samples(str(folder), "signal-install", bundle.samples_doc("signal-install", raw))
    return str(folder)


def arm(summary: Dict[str, Any], name: str) -> Dict[str, Any]:
    return next(a for a in summary["arms"] if a["name"] == name)


def golden(name: str) -> str:
    with open(os.path.join(GOLDEN, name), encoding="utf-8") as fh:
        return fh.read()


def export(capsys, *args: str):
    status = main(["export", *args])
    out, err = capsys.readouterr()
    return status, out, err


def shown(path: str) -> str:
    """A default output path as wakelab prints it: relative when under the working directory."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


def rows_of(text: str) -> List[Dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# -- csv: rounded figures ---------------------------------------------------------------------------


def test_csv_writes_each_figure_in_its_fixed_format(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    assert export(capsys, folder, "-f", "csv", "-o", "-") == (0, EXPECTED_CSV, "")


def test_csv_rounds_float_artefacts(tmp_path, lab135_summary, capsys) -> None:
    event = arm(lab135_summary, "event")
    event["latency"].update(p50_ns=42741.39999999999, p90_ns=0.30000000000000004, mean_ns=-0.01)
    arm(lab135_summary, "signal-install")["rate"].update(ops_per_s=227817.49999999997, ns_per_op=4389.499999999999)
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "csv", "-o", "-")
    assert not re.search(r"\.\d{2}", out)  # never more than one decimal
    rows = rows_of(out)
    assert (rows[0]["p50_ns"], rows[0]["p90_ns"], rows[0]["mean_ns"]) == ("42741.4", "0.3", "0.0")  # no "-0.0"
    assert (rows[2]["ops_per_s"], rows[2]["ns_per_op"]) == ("227817", "4389.5")


def test_every_csv_figure_column_has_one_format(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "csv", "-o", "-")
    figure_columns = out.splitlines()[0].split(",")[7:]
    for row in rows_of(out):
        for column in figure_columns:
            cell = row[column]
            if cell == "":
                continue
            pattern = r"-?\d+" if column in INTEGER_COLUMNS else r"-?\d+\.\d"
            assert re.fullmatch(pattern, cell), (column, cell)


def test_rounding_helpers() -> None:
    assert format_decimal(42741.39999999999) == "42741.4"
    assert format_decimal(109500) == "109500.0"
    assert format_decimal(2197.01) == "2197.0"
    assert format_decimal(None) == "" and format_decimal(True) == "" and format_decimal("7") == ""
    assert format_integer(909090.9090909091) == "909091"
    assert format_integer(7) == "7" and format_integer(None) == ""


def test_csv_figures_stay_within_rounding_of_the_summary(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "csv", "-o", "-")
    rows = rows_of(out)
    assert [r["arm"] for r in rows] == ["event", "sigusr1-self", "signal-install"]
    for row, entry in zip(rows, lab135_summary["arms"]):
        figures = entry["latency"] or entry["rate"]
        for column, cell in row.items():
            if column in figures:
                expected = figures[column]
                assert (cell == "") if expected is None else (abs(float(cell) - expected) <= 0.5), column
    event, install = rows[0], rows[2]
    assert event["p99_9_ns"] == ""  # n = 200 is too few for p99.9
    assert event["ops_per_s"] == "" and install["p50_ns"] == ""  # no such figure for that kind


def test_csv_defuses_spreadsheet_formulas(tmp_path, lab135_summary, capsys) -> None:
    arm(lab135_summary, "event")["family"] = "=HYPERLINK(\"http://x\")"
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "csv", "-o", "-")
    assert rows_of(out)[0]["family"] == "'=HYPERLINK(\"http://x\")"


# -- samples-csv -------------------------------------------------------------------------------------


def test_samples_csv_has_a_row_per_wake(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, out, err = export(capsys, folder, "-f", "samples-csv", "-o", "-")
    assert status == 0
    assert err == "wakelab: rate arms time rounds, not wakes, and are not in the samples CSV: signal-install\n"
    assert out.splitlines()[0] == "arm,worker,repetition,wake,latency_ns"
    rows = rows_of(out)
    assert len(rows) == 400
    event = [r for r in rows if r["arm"] == "event"]
    assert [int(r["latency_ns"]) for r in event] == EVENT_NS
    assert [int(r["wake"]) for r in event] == list(range(200))
    # conftest's summary has no per-worker counts: the worker is unknown (NA), the repetition 0.
    assert {r["worker"] for r in rows} == {""} and {r["repetition"] for r in rows} == {"0"}


def test_samples_csv_follows_the_workers_and_their_repetitions(tmp_path, lab135_summary, capsys) -> None:
    arm(lab135_summary, "event")["workers"] = [
        {"pid": 101, "n": 120, "lost": 0, "p50_ns": 1.0, "max_ns": 1},
        {"pid": 102, "n": 80, "lost": 0, "p50_ns": 1.0, "max_ns": 1, "repetition": 2},
    ]
    folder = write_bundle(tmp_path / "run", lab135_summary)
    _, out, _ = export(capsys, folder, "-f", "samples-csv", "-o", "-")
    event = [r for r in rows_of(out) if r["arm"] == "event"]
    assert [(r["worker"], r["repetition"]) for r in event] == [("0", "0")] * 120 + [("1", "2")] * 80
    assert event[120]["wake"] == "0" and event[120]["latency_ns"] == str(EVENT_NS[120])  # wake index per worker
    assert event[-1]["wake"] == "79"


def test_worker_slices_need_counts_that_add_up() -> None:
    from wakelab.evidence.model import ArmRecord

    two = ArmRecord.from_dict({"name": "event", "workers": [{"n": 2}, {"n": 1, "repetition": 1}]})
    assert worker_slices(two, 3) == [(0, 0, 0, 2), (1, 1, 2, 3)]
    assert worker_slices(two, 4) == [(None, 0, 0, 4)]
    assert worker_slices(ArmRecord.from_dict({"name": "event", "workers": [{"n": -1}, {"n": 4}]}), 3) == [(None, 0, 0, 3)]
    assert worker_slices(ArmRecord.from_dict({"name": "event"}), 3) == [(None, 0, 0, 3)]


def test_samples_csv_refuses_samples_that_disagree_with_the_summary(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "event.json").read_text())
    doc["samples_ns"] = doc["samples_ns"][:-1]
    bundle.write_samples(folder, "event", doc)
    status, _, err = export(capsys, folder, "-f", "samples-csv")
    assert status == 2 and "hold 199 wakes but summary.json says n = 200" in err
    assert not (tmp_path / "run" / "export").exists()


# -- markdown, json ----------------------------------------------------------------------------------


def test_markdown_golden(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    assert export(capsys, folder, "--format", "markdown", "-o", "-") == (0, golden("export_lab135.md"), "")


def test_json_is_the_canonical_summary(tmp_path, lab135_summary, capsys) -> None:
    lab135_summary["conditions"] = {"future_field": [1, 2]}  # unknown to this exporter: kept as is
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    status, out, err = export(capsys, os.path.join(folder, "summary.json"), "-f", "json", "-o", "-")
    assert (status, err) == (0, "")
    assert out == bundle.dumps(lab135_summary) == (tmp_path / "run" / "summary.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt, expected", [("csv", EXPECTED_CSV), ("markdown", None)])
def test_output_file_is_written_whole(tmp_path, lab135_summary, capsys, fmt, expected) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    target = tmp_path / "out" / "table.txt"
    target.parent.mkdir()
    target.write_text("old contents", encoding="utf-8")
    assert export(capsys, folder, "-f", fmt, "-o", str(target)) == (0, "", "wakelab: wrote %s%s\n" % (
        target, " (every wake: -f samples-csv)" if fmt == "csv" else ""))
    assert target.read_text(encoding="utf-8") == (expected or golden("export_lab135.md"))
    assert os.listdir(target.parent) == ["table.txt"]  # no temporary file left behind


# -- where the files go -------------------------------------------------------------------------------

DEFAULT_NAMES = {
    "csv": "export/run.csv",
    "samples-csv": "export/run.samples.csv",
    "markdown": "export/run.md",
    "json": "export/run.summary.json",
    "pyperf": "export/pyperf/run.json",
}


@pytest.mark.parametrize("fmt", list(DEFAULT_NAMES))
def test_default_output_goes_beside_the_evidence(tmp_path, lab135_summary, capsys, monkeypatch, fmt) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "evidence" / "run", lab135_summary)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    status, out, err = export(capsys, folder, "-f", fmt)
    assert (status, out) == (0, "")
    written = os.path.join(folder, DEFAULT_NAMES[fmt])
    assert os.path.isfile(written)
    assert os.listdir(work) == []  # nothing in the working directory
    assert err.splitlines()[-1].startswith("wakelab: wrote %s" % written)  # absolute: not under the working directory
    # A run's own files are untouched: the bundle still loads, and its summary is as written.
    assert Bundle.load(folder).summary == lab135_summary


def test_default_output_path_is_relative_when_under_the_working_directory(tmp_path, lab135_summary, capsys, monkeypatch) -> None:
    write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    monkeypatch.chdir(tmp_path)
    assert export(capsys, "run", "-f", "markdown") == (0, "", "wakelab: wrote run/export/run.md\n")
    assert (tmp_path / "run" / "export" / "run.md").read_text(encoding="utf-8") == golden("export_lab135.md")


def test_output_into_an_existing_folder_uses_the_default_name(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    assert export(capsys, folder, "-f", "markdown", "-o", str(out_dir))[0] == 0
    assert os.listdir(out_dir) == ["run.md"]
    assert export(capsys, folder, "-f", "csv", "-o", str(tmp_path / "new") + os.sep)[0] == 0
    assert os.listdir(tmp_path / "new") == ["run.csv"]


def test_an_export_again_replaces_its_files(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    assert export(capsys, folder, "-f", "csv")[0] == 0
    arm(lab135_summary, "event")["latency"]["p50_ns"] = 1234.56
    write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    assert export(capsys, folder, "-f", "csv")[0] == 0
    assert rows_of((tmp_path / "run" / "export" / "run.csv").read_text())[0]["p50_ns"] == "1234.6"
    assert sorted(os.listdir(tmp_path / "run" / "export")) == ["run.csv"]


# -- markdown escaping -----------------------------------------------------------------------------

HOSTILE = {
    "family": "a|b",
    "waiter": "<b>bold</b>",
    "scope": "*x* [link](http://e.x) `code` ~~s~~ \\",
}
HOSTILE_REASON = "no | compiler <script>alert(1)</script>\nsecond _line_ &amp;"


def _render_table_cells(markdown_text: str) -> List[List[str]]:
    """Rows of plain cell texts of every table, as a GFM renderer sees them."""
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    rows: List[List[str]] = []
    row: List[str] = []
    tokens = md.parse(markdown_text)
    for i, token in enumerate(tokens):
        if token.type == "tr_open":
            row = []
        elif token.type in ("td_open", "th_open"):
            inline = tokens[i + 1]
            assert inline.type == "inline"
            kinds = {child.type for child in inline.children or []}
            assert kinds <= {"text", "code_inline"}, (inline.content, kinds)  # no links, emphasis, html
            row.append("".join(child.content for child in inline.children or []))
        elif token.type == "tr_close":
            rows.append(row)
    return rows


def test_markdown_escapes_evidence_strings(tmp_path, lab135_summary, capsys) -> None:
    arm(lab135_summary, "event").update(HOSTILE)
    install = arm(lab135_summary, "signal-install")
    install.update(status="skipped", reason=HOSTILE_REASON, rate=None, samples_file=None)
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "markdown", "-o", "-")
    assert "<b>" not in out and "<script>" not in out
    assert "| a\\|b | &lt;b&gt;bold&lt;/b&gt; | \\*x\\* \\[link\\](http://e.x) \\`code\\` \\~\\~s\\~\\~ \\\\ |" in out
    assert "| `signal-install` | skipped | no \\| compiler &lt;script&gt;alert(1)&lt;/script&gt; second \\_line\\_ &amp;amp; |" in out
    rows = _render_table_cells(out)
    assert rows[1][:4] == ["event", HOSTILE["family"], HOSTILE["waiter"], HOSTILE["scope"]]
    assert ["signal-install", "skipped", " ".join(HOSTILE_REASON.split())] in rows
    assert {len(r) for r in rows[:3]} == {13}  # header and both rows of the latency table: no cell split


# escape() turns these into spaces: a table row is one line.
CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40).filter(lambda t: CONTROLS.sub(" ", t).strip()))
def test_escaped_text_renders_as_itself(text) -> None:
    rows = _render_table_cells("| h |\n|:---|\n| %s |\n" % escape(text))
    assert len(rows) == 2 and len(rows[1]) == 1  # one cell: no "|" escaped the escaping
    # The cell reads as the text itself: markup stays literal.
    assert rows[1][0].split() == CONTROLS.sub(" ", text).split()


def test_markdown_labels_a_nearest_floor(tmp_path, lab135_summary, capsys) -> None:
    event, signal, install = lab135_summary["arms"]
    event.update(native="native-condvar", native_match="matched")
    signal.update(native="native-self-signal", native_match="nearest")
    condvar = dict(copy.deepcopy(event), name="native-condvar", family="native", native=None, native_match=None, samples_file=None)
    condvar["latency"]["p50_ns"] = 22_000.0
    self_signal = dict(copy.deepcopy(signal), name="native-self-signal", family="native", native=None, native_match=None,
                       samples_file=None)
    self_signal["latency"]["p50_ns"] = 1_050.0
    lab135_summary["arms"] = [event, signal, install, condvar, self_signal]
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "markdown", "-o", "-")
    cells = _render_table_cells(out)
    rows = {row[0]: row for row in cells}
    assert cells[0][-1] == "p50 vs C"
    assert rows["event"][-1] == "5.0×"
    assert rows["sigusr1-self"][-1] == "2.0× (nearest floor)"
    assert rows["native-condvar"][-1] == "-"
    assert out.endswith(
        "\n\n_vs C_: the arm's figure over its C floor's, both from this run (for rates: how many times faster C is). "
        "A plain ratio has the same experiment in C (same scope, waiter state and t1) and is the interpreter's share; "
        "one marked _nearest floor_ is against the closest C experiment there is, which differs, so it is not.\n")


# -- pyperf ----------------------------------------------------------------------------------------


def test_pyperf_writes_one_suite_holding_every_arm_in_seconds(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    target = tmp_path / "out" / "before.json"
    status, out, err = export(capsys, folder, "-f", "pyperf", "-o", str(target))
    assert (status, out) == (0, "")
    assert err == ("wakelab: wrote %s (compare with another run's: python -m pyperf compare_to %s OTHER.json --table)\n"
                   % (target, target))
    assert os.listdir(tmp_path / "out") == ["before.json"]

    suite = pyperf.BenchmarkSuite.load(str(target))
    assert suite.get_benchmark_names() == ["event", "sigusr1-self", "signal-install", "signal-install.empty-loop"]
    event = suite.get_benchmark("event")
    assert event.get_unit() == "second"
    assert event.get_nrun() == 1 and event.get_values() == tuple(ns / 1e9 for ns in EVENT_NS)
    meta = event.get_metadata()
    assert meta["python_version"] == "3.13.5" and meta["python_implementation"] == "cpython"
    assert meta["hostname"] == "testbox" and meta["cpu_count"] == 2 and meta["loops"] == 1
    assert meta["date"] == "2026-10-01 06:00:00" and meta["duration"] == 0.5
    assert meta["wakelab_version"] == "0.1.0" and meta["wakelab_waiter"] == "blocked"
    assert meta["wakelab_warmup_discarded"] == 10 and meta["wakelab_lost"] == 0

    install = suite.get_benchmark("signal-install")
    assert install.get_values() == tuple(ns / 20000 / 1e9 for ns in ROUND_NS)  # seconds per call
    assert install.get_metadata()["inner_loops"] == 20000
    assert install.median() == pytest.approx(1e-6)  # 1,000,000 ops/s in summary.json


def test_pyperf_output_folder_gets_the_run_name(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "lab135-run", lab135_summary)
    assert export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p"))[0] == 0  # not .json: a folder
    assert os.listdir(tmp_path / "p") == ["lab135-run.json"]


def test_pyperf_runs_follow_the_workers(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    arm(lab135_summary, "event")["workers"] = [
        {"pid": 101, "n": 120, "lost": 0, "p50_ns": 1.0, "max_ns": 1, "applied": {"cpu": 0}},
        {"pid": 102, "n": 80, "lost": 0, "p50_ns": 1.0, "max_ns": 1, "applied": {"cpu": 1}},
    ]
    folder = write_bundle(tmp_path / "run", lab135_summary)
    assert export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p.json"))[0] == 0
    event = pyperf.BenchmarkSuite.load(str(tmp_path / "p.json")).get_benchmark("event")
    runs = event.get_runs()
    assert [len(r.values) for r in runs] == [120, 80]
    assert runs[1].values[0] == EVENT_NS[120] / 1e9  # worker order is kept
    assert [r.get_metadata()["wakelab_worker_pid"] for r in runs] == [101, 102]
    assert runs[0].get_metadata()["wakelab_worker_applied"] == '{"cpu":0}'
    assert "duration" not in runs[0].get_metadata()  # the arm's wall time covers both workers


def test_split_by_worker_needs_counts_that_add_up() -> None:
    from wakelab.evidence.model import ArmRecord

    two = ArmRecord.from_dict({"name": "event", "kind": "latency", "workers": [{"n": 2}, {"n": 1}]})
    assert split_by_worker(two, [1, 2, 3]) == [(0, [1, 2]), (1, [3])]
    assert split_by_worker(two, [1, 2, 3, 4]) == [(-1, [1, 2, 3, 4])]
    rate = ArmRecord.from_dict({"name": "install", "kind": "rate", "workers": [{"rounds": 1}, {"rounds": 2}]})
    assert split_by_worker(rate, [1, 2, 3]) == [(0, [1]), (1, [2, 3])]
    one = ArmRecord.from_dict({"name": "event", "kind": "latency", "workers": [{"n": 3}]})
    assert split_by_worker(one, [1, 2, 3]) == [(-1, [1, 2, 3])]  # one worker: one run, no worker metadata
    assert split_by_worker(ArmRecord.from_dict({"name": "event", "kind": "latency"}), [1, 2, 3]) == [(-1, [1, 2, 3])]


def test_pyperf_leaves_out_what_it_cannot_hold(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    install = arm(lab135_summary, "signal-install")
    install.update(status="skipped", reason="not\non this box", rate=None, samples_file=None)
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "sigusr1-self.json").read_text())
    doc["samples_ns"][5] = 0
    bundle.write_samples(folder, "sigusr1-self", doc)
    target = tmp_path / "p.json"
    status, _, err = export(capsys, folder, "-f", "pyperf", "-o", str(target))
    assert status == 0
    assert err.splitlines()[:2] == [
        "wakelab: sigusr1-self not exported: it has a 0 ns sample and pyperf values must be > 0",
        "wakelab: arm signal-install not exported: skipped (not on this box)",
    ]
    assert pyperf.BenchmarkSuite.load(str(target)).get_benchmark_names() == ["event"]


def test_pyperf_missing_is_one_clear_error(tmp_path, lab135_summary, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyperf", None)  # import pyperf -> ImportError
    evidence = Bundle.load(write_bundle(tmp_path / "run", lab135_summary))
    with pytest.raises(UsageError, match=r"--format pyperf needs the pyperf package, which is not installed: pip install 'wakelab\[pyperf\]'"):
        EXPORTERS["pyperf"].serialize(evidence)


def test_pyperf_date() -> None:
    assert pyperf_date("2026-10-01T06:00:00Z") == "2026-10-01 06:00:00"
    assert pyperf_date("2026-10-01T08:00:00+02:00") == "2026-10-01 06:00:00"
    assert pyperf_date("yesterday") is None and pyperf_date(None) is None


@pytest.mark.parametrize("component", ["../../etc/passwd", "delivery\n", ""])
def test_component_names_must_be_plain(tmp_path, lab135_summary, component) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "event.json").read_text())
    doc["components_ns"] = {component: [1] * 200}
    bundle.write_samples(folder, "event", doc)
    with pytest.raises(EvidenceError, match="component name .* is not a plain name"):
        EXPORTERS["pyperf"].serialize(Bundle.load(folder))


def test_components_become_benchmarks_of_their_own(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "event.json").read_text())
    doc["components_ns"] = {"delivery": [ns // 2 for ns in EVENT_NS]}
    bundle.write_samples(folder, "event", doc)
    assert export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p.json"))[0] == 0
    delivery = pyperf.BenchmarkSuite.load(str(tmp_path / "p.json")).get_benchmark("event.delivery")
    assert delivery.get_values() == tuple(ns // 2 / 1e9 for ns in EVENT_NS)


# -- pyperf: the real pyperf on real runs -------------------------------------------------------------


@pytest.fixture(scope="module")
def two_real_runs(tmp_path_factory) -> List[str]:
    """Two real bundles (event, pipe and signal-install, tiny), exported to pyperf suites by default."""
    pytest.importorskip("pyperf")
    params = MeasureParams(n=30, warmup=2, settle_us=200, timeout_s=1.0, install_n=200, rounds=3)
    suites = []
    for name in ("before", "after"):
        folder = str(tmp_path_factory.mktemp("runs") / name)
        os.mkdir(folder)
        plan = RunPlan(lab=LAB_135, arm_names=["event", "pipe", "signal-install"], params=params, folder=folder, command=["test"])
        run_plan(plan)
        assert main(["export", folder, "-f", "pyperf"]) == 0
        suites.append(os.path.join(folder, "export", "pyperf", name + ".json"))
    return suites


def pyperf_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyperf", *args], capture_output=True, text=True, timeout=120)


def listed_benchmarks(output: str) -> List[str]:
    """Benchmark names of a compare_to --table: its rows, and those it hid as not significant."""
    names = re.findall(r"^\| ([A-Za-z0-9.-]+) +\|", output, flags=re.MULTILINE)
    hidden = re.search(r"^Benchmark hidden because not significant \(\d+\): (.*)$", output, flags=re.MULTILINE)
    return sorted(set(names + (hidden.group(1).split(", ") if hidden else [])) - {"Benchmark", "Geometric"})


def test_pyperf_compare_to_compares_two_runs_as_suites(two_real_runs) -> None:
    before, after = two_real_runs
    result = pyperf_cli("compare_to", before, after, "--table")
    assert result.returncode == 0, result.stderr
    # Real timings: pyperf tables the significant differences and names the others below.
    assert listed_benchmarks(result.stdout) == ["event", "pipe", "signal-install", "signal-install.empty-loop"]
    if result.stdout.startswith("+"):
        header = result.stdout.splitlines()[1]
        assert re.fullmatch(r"\| Benchmark +\| before +\| after +\|", header), header  # columns named after the runs


def test_pyperf_compare_to_tables_a_planted_difference(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    suites = []
    for name, scale in (("before", 1), ("after", 3)):
        folder = write_bundle(tmp_path / name, lab135_summary, event_scale=scale)
        assert export(capsys, folder, "-f", "pyperf")[0] == 0
        suites.append(str(tmp_path / name / "export" / "pyperf" / (name + ".json")))
    result = pyperf_cli("compare_to", *suites, "--table")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"\| Benchmark +\| before +\| after +\|", lines[1]), result.stdout
    assert re.search(r"^\| event +\| 110 us +\| 328 us: 3\.00x slower +\|$", result.stdout, flags=re.MULTILINE), result.stdout
    assert listed_benchmarks(result.stdout) == ["event", "signal-install", "signal-install.empty-loop", "sigusr1-self"]


def test_real_runs_export_one_pyperf_run_per_worker(two_real_runs) -> None:
    import pyperf

    for path in two_real_runs:
        with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(path))), "summary.json"), encoding="utf-8") as fh:
            summary = json.load(fh)
        suite = pyperf.BenchmarkSuite.load(path)
        for entry in summary["arms"]:
            bench = suite.get_benchmark(entry["name"])
            assert bench.get_nrun() == max(1, len(entry["workers"]))
            expected = entry["latency"]["n"] if entry["kind"] == "latency" else entry["rate"]["rounds"]
            assert bench.get_nvalue() == expected


def test_pyperf_stats_and_hist_read_one_arm_of_the_suite(two_real_runs) -> None:
    stats = pyperf_cli("stats", "-b", "event", two_real_runs[0])
    assert stats.returncode == 0, stats.stderr
    assert "Mean +- std dev" in stats.stdout and "Total number of values: 30" in stats.stdout
    hist = pyperf_cli("hist", "-b", "pipe", two_real_runs[0])
    assert hist.returncode == 0, hist.stderr
    assert " us: " in hist.stdout or " ms: " in hist.stdout or " ns: " in hist.stdout


# -- grids -------------------------------------------------------------------------------------------


def make_grid(tmp_path, lab135_summary, pending: bool = False) -> str:
    """A grid folder of two done cells (3.12 same, 3.13 split) from fixture bundles (and a pending one)."""
    folder = tmp_path / "grid"
    base = RunPlan(lab=LAB_135, arm_names=list(LAB_135.arms), params=MeasureParams(n=200), folder=str(folder), command=["t"])
    cells = grid_mod.expand(["/py12", "/py13"], ["cpython-3.12.1", "cpython-3.13.5"], [("same", 0, 0), ("split", 0, 1)], [1000], [0])
    chosen = [cells[0], cells[3]] + ([cells[1]] if pending else [])
    summaries = {}
    for cell, version, scale in ((chosen[0], "3.12.1", 1), (chosen[1], "3.13.5", 2)):
        summary = copy.deepcopy(lab135_summary)
        summary["interpreter"]["version"] = version
        arm(summary, "event")["latency"]["p50_ns"] *= scale
        write_bundle(folder / "cells" / cell.label, summary, event_scale=scale)
        summaries[cell.label] = summary
    doc = grid_mod.matrix_doc(base, chosen, summaries, "2026-10-01T06:00:00Z")
    (folder / "matrix.json").write_text(bundle.dumps(doc), encoding="utf-8")
    return str(folder)


def test_grid_csv_has_the_cell_labels_as_columns(tmp_path, lab135_summary, capsys) -> None:
    folder = make_grid(tmp_path, lab135_summary)
    status, out, err = export(capsys, folder, "-f", "csv")
    assert (status, out) == (0, "")
    text = (tmp_path / "grid" / "export" / "grid.csv").read_text(encoding="utf-8")
    header = text.splitlines()[0].split(",")
    assert header[:6] == ["cell", "cpu_threads", "placement", "python", "settle_us", "interpreter"]
    assert header[6:] == EXPECTED_CSV.splitlines()[0].split(",")
    rows = rows_of(text)
    assert [(r["cell"], r["arm"]) for r in rows] == [
        ("cpython-3.12.1_same", "event"), ("cpython-3.12.1_same", "sigusr1-self"), ("cpython-3.12.1_same", "signal-install"),
        ("cpython-3.13.5_split", "event"), ("cpython-3.13.5_split", "sigusr1-self"), ("cpython-3.13.5_split", "signal-install"),
    ]
    assert [(r["python"], r["placement"], r["settle_us"], r["cpu_threads"], r["interpreter"]) for r in rows[::3]] == [
        ("cpython-3.12.1", "same", "1000", "0", "CPython 3.12.1"), ("cpython-3.13.5", "split", "1000", "0", "CPython 3.13.5")]
    assert [r["p50_ns"] for r in rows[::3]] == ["109500.0", "219000.0"]  # each cell's own figures


def test_grid_samples_csv_leads_each_wake_with_its_cell(tmp_path, lab135_summary, capsys) -> None:
    folder = make_grid(tmp_path, lab135_summary)
    _, out, err = export(capsys, folder, "-f", "samples-csv", "-o", "-")
    rows = rows_of(out)
    assert len(rows) == 800
    assert {r["cell"] for r in rows} == {"cpython-3.12.1_same", "cpython-3.13.5_split"}
    split_event = [int(r["latency_ns"]) for r in rows if r["cell"] == "cpython-3.13.5_split" and r["arm"] == "event"]
    assert split_event == [2 * ns for ns in EVENT_NS]


def test_grid_markdown_puts_an_arms_cells_together(tmp_path, lab135_summary, capsys) -> None:
    folder = make_grid(tmp_path, lab135_summary)
    _, out, _ = export(capsys, folder, "-f", "markdown", "-o", "-")
    rows = _render_table_cells(out)
    # First the matrix's cells, every dimension (python is the Interpreter), then the arms cell by cell.
    assert rows[:3] == [
        ["Cell", "Interpreter", "Build", "Busy threads", "Placement", "Settle [µs]", "Complete"],
        ["cpython-3.12.1_same", "CPython 3.12.1", "main, Jun 11 2025 15:36:57", "0", "same", "1000", "yes"],
        ["cpython-3.13.5_split", "CPython 3.13.5", "main, Jun 11 2025 15:36:57", "0", "split", "1000", "yes"],
    ]
    cells = rows[3:]
    assert cells[0][:4] == ["Arm", "Cell", "Interpreter", "Placement"]  # settle is one value: not repeated per row
    assert [row[:4] for row in cells[1:5]] == [
        ["event", "cpython-3.12.1_same", "CPython 3.12.1", "same"],
        ["event", "cpython-3.13.5_split", "CPython 3.13.5", "split"],
        ["sigusr1-self", "cpython-3.12.1_same", "CPython 3.12.1", "same"],
        ["sigusr1-self", "cpython-3.13.5_split", "CPython 3.13.5", "split"],
    ]
    assert cells[1][7] == "110" and cells[2][7] == "219"  # p50 [µs] of each cell
    assert cells[0][-2:] == ["p50 vs first", "p99 vs first"]
    assert [row[-2:] for row in cells[1:5]] == [["first", "first"], ["2.0×", "1.0×"], ["first", "first"], ["1.0×", "1.0×"]]


def test_grid_json_is_its_canonical_matrix(tmp_path, lab135_summary, capsys) -> None:
    folder = make_grid(tmp_path, lab135_summary)
    _, out, _ = export(capsys, folder, "-f", "json", "-o", "-")
    assert out == (tmp_path / "grid" / "matrix.json").read_text(encoding="utf-8")


def test_grid_pyperf_writes_a_suite_per_cell_that_compare_to_puts_side_by_side(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    folder = make_grid(tmp_path, lab135_summary)
    status, _, err = export(capsys, folder, "-f", "pyperf")
    assert status == 0
    out_dir = tmp_path / "grid" / "export" / "pyperf"
    assert sorted(os.listdir(out_dir)) == ["cpython-3.12.1_same.json", "cpython-3.13.5_split.json"]
    first, second = (str(out_dir / n) for n in ("cpython-3.12.1_same.json", "cpython-3.13.5_split.json"))
    assert err == "wakelab: wrote 2 files to %s (compare the cells: python -m pyperf compare_to %s %s --table)\n" % (
        shown(str(out_dir)), shown(first), shown(second))
    meta = pyperf.BenchmarkSuite.load(second).get_benchmark("event").get_metadata()
    assert (meta["wakelab_cell"], meta["wakelab_cell_placement"], meta["wakelab_cell_settle_us"]) == ("cpython-3.13.5_split", "split", 1000)
    assert meta["python_version"] == "3.13.5"
    result = pyperf_cli("compare_to", first, second, "--table")
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"\| Benchmark +\| cpython-3.12.1_same +\| cpython-3.13.5_split +\|", result.stdout.splitlines()[1])
    assert re.search(r"^\| event +\| 110 us +\| 219 us: 2\.00x slower +\|$", result.stdout, flags=re.MULTILINE), result.stdout
    assert listed_benchmarks(result.stdout) == ["event", "signal-install", "signal-install.empty-loop", "sigusr1-self"]


def test_grid_pyperf_needs_a_folder(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    folder = make_grid(tmp_path, lab135_summary)
    for target in (str(tmp_path / "all.json"), "-"):
        status, out, err = export(capsys, folder, "-f", "pyperf", "-o", target)
        assert (status, out) == (2, "")
        assert err.startswith("wakelab: error: this export is 2 files") and "give a folder with -o" in err
    assert not (tmp_path / "all.json").exists()


def test_grid_with_a_cell_that_never_ran_exports_the_others(tmp_path, lab135_summary, capsys) -> None:
    folder = make_grid(tmp_path, lab135_summary, pending=True)
    grid = Grid.load(folder)
    assert [c.label for c in grid.with_evidence] == ["cpython-3.12.1_same", "cpython-3.13.5_split"]
    assert grid.never_ran == ("cpython-3.12.1_split",)
    status, out, err = export(capsys, folder, "-f", "csv", "-o", "-")
    assert status == 0 and len(rows_of(out)) == 6
    assert err == "wakelab: cell cpython-3.12.1_split not exported: it has no evidence (the grid stopped before it)\n"


def test_grid_with_a_corrupt_cell_is_refused(tmp_path, lab135_summary, capsys) -> None:
    folder = make_grid(tmp_path, lab135_summary)
    (tmp_path / "grid" / "cells" / "cpython-3.13.5_split" / "summary.json").write_text("{", encoding="utf-8")
    status, _, err = export(capsys, folder, "-f", "csv")
    assert status == 2 and err.count("\n") == 1 and "cpython-3.13.5_split/summary.json is not valid JSON" in err
    assert not (tmp_path / "grid" / "export").exists()


def test_grid_cell_that_leads_outside_the_grid_is_refused(tmp_path, lab135_summary, capsys) -> None:
    import shutil

    folder = make_grid(tmp_path, lab135_summary)
    cell = tmp_path / "grid" / "cells" / "cpython-3.13.5_split"
    shutil.move(str(cell), str(tmp_path / "elsewhere"))
    os.symlink(str(tmp_path / "elsewhere"), str(cell))
    status, _, err = export(capsys, folder, "-f", "csv")
    assert status == 2 and err.count("\n") == 1
    assert "cell cpython-3.13.5_split's folder cells/cpython-3.13.5_split leads outside the grid (to %s)" % (tmp_path / "elsewhere") in err
    assert not (tmp_path / "grid" / "export").exists()


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(DEFAULT_NAMES))
def test_missing_run_is_one_line_exit_2(tmp_path, capsys, fmt) -> None:
    status, out, err = export(capsys, str(tmp_path / "nope"), "-f", fmt)
    assert (status, out) == (2, "")
    assert err == "wakelab: error: %s: no such file (give an evidence folder or its summary.json)\n" % (tmp_path / "nope")


@pytest.mark.parametrize("content", ["{", "[]", '{"schema": "wakelab.summary", "schema_version": 1}'])
def test_corrupt_run_is_one_line_exit_2(tmp_path, capsys, content) -> None:
    (tmp_path / "summary.json").write_text(content, encoding="utf-8")
    status, out, err = export(capsys, str(tmp_path), "-f", "csv")
    assert (status, out) == (2, "")
    assert err.startswith("wakelab: error: %s" % (tmp_path / "summary.json")) and err.count("\n") == 1


def test_unknown_format_is_one_line_exit_2(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["export", str(tmp_path), "-f", "xml"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("wakelab export: error: argument -f/--format: invalid choice: 'xml'") and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["csv", "pyperf"])
def test_unwritable_output_is_one_line_exit_2(tmp_path, lab135_summary, capsys, fmt) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    target = str(blocker / "sub")
    status, out, err = export(capsys, folder, "-f", fmt, "-o", target)
    assert (status, out) == (2, "")
    assert err == "wakelab: error: cannot write %s: Not a directory (choose another path with -o)\n" % target
    assert blocker.read_text(encoding="utf-8") == "x"


def test_unwritable_run_folder_says_to_use_o(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    (tmp_path / "run" / "export").write_text("a file where the export folder goes", encoding="utf-8")
    status, out, err = export(capsys, folder, "-f", "csv")
    assert (status, out) == (2, "")
    assert err == "wakelab: error: cannot write %s: Not a directory (choose another path with -o)\n" % os.path.join(folder, "export", "")
    assert sorted(os.listdir(folder)) == ["export", "summary.json"]
    assert export(capsys, folder, "-f", "csv", "-o", str(tmp_path / "elsewhere.csv"))[0] == 0


def test_a_failed_write_leaves_no_export_folder_behind(tmp_path, lab135_summary, capsys, monkeypatch) -> None:
    import errno

    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)

    def disk_full(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(bundle, "write_temp_text", disk_full)
    status, _, err = export(capsys, folder, "-f", "pyperf")
    assert status == 2 and "No space left on device" in err
    assert sorted(os.listdir(folder)) == ["samples", "summary.json"]  # export/ and export/pyperf/ removed again


def test_pyperf_with_corrupt_samples_writes_nothing(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    (tmp_path / "run" / "samples" / "signal-install.json").write_text("{", encoding="utf-8")
    status, _, err = export(capsys, folder, "-f", "pyperf")
    assert status == 2 and err.count("\n") == 1 and "signal-install.json is not valid JSON" in err
    assert not (tmp_path / "run" / "export").exists()  # event was serialized, but nothing is written


def test_pyperf_with_no_samples_at_all_is_an_error(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    for entry in lab135_summary["arms"]:
        entry.update(status="failed", reason="boom", latency=None, rate=None, samples_file=None)
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    status, _, err = export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p"))
    assert status == 2
    assert err.endswith("wakelab: error: %s has no arm with samples to export to pyperf\n" % folder)
    assert not (tmp_path / "p").exists()


def test_registry_names_match_their_exporters() -> None:
    assert list(EXPORTERS) == ["csv", "samples-csv", "markdown", "json", "pyperf"]
    for name, exporter in EXPORTERS.items():
        assert exporter.name == name and exporter.help
    assert [e.subfolder for e in EXPORTERS.values()] == ["", "", "", "", "pyperf"]


def test_a_grid_markdown_marks_a_tail_regression_as_matrix_txt_does() -> None:
    """"(worse)" is compare_matrix's tail regression: a p99 worse beyond 10% while the p50 is not, or grown more than the p50."""
    from wakelab.evidence.matrix import MatrixEntry
    from wakelab.export.markdown import Row, versus_cells
    from wakelab.report.versus import versus_of

    def entry(cell: str, p50: float, p99: float) -> MatrixEntry:
        figures = {"n": 100, "lost": 0, "min_ns": 900, "p50_ns": p50, "p90_ns": p50, "p99_ns": p99, "max_ns": 10**6}
        return MatrixEntry.from_dict("event", {"cell": cell, "status": "ok", "kind": "latency", "latency": figures})

    entries = [entry("a", 10_000.0, 40_000.0), entry("b", 10_000.0, 48_000.0), entry("c", 15_000.0, 60_000.0), entry("d", 15_000.0, 80_000.0)]
    compared = versus_of({"event": entries})
    rows = [Row([], e.arm, {}, e.cell) for e in entries]
    assert versus_cells(rows, compared) == [["first", "first"], ["1.0×", "1.2× (worse)"], ["1.5×", "1.5×"], ["1.5×", "2.0× (worse)"]]
