"""Tests for wakelab.core.families.signals: real runs with small n, state restored, planted delay, failures."""

from __future__ import annotations

import os
import signal
import threading
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import registry_arms

from wakelab.core.families import signals
from wakelab.core.drivers.thread import HarnessError
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, Arm, MeasureParams, RawLatency
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
    expected_native = "native-sigwait"  # every new arm is a blocked cross-thread wake, like the C sigwait floor
    assert arm.native == expected_native


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
    late_key = "lost_or_foreign" if name == "wakeup-fd-select" else "late_signals_drained"
    assert raw.info[late_key] == 3


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


@pytest.mark.parametrize("name", NEW_ARMS)
def test_state_restored_when_the_arm_raises(
    name: str, monkeypatch: pytest.MonkeyPatch, unchanged: None
) -> None:
    class ExplodingCollector(signals.LatencyCollector):
        added = 0

        def add(self, latency_ns: Optional[int], **components: int) -> None:
            ExplodingCollector.added += 1
            if ExplodingCollector.added == 5:
                raise _Boom("planted failure mid-arm")
            super().add(latency_ns, **components)

    monkeypatch.setattr(signals, "LatencyCollector", ExplodingCollector)
    with pytest.raises(_Boom):
        ARMS[name].measure(SMALL)


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
        with pytest.raises(HarnessError, match="could not take the"):
            ARMS[name].measure(params)
        assert _process_state() == before
