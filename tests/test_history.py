"""Run history (wakelab.history and ``wakelab history``): recording, listing, trends, and safety.

Every database here lives in tmp_path; the autouse fixture points $WAKELAB_HISTORY
there too, so nothing can reach the real user's history.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from typing import Any, Dict, List

import pytest

from wakelab import history
from wakelab.cli import main
from wakelab.evidence.bundle import dumps
from wakelab.evidence.model import Bundle
from wakelab.history import schema, store
from wakelab.history.conditions import canonical
from wakelab.history.rows import ArmRow, RunRow
from wakelab.harness.runner import RunPlan, run_plan
from wakelab.labs import LAB_135

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


@pytest.fixture(autouse=True)
def _private_history(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WAKELAB_HISTORY", str(tmp_path / "default-history.sqlite3"))


def write_bundle(folder, summary: Dict[str, Any]) -> str:
    os.makedirs(str(folder), exist_ok=True)
    with open(os.path.join(str(folder), "summary.json"), "w", encoding="utf-8") as fh:
        fh.write(dumps(summary))
    return str(folder)


FIXED_CONDITIONS = {"cpu_threads": 0, "cpu_procs": 0, "idle_hold": False}


def variant(summary: Dict[str, Any], *, started: str, host: str = "testbox", version: str = "3.13.5",
            event_p50_ns: float = 110_000.0, free_threaded: bool = False, conditions: Any = FIXED_CONDITIONS,
            placement: Any = None, **parameters: Any) -> Dict[str, Any]:
    """The lab135 summary, as if made at another time, on another host or interpreter, under ``conditions``.

    ``placement`` is (placement, notifier CPU, waiter CPU); ``parameters`` replace the run's parameters.
    """
    doc = copy.deepcopy(summary)
    if placement is not None:
        doc["parameters"].update(placement=placement[0], notifier_cpu=placement[1], waiter_cpu=placement[2])
    doc["parameters"].update(parameters)
    doc["run_id"] = uuid.uuid4().hex  # another run
    doc["started_utc"] = started
    doc["finished_utc"] = started[:-3] + "02Z"
    doc["machine"]["hostname"] = host
    doc["interpreter"]["version"] = version
    doc["interpreter"]["free_threaded_build"] = free_threaded
    doc["interpreter"]["gil_enabled"] = not free_threaded
    doc.pop("conditions", None)
    if conditions is not None:
        doc["conditions"] = conditions
    for entry in doc["arms"]:
        if entry["name"] == "event":
            entry["latency"]["p50_ns"] = event_p50_ns
    return doc


def cli(capsys, *args: str):
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def read_summary(folder: str) -> Dict[str, Any]:
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def record(summary: Dict[str, Any], folder: str, db: str, **kw: Any) -> history.RecordResult:
    """Record ``summary`` as the run in ``folder``."""
    return history.record_run(Bundle(folder, folder, summary), db, **kw)


def conditions_of(summary: Dict[str, Any]) -> Any:
    return history.figure_conditions(Bundle("", "", summary))


def read_bytes(path) -> bytes:
    with open(str(path), "rb") as fh:
        return fh.read()


@pytest.fixture
def three_runs(tmp_path, lab135_summary) -> List[str]:
    """Three bundles: two hosts, two interpreters, added out of date order."""
    folders = [
        write_bundle(tmp_path / "runs" / "b", variant(lab135_summary, started="2026-10-02T06:00:00Z", host="otherbox", version="3.11.7", event_p50_ns=250_000.0)),
        write_bundle(tmp_path / "runs" / "a", variant(lab135_summary, started="2026-10-01T06:00:00Z")),
        write_bundle(tmp_path / "runs" / "c", variant(lab135_summary, started="2026-10-03T06:00:00Z", event_p50_ns=105_000.0)),
    ]
    return [os.path.realpath(f) for f in folders]  # as the history stores them


# ----------------------------------------------------------------------------------------------
# Where the database is


def test_default_path_follows_env_then_xdg_then_home(tmp_path) -> None:
    home = os.path.expanduser("~")
    assert history.resolve_db_path(None, {"WAKELAB_HISTORY": "/x/h.db", "XDG_DATA_HOME": "/data"}) == "/x/h.db"
    assert history.resolve_db_path(None, {"XDG_DATA_HOME": "/data"}) == "/data/wakelab/history.sqlite3"
    relative = history.resolve_db_path(None, {"XDG_DATA_HOME": "relative/dir"})  # ignored, as the XDG spec asks
    assert relative == os.path.join(home, ".local", "share", "wakelab", "history.sqlite3")
    assert history.resolve_db_path(None, {}) == relative
    assert history.resolve_db_path(None) == str(tmp_path / "default-history.sqlite3")
    assert history.resolve_db_path(str(tmp_path / "h.db")) == str(tmp_path / "h.db")


def test_check_recordable_refuses_what_recording_could_not_use_and_creates_nothing(tmp_path) -> None:
    hint = "HINT"
    store.check_recordable(str(tmp_path / "new" / "h.db"), hint)  # a writable folder: fine, and nothing is made
    assert not (tmp_path / "new").exists()
    with pytest.raises(store.HistoryError, match=r"^history database .* is a directory \(HINT\)$"):
        store.check_recordable(str(tmp_path), hint)
    (tmp_path / "file").write_text("x")
    with pytest.raises(store.HistoryError, match=r"^cannot create history database .*: .*file is not a directory \(HINT\)$"):
        store.check_recordable(str(tmp_path / "file" / "h.db"), hint)
    (tmp_path / "not-sqlite.db").write_text("plain text, not a database")
    with pytest.raises(store.HistoryError, match="not an SQLite database"):
        store.check_recordable(str(tmp_path / "not-sqlite.db"), hint)


# ----------------------------------------------------------------------------------------------
# Recording


def test_records_a_real_bundle(tmp_path, tiny_params) -> None:
    folder = str(tmp_path / "bundle")
    os.makedirs(folder)
    summary = run_plan(RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=tiny_params, folder=folder))
    db = str(tmp_path / "h.db")

    result = record(summary, folder, db)

    assert (result.run_id, result.action) == (1, "added")
    [run] = history.list_runs(db)
    assert run.facts.folder == os.path.realpath(folder)
    assert run.facts.started_utc == summary["started_utc"]
    assert run.facts.lab_id == LAB_135.id
    assert run.complete is summary["complete"]
    assert run.facts.python_version == summary["interpreter"]["version"]
    assert run.facts.hostname == summary["machine"]["hostname"]
    assert (run.arms, run.arms_ok) == (2, 2)
    [event] = history.arm_trend("event", db)
    latency = summary["arms"][0]["latency"]
    assert (event.figures.n, event.figures.lost, event.figures.p50_ns, event.figures.p99_ns, event.figures.max_ns) == (
        latency["n"], latency["lost"], latency["p50_ns"], latency["p99_ns"], latency["max_ns"])
    [install] = history.arm_trend("signal-install", db)
    assert install.figures.kind == "rate" and install.figures.ops_per_s == summary["arms"][1]["rate"]["ops_per_s"]
    assert install.figures.p50_ns is None

    with sqlite3.connect(db) as conn:
        stored = json.loads(conn.execute("SELECT summary_json FROM runs").fetchone()[0])
        params = json.loads(conn.execute("SELECT parameters_json FROM runs").fetchone()[0])
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    conn.close()
    assert stored == json.loads(json.dumps(summary))
    assert params == summary["parameters"]
    assert version == history.SCHEMA_VERSION
    assert meta["schema_version"] == str(history.SCHEMA_VERSION)


def test_recording_the_same_bundle_twice_records_it_once(tmp_path, lab135_summary) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    db = str(tmp_path / "h.db")
    assert record(lab135_summary, folder, db).action == "added"
    assert record(lab135_summary, folder, db).action == "unchanged"
    # The same folder reached another way is the same run.
    os.symlink(folder, str(tmp_path / "link"))
    assert record(lab135_summary, str(tmp_path / "link"), db).action == "unchanged"
    assert len(history.list_runs(db)) == 1

    # A newer state of the same bundle (recorded while it ran, then finished) updates it in place.
    finished = copy.deepcopy(lab135_summary)
    finished["arms"] = finished["arms"][:2]
    result = record(finished, folder, db)
    assert (result.run_id, result.action) == (1, "updated")
    [run] = history.list_runs(db)
    assert run.arms == 2
    assert history.arm_trend("signal-install", db) == []

    # Another run in the same folder (another start time) is another run.
    again = variant(lab135_summary, started="2026-10-05T06:00:00Z")
    assert record(again, folder, db).run_id == 2


def test_unknown_and_future_fields_are_kept_not_required(tmp_path, lab135_summary) -> None:
    doc = copy.deepcopy(lab135_summary)
    doc["conditions"] = {"placement": "split", "idle_hold": True}
    doc["workers"] = [{"pid": 1}]  # a field this wakelab does not know
    doc["arms"][0]["new_figure"] = 1
    del doc["machine"]["cpu_model"]
    db = str(tmp_path / "h.db")
    record(doc, str(tmp_path), db)
    [run] = history.list_runs(db)
    assert run.facts.conditions == {"placement": "split", "idle_hold": True}
    assert run.facts.cpu_model is None
    with sqlite3.connect(db) as conn:
        assert json.loads(conn.execute("SELECT summary_json FROM runs").fetchone()[0])["workers"] == [{"pid": 1}]
    conn.close()


def test_what_the_summary_does_not_say_is_recorded_as_unknown(tmp_path, lab135_summary, capsys) -> None:
    """The history keeps NULL, not the evidence model's display defaults ("Python ?", not free-threaded)."""
    doc = copy.deepcopy(lab135_summary)
    for field in ("implementation", "version", "free_threaded_build"):
        del doc["interpreter"][field]
    doc["conditions"] = {}
    db = str(tmp_path / "h.db")
    record(doc, str(tmp_path), db)
    [run] = history.list_runs(db)
    assert (run.facts.implementation, run.facts.python_version, run.facts.free_threaded, run.facts.conditions) == (None, None, None, {})
    status, out, err = cli(capsys, "history", "--history", db)
    assert (status, err) == (0, "")
    assert out.splitlines()[2].split()[4] == "?"


