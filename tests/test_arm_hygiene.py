"""Every registered arm leaves the process as it found it.

Signal handlers, the signal mask, the wakeup fd, threads, open fds, child
processes, the switch interval and CPU affinity are compared before and after
each arm, run for real with a handful of wakes.
"""

from __future__ import annotations

import time

import pytest

from conftest import children, open_fds, process_state
from wakelab.core.registry import all_arms
from wakelab.core.model import RawLatency


def _settled_children(before: set) -> set:
    # A child that has just been reaped may linger in /proc for a moment.
    deadline = time.monotonic() + 5
    now = children()
    while now - before and time.monotonic() < deadline:
        time.sleep(0.05)
        now = children()
    return now


@pytest.mark.parametrize("arm", all_arms(), ids=lambda a: a.name)
def test_arm_restores_process_state(arm, tiny_params) -> None:
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    state, fds, kids = process_state(), open_fds(), children()
    raw = arm.measure(tiny_params)
    assert process_state() == state
    assert open_fds() == fds
    assert _settled_children(kids) - kids == set()
    if isinstance(raw, RawLatency):
        assert len(raw.samples_ns) + raw.lost == tiny_params.n
        # A storm's probe may be merged into the storm's other signals (a standard signal pends once): what
        # a storm arm measures is how many arrive (tests/test_storms.py), so only the others owe every wake.
        if arm.driver != "storm":
            assert raw.lost == 0
        assert all(s > 0 for s in raw.samples_ns)


@pytest.mark.parametrize("arm", all_arms(), ids=lambda a: a.name)
def test_arm_declares_its_identity(arm) -> None:
    assert arm.t0 and arm.t1 and arm.mechanism
    assert arm.waiter in ("blocked", "spinning", "none")
    assert arm.scope in ("self", "cross-thread", "cross-process")
    names = {a.name for a in all_arms()}
    if arm.native is not None:
        assert arm.native in names, "%s names a native arm that does not exist" % arm.name
