"""Following the waiter through every sleep, and naming each re-block (analysis/reblocks.py, and
the walk in analysis/components.py that uses it), on made-up events, exactly.

The real kernel's side is in tests/test_trace.py (the scheduler's events) and
tests/test_trace_reblocks.py (a planted slow sem_post, a busy thread holding the GIL).
"""

from __future__ import annotations

import random
from typing import List, Sequence

import pytest

from wakelab.analysis import components as comp
from wakelab.analysis import reblocks as rb
from wakelab.analysis.components import COMPONENTS, SchedEvent, split_wake, split_wakes
from wakelab.evidence.figures import TraceComponents
from wakelab.core.drivers import interpreter_data_ranges

T0 = 1_000_000_000
W = 200  # waiter tid
N = 100  # notifier tid (the waiter's process is N's: tgid N)
B = 300  # a busy thread of the same process
PID = N
GIL = 0x7F00_0000_1000  # a futex word in the interpreter's data
LOCK = 0x5500_0000_2000  # one on the heap
CONTEXT = rb.WaiterContext(notifier_tid=N, busy_tids=frozenset({B}), gil_ranges=((0x7F00_0000_0000, 0x7F00_0001_0000),),
                           waiter_pid=PID)


def waking(t: int, by: int = N, cpu: int = 0, pid: int = W) -> SchedEvent:
    return SchedEvent(t, "waking", cpu, by, pid=pid, target_cpu=1, tgid=PID if by else 0)


def wakeup(t: int) -> SchedEvent:
    return SchedEvent(t, "wakeup", 1, N, pid=W, target_cpu=1, tgid=PID)


def switch_in(t: int, prev: int = 0) -> SchedEvent:
    return SchedEvent(t, "switch", 1, prev, prev_pid=prev, prev_state="R", next_pid=W)


def switch_out(t: int, state: str = "S", nxt: int = 0) -> SchedEvent:
    return SchedEvent(t, "switch", 1, W, prev_pid=W, prev_state=state, next_pid=nxt, tgid=PID)


def enter(t: int, syscall: str = "futex", arg0: int = LOCK) -> SchedEvent:
    return SchedEvent(t, "enter", 1, W, tgid=PID, syscall=syscall, arg0=arg0, arg1=0x89)


def leave(t: int, syscall: str = "futex", ret: int = 0) -> SchedEvent:
    return SchedEvent(t, "exit", 1, W, tgid=PID, syscall=syscall, ret=ret)


def split(events: Sequence[SchedEvent], t1: int, context: rb.WaiterContext = CONTEXT) -> comp.WakeSplit:
    return split_wake(events, [e.time_ns for e in events], W, T0, T0 + t1, context=context)


# The waiter asleep in its wait before t0 (the settle), in a futex on the heap (an Event's lock).
PARKED = [enter(T0 - 600_000), switch_out(T0 - 500_000)]


# -- no wake lost to the split ----------------------------------------------------------------


def test_a_wake_into_a_cpu_that_records_nothing_ends_at_the_waiters_return() -> None:
    # sched_waking, then nothing from the idle CPU (no wakeup, no switch-in): the waiter's exit
    # from the futex it slept in is the first sign of it on a CPU.
    events = PARKED + [waking(T0 + 6_000), leave(T0 + 30_000), enter(T0 + 31_000), leave(T0 + 31_500)]
    s = split(events, 40_000)
    assert s.parts_ns == {"notify": 6_000, "sched_wake": 24_000, "sched_queue": 0, "gil_wait": 0,
                          "interpreter": 10_000, "unattributed": 0}
    assert s.attributed and s.inferred == 1 and s.by_notifier is True
    # An event in its context before that exit (an interrupt waking another task) is the
    # kernel's, on the way back: it changes nothing.
    kernel = SchedEvent(T0 + 20_000, "waking", 1, W, pid=999, target_cpu=0, tgid=PID)
    assert split(events[:3] + [kernel] + events[3:], 40_000).parts_ns == s.parts_ns
    # Without the exit (a call the trace does not follow), when it began to run is not known.
    s = split(PARKED[1:] + [waking(T0 + 6_000), enter(T0 + 31_000)], 40_000)
    assert s.parts_ns["unattributed"] == 25_000 and s.parts_ns["interpreter"] == 9_000 and s.inferred == 0


