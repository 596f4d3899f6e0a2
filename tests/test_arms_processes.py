"""Tests for the cross-process arms (wakelab.core.families.processes) and their driver
(wakelab.core.drivers.child, wakelab.core.drivers.child_side).

Real-timing tests check behaviour, never speed: wakes arrive (lost == 0),
samples are positive and below a generous bound, a planted delay shows up,
open loop takes every wake from the schedule, a wake before its notify is
counted stale, and a child that dies, hangs or fails is reported and leaves
nothing behind.  Faults are injected by wrapping a family's ChildPath here,
in the tests: neither the driver nor the family has a test hook.
"""

from __future__ import annotations

import dataclasses
import inspect
import multiprocessing
import os
import signal
import sys
import threading
import time
from typing import Callable, Dict, List, Set

import pytest

from conftest import registry_arms

import wakelab.core.drivers as drivers
from wakelab.core.drivers import child as child_driver
from wakelab.core.drivers.child import ChildPath, ChildWaiter, Notifier
from wakelab.core.drivers.child_side import WaitSide
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
    assert arm.driver == "child"
    assert arm.open_loop
    assert arm.t0.startswith("parent: perf_counter_ns() immediately before ")
    assert arm.t1.startswith("child: perf_counter_ns() as the first statement after ")
    for text in (arm.t0, arm.t1, arm.mechanism):
        assert "\n" not in text


def test_native_counterparts() -> None:
    # The "vs C" table (core/families/native.FLOORS) names them; here: they exist, and the
    # multiprocessing arms have none.
    from wakelab.core.registry import get_arm

    natives = {name: arm.native for name, arm in ARMS.items()}
    assert natives["mp-event"] is None and natives["mp-queue"] is None
    for name, part in (("kill-sigwait-child", "sigwait"), ("pipe-process", "pipe"), ("eventfd-fork", "eventfd")):
        native = natives[name]
        assert native is not None and part in native
        assert get_arm(native).family == "native"


def test_eventfd_arm_says_how_the_fd_is_shared() -> None:
    assert "fork+exec" in ARMS["eventfd-fork"].mechanism


def test_mp_event_says_it_is_three_cross_process_hand_offs() -> None:
    # Event.set() posts the condition's wait semaphore (parent -> child), waits for the woken
    # count (child -> parent), and releases the condition lock the child re-takes (parent -> child).
    arm = ARMS["mp-event"]
    assert "three hand-offs" in arm.mechanism
    for part in ("wait semaphore", "woken-count semaphore", "condition lock"):
        assert part in arm.mechanism
    assert "woken-count" in arm.t0 and "condition lock" in arm.t1


def test_mp_queue_says_its_feeder_thread_and_unpickling_are_in_the_window() -> None:
    arm = ARMS["mp-queue"]
    assert "feeder thread" in arm.mechanism and "pipe" in arm.mechanism
    assert "unpickling" in arm.t1


def test_family_holds_only_primitives() -> None:
    """No t0, no planted delay, no loop of its own: the driver owns those."""
    source = inspect.getsource(processes)
    for banned in ("plant_delay", "spin_until", "planted_wait", "t0 =", "settle_s", "LatencyCollector"):
        assert banned not in source, banned
    assert set(processes.CHILD_PATHS) == set(ARM_NAMES)


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
    monkeypatch.setattr(child_driver, "_clock_implementation", lambda: "some_cpu_time()")
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
    assert raw.info["mode"] == "closed"
    assert raw.info["stale_wakes"] == 0
    assert raw.info["child_start_ms"] > 0


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


# --- open loop ----------------------------------------------------------------------

OPEN = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0, mode="open", interval_us=2000)


