"""Tests for wakelab.core.families.signals: real runs with small n, state restored, planted delay, failures."""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import statistics
import threading
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import registry_arms

from wakelab.core.drivers import HarnessError, WakePath
from wakelab.core.drivers import main as main_driver
from wakelab.core.families import signals
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, Arm, MeasureParams, RawLatency
from wakelab.core.registry import all_arms
from wakelab.core.sigstate import SignalState, snapshot

ARMS: Dict[str, Arm] = {arm.name: arm for arm in registry_arms(signals)}
NEW_ARMS = ["sigwait-thread-to-main", "pause-handler", "wakeup-fd-select", "pthread-kill-sigwait"]
# Arms whose waiter has a timeout of its own, so a settle longer than it loses every wake.
TIMED_WAIT_ARMS = ["sigwait-thread-to-main", "wakeup-fd-select", "pthread-kill-sigwait"]

SMALL = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
ONE_SECOND_NS = 1_000_000_000


def _affinity() -> Optional[frozenset]:
    return frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def _process_state() -> Tuple[SignalState, List[str], List[str], frozenset, Optional[frozenset]]:
    return (
        snapshot([signal.SIGUSR1]),
        sorted(os.listdir("/proc/self/fd")),
        sorted(t.name for t in threading.enumerate()),
        frozenset(signal.sigpending()),
        _affinity(),
    )


@pytest.fixture
def unchanged() -> Iterator[None]:
    """Fails the test if handlers, mask, wakeup fd, fds, threads, pending signals or CPU mask changed."""
    before = _process_state()
    yield
    assert _process_state() == before


def _run(name: str, params: MeasureParams = SMALL) -> RawLatency:
    arm = ARMS[name]
    assert arm.unavailable_reason() is None
    raw = arm.measure(params)
    assert isinstance(raw, RawLatency)
    return raw


def test_original_arms_are_kept() -> None:
    assert ARMS["sigusr1-self"].measure is signals.measure_sigusr1_self
    assert ARMS["signal-install"].measure is signals.measure_signal_install
    assert list(ARMS)[:2] == ["sigusr1-self", "signal-install"]


@pytest.mark.parametrize("name", NEW_ARMS)
def test_new_arm_identity(name: str) -> None:
    arm = ARMS[name]
    assert arm.family == "signals"
    assert arm.kind == LATENCY
    assert arm.waiter == BLOCKED
    assert arm.scope == CROSS_THREAD
    assert arm.needs_main_thread
    assert arm.t0 and arm.t1 and arm.mechanism
    # Which C floor each arm divides by is core.families.native.FLOORS' business (tests/test_native_pairs.py);
    # here: each has one, and it is a blocked cross-thread wake in C too.
    native = {a.name: a for a in all_arms() if a.family == "native"}
    assert arm.native in native
    assert native[arm.native].waiter == BLOCKED and native[arm.native].scope == CROSS_THREAD


def test_every_latency_arm_runs_on_a_driver() -> None:
    drivers = {name: arm.driver for name, arm in ARMS.items() if arm.kind == LATENCY}
    assert drivers == {
        "sigusr1-self": "main",
        "sigwait-thread-to-main": "main",
        "pause-handler": "main",
        "wakeup-fd-select": "main",
        "pthread-kill-sigwait": "thread",
    }
    assert all(ARMS[name].open_loop for name in drivers)
    assert ARMS["signal-install"].driver == ""


def test_blocked_counterparts_say_so() -> None:
    for name in ("sigwait-thread-to-main", "pause-handler"):
        assert "blocked counterpart of sigusr1-self" in ARMS[name].mechanism
    assert "sigtimedwait" in ARMS["sigwait-thread-to-main"].mechanism
    assert "timeout_s" in ARMS["sigwait-thread-to-main"].mechanism


def test_requires_refuses_outside_main_thread() -> None:
    reasons: List[object] = []
    thread = threading.Thread(target=lambda: reasons.extend(ARMS[n].unavailable_reason() for n in NEW_ARMS))
    thread.start()
    thread.join()
    assert all(isinstance(r, str) and "main thread" in r for r in reasons)


@pytest.mark.parametrize("name", NEW_ARMS)
def test_new_arm_runs_and_restores(name: str, unchanged: None) -> None:
    raw = _run(name)
    assert raw.lost == 0
    assert raw.warmup_discarded == SMALL.warmup
    assert len(raw.samples_ns) == SMALL.n
    assert all(0 < s < ONE_SECOND_NS for s in raw.samples_ns)
    assert raw.info["settle_us"] == SMALL.settle_us


