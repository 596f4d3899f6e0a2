"""``wakelab export``: golden CSV and Markdown, canonical JSON, pyperf files read by the real pyperf."""

from __future__ import annotations

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
from wakelab.export import EXPORTERS, load_evidence
from wakelab.export.markdown import escape
from wakelab.export.pyperf_format import pyperf_date, split_by_worker
from wakelab.harness.runner import RunPlan, run_plan
from wakelab.labs import LAB_135

# The fixed samples behind conftest's lab135_summary (event 10..209 µs, signal 2.000..2.199 µs).
EVENT_NS = [10_000 + 1000 * i for i in range(200)]
SIGNAL_NS = [2000 + i for i in range(200)]
ROUND_NS = [20_000_000, 18_000_000, 19_000_000, 21_000_000, 22_000_000, 20_500_000, 19_500_000]
BASELINE_NS = [400_000] * 7


def write_bundle(folder, summary: Dict[str, Any], with_samples: bool = True) -> str:
    """A bundle of ``summary`` in ``folder``, with the samples conftest's figures come from."""
    os.makedirs(folder, exist_ok=True)
    (folder / "summary.json").write_text(bundle.dumps(summary), encoding="utf-8")
    if with_samples:
        latency = {"event": EVENT_NS, "sigusr1-self": SIGNAL_NS}
        for arm, samples in latency.items():
            raw = {"kind": "latency", "samples_ns": samples, "lost": 0, "warmup_discarded": 10, "components_ns": {}}
            bundle.write_samples(str(folder), arm, bundle.samples_doc(arm, raw))
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


# -- csv, markdown, json ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt, golden_file", [("csv", "export_lab135.csv"), ("markdown", "export_lab135.md")])
def test_golden_output(tmp_path, lab135_summary, capsys, fmt, golden_file) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    assert export(capsys, folder, "--format", fmt) == (0, golden(golden_file), "")


def test_csv_holds_the_exact_figures(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["arm"] for r in rows] == ["event", "sigusr1-self", "signal-install"]
    for row, entry in zip(rows, lab135_summary["arms"]):
        figures = entry["latency"] or entry["rate"]
        for column, cell in row.items():
            if column in figures:
                expected = figures[column]
                assert (cell == "") if expected is None else (float(cell) == expected), column
    event, install = rows[0], rows[2]
    assert event["p99_9_ns"] == ""  # n = 200 is too few for p99.9
    assert event["ops_per_s"] == "" and install["p50_ns"] == ""  # no such figure for that kind


def test_csv_defuses_spreadsheet_formulas(tmp_path, lab135_summary, capsys) -> None:
    arm(lab135_summary, "event")["family"] = "=HYPERLINK(\"http://x\")"
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    _, out, _ = export(capsys, folder, "-f", "csv")
    assert list(csv.DictReader(io.StringIO(out)))[0]["family"] == "'=HYPERLINK(\"http://x\")"


def test_json_is_the_canonical_summary(tmp_path, lab135_summary, capsys) -> None:
    lab135_summary["conditions"] = {"future_field": [1, 2]}  # unknown to this exporter: kept as is
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    status, out, err = export(capsys, os.path.join(folder, "summary.json"), "-f", "json")
    assert (status, err) == (0, "")
    assert out == bundle.dumps(lab135_summary) == (tmp_path / "run" / "summary.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt, golden_file", [("csv", "export_lab135.csv"), ("markdown", "export_lab135.md")])
def test_output_file_is_written_whole(tmp_path, lab135_summary, capsys, fmt, golden_file) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    target = tmp_path / "out" / "table.txt"
    target.parent.mkdir()
    target.write_text("old contents", encoding="utf-8")
    assert export(capsys, folder, "-f", fmt, "-o", str(target)) == (0, "", "")
    assert target.read_text(encoding="utf-8") == golden(golden_file)
    assert os.listdir(target.parent) == ["table.txt"]  # no temporary file left behind


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
    _, out, _ = export(capsys, folder, "-f", "markdown")
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


# -- pyperf ----------------------------------------------------------------------------------------


