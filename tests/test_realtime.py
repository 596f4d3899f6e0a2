"""Realtime scheduling as a condition: --policy / --notifier-policy / --mlock, applied, recorded,
refused in one line where not permitted, and always restored (wakelab.core.realtime)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from typing import Dict, List, Optional

import pytest

from conftest import process_state
from wakelab.core import realtime
from wakelab.core.drivers import WakePath
from wakelab.core.drivers import thread as thread_driver
from wakelab.core.model import MeasureParams
from wakelab.core.registry import all_arms
from wakelab.harness import conditions as cond

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT or realtime.unavailable_reason() is not None,
                                reason="realtime scheduling needs root here")
FIFO_80 = realtime.Scheduling("fifo", 80)


def _policy_of(tid: int = 0) -> tuple:
    return os.sched_getscheduler(tid) & ~realtime._reset_on_fork(), os.sched_getparam(tid).sched_priority


def test_conditions_record_realtime_only_when_asked() -> None:
    plain = cond.Conditions(cpu_threads=1)
    assert set(plain.to_dict()) == {"cpu_threads", "cpu_procs", "switch_interval_s", "idle_hold"}
    rt = cond.Conditions(waiter_policy="fifo", waiter_priority=80, notifier_policy="other", mlock=True)
    data = rt.to_dict()
    assert data["waiter_policy"] == "fifo" and data["waiter_priority"] == 80
    assert data["notifier_policy"] == "other" and data["notifier_priority"] == 0 and data["mlock"] is True
    assert cond.Conditions.from_dict(data) == rt
    assert rt.waiter_scheduling == FIFO_80 and rt.waiter_scheduling.describe() == "SCHED_FIFO priority 80"


def test_range_problems_are_named() -> None:
    assert realtime.range_problem(realtime.Scheduling("fifo", 0)) == "SCHED_FIFO takes a priority from 1 to 99, not 0"
    assert realtime.range_problem(realtime.Scheduling("other", 5)) == "SCHED_OTHER takes a priority from 0 to 0, not 5"
    assert realtime.range_problem(FIFO_80) is None


@pytest.mark.skipif(realtime.unavailable_reason() is not None, reason="no sched_setscheduler in this interpreter")
def test_a_sides_request_is_checked_in_the_words_of_its_own_options() -> None:
    flags = ("--notifier-policy", "--notifier-priority")
    assert realtime.requested(None, None, *flags) == (None, 0)
    assert realtime.requested("other", None, *flags) == ("other", 0)
    assert realtime.requested("fifo", 80, *flags) == ("fifo", 80)
    with pytest.raises(ValueError, match=r"^--notifier-priority needs --notifier-policy fifo or rr$"):
        realtime.requested(None, 5, *flags)
    with pytest.raises(ValueError, match=r"^--notifier-policy rr needs --notifier-priority N \(1\.\.99; higher runs first\)$"):
        realtime.requested("rr", None, *flags)
    with pytest.raises(ValueError, match=r"^--notifier-policy fifo --notifier-priority 0: SCHED_FIFO takes a priority from 1 to 99, not 0$"):
        realtime.requested("fifo", 0, *flags)


@needs_root
def test_worker_conditions_switch_the_notifier_and_restore_it() -> None:
    before = process_state()
    main_before = _policy_of()
    conditions = cond.Conditions(cpu_threads=1, waiter_policy="fifo", waiter_priority=80,
                                 notifier_policy="rr", notifier_priority=10, mlock=True)
    with cond.worker_conditions(MeasureParams(), conditions) as applied:
        assert _policy_of() == (os.SCHED_RR, 10)
        assert realtime.WAITER == FIFO_80
        assert realtime.memory_locked() is True
        assert applied["notifier_sched"] == "SCHED_RR priority 10" and applied["waiter_sched"] == "SCHED_FIFO priority 80"
        assert applied["mlock"] is True and "sched_rt_runtime_us" in applied["rt_budget"]
        # The busy thread started before the switch, and stays a normal task.
        burner = next(t for t in threading.enumerate() if t.name.startswith("wakelab-cpu-burner"))
        assert _policy_of(burner.native_id) == (os.SCHED_OTHER, 0)
    assert _policy_of() == main_before
    assert realtime.WAITER is None and realtime.NOTIFIER is None
    assert realtime.memory_locked() is False
    assert process_state() == before


@needs_root
def test_worker_conditions_restore_when_the_arm_raises() -> None:
    main_before = _policy_of()
    with pytest.raises(RuntimeError):
        with cond.worker_conditions(MeasureParams(), cond.Conditions(notifier_policy="fifo", notifier_priority=5, mlock=True)):
            assert _policy_of() == (os.SCHED_FIFO, 5)
            raise RuntimeError("arm failed")
    assert _policy_of() == main_before
    assert realtime.memory_locked() is False and realtime.NOTIFIER is None


def _policy_probe(seen: List[tuple]) -> WakePath:
    """A wake path whose wait notes the waiter thread's policy (an Event underneath)."""
    event = threading.Event()

    def wait(timeout_s: float) -> bool:
        seen.append(_policy_of())
        return event.wait(timeout_s)

    return WakePath(reset=event.clear, wait=wait, notify=event.set)