def test_wakeup_fd_select_reports_delivery_and_handler(unchanged: None) -> None:
    raw = _run("wakeup-fd-select")
    assert set(raw.components_ns) == {"delivery", "handler"}
    assert raw.components_ns["delivery"] == raw.samples_ns
    assert len(raw.components_ns["handler"]) == len(raw.samples_ns)
    # No ordering between the two: it depends on which thread took the signal.
    assert all(0 < h < ONE_SECOND_NS for h in raw.components_ns["handler"])


def test_pause_handler_reports_handler_and_pause_return(unchanged: None) -> None:
    raw = _run("pause-handler")
    assert set(raw.components_ns) == {"handler", "pause_return"}
    assert raw.components_ns["handler"] == raw.samples_ns
    # By construction: CPython runs the handler inside pause(), before it returns.
    pairs = zip(raw.components_ns["handler"], raw.components_ns["pause_return"])
    assert all(h <= r < ONE_SECOND_NS for h, r in pairs)
    assert raw.info["watchdog_rescues"] == 0


def test_wakeup_fd_restores_a_previous_wakeup_fd(unchanged: None) -> None:
    rfd, wfd = os.pipe()
    try:
        os.set_blocking(wfd, False)
        old = signal.set_wakeup_fd(wfd)
        try:
            raw = _run("wakeup-fd-select", MeasureParams(n=5, warmup=1, settle_us=200))
            assert raw.lost == 0
            assert signal.set_wakeup_fd(wfd) == wfd
        finally:
            signal.set_wakeup_fd(old)
    finally:
        os.close(rfd)
        os.close(wfd)


def test_restores_a_custom_handler_and_a_blocked_mask(unchanged: None) -> None:
    def mine(signum: int, frame: object) -> None:
        pass

    old_handler = signal.signal(signal.SIGUSR1, mine)
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    try:
        for name in NEW_ARMS:
            assert _run(name, MeasureParams(n=3, warmup=0, settle_us=200)).lost == 0
            assert signal.getsignal(signal.SIGUSR1) is mine
            assert signal.SIGUSR1 in signal.pthread_sigmask(signal.SIG_BLOCK, [])
            assert signal.SIGUSR1 not in signal.sigpending()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        signal.signal(signal.SIGUSR1, old_handler)


@pytest.mark.parametrize("name", NEW_ARMS)
def test_planted_delay_shows_in_every_sample(name: str, unchanged: None) -> None:
    raw = _run(name, MeasureParams(n=10, warmup=1, settle_us=200, planted_delay_us=2000))
    assert raw.lost == 0
    assert len(raw.samples_ns) == 10
    assert all(2_000_000 <= s < ONE_SECOND_NS for s in raw.samples_ns)


@pytest.mark.parametrize("name", TIMED_WAIT_ARMS)
def test_late_wakes_are_lost_and_drained(name: str, unchanged: None) -> None:
    # Every notify comes after the waiter's timeout: each wake is lost, the
    # late signal is drained, and nothing is left pending afterwards.
    raw = _run(name, MeasureParams(n=3, warmup=0, settle_us=60_000, timeout_s=0.005))
    assert raw.lost == 3
    assert raw.samples_ns == ()
    assert raw.info["stale_wakes"] == 0
    if name == "pthread-kill-sigwait":
        # The worker drains a late signal before its next wait; the last one is pending on the
        # worker thread when the thread driver ends it, and ends with it (no handler can see it).
        assert raw.info["late_signals_drained"] == 2
    else:
        assert raw.info["late_signals_drained"] == 3
    if name == "wakeup-fd-select":
        assert raw.info["lost_or_foreign"] == 3


@pytest.mark.timeout(30)
def test_pause_race_is_rescued_by_the_watchdog(
    monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    # The notify is swallowed before the main thread enters pause(), as when
    # the signal comes just before pause() is called: without the watchdog
    # the main thread would sleep forever.
    real_pause = signal.pause

    def pause_after_the_signal_is_gone() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
        try:
            assert signal.sigtimedwait([signal.SIGUSR1], 5.0) is not None
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])
        real_pause()

    monkeypatch.setattr(signal, "pause", pause_after_the_signal_is_gone)
    raw = _run("pause-handler", MeasureParams(n=3, warmup=0, settle_us=200, timeout_s=0.02))
    assert raw.lost == 3
    assert raw.info["watchdog_rescues"] == 3


class _Boom(RuntimeError):
    pass