def test_pyperf_files_hold_the_samples_in_seconds(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    out_dir = tmp_path / "pyperf"
    status, out, err = export(capsys, folder, "-f", "pyperf", "-o", str(out_dir))
    assert (status, out) == (0, "")
    assert err == "wakelab: wrote 4 pyperf files to %s (try: python -m pyperf stats %s)\n" % (out_dir, out_dir / "event.json")
    assert sorted(os.listdir(out_dir)) == ["event.json", "signal-install.empty-loop.json", "signal-install.json", "sigusr1-self.json"]

    event = pyperf.Benchmark.load(str(out_dir / "event.json"))
    assert event.get_name() == "event" and event.get_unit() == "second"
    assert event.get_nrun() == 1 and event.get_values() == tuple(ns / 1e9 for ns in EVENT_NS)
    meta = event.get_metadata()
    assert meta["python_version"] == "3.13.5" and meta["python_implementation"] == "cpython"
    assert meta["hostname"] == "testbox" and meta["cpu_count"] == 2 and meta["loops"] == 1
    assert meta["date"] == "2026-10-01 06:00:00" and meta["duration"] == 0.5
    assert meta["wakelab_version"] == "0.1.0" and meta["wakelab_waiter"] == "blocked"
    assert meta["wakelab_warmup_discarded"] == 10 and meta["wakelab_lost"] == 0

    install = pyperf.Benchmark.load(str(out_dir / "signal-install.json"))
    assert install.get_values() == tuple(ns / 20000 / 1e9 for ns in ROUND_NS)  # seconds per call
    assert install.get_metadata()["inner_loops"] == 20000
    assert install.median() == pytest.approx(1e-6)  # 1,000,000 ops/s in summary.json


def test_pyperf_runs_follow_the_workers(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    arm(lab135_summary, "event")["workers"] = [
        {"pid": 101, "n": 120, "lost": 0, "p50_ns": 1.0, "max_ns": 1, "applied": {"cpu": 0}},
        {"pid": 102, "n": 80, "lost": 0, "p50_ns": 1.0, "max_ns": 1, "applied": {"cpu": 1}},
    ]
    folder = write_bundle(tmp_path / "run", lab135_summary)
    assert export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p"))[0] == 0
    event = pyperf.Benchmark.load(str(tmp_path / "p" / "event.json"))
    runs = event.get_runs()
    assert [len(r.values) for r in runs] == [120, 80]
    assert runs[1].values[0] == EVENT_NS[120] / 1e9  # worker order is kept
    assert [r.get_metadata()["wakelab_worker_pid"] for r in runs] == [101, 102]
    assert runs[0].get_metadata()["wakelab_worker_applied"] == '{"cpu":0}'
    assert "duration" not in runs[0].get_metadata()  # the arm's wall time covers both workers


def test_split_by_worker_needs_counts_that_add_up() -> None:
    assert split_by_worker([1, 2, 3], [2, 1]) == [(0, [1, 2]), (1, [3])]
    assert split_by_worker([1, 2, 3], [2, 2]) == [(-1, [1, 2, 3])]
    assert split_by_worker([1, 2, 3], None) == [(-1, [1, 2, 3])]


def test_pyperf_leaves_out_what_it_cannot_hold(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    install = arm(lab135_summary, "signal-install")
    install.update(status="skipped", reason="not\non this box", rate=None, samples_file=None)
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "sigusr1-self.json").read_text())
    doc["samples_ns"][5] = 0
    bundle.write_samples(folder, "sigusr1-self", doc)
    status, _, err = export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p"))
    assert status == 0
    assert err.splitlines() == [
        "wakelab: sigusr1-self not exported: it has a 0 ns sample and pyperf values must be > 0",
        "wakelab: arm signal-install not exported: skipped (not on this box)",
        "wakelab: wrote 1 pyperf file to %s (try: python -m pyperf stats %s)" % (tmp_path / "p", tmp_path / "p" / "event.json"),
    ]
    assert os.listdir(tmp_path / "p") == ["event.json"]


def test_pyperf_default_folder_is_named_after_the_run(tmp_path, lab135_summary, capsys, monkeypatch) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "lab135-run", lab135_summary)
    monkeypatch.chdir(tmp_path)
    assert export(capsys, folder, "-f", "pyperf")[0] == 0
    assert (tmp_path / "lab135-run-pyperf" / "event.json").is_file()


def test_pyperf_missing_is_one_clear_error(tmp_path, lab135_summary, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pyperf", None)  # import pyperf -> ImportError
    evidence = load_evidence(write_bundle(tmp_path / "run", lab135_summary))
    with pytest.raises(UsageError, match=r"--format pyperf needs the pyperf package: pip install 'pyperf>="):
        EXPORTERS["pyperf"].serialize(evidence)


def test_pyperf_date() -> None:
    assert pyperf_date("2026-10-01T06:00:00Z") == "2026-10-01 06:00:00"
    assert pyperf_date("2026-10-01T08:00:00+02:00") == "2026-10-01 06:00:00"
    assert pyperf_date("yesterday") is None and pyperf_date(None) is None


@pytest.fixture(scope="module")
def two_real_runs(tmp_path_factory) -> List[str]:
    """Two real bundles (event and signal-install, tiny), exported to pyperf folders."""
    pytest.importorskip("pyperf")
    params = MeasureParams(n=30, warmup=2, settle_us=200, timeout_s=1.0, install_n=200, rounds=3)
    exported = []
    for name in ("before", "after"):
        folder = tmp_path_factory.mktemp(name)
        plan = RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=params, folder=str(folder), command=["test"])
        run_plan(plan)
        out_dir = str(folder) + "-pyperf"
        assert main(["export", str(folder), "-f", "pyperf", "-o", out_dir]) == 0
        exported.append(out_dir)
    return exported