@pytest.mark.parametrize("name", ARM_NAMES)
def test_open_loop_takes_every_wake_from_the_schedule(name: str) -> None:
    _available(name)
    before = _state()
    raw = ARMS[name].measure(OPEN)
    assert _state() == before
    assert raw.info["mode"] == "open"
    assert len(raw.samples_ns) + raw.lost == OPEN.n
    assert all(0 < s < ONE_SECOND_NS for s in raw.samples_ns)
    # A lost notify here can only have been merged into another wake: none timed out.
    assert raw.lost == raw.info["coalesced"]
    assert len(raw.components_ns["notify_late"]) == len(raw.samples_ns)
    assert all(late >= 0 for late in raw.components_ns["notify_late"])


def test_open_loop_shows_a_stalled_notifier_in_every_later_sample() -> None:
    calls = {"n": 0}

    def stalling(make: Callable[[], ChildPath]) -> Callable[[], ChildPath]:
        def make_path() -> ChildPath:
            path = make()

            def notifier(pid: int) -> Notifier:
                notify = path.notifier(pid).notify
                assert notify is not None

                def stalling_notify() -> None:
                    calls["n"] += 1
                    if calls["n"] == 5:
                        time.sleep(0.03)  # the next five notifies are all late
                    notify()

                return Notifier(notify=stalling_notify)

            return dataclasses.replace(path, notifier=notifier)

        return make_path

    params = MeasureParams(n=10, warmup=0, settle_us=200, timeout_s=1.0, mode="open", interval_us=2000)
    raw = child_driver.measure(params, stalling(processes.pipe_path), "pipe-process")
    # At least 30 ms after its schedule -- or 28 ms when a late wake before it is credited to the
    # stalled notify and the stalled wake to the next one, 2 ms later (see test_open_loop.py).
    assert max(raw.samples_ns) >= 27_000_000
    late = sum(1 for s in raw.samples_ns if s >= 18_000_000)
    assert late + raw.lost >= 6
    assert 0 <= raw.info["coalesced"] <= raw.lost


def test_planted_delay_shows_up_in_open_loop() -> None:
    params = MeasureParams(n=10, warmup=1, settle_us=200, mode="open", interval_us=5000, planted_delay_us=2000)
    raw = ARMS["pipe-process"].measure(params)
    assert raw.samples_ns and min(raw.samples_ns) >= 2_000_000


# --- the driver's guards --------------------------------------------------------------


def test_a_wake_before_its_notify_is_counted_stale_never_negative() -> None:
    # The test's notifier writes a byte 20 ms before t0 as well: the child wakes from it and
    # reports a t1 older than t0.  That wake answered an older notify: lost, and counted.
    def make_path() -> ChildPath:
        path = processes.pipe_path()

        def notifier(pid: int) -> Notifier:
            notify = path.notifier(pid).notify
            assert notify is not None

            def early() -> None:
                notify()
                time.sleep(0.02)

            return Notifier(notify=notify, before=early)

        return dataclasses.replace(path, notifier=notifier)

    params = MeasureParams(n=5, warmup=1, settle_us=200, timeout_s=2.0)
    before = _state()
    raw = child_driver.measure(params, make_path, "pipe-process")
    assert _state() == before
    assert raw.samples_ns == ()
    assert raw.lost == 5
    assert raw.info["stale_wakes"] == 6


def test_declarations_check_their_shape() -> None:
    with pytest.raises(ValueError, match="exactly one of notify and bind"):
        Notifier()
    with pytest.raises(ValueError, match="exactly one of notify and bind"):
        Notifier(notify=lambda: None, bind=lambda: (lambda: None))
    with pytest.raises(ValueError, match="path_entry"):
        ChildWaiter(processes.sigwait_waiter)
    with pytest.raises(ValueError, match="not 'exec' or 'spawn'"):
        ChildWaiter(processes.sigwait_waiter, start="fork", path_entry=drivers.SRC_DIR)


def test_src_dir_is_where_the_child_imports_the_family_from() -> None:
    assert os.path.isfile(os.path.join(drivers.SRC_DIR, "wakelab", "core", "families", "processes.py"))


