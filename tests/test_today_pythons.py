"""The measuring side on today's CPython: 3.14 and 3.15, provisioned by .ci/provision-pythons.

Lab 135, the thread, fd and process families and the hand-off family run on each, a few wakes an
arm, through the runner and a worker process of that interpreter.  Behaviour only: every arm runs
or says why not, the interpreter is recorded as what it is, and the subinterpreter queue's poll
shows.  Where a version cannot be had here, its tests skip with the reason.
"""

from __future__ import annotations

from typing import Dict, Optional

import pytest

from wakelab.core.model import MeasureParams
from wakelab.core.registry import all_arms
from wakelab.harness.interpreters import Interpreter, discover
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.labs import LAB_135, custom_lab

FAMILIES = ("threads", "fds", "processes", "handoff")
SMALL = MeasureParams(n=12, warmup=2, settle_us=200, install_n=500, rounds=2)


def _found() -> Dict[str, Interpreter]:
    out: Dict[str, Interpreter] = {}
    for interp in discover():
        if interp.implementation != "cpython" or interp.free_threaded:
            continue
        key = "%d.%d" % interp.version[:2]
        if key in ("3.14", "3.15") and (key not in out or interp.version > out[key].version):
            out[key] = interp
    return out


FOUND = _found()


def _python(minor: str) -> Interpreter:
    interp: Optional[Interpreter] = FOUND.get(minor)
    if interp is None:
        pytest.skip("no CPython %s found here: .ci/provision-pythons unpacks Debian's into the interpreter cache" % minor)
    return interp


@pytest.mark.parametrize("minor", ["3.14", "3.15"])
def test_lab135_runs(minor: str, tmp_path) -> None:
    interp = _python(minor)
    plan = RunPlan(lab=LAB_135, arm_names=list(LAB_135.arms), params=SMALL, folder=str(tmp_path), command=["test"],
                   execution=Execution(workers=1, python=interp.path))
    summary = run_plan(plan)
    assert summary["complete"] is True
    assert summary["interpreter"]["version"].startswith(minor + ".")
    assert [a["status"] for a in summary["arms"]] == ["ok"] * len(LAB_135.arms)


@pytest.mark.slow
@pytest.mark.parametrize("minor", ["3.14", "3.15"])
def test_thread_fd_process_and_handoff_families_run(minor: str, tmp_path) -> None:
    interp = _python(minor)
    names = [arm.name for arm in all_arms() if arm.family in FAMILIES]
    plan = RunPlan(lab=custom_lab(LAB_135, names), arm_names=names, params=SMALL, folder=str(tmp_path), command=["test"],
                   execution=Execution(workers=1, python=interp.path))
    summary = run_plan(plan)
    by_name = {a["name"]: a for a in summary["arms"]}
    not_ok = {n: (a["status"], a.get("reason")) for n, a in by_name.items() if a["status"] != "ok"}
    assert not_ok == {}
    assert by_name["interp-queue"]["latency"]["n"] == SMALL.n
    info = by_name["process-pool-submit"]["info"]
    workers = info.get("workers", [info])  # one record per worker process; flat for a single worker
    assert {w["start_method"] for w in workers} == {"forkserver"}  # the default from 3.14 on Linux