# The WakePath factory of each arm (tests wrap it to plant failures in its moves).
PATH_FACTORIES = {
    "sigusr1-self": "self_signal_path",
    "sigwait-thread-to-main": "sigwait_main_path",
    "pause-handler": "pause_path",
    "wakeup-fd-select": "wakeup_fd_path",
    "pthread-kill-sigwait": "sigwait_thread_path",
}


def _plant_in_wait(monkeypatch: pytest.MonkeyPatch, name: str, wrap: Callable[[Callable[[float], Optional[int]]], Callable[[float], Optional[int]]]) -> None:
    """Make arm ``name``'s wait ``wrap(its real stamped wait)``."""
    factory = getattr(signals, PATH_FACTORIES[name])

    def planted(*args: object) -> object:
        made = factory(*args)
        path = made[0] if isinstance(made, tuple) else made
        changed = dataclasses.replace(path, wait=None, wait_stamped=wrap(path.stamped()))
        return (changed,) + made[1:] if isinstance(made, tuple) else changed

    monkeypatch.setattr(signals, PATH_FACTORIES[name], planted)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["sigusr1-self"] + NEW_ARMS)
def test_state_restored_when_the_arm_raises(
    name: str, monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    calls = [0]

    def exploding(wait: Callable[[float], Optional[int]]) -> Callable[[float], Optional[int]]:
        def fifth_wait_explodes(timeout_s: float) -> Optional[int]:
            calls[0] += 1
            if calls[0] == 5:
                raise _Boom("planted failure mid-arm")
            return wait(timeout_s)

        return fifth_wait_explodes

    _plant_in_wait(monkeypatch, name, exploding)
    # The main thread's wait raises as it is; the thread driver reports its waiter's failure.
    with pytest.raises((_Boom, HarnessError), match="planted failure mid-arm"):
        ARMS[name].measure(SMALL)
    assert calls[0] == 5


@pytest.mark.timeout(30)  # pause-handler: the notifier must end the main thread's pause() although it failed
@pytest.mark.parametrize("name", ["sigwait-thread-to-main", "pause-handler"])
def test_notifier_failure_surfaces_and_restores(
    name: str, monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    def broken_pthread_kill(thread_id: int, signum: int) -> None:
        raise OSError("planted pthread_kill failure")

    monkeypatch.setattr(signal, "pthread_kill", broken_pthread_kill)
    with pytest.raises(HarnessError, match="planted pthread_kill failure"):
        ARMS[name].measure(MeasureParams(n=3, warmup=0, settle_us=200, timeout_s=0.02))


# --- placement: each side runs where it was told to --------------------------------

needs_two_cpus = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity") or len(_affinity() or ()) < 2,
    reason="placement split needs sched_setaffinity and two CPUs",
)


@pytest.fixture
def main_pinned_to() -> Iterator[object]:
    """``pin(cpu)`` pins the main thread as the worker does; its mask is restored afterwards."""
    saved = os.sched_getaffinity(0)

    def pin(cpu: int) -> None:
        os.sched_setaffinity(0, {cpu})

    try:
        yield pin
    finally:
        os.sched_setaffinity(0, saved)


@needs_two_cpus
@pytest.mark.parametrize("name", NEW_ARMS)
def test_split_runs_notifier_and_waiter_on_their_own_cpus(name: str, main_pinned_to: object) -> None:
    notifier_cpu, waiter_cpu = sorted(os.sched_getaffinity(0))[:2]
    main_pinned_to(notifier_cpu)  # type: ignore[operator]
    params = MeasureParams(
        n=5, warmup=1, settle_us=200, placement="split", notifier_cpu=notifier_cpu, waiter_cpu=waiter_cpu
    )
    raw = _run(name, params)
    assert raw.lost == 0
    assert raw.info["notifier_cpu_seen"] == notifier_cpu
    assert raw.info["waiter_cpu_seen"] == waiter_cpu
    # The main thread, the waiter in three of these arms, is back on the notifier's CPU.
    assert os.sched_getaffinity(0) == {notifier_cpu}


@pytest.mark.parametrize("name", NEW_ARMS)
def test_any_placement_reports_where_both_sides_ran(name: str, unchanged: None) -> None:
    raw = _run(name, MeasureParams(n=3, warmup=0, settle_us=200))
    allowed = _affinity()
    if allowed is not None:
        assert raw.info["notifier_cpu_seen"] in allowed
        assert raw.info["waiter_cpu_seen"] in allowed


@needs_two_cpus
@pytest.mark.parametrize("name", NEW_ARMS)
def test_a_cpu_that_cannot_be_used_is_a_clear_error(name: str, main_pinned_to: object) -> None:
    cpu = sorted(os.sched_getaffinity(0))[0]
    if (os.cpu_count() or 1) > 1023:
        pytest.skip("this machine may have a CPU 1023")
    main_pinned_to(cpu)  # type: ignore[operator]
    before = _process_state()
    # CPU 1023 as the waiter's (main thread or worker thread) and, where the arm
    # starts the notifier thread itself, as the notifier's.
    cases = [(cpu, 1023)] if name == "pthread-kill-sigwait" else [(cpu, 1023), (1023, cpu)]
    for notifier_cpu, waiter_cpu in cases:
        params = MeasureParams(
            n=3, warmup=0, settle_us=200, placement="split", notifier_cpu=notifier_cpu, waiter_cpu=waiter_cpu
        )
        # The thread driver (pthread-kill-sigwait) words it "waiter thread did not announce itself: OSError(...)".
        with pytest.raises(HarnessError, match="could not take the|waiter thread did not announce itself: OSError"):
            ARMS[name].measure(params)
        assert _process_state() == before


# --- the drivers: a notifier that dies, stale wakes, open loop ------------------------

MAIN_CROSS_THREAD = ["sigwait-thread-to-main", "pause-handler", "wakeup-fd-select"]


@pytest.mark.timeout(30)  # without the rescue, pause-handler's main thread would sleep in pause() forever
@pytest.mark.parametrize("name", MAIN_CROSS_THREAD)
def test_a_notifier_that_dies_before_its_notify_does_not_hang_the_main_thread(
    name: str, monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    factory = getattr(signals, PATH_FACTORIES[name])

    def dies_before_notify() -> None:
        raise _Boom("planted notifier death")

    def planted(*args: object) -> object:
        made = factory(*args)
        path = made[0] if isinstance(made, tuple) else made
        changed = dataclasses.replace(path, before=dies_before_notify)
        return (changed,) + made[1:] if isinstance(made, tuple) else changed

    monkeypatch.setattr(signals, PATH_FACTORIES[name], planted)
    with pytest.raises(HarnessError, match="planted notifier death"):
        ARMS[name].measure(MeasureParams(n=3, warmup=0, settle_us=200, timeout_s=0.05))


def test_sigusr1_self_counts_a_stale_stamp_lost_never_negative(monkeypatch: pytest.MonkeyPatch, unchanged: None) -> None:
    # As if a late handler ran between reset and a notify that then never lands: the spin sees
    # a stamp older than t0.
    factory = signals.self_signal_path

    def planted(seen: List[int]) -> WakePath:
        path = factory(seen)

        def reset_then_stray_stamp() -> None:
            path.reset()
            seen[0] = signals.now_ns()

        return dataclasses.replace(path, reset=reset_then_stray_stamp, notify=lambda: None)

    monkeypatch.setattr(signals, "self_signal_path", planted)
    params = MeasureParams(n=5, warmup=1, timeout_s=0.5)
    raw = ARMS["sigusr1-self"].measure(params)
    assert raw.samples_ns == ()
    assert raw.lost == params.n
    assert raw.info["stale_wakes"] == params.total_wakes


def test_main_driver_counts_a_wake_before_its_notify_stale(unchanged: None) -> None:
    # A wait that returns at once, during the settle: its t1 precedes the notify's t0.
    path = WakePath(reset=lambda: None, wait_stamped=lambda timeout_s: signals.now_ns(), notify=lambda: None)
    params = MeasureParams(n=4, warmup=1, settle_us=2000, timeout_s=0.5)
    raw = main_driver.measure(params, path)
    assert raw.samples_ns == ()
    assert raw.lost == params.n
    assert raw.info["stale_wakes"] == params.total_wakes


def test_main_driver_counts_a_wake_with_an_early_component_foreign(unchanged: None) -> None:
    event = threading.Event()
    path = WakePath(reset=event.clear, wait=event.wait, notify=event.set)
    params = MeasureParams(n=4, warmup=1, settle_us=200, timeout_s=0.5)
    raw = main_driver.measure(params, path, components=lambda: {"part": 0})
    assert raw.lost == params.n and raw.info["foreign_wakes"] == params.total_wakes
    raw = main_driver.measure(params, path, components=lambda: {"part": time.perf_counter_ns()})
    assert raw.lost == 0 and len(raw.components_ns["part"]) == params.n


def test_main_driver_refuses_other_threads() -> None:
    errors: List[BaseException] = []
    event = threading.Event()
    path = WakePath(reset=event.clear, wait=event.wait, notify=event.set)

    def run() -> None:
        try:
            main_driver.measure(MeasureParams(n=1, warmup=0), path)
        except HarnessError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "main thread" in str(errors[0])


OPEN = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0, mode="open", interval_us=2000)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["sigusr1-self"] + NEW_ARMS)
def test_open_loop_takes_every_wake_from_the_schedule(name: str, unchanged: None) -> None:
    raw = _run(name, OPEN)
    assert raw.info["mode"] == "open"
    assert raw.info["interval_us"] == OPEN.interval_us
    assert len(raw.samples_ns) + raw.lost == OPEN.n
    assert raw.lost <= raw.info["coalesced"]  # nothing times out; a merged notify is the only loss
    assert all(0 < s < ONE_SECOND_NS for s in raw.samples_ns)
    assert len(raw.components_ns["notify_late"]) == len(raw.samples_ns)
    assert all(late >= 0 for late in raw.components_ns["notify_late"])


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["sigusr1-self"] + NEW_ARMS)
def test_open_loop_planted_delay_shows(name: str, unchanged: None) -> None:
    params = dataclasses.replace(OPEN, n=8, interval_us=5000, planted_delay_us=2000)
    raw = _run(name, params)
    # No notify went unanswered (a wake late enough to swallow the next notify is a merge, not a loss
    # to a timeout), and every wake shows the delay.
    assert raw.lost <= raw.info["coalesced"]
    assert raw.samples_ns and min(raw.samples_ns) >= 2_000_000


