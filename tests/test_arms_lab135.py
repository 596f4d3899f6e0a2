"""The three arms of the original lab, run for real: behaviour, never speed."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from wakelab.core.registry import get_arm
from wakelab.core.drivers import WakePath
from wakelab.core.drivers import thread as driver
from wakelab.core.model import RawLatency, RawRate

GENEROUS_BOUND_NS = 1_000_000_000  # 1 s: a sanity bound, not a speed target


@pytest.mark.parametrize("name", ["event", "sigusr1-self"])
def test_latency_arm_takes_every_sample(name, tiny_params, clean_state) -> None:
    raw = get_arm(name).measure(tiny_params)
    assert isinstance(raw, RawLatency)
    assert len(raw.samples_ns) == tiny_params.n
    assert raw.lost == 0
    assert raw.warmup_discarded == tiny_params.warmup
    assert all(0 < s < GENEROUS_BOUND_NS for s in raw.samples_ns)


def test_signal_install_rounds_and_baseline(tiny_params, clean_state) -> None:
    raw = get_arm("signal-install").measure(tiny_params)
    assert isinstance(raw, RawRate)
    assert raw.n_per_round == tiny_params.install_n
    assert len(raw.round_ns) == tiny_params.rounds
    assert len(raw.baseline_round_ns) == tiny_params.rounds
    assert all(t > 0 for t in raw.round_ns + raw.baseline_round_ns)


@pytest.mark.parametrize("name", ["event", "sigusr1-self"])
def test_planted_delay_shows_up_in_every_sample(name, tiny_params) -> None:
    params = dataclasses.replace(tiny_params, planted_delay_us=2000)
    raw = get_arm(name).measure(params)
    assert raw.lost == 0
    assert min(raw.samples_ns) >= 2_000_000


def test_handler_restored_after_signal_arms(tiny_params) -> None:
    def mine(signum, frame):
        pass

    old = signal.signal(signal.SIGUSR1, mine)
    try:
        get_arm("sigusr1-self").measure(tiny_params)
        assert signal.getsignal(signal.SIGUSR1) is mine
        get_arm("signal-install").measure(tiny_params)
        assert signal.getsignal(signal.SIGUSR1) is mine
    finally:
        signal.signal(signal.SIGUSR1, old)


def test_signal_arm_restores_mask_and_handler_when_it_raises(tiny_params, monkeypatch, clean_state) -> None:
    import wakelab.core.families.signals as signals_module

    calls = {"n": 0}
    real_kill = signals_module.os.kill

    def failing_kill(pid, sig):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("planted failure")
        real_kill(pid, sig)

    monkeypatch.setattr(signals_module.os, "kill", failing_kill)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])  # the arm unblocks it ...
    try:
        with pytest.raises(OSError, match="planted failure"):
            get_arm("sigusr1-self").measure(tiny_params)
        # ... and must put the mask back as it was.
        assert signal.SIGUSR1 in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR1])


def test_a_wake_that_never_comes_is_lost_not_hung(tiny_params) -> None:
    params = dataclasses.replace(tiny_params, n=3, warmup=1, timeout_s=0.05)
    import threading

    event = threading.Event()
    raw = driver.measure(params, WakePath(reset=event.clear, wait=event.wait, notify=lambda: None))
    assert raw.lost == 3
    assert raw.samples_ns == ()


def test_signal_arm_needs_main_thread() -> None:
    import threading

    reasons = []
    thread = threading.Thread(target=lambda: reasons.append(get_arm("sigusr1-self").unavailable_reason()))
    thread.start()
    thread.join()
    assert reasons == ["Python signal handlers can only be installed from the main thread"]
    assert get_arm("sigusr1-self").unavailable_reason() is None