@needs_root
@pytest.mark.parametrize("mode", ["closed", "open"])
def test_the_thread_drivers_waiter_takes_the_policy_itself(mode: str) -> None:
    seen: List[tuple] = []
    main_before = _policy_of()
    params = MeasureParams(n=5, warmup=1, settle_us=100, settle_jitter_us=0, mode=mode, interval_us=2000)
    with realtime.waiter_scheduling(FIFO_80):
        raw = thread_driver.measure(params, _policy_probe(seen))
    assert seen and set(seen) == {(os.SCHED_FIFO, 80)}
    assert raw.info["waiter_sched"] == "SCHED_FIFO priority 80"
    assert _policy_of() == main_before  # the notifier (this thread) untouched
    seen.clear()
    raw = thread_driver.measure(params, _policy_probe(seen))
    assert set(seen) == {main_before} and "waiter_sched" not in raw.info


@needs_root
def test_a_notifier_request_alone_leaves_the_waiter_normal() -> None:
    seen: List[tuple] = []
    params = MeasureParams(n=3, warmup=0, settle_us=100, settle_jitter_us=0)
    with cond.worker_conditions(params, cond.Conditions(notifier_policy="fifo", notifier_priority=30)):
        raw = thread_driver.measure(params, _policy_probe(seen))
    assert set(seen) == {(os.SCHED_OTHER, 0)}
    assert raw.info["waiter_sched"] == "SCHED_OTHER"


@needs_root
def test_every_thread_driver_arm_runs_with_the_policy_and_restores(tiny_params) -> None:
    """wakelab run --policy fifo --priority 80: every thread-driver arm records it and leaves nothing behind."""
    conditions = cond.Conditions(waiter_policy="fifo", waiter_priority=80)
    arms = [a for a in all_arms() if a.driver == "thread" and a.unavailable_reason() is None]
    assert len(arms) > 10
    for arm in arms:
        before = process_state()
        with cond.worker_conditions(tiny_params, conditions):
            raw = arm.measure(tiny_params)
        assert raw.info.get("waiter_sched") == "SCHED_FIFO priority 80", arm.name
        assert process_state() == before, arm.name


def test_the_c_floor_applies_the_policy_it_is_given(tiny_params) -> None:
    from wakelab.core.drivers import floor

    if floor.unavailable_reason() is not None:
        pytest.skip(floor.unavailable_reason())
    # Priority 0 is not a SCHED_FIFO priority: the binary's waiter must fail to take it, so it does try.
    with pytest.raises(floor.NativeFloorError, match="giving the waiter scheduling policy 1 priority 0"):
        floor.run_floor("native-condvar", tiny_params, {"waiter_policy": 1, "waiter_priority": 0})
    if ROOT:
        with realtime.waiter_scheduling(FIFO_80):
            raw = floor.measure_latency("native-condvar", tiny_params)
        assert raw.info["waiter_sched"] == "SCHED_FIFO priority 80" and len(raw.samples_ns) == tiny_params.n