def pyperf_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pyperf", *args], capture_output=True, text=True, timeout=120)


def test_real_runs_export_one_pyperf_run_per_worker(two_real_runs) -> None:
    import pyperf

    for folder in two_real_runs:
        with open(os.path.join(folder[: -len("-pyperf")], "summary.json"), encoding="utf-8") as fh:
            summary = json.load(fh)
        for entry in summary["arms"]:
            bench = pyperf.Benchmark.load(os.path.join(folder, entry["name"] + ".json"))
            assert bench.get_name() == entry["name"]
            assert bench.get_nrun() == max(1, len(entry["workers"]))
            expected = entry["latency"]["n"] if entry["kind"] == "latency" else entry["rate"]["rounds"]
            assert bench.get_nvalue() == expected


def test_pyperf_stats_and_hist_read_the_export(two_real_runs) -> None:
    for name in ("event", "signal-install"):
        path = os.path.join(two_real_runs[0], name + ".json")
        stats = pyperf_cli("stats", path)
        assert stats.returncode == 0, stats.stderr
        assert "Mean +- std dev" in stats.stdout and "Total number of values" in stats.stdout
        hist = pyperf_cli("hist", path)
        assert hist.returncode == 0, hist.stderr
        assert " us: " in hist.stdout or " ms: " in hist.stdout or " ns: " in hist.stdout


def test_pyperf_compare_to_pairs_two_runs_by_arm(two_real_runs) -> None:
    a, b = (os.path.join(folder, "event.json") for folder in two_real_runs)
    # Without -v pyperf hides a difference that is not significant, but still names the benchmark.
    result = pyperf_cli("compare_to", a, b)
    assert result.returncode == 0, result.stderr
    assert "event" in result.stdout
    verbose = pyperf_cli("compare_to", "-v", a, b)
    assert verbose.returncode == 0, verbose.stderr
    assert verbose.stdout.startswith("Mean +- std dev: [%s] " % a) and " -> [%s] " % b in verbose.stdout


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "markdown", "json", "pyperf"])
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


def test_output_that_is_a_folder_is_refused(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary, with_samples=False)
    status, _, err = export(capsys, folder, "-f", "markdown", "-o", str(tmp_path))
    assert status == 2
    assert err == "wakelab: error: cannot write %s: it is a folder (give a file name with -o)\n" % tmp_path


def test_pyperf_with_corrupt_samples_writes_nothing(tmp_path, lab135_summary, capsys) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    (tmp_path / "run" / "samples" / "signal-install.json").write_text("{", encoding="utf-8")
    status, _, err = export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p"))
    assert status == 2 and err.count("\n") == 1 and "signal-install.json is not valid JSON" in err
    assert not (tmp_path / "p").exists()  # event.json was serialized, but nothing is written


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
    assert list(EXPORTERS) == ["csv", "markdown", "json", "pyperf"]
    for name, exporter in EXPORTERS.items():
        assert exporter.name == name and exporter.help
    assert [e.per_arm for e in EXPORTERS.values()] == [False, False, False, True]


@pytest.mark.parametrize("component", ["../../etc/passwd", "delivery\n", ""])
def test_component_names_must_be_plain(tmp_path, lab135_summary, component) -> None:
    pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "event.json").read_text())
    doc["components_ns"] = {component: [1] * 200}
    bundle.write_samples(folder, "event", doc)
    with pytest.raises(EvidenceError, match="component name .* is not a plain name"):
        EXPORTERS["pyperf"].serialize(load_evidence(folder))


def test_components_become_benchmarks_of_their_own(tmp_path, lab135_summary, capsys) -> None:
    pyperf = pytest.importorskip("pyperf")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    doc = json.loads((tmp_path / "run" / "samples" / "event.json").read_text())
    doc["components_ns"] = {"delivery": [ns // 2 for ns in EVENT_NS]}
    bundle.write_samples(folder, "event", doc)
    assert export(capsys, folder, "-f", "pyperf", "-o", str(tmp_path / "p"))[0] == 0
    delivery = pyperf.Benchmark.load(str(tmp_path / "p" / "event.delivery.json"))
    assert delivery.get_name() == "event.delivery"
    assert delivery.get_values() == tuple(ns // 2 / 1e9 for ns in EVENT_NS)


def test_markdown_labels_a_nearest_floor(tmp_path, lab135_summary, capsys) -> None:
    import copy

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
    _, out, _ = export(capsys, folder, "-f", "markdown")
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
