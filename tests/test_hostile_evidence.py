"""Hostile evidence fed to every reading command, through the CLI (issue 14, items 1, 8, 9).

A bundle is a folder anyone may have made.  Each case here builds one on disk
-- ``summary.json`` a link to ``/dev/zero``, a FIFO, a link out of the bundle,
a file past the size cap, a number that overflows to ``inf``, a samples file
or ``samples/`` folder that is one of those, a grid whose ``matrix.json`` is --
and runs every command that reads it (``show``, ``compare`` both ways,
``report``, ``export`` in every format, ``history add``) as a real process
with a timeout.  Each must end in exit status 2 with exactly one
``wakelab: error:`` line, no traceback, nothing on stdout, nothing written,
and never hang.

Then strings: notes, hostnames, reasons and every other string the schema lets
through carry terminal control sequences (``ESC ] 0 ; pwned BEL`` retitles the
window, ``ESC [ 2 J`` clears it, the C1 CSI does the same without an ESC, a
bidi override reorders the line).  ``show``, ``compare``, ``history``,
``export`` to stdout and ``summary.txt`` must show them as visible escapes
(``\\x1b``), never as the raw characters; files written with ``-o`` keep the
data as it is.
"""

from __future__ import annotations

import concurrent.futures
import json
import zlib
import os
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Sequence

import pytest

from wakelab.errors import EvidenceError
from wakelab.evidence import load
from wakelab.formatting import escape_strings, escape_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
GOOD = os.path.join(ROOT, "lab-evidence", "135-signal-vs-event-wakeup", "results")
# Long enough for a loaded 2-vCPU machine; a reader that blocks on a FIFO or reads /dev/zero
# hits it (they used to block forever, or run out of memory after ~13 s).
TIMEOUT_S = 60

PAYLOAD = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\r"
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\x0d"  # how the payload must look when printed
# What must never reach a terminal: controls but the line feed, C1 controls, line separators, bidi controls.
TERMINAL_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# The C0 and C1 controls alone (the Markdown export turns these into spaces, and leaves bidi controls).
CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


# ---------------------------------------------------------------------------
# Running the CLI
# ---------------------------------------------------------------------------