def test_a_child_factory_must_be_importable_by_name() -> None:
    def local_waiter() -> WaitSide:  # pragma: no cover - never reaches a child
        raise AssertionError

    waiter = ChildWaiter(local_waiter, path_entry=drivers.SRC_DIR)
    with pytest.raises(ValueError, match="module-level function"):
        child_driver._child_command(SMALL, waiter, 3)


# --- faults -----------------------------------------------------------------------


Act = Callable[[int], None]


def _sabotaged(name: str, at: int, act: Act) -> Callable[[], ChildPath]:
    """``name``'s path, with a notifier that does ``act(child_pid)`` on wake ``at`` (0-based).

    The act comes just before ``t0``, with the child blocked in its wait, and that wake's
    notify is then skipped (an ``mp-event`` set() would block for ever on a dead child's
    acknowledgement: see the driver's notes).
    """
    make = processes.CHILD_PATHS[name]

    def make_path() -> ChildPath:
        path = make()

        def notifier(pid: int) -> Notifier:
            inner = path.notifier(pid)
            bind = inner.bind
            fire = inner.notify if bind is None else (lambda: bind()())  # type: ignore[misc]
            state = {"wake": 0, "acted": False}

            def before() -> None:
                if state["wake"] == at:
                    act(pid)
                    state["acted"] = True
                state["wake"] += 1

            def notify() -> None:
                if not state["acted"]:
                    fire()  # type: ignore[misc]

            return Notifier(notify=notify, before=before)

        return dataclasses.replace(path, notifier=notifier)

    return make_path


@pytest.mark.parametrize("name", ["kill-sigwait-child", "pipe-process", "eventfd-fork", "mp-event", "mp-queue"])
def test_child_killed_mid_arm_raises_and_leaves_nothing(name: str) -> None:
    _available(name)
    pids: List[int] = []

    def kill_child(pid: int) -> None:
        pids.append(pid)
        os.kill(pid, signal.SIGKILL)

    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        child_driver.measure(SMALL, _sabotaged(name, 4, kill_child), name)
    message = str(caught.value)
    assert name in message
    assert "pid %d" % pids[0] in message
    assert "died during wake 5 of 22" in message
    assert "was killed by SIGKILL" in message
    _assert_reaped(pids[0])
    assert _state() == before


def test_hung_child_is_stopped_reaped_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drivers, "HANDSHAKE_SLACK_S", 0.2)
    monkeypatch.setattr(child_driver, "EXIT_GRACE_S", 0.2)
    pids: List[int] = []

    def stop_child(pid: int) -> None:
        pids.append(pid)
        os.kill(pid, signal.SIGSTOP)  # alive, but will never answer

    params = MeasureParams(n=5, warmup=0, settle_us=200, timeout_s=0.2)
    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        child_driver.measure(params, _sabotaged("pipe-process", 2, stop_child), "pipe-process")
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

    monkeypatch.setattr(child_driver, "_child_command", broken_command)
    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        processes.measure_kill_sigwait_child(SMALL)
    message = str(caught.value)
    assert "died while starting" in message
    assert "exited with status 3" in message
    assert "no such luck" in message
    assert _state() == before


@pytest.mark.parametrize("start", [child_driver.EXEC, child_driver.SPAWN])
def test_child_error_is_reported_with_its_traceback(start: str) -> None:
    # fd 1000 is not open in the child: the family's factory fails there, before hello.
    def make_path() -> ChildPath:
        waiter = ChildWaiter(processes.pipe_waiter, (1000,), start=start, path_entry=drivers.SRC_DIR)
        return ChildPath(waiter=waiter, notifier=lambda pid: Notifier(notify=lambda: None))

    before = _state()
    with pytest.raises(processes.WaiterChildError) as caught:
        child_driver.measure(SMALL, make_path, "test-arm")
    message = str(caught.value)
    assert "test-arm" in message
    assert "failed while starting" in message
    assert "child traceback" in message and "Bad file descriptor" in message
    assert _state() == before
