"""Run history (wakelab.history and ``wakelab history``): recording, listing, trends, and safety.

Every database here lives in tmp_path; the autouse fixture points $WAKELAB_HISTORY
there too, so nothing can reach the real user's history.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from typing import Any, Dict, List

import pytest

from wakelab import history
from wakelab.cli import main
from wakelab.evidence.bundle import dumps
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
            event_p50_ns: float = 110_000.0, free_threaded: bool = False, conditions: Any = FIXED_CONDITIONS) -> Dict[str, Any]:
    """The lab135 summary, as if made at another time, on another host or interpreter, under ``conditions``."""
    doc = copy.deepcopy(summary)
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
    assert history.default_db_path({"WAKELAB_HISTORY": "/x/h.db", "XDG_DATA_HOME": "/data"}) == "/x/h.db"
    assert history.default_db_path({"XDG_DATA_HOME": "/data"}) == "/data/wakelab/history.sqlite3"
    relative = history.default_db_path({"XDG_DATA_HOME": "relative/dir"})  # ignored, as the XDG spec asks
    assert relative == os.path.join(home, ".local", "share", "wakelab", "history.sqlite3")
    assert history.default_db_path({}) == relative
    assert history.resolve_db_path(None) == str(tmp_path / "default-history.sqlite3")
    assert history.resolve_db_path(str(tmp_path / "h.db")) == str(tmp_path / "h.db")


# ----------------------------------------------------------------------------------------------
# Recording


def test_records_a_real_bundle(tmp_path, tiny_params) -> None:
    folder = str(tmp_path / "bundle")
    os.makedirs(folder)
    summary = run_plan(RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=tiny_params, folder=folder))
    db = str(tmp_path / "h.db")

    result = history.record_run(summary, folder, db)

    assert (result.run_id, result.action, result.db_path) == (1, "added", db)
    [run] = history.list_runs(db)
    assert run.folder == os.path.realpath(folder)
    assert run.started_utc == summary["started_utc"]
    assert run.lab_id == LAB_135.id
    assert run.complete is summary["complete"]
    assert run.python_version == summary["interpreter"]["version"]
    assert run.hostname == summary["machine"]["hostname"]
    assert (run.arms, run.arms_ok) == (2, 2)
    [event] = history.arm_trend("event", db)
    latency = summary["arms"][0]["latency"]
    assert (event.n, event.lost, event.p50_ns, event.p99_ns, event.max_ns) == (
        latency["n"], latency["lost"], latency["p50_ns"], latency["p99_ns"], latency["max_ns"])
    [install] = history.arm_trend("signal-install", db)
    assert install.kind == "rate" and install.ops_per_s == summary["arms"][1]["rate"]["ops_per_s"]
    assert install.p50_ns is None

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
    assert history.record_run(lab135_summary, folder, db).action == "added"
    assert history.record_run(lab135_summary, folder, db).action == "unchanged"
    # The same folder reached another way is the same run.
    os.symlink(folder, str(tmp_path / "link"))
    assert history.record_run(lab135_summary, str(tmp_path / "link"), db).action == "unchanged"
    assert len(history.list_runs(db)) == 1

    # A newer state of the same bundle (recorded while it ran, then finished) updates it in place.
    finished = copy.deepcopy(lab135_summary)
    finished["arms"] = finished["arms"][:2]
    result = history.record_run(finished, folder, db)
    assert (result.run_id, result.action) == (1, "updated")
    [run] = history.list_runs(db)
    assert run.arms == 2
    assert history.arm_trend("signal-install", db) == []

    # Another run in the same folder (another start time) is another run.
    again = variant(lab135_summary, started="2026-10-05T06:00:00Z")
    assert history.record_run(again, folder, db).run_id == 2


def test_unknown_and_future_fields_are_kept_not_required(tmp_path, lab135_summary) -> None:
    doc = copy.deepcopy(lab135_summary)
    doc["conditions"] = {"placement": "split", "idle_hold": True}
    doc["workers"] = [{"pid": 1}]  # a field this wakelab does not know
    doc["arms"][0]["new_figure"] = 1
    del doc["machine"]["cpu_model"]
    db = str(tmp_path / "h.db")
    history.record_run(doc, str(tmp_path), db)
    [run] = history.list_runs(db)
    assert run.conditions == {"placement": "split", "idle_hold": True}
    assert run.cpu_model is None
    with sqlite3.connect(db) as conn:
        assert json.loads(conn.execute("SELECT summary_json FROM runs").fetchone()[0])["workers"] == [{"pid": 1}]
    conn.close()


@pytest.mark.parametrize("broken", [{"arms": []}, {"started_utc": "x"}, {"started_utc": "x", "arms": [], "bad": float("nan")}])
def test_unrecordable_summary_is_an_error(tmp_path, broken) -> None:
    db = tmp_path / "h.db"
    with pytest.raises(history.HistoryError, match="cannot record run in"):
        history.record_run(broken, str(tmp_path), str(db))
    assert not db.exists()


def test_a_crash_mid_record_leaves_the_database_as_it_was(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    history.record_run(lab135_summary, write_bundle(tmp_path / "first", lab135_summary), db)
    before = read_bytes(db)
    store = history._store

    def store_then_interrupt(*args: Any) -> Any:
        store(*args)  # every row written, not yet committed
        raise KeyboardInterrupt

    monkeypatch.setattr(history, "_store", store_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        history.record_run(variant(lab135_summary, started="2026-10-09T06:00:00Z"), str(tmp_path / "second"), db)
    assert read_bytes(db) == before
    assert [r.id for r in history.list_runs(db)] == [1]


def test_a_process_killed_mid_record_leaves_the_database_consistent(tmp_path, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    history.record_run(lab135_summary, write_bundle(tmp_path / "first", lab135_summary), db)
    second = write_bundle(tmp_path / "second", variant(lab135_summary, started="2026-10-09T06:00:00Z"))
    script = (
        "import json, os, sys\n"
        "from wakelab import history\n"
        "store = history._store\n"
        "def die(*a):\n"
        "    store(*a)\n"
        "    os._exit(9)  # no rollback, no commit: as if the power went\n"
        "history._store = die\n"
        "summary = json.load(open(os.path.join(sys.argv[2], 'summary.json')))\n"
        "history.record_run(summary, sys.argv[2], sys.argv[1])\n"
    )
    result = subprocess.run([sys.executable, "-c", script, db, second], env=dict(os.environ, PYTHONPATH=SRC), timeout=60)
    assert result.returncode == 9
    assert [r.id for r in history.list_runs(db)] == [1]  # the hot journal was rolled back
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    assert history.record_run(read_summary(second), second, db).action == "added"


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
        history.record_run(read_summary(folder), folder, db)

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event")
    assert (status, err) == (0, "")
    assert out == (
        "ARM event (threads, latency, blocked waiter, cross-thread): 3 runs, oldest first; times in µs\n"
        "  run  started (UTC)     lab                         interpreter     host        n  lost  p50  p99  status\n"
        "    2  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox   200     0  110  207\n"
        "    1  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.11.7  otherbox  200     0  250  207\n"
        "    3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5  testbox   200     0  105  207\n"
        '  conditions (every run): {"cpu_procs": 0, "cpu_threads": 0, "idle_hold": false}\n'
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
        '  conditions (every run): {"cpu_procs": 0, "cpu_threads": 0, "idle_hold": false}\n'
    )


def test_trend_labels_conditions_and_shows_failed_arms(tmp_path, lab135_summary, capsys) -> None:
    db = str(tmp_path / "h.db")
    pinned = variant(lab135_summary, started="2026-10-01T06:00:00Z", conditions={"placement": "same-cpu"})
    split = variant(lab135_summary, started="2026-10-02T06:00:00Z", conditions={"placement": "split"})
    failed = variant(lab135_summary, started="2026-10-03T06:00:00Z", free_threaded=True, conditions=None)
    failed["arms"][0].update(status="failed", latency=None, reason="RuntimeError: boom")
    for i, doc in enumerate([pinned, split, failed]):
        history.record_run(doc, str(tmp_path / str(i)), db)

    status, out, err = cli(capsys, "history", "--history", db, "--arm", "event")
    assert (status, err) == (0, "")
    assert out == (
        "ARM event (threads, latency, blocked waiter, cross-thread): 3 runs, oldest first; times in µs\n"
        "  run  started (UTC)     lab                         interpreter      host       n  lost  p50  p99  conditions  status\n"
        "    1  2026-10-01 06:00  135-signal-vs-event-wakeup  CPython 3.13.5   testbox  200     0  110  207  A\n"
        "    2  2026-10-02 06:00  135-signal-vs-event-wakeup  CPython 3.13.5   testbox  200     0  110  207  B\n"
        "    3  2026-10-03 06:00  135-signal-vs-event-wakeup  CPython 3.13.5t  testbox    -     -    -    -  -           failed\n"
        '  conditions A: {"placement": "same-cpu"}\n'
        '  conditions B: {"placement": "split"}\n'
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
        history.record_run(read_summary(folder), folder, db)
    ft = variant(lab135_summary, started="2026-10-04T06:00:00Z", version="3.13.5", free_threaded=True)
    history.record_run(ft, str(tmp_path / "ft"), db)

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
    history.record_run(lab135_summary, str(tmp_path), db)
    assert cli(capsys, "history", "--history", db, "--arm", "evnt") == (
        2, "", "wakelab: error: no recorded run has arm 'evnt' (did you mean 'event'?); recorded arms: event, signal-install, sigusr1-self\n")


# ----------------------------------------------------------------------------------------------
# Schema versions and migration


def test_an_empty_version_0_database_is_migrated(tmp_path, lab135_summary) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(b"")  # what sqlite3.connect leaves behind before any table exists
    history.record_run(lab135_summary, str(tmp_path), str(db))
    assert [r.id for r in history.list_runs(str(db))] == [1]


NEXT = history.SCHEMA_VERSION + 1  # a schema version this wakelab does not have yet


def _add_v2_migration(monkeypatch, step) -> None:
    monkeypatch.setattr(history, "SCHEMA_VERSION", NEXT)
    monkeypatch.setattr(history, "MIGRATIONS", history.MIGRATIONS + [step])


def test_an_older_schema_is_migrated_in_place_keeping_its_runs(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    history.record_run(lab135_summary, write_bundle(tmp_path / "old", lab135_summary), db)  # a version-1 database

    def add_tag_column(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN tag TEXT")
        conn.execute("UPDATE runs SET tag = 'migrated'")

    _add_v2_migration(monkeypatch, add_tag_column)
    assert [r.id for r in history.list_runs(db)] == [1]  # opening migrates
    history.record_run(variant(lab135_summary, started="2026-10-05T06:00:00Z"), str(tmp_path / "new"), db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == NEXT
        assert conn.execute("SELECT id, tag FROM runs ORDER BY id").fetchall() == [(1, "migrated"), (2, None)]
        assert dict(conn.execute("SELECT key, value FROM meta"))["schema_version"] == str(NEXT)
    conn.close()


def test_a_failed_migration_leaves_the_older_database_intact(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    history.record_run(lab135_summary, str(tmp_path), db)
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
    history.record_run(lab135_summary, str(tmp_path), db)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 7")
    conn.close()
    before = read_bytes(db)
    message = "wakelab: error: history database %s was written by a newer wakelab (schema 7); upgrade wakelab or use --history\n" % db
    folder = write_bundle(tmp_path / "run", variant(lab135_summary, started="2026-10-05T06:00:00Z"))
    assert cli(capsys, "history", "--history", db) == (2, "", message)
    assert cli(capsys, "history", "add", "--history", db, folder) == (2, "", message)
    with pytest.raises(history.HistoryError, match="newer wakelab"):
        history.record_run(lab135_summary, folder, db)
    assert read_bytes(db) == before


# ----------------------------------------------------------------------------------------------
# Never lose earlier runs: corrupt, foreign, locked, unwritable


@pytest.mark.parametrize("content", [b"this is not a database\n" * 100, b"\x00" * 4096, b"SQLite format 3\x00" + b"\xff" * 200])
def test_a_corrupt_file_is_refused_and_never_touched(tmp_path, lab135_summary, capsys, content) -> None:
    db = tmp_path / "h.db"
    db.write_bytes(content)
    folder = write_bundle(tmp_path / "run", lab135_summary)

    with pytest.raises(history.HistoryError, match="it was left untouched") as info:
        history.record_run(lab135_summary, folder, str(db))
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
        history.record_run(variant(lab135_summary, started="2026-10-01T06:00:%02dZ" % i), str(tmp_path), str(db))
    damaged = bytearray(db.read_bytes())
    page_size = 4096
    assert len(damaged) > 6 * page_size
    damaged[3 * page_size: 3 * page_size + 64] = b"\xa5" * 64  # scribble over the header of page 4
    db.write_bytes(bytes(damaged))

    with pytest.raises(history.HistoryError, match="left untouched"):
        history.record_run(variant(lab135_summary, started="2026-11-01T06:00:00Z"), str(tmp_path), str(db))
    with pytest.raises(history.HistoryError, match="left untouched"):
        history.list_runs(str(db))
    assert db.read_bytes() == bytes(damaged)


def test_an_inconsistent_index_fails_the_integrity_check_and_is_never_touched(tmp_path, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    for day in (1, 2):
        history.record_run(variant(lab135_summary, started="2026-10-0%dT06:00:00Z" % day), str(tmp_path), db)
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
        history.record_run(variant(lab135_summary, started="2026-11-01T06:00:00Z"), str(tmp_path), db)
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
        history.record_run(lab135_summary, str(tmp_path), str(db))
    assert str(info.value) == (
        "%s is an SQLite database but not a wakelab history (it has tables runs); it was left untouched: use --history PATH" % db)
    assert db.read_bytes() == before


def test_a_locked_database_waits_then_says_so(tmp_path, lab135_summary) -> None:
    db = str(tmp_path / "h.db")
    history.record_run(lab135_summary, str(tmp_path / "a"), db)
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(history.HistoryError) as info:
            history.record_run(variant(lab135_summary, started="2026-10-05T06:00:00Z"), str(tmp_path / "b"), db, timeout_s=0.05)
        assert str(info.value).startswith("history database %s is locked by another process (waited 0.05 s" % db)
        with pytest.raises(history.HistoryError, match="is locked by another process"):
            history.list_runs(db, timeout_s=0.05)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert history.record_run(variant(lab135_summary, started="2026-10-05T06:00:00Z"), str(tmp_path / "b"), db).run_id == 2


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
        history.record_run(lab135_summary, folder, str(directory))


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
# It runs in the measuring process: stdlib only, Python 3.9 syntax


def test_history_module_is_stdlib_only_and_3_9_syntax() -> None:
    import ast

    path = history.__file__
    with open(path, encoding="utf-8") as fh:
        ast.parse(fh.read(), feature_version=(3, 9))
    code = (
        "import sys; before = set(sys.modules); import wakelab.history; "
        "print('\\n'.join(sorted(m for m in set(sys.modules) - before)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=SRC), timeout=60, check=True).stdout.split()
    third_party = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "wakelab"]
    assert third_party == []
    assert sorted(m for m in loaded if m.startswith("wakelab")) == ["wakelab", "wakelab.errors", "wakelab.history"]