def test_a_wake_raised_while_the_waiter_was_still_on_its_cpu_loses_nothing() -> None:
    # Re-blocking on a lock: the holder's wake comes between the waiter's futex entry and its
    # switch-out (the kernel names a wake of a task that set itself asleep): that sleep was over
    # before it began; the switch-out to the switch-in is the scheduler's.
    events = PARKED + [waking(T0 + 5_000), wakeup(T0 + 6_000), switch_in(T0 + 7_000), leave(T0 + 8_000),
                       enter(T0 + 9_000), waking(T0 + 9_500, by=B), switch_out(T0 + 10_000), wakeup(T0 + 12_000),
                       switch_in(T0 + 15_000), leave(T0 + 15_500)]
    s = split(events, 20_000)
    assert s.attributed
    assert s.parts_ns == {"notify": 5_000, "sched_wake": 1_000 + 2_000, "sched_queue": 1_000 + 3_000, "gil_wait": 0,
                          "interpreter": 3_000 + 5_000, "unattributed": 0}
    # A wake raised while it was on its CPU and never followed by a sleep changes nothing.
    events = PARKED + [waking(T0 + 5_000), wakeup(T0 + 6_000), switch_in(T0 + 7_000), leave(T0 + 8_000),
                       enter(T0 + 9_000), waking(T0 + 9_500, by=B), leave(T0 + 9_800)]
    s = split(events, 20_000)
    assert s.parts_ns["interpreter"] == 13_000 and s.attributed and s.reblocks == ()


def test_a_reblock_ended_where_nothing_is_recorded_ends_at_its_calls_exit() -> None:
    # A timed GIL wait whose timer fires on an idle CPU that records nothing: no waking, the
    # exit says it timed out.
    events = PARKED + [waking(T0 + 5_000), wakeup(T0 + 6_000), switch_in(T0 + 7_000), leave(T0 + 8_000),
                       enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), leave(T0 + 5_010_000, ret=-110)]
    s = split(events, 5_012_000)
    assert s.parts_ns["gil_wait"] == 5_000_000 and s.attributed and s.inferred == 1
    (block,) = s.reblocks
    assert (block.on, block.by, block.cause) == ("gil", "timeout", "gil/timeout")


def test_a_reblock_whose_unseen_wake_was_its_timeout_is_placed_at_the_calls_exit() -> None:
    # The timer fires on a CPU that records nothing; the waiter is switched in from another task
    # and its futex returns -ETIMEDOUT: it was asleep on the GIL until then (its run-queue wait too
    # short to tell apart). A switch-in with no wake and no such exit stays unplaced.
    head = PARKED + [waking(T0 + 5_000), wakeup(T0 + 6_000), switch_in(T0 + 7_000), leave(T0 + 8_000),
                     enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000)]
    s = split(head + [switch_in(T0 + 5_010_000, prev=777), leave(T0 + 5_011_000, ret=-110)], 5_020_000)
    assert s.attributed and s.parts_ns["gil_wait"] == 5_000_000 and s.inferred == 1
    assert [(b.on, b.by, b.asleep_ns) for b in s.reblocks] == [("gil", "timeout", 5_000_000)]
    s = split(head + [switch_in(T0 + 5_010_000, prev=777), leave(T0 + 5_011_000, ret=0)], 5_020_000)
    assert s.parts_ns["unattributed"] == 5_000_000 and s.reblocks == ()


def test_a_timeout_raised_in_another_processs_context_is_still_a_timeout() -> None:
    # The timer's interrupt runs in whatever task is on that CPU: the wake names a thread of another
    # process; the waiter is preempted before it returns; the exit says it timed out.
    stranger = SchedEvent(T0 + 5_010_000, "waking", 0, 4242, pid=W, target_cpu=1, tgid=4242)
    s = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), stranger, wakeup(T0 + 5_011_000),
                   switch_in(T0 + 5_012_000), switch_out(T0 + 5_013_000, state="R", nxt=9), switch_in(T0 + 5_014_000, prev=9),
                   leave(T0 + 5_015_000, ret=-110))
    assert [(b.by, b.holder) for b in s.reblocks] == [("timeout", "")]
    # ... even when the call returns 0: the holder's wake took the waiter off the futex while it
    # waited for a CPU after its timer's -- nothing outside the process wakes a private futex.
    context = rb.WaiterContext(**dict(CONTEXT.__dict__, gil_releases=((T0 + 5_012_500, N),)))
    s = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), stranger, wakeup(T0 + 5_011_000),
                   switch_in(T0 + 5_014_000, prev=9), leave(T0 + 5_015_000, ret=0), context=context)
    assert [(b.by, b.holder, b.holder_tid) for b in s.reblocks] == [("timeout", "notifier", N)]
    # A shared futex (no private flag: a semaphore in shared memory) can be woken by another process.
    shared = SchedEvent(T0 + 9_000, "enter", 1, W, tgid=PID, syscall="futex", arg0=LOCK, arg1=0x09)
    s = _reblocked(shared, switch_out(T0 + 10_000), stranger, wakeup(T0 + 5_011_000), switch_in(T0 + 5_014_000, prev=9),
                   leave(T0 + 5_015_000, ret=0))
    assert [(b.on, b.by, b.holder, b.holder_tid) for b in s.reblocks] == [("lock", "process", "process", 4242)]