def _run_cli(*args: str, as_user: Optional[List[str]] = None, python: str = sys.executable):
    env = dict(os.environ, PYTHONPATH=SRC, HOME="/tmp")
    return subprocess.run((as_user or []) + [python, "-m", "wakelab", *args], capture_output=True, text=True,
                          env=env, timeout=120, cwd="/tmp")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--priority", "80"], "wakelab: error: --priority needs --policy fifo or rr"),
        (["--policy", "fifo"], "wakelab: error: --policy fifo needs --priority N (1..99; higher runs first)"),
        (["--policy", "rr", "--priority", "0"], "wakelab: error: --policy rr --priority 0: SCHED_RR takes a priority from 1 to 99, not 0"),
        (["--notifier-policy", "other", "--notifier-priority", "3"],
         "wakelab: error: --notifier-policy other --notifier-priority 3: SCHED_OTHER takes a priority from 0 to 0, not 3"),
    ],
)
def test_bad_realtime_options_are_one_line(tmp_path, args, message) -> None:
    proc = _run_cli("run", "--arms", "event", "-n", "3", "--no-history", "-q", "-o", str(tmp_path / "out"), *args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", message + "\n")
    assert not (tmp_path / "out").exists()


def test_the_realtime_options_become_the_runs_conditions() -> None:
    """--policy and --notifier-policy (SCHED_OTHER: allowed to everyone) reach the Conditions the run is made under,
    beside the other conditions; no option, no realtime condition."""
    from wakelab.cli import build_parser
    from wakelab.commands import run as run_command

    def conditions(*argv: str) -> cond.Conditions:
        return run_command._execution(build_parser().parse_args(["run", *argv])).conditions

    assert conditions("--cpu-procs", "1") == cond.Conditions(cpu_procs=1)
    asked = conditions("--cpu-procs", "1", "--policy", "other", "--notifier-policy", "other")
    assert asked == cond.Conditions(cpu_procs=1, waiter_policy="other", notifier_policy="other")


def _nobody() -> Optional[List[str]]:
    """A command prefix that runs as the unprivileged user nobody, and a Python it can run."""
    setpriv = shutil.which("setpriv")
    if not ROOT or setpriv is None:
        return None
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]