def test_the_run_id_finish_and_machine_id_are_stored_as_recorded(tmp_path, lab135_summary) -> None:
    """Read through the evidence model's fields (Bundle.run_id, Bundle.finished_utc, Machine.machine_id): a
    machine id where the bundle records one, NULL where it does not; a run id only when it is one."""
    doc = copy.deepcopy(lab135_summary)
    doc.update(run_id="0123456789abcdef0123456789abcdef", finished_utc="2026-10-01T06:00:09Z")
    doc["machine"]["machine_id"] = "rack7-node3"
    without = copy.deepcopy(lab135_summary)
    without.pop("run_id", None)
    without.update(finished_utc=None, started_utc="2026-10-01T07:00:00Z")
    without["machine"].pop("machine_id", None)
    db = str(tmp_path / "h.db")
    record(doc, str(tmp_path / "a"), db)
    record(without, str(tmp_path / "b"), db)
    runs = {r.facts.folder: r for r in history.list_runs(db)}
    a, b = runs[os.path.realpath(str(tmp_path / "a"))], runs[os.path.realpath(str(tmp_path / "b"))]
    assert (a.run_uuid, a.facts.machine_id) == ("0123456789abcdef0123456789abcdef", "rack7-node3")
    assert (b.run_uuid, b.facts.machine_id) == (None, None)
    with sqlite3.connect(db) as conn:
        finished = dict(conn.execute("SELECT folder, finished_utc FROM runs").fetchall())
    conn.close()
    assert finished == {a.facts.folder: "2026-10-01T06:00:09Z", b.facts.folder: None}


@pytest.mark.parametrize("broken", [{"arms": []}, {"started_utc": "x"}, {"started_utc": "x", "arms": [], "bad": float("nan")}])
def test_unrecordable_summary_is_an_error(tmp_path, broken) -> None:
    db = tmp_path / "h.db"
    with pytest.raises(history.HistoryError, match="cannot record run in"):
        record(broken, str(tmp_path), str(db))
    assert not db.exists()


def test_a_crash_mid_record_leaves_the_database_as_it_was(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, write_bundle(tmp_path / "first", lab135_summary), db)
    before = read_bytes(db)
    write = store._store

    def store_then_interrupt(*args: Any) -> Any:
        write(*args)  # every row written, not yet committed
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "_store", store_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        record(variant(lab135_summary, started="2026-10-09T06:00:00Z"), str(tmp_path / "second"), db)
    assert read_bytes(db) == before
    assert [r.id for r in history.list_runs(db)] == [1]


def test_a_process_killed_mid_record_leaves_the_database_consistent(tmp_path, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, write_bundle(tmp_path / "first", lab135_summary), db)
    second = write_bundle(tmp_path / "second", variant(lab135_summary, started="2026-10-09T06:00:00Z"))
    script = (
        "import json, os, sys\n"
        "from wakelab import history\n"
        "from wakelab.evidence.model import Bundle\n"
        "from wakelab.history import store\n"
        "write = store._store\n"
        "def die(*a):\n"
        "    write(*a)\n"
        "    os._exit(9)  # no rollback, no commit: as if the power went\n"
        "store._store = die\n"
        "summary = json.load(open(os.path.join(sys.argv[2], 'summary.json')))\n"
        "history.record_run(Bundle(sys.argv[2], sys.argv[2], summary), sys.argv[1])\n"
    )
    result = subprocess.run([sys.executable, "-c", script, db, second], env=dict(os.environ, PYTHONPATH=SRC), timeout=60)
    assert result.returncode == 9
    assert [r.id for r in history.list_runs(db)] == [1]  # the hot journal was rolled back
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert record(read_summary(second), second, db).action == "added"


# ----------------------------------------------------------------------------------------------
# Listing and trends (golden)


def test_list_output_golden(tmp_path, three_runs, capsys) -> None:
    db = str(tmp_path / "h.db")
    status, out, err = cli(capsys, "history", "add", "--history", db, *three_runs)
    assert (status, err) == (0, "")
    assert out == "".join("%s: recorded as run %d\n" % (f, i) for i, f in enumerate(three_runs, 1)) + "history: %s\n" % db

    status, out, err = cli(capsys, "history", "--history", db)
    assert (status, err) == (0, "")
    runs = os.path.realpath(str(tmp_path / "runs"))
    assert out.replace(runs, "RUNS").replace(db, "DB") == (
        "HISTORY DB: 3 runs, newest first\n"
        "  id  started (UTC)     lab                         interpreter     host      complete  arms  folder\n"
        "   3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox   yes          3  RUNS/c\n"
        "   1  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.11.7  otherbox  yes          3  RUNS/b\n"
        "   2  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox   yes          3  RUNS/a\n"
    )


def test_trend_output_golden(tmp_path, three_runs, capsys) -> None:
    db = str(tmp_path / "h.db")
    for folder in three_runs:
        record(read_summary(folder), folder, db)

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event")
    assert (status, err) == (0, "")
    assert out == (
        "ARM event (threads, latency, blocked waiter, cross-thread): 3 runs, oldest first; times in µs\n"
        "  run  started (UTC)     lab                         interpreter     host        n  lost  p50  p99  status\n"
        "    2  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox   200     0  110  207\n"
        "    1  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.11.7  otherbox  200     0  250  207\n"
        "    3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox   200     0  105  207\n"
        "  conditions (every run): unpinned, closed loop, settle 1000 µs + random 0-2000 µs, 1 repetition, no\n"
        "  busy threads, no busy processes, no idle hold, in worker processes\n"
        "\n"
        "Note: these runs span 2 machines. A wake's cost depends on the machine, its CPU placement and idle\n"
        "states: compare rows of one host under the same conditions.\n"
    )

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "signal-install", "--host", "testbox")
    assert (status, err) == (0, "")
    assert out == (
        "ARM signal-install (signals, rate, self): 2 runs, oldest first; ops/s is the median round\n"
        "  run  started (UTC)     lab                         interpreter     host         ops/s  status\n"
        "    2  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox  1,000,000\n"
        "    3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox  1,000,000\n"
        "  conditions (every run): unpinned, closed loop, settle 1000 µs + random 0-2000 µs, 1 repetition, no\n"
        "  busy threads, no busy processes, no idle hold, in worker processes\n"
    )


