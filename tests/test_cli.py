"""CLI golden tests: exact stdout, stderr and exit codes, including bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import GOLDEN
from wakelab.cli import main

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def run_cli(*args: str, cwd=None):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run(
        [sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_show_prints_the_golden_summary(tmp_path, lab135_summary, capsys) -> None:
    (tmp_path / "summary.json").write_text(json.dumps(lab135_summary), encoding="utf-8")
    assert main(["show", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    with open(os.path.join(GOLDEN, "lab135_summary.txt"), encoding="utf-8") as fh:
        assert out == fh.read()
    assert err == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--n", "0"], "wakelab run: error: argument -n/--n: must be between 1 and 1,000,000, got 0 (see wakelab run --help)"),
        (["run", "--n", "-5"], "wakelab run: error: argument -n/--n: must be between 1 and 1,000,000, got -5 (see wakelab run --help)"),
        (["run", "--n", "abc"], "wakelab run: error: argument -n/--n: expected a whole number, got 'abc' (see wakelab run --help)"),
        (["run", "--n", "10000000000"], "wakelab run: error: argument -n/--n: must be between 1 and 1,000,000, got 10000000000 (see wakelab run --help)"),
        (["run", "--rounds", "0"], "wakelab run: error: argument --rounds: must be between 1 and 1,000, got 0 (see wakelab run --help)"),
        (["run", "--install-n", "1.5"], "wakelab run: error: argument --install-n: expected a whole number, got '1.5' (see wakelab run --help)"),
        (["run", "--timeout-s", "nan"], "wakelab run: error: argument --timeout-s: must be between 0.001 and 3600.0 seconds, got nan (see wakelab run --help)"),
        (["run", "--timeout-s", "0"], "wakelab run: error: argument --timeout-s: must be between 0.001 and 3600.0 seconds, got 0 (see wakelab run --help)"),
        (["run", "--settle-us", "-1"], "wakelab run: error: argument --settle-us: must be between 0 and 10,000,000, got -1 (see wakelab run --help)"),
        (["run", "--planted-delay-us", "600000", "--timeout-s", "0.5"], "wakelab: error: --planted-delay-us must be shorter than --timeout-s, or every wake would be lost"),
        (["run", "--lab", "nope"], "wakelab: error: unknown lab 'nope' (valid: "),
        (["run", "--arms", "nope"], "wakelab: error: unknown arm 'nope' (valid: event, "),
        (["run", "--arms", ","], "wakelab: error: --arms needs at least one arm name"),
        (["run", "--bogus"], "wakelab: error: unrecognized arguments: --bogus (see wakelab --help)"),
        (["frobnicate"], "wakelab: error: argument COMMAND: invalid choice: 'frobnicate'"),
        (["show", "/nonexistent/summary.json"], "wakelab: error: /nonexistent/summary.json: no such file (give an evidence folder or its summary.json)"),
        (["run", "--python", "/nonexistent/python"], "wakelab: error: --python /nonexistent/python: not an interpreter that runs here"),
        (["run", "--placement", "sideways"], "wakelab run: error: argument --placement: expected any, same, split, got 'sideways'"),
        (["run", "--placement", "same", "--cpus", "5000"], "wakelab run: error: argument --cpus: must be between 0 and 4,095, got 5000"),
        (["run", "--placement", "same", "--cpus", "4095"], "wakelab: error: CPU 4095 is not available to this process (allowed: "),
        (["run", "--cpus", "0"], "wakelab: error: --cpus needs --placement same or split"),
        (["run", "--cpu-threads", "-1"], "wakelab run: error: argument --cpu-threads: must be between 0 and 64, got -1"),
        (["run", "--cpu-procs", "1000"], "wakelab run: error: argument --cpu-procs: must be between 0 and 64, got 1000"),
        (["run", "--switch-interval", "0"], "wakelab run: error: argument --switch-interval: must be between 1e-06 and 1 seconds, got 0"),
        (["run", "--settle-us", "50,,100"], "wakelab run: error: argument --settle-us: expected a comma-separated list of microseconds, got '50,,100'"),
        (["run", "--settle-us", "50,50"], "wakelab run: error: argument --settle-us: a value is listed twice in '50,50'"),
        (["run", "--workers", "0"], "wakelab run: error: argument --workers: must be between 1 and 64, got 0"),
        (["run", "--in-process", "--workers", "2"], "wakelab: error: --workers and --in-process exclude each other"),
        (["run", "--mode", "sideways"], "wakelab run: error: argument --mode: invalid choice: 'sideways'"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(tmp_path, args, message) -> None:
    out_dir = tmp_path / "out"
    extra = ["-o", str(out_dir)] if args[0] == "run" else []
    result = run_cli(*args, *extra)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message)
    assert not out_dir.exists()  # nothing half-written


def test_unwritable_output_folder(tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = run_cli("run", "--n", "5", "-o", str(blocker / "sub"))
    assert result.returncode == 2
    assert result.stderr == "wakelab: error: cannot write evidence to %s: Not a directory (choose another folder with --output)\n" % (blocker / "sub")
    assert blocker.read_text() == "x"


@pytest.mark.parametrize("content", ["{", '{"schema": "wakelab.summary", "schema_version": 1}', "null"])
def test_show_corrupt_summary(tmp_path, content) -> None:
    (tmp_path / "summary.json").write_text(content, encoding="utf-8")
    result = run_cli("show", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("wakelab: error: %s" % (tmp_path / "summary.json"))
    assert "Traceback" not in result.stderr


def test_run_writes_bundle_and_prints_summary(tmp_path) -> None:
    result = run_cli("run", "--n", "10", "--warmup", "1", "--install-n", "200", "--rounds", "2", "--repeat", "1", "-o", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Lab 135: signal vs threading.Event wakeup\n")
    assert "VERDICT (from this run's figures)" in result.stdout
    assert result.stderr.splitlines()[0] == "wakelab: [1/3] event ..."
    assert result.stderr.splitlines()[-1] == "wakelab: evidence in %s (complete: true)" % (tmp_path / "ev")
    assert sorted(os.listdir(tmp_path / "ev")) == ["samples", "summary.json", "summary.txt"]
    assert (tmp_path / "ev" / "summary.txt").read_text(encoding="utf-8") == result.stdout


def test_run_json_to_stdout(tmp_path) -> None:
    result = run_cli("run", "--arms", "event", "--n", "5", "--json", "-q", "-o", str(tmp_path / "ev"))
    assert result.returncode == 0
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["schema"] == "wakelab.summary" and [a["name"] for a in doc["arms"]] == ["event"]
    assert doc["arms"][0]["latency"]["n"] == 5


def test_default_runs_never_overwrite_each_other(tmp_path) -> None:
    for _ in range(2):
        result = run_cli("run", "--arms", "event", "--n", "3", "-q", cwd=str(tmp_path))
        assert result.returncode == 0, result.stderr
    folders = sorted(os.listdir(tmp_path / "wakelab-runs"))
    assert len(folders) == 2
    assert all(f.startswith("custom-") for f in folders)  # --arms event is not Lab 135


def test_a_custom_selection_is_its_own_lab(tmp_path) -> None:
    db = str(tmp_path / "history.sqlite3")
    result = run_cli("run", "--arms", "event,sigusr1-self,queue", "--n", "5", "--workers", "1", "-q", "--history", db, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    (folder,) = os.listdir(tmp_path / "wakelab-runs")
    assert folder.startswith("custom-")
    doc = json.loads((tmp_path / "wakelab-runs" / folder / "summary.json").read_text(encoding="utf-8"))
    lab = doc["lab"]
    assert (lab["id"], lab["title"]) == ("custom", "Custom selection: event, sigusr1-self, queue")
    assert lab["question"] == "How long does each of these arms take on this machine: event, sigusr1-self, queue?"
    assert lab["comparisons"] == [{"a": "event", "b": "sigusr1-self"}]  # Lab 135's, both arms chosen
    assert lab["reproduce_script"] is None
    text = result.stdout
    assert text.startswith("Custom selection: event, sigusr1-self, queue\n")
    assert "Lab 135" not in text and "one process" not in text
    assert ("Each arm runs in turn 5 times (one pass over all the arms after another), in 5 fresh worker processes of "
            "its own spread over them, with the same parameters.") in " ".join(text.split())
    # History records the custom lab, and the REPRODUCE line makes the same lab again.
    listed = json.loads(run_cli("history", "--json", "--history", db).stdout)
    assert [r["lab_id"] for r in listed["runs"]] == ["custom"]
    reproduce = text.split("REPRODUCE\n", 1)[1].split()
    assert reproduce[:5] == ["wakelab", "run", "--lab", "custom", "--arms"]
    again = run_cli(*reproduce[1:], "-q", "--no-history", "-o", str(tmp_path / "again"))
    assert again.returncode == 0, again.stderr
    lab_again = json.loads((tmp_path / "again" / "summary.json").read_text(encoding="utf-8"))["lab"]
    assert {k: lab_again[k] for k in ("id", "title", "question", "comparisons", "limits")} == {
        k: lab[k] for k in ("id", "title", "question", "comparisons", "limits")}


@pytest.mark.parametrize("execution, ran", [
    (["--workers", "2", "--repeat", "1"], "in 2 fresh worker processes, its wakes split between them and pooled"),
    (["--workers", "2"], "in 5 repetitions (one pass over all the arms after another), in 5 fresh worker processes "
                         "spread over them, its wakes split between them and pooled"),
    (["--in-process"], "in the runner's own process, 5 times"),
    (["--in-process", "--repeat", "1"], "in the runner's own process"),
])
def test_lab_135_limits_say_how_it_ran(tmp_path, execution, ran) -> None:
    result = run_cli("run", "--arms", "sigusr1-self,event,signal-install", "--n", "5", "--install-n", "100", "--rounds", "1",
                     *execution, "-q", "--no-history", "-o", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Lab 135: signal vs threading.Event wakeup\n")  # its own arms, in another order
    limits = result.stdout.split("LIMITS\n", 1)[1].split("\n\n", 1)[0]
    assert " ".join(limits.split()) == (
        "- One machine and one interpreter per run; each arm ran %s. - Not a multi-process signal storm, and no "
        "real-time guarantee. - Figures taken in a VM include the hypervisor's idle and wake-up behaviour." % ran)


def test_named_folder_is_replaced_on_request(tmp_path) -> None:
    for n in ("3", "4"):
        assert run_cli("run", "--arms", "event", "--n", n, "-q", "-o", str(tmp_path)).returncode == 0
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["arms"][0]["latency"]["n"] == 4


def test_list_shows_every_arm_with_t0_t1(capsys) -> None:
    from wakelab.core.registry import all_arms

    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("ARMS\n  arm ")
    for arm in all_arms():
        assert "\n  %s " % arm.name in out
        assert "t0: %s" % arm.t0[:40] in out.replace("\n      ", " ")
    assert "135-signal-vs-event-wakeup (also: 135, lab135)" in out


def test_list_json(capsys) -> None:
    assert main(["list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    event = next(a for a in data["arms"] if a["name"] == "event")
    assert event["available"] is True and event["waiter"] == "blocked"


def test_broken_pipe_is_quiet(tmp_path, lab135_summary) -> None:
    (tmp_path / "summary.json").write_text(json.dumps(lab135_summary), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=SRC)
    cmd = "%s -m wakelab show %s | head -1" % (sys.executable, tmp_path)
    result = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout == "Lab 135: signal vs threading.Event wakeup\n"
    assert result.stderr == ""


def test_version_and_help() -> None:
    assert run_cli("--version").stdout == "wakelab 0.2.0\n"
    help_text = run_cli("run", "--help").stdout
    for option in ("--lab", "--arms", "--n", "--warmup", "--settle-us", "--timeout-s", "--install-n", "--rounds", "--planted-delay-us", "--output", "--json", "--note"):
        assert option in help_text


def test_ctrl_c_leaves_valid_incomplete_evidence_and_exit_130(tmp_path) -> None:
    import signal
    import time

    from wakelab.evidence.load import load_summary

    out = tmp_path / "ev"
    env = dict(os.environ, PYTHONPATH=SRC)
    proc = subprocess.Popen(
        [sys.executable, "-m", "wakelab", "run", "--arms", "event,sigusr1-self", "--n", "100000", "-q", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / "summary.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # well inside the first arm
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert stderr == "wakelab: interrupted; the evidence so far (complete: false) is in %s\n" % out
    summary = load_summary(str(out))
    assert summary["complete"] is False and summary["interrupted"] is True
    assert [a["status"] for a in summary["arms"]] == ["interrupted", "pending"]