def stalling_open_loop() -> Tuple[MeasureParams, WakePath]:
    """An open loop that notifies every 2 ms, and an Event wake path whose waiter stalls 30 ms after its fifth wake
    (the driver's ``measure(params, path)`` arguments): the notifies meanwhile set an Event that is
    already set, and the one wake after the stall answers about 15 of them (counted coalesced)."""
    event = threading.Event()
    wakes = [0]

    def reset_with_a_stall() -> None:
        event.clear()
        wakes[0] += 1
        if wakes[0] == 5:
            time.sleep(0.03)

    path = WakePath(reset=reset_with_a_stall, wait=event.wait, notify=event.set)
    return MeasureParams(n=30, warmup=0, settle_us=200, timeout_s=1.0, mode="open", interval_us=2000), path


def test_main_driver_open_loop_counts_merged_notifies_as_coalesced(unchanged: None) -> None:
    """A main thread that stalls after a wake misses the notifies meanwhile: one wake answers them."""
    raw = main_driver.measure(*stalling_open_loop())
    assert raw.info["coalesced"] >= 5
    assert raw.info["coalesced"] <= raw.lost
    assert max(raw.samples_ns) >= 20_000_000  # the wake after the stall is measured from its schedule


@pytest.mark.timeout(30)
def test_pause_open_loop_ends_although_pause_has_no_timeout(unchanged: None) -> None:
    # The notifier interrupts the last pause() when the schedule is over; that wake is not counted.
    raw = _run("pause-handler", dataclasses.replace(OPEN, n=5))
    assert len(raw.samples_ns) + raw.lost == 5
    assert raw.lost <= raw.info["coalesced"]