# -- naming each re-block ---------------------------------------------------------------------


def _reblocked(*middle: SchedEvent, t1: int = 9_000_000, context: rb.WaiterContext = CONTEXT) -> comp.WakeSplit:
    head = PARKED + [waking(T0 + 5_000), wakeup(T0 + 6_000), switch_in(T0 + 7_000), leave(T0 + 8_000)]
    return split(head + list(middle), t1, context)


def test_a_futex_in_the_interpreters_data_is_the_gil_and_its_waker_the_holder() -> None:
    s = _reblocked(enter(T0 + 9_000, arg0=GIL + 4), switch_out(T0 + 10_000), waking(T0 + 2_010_000, by=B),
                   wakeup(T0 + 2_011_000), switch_in(T0 + 2_012_000), leave(T0 + 2_013_000))
    (block,) = s.reblocks
    assert (block.on, block.by, block.holder, block.holder_tid, block.asleep_ns) == ("gil", "busy", "busy", B, 2_000_000)
    assert s.causes_ns() == {"gil/busy": 2_000_000} and s.parts_ns["gil_wait"] == 2_000_000
    # The same word in another process's memory, or with no ranges known (a C floor), is a lock.
    assert _reblocked(enter(T0 + 9_000, arg0=GIL + 4), switch_out(T0 + 10_000), waking(T0 + 2_010_000, by=N),
                      context=rb.WaiterContext(notifier_tid=N)).reblocks[0].cause == "lock/notifier"
    other = rb.WaiterContext(notifier_tid=N, gil_ranges=CONTEXT.gil_ranges, waiter_pid=PID + 1)
    assert _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), waking(T0 + 2_010_000, by=N),
                      context=other).reblocks[0].on == "lock"


def test_gil_waits_that_time_out_are_credited_to_the_thread_that_ends_them() -> None:
    # CPython's timed GIL wait: 5 ms, a timeout (the waiter asks for a drop), then the holder's wake.
    s = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), waking(T0 + 5_010_000, by=B),
                   switch_in(T0 + 5_011_000), leave(T0 + 5_012_000, ret=-110),
                   enter(T0 + 5_013_000, arg0=GIL), switch_out(T0 + 5_014_000), waking(T0 + 6_014_000, by=B),
                   switch_in(T0 + 6_015_000), leave(T0 + 6_016_000))
    assert [(b.by, b.holder, b.holder_tid, b.asleep_ns) for b in s.reblocks] == [
        ("timeout", "busy", B, 5_000_000), ("busy", "busy", B, 1_000_000)]
    assert s.causes_ns() == {"gil/busy": 6_000_000}
    # Timed out, then the GIL taken at once: the holder is the thread the waiter tells that the
    # switch happened (a wake raised inside its futex call on the GIL), if it does.
    s = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), leave(T0 + 5_010_000, ret=-110),
                   enter(T0 + 5_011_000, arg0=GIL + 8), waking(T0 + 5_011_500, by=W, pid=B), leave(T0 + 5_012_000, ret=1))
    assert [(b.by, b.holder, b.holder_tid) for b in s.reblocks] == [("timeout", "busy", B)]
    s = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), leave(T0 + 5_010_000, ret=-110))
    assert s.causes_ns() == {"gil/timeout": 5_000_000}  # nobody said who held it
    # ... unless a thread let go of the GIL right after the timeout (drop_gil's futex wake on the
    # GIL's condition, seen in that thread's own system calls).
    theirs = [SchedEvent(T0 + 3_000_000, "enter", 0, B, tgid=PID, syscall="futex", arg0=LOCK, arg1=0x81),  # not the GIL
              SchedEvent(T0 + 5_010_500, "enter", 0, B, tgid=PID, syscall="futex", arg0=GIL + 4, arg1=0x81),
              SchedEvent(T0 + 5_020_000, "enter", 0, N, tgid=PID, syscall="futex", arg0=GIL + 4, arg1=0x81),
              SchedEvent(T0 + 5_030_000, "enter", 0, N, tgid=PID, syscall="futex", arg0=GIL + 4, arg1=0x89)]  # a wait
    releases = rb.gil_releases(theirs, CONTEXT)
    assert releases == ((T0 + 5_010_500, B), (T0 + 5_020_000, N))
    context = rb.WaiterContext(**dict(CONTEXT.__dict__, gil_releases=releases))
    s = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), leave(T0 + 5_010_000, ret=-110), context=context)
    assert [(b.by, b.holder, b.holder_tid) for b in s.reblocks] == [("timeout", "busy", B)]
    assert s.causes_ns() == {"gil/busy": 5_000_000}


