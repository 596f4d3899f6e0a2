"""Placement in the asyncio, process and native arms: each side runs where it was told to.

The worker pins its main thread to the notifier's CPU before an arm starts;
these tests do the same, run each arm with a handful of wakes, and check the
CPUs the arm says each side last ran on (``notifier_cpu_seen`` and
``waiter_cpu_seen`` in the raw record's ``info``), and that the calling
thread's CPU mask is what it was.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Iterator, List, Optional

import pytest

from wakelab.core.families import aio, native, processes
from wakelab.core.drivers.thread import HarnessError
from wakelab.core.model import SELF, Arm, MeasureParams, Raw, RawLatency
from wakelab.core.drivers import loop as loop_driver

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")

ARMS: List[Arm] = list(aio.ARMS) + list(processes.ARMS) + list(native.ARMS)
TINY_N = 5
Pin = Callable[[int], None]


def _params(placement: str, notifier_cpu: Optional[int] = None, waiter_cpu: Optional[int] = None) -> MeasureParams:
    return MeasureParams(
        n=TINY_N,
        warmup=1,
        settle_us=200,
        timeout_s=2.0,
        install_n=200,
        rounds=1,
        warmup_rounds=0,
        placement=placement,
        notifier_cpu=notifier_cpu,
        waiter_cpu=waiter_cpu,
    )


def _allowed() -> List[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def _two_cpus() -> List[int]:
    allowed = _allowed()
    if len(allowed) < 2:
        pytest.skip("placement split needs two CPUs; this process may use only %s" % allowed)
    return allowed[:2]


@pytest.fixture
def main_pinned_to() -> Iterator[Pin]:
    """``pin(cpu)`` pins the calling thread, as the worker does; its mask is restored afterwards."""
    saved = os.sched_getaffinity(0)

    def pin(cpu: int) -> None:
        os.sched_setaffinity(0, {cpu})

    try:
        yield pin
    finally:
        os.sched_setaffinity(0, saved)


def _measure(arm: Arm, params: MeasureParams) -> Raw:
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return arm.measure(params)


def _check_sides(arm: Arm, raw: Raw, notifier: Optional[int], waiter: Optional[int]) -> None:
    info = raw.info
    assert info["notifier_cpu_seen"] == notifier
    if arm.scope == SELF:
        assert "waiter_cpu_seen" not in info
    else:
        assert info["waiter_cpu_seen"] == waiter
    if isinstance(raw, RawLatency):
        assert raw.lost == 0
        assert len(raw.samples_ns) == TINY_N
        assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)


@pytest.mark.parametrize("arm", ARMS, ids=lambda a: a.name)
def test_split_runs_notifier_and_waiter_on_their_own_cpus(arm: Arm, main_pinned_to: Pin) -> None:
    notifier_cpu, waiter_cpu = _two_cpus()
    main_pinned_to(notifier_cpu)
    params = _params("split", notifier_cpu, waiter_cpu)
    raw = _measure(arm, params)
    _check_sides(arm, raw, notifier_cpu, waiter_cpu)
    assert os.sched_getaffinity(0) == {notifier_cpu}
    if arm.family == "processes":
        assert raw.info["child_cpus"] == [waiter_cpu]


@pytest.mark.parametrize("arm", ARMS, ids=lambda a: a.name)
def test_same_runs_both_sides_on_one_cpu(arm: Arm, main_pinned_to: Pin) -> None:
    cpu = _allowed()[0]
    main_pinned_to(cpu)
    params = _params("same", cpu, cpu)
    raw = _measure(arm, params)
    _check_sides(arm, raw, cpu, cpu)
    assert os.sched_getaffinity(0) == {cpu}
    if arm.family == "processes":
        assert raw.info["child_cpus"] == [cpu]


@pytest.mark.parametrize("arm", ARMS, ids=lambda a: a.name)
def test_any_pins_nothing(arm: Arm) -> None:
    before = os.sched_getaffinity(0)
    raw = _measure(arm, _params("any"))
    assert os.sched_getaffinity(0) == before
    info = raw.info
    allowed = set(before)
    assert info["notifier_cpu_seen"] in allowed
    if arm.scope != SELF:
        assert info["waiter_cpu_seen"] in allowed
    if arm.family == "processes":
        assert info["child_cpus"] == sorted(before)
    if isinstance(raw, RawLatency):
        assert raw.lost == 0


def test_add_signal_handler_restores_the_main_threads_mask_when_the_arm_fails(
    main_pinned_to: Pin, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The main thread is this arm's waiter: it moves to the waiter's CPU, and a
    # failure while it is there must still move it back.
    reason = aio.requires_add_signal_handler()
    if reason is not None:
        pytest.skip(reason)
    notifier_cpu, waiter_cpu = _two_cpus()
    main_pinned_to(notifier_cpu)
    masks: List[object] = []
    real_current_cpu = loop_driver.current_cpu

    def failing_in_main_thread() -> Optional[int]:
        if threading.current_thread() is threading.main_thread():
            masks.append(os.sched_getaffinity(0))
            raise RuntimeError("planted failure")
        return real_current_cpu()

    monkeypatch.setattr(loop_driver, "current_cpu", failing_in_main_thread)
    params = _params("split", notifier_cpu, waiter_cpu)
    with pytest.raises(RuntimeError, match="planted failure"):
        aio.measure_add_signal_handler(params)
    assert masks == [{waiter_cpu}]
    assert os.sched_getaffinity(0) == {notifier_cpu}


# --- a CPU that cannot be used is a clear error, and leaves nothing behind ----------

# No machine this suite runs on has a CPU 1023 (and CPU_SETSIZE is 1024).
UNUSABLE_CPU = 1023


def _unusable_split(notifier_cpu: int) -> MeasureParams:
    if (os.cpu_count() or 1) > UNUSABLE_CPU:
        pytest.skip("this machine may have a CPU %d" % UNUSABLE_CPU)
    return _params("split", notifier_cpu, UNUSABLE_CPU)


def test_loop_thread_that_cannot_be_pinned_is_reported(main_pinned_to: Pin) -> None:
    cpu = _allowed()[0]
    main_pinned_to(cpu)
    threads = set(threading.enumerate())
    with pytest.raises(HarnessError, match="could not take the waiter's CPU"):
        aio.measure_call_soon_threadsafe(_unusable_split(cpu))
    assert set(threading.enumerate()) == threads
    assert os.sched_getaffinity(0) == {cpu}


@pytest.mark.parametrize("name", ["pipe-process", "mp-event"])
def test_waiter_child_that_cannot_be_pinned_is_reported(name: str, main_pinned_to: Pin) -> None:
    arm = {a.name: a for a in processes.ARMS}[name]
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    cpu = _allowed()[0]
    main_pinned_to(cpu)
    with pytest.raises(processes.WaiterChildError, match="failed while starting") as caught:
        arm.measure(_unusable_split(cpu))
    assert "sched_setaffinity" in str(caught.value)
    assert os.sched_getaffinity(0) == {cpu}
