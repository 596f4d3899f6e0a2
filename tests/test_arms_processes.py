"""Tests for the cross-process arms (wakelab.core.families.processes).

Real-timing tests check behaviour, never speed: wakes arrive (lost == 0),
samples are positive and below a generous bound, a planted delay shows up,
and a child that dies or hangs is reported and leaves nothing behind.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Dict, List, Set

import pytest

from conftest import registry_arms

from wakelab.core.families import processes
from wakelab.core.model import BLOCKED, CROSS_PROCESS, LATENCY, MeasureParams

ARMS = {arm.name: arm for arm in registry_arms(processes)}
ARM_NAMES = sorted(ARMS)
SMALL = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=2.0)
ONE_SECOND_NS = 1_000_000_000


def _available(name: str) -> None:
    reason = ARMS[name].unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


def _child_pids() -> Set[int]:
    pids: Set[int] = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                pids.update(int(p) for p in f.read().split())
        except FileNotFoundError:  # thread gone, or no CONFIG_PROC_CHILDREN
            pass
    return pids


def _state() -> Dict[str, object]:
    """What an arm must leave exactly as it found it."""
    return {
        "fds": sorted(os.listdir("/proc/self/fd")),
        "children": _child_pids(),
        "mp_children": multiprocessing.active_children(),
        "threads": sorted(t.name for t in threading.enumerate()),
        "mask": frozenset(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "handlers": {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGINT, signal.SIGTERM)},
    }


def _assert_reaped(pid: int) -> None:
    """``pid`` was our child and has been waited for: no process, no zombie."""
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    assert pid not in _child_pids()


# --- identity -------------------------------------------------------------------


def test_family_declares_the_five_arms() -> None:
    assert ARM_NAMES == sorted(
        ["kill-sigwait-child", "pipe-process", "mp-event", "mp-queue", "eventfd-fork"]
    )


@pytest.mark.parametrize("name", ARM_NAMES)
def test_arm_identity(name: str) -> None:
    arm = ARMS[name]
    assert arm.family == "processes"
    assert arm.kind == LATENCY
    assert arm.scope == CROSS_PROCESS
    assert arm.waiter == BLOCKED
    assert not arm.needs_main_thread
    assert arm.t0.startswith("parent: perf_counter_ns() immediately before ")
    assert arm.t1.startswith("child: perf_counter_ns() as the first statement after ")
    for text in (arm.t0, arm.t1, arm.mechanism):
        assert "\n" not in text


def test_native_counterparts() -> None:
    assert {name: arm.native for name, arm in ARMS.items()} == {
        "kill-sigwait-child": "native-sigwait",
        "pipe-process": "native-pipe",
        "mp-event": None,
        "mp-queue": None,
        "eventfd-fork": "native-eventfd",
    }


def test_eventfd_arm_says_how_the_fd_is_shared() -> None:
    assert "fork+exec" in ARMS["eventfd-fork"].mechanism


# --- the shared clock -------------------------------------------------------------


def test_module_docstring_documents_the_shared_clock() -> None:
    doc = processes.__doc__ or ""
    assert "CLOCK_MONOTONIC" in doc
    assert "system-wide" in doc


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux clock")
def test_perf_counter_is_one_clock_for_all_processes_here() -> None:
    assert time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    assert processes.requires_shared_clock() is None


def test_a_per_process_clock_makes_every_arm_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_clock_implementation", lambda: "some_cpu_time()")
    for arm in registry_arms(processes):
        reason = arm.unavailable_reason()
        assert reason is not None
        assert "some_cpu_time()" in reason


def test_eventfd_arm_explains_when_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "eventfd", raising=False)
    reason = ARMS["eventfd-fork"].unavailable_reason()
    assert reason is not None and "3.10" in reason


# --- real wakes ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ARM_NAMES)
def test_arm_takes_real_samples_and_restores_state(name: str) -> None:
    _available(name)
    before = _state()
    raw = ARMS[name].measure(SMALL)
    assert _state() == before
    assert raw.lost == 0
    assert raw.warmup_discarded == SMALL.warmup
    assert len(raw.samples_ns) == SMALL.n
    assert all(0 < s < ONE_SECOND_NS for s in raw.samples_ns)
    assert raw.info["clock"] == time.get_clock_info("perf_counter").implementation
    assert raw.info["settle_us"] == SMALL.settle_us
    assert raw.info["child_python"] == sys.version.split()[0]


def test_planted_delay_is_visible_in_every_sample() -> None:
    params = MeasureParams(n=10, warmup=1, settle_us=200, timeout_s=2.0, planted_delay_us=2000)
    raw = ARMS["pipe-process"].measure(params)
    assert raw.lost == 0
    assert len(raw.samples_ns) == 10
    assert all(2_000_000 <= s < ONE_SECOND_NS for s in raw.samples_ns)


@pytest.mark.parametrize("name", ARM_NAMES)
def test_late_wakes_are_counted_lost_and_never_timed(name: str) -> None:
    # The planted delay outlasts the child's wait: every wake times out, and
    # its late notification must be thrown away before the next wake (if it
    # were timed, the child would "wake" before t0 and the arm would raise).
    _available(name)
    params = MeasureParams(n=3, warmup=0, settle_us=200, timeout_s=0.05, planted_delay_us=120_000)
    before = _state()
    raw = ARMS[name].measure(params)
    assert _state() == before
    assert raw.lost == 3
    assert raw.samples_ns == ()


def test_arm_runs_from_a_worker_thread_alongside_other_threads() -> None:
    # With another thread alive a bare os.fork() would warn on 3.12+ (and the
    # suite turns warnings into errors); the children here are fork+exec'd
    # or spawned, so it must not.
    results: List[object] = []

    def worker() -> None:
        try:
            results.append(ARMS["kill-sigwait-child"].measure(SMALL))
            if ARMS["mp-event"].unavailable_reason() is None:
                results.append(ARMS["mp-event"].measure(SMALL))
        except BaseException as exc:  # reported below
            results.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    for result in results:
        assert not isinstance(result, BaseException), result
        assert result.lost == 0


def test_preexisting_resource_tracker_is_left_running() -> None:
    _available("mp-event")
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker  # type: ignore[attr-defined]
    was_running = tracker._fd is not None
    resource_tracker.ensure_running()
    try:
        pid = tracker._pid
        raw = ARMS["mp-event"].measure(SMALL)
        assert raw.lost == 0
        assert tracker._pid == pid
        assert pid in _child_pids()
    finally:
        if not was_running:
            tracker._stop()


# --- faults -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["kill-sigwait-child", "pipe-process", "eventfd-fork", "mp-event", "mp-queue"])
def test_child_killed_mid_arm_raises_and_leaves_nothing(name: str) -> None:
    _available(name)
    pids: List[int] = []

    def kill_child(index: int, pid: int) -> None:
        pids.append(pid)
        if index == 3:
            os.kill(pid, signal.SIGKILL)

    measure = getattr(processes, ARMS[name].measure.__name__)
    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        measure(SMALL, after_wake=kill_child)
    message = str(caught.value)
    assert name in message
    assert "pid %d" % pids[0] in message
    assert "wake 5 of 22" in message
    assert "was killed by SIGKILL" in message
    _assert_reaped(pids[0])
    assert _state() == before


def test_hung_child_is_stopped_reaped_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "_REPLY_GRACE_S", 0.2)
    monkeypatch.setattr(processes, "_EXIT_GRACE_S", 0.2)
    pids: List[int] = []

    def stop_child(index: int, pid: int) -> None:
        pids.append(pid)
        if index == 1:
            os.kill(pid, signal.SIGSTOP)  # alive, but will never answer

    params = MeasureParams(n=5, warmup=0, settle_us=200, timeout_s=0.2)
    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        processes.measure_pipe_process(params, after_wake=stop_child)
    message = str(caught.value)
    assert "did not answer within 0.4 s during wake 3 of 5" in message
    assert "harness stopped the child" in message
    _assert_reaped(pids[0])
    assert _state() == before


def test_child_that_fails_to_start_is_reported_with_its_stderr(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken_command(*args: object) -> List[str]:
        return [sys.executable, "-c", "import sys; sys.stderr.write('no such luck\\n'); sys.exit(3)"]

    monkeypatch.setattr(processes, "_child_command", broken_command)
    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        processes.measure_kill_sigwait_child(SMALL)
    message = str(caught.value)
    assert "died while starting" in message
    assert "exited with status 3" in message
    assert "no such luck" in message
    assert _state() == before


def test_child_error_is_reported_with_its_traceback() -> None:
    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        processes._measure_popen_arm(
            SMALL, "test-arm", "no-such-mode", make_notify=lambda pid: (lambda index: None)
        )
    message = str(caught.value)
    assert "failed while starting" in message
    assert "unknown waiter mode 'no-such-mode'" in message
    assert _state() == before