def _prlimit(rtprio: str) -> Optional[List[str]]:
    """``prlimit --rtprio=N`` when it can set that limit here (it needs CAP_SYS_RESOURCE to raise it)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return None
    prefix = [prlimit, "--rtprio=%s" % rtprio]
    return prefix if subprocess.run(prefix + ["true"], capture_output=True, timeout=30).returncode == 0 else None


def _python_for_nobody() -> Optional[str]:
    for candidate in (sys.executable, "/usr/bin/python3"):
        prefix = _nobody()
        if prefix is None or not os.path.exists(candidate):
            continue
        probe = subprocess.run(prefix + [candidate, "-c", "import sys; assert sys.version_info >= (3, 9)"],
                               capture_output=True, timeout=60)
        if probe.returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize(
    "args, rtprio, expected",
    [
        (["--policy", "fifo", "--priority", "80"], None,
         "wakelab: error: --policy fifo --priority 80 refused: cannot switch to SCHED_FIFO priority 80: Operation not "
         "permitted; it needs root (CAP_SYS_NICE) or an RLIMIT_RTPRIO of the priority (ulimit -r is 0)\n"),
        (["--notifier-policy", "rr", "--notifier-priority", "50"], "10",
         "wakelab: error: --notifier-policy rr --notifier-priority 50 refused: cannot switch to SCHED_RR priority 50: "
         "Operation not permitted; it needs root (CAP_SYS_NICE) or an RLIMIT_RTPRIO of the priority (ulimit -r is 10)\n"),
        (["--mlock"], None, None),
    ],
)
def test_refused_in_one_line_when_not_root(tmp_path, args, rtprio, expected) -> None:
    python = _python_for_nobody()
    if python is None:
        pytest.skip("needs root, setpriv and a Python the user nobody can run")
    prefix = _nobody() or []
    if rtprio is not None:
        limit = _prlimit(rtprio)
        if limit is None:
            pytest.skip("cannot set RLIMIT_RTPRIO to %s here (prlimit needs CAP_SYS_RESOURCE)" % rtprio)
        prefix = limit + prefix
    out = tmp_path / "out"
    os.chmod(tmp_path, 0o777)
    proc = _run_cli("run", "--arms", "event", "-n", "3", "--no-history", "-q", "-o", str(out), *args,
                    as_user=prefix, python=python)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    if expected is not None:
        assert proc.stderr == expected
    else:
        assert proc.stderr.startswith("wakelab: error: --mlock needs root or an unlimited RLIMIT_MEMLOCK")
    assert not out.exists()


def test_a_high_enough_rtprio_is_enough_without_root() -> None:
    python = _python_for_nobody()
    limit = _prlimit("99")
    if python is None or limit is None:
        pytest.skip("needs root, setpriv, a prlimit that can raise RLIMIT_RTPRIO and a Python the user nobody can run")
    code = "from wakelab.core import realtime as r; print(r.permission_problem(r.Scheduling('fifo', 80)))"
    env = dict(os.environ, PYTHONPATH=SRC)
    ok = subprocess.run(limit + (_nobody() or []) + [python, "-c", code], capture_output=True,
                        text=True, env=env, timeout=60)
    assert ok.stdout == "None\n", ok.stderr


@needs_root
def test_refused_where_the_cgroup_has_no_realtime_budget() -> None:
    """A cpu cgroup whose cpu.rt_runtime_us is 0 (realtime group scheduling): refused, naming why."""
    if realtime._cgroup_rt_runtime()[0] is None:
        pytest.skip("no cpu cgroup with realtime groups here")
    group = "/sys/fs/cgroup/cpu/wakelab-test-nort-%d" % os.getpid()
    try:
        os.mkdir(group)
    except OSError as exc:
        pytest.skip("cannot make a cpu cgroup: %s" % exc)
    try:
        code = ("import os; open('%s/cgroup.procs', 'w').write(str(os.getpid())); "
                "from wakelab.core import realtime as r; print(r.permission_problem(r.Scheduling('fifo', 80)))" % group)
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=SRC), timeout=60)
    finally:
        os.rmdir(group)
    assert proc.stdout == ("cannot switch to SCHED_FIFO priority 80: Operation not permitted; no realtime budget: "
                           "this process's cpu cgroup has cpu.rt_runtime_us 0\n"), proc.stderr


def test_a_zero_budget_is_refused_before_trying(monkeypatch) -> None:
    monkeypatch.setattr(realtime, "rt_budget", lambda: {"sched_rt_runtime_us": 0, "sched_rt_period_us": 1000000})
    problem = realtime.permission_problem(FIFO_80)
    assert problem == "cannot switch to SCHED_FIFO priority 80: no realtime budget (kernel.sched_rt_runtime_us is 0)"


@needs_root
def test_run_records_the_policy_and_its_evidence(tmp_path) -> None:
    out = tmp_path / "run"
    proc = _run_cli("run", "--arms", "event", "-n", "6", "--warmup", "1", "--repeat", "1", "--workers", "1",
                    "--settle-jitter-us", "0", "--policy", "fifo", "--priority", "80", "--mlock", "--no-history",
                    "-q", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    import json

    summary: Dict = json.loads((out / "summary.json").read_text())
    assert summary["conditions"]["waiter_policy"] == "fifo" and summary["conditions"]["waiter_priority"] == 80
    assert summary["conditions"]["mlock"] is True
    arm = summary["arms"][0]
    assert arm["info"]["waiter_sched"] == "SCHED_FIFO priority 80"
    applied = arm["workers"][0]["applied"]
    assert applied["waiter_sched"] == "SCHED_FIFO priority 80" and applied["mlock"] is True


# -- the realtime lab ------------------------------------------------------------------------------


def _cell(label: str, busy: int) -> Dict:
    return {"label": label, "dimensions": {"cpu_threads": busy}}


def _row(cell: str, p50_us: float, p99_us: float) -> Dict:
    return {"cell": cell, "status": "ok", "kind": "latency",
            "latency": {"p50_ns": p50_us * 1000, "p99_ns": p99_us * 1000, "max_ns": p99_us * 2000}}


def test_the_realtime_verdict_pairs_normal_and_fifo_in_each_cell() -> None:
    from wakelab.analysis.lab_ab import realtime_ab
    from wakelab.evidence.matrix import MatrixDoc

    doc = {
        "command": ["wakelab", "run", "--lab", "realtime", "--cpu-procs", "2"],
        "cells": [_cell("t0", 0), _cell("t1", 1)],
        "arms": [
            {"name": "event", "rows": [_row("t0", 30, 1500), _row("t1", 40, 5000)]},
            {"name": "event-fifo", "rows": [_row("t0", 30, 60), _row("t1", 35, 4800)]},
            {"name": "native-condvar", "rows": [_row("t0", 20, 900), _row("t1", 20, 950)]},
            {"name": "native-condvar-fifo", "rows": [_row("t0", 15, 40), _row("t1", 15, 45)]},
        ],
    }
    verdict = realtime_ab(MatrixDoc.from_dict(doc))
    event = [r for r in verdict.rows if r.normal == "event"]
    assert [r.cpu_threads for r in event] == [0, 1]
    assert event[0].figures["p99"].ratio == pytest.approx(60 / 1500) and event[1].figures["p99"].ratio == pytest.approx(0.96)
    table = verdict.tables[0].rows
    assert table[0] == ("event", "0", "30.0 / 30.0", "1500 / 60.0", "1.0×", "0.04×")
    text = " ".join(verdict.sentences)
    assert "With 2 busy processes (--cpu-procs) and no busy Python thread: the SCHED_FIFO waiter's p99 was" in text
    assert ("The GIL took back what realtime bought: with 1 busy Python thread the FIFO waiter's p99 was 80× its p99 "
            "without (4800 against 60.0 µs)") in text
    assert "In C" not in text  # the C floor's FIFO waiter was faster here
    assert verdict.hogs == 2
    doc["arms"][3]["rows"][0] = _row("t0", 30, 900)  # a FIFO C waiter slower than the normal one: said, with figures
    assert "In C, SCHED_FIFO did not make the condvar wake faster here (0 busy: p50 20.0 → 30.0 µs" in " ".join(
        realtime_ab(MatrixDoc.from_dict(doc)).sentences)


def test_the_realtime_verdict_says_when_there_is_no_hog_or_no_fifo() -> None:
    from wakelab.analysis.lab_ab import realtime_ab
    from wakelab.evidence.matrix import MatrixDoc

    doc = {
        "command": ["wakelab", "run", "--lab", "realtime"],
        "cells": [_cell("t0", 0)],
        "arms": [
            {"name": "event", "rows": [_row("t0", 30, 100)]},
            {"name": "event-fifo", "rows": [{"cell": "t0", "status": "skipped", "reason": "not permitted", "latency": None}]},
        ],
    }
    verdict = realtime_ab(MatrixDoc.from_dict(doc))
    assert verdict.rows == ()
    assert any("No hog in this run" in s for s in verdict.sentences)
    assert "Not measured: event-fifo: not permitted." in verdict.sentences


@needs_root
def test_the_fifo_arms_run_their_waiter_under_fifo_80(tiny_params) -> None:
    from wakelab.core.registry import get_arm

    before = process_state()
    for name in ("event-fifo", "native-condvar-fifo"):
        arm = get_arm(name)
        if arm.unavailable_reason() is not None:
            continue
        raw = arm.measure(tiny_params)
        assert raw.info["waiter_sched"] == "SCHED_FIFO priority 80" and len(raw.samples_ns) == tiny_params.n
    assert process_state() == before and realtime.WAITER is None


def test_a_fifo_arm_says_why_it_cannot_run(monkeypatch) -> None:
    from wakelab.core.registry import get_arm

    monkeypatch.setattr(realtime, "permission_problem", lambda request: "Operation not permitted; it needs root")
    reason = get_arm("event-fifo").unavailable_reason()
    assert reason == "its waiter runs under SCHED_FIFO priority 80, not permitted here: Operation not permitted; it needs root"
