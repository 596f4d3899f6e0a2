"""Did-you-mean: a mistyped arm, lab, placement or long option names what it looks like.

Through the CLI: exact stderr, exit status 2, nothing written.  argparse itself suggests nothing
for these on 3.9-3.13 (3.14's ``suggest_on_error`` covers choices and command names only).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from wakelab.core.registry import UnknownArmError, arm_names, closest_match, did_you_mean, get_arm
from wakelab.errors import UsageError
from wakelab.labs import get_lab

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
LABS = "135-signal-vs-event-wakeup, matched, catalogue, processes, handoff, free-threading, storms, realtime, custom"


def run_cli(*args: str, cwd=None):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def arms_listed() -> str:
    return ", ".join(arm_names())


@pytest.mark.parametrize(
    "args, line",
    [
        (["run", "--arms", "evnt"], "wakelab: error: unknown arm 'evnt' (did you mean 'event'?); valid: {arms}"),
        (["run", "--arms", "event,Queue"], "wakelab: error: unknown arm 'Queue' (did you mean 'queue'?); valid: {arms}"),
        (["run", "--arms", "nope"], "wakelab: error: unknown arm 'nope' (valid: {arms})"),
        (["run", "--lab", "catalog"], "wakelab: error: unknown lab 'catalog' (did you mean 'catalogue'?); valid: " + LABS),
        (["run", "--lab", "153"], "wakelab: error: unknown lab '153' (did you mean '135'?); valid: " + LABS),
        (["run", "--lab", "nope"], "wakelab: error: unknown lab 'nope' (valid: %s)" % LABS),
        (["run", "--lab", "custom"], "wakelab: error: --lab custom needs --arms A,B,... (the arms to run)"),
        (["run", "--arsm", "event"],
         "wakelab run: error: unrecognized arguments: --arsm event (did you mean '--arms'?) (see wakelab run --help)"),
        (["run", "--jsn"], "wakelab run: error: unrecognized arguments: --jsn (did you mean '--json'?) (see wakelab run --help)"),
        (["run", "--notes=x"], "wakelab run: error: unrecognized arguments: --notes=x (did you mean '--note'?) (see wakelab run --help)"),
        # Nothing close: argparse's own message, unchanged.
        (["run", "--bogus"], "wakelab: error: unrecognized arguments: --bogus (see wakelab --help)"),
        (["run", "--placement", "splt"],
         "wakelab run: error: argument --placement: expected any, same, split, got 'splt' (did you mean 'split'?) "
         "(see wakelab run --help)"),
    ],
)
def test_cli_suggests_the_name_meant(tmp_path, args, line) -> None:
    out_dir = tmp_path / "out"
    result = run_cli(*args, "-o", str(out_dir), "--no-history")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == line.format(arms=arms_listed()) + "\n"
    assert not out_dir.exists()


def test_an_abbreviated_option_still_works(tmp_path) -> None:
    # argparse accepts an unambiguous prefix (--arm for --arms); the suggestions must not refuse it.
    result = run_cli("run", "--arm", "event", "--n", "3", "--workers", "1", "--json", "-q", "--no-history", "-o", str(tmp_path / "ev"))
    assert result.returncode == 0, result.stderr
    assert [a["name"] for a in json.loads(result.stdout)["arms"]] == ["event"]


def test_closest_match() -> None:
    assert closest_match("evnt", arm_names()) == "event"
    assert closest_match("EVENT", arm_names()) == "event"
    assert closest_match("pipee", arm_names()) == "pipe"
    assert closest_match("zzzz", arm_names()) is None
    assert closest_match("--bogus", ["--rounds", "--cpus"], ignore_prefix="--") is None
    assert closest_match("--arsm", ["--arms", "--warmup"], ignore_prefix="--") == "--arms"
    assert did_you_mean("evnt", ["event"]) == "did you mean 'event'?"
    assert did_you_mean("nothing-like-it", ["event"]) == ""


def test_get_arm_and_get_lab_suggest() -> None:
    with pytest.raises(UnknownArmError, match=r"^unknown arm 'sigusr1-slf' \(did you mean 'sigusr1-self'\?\); valid: event, "):
        get_arm("sigusr1-slf")
    with pytest.raises(UsageError, match=r"^unknown lab 'lab153' \(did you mean 'lab135'\?\); valid: 135-signal"):
        get_lab("lab153")
    assert get_lab("custom").id == "custom"


def test_history_suggests_the_arm_and_lab_meant(tmp_path) -> None:
    db = str(tmp_path / "history.sqlite3")
    run = run_cli("run", "--arms", "event", "--n", "3", "--workers", "1", "-q", "--history", db, "-o", str(tmp_path / "r"))
    assert run.returncode == 0, run.stderr
    arm = run_cli("history", "--history", db, "--arm", "evnt")
    assert arm.returncode == 2 and arm.stdout == ""
    assert arm.stderr == "wakelab: error: no recorded run has arm 'evnt' (did you mean 'event'?); recorded arms: event\n"
    lab = run_cli("history", "--history", db, "--lab", "custm")
    assert lab.returncode == 2 and lab.stdout == ""
    assert lab.stderr == "wakelab: error: no recorded run of lab 'custm' (did you mean 'custom'?)\n"
    # A name with nothing close keeps the plain message.
    plain = run_cli("history", "--history", db, "--arm", "zzzz")
    assert plain.returncode == 2 and "did you mean" not in plain.stderr