def wakelab(*args: str, cwd: str) -> subprocess.CompletedProcess:
    """``python -m wakelab ARGS`` with no terminal, stdin closed, bounded by TIMEOUT_S (a hang fails)."""
    env = dict(os.environ, PYTHONPATH=SRC, MPLCONFIGDIR=os.path.join(cwd, ".mpl"))
    try:
        return subprocess.run(
            [sys.executable, "-m", "wakelab", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("wakelab %s hung (no exit within %d s)" % (" ".join(args), TIMEOUT_S))


def run_all(commands: Sequence[Sequence[str]], cwd: str) -> List[subprocess.CompletedProcess]:
    """Every command, a few at a time (each is a fresh interpreter)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda args: wakelab(*args, cwd=cwd), commands))


def assert_refused(result: subprocess.CompletedProcess, expected: str) -> None:
    """Exit 2, one ``wakelab: error:`` line containing ``expected``, nothing else."""
    what = " ".join(str(a) for a in result.args[3:])
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 2, "%s: exit %d, stderr %r" % (what, result.returncode, err)
    assert "Traceback" not in err, what
    assert result.stdout == b"", what
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("wakelab: error: "), "%s: %r" % (what, err)
    assert expected in lines[0], "%s: %r" % (what, lines[0])
    assert b"\x1b" not in result.stderr


def assert_terminal_safe(result: subprocess.CompletedProcess, unsafe: "re.Pattern[str]" = TERMINAL_UNSAFE) -> str:
    """Exit 0, no traceback, no raw control character on stdout or ESC on stderr; returns stdout."""
    what = " ".join(str(a) for a in result.args[3:])
    err = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, "%s: exit %d, stderr %r" % (what, result.returncode, err)
    assert "Traceback" not in err, what
    out = result.stdout.decode("utf-8")
    found = unsafe.search(out)
    assert found is None, "%s printed %r raw: ...%r..." % (what, found.group(), out[max(0, found.start() - 40):found.end() + 40])
    assert b"\x1b" not in result.stderr, what
    return out


# ---------------------------------------------------------------------------
# Bundles
# ---------------------------------------------------------------------------


def copy_good(tmp_path: Any, name: str) -> str:
    folder = str(tmp_path / name)
    shutil.copytree(GOOD, folder)
    return folder


def read_summary(folder: str) -> Dict[str, Any]:
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        doc: Dict[str, Any] = json.load(fh)
    return doc


def write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def replace_with_fifo(path: str) -> None:
    os.unlink(path)
    os.mkfifo(path)


def replace_with_link(path: str, target: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
    os.symlink(target, path)


def summary_readers(bad: str, good: str, out: str) -> List[List[str]]:
    """Every command that reads a bundle's summary, pointed at ``bad`` (outputs under ``out``)."""
    return [
        ["show", bad],
        ["compare", good, bad],
        ["compare", bad, good],
        ["report", bad, "-q", "-o", os.path.join(out, "report.html")],
        ["export", "-f", "csv", bad],
        ["export", "-f", "markdown", bad],
        ["export", "-f", "json", bad],
        ["export", "-f", "json", bad, "-o", os.path.join(out, "export.json")],
        ["export", "-f", "pyperf", bad, "-o", os.path.join(out, "pyperf")],
        ["history", "add", "--history", os.path.join(out, "history.sqlite3"), bad],
    ]


def samples_readers(bad: str, good: str, out: str) -> List[List[str]]:
    """Every command that reads a bundle's samples, pointed at ``bad``."""
    return [
        ["compare", good, bad],
        ["compare", bad, good],
        ["report", bad, "-q", "-o", os.path.join(out, "report.html")],
        ["export", "-f", "pyperf", bad, "-o", os.path.join(out, "pyperf")],
    ]


def check_refused_everywhere(tmp_path: Any, bad: str, expected: str, readers: Any = summary_readers) -> None:
    out = str(tmp_path / "out")
    os.makedirs(out)
    good = copy_good(tmp_path, "good")
    commands = readers(bad, good, out)
    for result in run_all(commands, cwd=str(tmp_path)):
        assert_refused(result, expected)
    assert sorted(n for n in os.listdir(out) if n != ".mpl") == [], "a refused command wrote output"


# -- summary.json that is not a regular file inside the bundle -------------------------------


def _summary_to_dev_zero(folder: str) -> None:
    replace_with_link(os.path.join(folder, "summary.json"), "/dev/zero")


def _summary_fifo(folder: str) -> None:
    replace_with_fifo(os.path.join(folder, "summary.json"))


def _summary_link_out(folder: str) -> None:
    outside = os.path.join(os.path.dirname(folder), "elsewhere.json")
    shutil.copy(os.path.join(folder, "summary.json"), outside)  # a valid summary, but not in this bundle
    replace_with_link(os.path.join(folder, "summary.json"), outside)


def _summary_folder(folder: str) -> None:
    os.unlink(os.path.join(folder, "summary.json"))
    os.mkdir(os.path.join(folder, "summary.json"))


def _summary_too_large(folder: str) -> None:
    with open(os.path.join(folder, "summary.json"), "r+b") as fh:
        fh.truncate(load.MAX_SUMMARY_BYTES + 1)  # sparse: costs no disk


def _summary_overflowing_float(folder: str) -> None:
    doc = read_summary(folder)
    doc["arms"][0]["latency"]["mean_ns"] = "@@INF@@"
    write_text(os.path.join(folder, "summary.json"), json.dumps(doc, indent=2).replace('"@@INF@@"', "1e400"))


@pytest.mark.parametrize(
    "make_bad, expected",
    [
        (_summary_to_dev_zero, "summary.json is a character device (it leads to /dev/zero), not a regular file"),
        (_summary_fifo, "summary.json is a FIFO, not a regular file"),
        (_summary_link_out, "summary.json leads outside the bundle (to "),
        (_summary_folder, "summary.json is a folder, not a regular file"),
        (_summary_too_large, "summary.json is 33554433 bytes, more than the 32 MiB a wakelab summary can be"),
        (_summary_overflowing_float, "summary.json is not valid evidence: the number 1e400 is beyond the range of a float"),
    ],
    ids=["dev-zero", "fifo", "link-out", "folder", "too-large", "1e400"],
)
def test_every_reader_refuses_a_bad_summary(tmp_path, make_bad, expected) -> None:
    bad = copy_good(tmp_path, "bad")
    make_bad(bad)
    check_refused_everywhere(tmp_path, bad, expected)


def test_a_device_given_as_the_summary_is_refused_unopened(tmp_path) -> None:
    for path in ("/dev/zero", "/dev/null"):
        assert_refused(wakelab("show", path, cwd=str(tmp_path)), "%s is a character device, not a regular file" % path)


# -- samples that are not a regular file inside the bundle -----------------------------------


def _samples_fifo(folder: str) -> None:
    replace_with_fifo(os.path.join(folder, "samples", "event.json"))


def _samples_to_dev_zero(folder: str) -> None:
    replace_with_link(os.path.join(folder, "samples", "event.json"), "/dev/zero")


def _samples_folder_link_out(folder: str) -> None:
    outside = os.path.join(os.path.dirname(folder), "outside-samples")
    shutil.copytree(os.path.join(folder, "samples"), outside)  # the very same samples, outside the bundle
    replace_with_link(os.path.join(folder, "samples"), outside)


def _samples_file_link_out(folder: str) -> None:
    outside = os.path.join(os.path.dirname(folder), "outside-event.json")
    shutil.copy(os.path.join(folder, "samples", "event.json"), outside)
    replace_with_link(os.path.join(folder, "samples", "event.json"), outside)


def _samples_too_large(folder: str) -> None:
    with open(os.path.join(folder, "samples", "event.json"), "r+b") as fh:
        fh.truncate(load.MAX_SAMPLES_BYTES + 1)  # sparse: costs no disk


def _samples_overflowing_float(folder: str) -> None:
    path = os.path.join(folder, "samples", "event.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    doc["calibration"] = "@@INF@@"  # anywhere in the document, not only in the checked series
    write_text(path, json.dumps(doc).replace('"@@INF@@"', "-1e400"))


@pytest.mark.parametrize(
    "make_bad, expected",
    [
        (_samples_fifo, "samples/event.json is a FIFO, not a regular file"),
        (_samples_to_dev_zero, "samples/event.json is a character device (it leads to /dev/zero), not a regular file"),
        (_samples_folder_link_out, "samples/event.json leads outside the bundle (to "),
        (_samples_file_link_out, "samples/event.json leads outside the bundle (to "),
        (_samples_too_large, "samples/event.json is 536870913 bytes, more than the 512 MiB a wakelab samples file can be"),
        (_samples_overflowing_float, "samples/event.json is not valid evidence: the number -1e400 is beyond the range of a float"),
    ],
    ids=["fifo", "dev-zero", "folder-link-out", "file-link-out", "too-large", "1e400"],
)
def test_every_reader_of_samples_refuses_bad_samples(tmp_path, make_bad, expected) -> None:
    bad = copy_good(tmp_path, "bad")
    make_bad(bad)
    check_refused_everywhere(tmp_path, bad, expected, samples_readers)


def test_links_that_stay_inside_the_bundle_are_followed(tmp_path) -> None:
    folder = copy_good(tmp_path, "linked")
    os.rename(os.path.join(folder, "samples"), os.path.join(folder, "raw"))
    os.symlink("raw", os.path.join(folder, "samples"))
    os.symlink(folder, str(tmp_path / "latest"))  # the bundle's own folder through a link
    result = wakelab("compare", GOOD, str(tmp_path / "latest"), cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert b"no difference" in result.stdout  # the bundle against itself


# -- a grid's matrix.json --------------------------------------------------------------------


def matrix_doc() -> Dict[str, Any]:
    return {
        "schema": "wakelab.matrix", "schema_version": 1, "lab": {"id": "135-signal-vs-event-wakeup", "title": "Lab 135"},
        "started_utc": "2026-10-01T06:00:00Z", "dimensions": ["settle_us"], "complete": True,
        "cells": [{"label": "settle100us", "folder": "cells/settle100us", "dimensions": {"settle_us": 100}, "status": "done",
                   "complete": True, "interpreter": {"implementation": "CPython", "version": "3.11.7"}}],
        "arms": [{"name": "event", "rows": [{"cell": "settle100us", "status": "ok", "kind": "latency",
                                             "latency": {"n": 200, "lost": 0, "min_ns": 9000, "p50_ns": 10000.0}}]}],
    }


def test_show_refuses_a_bad_matrix(tmp_path) -> None:
    overflow = str(tmp_path / "overflow")
    os.makedirs(overflow)
    write_text(os.path.join(overflow, "matrix.json"), json.dumps(matrix_doc()).replace("10000.0", "1e400"))
    fifo = str(tmp_path / "fifo")
    os.makedirs(fifo)
    os.mkfifo(os.path.join(fifo, "matrix.json"))
    big = str(tmp_path / "big")
    os.makedirs(big)
    with open(os.path.join(big, "matrix.json"), "wb") as fh:
        fh.truncate(load.MAX_MATRIX_BYTES + 1)
    results = run_all([["show", overflow], ["show", fifo], ["show", big]], cwd=str(tmp_path))
    assert_refused(results[0], "matrix.json is not valid evidence: the number 1e400 is beyond the range of a float")
    assert_refused(results[1], "matrix.json is a FIFO, not a regular file")
    assert_refused(results[2], "matrix.json is 33554433 bytes, more than the 32 MiB a wakelab matrix can be")


def test_show_of_a_grid_prints_escapes(tmp_path) -> None:
    from wakelab.report.matrix_text import format_matrix

    doc = matrix_doc()
    doc["lab"]["title"] += PAYLOAD
    doc["cells"][0]["interpreter"]["implementation"] += "\n" + PAYLOAD
    doc["arms"].append({"name": "sigusr1-self" + PAYLOAD, "rows": [{"cell": "settle100us", "status": "skipped", "reason": "no" + PAYLOAD}]})
    folder = str(tmp_path / "grid")
    os.makedirs(folder)
    write_text(os.path.join(folder, "matrix.json"), json.dumps(doc))
    assert load.load_matrix(folder) == doc
    out = assert_terminal_safe(wakelab("show", folder, cwd=str(tmp_path)))
    assert out.startswith("Lab 135" + SHOWN + " -- side by side\n")
    assert "CPython\\x0a" + SHOWN + " 3.11.7" in out and "\nsigusr1-self" + SHOWN + "\n" in out
    assert "skipped: no" + SHOWN in out
    assert out == format_matrix(doc)


# -- the reader itself -----------------------------------------------------------------------


def test_reader_never_reads_past_the_cap_plus_one_byte(tmp_path, monkeypatch) -> None:
    # /proc files say they are empty (st_size 0) and then hold text: the size from fstat is
    # not trusted, the read stops one byte past the cap.
    read: List[int] = []
    real_readv = os.readv

    def counting_readv(fd: int, buffers: Any) -> int:
        count = real_readv(fd, buffers)
        read.append(count)
        return count

    monkeypatch.setattr(os, "readv", counting_readv)
    with pytest.raises(EvidenceError, match="grew past the 0 MiB"):
        load.read_evidence_file("/proc/self/status", "/proc/self", 16, "a test file")
    assert sum(read) == 17  # the file holds far more
    monkeypatch.undo()
    path = tmp_path / "small.json"
    path.write_bytes(b"x" * 16)
    assert load.read_evidence_file(str(path), str(tmp_path), 16, "a test file") == b"x" * 16
    with pytest.raises(EvidenceError, match="is 16 bytes, more than"):
        load.read_evidence_file(str(path), str(tmp_path), 15, "a test file")


def test_non_finite_numbers_in_a_document_are_refused(lab135_summary) -> None:
    for value in (float("inf"), float("-inf"), float("nan")):
        lab135_summary["arms"][0]["info"] = {"deep": [{"x": value}]}
        with pytest.raises(EvidenceError, match="the number at /arms/0/info/deep/0/x is not finite"):
            load.validate_summary(lab135_summary)
    for text in ("1e400", "-1e400", "1" * 400 + ".0", "1e309"):
        with pytest.raises(EvidenceError, match="beyond the range of a float"):
            load.parse_json('{"a": [%s]}' % text, "x.json")
    assert load.parse_json('{"a": 1.7976931348623157e308}', "x.json") == {"a": 1.7976931348623157e308}


# ---------------------------------------------------------------------------
# Escape sequences in evidence strings
# ---------------------------------------------------------------------------

# Fields the schema leaves free text (the payload is appended to each).
FREE_TEXT = [
    ("machine", "cpu_model"), ("machine", "kernel"), ("machine", "os"),
    ("interpreter", "implementation"), ("interpreter", "version"), ("interpreter", "build"), ("interpreter", "compiler"),
    ("lab", "title"), ("lab", "question"), ("lab", "id"), ("lab", "methodology", 0), ("lab", "limits", 0), ("caveats", 0),
    ("timer", "clock"), ("system", "clocksource"), ("tool", "version"),
    ("arms", 0, "family"), ("arms", 0, "waiter"), ("arms", 0, "scope"), ("arms", 0, "mechanism"), ("arms", 0, "t0"),
    ("arms", 0, "t1"), ("arms", 0, "driver"),
]


def hostile_bundle(tmp_path: Any, name: str, everywhere: bool) -> str:
    """The good bundle with PAYLOAD in its note, hostname and a skipped arm's reason (and, ``everywhere``, in FREE_TEXT)."""
    folder = copy_good(tmp_path, name)
    doc = read_summary(folder)
    doc["note"] = "multi\nline note " + PAYLOAD
    doc["machine"]["hostname"] = "host\n" + PAYLOAD  # a line feed too: a table cell or warning stays one line
    if "run_id" in doc:
        doc["run_id"] = "%032x" % (zlib.crc32(name.encode()) + 1)  # another run than the good one
    skipped = next(a for a in doc["arms"] if a["name"] == "sigusr1-self")
    skipped.update(status="skipped", reason="no signals here" + PAYLOAD, latency=None, samples_file=None, components={})
    if everywhere:
        for path in FREE_TEXT:
            node: Any = doc
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = str(node[path[-1]] or "") + PAYLOAD
    load.validate_summary(doc)
    write_text(os.path.join(folder, "summary.json"), json.dumps(doc, indent=2))
    return folder


def test_escape_text() -> None:
    assert escape_text(PAYLOAD) == SHOWN
    assert escape_text("a\nb") == "a\\x0ab" and escape_text("a\nb", multiline=True) == "a\nb"
    assert escape_text("tab\there\x7f\x85\u2028\u2066") == "tab\\x09here\\x7f\\x85\\u2028\\u2066"
    assert escape_text("µs ≥ 10× 🙂 C:\\path") == "µs ≥ 10× 🙂 C:\\path"  # printable text and backslashes untouched
    assert escape_text(escape_text(PAYLOAD)) == escape_text(PAYLOAD)  # escaping twice changes nothing
    assert escape_text("lone \ud800") == "lone \\ud800"
    assert escape_strings({"k\x1b": ["v\x9b", 1, None, {"x": "\x07"}]}) == {"k\\x1b": ["v\\x9b", 1, None, {"x": "\\x07"}]}


def test_show_and_summary_txt_print_escapes_not_control_characters(tmp_path) -> None:
    from wakelab.report.text import format_summary

    folder = hostile_bundle(tmp_path, "hostile", everywhere=True)
    out = assert_terminal_safe(wakelab("show", folder, cwd=str(tmp_path)))
    assert "Note: multi line note " + SHOWN in out  # wrapped text: the line feed becomes a space, as before
    assert out == format_summary(read_summary(folder))  # summary.txt is this same text


def test_compare_prints_escapes(tmp_path) -> None:
    folder = hostile_bundle(tmp_path, "hostile", everywhere=False)
    everywhere = hostile_bundle(tmp_path, "everywhere", everywhere=True)
    results = run_all([["compare", GOOD, folder], ["compare", everywhere, everywhere]], cwd=str(tmp_path))
    out = assert_terminal_safe(results[0])
    assert "hostname %s vs host\\x0a%s): differences include the machine" % (read_summary(GOOD)["machine"]["hostname"], SHOWN) in out
    assert "sigusr1-self" in out
    assert_terminal_safe(results[1])


def test_history_prints_escapes(tmp_path) -> None:
    folder = hostile_bundle(tmp_path, "hostile", everywhere=True)
    db = str(tmp_path / "history.sqlite3")
    assert_terminal_safe(wakelab("history", "add", "--history", db, folder, GOOD, cwd=str(tmp_path)))
    results = run_all([["history", "--history", db], ["history", "--history", db, "--arm", "event"],
                       ["history", "--history", db, "--json"]], cwd=str(tmp_path))
    listing, trend = assert_terminal_safe(results[0]), assert_terminal_safe(results[1])
    assert "  host\\x0a" + SHOWN + "  " in listing and "  host\\x0a" + SHOWN + "  " in trend  # in its cell
    assert len(listing.splitlines()) == 4 and len(trend.splitlines()) >= 4  # title, header, two rows
    runs = json.loads(assert_terminal_safe(results[2]))["runs"]
    assert "host\n" + PAYLOAD in [r["hostname"] for r in runs]  # JSON keeps the data, escaped as JSON escapes


def test_export_to_stdout_is_terminal_safe_and_files_keep_the_data(tmp_path) -> None:
    folder = hostile_bundle(tmp_path, "hostile", everywhere=True)
    csv_file, json_file = str(tmp_path / "out.csv"), str(tmp_path / "out.json")
    results = run_all([["export", "-f", "markdown", folder, "-o", "-"], ["export", "-f", "json", folder, "-o", "-"],
                       ["export", "-f", "csv", folder, "-o", csv_file], ["export", "-f", "json", folder, "-o", json_file]],
                      cwd=str(tmp_path))
    assert_terminal_safe(results[0], CONTROLS)
    for result in results[1:]:
        assert_terminal_safe(result)
    assert json.loads(results[1].stdout)["note"].endswith(PAYLOAD)
    with open(csv_file, encoding="utf-8", newline="") as fh:
        assert "threads" + PAYLOAD in fh.read()  # a file keeps the data as the bundle holds it
    with open(json_file, encoding="utf-8") as fh:
        assert json.load(fh)["machine"]["hostname"] == "host\n" + PAYLOAD


def test_export_csv_to_stdout_is_terminal_safe(tmp_path) -> None:
    folder = hostile_bundle(tmp_path, "hostile", everywhere=True)
    out = assert_terminal_safe(wakelab("export", "-f", "csv", folder, "-o", "-", cwd=str(tmp_path)))
    assert "threads" + SHOWN in out


def test_a_run_with_a_hostile_note_keeps_it_out_of_the_terminal_and_summary_txt(tmp_path) -> None:
    folder = str(tmp_path / "ev")
    result = wakelab("run", "--arms", "event", "--n", "20", "--warmup", "1", "--in-process", "--no-history", "-q",
                     "--note", PAYLOAD, "-o", folder, cwd=str(tmp_path))
    if result.returncode == 2:  # refusing such a note up front, with one line, is right too
        assert_refused(result, "--note")
        return
    out = assert_terminal_safe(result)
    with open(os.path.join(folder, "summary.txt"), encoding="utf-8") as fh:
        text = fh.read()
    assert text == out and TERMINAL_UNSAFE.search(text) is None
    assert "Note: " + SHOWN in text
    assert read_summary(folder)["note"] == PAYLOAD  # summary.json keeps the note as given


def test_a_trace_the_schema_does_not_look_into_never_breaks_a_reader(tmp_path) -> None:
    # summary.json leaves a traced arm's re-block causes and holders unchecked, matrix.json a row's whole trace:
    # a figure there that is not a number, or thread ids that are not a list, read as not recorded.  Readers
    # that never show the trace (csv) must not read it; the ones that do show what they can, never a traceback.
    golden = os.path.join(ROOT, "tests", "golden", "bundles")
    run = str(tmp_path / "run")
    shutil.copytree(os.path.join(golden, "trace"), run)
    doc = read_summary(run)
    traced = next(arm for arm in doc["arms"] if arm.get("trace"))
    reblocks = traced["trace"].setdefault("components", {}).setdefault("reblocks", {})
    reblocks["causes"] = {"x/y": {"wakes": 1, "total_ns": 5, "p50_ns": "abc"}}
    reblocks["holders"] = [{"on": "x", "role": "r", "tids": 5, "wakes": 1}]
    write_text(os.path.join(run, "summary.json"), json.dumps(doc))
    grid = str(tmp_path / "grid")
    shutil.copytree(os.path.join(golden, "grid"), grid)
    with open(os.path.join(grid, "matrix.json"), encoding="utf-8") as f:
        matrix = json.load(f)
    matrix["arms"][0]["rows"][0]["trace"] = {"traced": True, "overhead": {"ratio": "x"}}
    write_text(os.path.join(grid, "matrix.json"), json.dumps(matrix))
    out = str(tmp_path / "out")
    commands = [["show", run], ["show", "--hist", run], ["compare", run, run], ["export", "-f", "csv", "-o", "-", run],
                ["export", "-f", "markdown", "-o", "-", run], ["report", "-o", out + "-run.html", run],
                ["show", grid], ["export", "-f", "csv", "-o", "-", grid], ["report", "-o", out + "-grid.html", grid]]
    for command, result in zip(commands, run_all(commands, cwd=str(tmp_path))):
        assert result.returncode == 0 and b"Traceback" not in result.stderr, (command, result.stderr[-400:])
