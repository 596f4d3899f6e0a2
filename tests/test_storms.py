"""Signal storms (wakelab.core.families.storms on wakelab.core.drivers.storm): what is counted, what
is timed, a planted coalescing seen, and nothing left behind."""

from __future__ import annotations

import dataclasses
import errno
import os
import signal
from typing import Any, Dict, List

import pytest

from conftest import children, open_fds, process_state
from wakelab.core.drivers import storm as driver
from wakelab.core.families import storms
from wakelab.core.model import MeasureParams
from wakelab.core.registry import all_arms, get_arm

TINY = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
# A sparse storm: one sender, one signal every 10 ms (open loop), so that each send is delivered on its own
# even on a loaded 2-vCPU machine (at 3 ms, other work beside the test merged a third of them).
SPARSE = MeasureParams(n=12, warmup=2, timeout_s=1.0, mode="open", interval_us=10_000)


def _available(name: str) -> None:
    reason = get_arm(name).unavailable_reason()
    if reason:
        pytest.skip(reason)


# -- the arms ------------------------------------------------------------------------------------


def test_the_family_holds_every_receiver_for_both_signals() -> None:
    names = sorted(a.name for a in all_arms() if a.family == "storms")
    expected = sorted("storm-%s-%s" % (s, r) for s in ("usr1", "rt")
                      for r in ("handler", "sigwait", "wakeup-fd", "c-handler", "c-sigwait"))
    assert names == sorted(expected + ["storm-usr1-handler-threads", "storm-rt-handler-threads"])
    for arm in all_arms():
        if arm.family == "storms":
            assert arm.driver == "storm" and arm.open_loop
            # Each says exactly what it counts.
            assert "sent: os.kill calls that returned without error" in arm.mechanism
            assert "delivered: " in arm.mechanism and "ratio delivered/sent" in arm.mechanism
            assert "first delivery at or after the probe's kill" in arm.t1


# -- the sender's loop, with a fake kill and clock --------------------------------------------------


def _fake(refuse: Any = ()) -> Dict[str, Any]:
    state: Dict[str, Any] = {"now": 0, "kills": []}

    def clock() -> int:
        state["now"] += 10
        return state["now"]

    def kill(pid: int, signum: int) -> None:  # a kill takes time too
        state["kills"].append(state["now"])
        state["now"] += 10
        if len(state["kills"]) in refuse:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    state["clock"], state["kill"] = clock, kill
    return state


def test_the_sender_counts_sent_and_refused_and_stamps_its_probes() -> None:
    fake = _fake(refuse=(3, 11))  # the 11th kill is the third probe's
    result = driver.send_storm(1, 10, 25, 5, 4, 0, 0, 0, 10**12, fake["clock"], fake["kill"], lambda s: None)
    assert len(fake["kills"]) == 25
    assert (result["sent"], result["refused"], result["error"]) == (23, 2, None)
    # Probes are the 1st, 6th, 11th and 16th sends; t0 is the clock read right before each one's kill.
    assert len(result["t0"]) == 4 and result["t0"][2] == -1
    probe_kills = [fake["kills"][i] for i in (0, 5, 15)]
    assert [t for t in result["t0"] if t >= 0] == probe_kills


def test_the_sender_stops_on_an_error_other_than_a_full_queue() -> None:
    def kill(pid: int, signum: int) -> None:
        raise ProcessLookupError(errno.ESRCH, "No such process")

    fake = _fake()
    result = driver.send_storm(1, 10, 50, 5, 2, 0, 0, 0, 10**12, fake["clock"], kill, lambda s: None)
    assert result["error"] == "os.kill failed: No such process" and result["sent"] == 0


def test_the_sender_is_bounded_in_time() -> None:
    fake = _fake()
    result = driver.send_storm(1, 10, 10**9, 1000, 1, 0, 0, 0, 50_000, fake["clock"], fake["kill"], lambda s: None)
    assert result["sent"] < 10_000


# -- the probes' latencies, exact ------------------------------------------------------------------


def test_each_probe_takes_the_first_delivery_at_or_after_its_kill() -> None:
    params = MeasureParams(n=4, warmup=1)
    probe = driver.SenderResult(t0=[100, 200, -1, 300, 900])
    raw = driver.probe_samples(params, probe, [150, 205, 400, 800])
    # The warm-up probe (100) dropped; 200 -> 205; 300 -> 400; -1 (refused) and 900 (nothing after it) lost.
    assert list(raw.samples_ns) == [5, 100] and raw.lost == 2


