"""The output folder: locked while a run writes it, cleared of an older bundle, kept valid when
the disk fills mid-run; exports all or none; one history row per run (issue 14, items 2 and 4)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, Iterator, List

import pytest

from wakelab import history
from wakelab.cli import main
from wakelab.errors import OutputError
from wakelab.evidence import bundle
from wakelab.evidence.load import load_summary
from wakelab.evidence.model import Bundle
from wakelab.harness import runner
from wakelab.harness.runner import RunPlan, run_plan
from wakelab.history import schema
from wakelab.history.rows import ArmRow, RunRow
from wakelab.labs import LAB_135

PYTHON = sys.executable


def wakelab(*args: str, env: Dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "wakelab", *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def env(tmp_path) -> Dict[str, str]:
    e = dict(os.environ)
    e["WAKELAB_HISTORY"] = str(tmp_path / "history.sqlite3")
    e["MPLCONFIGDIR"] = str(tmp_path / "mpl")
    return e


def listing(folder: str) -> Dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, folder)] = fh.read()
    return out


def assert_consistent(folder: str) -> Dict[str, Any]:
    """The bundle loads, and every measured latency arm's n equals its samples file's length."""
    summary = load_summary(folder)
    for entry in summary["arms"]:
        if entry["status"] == "ok" and entry["kind"] == "latency":
            with open(os.path.join(folder, entry["samples_file"]), encoding="utf-8") as fh:
                samples = json.load(fh)["samples_ns"]
            assert entry["latency"]["n"] == len(samples), entry["name"]
    return summary


def history_rows(db: str) -> List[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT run_uuid, folder, complete FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()


# ----------------------------------------------------------------------------------------------
# Two runs into one folder


def test_a_run_into_a_locked_folder_is_refused_and_writes_nothing(tmp_path, env) -> None:
    out = str(tmp_path / "out")
    first = wakelab("run", "--in-process", "--arms", "event", "-n", "30", "-q", "-o", out, env=env)
    assert first.returncode == 0, first.stderr
    before = listing(out)
    with bundle.FolderLock(out):  # another wakelab writing there
        second = wakelab("run", "--in-process", "--arms", "condition", "-n", "30", "-o", out, env=env)
        assert listing(out) == {**before, bundle.LOCK_FILE: b""}
    assert second.returncode == 2
    assert second.stdout == ""
    assert second.stderr == (
        "wakelab: error: cannot write evidence to %s: another wakelab run is writing there "
        "(wait for it to end, or choose another folder with --output)\n" % out
    )
    assert listing(out) == before  # the old bundle untouched, the lock file gone
    assert len(history_rows(env["WAKELAB_HISTORY"])) == 1


def test_two_concurrent_runs_into_one_folder_one_is_refused(tmp_path, env) -> None:
    out = str(tmp_path / "same")
    # The first run is long (however slowly the second starts, the first still holds the folder),
    # and is ended by Ctrl-C once the second has been refused.
    args = ["run", "--arms", "event", "--workers", "1", "-q", "-o", out]
    a = subprocess.Popen([PYTHON, "-m", "wakelab", *args, "-n", "100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(out, bundle.LOCK_FILE)) and a.poll() is None:
            assert time.monotonic() < deadline, "the first run never locked its folder"
            time.sleep(0.005)
        b = wakelab(*args, "-n", "300", env=env, timeout=120)
        a.send_signal(signal.SIGINT)
        _, a_err = a.communicate(timeout=120)
    finally:
        if a.poll() is None:
            a.kill()
            a.wait()
    assert a.returncode == 130, a_err
    assert b.returncode == 2, b.stderr
    assert b.stderr.count("\n") == 1 and "another wakelab run is writing there" in b.stderr
    assert "Traceback" not in b.stderr + a_err
    summary = assert_consistent(out)
    assert summary["interrupted"] is True and summary["parameters"]["n"] == 100000
    rows = history_rows(env["WAKELAB_HISTORY"])
    assert [r[0] for r in rows] == [summary["run_id"]]  # the winner recorded, the refused run not
    assert not os.path.exists(os.path.join(out, bundle.LOCK_FILE))


def test_two_runs_started_together_one_wins_whole(tmp_path, env) -> None:
    out = str(tmp_path / "race")
    args = [PYTHON, "-m", "wakelab", "run", "--arms", "event", "-n", "200", "--workers", "1", "-q", "-o", out]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    results = []
    try:
        for p in procs:
            _, e = p.communicate(timeout=180)
            results.append((p.returncode, e))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all("Traceback" not in e for _, e in results)
    codes = sorted(code for code, _ in results)
    # Either one was refused, or the second started after the first had finished: never mixed.
    assert codes in ([0, 2], [0, 0]), results
    summary = assert_consistent(out)
    rows = history_rows(env["WAKELAB_HISTORY"])
    assert len(rows) == codes.count(0)
    assert rows[-1][0] == summary["run_id"]  # the bundle is the last recorded run's, whole


def test_the_lock_is_released_and_its_file_removed(tmp_path, tiny_params) -> None:
    folder = str(tmp_path / "b")
    os.makedirs(folder)
    run_plan(RunPlan(lab=LAB_135, arm_names=["event"], params=tiny_params, folder=folder))
    assert bundle.LOCK_FILE not in os.listdir(folder)
    with bundle.FolderLock(folder):
        with pytest.raises(OutputError, match="another wakelab run is writing there"):
            run_plan(RunPlan(lab=LAB_135, arm_names=["event"], params=tiny_params, folder=folder))
        with pytest.raises(bundle.FolderBusy):
            bundle.FolderLock(folder).acquire()
    with bundle.FolderLock(folder):  # free again
        pass


# ----------------------------------------------------------------------------------------------
# Replacing a bundle


def test_replacing_a_bundle_removes_the_old_ones_evidence_only(tmp_path, env) -> None:
    out = tmp_path / "out"
    first = wakelab("run", "--in-process", "--arms", "event,condition,pipe", "-n", "20", "-q", "-o", str(out), env=env)
    assert first.returncode == 0, first.stderr
    assert sorted(os.listdir(out / "samples")) == ["condition.json", "event.json", "pipe.json"]
    (out / "notes.md").write_text("mine")
    (out / "samples" / "README").write_text("mine too")
    (out / ".summary.json.abc123.tmp").write_text("left by a killed run")
    # The report made of the old evidence, where `wakelab report RUN` writes it by default.
    assert wakelab("report", str(out), "-q", env=env).returncode == 0
    assert (out / "report.html").is_file()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.json").write_text("{}")
    (out / "samples" / "link.json").symlink_to(outside / "keep.json")

    second = wakelab("run", "--in-process", "--arms", "event", "-n", "20", "-q", "-o", str(out), env=env)

    assert second.returncode == 0, second.stderr
    assert sorted(os.listdir(out / "samples")) == ["README", "event.json"]
    assert sorted(os.listdir(out)) == ["notes.md", "samples", "summary.json", "summary.txt"]
    assert (outside / "keep.json").read_text() == "{}"  # a link is removed, never followed
    summary = assert_consistent(str(out))
    assert [a["name"] for a in summary["arms"]] == ["event"]


def test_a_samples_link_out_of_the_bundle_is_removed_not_entered(tmp_path) -> None:
    folder = tmp_path / "b"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "event.json").write_text("not yours")
    (folder / "samples").symlink_to(elsewhere)
    (folder / "cells" / "x" / "samples").mkdir(parents=True)
    (folder / "cells" / "x" / "summary.json").write_text("{}")
    (folder / "cells" / "x" / "samples" / "event.json").write_text("{}")
    (folder / "cells" / "y").mkdir()
    (folder / "cells" / "y" / "data.csv").write_text("mine")

    removed = bundle.clear_bundle(str(folder))

    assert (elsewhere / "event.json").read_text() == "not yours"
    assert sorted(os.path.relpath(p, folder) for p in removed) == [
        "cells/x/samples/event.json", "cells/x/summary.json", "samples"]
    assert sorted(os.listdir(folder)) == ["cells"]
    assert os.listdir(folder / "cells") == ["y"]


def test_an_interrupted_replacement_shows_no_old_samples(tmp_path, tiny_params, monkeypatch) -> None:
    folder = str(tmp_path / "b")
    os.makedirs(folder)
    run_plan(RunPlan(lab=LAB_135, arm_names=["event", "condition"], params=tiny_params, folder=folder, execution=runner.Execution(in_process=True)))

    real = runner._run_arm

    def ctrl_c_on_condition(plan, arm, *rest):
        if arm.name == "condition":
            raise KeyboardInterrupt
        return real(plan, arm, *rest)

    monkeypatch.setattr(runner, "_run_arm", ctrl_c_on_condition)
    with pytest.raises(runner.RunInterrupted):
        run_plan(RunPlan(lab=LAB_135, arm_names=["event", "condition"], params=tiny_params, folder=folder, execution=runner.Execution(in_process=True)))
    assert os.listdir(os.path.join(folder, "samples")) == ["event.json"]  # the old condition.json is gone
    assert_consistent(folder)


# ----------------------------------------------------------------------------------------------
# Unique run ids in the history


def test_quick_runs_into_one_folder_each_get_a_history_row(tmp_path, env, capsys, monkeypatch) -> None:
    monkeypatch.setenv("WAKELAB_HISTORY", env["WAKELAB_HISTORY"])
    out = str(tmp_path / "out")
    for _ in range(6):
        assert main(["run", "--in-process", "--arms", "event", "-n", "5", "--warmup", "0", "-q", "-o", out]) == 0
    capsys.readouterr()
    rows = history_rows(env["WAKELAB_HISTORY"])
    assert len(rows) == 6
    assert len({r[0] for r in rows}) == 6 and all(len(r[0]) == 32 for r in rows)
    assert {r[1] for r in rows} == {os.path.realpath(out)}
    assert rows[-1][0] == load_summary(out)["run_id"]
    assert [r.run_uuid for r in history.list_runs(env["WAKELAB_HISTORY"])][0] == rows[-1][0]


def test_a_version_1_history_is_migrated_keeping_rows_and_arms(tmp_path, lab135_summary, monkeypatch) -> None:
    db = str(tmp_path / "h.db")
    old = dict(lab135_summary)
    old.pop("run_id", None)  # bundles from before run ids
    conn = sqlite3.connect(db, isolation_level=None)  # a history as wakelab 0.1 wrote it (schema 1)
    conn.execute("BEGIN")
    schema.MIGRATIONS[0](conn)
    conn.execute("PRAGMA user_version = 1")
    columns = [c[1] for c in conn.execute("PRAGMA table_info(runs)") if c[1] != "id"]
    for started in (old["started_utc"], "2026-10-05T06:00:00Z"):
        doc = dict(old, started_utc=started)
        evidence = Bundle(source="", folder=os.path.realpath(str(tmp_path / "a")), summary=doc)
        row = RunRow.from_bundle(evidence)
        cur = conn.execute("INSERT INTO runs (%s) VALUES (%s)" % (", ".join(columns), ", ".join("?" * len(columns))),
                           [getattr(row, c) for c in columns])
        conn.executemany("INSERT INTO arm_results VALUES (%s)" % ", ".join("?" * 17),
                         [(cur.lastrowid,) + dataclasses.astuple(arm) for arm in ArmRow.of_bundle(evidence)])
    conn.execute("COMMIT")
    arms_before = conn.execute("SELECT * FROM arm_results ORDER BY run_id, position").fetchall()
    conn.close()
    assert len(arms_before) == 2 * len(old["arms"])

    runs = history.list_runs(db)  # opening migrates

    assert [(r.id, r.run_uuid) for r in runs] == [(2, None), (1, None)]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == history.SCHEMA_VERSION >= 2
        assert conn.execute("SELECT * FROM arm_results ORDER BY run_id, position").fetchall() == arms_before
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()
    # Old rows keep their old key; new runs with the same folder and second are apart by run id.
    folder = str(tmp_path / "a")
    assert history.record_run(Bundle(folder, folder, old), db).action == "unchanged"
    same_second = [dict(lab135_summary, run_id="%032x" % i) for i in (1, 2)]
    assert [history.record_run(Bundle(folder, folder, s), db).action for s in same_second] == ["added", "added"]
    assert history.record_run(Bundle(folder, folder, same_second[0]), db).action == "unchanged"
    assert len(history.list_runs(db)) == 4


# ----------------------------------------------------------------------------------------------
# A write failure mid-run (injected)


def _plan(folder: str, params, arms=("event", "condition", "pipe")) -> RunPlan:
    return RunPlan(lab=LAB_135, arm_names=list(arms), params=params, folder=folder, execution=runner.Execution(in_process=True))


def test_samples_that_cannot_be_written_end_the_run_with_a_valid_bundle(tmp_path, tiny_params, monkeypatch) -> None:
    folder = str(tmp_path / "b")
    os.makedirs(folder)
    real = bundle.write_samples

    def full_on_condition(folder_, arm_name, doc):
        if arm_name == "condition":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder_, arm_name, doc)

    monkeypatch.setattr(bundle, "write_samples", full_on_condition)
    events: List[tuple] = []
    summary = run_plan(_plan(folder, tiny_params), lambda e, i: events.append((e, i)))

    assert [a["status"] for a in summary["arms"]] == ["ok", "failed", "pending"]
    assert summary["arms"][1]["reason"] == "cannot write evidence to %s: No space left on device" % folder
    assert summary["complete"] is False and summary["finished_utc"]
    assert ("arm-failed", {"arm": "condition", "reason": summary["arms"][1]["reason"]}) in events
    on_disk = assert_consistent(folder)
    assert [a["status"] for a in on_disk["arms"]] == ["ok", "failed", "pending"]


def test_a_summary_that_cannot_be_written_blames_the_next_arm(tmp_path, tiny_params, monkeypatch) -> None:
    folder = str(tmp_path / "b")
    os.makedirs(folder)
    real = bundle.write_bundle
    calls = []

    def eio_after_first_arm(folder_, summary, text):
        calls.append(1)
        if len(calls) >= 3:  # start, after event, then after condition: I/O errors from here on
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(folder_, summary, text)

    monkeypatch.setattr(bundle, "write_bundle", eio_after_first_arm)
    summary = run_plan(_plan(folder, tiny_params))

    assert [a["status"] for a in summary["arms"]] == ["ok", "ok", "failed"]
    assert summary["arms"][2]["reason"] == "not run: cannot write evidence to %s: Input/output error" % folder
    on_disk = assert_consistent(folder)  # the last summary written whole: after the first arm
    assert [a["status"] for a in on_disk["arms"]] == ["ok", "pending", "pending"]
    assert on_disk["complete"] is False
    assert sorted(os.listdir(folder)) == ["samples", "summary.json"]  # no temp file left


def test_a_final_summary_that_cannot_be_written_fails_the_run(tmp_path, env, capsys, monkeypatch) -> None:
    # Every arm measured, then the disk fills: no arm failed, but the run did (exit 1, one line).
    monkeypatch.setenv("WAKELAB_HISTORY", env["WAKELAB_HISTORY"])
    out = str(tmp_path / "out")
    real = bundle.write_bundle

    def full_at_the_end(folder_, summary, text):
        if summary.get("finished_utc"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder_, summary, text)

    monkeypatch.setattr(bundle, "write_bundle", full_at_the_end)
    assert main(["run", "--in-process", "--arms", "event", "-n", "5", "--warmup", "0", "-q", "-o", out]) == 1
    err = capsys.readouterr().err
    assert err == "wakelab: cannot write evidence to %s: No space left on device; the last whole summary.json stands (complete: false)\n" % out
    on_disk = assert_consistent(out)
    assert on_disk["complete"] is False and [a["status"] for a in on_disk["arms"]] == ["ok"]


def test_a_folder_unwritable_from_the_start_is_an_output_error(tmp_path, tiny_params, monkeypatch) -> None:
    folder = str(tmp_path / "b")
    os.makedirs(folder)

    def denied(*_):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(bundle, "write_bundle", denied)
    with pytest.raises(OutputError, match=r"^cannot write evidence to .*: Permission denied; nothing was measured"):
        run_plan(_plan(folder, tiny_params))
    assert os.listdir(folder) == []


def test_a_failed_atomic_write_leaves_no_temp_file(tmp_path, monkeypatch) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")

    def full(_fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        bundle.atomic_write_text(str(target), "new")
    assert os.listdir(tmp_path) == ["summary.json"] and target.read_text() == "old"
    with pytest.raises(OSError):
        bundle.atomic_write_files({str(tmp_path / "a.json"): "a", str(target): "new"})
    assert os.listdir(tmp_path) == ["summary.json"] and target.read_text() == "old"


def test_an_export_that_fails_midway_writes_no_file(tmp_path, lab135_summary, monkeypatch) -> None:
    from wakelab.export import Export, ExportedFile, get_exporter, write_export

    exporter = get_exporter("pyperf")
    export = Export(files=(ExportedFile(name="a.json", text="a"), ExportedFile(name="b.json", text="b")))
    dest = tmp_path / "out"
    real = bundle.write_temp_text

    def full_on_b(path, text):
        if path.endswith("b.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, text)

    monkeypatch.setattr(bundle, "write_temp_text", full_on_b)
    with pytest.raises(OutputError, match="No space left on device"):
        write_export(export, exporter, str(dest))
    assert not dest.exists()  # made by this export, removed again
    dest.mkdir()
    (dest / "a.json").write_text("old a")
    with pytest.raises(OutputError):
        write_export(export, exporter, str(dest))
    assert listing(str(dest)) == {"a.json": b"old a"}


# ----------------------------------------------------------------------------------------------
# A real full disk: a small tmpfs (root only)


@contextlib.contextmanager
def small_tmpfs(size: str = "200k") -> Iterator[str]:
    mount_point = tempfile.mkdtemp(prefix="wakelab-tmpfs-")
    try:
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", mount_point],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip("cannot mount a tmpfs here: %s" % (done.stderr.strip() or done.returncode))
        try:
            yield mount_point
        finally:
            subprocess.run(["umount", "-l", mount_point], capture_output=True)
    finally:
        try:
            os.rmdir(mount_point)
        except OSError:
            pass


def fill(folder: str, leave: int = 0) -> None:
    """Fill the file system of ``folder`` up, leaving about ``leave`` bytes (0: none at all)."""
    st = os.statvfs(folder)
    room = st.f_bavail * st.f_frsize - leave
    fd = os.open(os.path.join(folder, "filler-%d" % time.monotonic_ns()), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        chunk = b"\0" * 4096
        while room > 0 or leave == 0:
            try:
                written = os.write(fd, chunk[: max(1, min(len(chunk), room))] if leave else chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                return
            room -= written
    finally:
        os.close(fd)


def test_a_disk_that_fills_mid_run_ends_it_cleanly(tmp_path, env) -> None:
    with small_tmpfs("400k") as mnt:
        out = os.path.join(mnt, "run")
        args = [PYTHON, "-m", "wakelab", "run", "--arms", "event,condition,pipe,eventfd", "-n", "400", "--workers", "1", "--repeat", "1", "-o", out]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        err_lines: List[str] = []
        try:
            assert proc.stderr is not None
            for line in proc.stderr:
                err_lines.append(line)
                if "[2/4]" in line:  # the first arm is written: the disk fills now
                    fill(mnt)
                    break
            rest_out, rest_err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stderr = "".join(err_lines) + rest_err
        assert "Traceback" not in stderr
        assert proc.returncode == 1, stderr
        assert ("FAILED: cannot write evidence to %s: No space left on device" % out) in stderr
        summary = assert_consistent(out)
        assert summary["arms"][0]["status"] == "ok"
        assert summary["complete"] is False
        assert not [n for n in os.listdir(out) if n.endswith(".tmp")]
        assert not [n for n in os.listdir(os.path.join(out, "samples")) if n.endswith(".tmp")]
        [run] = history.list_runs(env["WAKELAB_HISTORY"])
        assert run.complete is False and run.run_uuid == summary["run_id"] and run.arms_ok >= 1
        statuses = [p.figures.status for p in history.arm_trend("event", env["WAKELAB_HISTORY"])]
        assert statuses == ["ok"]


def test_a_full_disk_before_any_arm_is_an_output_error(tmp_path, env) -> None:
    with small_tmpfs() as mnt:
        out = os.path.join(mnt, "run")
        os.mkdir(out)
        fill(mnt)
        done = wakelab("run", "--in-process", "--arms", "event", "-n", "20", "-o", out, env=env)
        assert done.returncode == 2, done.stderr
        assert done.stderr.endswith(
            "wakelab: error: cannot write evidence to %s: No space left on device; nothing was measured "
            "(free space or choose another folder with --output)\n" % out)
        assert "Traceback" not in done.stderr
        assert os.listdir(out) == []


def test_a_pyperf_export_onto_a_full_disk_leaves_no_file(tmp_path, env) -> None:
    pytest.importorskip("pyperf")
    src = str(tmp_path / "bundle")
    made = wakelab("run", "--in-process", "--arms", "event,condition,pipe", "-n", "200", "-q", "-o", src, env=env)
    assert made.returncode == 0, made.stderr
    probe = str(tmp_path / "probe")
    assert wakelab("export", src, "-f", "pyperf", "-o", probe, env=env).returncode == 0
    sizes = sorted(os.path.getsize(os.path.join(probe, n)) for n in os.listdir(probe))
    assert len(sizes) == 1  # one pyperf suite holds the three arms
    for leave in (0, sizes[0] // 2):  # no room at all; room for half the suite
        with small_tmpfs() as mnt:
            fill(mnt, leave)
            before = sorted(os.listdir(mnt))
            for dest in (os.path.join(mnt, "new"), mnt):
                done = wakelab("export", src, "-f", "pyperf", "-o", dest, env=env)
                assert done.returncode == 2, (leave, done.stderr)
                assert "No space left on device" in done.stderr and "Traceback" not in done.stderr
                assert sorted(os.listdir(mnt)) == before, leave


# ----------------------------------------------------------------------------------------------
# Grids


def _grid_base(folder: str, params) -> RunPlan:
    return RunPlan(lab=LAB_135, arm_names=["event", "condition"], params=params, folder=folder,
                   execution=runner.Execution(in_process=True))


def test_a_grid_locks_and_clears_its_folder(tmp_path, tiny_params) -> None:
    from wakelab.harness import grid

    folder = str(tmp_path / "g")
    os.makedirs(folder)
    run_plan(_plan(folder, tiny_params, arms=("event", "pipe")))  # an older single bundle here
    cells = grid.expand([None], [None], [("any", None, None)], [100, 200], [0])
    with bundle.FolderLock(folder):
        before = listing(folder)
        with pytest.raises(OutputError, match="another wakelab run is writing there"):
            grid.run_grid(_grid_base(folder, tiny_params), cells)
        assert listing(folder) == before
    doc = grid.run_grid(_grid_base(folder, tiny_params), cells)
    assert doc["complete"] is True
    assert sorted(os.listdir(folder)) == ["cells", "matrix.json"]  # the old summary and samples gone
    for cell in doc["cells"]:
        assert_consistent(os.path.join(folder, cell["folder"]))


def test_a_grid_whose_disk_fills_stops_after_that_cell(tmp_path, tiny_params, monkeypatch) -> None:
    from wakelab.harness import grid

    folder = str(tmp_path / "g")
    os.makedirs(folder)
    cells = grid.expand([None], [None], [("any", None, None)], [100, 200, 300], [0])
    real = bundle.write_samples

    def full_in_second_cell(folder_, arm_name, doc):
        if folder_.endswith("settle200us") and arm_name == "condition":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder_, arm_name, doc)

    monkeypatch.setattr(bundle, "write_samples", full_in_second_cell)
    doc = grid.run_grid(_grid_base(folder, tiny_params), cells)

    assert [c["status"] for c in doc["cells"]] == ["done", "done", "pending"]
    assert [c["complete"] for c in doc["cells"]] == [True, False, False]
    assert [r["status"] for r in doc["arms"][1]["rows"]] == ["ok", "failed", "pending"]
    with open(os.path.join(folder, "matrix.json"), encoding="utf-8") as fh:
        assert json.load(fh) == doc
    second = assert_consistent(os.path.join(folder, doc["cells"][1]["folder"]))
    assert [a["status"] for a in second["arms"]] == ["ok", "failed"]


def test_when_the_final_write_fails_summary_txt_gives_way_to_summary_json(tmp_path, tiny_params, monkeypatch) -> None:
    folder = str(tmp_path / "b")
    os.makedirs(folder)
    real = bundle.write_bundle
    calls = []

    def no_room_for_the_text_copy(folder_, summary, text):
        calls.append(text is not None)
        if text is not None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder_, summary, text)

    monkeypatch.setattr(bundle, "write_bundle", no_room_for_the_text_copy)
    plan = dataclasses.replace(_plan(folder, tiny_params), render_text=lambda s: "people's copy\n")
    summary = run_plan(plan)

    # summary.txt is laid out as the run ends (after each arm only summary.json is written), and
    # that write is the one that fails.
    first = calls.index(True)
    assert first > len(summary["arms"]) and not any(calls[:first]), calls
    on_disk = assert_consistent(folder)
    assert [a["status"] for a in on_disk["arms"]] == ["ok", "ok", "ok"]
    assert on_disk == json.loads(json.dumps(summary)) and on_disk["finished_utc"] and on_disk["complete"] is False
    assert sorted(os.listdir(folder)) == ["samples", "summary.json"]  # no summary.txt contradicting it