def test_trend_tells_conditions_apart_in_words_and_shows_failed_arms(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    pinned = variant(lab135_summary, started="2026-10-01T06:00:00Z", placement=("same", 0, 0), event_p50_ns=5_600.0)
    split = variant(lab135_summary, started="2026-10-02T06:00:00Z", placement=("split", 0, 1), event_p50_ns=26_500.0)
    failed = variant(lab135_summary, started="2026-10-03T06:00:00Z", free_threaded=True, conditions=None)
    failed["arms"][0].update(status="failed", latency=None, reason="RuntimeError: boom")
    for i, doc in enumerate([pinned, split, failed]):
        record(doc, str(tmp_path / str(i)), db)

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event")
    assert (status, err) == (0, "")
    assert out == (
        "ARM event (threads, latency, blocked waiter, cross-thread): 3 runs, oldest first; times in µs\n"
        "  run  started (UTC)     lab                         interpreter                             host       n  lost   p50  p99"
        "  conditions                                                                           status\n"
        "    1  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5                          testbox  200     0  5.60  207"
        "  same CPU (0), no busy threads, no busy processes, no idle hold\n"
        "    2  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.13.5                          testbox  200     0  26.5  207"
        "  split CPUs (notifier 0, waiter 1), no busy threads, no busy processes, no idle hold\n"
        "    3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5 free-threaded (GIL off)  testbox    -     -     -    -"
        "  unpinned                                                                             failed\n"
        "  conditions (every run): closed loop, settle 1000 µs + random 0-2000 µs, 1 repetition, in worker\n"
        "  processes\n"
        "\n"
        "Note: these runs span different conditions. A wake's cost depends on the machine, its CPU placement\n"
        "and idle states: compare rows of one host under the same conditions.\n"
    )
    [run] = history.list_runs(db, history.HistoryFilter(limit=1))
    assert (run.arms, run.arms_ok) == (3, 2)
    status, out, err = cli(capsys, "history", "--history", db, "--limit", "1")
    assert (status, len(out.splitlines())) == (0, 3)
    assert " testbox  yes       3 (2 ok)  " in out.splitlines()[2]


def test_filters_and_limit(tmp_path, three_runs, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    for folder in three_runs:
        record(read_summary(folder), folder, db)
    ft = variant(lab135_summary, started="2026-10-04T06:00:00Z", version="3.13.5", free_threaded=True)
    record(ft, str(tmp_path / "ft"), db)

    def ids(**kw: Any) -> List[int]:
        return [r.id for r in history.list_runs(db, history.HistoryFilter(**kw))]

    assert ids() == [4, 3, 1, 2]
    assert ids(python="3.13") == [4, 3, 2]
    assert ids(python="3.13.5") == [4, 3, 2]
    assert ids(python="3.13t") == [4]
    assert ids(python="3.1") == []  # a prefix stops at a dot: 3.1 is not 3.13
    assert ids(python="3.11") == [1]
    assert ids(host="otherbox") == [1]
    assert ids(lab=LAB_135.id, limit=2) == [4, 3]
    assert ids(lab="matched") == []
    trend = history.arm_trend("event", db, history.HistoryFilter(python="3.13", limit=2))
    assert [p.run_id for p in trend] == [3, 4]  # the newest two, oldest first


def test_cli_filters_accept_lab_aliases_and_print_json(tmp_path, three_runs, capsys) -> None:
    db = str(tmp_path / "h.db")
    assert cli(capsys, "history", "add", "--history", db, *three_runs)[0] == 0

    status, out, err = cli(capsys, "history", "--history", db, "--lab", "135", "--python", "3.13", "--json")
    assert (status, err) == (0, "")
    doc = json.loads(out)
    assert (doc["schema"], doc["schema_version"], doc["database"]) == ("wakelab.history.runs", 1, db)
    assert [r["id"] for r in doc["runs"]] == [3, 2]
    assert doc["runs"][0]["hostname"] == "testbox" and doc["runs"][0]["arms"] == 3

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--host", "otherbox", "--json")
    doc = json.loads(out)
    assert (status, doc["schema"], doc["arm"]) == (0, "wakelab.history.trend", "event")
    assert [(p["run_id"], p["p50_ns"], p["python_version"]) for p in doc["runs"]] == [(1, 250_000.0, "3.11.7")]

    status, out, err = cli(capsys, "history", "add", "--history", db, "--json", three_runs[0])
    assert json.loads(out)["recorded"] == [{"run_id": 1, "action": "unchanged", "folder": three_runs[0]}]

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--host", "nowhere")
    assert (status, out, err) == (0, "no recorded run of arm event matches the filters\n", "")


def test_default_database_comes_from_the_environment(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    assert cli(capsys, "history", "add", folder)[0] == 0
    assert (tmp_path / "default-history.sqlite3").exists()
    status, out, err = cli(capsys, "history")
    assert out.startswith("HISTORY %s: 1 run, newest first\n" % (tmp_path / "default-history.sqlite3"))


def test_empty_or_missing_history_lists_nothing_and_creates_nothing(tmp_path, capsys) -> None:
    db = tmp_path / "none" / "h.db"
    assert cli(capsys, "history", "--history", str(db)) == (0, "no runs recorded in %s\n" % db, "")
    assert cli(capsys, "history", "--history", str(db), "--arm", "event") == (0, "no runs recorded in %s\n" % db, "")
    status, out, err = cli(capsys, "history", "--history", str(db), "--json")
    assert json.loads(out)["runs"] == []
    assert not (tmp_path / "none").exists()


def test_unknown_arm_names_the_recorded_ones(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, str(tmp_path), db)
    assert cli(capsys, "history", "--history", db, "--arm", "evnt") == (
        2, "", "wakelab: error: no recorded run has arm 'evnt' (did you mean 'event'?); recorded arms: event, signal-install, sigusr1-self\n")
    assert cli(capsys, "history", "--history", db, "--arm", "zzzz") == (
        2, "", "wakelab: error: no recorded run has arm 'zzzz' (recorded arms: event, signal-install, sigusr1-self)\n")


# ----------------------------------------------------------------------------------------------
# Schema versions and migration


def test_an_empty_version_0_database_is_migrated(tmp_path, lab135_summary) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(b"")  # what sqlite3.connect leaves behind before any table exists
    record(lab135_summary, str(tmp_path), str(db))
    assert [r.id for r in history.list_runs(str(db))] == [1]


NEXT = history.SCHEMA_VERSION + 1  # a schema version this wakelab does not have yet


def _add_v2_migration(monkeypatch, step) -> None:
    monkeypatch.setattr(schema, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(schema, "MIGRATIONS", schema.MIGRATIONS + [step])


def test_an_older_schema_is_migrated_in_place_keeping_its_runs(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, write_bundle(tmp_path / "old", lab135_summary), db)  # a version-1 database

    def add_tag_column(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN tag TEXT")
        conn.execute("UPDATE runs SET tag = 'migrated'")

    _add_v2_migration(monkeypatch, add_tag_column)
    assert [r.id for r in history.list_runs(db)] == [1]  # opening migrates
    record(variant(lab135_summary, started="2026-10-05T06:00:00Z"), str(tmp_path / "new"), db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == NEXT
        assert conn.execute("SELECT id, tag FROM runs ORDER BY id").fetchall() == [(1, "migrated"), (2, None)]
        assert dict(conn.execute("SELECT key, value FROM meta"))["schema_version"] == str(NEXT)
    conn.close()


def test_a_failed_migration_leaves_the_older_database_intact(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, str(tmp_path), db)
    before = read_bytes(db)

    def half_a_migration(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN tag TEXT")
        conn.execute("UPDATE no_such_table SET x = 1")

    _add_v2_migration(monkeypatch, half_a_migration)
    with pytest.raises(history.HistoryError, match="no such table: no_such_table while migrating it to schema %d" % NEXT):
        history.list_runs(db)
    assert read_bytes(db) == before
    monkeypatch.undo()
    monkeypatch.setenv("WAKELAB_HISTORY", str(tmp_path / "default-history.sqlite3"))
    assert [r.id for r in history.list_runs(db)] == [1]


def test_a_newer_schema_is_refused_and_left_alone(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, str(tmp_path), db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    before = read_bytes(db)
    message = "wakelab: error: history database %s was written by a newer wakelab (schema 7); upgrade wakelab or use --history\n" % db
    folder = write_bundle(tmp_path / "run", variant(lab135_summary, started="2026-10-05T06:00:00Z"))
    assert cli(capsys, "history", "--history", db) == (2, "", message)
    assert cli(capsys, "history", "add", "--history", db, folder) == (2, "", message)
    with pytest.raises(history.HistoryError, match="newer wakelab"):
        record(lab135_summary, folder, db)
    assert read_bytes(db) == before


# ----------------------------------------------------------------------------------------------
# Never lose earlier runs: corrupt, foreign, locked, unwritable


@pytest.mark.parametrize("content", [b"this is not a database\n" * 100, b"\x00" * 4096, b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_corrupt_file_is_refused_and_never_touched(tmp_path, lab135_summary, capsys, content) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(content)
    folder = write_bundle(tmp_path / "run", lab135_summary)

    with pytest.raises(history.HistoryError, match="it was left untouched") as info:
        record(lab135_summary, folder, str(db))
    assert "\n" not in str(info.value)
    status, out, err = cli(capsys, "history", "--history", str(db))
    assert (status, out) == (2, "")
    assert err.startswith("wakelab: error: history database %s " % db) and err.count("\n") == 1
    assert cli(capsys, "history", "add", "--history", str(db), folder)[0] == 2
    assert cli(capsys, "history", "--history", str(db), "--arm", "event")[0] == 2

    assert db.read_bytes() == content
    assert sorted(os.listdir(str(tmp_path))) == ["h.db", "run"]  # no journal, no "repaired" copy


def test_a_damaged_page_is_refused_and_never_touched(tmp_path, lab135_summary) -> None:
    db = tmp_path / "h.db"
    for i in range(8):  # several pages of runs
        record(variant(lab135_summary, started="2026-10-01T06:00:%02dZ" % i), str(tmp_path), str(db))
    damaged = bytearray(db.read_bytes())
    page_size = 4096
    assert len(damaged) > 6 * page_size
    damaged[3 * page_size: 3 * page_size + 64] = b"\xa5" * 64  # scribble over the header of page 4
    db.write_bytes(bytes(damaged))

    with pytest.raises(history.HistoryError, match="left untouched"):
        record(variant(lab135_summary, started="2026-11-01T06:00:00Z"), str(tmp_path), str(db))
    with pytest.raises(history.HistoryError, match="left untouched"):
        history.list_runs(str(db))
    assert db.read_bytes() == bytes(damaged)


def test_an_inconsistent_index_fails_the_integrity_check_and_is_never_touched(tmp_path, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    for day in (1, 2):
        record(variant(lab135_summary, started="2026-10-0%dT06:00:00Z" % day), str(tmp_path), db)
    # Make an index disagree with its table: the pages are well formed, the content is not.
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX runs_by_start ON runs (lab_id)' WHERE name = 'runs_by_start'")
    except sqlite3.DatabaseError:
        pytest.skip("this SQLite refuses writable_schema (defensive mode)")
    finally:
        conn.close()
    before = read_bytes(db)
    with pytest.raises(history.HistoryError) as info:
        record(variant(lab135_summary, started="2026-11-01T06:00:00Z"), str(tmp_path), db)
    assert str(info.value) == (
        "history database %s failed its integrity check (row 1 missing from index runs_by_start); it was left untouched: "
        "restore it from a backup, move it aside, or use --history PATH" % db)
    with pytest.raises(history.HistoryError, match="failed its integrity check"):
        history.list_runs(db)
    assert read_bytes(db) == before


def test_another_programs_sqlite_database_is_refused(tmp_path, lab135_summary) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(str(db)) as conn:
        conn.execute("CREATE TABLE runs (x)")
    conn.close()
    before = db.read_bytes()
    with pytest.raises(history.HistoryError) as info:
        record(lab135_summary, str(tmp_path), str(db))
    assert str(info.value) == (
        "%s is an SQLite database but not a wakelab history (it has tables runs); it was left untouched: use --history PATH" % db)
    assert db.read_bytes() == before


def test_a_locked_database_waits_then_says_so(tmp_path, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    record(lab135_summary, str(tmp_path / "a"), db)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(history.HistoryError) as info:
            record(variant(lab135_summary, started="2026-10-05T06:00:00Z"), str(tmp_path / "b"), db, timeout_s=0.05)
        assert str(info.value).startswith("history database %s is locked by another process (waited 0.05 s" % db)
        with pytest.raises(history.HistoryError, match="is locked by another process"):
            history.list_runs(db, timeout_s=0.05)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert record(variant(lab135_summary, started="2026-10-05T06:00:00Z"), str(tmp_path / "b"), db).run_id == 2


def test_an_unwritable_location_is_one_line_and_exit_2(tmp_path, lab135_summary) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    folder = write_bundle(tmp_path / "run", lab135_summary)
    db = blocker / "sub" / "h.db"
    result = subprocess.run(
        [sys.executable, "-m", "wakelab", "history", "add", "--history", str(db), folder],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=60,
    )
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "wakelab: error: cannot create history database %s: Not a directory (choose another with --history PATH)\n" % db)
    assert blocker.read_text() == "x"
    directory = tmp_path / "a-dir"
    directory.mkdir()
    with pytest.raises(history.HistoryError, match="is a directory"):
        record(lab135_summary, folder, str(directory))


def test_adding_a_bad_bundle_records_nothing(tmp_path, lab135_summary, capsys) -> None:
    good = write_bundle(tmp_path / "good", lab135_summary)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_text("{", encoding="utf-8")
    db = tmp_path / "h.db"
    status, out, err = cli(capsys, "history", "add", "--history", str(db), good, str(bad))
    assert (status, out) == (2, "")
    assert err.startswith("wakelab: error: %s is not valid JSON" % (bad / "summary.json"))
    assert not db.exists()


@pytest.mark.parametrize("args, message", [
    (["--limit", "0"], "wakelab history: error: argument --limit: must be between 1 and 1,000,000, got 0 (see wakelab history --help)"),
    (["--limit", "x"], "wakelab history: error: argument --limit: expected a whole number, got 'x' (see wakelab history --help)"),
    (["add"], "wakelab history add: error: the following arguments are required: RUN (see wakelab history add --help)"),
])
def test_bad_options(args, message, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["history", *args])
    out, err = capsys.readouterr()
    assert (info.value.code, out, err) == (2, "", message + "\n")


# ----------------------------------------------------------------------------------------------
# Never overwrite a file that is not an SQLite database (issue 14)

NOT_SQLITE = ('history database %s is not an SQLite database (it does not start with "SQLite format 3"); '
              "it was left untouched: move it aside or use --history PATH")


# SQLite takes a file shorter than its header for an empty database and writes over it: a
# one-byte file was lost that way before the header check.
@pytest.mark.parametrize("content", [b"x", b"my notes\n", b"0123456789abcde", b"not sqlite" * 9 + b"!", b"SQLite format 2\x00" + b"\x00" * 200])
def test_a_file_that_is_not_sqlite_is_refused_byte_identical(tmp_path, lab135_summary, capsys, content) -> None:
    db = tmp_path / "history.db"
    db.write_bytes(content)
    folder = write_bundle(tmp_path / "run", lab135_summary)
    message = NOT_SQLITE % db

    with pytest.raises(history.HistoryError) as info:
        record(lab135_summary, folder, str(db))
    assert str(info.value) == message
    for args in (["history"], ["history", "--arm", "event"], ["history", "add", folder], ["history", "import", folder]):
        assert cli(capsys, *args[:1], "--history", str(db), *args[1:]) == (2, "", "wakelab: error: %s\n" % message)
    # A run is refused before it measures anything.
    out = tmp_path / "out"
    status, stdout, err = cli(capsys, "run", "--in-process", "--arms", "event", "-n", "5", "--warmup", "0", "-q",
                              "-o", str(out), "--history", str(db))
    assert (status, err) == (2, "wakelab: error: %s\n" % message)
    assert not out.exists()
    assert db.read_bytes() == content
    assert sorted(os.listdir(str(tmp_path))) == ["history.db", "run"]  # no journal beside it


def test_a_truncated_sqlite_header_is_refused_byte_identical(tmp_path, lab135_summary) -> None:
    db = tmp_path / "h.db"
    content = b"SQLite format 3\x00" + b"\x10\x00" + b"\x00" * 30  # the magic, then not the whole 100-byte header
    db.write_bytes(content)
    with pytest.raises(history.HistoryError) as info:
        record(lab135_summary, str(tmp_path), str(db))
    assert str(info.value) == (
        "history database %s is unreadable (48 bytes, shorter than SQLite's 100-byte header); it was left untouched: "
        "move it aside or use --history PATH" % db)
    assert db.read_bytes() == content


def test_a_fifo_named_as_the_history_is_refused_without_blocking(tmp_path, lab135_summary, capsys) -> None:
    fifo = tmp_path / "h.db"
    os.mkfifo(str(fifo))
    message = "history database %s is not a regular file (a FIFO); it was left untouched: use --history PATH" % fifo
    with pytest.raises(history.HistoryError) as info:
        history.list_runs(str(fifo))
    assert str(info.value) == message
    assert cli(capsys, "history", "--history", str(fifo)) == (2, "", "wakelab: error: %s\n" % message)


def test_an_empty_file_and_a_real_database_still_open(tmp_path, lab135_summary) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(b"")
    assert record(lab135_summary, str(tmp_path), str(db)).action == "added"
    assert db.read_bytes()[:16] == b"SQLite format 3\x00"
    assert [r.id for r in history.list_runs(str(db))] == [1]


# ----------------------------------------------------------------------------------------------
# Conditions: every condition that changes a figure keys the history (issue 9)


def test_figure_conditions_gathers_parameters_conditions_and_execution(lab135_summary) -> None:
    doc = variant(lab135_summary, started="2026-10-01T06:00:00Z", placement=("split", 0, 1), mode="open", interval_us=500,
                  planted_delay_us=50,
                  conditions={"cpu_threads": 2, "cpu_procs": 3, "applied_cpu_procs": 1, "idle_hold": True,
                              "applied_idle_hold": False, "switch_interval_s": 0.001, "future_knob": "x"})
    doc["execution"]["repeat"] = 5
    doc["interpreter"].update(free_threaded_build=True, gil_enabled=True, python_gil_env="1", debug_build=True)
    build = {"implementation": "CPython", "python_version": "3.13.5", "free_threaded": True, "gil_enabled": True,
             "python_gil": "1", "debug_build": True, "build": "main, Jun 11 2025 15:36:57"}
    assert conditions_of(doc).to_dict() == dict(build, **{
        "placement": "split", "notifier_cpu": 0, "waiter_cpu": 1, "loop": "open", "interval_us": 500, "settle_us": 1000,
        "settle_jitter_us": 2000, "planted_delay_us": 50, "planted_after_us": 0, "repeat": 5, "busy_threads": 2, "busy_procs": 1,
        "idle_hold": False, "switch_interval_s": 0.001, "future_knob": "x", "execution": "workers",
    })
    # What the summary does not record is left out, not guessed -- but a bundle without execution.repeat
    # measured once, and one without PYTHON_GIL ran without it.
    plain = variant(lab135_summary, started="2026-10-01T06:00:00Z", conditions=None)
    del plain["execution"]
    del plain["interpreter"]
    del plain["parameters"]["settle_jitter_us"]  # a bundle from before random settles: every settle the same
    assert conditions_of(plain).to_dict() == {"placement": "any", "loop": "closed", "settle_us": 1000, "repeat": 1}
    plain["parameters"]["settle_jitter_us"] = 0  # no random part is the same experiment as those
    assert conditions_of(plain).to_dict() == {"placement": "any", "loop": "closed", "settle_us": 1000, "repeat": 1}
    assert conditions_of({"started_utc": "x", "arms": []}) is None

    from wakelab.commands.history import condition_phrases

    assert list(condition_phrases(conditions_of(doc)).values()) == [
        "split CPUs (notifier 0, waiter 1)", "open loop every 500 µs", "settle 1000 µs + random 0-2000 µs", "planted delay 50 µs", "5 repetitions",
        "2 busy threads", "1 busy process", "switch interval 0.001 s", "no idle hold", "in worker processes",
        "PYTHON_GIL=1", "build main, Jun 11 2025 15:36:57 (debug)", "future_knob x",
    ]


def test_a_conditions_key_reads_back_as_it_was_stored(tmp_path, lab135_summary) -> None:
    """The key is written once (runs.conditions_key) and read back typed; its JSON is the text it was stored as,
    conditions this wakelab does not know included, even ones named like the record's own fields."""
    doc = variant(lab135_summary, started="2026-10-01T06:00:00Z",
                  conditions={"cpu_threads": 1, "future_knob": [1, 2], "others": "x", "recorded": None})
    key = conditions_of(doc)
    assert key is not None and key.busy_threads == 1 and key.placement == "any"
    assert dict(key.others) == {"future_knob": [1, 2], "others": "x", "recorded": None}
    db = str(tmp_path / "h.db")
    record(doc, str(tmp_path), db)
    [run] = history.list_runs(db)
    with sqlite3.connect(db) as conn:
        [(stored,)] = conn.execute("SELECT conditions_key FROM runs").fetchall()
    conn.close()
    assert run.facts.figure_conditions == key
    assert canonical(run.facts.figure_conditions.to_dict()) == stored == canonical(json.loads(stored))


def test_where_a_planted_delay_came_keys_the_history(lab135_summary) -> None:
    # A delay planted 200 µs after the notify and one planted at once are different experiments; a bundle
    # that does not say when planted it at once.
    late, prompt = (variant(lab135_summary, started="2026-10-01T06:00:00Z", planted_delay_us=50, planted_after_us=after)
                    for after in (200, None))
    assert conditions_of(late).planted_after_us == 200
    assert conditions_of(prompt).planted_after_us == 0
    unplanted = conditions_of(variant(lab135_summary, started="2026-10-01T06:00:00Z", planted_after_us=200))
    assert "planted_after_us" not in unplanted.recorded  # no delay planted: when does not matter


@pytest.mark.parametrize("change", [
    "placement", "settle", "settle_jitter", "cpu_threads", "cpu_procs", "switch_interval", "idle_hold", "mode", "interval", "planted_delay",
    "implementation", "version", "free_threaded", "gil", "python_gil", "debug_build", "build", "repeat",
])
def test_every_condition_that_changes_a_figure_changes_the_key(lab135_summary, change) -> None:
    """One change at a time, from a run of the same lab: never the same conditions key."""
    base = variant(lab135_summary, started="2026-10-01T06:00:00Z", placement=("same", 0, 0))
    other = copy.deepcopy(base)
    params, conditions, interp = other["parameters"], other["conditions"], other["interpreter"]
    {
        "placement": lambda: params.update(placement="split", waiter_cpu=1),
        "settle": lambda: params.update(settle_us=200),
        "settle_jitter": lambda: params.update(settle_jitter_us=12000),
        "cpu_threads": lambda: conditions.update(cpu_threads=1),
        "cpu_procs": lambda: conditions.update(cpu_procs=2),
        "switch_interval": lambda: conditions.update(switch_interval_s=0.0001),
        "idle_hold": lambda: conditions.update(idle_hold=True),
        "mode": lambda: params.update(mode="open"),
        "interval": lambda: params.update(mode="open", interval_us=250) or base["parameters"].update(mode="open"),
        "planted_delay": lambda: params.update(planted_delay_us=60),
        "implementation": lambda: interp.update(implementation="PyPy"),
        "version": lambda: interp.update(version="3.13.6"),
        "free_threaded": lambda: interp.update(free_threaded_build=True),
        "gil": lambda: interp.update(gil_enabled=False),
        "python_gil": lambda: interp.update(python_gil_env="0"),
        "debug_build": lambda: interp.update(debug_build=True),
        "build": lambda: interp.update(build="heads/main:abc123, Jul 1 2025"),
        "repeat": lambda: other["execution"].update(repeat=5),
    }[change]()
    assert conditions_of(base) != conditions_of(other)
    # The repetitions absent (older bundles) are one repetition, the same as saying so.
    if change == "repeat":
        said = copy.deepcopy(base)
        said["execution"]["repeat"] = 1
        assert conditions_of(said) == conditions_of(base)


def test_a_real_placement_and_load_grid_gets_one_conditions_key_per_cell(tmp_path, capsys) -> None:
    from wakelab.core.placement import can_pin

    if not can_pin() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs this process may pin to")
    db, out = str(tmp_path / "h.db"), str(tmp_path / "grid")
    status = main(["run", "--in-process", "--arms", "event", "-n", "5", "--warmup", "0", "--placement", "same,split",
                   "--cpu-threads", "0,1", "-q", "-o", out, "--history", db])
    capsys.readouterr()
    assert status == 0
    runs = history.list_runs(db)
    assert len(runs) == 4
    keys = {json.dumps(r.facts.figure_conditions.to_dict(), sort_keys=True) for r in runs}
    assert len(keys) == 4  # same/split x 0/1 busy threads: four conditions, four keys
    assert {(r.facts.figure_conditions.placement, r.facts.figure_conditions.busy_threads) for r in runs} == {
        ("same", 0), ("same", 1), ("split", 0), ("split", 1)}
    assert len({json.dumps(r.facts.conditions, sort_keys=True) for r in runs}) == 2  # the conditions block alone cannot tell placement

    status, text, err = cli(capsys, "history", "--history", db, "--arm", "event")
    assert (status, err) == (0, "")
    rows = {line.split()[0]: line for line in text.splitlines()[2:6]}
    by_cell = {os.path.basename(r.facts.folder): str(r.id) for r in runs}
    assert "same CPU (" in rows[by_cell["same_threads0"]] and "no busy threads" in rows[by_cell["same_threads0"]]
    assert "split CPUs (notifier " in rows[by_cell["split_threads1"]] and "1 busy thread" in rows[by_cell["split_threads1"]]
    assert re.search(r"conditions \(every run\): closed loop, settle 1000 µs \+ random 0-2000 µs, \d+ repetitions?, no busy\s+processes,", text)

    # The grid folder itself, imported into another history and added to a third: the same four runs and keys.
    for action, name in (("import", "imported.db"), ("add", "added.db")):
        other = str(tmp_path / name)
        status, text, err = cli(capsys, "history", action, "--history", other, out)
        assert (status, err) == (0, "")
        assert {r.run_uuid: r.facts.figure_conditions for r in history.list_runs(other)} == {r.run_uuid: r.facts.figure_conditions for r in runs}
    assert text.splitlines()[-1] == "history: %s" % other
    assert cli(capsys, "history", "import", "--history", other, out)[1].splitlines()[-2] == (
        "imported 4 runs (4 already recorded) from 1 machine")


def _insert_run(conn: sqlite3.Connection, doc: Dict[str, Any], folder: str, **columns: Any) -> None:
    """One run as an older schema held it: the columns its ``runs`` table has (``columns`` replace some), and its arm results."""
    bundle = Bundle(source=folder, folder=folder, summary=doc)
    row = dataclasses.replace(RunRow.from_bundle(bundle), **columns)
    names = [c[1] for c in conn.execute("PRAGMA table_info(runs)") if c[1] != "id"]
    cur = conn.execute("INSERT INTO runs (%s) VALUES (%s)" % (", ".join(names), ", ".join("?" * len(names))),
                       [getattr(row, name) for name in names])
    conn.executemany("INSERT INTO arm_results VALUES (%s)" % ", ".join("?" * 17),
                     [(cur.lastrowid,) + dataclasses.astuple(arm) for arm in ArmRow.of_bundle(bundle)])


def _version_2_history(db: str, docs: List[Dict[str, Any]], folder: str) -> None:
    """A history as wakelab 0.2 wrote it (schema 2), holding ``docs``."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for step in schema.MIGRATIONS[:2]:
            step(conn)
        conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '2')")
        conn.execute("PRAGMA user_version = 2")
        for doc in docs:
            _insert_run(conn, doc, folder)  # the schema-2 columns
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_a_version_2_history_is_migrated_and_its_runs_keyed_by_conditions(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    same = variant(lab135_summary, started="2026-10-01T06:00:00Z", placement=("same", 0, 0), event_p50_ns=5_600.0)
    split = variant(lab135_summary, started="2026-10-02T06:00:00Z", placement=("split", 0, 1), event_p50_ns=26_500.0)
    _version_2_history(db, [same, split], str(tmp_path))
    with sqlite3.connect(db) as conn:
        arms_before = conn.execute("SELECT * FROM arm_results ORDER BY run_id, position").fetchall()
        columns_before = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    conn.close()
    assert "conditions_key" not in columns_before

    runs = history.list_runs(db)  # opening migrates

    assert [r.id for r in runs] == [2, 1]
    assert [r.facts.figure_conditions.placement for r in runs] == ["split", "same"]
    assert [(r.facts.cpu_count, r.imported_utc) for r in runs] == [(2, None), (2, None)]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION == 4
        assert conn.execute("SELECT * FROM arm_results ORDER BY run_id, position").fetchall() == arms_before
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert len({k for (k,) in conn.execute("SELECT conditions_key FROM runs")}) == 2
    finally:
        conn.close()
    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event")
    assert "same CPU (0)" in out.splitlines()[2] and "split CPUs (notifier 0, waiter 1)" in out.splitlines()[3]
    # Recorded again after the migration: the same runs, unchanged.
    assert [record(d, str(tmp_path), db).action for d in (same, split)] == ["unchanged", "unchanged"]


V4_FIELDS = ("repeat", "implementation", "python_version", "free_threaded", "gil_enabled", "python_gil", "debug_build", "build")


def _version_3_history(db: str, docs: List[Dict[str, Any]], folder: str) -> None:
    """A history as schema 3 wrote it: its conditions key without the repetitions and the interpreter build."""
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for step in schema.MIGRATIONS[:3]:
            step(conn)
        conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '3')")
        conn.execute("PRAGMA user_version = 3")
        for doc in docs:
            key = {k: v for k, v in conditions_of(doc).to_dict().items() if k not in V4_FIELDS}
            _insert_run(conn, doc, folder, conditions_key=canonical(key))
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_a_version_3_history_is_migrated_and_its_keys_gain_the_build_and_repetitions(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    gil = variant(lab135_summary, started="2026-10-01T06:00:00Z", placement=("same", 0, 0), event_p50_ns=5_600.0)
    free = variant(lab135_summary, started="2026-10-02T06:00:00Z", placement=("same", 0, 0), event_p50_ns=7_300.0,
                   free_threaded=True)
    _version_3_history(db, [gil, free], str(tmp_path))
    with sqlite3.connect(db) as conn:
        arms_before = conn.execute("SELECT * FROM arm_results ORDER BY run_id, position").fetchall()
        assert len({k for (k,) in conn.execute("SELECT conditions_key FROM runs")}) == 1  # schema 3: one key for both builds
        conn.execute("UPDATE runs SET cpu_count = 99, machine_id = 'm-old'")  # as schema 3 stored them, whatever they were
    conn.close()

    runs = history.list_runs(db)  # opening migrates

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION == 4
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "4"
        assert conn.execute("SELECT * FROM arm_results ORDER BY run_id, position").fetchall() == arms_before
        assert len({k for (k,) in conn.execute("SELECT conditions_key FROM runs")}) == 2
        # Schema 4 recomputes the conditions key only: the other columns schema 3 filled in keep what they hold.
        assert set(conn.execute("SELECT cpu_count, machine_id FROM runs")) == {(99, "m-old")}
    finally:
        conn.close()
    assert [(key.free_threaded, key.gil_enabled, key.repeat) for key in (r.facts.figure_conditions for r in runs)] == [
        (True, False, 1), (False, True, 1)]
    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--json")
    assert (status, err) == (0, "")
    assert [s["runs"] for s in json.loads(out)["series"]] == [[1], [2]]
    # Recorded again after the migration: the same runs, unchanged.
    assert [record(d, str(tmp_path), db).action for d in (gil, free)] == ["unchanged", "unchanged"]


def test_two_real_runs_same_cpu_and_split_are_two_series(tmp_path, capsys) -> None:
    """Two tiny real runs, one pinned to one CPU and one split over two: never one key, never one series."""
    from wakelab.core.placement import can_pin

    if not can_pin() or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs this process may pin to")
    db = str(tmp_path / "h.db")
    for placement in ("same", "split"):
        status = main(["run", "--arms", "event,pipe", "--n", "60", "-q", "--placement", placement,
                       "-o", str(tmp_path / placement), "--history", db])
        assert status == 0
    capsys.readouterr()
    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--json")
    assert (status, err) == (0, "")
    doc = json.loads(out)
    keys = [p["figure_conditions"] for p in doc["runs"]]
    assert [k["placement"] for k in keys] == ["same", "split"]
    assert keys[0] != keys[1]
    assert [len(s["runs"]) for s in doc["series"]] == [1, 1]
    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event")
    rows = out.splitlines()[2:4]
    assert "same CPU (" in rows[0] and "split CPUs (" in rows[1]


# ----------------------------------------------------------------------------------------------
# Runs from other machines: history import


def _fleet(tmp_path, lab135_summary) -> Dict[str, str]:
    """Bundles as CI artifacts: two machines' runs and a grid of two cells (one never ran) from a third."""
    base = tmp_path / "artifacts"
    bundles = {
        "a": write_bundle(base / "ci-a", variant(lab135_summary, started="2026-10-01T06:00:00Z", host="ci-a")),
        "b": write_bundle(base / "ci-b", variant(lab135_summary, started="2026-10-01T06:05:00Z", host="ci-b", event_p50_ns=90_000.0)),
    }
    grid = base / "ci-c-grid"
    cells = []
    for label, placement, p50 in (("same", ("same", 0, 0), 6_000.0), ("split", ("split", 0, 1), 25_000.0)):
        doc = variant(lab135_summary, started="2026-10-01T06:10:00Z", host="ci-c", placement=placement, event_p50_ns=p50)
        write_bundle(grid / "cells" / label, doc)
        cells.append({"label": label, "folder": "cells/" + label, "dimensions": {"placement": label}, "status": "done",
                      "complete": True, "interpreter": doc["interpreter"]})
    cells.append({"label": "never", "folder": "cells/never", "dimensions": {"placement": "any"}, "status": "pending",
                  "complete": False, "interpreter": None})
    matrix = {"schema": "wakelab.matrix", "schema_version": 1, "lab": {"id": "custom", "title": "t"}, "started_utc": "2026-10-01T06:10:00Z",
              "command": ["wakelab"], "complete": False, "dimensions": ["placement"], "cells": cells, "arms": []}
    with open(str(grid / "matrix.json"), "w", encoding="utf-8") as fh:
        json.dump(matrix, fh)
    bundles["grid"] = str(grid)
    return bundles


def test_import_records_bundles_and_grid_cells_with_provenance_once(tmp_path, lab135_summary, capsys) -> None:
    import platform

    bundles = _fleet(tmp_path, lab135_summary)
    db = str(tmp_path / "fleet.db")
    status, out, err = cli(capsys, "history", "import", "--history", db, bundles["a"], bundles["b"], bundles["grid"])
    assert (status, err) == (0, "")
    art = os.path.realpath(str(tmp_path / "artifacts"))
    assert out.replace(art, "ART") == (
        "ART/ci-a (ci-a): recorded as run 1\n"
        "ART/ci-b (ci-b): recorded as run 2\n"
        "ART/ci-c-grid/cells/same (ci-c): recorded as run 3\n"
        "ART/ci-c-grid/cells/split (ci-c): recorded as run 4\n"
        "imported 4 runs from 3 machines; 1 cell of a grid never ran\n"
        "history: %s\n" % db
    )
    runs = {r.id: r for r in history.list_runs(db)}
    assert {r.facts.hostname for r in runs.values()} == {"ci-a", "ci-b", "ci-c"}
    assert runs[3].facts.imported_from == os.path.join(bundles["grid"], "cells", "same")
    assert all(r.imported_by == (platform.node() or None) and r.imported_utc for r in runs.values())
    assert (runs[1].facts.cpu_model, runs[1].facts.kernel, runs[1].facts.cpu_count) == ("Test CPU @ 2.00GHz", "6.1.0-test", 2)
    assert runs[3].facts.figure_conditions != runs[4].facts.figure_conditions
    before = read_bytes(db)

    # Again, and with a bundle given twice: nothing is added.
    status, out, err = cli(capsys, "history", "import", "--history", db, bundles["grid"], bundles["a"], bundles["a"])
    assert (status, err) == (0, "")
    assert out.splitlines()[-2] == "imported 4 runs (4 already recorded) from 2 machines; 1 cell of a grid never ran"
    assert len(history.list_runs(db)) == 4
    assert read_bytes(db) == before

    status, out, err = cli(capsys, "history", "--history", db)
    assert out.splitlines()[1].split() == ["id", "started", "(UTC)", "lab", "interpreter", "host", "complete", "arms", "source", "folder"]
    assert "  imported 20" in out.splitlines()[2]


def test_import_keeps_the_first_provenance_and_dedups_old_bundles_by_folder_and_start(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    local = write_bundle(tmp_path / "local", lab135_summary)
    assert cli(capsys, "history", "add", "--history", db, local)[0] == 0
    old = variant(lab135_summary, started="2026-10-04T06:00:00Z", host="old-ci")
    del old["run_id"]  # a bundle from before run ids
    old_folder = write_bundle(tmp_path / "old", old)
    for expected in ("imported 2 runs (1 already recorded) from 2 machines", "imported 2 runs (2 already recorded) from 2 machines"):
        status, out, err = cli(capsys, "history", "import", "--history", db, local, old_folder)
        assert (status, err, out.splitlines()[-2]) == (0, "", expected)
    runs = {r.facts.hostname: r for r in history.list_runs(db)}
    assert runs["testbox"].imported_utc is None  # recorded here first: it stays a local run
    assert runs["old-ci"].facts.imported_from == old_folder and runs["old-ci"].run_uuid is None


def test_import_of_a_bad_bundle_is_one_line_exit_2_and_records_nothing(tmp_path, lab135_summary, capsys) -> None:
    bundles = _fleet(tmp_path, lab135_summary)
    db = tmp_path / "h.db"
    missing = str(tmp_path / "nope")
    cases = {
        missing: "%s: no such file or folder (give a bundle folder, its summary.json, or a grid folder)" % missing,
        str(tmp_path / "artifacts"): "%s is not a wakelab bundle: it has no summary.json (a run) or matrix.json (a grid); "
                                      "it holds 3 bundles: give them as %s" % (tmp_path / "artifacts", tmp_path / "artifacts" / "*"),
    }
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "summary.json").write_text('{"schema": "wakelab.summary", "x": 1e400}', encoding="utf-8")
    cases[str(bad)] = "%s is not valid evidence: the number 1e400 is beyond the range of a float (non-finite numbers are refused)" % (
        bad / "summary.json")
    for path, message in cases.items():
        status, out, err = cli(capsys, "history", "import", "--history", str(db), bundles["a"], path)
        assert (status, out, err) == (2, "", "wakelab: error: %s\n" % message)
    assert not db.exists()

    # A grid cell that leads outside the grid is refused.
    outside = write_bundle(tmp_path / "elsewhere", lab135_summary)
    cell = os.path.join(bundles["grid"], "cells", "split")
    os.rename(cell, cell + ".moved")
    os.symlink(outside, cell)
    status, out, err = cli(capsys, "history", "import", "--history", str(db), bundles["grid"])
    assert (status, err) == (2, "wakelab: error: %s: cell split's folder cells/split leads outside the grid (to %s): a grid's "
                             "cells are read only from inside its folder\n" % (bundles["grid"], outside))
    assert not db.exists()


def test_import_is_all_or_nothing_when_writing_fails(tmp_path, lab135_summary, capsys, monkeypatch) -> None:
    bundles = _fleet(tmp_path, lab135_summary)
    db = str(tmp_path / "h.db")
    record(lab135_summary, write_bundle(tmp_path / "first", lab135_summary), db)
    before = read_bytes(db)
    write, calls = store._store, []

    def fail_on_the_third(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise sqlite3.OperationalError("disk I/O error")
        return write(*args)

    monkeypatch.setattr(store, "_store", fail_on_the_third)
    status, out, err = cli(capsys, "history", "import", "--history", db, bundles["a"], bundles["b"], bundles["grid"])
    assert (status, out) == (2, "")
    assert err == "wakelab: error: history database %s: disk I/O error while recording 4 runs\n" % db
    assert read_bytes(db) == before
    assert [r.id for r in history.list_runs(db)] == [1]


def test_import_json(tmp_path, lab135_summary, capsys) -> None:
    bundles = _fleet(tmp_path, lab135_summary)
    db = str(tmp_path / "h.db")
    status, out, err = cli(capsys, "history", "import", "--history", db, "--json", bundles["a"], bundles["a"])
    doc = json.loads(out)
    assert (status, doc["schema"], doc["database"]) == (0, "wakelab.history.import", db)
    assert doc["counts"] == {"runs": 2, "added": 1, "unchanged": 1, "updated": 0, "machines": 1, "pending_cells": 0}
    assert [(r["action"], r["hostname"], r["imported_from"]) for r in doc["imported"]] == [
        ("added", "ci-a", bundles["a"]), ("unchanged", "ci-a", bundles["a"])]
    assert doc["summary"] == "imported 2 runs (1 already recorded) from 1 machine"


def test_imported_machine_facts_reach_the_terminal_escaped(tmp_path, lab135_summary, capsys) -> None:
    doc = variant(lab135_summary, started="2026-10-01T06:00:00Z", host="evil\x1b]0;pwned\x07")
    doc["machine"]["cpu_model"] = "CPU\x1b[2J"
    folder = write_bundle(tmp_path / "evil", doc)
    db = str(tmp_path / "h.db")
    outputs = [cli(capsys, "history", "import", "--history", db, folder)[1]]
    outputs += [cli(capsys, "history", "--history", db, *args)[1] for args in (["--by-host"], ["--arm", "event", "--group", "machine"])]
    for out in outputs:
        assert "\x1b" not in out and "\x07" not in out
        assert "evil\\x1b]0;pwned\\x07" in out or "CPU\\x1b[2J" in out


# ----------------------------------------------------------------------------------------------
# Grouped by machine


def test_list_and_trend_grouped_by_host_golden(tmp_path, three_runs, capsys) -> None:
    db = str(tmp_path / "h.db")
    assert cli(capsys, "history", "add", "--history", db, *three_runs)[0] == 0
    runs = os.path.realpath(str(tmp_path / "runs"))

    status, out, err = cli(capsys, "history", "--history", db, "--by-host")
    assert (status, err) == (0, "")
    assert out.replace(runs, "RUNS").replace(db, "DB") == (
        "HISTORY DB: 3 runs on 2 hosts, newest first\n"
        "host otherbox: Test CPU @ 2.00GHz, 2 CPUs, kernel 6.1.0-test, x86_64; 1 run\n"
        "  id  started (UTC)     lab                         interpreter     complete  arms  folder\n"
        "   1  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.11.7  yes          3  RUNS/b\n"
        "host testbox: Test CPU @ 2.00GHz, 2 CPUs, kernel 6.1.0-test, x86_64; 2 runs\n"
        "  id  started (UTC)     lab                         interpreter     complete  arms  folder\n"
        "   3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  yes          3  RUNS/c\n"
        "   2  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  yes          3  RUNS/a\n"
    )
    assert cli(capsys, "history", "--history", db, "--group", "host") == (status, out, err)

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--group", "host")
    assert (status, err) == (0, "")
    assert out == (
        "ARM event (threads, latency, blocked waiter, cross-thread): 3 runs on 2 hosts, oldest first; times in µs\n"
        "host otherbox: Test CPU @ 2.00GHz, 2 CPUs, kernel 6.1.0-test, x86_64; 1 run\n"
        "  run  started (UTC)     lab                         interpreter       n  lost  p50  p99  status\n"
        "    1  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.11.7  200     0  250  207\n"
        "host testbox: Test CPU @ 2.00GHz, 2 CPUs, kernel 6.1.0-test, x86_64; 2 runs\n"
        "  run  started (UTC)     lab                         interpreter       n  lost  p50  p99  status\n"
        "    2  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  200     0  110  207\n"
        "    3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  200     0  105  207\n"
        "  conditions (every run): unpinned, closed loop, settle 1000 µs + random 0-2000 µs, 1 repetition, no\n"
        "  busy threads, no busy processes, no idle hold, in worker processes\n"
        "\n"
        "Note: these runs span 2 machines. A wake's cost depends on the machine, its CPU placement and idle\n"
        "states: compare rows of one host under the same conditions.\n"
    )

    # By machine: two hostnames, one kind of machine (as CI runners whose names change every job).
    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--group", "machine")
    assert out.splitlines()[1] == "machine Test CPU @ 2.00GHz, 2 CPUs, kernel 6.1.0-test, x86_64: 3 runs on hosts otherbox, testbox"
    assert out.splitlines()[2].split()[5] == "host"

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--by-host", "--json")
    doc = json.loads(out)
    assert (doc["group_by"], [(g["name"], g["runs"]) for g in doc["groups"]]) == ("host", [("otherbox", [1]), ("testbox", [2, 3])])
    assert doc["groups"][0]["machines"] == ["Test CPU @ 2.00GHz, 2 CPUs, kernel 6.1.0-test, x86_64"]


def test_host_filter_finds_imported_runs_and_grouping_options_exclude_each_other(tmp_path, lab135_summary, capsys) -> None:
    bundles = _fleet(tmp_path, lab135_summary)
    db = str(tmp_path / "h.db")
    assert cli(capsys, "history", "import", "--history", db, bundles["a"], bundles["grid"])[0] == 0
    assert [r.facts.hostname for r in history.list_runs(db, history.HistoryFilter(host="ci-c"))] == ["ci-c", "ci-c"]
    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event", "--host", "ci-c", "--by-host")
    assert (status, err) == (0, "")
    assert out.splitlines()[1].startswith("host ci-c: ") and "ci-a" not in out
    with pytest.raises(SystemExit) as info:
        main(["history", "--by-host", "--group", "machine"])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        "wakelab history: error: argument --group: not allowed with argument --by-host (see wakelab history --help)\n")


# ----------------------------------------------------------------------------------------------
# It runs in the measuring process: stdlib only, Python 3.9 syntax


def test_history_package_is_stdlib_only_and_3_9_syntax() -> None:
    import ast

    folder = os.path.dirname(history.__file__)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as fh:
                ast.parse(fh.read(), feature_version=(3, 9))
    code = (
        "import sys; before = set(sys.modules); import wakelab.history; "
        "print('\\n'.join(sorted(m for m in set(sys.modules) - before)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=SRC), timeout=60, check=True).stdout.split()
    third_party = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "wakelab"]
    assert third_party == []
    # The history and the evidence model it reads; not the validating loader (jsonschema), nor anything above.
    assert sorted(m for m in loaded if m.startswith("wakelab") and not m.startswith(("wakelab.history", "wakelab.evidence"))) == [
        "wakelab", "wakelab.errors", "wakelab.formatting", "wakelab.percentile"]
    assert sorted(m for m in loaded if m.startswith("wakelab.evidence")) == [
        "wakelab.evidence", "wakelab.evidence.arms", "wakelab.evidence.bundle", "wakelab.evidence.figures",
        "wakelab.evidence.interpreter", "wakelab.evidence.model", "wakelab.evidence.sections", "wakelab.evidence.warnings",
        "wakelab.evidence.words"]


def test_history_modules_import_only_those_below_them() -> None:
    """The package's own layering (see its __init__): each module imports only the modules listed before it."""
    import ast

    order = ["conditions", "rows", "schema", "store", "queries"]
    folder = os.path.dirname(history.__file__)
    for position, name in enumerate(order):
        with open(os.path.join(folder, name + ".py"), encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "wakelab.history":
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wakelab.history."):
                imported.add(str(node.module).split(".")[2])
        assert imported <= set(order[:position]), (name, sorted(imported - set(order[:position])))
    assert sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n != "__init__.py") == sorted(order)