def test_open_loop_probes_are_timed_from_their_schedule_and_a_planted_delay_is_the_kills() -> None:
    params = MeasureParams(n=2, warmup=0, mode="open", planted_delay_us=1)
    probe = driver.SenderResult(t0=[1000, 5000], due=[990, 4990])
    raw = driver.probe_samples(params, probe, [1500, 1999, 2000, 6100])
    # The kill began at t0 + 1000 ns: a delivery before that is an earlier send's.
    assert list(raw.samples_ns) == [2000 - 990, 6100 - 4990]


def test_the_senders_counts_are_summed_and_a_failed_sender_fails_the_storm() -> None:
    plan = driver.StormPlan(signum=signal.SIGUSR1, senders=2)
    results = [driver.SenderResult(sent=10, refused=1, started_ns=100, ended_ns=2_000_100),
               driver.SenderResult(sent=5, refused=2, started_ns=50, ended_ns=1_000_000)]
    info = driver._storm_info(plan, results, 12, (100, 10**9), (50, 10**9), TINY)
    assert (info["sent"], info["refused"], info["delivered"], info["delivery_ratio"], info["storm_s"]) == (15, 3, 12, 0.8, 0.002)
    assert info["work_lost"] == 0.5
    with pytest.raises(driver.HarnessError, match="a storm sender failed: boom"):
        driver._storm_info(plan, results + [driver.SenderResult(error="boom")], 12, (100, 10**9), (50, 10**9), TINY)


def test_a_sender_thread_whose_answer_is_not_its_counts_fails_the_storm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "send_storm", lambda *args, **kwargs: {"sent": 1, "bogus": 2})  # no signal is sent
    senders = driver._Senders(TINY, driver.StormPlan(signum=signal.SIGUSR1, senders=1, sender_kind=driver.THREAD), os.getpid())
    try:
        senders.go()
        results = senders.results()
    finally:
        senders.close()
    assert str(results[0].error).startswith("sender thread failed: TypeError(")


# -- real storms -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["storm-rt-sigwait", "storm-rt-c-sigwait", "storm-rt-c-handler"])
def test_real_time_signals_queue_every_one_is_delivered_or_flushed(name: str) -> None:
    """A real-time signal is queued: each accepted send is taken by the waiter or by the clean-up."""
    _available(name)
    raw = get_arm(name).measure(TINY)
    info = raw.info
    assert info["sent"] + info["refused"] == storms.STORM_SENDERS * driver.sends_per_sender(TINY)
    if info.get("strays"):  # a thread outside the arm took some (its handler runs merge): fewer, never more
        assert info["delivered"] + info["flushed"] < info["sent"], info
    else:
        assert info["delivered"] + info["flushed"] == info["sent"], info
    assert info["delivery_ratio"] == pytest.approx(info["delivered"] / info["sent"], abs=1e-6)
    assert 0 < info["work_free_per_s"] and info["work_lost"] <= 1.0


@pytest.mark.parametrize("name", ["storm-usr1-handler", "storm-usr1-wakeup-fd", "storm-usr1-c-handler"])
def test_a_standard_signal_is_delivered_at_most_once_a_send(name: str) -> None:
    _available(name)
    info = get_arm(name).measure(TINY).info
    assert 1 <= info["delivered"] <= info["sent"] and info["refused"] == 0
    assert info["sends_per_sender"] == driver.sends_per_sender(TINY) and info["senders"] == storms.STORM_SENDERS


def _ratio(hold_s: float) -> float:
    raw = storms.measure_storm(SPARSE, "usr1", "handler", hold_s=hold_s, senders=1)
    return float(raw.info["delivery_ratio"])


def test_a_receiver_that_blocks_the_signal_for_a_while_sees_the_ratio_fall() -> None:
    """The planted coalescing: while the receiver blocks SIGUSR1, every send merges into one pending
    signal; a sparse storm (each send delivered on its own) then loses about the held share of it."""
    _available("storm-usr1-handler")
    sends = driver.sends_per_sender(SPARSE)
    storm_s = sends * SPARSE.interval_us / 1e6
    free = _ratio(0.0)
    held = _ratio(0.7 * storm_s)
    assert free >= 0.7, "a sparse storm's sends should mostly arrive one by one (ratio %.2f)" % free
    assert held <= 0.55 and held < free - 0.25, "held %.2f against %.2f" % (held, free)