def test_pthread_kill_sigwait_binds_the_notify_to_the_waiter_thread(unchanged: None) -> None:
    late = [0]
    path = signals.sigwait_thread_path(SMALL, late)
    assert path.notify is None and path.bind is not None
    targets: List[int] = []
    real = signals.sigwait_thread_path

    def recording(params: MeasureParams, late: List[int]) -> WakePath:
        made = real(params, late)
        bind = made.bind
        assert bind is not None

        def recording_bind() -> Callable[[], object]:
            fire = bind()
            assert isinstance(fire, functools.partial)
            targets.append(fire.args[0])
            return fire

        return dataclasses.replace(made, bind=recording_bind)

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(signals, "sigwait_thread_path", recording)
        raw = _run("pthread-kill-sigwait", MeasureParams(n=4, warmup=0, settle_us=200))
    finally:
        mp.undo()
    assert raw.lost == 0
    assert len(set(targets)) == 1 and targets[0] != threading.get_ident()


# --- against independent probes: a constant extra in the window cannot hide -------------
#
# The paired tests of test_timed_window.py see a delay planted before or after the notify, and a
# settle inside the window; a *constant* extra in the driver's window (a stray sleep or spin while
# the notifier holds the GIL) shifts planted and unplanted runs alike.  So two arms also run side by
# side with minimal loops written here, sharing no code with the drivers.  The bound is loose (a few
# times the probe plus a few hundred µs), yet a millisecond anywhere in the window fails it.

