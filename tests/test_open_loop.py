"""Open-loop timing: latency from the schedule, stalls cannot hide."""

from __future__ import annotations

import threading
import time

from wakelab.core.registry import get_arm
from wakelab.core.drivers import WakePath
from wakelab.core.drivers import thread as driver
from wakelab.core.drivers.thread import last_notify_answered, match_open_loop
from wakelab.core.model import MeasureParams

OPEN = MeasureParams(n=20, warmup=2, settle_us=200, mode="open", interval_us=2000)


def test_open_loop_takes_every_wake_from_the_schedule() -> None:
    raw = get_arm("event").measure(OPEN)
    assert raw.info["mode"] == "open"
    assert len(raw.samples_ns) + raw.lost == OPEN.n
    assert all(s > 0 for s in raw.samples_ns)
    # Each counted wake also says how late the notifier itself was.
    assert len(raw.components_ns["notify_late"]) == len(raw.samples_ns)
    assert all(late >= 0 for late in raw.components_ns["notify_late"])


def test_a_stalled_notifier_shows_up_in_every_later_sample() -> None:
    """Closed loop would start each sample after the stall; open loop measures from the schedule."""
    event = threading.Event()
    calls = {"n": 0}

    def stalling_notify() -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            time.sleep(0.03)  # a 30 ms stall: the next notifies are all late
        event.set()

    params = MeasureParams(n=10, warmup=0, settle_us=200, mode="open", interval_us=2000)
    raw = driver.measure(params, WakePath(reset=event.clear, wait=event.wait, notify=stalling_notify))
    # The fifth notify took 30 ms to land, and the five after it were due within the next 10 ms:
    # each of those six is either a late wake (at least 18 ms after its scheduled instant) or
    # was coalesced into one and counted lost.  None of them can look fast.
    # The stalled wake is at least 30 ms after its schedule -- or, if the wake before it came late
    # (after the stalled notify began), the matcher credits that one to it and the stalled wake to
    # the next notify, due 2 ms later: 28 ms.
    assert max(raw.samples_ns) >= 27_000_000
    late = sum(1 for s in raw.samples_ns if s >= 18_000_000)
    assert late + raw.lost >= 6
    # Lost notifies here were merged into a late wake, not left unanswered by a timeout.
    assert 0 <= raw.info["coalesced"] <= raw.lost


def test_matching_counts_coalesced_notifies_apart_from_timeouts() -> None:
    """Exact bookkeeping: a wake answers the oldest pending notify; earlier-begun ones are merged."""
    issued = [100, 200, 300, 400, 500]
    # Wake at 150 answers notify 0; wake at 420 answers notify 1 and swallows 2 and 3;
    # notify 4 never gets a wake (it timed out).
    first, coalesced = match_open_loop(issued, [150, 420])
    assert first == {0: 150, 1: 420}
    assert coalesced == [2, 3]
    # A planted delay moves when each notify call began: the wake at 420 no longer follows
    # notify 3's call (400 + 50), so only notify 2 was merged.
    first, coalesced = match_open_loop(issued, [150, 420], planted_delay_ns=50)
    assert first == {0: 150, 1: 420} and coalesced == [2]
    # A wake before any notify began answers nothing.
    assert match_open_loop(issued, [50]) == ({}, [])


def test_the_last_notify_is_answered_only_by_a_wake_after_its_call_began() -> None:
    # The open loop's notifier waits for this before it ends the run. A late wake of the notify
    # before (at 520, after the last t0 of 500 but before its notify call at 500 + 200) once ended
    # it early, and the last notify's own wake, arriving after the end, was lost.
    issued = [0, 100, 500]
    assert not last_notify_answered(issued, [], planted_delay_ns=200)
    assert not last_notify_answered(issued, [50, 520], planted_delay_ns=200)
    assert last_notify_answered(issued, [50, 520, 720], planted_delay_ns=200)
    assert last_notify_answered(issued, [50, 520])  # no planted delay: the call began at t0
    assert not last_notify_answered([], [50])


def test_planted_delay_shows_up_in_open_loop() -> None:
    params = MeasureParams(n=10, warmup=1, settle_us=200, mode="open", interval_us=5000, planted_delay_us=2000)
    raw = get_arm("queue").measure(params)
    assert raw.samples_ns and min(raw.samples_ns) >= 2_000_000


def test_arms_without_open_loop_are_skipped(tmp_path) -> None:
    from wakelab.harness.runner import Execution, RunPlan, run_plan
    from wakelab.labs import LAB_135

    summary = run_plan(RunPlan(lab=LAB_135, arm_names=["event", "sigusr1-self", "call-soon-threadsafe"], params=OPEN,
                               folder=str(tmp_path), execution=Execution(in_process=True)))
    event, signal_arm, loop_arm = summary["arms"]
    assert event["status"] == "ok" and event["info"]["mode"] == "open"
    # The main-thread driver has an open loop; the event-loop driver does not.
    assert signal_arm["status"] == "ok" and signal_arm["info"]["mode"] == "open"
    assert loop_arm["status"] == "skipped" and "no open-loop mode" in loop_arm["reason"]