def _low_us(params: MeasureParams) -> float:
    """The arm's fastest reaction, µs: a planted delay sets a floor under every wake, so it moves the minimum by
    its size however loaded the machine is (load only ever adds), where the median of 12 wakes wanders."""
    raw = storms.measure_storm(params, "usr1", "handler", senders=1)
    assert raw.lost == 0 and len(raw.samples_ns) == params.n
    return min(raw.samples_ns) / 1000.0


def test_in_a_sparse_storm_a_delay_planted_before_the_kill_shows_by_its_size() -> None:
    """The timed window of tests/test_timed_window.py, where it can be seen: one sender, sparse sends."""
    _available("storm-usr1-handler")
    plant = 4000
    base = _low_us(SPARSE)
    planted = _low_us(dataclasses.replace(SPARSE, planted_delay_us=plant))
    after = _low_us(dataclasses.replace(SPARSE, planted_after_us=plant))
    # By its size, and only before the kill.
    # (the upper bound is loose: on a loaded machine the sender wakes late from the planted sleep itself)
    assert plant <= planted and 0.75 * plant <= planted - base <= 3 * plant, (base, planted)
    assert after - base < plant / 2, (base, after)


def test_a_failed_storm_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    _available("storm-usr1-handler")

    def broken(self: Any) -> List[Dict[str, Any]]:
        raise driver.HarnessError("planted failure")

    monkeypatch.setattr(driver._Senders, "results", broken)
    state, fds, kids = process_state(), open_fds(), children()
    with pytest.raises(driver.HarnessError, match="planted failure"):
        get_arm("storm-usr1-handler").measure(TINY)
    assert process_state() == state and open_fds() == fds
    assert children() - kids == set()
    assert signal.getsignal(signal.SIGUSR1) == state["signals"].handlers[int(signal.SIGUSR1)]


def test_signal_names() -> None:
    assert driver.signal_name(signal.SIGUSR1) == "SIGUSR1"
    assert driver.signal_name(signal.SIGRTMIN) == "SIGRTMIN"
    assert driver.signal_name(signal.SIGRTMIN + 2) == "SIGRTMIN+2"


def test_the_runner_asks_for_no_polling_where_the_arm_takes_no_settle(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from wakelab.cli import main
    from wakelab.harness import summary as harness_summary

    asked: Dict[str, bool] = {}
    real = harness_summary.quality_flags

    def spy(samples_ns: Any, interval_s: Any, settle_jitter_us: Any = None, settles: bool = True) -> Any:
        asked[str(len(asked))] = settles
        return real(samples_ns, interval_s, settle_jitter_us=settle_jitter_us, settles=settles)

    monkeypatch.setattr(harness_summary, "quality_flags", spy)
    common = ["run", "-n", "20", "--warmup", "2", "--in-process", "-q", "--no-history", "--settle-jitter-us", "0"]
    assert main(common + ["--arms", "storm-usr1-c-sigwait", "-o", str(tmp_path / "storm")]) == 0
    assert asked and not any(asked.values())
    asked.clear()
    assert main(common + ["--arms", "pipe", "-o", str(tmp_path / "pipe")]) == 0
    assert asked and all(asked.values())


def test_senders_started_before_one_that_cannot_start_are_killed_and_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    # Once the senders already running were left to the garbage collector when a later one failed to start.
    started: List[Any] = []
    real_popen = driver.subprocess.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        if len(started) == 2:
            raise OSError(errno.EMFILE, "Too many open files")
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(driver.subprocess, "Popen", popen)
    before = children()
    with pytest.raises(OSError, match="Too many open files"):
        driver._Senders(TINY, driver.StormPlan(signum=signal.SIGUSR1, senders=3), os.getpid())
    assert len(started) == 2 and all(proc.returncode is not None for proc in started)
    assert all(proc.stdout.closed and proc.stdin.closed for proc in started)
    assert children() - before == set()


def test_a_sender_process_takes_its_orders_by_name() -> None:
    # The orders cross to a sender process as a JSON object: a field that does not name a parameter fails loudly.
    import inspect
    assert list(driver.SenderArgs._fields) == list(inspect.signature(driver.send_storm).parameters)[:len(driver.SenderArgs._fields)]
