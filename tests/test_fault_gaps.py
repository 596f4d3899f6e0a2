"""Faults that the rest of the suite let through when they were planted one at a time (issue 8).

Each test here failed on the fault named in its docstring and passes on the unchanged code.
None asserts a speed: they check the order of clock readings in one thread, bookkeeping
counts, which callables the drivers are handed, and lower bounds of planted sleeps.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import pathlib
import signal
import threading
from typing import Any, Callable, Dict, List, Optional

import pytest
from test_arms_signals import stalling_open_loop

from wakelab.core import drivers
from wakelab.core.drivers import WakePath, notify_step
from wakelab.core.drivers import child as child_driver
from wakelab.core.drivers import loop as loop_driver
from wakelab.core.drivers import task as task_driver
from wakelab.core.drivers import thread as thread_driver
from wakelab.core.families import fds, native, processes, signals
from wakelab.core.model import LATENCY, MeasureParams, RawLatency, now_ns
from wakelab.core.registry import all_arms, get_arm

WAKELAB_SRC = str(pathlib.Path(drivers.__file__).resolve().parents[2])  # .../src/wakelab


# -- negative samples: the thread driver's own guard ----------------------------------------


def test_thread_driver_counts_a_wake_before_its_notify_stale() -> None:
    """Fault: the thread driver's ``t1 < t0`` guard removed (a negative sample is kept).

    The wait returns at once, during the notifier's settle, so its ``t1`` precedes ``t0``.
    """
    path = WakePath(reset=lambda: None, wait_stamped=lambda timeout_s: now_ns(), notify=lambda: None)
    params = MeasureParams(n=4, warmup=1, settle_us=20_000, timeout_s=0.5)
    raw = thread_driver.measure(params, path)
    assert raw.samples_ns == ()
    assert raw.lost == params.n
    assert raw.info["stale_wakes"] == params.total_wakes


# -- open loop: the thread driver reports its coalesced notifies --------------------------------


def test_thread_driver_open_loop_counts_merged_notifies_as_coalesced() -> None:
    """Fault: the thread driver's open loop reports ``coalesced`` as 0 (merged notifies read as timeouts).

    The waiter stalls 30 ms after its fifth wake: the notifies meanwhile set an Event that is
    already set, and the one wake after the stall answers all of them.
    """
    raw = thread_driver.measure(*stalling_open_loop())
    coalesced = int(raw.info["coalesced"])  # type: ignore[call-overload]
    assert coalesced >= 5
    assert coalesced <= raw.lost


# -- t1 before the read, as the C floor takes it -------------------------------------------------


def _stamping(consume: Callable[[], Any], stamps: List[int]) -> Callable[[], Any]:
    def stamped() -> Any:
        stamps.append(now_ns())  # the first thing the read does
        return consume()

    return stamped


def test_pipe_and_eventfd_take_t1_before_the_read() -> None:
    """Fault: ``pipe``/``eventfd`` take ``t1`` after the read, while ``native-pipe`` takes it before.

    ``T1_SHAPES`` says after-wait for both sides; this checks the Python code does what it says.
    """
    assert native.T1_SHAPES["pipe"].point == native.T1_SHAPES["eventfd"].point == native.AFTER_WAIT
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)
        read_token, _ = fds._token_reader(read_fd)
        reads: List[int] = []
        wait = fds._poll_then_read(read_fd, _stamping(read_token, reads))
        os.write(write_fd, b"x")
        t1 = wait(1.0)
        assert t1 is not None and reads
        assert t1 <= reads[0], "t1 was taken after the read began"
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_process_waiters_take_t1_before_they_consume() -> None:
    """Fault: ``pipe-process``/``eventfd-fork`` take ``t1`` after consuming the byte (C: before)."""
    read_fd, write_fd = os.pipe()
    try:
        consumed: List[int] = []

        def consume() -> None:
            try:
                os.read(read_fd, 64)
            except BlockingIOError:
                pass

        side = processes._poll_then_consume(read_fd, _stamping(consume, consumed))
        os.write(write_fd, b"x")
        t1 = side.wait(0, 1.0)
        assert t1 is not None and consumed
        assert t1 <= consumed[0], "t1 was taken after the consume began"
    finally:
        os.close(read_fd)
        os.close(write_fd)


# -- no Python frame of wakelab's own between t0 and the primitive's notify -------------------------


def _own_python_code(fn: object) -> Optional[str]:
    """The qualified name of ``fn`` when calling it runs a Python function defined in wakelab."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    if code is not None and str(pathlib.Path(code.co_filename).resolve()).startswith(WAKELAB_SRC):
        return str(getattr(fn, "__qualname__", fn))
    return None