PROBE_N = 40
PROBE_SETTLE_S = 0.001


def _probe_sigwait_to_main_median_us(n: int = PROBE_N) -> float:
    """A helper thread's pthread_kill ending the main thread's sigtimedwait, timed with nothing else."""
    signum = signal.SIGUSR1
    main_ident = threading.get_ident()
    ready, done, back = threading.Event(), threading.Event(), threading.Event()
    t0s: List[int] = []
    stop = [False]

    def notifier() -> None:
        while True:
            ready.wait(2.0)
            ready.clear()
            if stop[0]:
                return
            time.sleep(PROBE_SETTLE_S)
            t0 = time.perf_counter_ns()
            signal.pthread_kill(main_ident, signum)
            done.wait(2.0)
            done.clear()
            t0s.append(t0)
            back.set()

    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signum])  # the notifier inherits it
    thread = threading.Thread(target=notifier, daemon=True)
    samples = []
    try:
        thread.start()
        for _ in range(n):
            ready.set()
            got = signal.sigtimedwait([signum], 2.0)
            t1 = time.perf_counter_ns()
            done.set()
            assert back.wait(5.0) and got is not None
            back.clear()
            samples.append(t1 - t0s[-1])
    finally:
        stop[0] = True
        ready.set()
        thread.join(5.0)
        while signum in signal.sigpending():
            signal.sigtimedwait([signum], 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return statistics.median(samples) / 1000.0


def _probe_self_signal_median_us(n: int = PROBE_N) -> float:
    """os.kill(getpid(), SIGUSR1) to the handler's stamp, the main thread spinning, with nothing else."""
    seen = [0]

    def handler(signum: int, frame: object) -> None:
        seen[0] = time.perf_counter_ns()

    old = signal.signal(signal.SIGUSR1, handler)
    samples = []
    try:
        for _ in range(n):
            seen[0] = 0
            t0 = time.perf_counter_ns()
            os.kill(os.getpid(), signal.SIGUSR1)
            while not seen[0]:
                pass
            samples.append(seen[0] - t0)
    finally:
        signal.signal(signal.SIGUSR1, old)
    return statistics.median(samples) / 1000.0


@pytest.mark.parametrize(
    "name, probe",
    [("sigwait-thread-to-main", _probe_sigwait_to_main_median_us), ("sigusr1-self", _probe_self_signal_median_us)],
)
def test_arm_agrees_with_an_independent_probe(name: str, probe: Callable[[], float], unchanged: None) -> None:
    params = MeasureParams(n=PROBE_N, warmup=3, settle_us=int(PROBE_SETTLE_S * 1e6), timeout_s=2.0)
    probes, ours = [], []
    for _ in range(3):  # interleaved, so a drift hits both alike
        probes.append(probe())
        ours.append(statistics.median(_run(name, params).samples_ns) / 1000.0)
    assert min(ours) <= 3 * min(probes) + 300, "%s: wakelab median %.1f µs against the probe's %.1f µs" % (
        name, min(ours), min(probes))


def test_unwrapped_install_times_the_c_function_and_restores_the_handler(monkeypatch) -> None:
    import _signal

    from wakelab.core.model import RawRate
    from wakelab.core.registry import get_arm

    arm = get_arm("signal-install-unwrapped")
    assert arm.unavailable_reason() is None and arm.kind == "rate" and arm.native == "native-sigaction-install"
    calls = {"inner": 0, "wrapper": 0}
    inner, wrapper = _signal.signal, signal.signal

    def counted_inner(*a):  # type: ignore[no-untyped-def]
        calls["inner"] += 1
        return inner(*a)

    def counted_wrapper(*a):  # type: ignore[no-untyped-def]
        calls["wrapper"] += 1
        return wrapper(*a)

    before = signal.getsignal(signal.SIGUSR1)
    monkeypatch.setattr(_signal, "signal", counted_inner)
    monkeypatch.setattr(signal, "signal", counted_wrapper)
    raw = arm.measure(MeasureParams(install_n=50, rounds=2, warmup_rounds=1))
    assert isinstance(raw, RawRate) and len(raw.round_ns) == 2
    assert calls["inner"] >= 150 and calls["wrapper"] <= 2  # the wrapper only to restore the handler
    assert signal.getsignal(signal.SIGUSR1) is before
