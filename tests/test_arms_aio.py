"""The asyncio arms run for real: sane samples, nothing lost, nothing leaked, signal state restored."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import FrozenSet, List, Optional

import pytest

from wakelab.core.families import aio
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, MeasureParams
from wakelab.core import sigstate

PARAMS = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
ARMS_BY_NAME = {arm.name: arm for arm in aio.ARMS}


def _open_fds() -> FrozenSet[str]:
    return frozenset(os.listdir("/proc/self/fd"))


def test_family_has_the_four_arms() -> None:
    assert set(ARMS_BY_NAME) == {
        "call-soon-threadsafe",
        "asyncio-event",
        "run-coroutine-threadsafe",
        "add-signal-handler",
    }
    for arm in aio.ARMS:
        assert arm.family == "asyncio"
        assert arm.kind == LATENCY
        assert arm.waiter == BLOCKED
        assert arm.scope == CROSS_THREAD
        assert arm.t0 and arm.t1 and arm.mechanism
        assert "\n" not in arm.t0 and "\n" not in arm.t1
    assert ARMS_BY_NAME["add-signal-handler"].needs_main_thread
    assert not ARMS_BY_NAME["call-soon-threadsafe"].needs_main_thread


@pytest.mark.parametrize("name", sorted(ARMS_BY_NAME))
def test_arm_runs_and_leaves_nothing_behind(name: str) -> None:
    arm = ARMS_BY_NAME[name]
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    signums = [signal.SIGUSR1] if hasattr(signal, "SIGUSR1") else []
    signals_before = sigstate.snapshot(signums)
    fds_before = _open_fds()
    threads_before = set(threading.enumerate())

    raw = arm.measure(PARAMS)

    assert raw.lost == 0
    assert raw.warmup_discarded == PARAMS.warmup
    assert len(raw.samples_ns) == PARAMS.n
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)
    assert _open_fds() == fds_before
    assert set(threading.enumerate()) == threads_before
    assert sigstate.snapshot(signums) == signals_before


def test_run_coroutine_threadsafe_reports_coroutine_start_inside_the_round_trip() -> None:
    raw = aio.measure_run_coroutine_threadsafe(PARAMS)
    assert raw.lost == 0
    starts = raw.components_ns["coroutine_start"]
    assert len(starts) == len(raw.samples_ns) == PARAMS.n
    for start, round_trip in zip(starts, raw.samples_ns):
        assert 0 < start < round_trip


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="needs SIGUSR1")
def test_add_signal_handler_restores_a_custom_handler_and_wakeup_fd() -> None:
    if aio.requires_add_signal_handler() is not None:
        pytest.skip(aio.requires_add_signal_handler())

    def custom(signum: int, frame: object) -> None:
        pass

    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    old_handler = signal.signal(signal.SIGUSR1, custom)
    old_wakeup_fd = signal.set_wakeup_fd(write_fd)
    try:
        before = sigstate.snapshot([signal.SIGUSR1])
        raw = aio.measure_add_signal_handler(MeasureParams(n=5, warmup=1, settle_us=200))
        assert raw.lost == 0
        assert sigstate.snapshot([signal.SIGUSR1]) == before
        assert signal.getsignal(signal.SIGUSR1) is custom
        assert signal.set_wakeup_fd(write_fd) == write_fd
    finally:
        signal.set_wakeup_fd(old_wakeup_fd)
        signal.signal(signal.SIGUSR1, old_handler)
        os.close(read_fd)
        os.close(write_fd)


def test_add_signal_handler_requires_the_main_thread() -> None:
    reasons: List[Optional[str]] = []
    thread = threading.Thread(target=lambda: reasons.append(aio.requires_add_signal_handler()))
    thread.start()
    thread.join(5.0)
    assert reasons and reasons[0] is not None
    assert ARMS_BY_NAME["add-signal-handler"].needs_main_thread


def test_planted_delay_is_visible_in_call_soon_threadsafe_samples() -> None:
    params = MeasureParams(n=20, warmup=2, settle_us=200, planted_delay_us=2000)
    raw = aio.measure_call_soon_threadsafe(params)
    assert raw.lost == 0
    assert len(raw.samples_ns) == params.n
    assert all(s >= 2_000_000 for s in raw.samples_ns)


@pytest.mark.parametrize(
    "measure", [aio.measure_call_soon_threadsafe, aio.measure_asyncio_event]
)
def test_undelivered_notify_is_counted_lost(measure: object) -> None:
    fds_before = _open_fds()
    threads_before = set(threading.enumerate())
    params = MeasureParams(n=3, warmup=1, settle_us=200, timeout_s=0.05)

    raw = measure(params, _deliver=False)  # type: ignore[operator]

    assert raw.lost == 3
    assert raw.samples_ns == ()
    assert raw.warmup_discarded == 1
    assert _open_fds() == fds_before
    assert set(threading.enumerate()) == threads_before


def test_loop_thread_closes_its_loop_and_cancels_leftover_tasks() -> None:
    threads_before = set(threading.enumerate())
    fds_before = _open_fds()
    with aio._open_loop_thread("wakelab-test-loop", 5.0) as loop:
        never = asyncio.run_coroutine_threadsafe(asyncio.sleep(3600), loop)
    assert loop.is_closed()
    assert never.cancelled()
    assert set(threading.enumerate()) == threads_before
    assert _open_fds() == fds_before
