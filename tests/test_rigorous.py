"""``wakelab run --rigorous``: compare-grade runs (more wakes and workers), and compare's hint towards them.

Real arms in real workers, small counts: the tests assert what was planned and recorded, never how
fast anything was.  What --rigorous buys in power is measured by bench/aa_power.py, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from wakelab.analysis.compare import CANNOT_TELL, NO_DIFFERENCE, SLOWER, rigor_hint
from wakelab.cli import build_parser
from wakelab.commands import run as run_command
from wakelab.commands.run import RIGOROUS_FACTOR, RIGOROUS_WORKERS_PER_REPETITION
from wakelab.evidence.model import DEFAULT_REPEAT, Bundle
from wakelab.harness.runner import DEFAULT_WORKERS
from wakelab.labs import LAB_135


def _planned(*argv: str):
    args = build_parser().parse_args(["run", *argv])
    return run_command._params(args, LAB_135.params), run_command._execution(args)


def test_rigorous_takes_more_of_the_labs_counts_and_two_workers_per_repetition() -> None:
    plain_params, plain = _planned()
    params, execution = _planned("--rigorous")
    assert (plain_params.n, plain_params.rounds, plain.workers, plain.rigorous) == (200, 7, DEFAULT_WORKERS, False)
    assert params.n == RIGOROUS_FACTOR * LAB_135.params.n == 1000
    assert params.rounds == RIGOROUS_FACTOR * LAB_135.params.rounds
    assert params.install_n == plain_params.install_n and params.settle_us == plain_params.settle_us  # only the counts
    assert execution.repeat == DEFAULT_REPEAT  # the default repeat count: more wakes per repetition, not more passes
    assert execution.workers == RIGOROUS_WORKERS_PER_REPETITION * DEFAULT_REPEAT and execution.rigorous
    assert execution.to_dict()["rigorous"] is True and "rigorous" not in plain.to_dict()
    # Two per repetition of whatever repeat count is asked for, within --workers' own bound.
    assert _planned("--rigorous", "--repeat", "3")[1].workers == 6
    assert _planned("--rigorous", "--repeat", "1")[1].workers == DEFAULT_WORKERS  # never fewer than a plain run
    assert _planned("--rigorous", "--repeat", "200")[1].workers == run_command.LIMITS["workers"][1]


def test_the_rigorous_caps_are_runs_bounds() -> None:
    """A compare-grade plan never asks for more than ``wakelab run`` accepts."""
    from wakelab.harness import runner

    assert all(run_command.LIMITS[field][1] == cap for field, cap in runner.RIGOROUS_CAPS.items())


def test_counts_given_on_the_command_line_win_over_rigorous() -> None:
    params, execution = _planned("--rigorous", "-n", "40", "--rounds", "3", "--workers", "4")
    assert (params.n, params.rounds, execution.workers, execution.rigorous) == (40, 3, 4, True)
    params, _ = _planned("--rigorous", "-n", "40")
    assert params.rounds == RIGOROUS_FACTOR * LAB_135.params.rounds  # what is not given is still scaled


def _cli(*args: str, timeout: float = 180):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("other", [["--in-process"], ["--duration", "2s", "--arms", "event"]])
def test_rigorous_with_an_option_it_cannot_keep_is_one_line_and_exit_2(other, tmp_path) -> None:
    result = _cli("run", "--rigorous", *other, "-o", str(tmp_path / "out"), "--no-history", "-q")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "--rigorous" in lines[0] and "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_rigorous_run_records_its_counts_and_reproduces_them(tmp_path) -> None:
    folder = tmp_path / "rig"
    # sigusr1-self (no settle sleep to speak of) and the rate arm keep the scaled counts quick.
    result = _cli("run", "--arms", "sigusr1-self,signal-install", "--rigorous", "--repeat", "2", "--settle-us", "20",
                  "--install-n", "200", "--warmup", "2", "-o", str(folder), "--no-history", "-q")
    assert result.returncode == 0, result.stderr
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["complete"] is True
    assert summary["parameters"]["n"] == RIGOROUS_FACTOR * LAB_135.params.n
    assert summary["parameters"]["rounds"] == RIGOROUS_FACTOR * LAB_135.params.rounds
    assert summary["execution"]["rigorous"] is True and summary["execution"]["workers"] == 4
    for entry in summary["arms"]:
        per_rep = [sum(1 for w in entry["workers"] if w["repetition"] == r) for r in range(2)]
        assert per_rep == [RIGOROUS_WORKERS_PER_REPETITION] * 2, entry["name"]
    latency = next(e for e in summary["arms"] if e["name"] == "sigusr1-self")
    assert latency["latency"]["n"] == 1000
    text = " ".join((folder / "summary.txt").read_text().split())
    assert "compare-grade (--rigorous" in text
    # The REPRODUCE line gives the counts themselves, so it makes the same run without the flag.
    line = [ln for ln in (folder / "summary.txt").read_text().splitlines() if ln.strip().startswith("wakelab run")][-1]
    assert "--n 1000" in line and "--rounds 35" in line and "--workers 4" in line and "--repeat 2" in line
    assert line.endswith(" --rigorous")  # a run made from it is recorded compare-grade too


def _run(label: str, rigorous: bool) -> Bundle:
    execution = {"mode": "workers", "workers": 10, "repeat": 5}
    if rigorous:
        execution["rigorous"] = True
    return Bundle(source=label, folder="/nonexistent", summary={"execution": execution, "arms": []}, label=label)


def _judged(*words: str):
    return {"p%d" % i: types.SimpleNamespace(verdict=w) for i, w in enumerate(words)}


def test_compare_points_a_cannot_tell_at_rigorous_runs_only_where_it_would_help() -> None:
    plain_a, plain_b, rig_a, rig_b = _run("A", False), _run("B", False), _run("A", True), _run("B", True)
    hint = rigor_hint(plain_a, plain_b, _judged(CANNOT_TELL, NO_DIFFERENCE))
    assert hint is not None and "both runs" in hint and "--rigorous" in hint
    one = rigor_hint(rig_a, plain_b, _judged(NO_DIFFERENCE, CANNOT_TELL))
    assert one is not None and "make B with" in one
    assert rigor_hint(rig_a, rig_b, _judged(CANNOT_TELL)) is None  # already compare-grade
    assert rigor_hint(plain_a, plain_b, _judged(SLOWER, NO_DIFFERENCE)) is None  # nothing left to tell