# The storm driver's t0 is a sender process's, taken before its os.kill with nothing between (no
# notify step to spy on); tests/test_storms.py proves its window.
WINDOW_ARMS = [a for a in all_arms() if a.kind == LATENCY and a.driver and a.driver not in ("floor", "storm")]


@pytest.mark.parametrize("arm", WINDOW_ARMS, ids=lambda a: a.name)
def test_the_notify_in_the_window_is_the_primitives_own(arm, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault: a family hands the driver ``lambda: event.set()`` (an extra Python frame after ``t0``).

    Every notify (or every callable a ``bind`` returns) must be the primitive's own call or a
    ``functools.partial`` of it, never a function written in wakelab.
    """
    reason = arm.unavailable_reason()
    if reason:
        pytest.skip(reason)
    seen: List[str] = []
    real = drivers.notify_step

    def spying(params, notify, *, before=None, after=None, bind=None):
        if notify is not None:
            seen.append(_own_python_code(notify) or "")
        if bind is not None:
            inner = bind

            def bind_and_check():
                fire = inner()
                seen.append(_own_python_code(fire) or "")
                return fire

            bind = bind_and_check
        return real(params, notify, before=before, after=after, bind=bind)

    for module in (drivers, loop_driver, child_driver, task_driver):
        if hasattr(module, "notify_step"):
            monkeypatch.setattr(module, "notify_step", spying)
    raw = arm.measure(MeasureParams(n=2, warmup=0, settle_us=200, timeout_s=1.0))
    assert isinstance(raw, RawLatency)
    assert len(raw.samples_ns) + raw.lost == 2
    assert seen, "%s never built a notify step" % arm.name
    assert [s for s in seen if s] == []


# -- the planted waits sit where they claim, and are not skipped ----------------------------------


D_US = 20_000


def test_planted_waits_sit_on_their_side_of_the_notify() -> None:
    """Faults: the planted-after wait skipped (the negative control then proves nothing), or the
    planted delay moved after the notify.  Lower bounds of sleeps only."""
    base = MeasureParams(n=1, warmup=0)
    stamps: Dict[str, int] = {}

    def fire() -> None:
        stamps["fire"] = now_ns()

    before = notify_step(dataclasses.replace(base, planted_delay_us=D_US), fire)
    t0 = before()
    assert stamps["fire"] - t0 >= D_US * 1000  # the delay came between t0 and the notify

    after = notify_step(dataclasses.replace(base, planted_after_us=D_US), fire)
    after()
    returned = now_ns()
    assert returned - stamps["fire"] >= D_US * 1000  # the planted-after wait ran, after the notify


@pytest.mark.parametrize("name", ["native-condvar", "native-pipe-process"])
def test_the_c_floor_waits_its_planted_after_delay(name: str) -> None:
    """Fault: the C floor ignores ``planted_after_us`` (its negative control then proves nothing)."""
    arm = get_arm(name)
    reason = arm.unavailable_reason()
    if reason:
        pytest.skip(reason)
    params = MeasureParams(n=3, warmup=1, settle_us=200, timeout_s=1.0, planted_after_us=D_US)
    arm.measure(dataclasses.replace(params, planted_after_us=0))  # builds the binary outside the timing
    start = now_ns()
    raw = arm.measure(params)
    assert isinstance(raw, RawLatency) and len(raw.samples_ns) == params.n
    assert now_ns() - start >= params.total_wakes * D_US * 1000


# -- the wakeup fd never points at a closed fd ------------------------------------------------------


@pytest.mark.skipif(signals.requires_main_thread_wakeup_fd() is not None, reason="needs set_wakeup_fd")
def test_wakeup_fd_select_restores_the_wakeup_fd_before_closing_its_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault: ``wakeup-fd-select`` drops its own ``set_wakeup_fd(old)`` and leaves the restore to the
    outer signal-state guard, which runs after the pipe is closed: for that moment a signal would
    make CPython write to a closed (or reused) fd."""
    real_close = os.close
    closed_while_wakeup: List[int] = []

    def checking_close(fd: int) -> None:
        if threading.current_thread() is threading.main_thread():
            current = signal.set_wakeup_fd(-1)
            try:
                signal.set_wakeup_fd(current)
            except OSError:  # it already points at an fd closed before: the outer guard restores it
                closed_while_wakeup.append(current)
            if current == fd:
                closed_while_wakeup.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "close", checking_close)
    raw = get_arm("wakeup-fd-select").measure(MeasureParams(n=3, warmup=1, settle_us=200, timeout_s=1.0))
    monkeypatch.undo()
    assert isinstance(raw, RawLatency)
    assert len(raw.samples_ns) + raw.lost == 3
    assert closed_while_wakeup == []