@pytest.mark.parametrize("syscall, ret, on, timed_out", [
    ("read", 1, "fd", False), ("epoll_wait", 0, "fd", True), ("select", 1, "fd", False),
    ("clock_nanosleep", 0, "timer", True), ("rt_sigtimedwait", 10, "signal", False), ("rt_sigtimedwait", -11, "signal", True),
    ("wait4", 42, "child", False), ("futex", -110, "lock", True), ("futex", -11, "lock", False), ("ioctl", 0, "other", False),
])
def test_each_call_names_what_its_sleep_waited_on(syscall: str, ret: int, on: str, timed_out: bool) -> None:
    assert rb.blocked_on(syscall, LOCK, PID, CONTEXT) == on
    assert rb.timed_out(syscall, ret) is timed_out


def test_who_woke_it() -> None:
    assert rb.waker_role(N, PID, PID, CONTEXT) == "notifier"
    assert rb.waker_role(B, PID, PID, CONTEXT) == "busy"
    assert rb.waker_role(555, PID, PID, CONTEXT) == "thread"
    assert rb.waker_role(555, 777, PID, CONTEXT) == "process"
    assert rb.waker_role(0, 0, PID, CONTEXT) == "unknown"  # raised in the idle task: an interrupt


def _random_event(kind: str, t: int, rng: random.Random) -> SchedEvent:
    if kind == "waking":
        return waking(t)
    if kind == "wakeB":
        return waking(t, by=B)
    if kind == "wakeup":
        return wakeup(t)
    if kind == "in":
        return switch_in(t, prev=rng.choice([0, N, 7]))
    if kind in ("out", "outR"):
        return switch_out(t, state="S" if kind == "out" else "R+")
    if kind in ("enter", "enterG"):
        return enter(t, arg0=GIL if kind == "enterG" else LOCK)
    if kind in ("exit", "timeout"):
        return leave(t, ret=0 if kind == "exit" else -110)
    if kind == "handoff":
        return waking(t, by=W, pid=B)
    return SchedEvent(t, "migrate", 0, 5, pid=W, orig_cpu=0, dest_cpu=1)


def test_components_and_causes_sum_exactly_whatever_the_events() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        events: List[SchedEvent] = []
        t = T0 - 3000
        for _ in range(rng.randrange(0, 40)):
            t += rng.randrange(1, 4000)
            kind = rng.choice(["waking", "wakeB", "wakeup", "in", "out", "outR", "enter", "enterG", "exit", "timeout",
                               "handoff", "migrate"])
            events.append(_random_event(kind, t, rng))
        t0s = [T0 + rng.randrange(0, 30_000) for _ in range(8)]
        samples = [rng.randrange(0, 80_000) for _ in range(8)]
        splits = split_wakes(events, W, t0s, samples, N, CONTEXT)
        series = comp.component_series(splits)
        assert comp.check_sums(samples, series), seed
        assert all(type(v) is int and v >= 0 for name in COMPONENTS for v in series[name]), seed
        causes = comp.reblock_series(splits)
        for i, s in enumerate(splits):
            assert sum(values[i] for values in causes.values()) == s.parts_ns["gil_wait"], seed
            assert all(b.asleep_ns > 0 for b in s.reblocks), seed


# -- where the numbers come from --------------------------------------------------------------


def test_the_waiters_context_is_read_from_a_traced_workers_info() -> None:
    info = {"notifier_tid": N, "interpreter_data": {"pid": PID, "ranges": [[10, 20], [30, 40], "junk"]}}
    context = rb.context_from(info, [B, None])
    assert context == rb.WaiterContext(notifier_tid=N, busy_tids=frozenset({B}), gil_ranges=((10, 20), (30, 40)), waiter_pid=PID)
    assert rb.context_from({}) == rb.WaiterContext()


