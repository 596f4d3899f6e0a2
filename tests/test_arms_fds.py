"""The fds arms run for real: sane samples, nothing lost, nothing leaked."""

from __future__ import annotations

import os
import time
import threading
from typing import FrozenSet

import pytest

from conftest import registry_arms

from wakelab.core.families import fds
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, MeasureParams

PARAMS = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
ARMS_BY_NAME = {arm.name: arm for arm in registry_arms(fds)}


def _open_fds() -> FrozenSet[str]:
    return frozenset(os.listdir("/proc/self/fd"))


def test_family_has_the_four_arms() -> None:
    assert set(ARMS_BY_NAME) == {"pipe", "eventfd", "socketpair", "selector-pipe"}
    for arm in registry_arms(fds):
        assert arm.family == "fds"
        assert arm.kind == LATENCY
        assert arm.waiter == BLOCKED
        assert arm.scope == CROSS_THREAD
        assert arm.t0 and arm.t1 and arm.mechanism
        assert "\n" not in arm.t0 and "\n" not in arm.t1
    served = {arm.name: arm for arm in registry_arms(fds)}
    assert served["eventfd"].native == "native-eventfd"
    assert served["pipe"].native == "native-pipe"
    assert served["socketpair"].native == "native-socketpair"
    assert served["selector-pipe"].native == "native-selector-pipe"


def test_eventfd_requires_says_why() -> None:
    reason = fds.requires_eventfd()
    if hasattr(os, "eventfd"):
        assert reason is None
    else:
        assert reason is not None and "eventfd" in reason


@pytest.mark.parametrize("name", sorted(ARMS_BY_NAME))
def test_arm_runs_and_leaves_nothing_behind(name: str) -> None:
    arm = ARMS_BY_NAME[name]
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    fds_before = _open_fds()
    threads_before = set(threading.enumerate())

    raw = arm.measure(PARAMS)

    assert raw.lost == 0
    assert raw.warmup_discarded == PARAMS.warmup
    assert len(raw.samples_ns) == PARAMS.n
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)
    assert _open_fds() == fds_before
    assert set(threading.enumerate()) == threads_before


def test_planted_delay_is_visible_in_pipe_samples() -> None:
    params = MeasureParams(n=20, warmup=2, settle_us=200, planted_delay_us=2000)
    raw = fds.measure_pipe(params)
    assert raw.lost == 0
    assert len(raw.samples_ns) == params.n
    assert all(s >= 2_000_000 for s in raw.samples_ns)


def test_notify_that_writes_nothing_is_counted_lost() -> None:
    fds_before = _open_fds()
    threads_before = set(threading.enumerate())
    params = MeasureParams(n=3, warmup=1, settle_us=200, timeout_s=0.05)

    raw = fds._measure_pipe(params, b"")

    assert raw.lost == 3
    assert raw.samples_ns == ()
    assert raw.warmup_discarded == 1
    assert _open_fds() == fds_before
    assert set(threading.enumerate()) == threads_before



def test_poll_then_read_reads_a_token_and_times_out_without_one() -> None:
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)

        def read_token() -> bool:
            try:
                return bool(os.read(read_fd, 64))
            except BlockingIOError:
                return False

        wait = fds._poll_then_read(read_fd, read_token)
        assert wait(0.02) is None
        os.write(write_fd, b"x")
        before = time.perf_counter_ns()
        t1 = wait(1.0)
        assert t1 is not None and t1 >= before  # t1 taken after the poll, as the stamp
        assert wait(0.02) is None  # the token was consumed
    finally:
        os.close(read_fd)
        os.close(write_fd)
