"""The measuring side on PyPy (Debian's pypy3, which .ci/run installs): what runs, and why the rest is skipped."""

from __future__ import annotations

import shutil

import pytest

from wakelab.core.model import MeasureParams
from wakelab.core.registry import all_arms
from wakelab.harness.interpreters import discover, probe
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.labs import LAB_135, custom_lab

# What PyPy 3.9 lacks, and the arms that need it.
NEEDS_SIGTIMEDWAIT = ("sigwait-thread-to-main", "pthread-kill-sigwait", "kill-sigwait-child", "storm-usr1-sigwait",
                      "storm-rt-sigwait")
NEEDS_EVENTFD = ("eventfd", "eventfd-fork")
# concurrent.interpreters is CPython 3.14+.
NEEDS_SUBINTERPRETERS = ("interp-queue", "interp-pipe", "interp-pool-submit")


def _pypy():
    for name in ("pypy3", "pypy"):
        path = shutil.which(name)
        if path:
            interp = probe(path)
            if interp is not None and interp.implementation == "pypy":
                return interp
    found = [i for i in discover() if i.implementation == "pypy"]
    return found[0] if found else None


PYPY = _pypy()
pytestmark = pytest.mark.skipif(PYPY is None, reason="no PyPy here: .ci/run installs Debian's pypy3 (apt-get install pypy3)")


def test_pypy_is_found_and_labelled() -> None:
    assert PYPY is not None
    assert PYPY.label.startswith("pypy-3.") and PYPY.implementation_version and PYPY.gil and not PYPY.free_threaded
    assert any(i.implementation == "pypy" for i in discover())


def test_lab135_on_pypy(tmp_path) -> None:
    plan = RunPlan(lab=LAB_135, arm_names=["event", "sigusr1-self", "signal-install"],
                   params=MeasureParams(n=30, warmup=2, settle_us=200, install_n=2000, rounds=2), folder=str(tmp_path),
                   command=["test"], execution=Execution(workers=1, python=PYPY.path))
    summary = run_plan(plan)
    assert summary["interpreter"]["implementation"] == "PyPy"
    assert [a["status"] for a in summary["arms"]] == ["ok", "ok", "ok"]
    assert summary["complete"] is True


def test_every_arm_pypy_can_run_runs_and_the_rest_say_why(tmp_path) -> None:
    # The whole catalogue, a few wakes each: every arm either runs or is skipped with a reason naming PyPy.
    names = [arm.name for arm in all_arms()]
    plan = RunPlan(lab=custom_lab(LAB_135, names), arm_names=names,
                   params=MeasureParams(n=8, warmup=1, settle_us=200, install_n=500, rounds=2), folder=str(tmp_path),
                   command=["test"], execution=Execution(workers=1, python=PYPY.path))
    summary = run_plan(plan)
    by_name = {a["name"]: a for a in summary["arms"]}
    lacks_sigtimedwait = PYPY.version[:2] < (3, 10)  # PyPy 3.9: no sigtimedwait, no os.eventfd
    for name, arm in by_name.items():
        if lacks_sigtimedwait and name in NEEDS_SIGTIMEDWAIT:
            assert arm["status"] == "skipped"
            assert "signal.sigtimedwait does not exist in PyPy" in arm["reason"] and "sigwait has no timeout" in arm["reason"]
        elif lacks_sigtimedwait and name in NEEDS_EVENTFD:
            assert arm["status"] == "skipped" and "os.eventfd does not exist in PyPy" in arm["reason"]
        elif name in NEEDS_SUBINTERPRETERS:
            assert arm["status"] == "skipped" and "needs CPython 3.14 or newer; this is PyPy" in arm["reason"]
        elif arm["family"] == "asynclibs" and arm["status"] == "skipped":  # optional: its library is not installed there
            assert "is not installed in this interpreter (PyPy " in arm["reason"]
        else:
            assert arm["status"] == "ok", (name, arm.get("reason"))