MAPS = """\
55582c919000-55582c91a000 r--p 00000000 fe:00 26723                      /opt/py/bin/python3.11
55582c91a000-55582c91b000 rw-p 00003000 fe:00 26723                      /opt/py/bin/python3.11
5558300000-5558400000 rw-p 00000000 00:00 0                              [heap]
7f586d044000-7f586d1db000 rw-p 00443000 fe:00 26933                      /opt/py/lib/libpython3.11.so.1.0
7f586d1db000-7f586d1e0000 rw-p 00000000 00:00 0
7f586d1e0000-7f586d1e1000 rw-p 00000000 00:00 0
7f586d200000-7f586d201000 rw-p 0001c000 fe:00 29726                      /opt/py/lib/libc.so.6
"""


def test_the_interpreters_data_is_its_executables_and_libpythons_writable_mappings(tmp_path, monkeypatch) -> None:
    maps = tmp_path / "maps"
    maps.write_text(MAPS)
    monkeypatch.setattr("sys.executable", "/opt/py/bin/python3.11")
    # libpython's data and the .bss right after it; not the heap, not libc, not a second anonymous map.
    assert interpreter_data_ranges(str(maps)) == [[0x55582C91A000, 0x55582C91B000], [0x7F586D044000, 0x7F586D1E0000]]
    assert interpreter_data_ranges(str(tmp_path / "missing")) == []


def test_this_interpreters_gil_lies_in_its_data() -> None:
    ctypes = pytest.importorskip("ctypes")
    try:
        runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    except (AttributeError, ValueError) as exc:
        pytest.skip("this interpreter does not export _PyRuntime: %s" % exc)
    ranges = interpreter_data_ranges()
    assert any(start <= runtime < end for start, end in ranges), (hex(runtime), ranges)


# -- summary and sentence ---------------------------------------------------------------------


def test_the_summary_names_the_causes_and_the_holders_and_the_sentence_reads_them() -> None:
    gil = _reblocked(enter(T0 + 9_000, arg0=GIL), switch_out(T0 + 10_000), waking(T0 + 2_010_000, by=B),
                     wakeup(T0 + 2_011_000), switch_in(T0 + 2_012_000), leave(T0 + 2_013_000), t1=3_000_000)
    lock = _reblocked(enter(T0 + 9_000), switch_out(T0 + 10_000), waking(T0 + 1_010_000, by=N),
                      wakeup(T0 + 1_011_000), switch_in(T0 + 1_012_000), leave(T0 + 1_013_000), t1=3_000_000)
    splits = [gil] * 5 + [lock] * 5
    record = comp.summarize_components([3_000_000] * 10, splits)
    assert TraceComponents.from_dict(record.to_dict()) == record
    figures = record.to_dict()
    band = figures["at_p50"]
    assert band["wakes"] == 2 and band["reblocks_ns"] == {"gil/busy": 1_000_000.0, "lock/notifier": 500_000.0}  # one of each
    assert sum(band["reblocks_ns"].values()) == band["parts_ns"]["gil_wait"]
    assert figures["reblocks"]["causes"] == {
        "gil/busy": {"wakes": 5, "total_ns": 10_000_000, "p50_ns": 2_000_000},
        "lock/notifier": {"wakes": 5, "total_ns": 5_000_000, "p50_ns": 1_000_000},
    }
    assert figures["reblocks"]["holders"] == [
        {"on": "gil", "role": "busy", "tids": [B], "wakes": 5, "asleep_ns": 10_000_000},
        {"on": "lock", "role": "notifier", "tids": [N], "wakes": 5, "asleep_ns": 5_000_000},
    ]
    sentence = comp.band_sentence("p50", 5_200_000, {
        "notify": 1_040_000, "sched_wake": 50_000, "sched_queue": 10_000, "gil_wait": 1_750_000,
        "interpreter": 2_100_000, "unattributed": 250_000},
        {"lock/notifier": 1_700_000, "gil/busy": 40_000, "fd/process": 10_000})
    assert sentence == ("p50 5200 µs = notify 1040 + wake 50.0 + queue 10.0 + re-blocked on a lock the notifier held 1700"
                        " + other re-blocks 50.0 + the waiter's own work 2100 + other 250")
    assert rb.cause_phrase("gil/busy") == "re-blocked on the GIL a busy thread held"
    assert rb.cause_phrase("fd/process") == "re-blocked on an fd until another process woke it"
    assert rb.cause_phrase("timer/timeout") == "re-blocked on a timer until a timeout"
