"""The asyncio arms (wakelab.core.families.aio) and their loop driver (wakelab.core.drivers.loop).

Real-timing tests check behaviour, never speed: sane samples, nothing lost,
lost and stale wakes counted, a late notify kept out of the next wake,
nothing leaked, signal state restored.  "Never notifies" is obtained by
replacing a path's notify with one that does nothing, never by a flag in the
driver.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import os
import signal
import threading
import time
from typing import Any, Callable, Deque, FrozenSet, Iterator, List, Optional

import pytest

from wakelab.core import sigstate
from wakelab.core.drivers import HarnessError
from wakelab.core.drivers import loop as driver
from wakelab.core.drivers.loop import LoopPath, Woke
from wakelab.core.families import aio
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, MeasureParams, RawLatency, now_ns

PARAMS = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
SHORT_TIMEOUT = MeasureParams(n=3, warmup=1, settle_us=200, timeout_s=0.05)
ARMS_BY_NAME = {arm.name: arm for arm in aio.ARMS}
MakePath = Callable[[asyncio.AbstractEventLoop], LoopPath]


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    threads, fds = set(threading.enumerate()), _open_fds()
    yield
    assert [t for t in threading.enumerate() if t not in threads] == []
    assert _open_fds() == fds


def _open_fds() -> FrozenSet[str]:
    return frozenset(os.listdir("/proc/self/fd"))


def _nothing() -> None:
    return None


def _no_reply(timeout_s: float) -> Optional[int]:
    return None


def _never_notifying(path: LoopPath) -> LoopPath:
    """The same loop side, with a notify that does nothing (and, for a round trip, no reply)."""
    reply = _no_reply if path.reply is not None else None
    return dataclasses.replace(path, notify=_nothing, bind=None, reply=reply)


def _run(name: str, params: MeasureParams, change: Callable[[LoopPath], LoopPath] = lambda p: p) -> RawLatency:
    """Arm ``name``'s path, changed by ``change``, on the loop driver in the arm's own shape."""
    make = aio.LOOP_PATHS[name]

    def changed(loop: asyncio.AbstractEventLoop) -> LoopPath:
        return change(make(loop))

    if name != "add-signal-handler":
        return driver.measure(params, changed)
    reason = aio.requires_add_signal_handler()
    if reason is not None:
        pytest.skip(reason)
    with sigstate.preserved_signal_state([signal.SIGUSR1]):
        return driver.measure(params, changed, loop_in=driver.IN_MAIN)


# -- the catalogue --------------------------------------------------------------


def test_family_has_the_four_arms() -> None:
    assert set(ARMS_BY_NAME) == {
        "call-soon-threadsafe",
        "asyncio-event",
        "run-coroutine-threadsafe",
        "add-signal-handler",
    }
    assert set(aio.LOOP_PATHS) == set(ARMS_BY_NAME)
    for arm in aio.ARMS:
        assert arm.family == "asyncio"
        assert arm.driver == "loop"
        assert arm.kind == LATENCY
        assert arm.waiter == BLOCKED
        assert arm.scope == CROSS_THREAD
        assert arm.t0 and arm.t1 and arm.mechanism
        assert "\n" not in arm.t0 and "\n" not in arm.t1
        assert not arm.open_loop  # the loop driver has no open-loop mode
    assert ARMS_BY_NAME["add-signal-handler"].needs_main_thread
    assert not ARMS_BY_NAME["call-soon-threadsafe"].needs_main_thread
    assert "round trip" in ARMS_BY_NAME["run-coroutine-threadsafe"].mechanism


# -- real runs ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ARMS_BY_NAME))
def test_arm_runs_and_leaves_nothing_behind(name: str) -> None:
    arm = ARMS_BY_NAME[name]
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    signums = [signal.SIGUSR1] if hasattr(signal, "SIGUSR1") else []
    signals_before = sigstate.snapshot(signums)

    raw = arm.measure(PARAMS)

    assert raw.lost == 0
    assert raw.warmup_discarded == PARAMS.warmup
    assert len(raw.samples_ns) == PARAMS.n
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)
    assert raw.info["stale_wakes"] == 0 and raw.info["mode"] == "closed"
    assert raw.info["loop"] == "asyncio.SelectorEventLoop" and raw.info["asyncio_debug"] is False
    assert sigstate.snapshot(signums) == signals_before


def test_run_coroutine_threadsafe_reports_coroutine_start_inside_the_round_trip() -> None:
    raw = aio.measure_run_coroutine_threadsafe(PARAMS)
    assert raw.lost == 0
    starts = raw.components_ns["coroutine_start"]
    assert len(starts) == len(raw.samples_ns) == PARAMS.n
    for start, round_trip in zip(starts, raw.samples_ns):
        assert 0 < start < round_trip


@pytest.mark.parametrize("name", sorted(ARMS_BY_NAME))
def test_planted_delay_is_visible(name: str) -> None:
    params = MeasureParams(n=5, warmup=1, settle_us=200, planted_delay_us=2000)
    raw = _run(name, params)
    assert raw.lost == 0
    assert len(raw.samples_ns) == params.n
    assert all(s >= params.planted_delay_ns for s in raw.samples_ns)


# -- signal state -----------------------------------------------------------------


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


def test_a_loop_in_the_main_thread_refuses_another_thread() -> None:
    errors: List[BaseException] = []

    def run() -> None:
        try:
            driver.measure(SHORT_TIMEOUT, aio.call_soon_threadsafe_path, loop_in=driver.IN_MAIN)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(10.0)
    assert len(errors) == 1 and isinstance(errors[0], HarnessError)


# -- lost, stale and late wakes -----------------------------------------------------


@pytest.mark.parametrize("name", sorted(ARMS_BY_NAME))
def test_a_notify_that_never_comes_is_counted_lost(name: str) -> None:
    start = time.monotonic()
    raw = _run(name, SHORT_TIMEOUT, _never_notifying)
    assert raw.lost == SHORT_TIMEOUT.n
    assert raw.samples_ns == ()
    assert raw.warmup_discarded == SHORT_TIMEOUT.warmup
    # Every wake ended on the loop's own timer; nothing hung.
    assert time.monotonic() - start < 5.0


@pytest.mark.parametrize("name", sorted(ARMS_BY_NAME))
def test_a_late_notify_is_lost_and_leaves_the_next_wake_alone(name: str) -> None:
    """Every other notify comes after the loop's timer gave its wake up.

    That late notify must resolve nothing but its own (finished) wake: if it
    resolved the next one, that wake would be answered before its ``t0`` (a
    stale wake) or by the wrong notify, and more than half would be lost.
    """
    params = MeasureParams(n=4, warmup=0, settle_us=200, timeout_s=0.03)
    calls: List[int] = []

    def late(path: LoopPath) -> LoopPath:
        bind = path.bind
        notify = path.notify

        def late_bind() -> Callable[[], object]:
            calls.append(1)
            if len(calls) % 2:
                time.sleep(params.timeout_s * 2)  # before t0: the wake is given up by the notify
            if bind is not None:
                return bind()
            assert notify is not None
            return notify

        return dataclasses.replace(path, notify=None, bind=late_bind)

    raw = _run(name, params, late)
    assert raw.lost == params.n // 2
    assert len(raw.samples_ns) == params.n // 2
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)
    assert raw.info["stale_wakes"] == 0


def test_an_answer_before_the_notify_is_stale_never_negative() -> None:
    def answering_early(loop: asyncio.AbstractEventLoop) -> LoopPath:
        def prepare(woke: Woke) -> None:
            woke(now_ns())  # "woken" before the notifier even settled

        return LoopPath(prepare=prepare, notify=_nothing)

    raw = driver.measure(SHORT_TIMEOUT, answering_early)
    assert raw.samples_ns == ()
    assert raw.lost == SHORT_TIMEOUT.n
    assert raw.info["stale_wakes"] == SHORT_TIMEOUT.total_wakes


def test_an_unanswered_round_trip_is_lost_and_its_coroutine_cancelled() -> None:
    cancelled: List[int] = []

    async def starts_but_never_answers(woke: Woke) -> None:
        woke(now_ns())
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(1)
            raise

    def make(loop: asyncio.AbstractEventLoop) -> LoopPath:
        return aio.run_coroutine_threadsafe_path(loop, starts_but_never_answers)

    raw = driver.measure(SHORT_TIMEOUT, make)
    assert raw.lost == SHORT_TIMEOUT.n
    assert raw.samples_ns == () and "coroutine_start" not in raw.components_ns
    assert len(cancelled) == SHORT_TIMEOUT.total_wakes


# -- the driver -------------------------------------------------------------------


@pytest.mark.parametrize("loop_in", [driver.IN_THREAD, driver.IN_MAIN])
def test_either_shape_closes_its_loop_and_cancels_leftover_tasks(loop_in: str) -> None:
    loops: List[asyncio.AbstractEventLoop] = []
    leftovers: List["asyncio.Task[None]"] = []

    def make(loop: asyncio.AbstractEventLoop) -> LoopPath:
        loops.append(loop)
        path = aio.call_soon_threadsafe_path(loop)

        def prepare(woke: Woke) -> None:
            leftovers.append(loop.create_task(asyncio.sleep(3600)))
            path.prepare(woke)

        return dataclasses.replace(path, prepare=prepare)

    raw = driver.measure(SHORT_TIMEOUT, make, loop_in=loop_in)
    assert raw.lost == 0 and len(raw.samples_ns) == SHORT_TIMEOUT.n
    assert loops[0].is_closed()
    assert len(leftovers) == SHORT_TIMEOUT.total_wakes
    assert all(task.cancelled() for task in leftovers)


def test_an_exception_in_the_loop_is_a_harness_error() -> None:
    def broken(loop: asyncio.AbstractEventLoop) -> LoopPath:
        def prepare(woke: Woke) -> None:
            raise ValueError("boom")

        return LoopPath(prepare=prepare, notify=_nothing)

    with pytest.raises(HarnessError, match="boom"):
        driver.measure(SHORT_TIMEOUT, broken)


def test_the_loop_driver_has_no_open_loop_mode() -> None:
    assert driver.OPEN_LOOP is False
    with pytest.raises(ValueError, match="open"):
        driver.measure(dataclasses.replace(SHORT_TIMEOUT, mode="open"), aio.call_soon_threadsafe_path)


def test_loop_path_takes_one_notify_and_a_reply_only_with_its_first_leg() -> None:
    def prepare(woke: Woke) -> None:
        pass

    with pytest.raises(ValueError, match="notify"):
        LoopPath(prepare=prepare)
    with pytest.raises(ValueError, match="notify"):
        LoopPath(prepare=prepare, notify=_nothing, bind=lambda: _nothing)
    with pytest.raises(ValueError, match="first_leg"):
        LoopPath(prepare=prepare, notify=_nothing, reply=_no_reply)
    with pytest.raises(ValueError, match="first_leg"):
        LoopPath(prepare=prepare, notify=_nothing, first_leg="x")


def test_call_keeping_result_calls_once_and_keeps_what_it_returned() -> None:
    results: Deque[Any] = collections.deque(maxlen=1)
    seen: List[int] = []

    def fn(a: int, b: int) -> int:
        seen.append(a)
        return a + b

    call = driver.call_keeping_result(results, fn, 2, 3)
    assert seen == [] and not results  # nothing runs until the step calls it
    call()
    assert seen == [2] and list(results) == [5]
    call()  # one-shot: a second call does nothing
    assert seen == [2] and list(results) == [5]
