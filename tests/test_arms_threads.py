"""Tests for the thread-coordination arms (wakelab.core.families.threads) and their driver.

Real-timing tests check behaviour, never speed: sample counts, positivity, a
generous upper bound, lost-wake accounting, the planted delay, and that no
thread is left behind.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Iterator, List

import pytest

from conftest import registry_arms

from wakelab.core.families import threads
from wakelab.core.drivers import HarnessError, WakePath
from wakelab.core.drivers import thread as driver
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, SPINNING, Arm, MeasureParams

FAST = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
SHORT_TIMEOUT = MeasureParams(n=3, warmup=0, settle_us=200, timeout_s=0.05)
PLANTED = MeasureParams(n=5, warmup=1, settle_us=200, timeout_s=1.0, planted_delay_us=2000)

ARMS_BY_NAME = {arm.name: arm for arm in registry_arms(threads)}
EXPECTED_NAMES = {
    "event",
    "condition",
    "lock-handoff",
    "semaphore",
    "queue",
    "simplequeue",
    "future",
    "event-spin",
    "queue-spin",
}


@pytest.fixture(autouse=True)
def no_threads_left_behind() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    leftover = [t for t in threading.enumerate() if t not in before]
    assert leftover == []


def _nothing() -> None:
    return None


def _never_notifying(path: WakePath) -> WakePath:
    """The same waiter and reset, with a notify that does nothing."""
    return dataclasses.replace(path, notify=_nothing, bind=None, before=None, after=None)


# -- the catalogue --------------------------------------------------------------


def test_catalogue_names() -> None:
    # event-fifo is the event arm's wake path with its waiter under SCHED_FIFO 80: no path of its own.
    assert set(ARMS_BY_NAME) == EXPECTED_NAMES | {"event-fifo"}
    assert len(threads.ARMS) == len(EXPECTED_NAMES) + 1
    assert set(threads.WAKE_PATHS) == EXPECTED_NAMES


@pytest.mark.parametrize("arm", registry_arms(threads), ids=lambda a: a.name)
def test_arm_identity_is_documented(arm: Arm) -> None:
    assert arm.family == "threads"
    assert arm.kind == LATENCY
    assert arm.scope == CROSS_THREAD
    assert arm.waiter in (BLOCKED, SPINNING)
    for text in (arm.mechanism, arm.t0, arm.t1):
        assert text and "\n" not in text
    assert "perf_counter_ns()" in arm.t0 and "perf_counter_ns()" in arm.t1
    if arm.name.endswith("-fifo"):  # its waiter runs under SCHED_FIFO 80: root, or RLIMIT_RTPRIO, only
        assert arm.native == "native-condvar-fifo" and "SCHED_FIFO priority 80" in arm.mechanism
        return
    assert arm.unavailable_reason() is None
    if arm.waiter == BLOCKED:
        assert arm.native == "native-condvar"
    else:
        assert arm.name.endswith("-spin") and arm.native is None
        assert "time.sleep(0)" in arm.mechanism


def test_event_arm_unchanged() -> None:
    arm = ARMS_BY_NAME["event"]
    assert arm.measure.__name__ == "measure_event" and arm.driver == "thread"
    assert arm.waiter == BLOCKED
    assert arm.t0 == "main thread: perf_counter_ns() immediately before Event.set()"


# -- real runs ------------------------------------------------------------------


@pytest.mark.parametrize("arm", registry_arms(threads), ids=lambda a: a.name)
def test_arm_runs_for_real(arm: Arm) -> None:
    raw = arm.measure(FAST)
    assert raw.lost == 0
    assert raw.warmup_discarded == FAST.warmup
    assert len(raw.samples_ns) == FAST.n
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)


@pytest.mark.parametrize("arm", registry_arms(threads), ids=lambda a: a.name)
def test_planted_delay_is_seen(arm: Arm) -> None:
    raw = arm.measure(PLANTED)
    assert raw.lost == 0
    assert len(raw.samples_ns) == PLANTED.n
    assert all(s >= PLANTED.planted_delay_ns for s in raw.samples_ns)


# -- lost wakes -----------------------------------------------------------------


def test_event_lost_wakes_are_counted() -> None:
    event = threading.Event()
    raw = driver.measure(SHORT_TIMEOUT, WakePath(reset=event.clear, wait=event.wait, notify=_nothing))
    assert raw.samples_ns == ()
    assert raw.lost == SHORT_TIMEOUT.n


@pytest.mark.parametrize("name", sorted(threads.WAKE_PATHS))
def test_lost_wakes_are_counted(name: str) -> None:
    path = threads.WAKE_PATHS[name]()
    start = time.monotonic()
    raw = driver.measure(SHORT_TIMEOUT, _never_notifying(path))
    assert raw.samples_ns == ()
    assert raw.lost == SHORT_TIMEOUT.n
    # Every wait gave up on its own timeout; nothing hung.
    assert time.monotonic() - start < 5.0


@pytest.mark.parametrize("name", sorted(threads.WAKE_PATHS))
def test_reset_clears_a_late_notify(name: str) -> None:
    """A notify that lands after the waiter gave up is lost, and leaves nothing behind.

    Every other notify arrives after the waiter's timeout; if ``reset`` failed
    to clear what it left (a queued item, a released permit, a set flag, a
    finished Future, a free lock), the following wake would return before
    ``t0`` and give a negative sample.
    """
    path = threads.WAKE_PATHS[name]()
    params = MeasureParams(n=4, warmup=0, settle_us=200, timeout_s=0.03)
    calls: List[int] = []

    def maybe_late() -> None:
        calls.append(1)
        if len(calls) % 2:
            time.sleep(params.timeout_s * 2)  # before t0: the waiter has given up by the notify

    if path.bind is not None:
        bind = path.bind

        def late_bind() -> Callable[[], object]:
            maybe_late()
            return bind()

        late = dataclasses.replace(path, bind=late_bind)
    else:
        before = path.before

        def late_before() -> None:
            maybe_late()
            if before is not None:
                before()

        late = dataclasses.replace(path, before=late_before)
    raw = driver.measure(params, late)
    assert raw.lost == params.n // 2
    assert len(raw.samples_ns) == params.n // 2
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)


# -- the driver -----------------------------------------------------------------


def test_wake_path_takes_one_wait_and_one_notify() -> None:
    with pytest.raises(ValueError, match="wait"):
        WakePath(reset=_nothing, notify=_nothing)
    with pytest.raises(ValueError, match="wait"):
        WakePath(reset=_nothing, notify=_nothing, wait=lambda t: True, wait_stamped=lambda t: 1)
    with pytest.raises(ValueError, match="notify"):
        WakePath(reset=_nothing, wait=lambda t: True)
    with pytest.raises(ValueError, match="notify"):
        WakePath(reset=_nothing, wait=lambda t: True, notify=_nothing, bind=lambda: _nothing)


def test_driver_surfaces_waiter_errors() -> None:
    def broken_wait(timeout_s: float) -> int:
        raise ValueError("boom")

    with pytest.raises(HarnessError, match="boom"):
        driver.measure(FAST, WakePath(reset=_nothing, wait_stamped=broken_wait, notify=_nothing))
