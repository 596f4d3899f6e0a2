"""The runner: evidence written as it goes, failures and Ctrl-C recorded, numbers recomputable."""

from __future__ import annotations

import dataclasses
import json
import signal

import pytest

import wakelab.core.registry as registry
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, Arm, RawLatency
from wakelab.evidence.load import load_summary
from wakelab.report.text import format_summary
from conftest import is_complete
from wakelab.harness.runner import Execution, RunInterrupted, RunPlan, interruption_reason, run_plan
from wakelab.labs import LAB_135
from wakelab.analysis.stats import percentile


def _plan(tmp_path, params, arms=("event", "sigusr1-self", "signal-install"), in_process=True) -> RunPlan:
    # In-process by default: the fake arms these tests plant exist only in this process.
    return RunPlan(lab=LAB_135, arm_names=list(arms), params=params, folder=str(tmp_path), command=["test"],
                   execution=Execution(in_process=in_process), render_text=format_summary)


def _fake(name: str, measure, requires=lambda: None) -> Arm:
    return Arm(name=name, family="threads", kind=LATENCY, mechanism="fake", waiter=BLOCKED, scope=CROSS_THREAD,
               t0="t0", t1="t1", measure=measure, requires=requires)


def test_run_writes_a_valid_complete_bundle(tmp_path, tiny_params, clean_state) -> None:
    events = []
    summary = run_plan(_plan(tmp_path, tiny_params, in_process=False), lambda e, info: events.append((e, info.get("arm"))))
    assert summary["complete"] is True
    assert load_summary(str(tmp_path)) == summary
    assert (tmp_path / "summary.txt").read_text(encoding="utf-8").startswith("Lab 135: signal vs threading.Event wakeup")
    assert [e for e in events if e[0] == "arm-done"] == [("arm-done", "event"), ("arm-done", "sigusr1-self"), ("arm-done", "signal-install")]
    for entry in summary["arms"]:
        assert entry["status"] == "ok"
        assert entry["samples_file"] == "samples/%s.json" % entry["name"]


def test_percentiles_recompute_from_raw_samples(tmp_path, tiny_params) -> None:
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("event",)))
    entry = summary["arms"][0]
    raw = json.loads((tmp_path / entry["samples_file"]).read_text())
    assert raw["schema"] == "wakelab.samples" and raw["unit"] == "ns"
    samples = sorted(raw["samples_ns"])
    assert len(samples) == entry["latency"]["n"] == tiny_params.n
    assert percentile(samples, 50) == entry["latency"]["p50_ns"]
    assert samples[-1] == entry["latency"]["max_ns"]
    assert raw["warmup_discarded"] == tiny_params.warmup


def test_failed_arm_is_recorded_and_the_run_goes_on(tmp_path, tiny_params, monkeypatch) -> None:
    def explode(params):
        raise RuntimeError("planted crash")

    registry.all_arms()
    monkeypatch.setitem(registry._REGISTRY, "fake-crash", _fake("fake-crash", explode))
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("fake-crash", "event")))
    crash, event = summary["arms"]
    assert crash["status"] == "failed" and crash["reason"] == "RuntimeError: planted crash"
    assert event["status"] == "ok"
    assert summary["complete"] is False
    assert any("fake-crash failed: RuntimeError: planted crash" in c for c in summary["caveats"])


def test_unavailable_arm_is_skipped_with_reason(tmp_path, tiny_params, monkeypatch) -> None:
    registry.all_arms()
    arm = _fake("fake-absent", lambda p: None, requires=lambda: "needs a unicorn")
    monkeypatch.setitem(registry._REGISTRY, "fake-absent", arm)
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("fake-absent", "event")))
    assert summary["arms"][0]["status"] == "skipped"
    assert summary["arms"][0]["reason"] == "needs a unicorn"
    assert summary["complete"] is True
    assert "fake-absent was skipped: needs a unicorn" in (tmp_path / "summary.txt").read_text(encoding="utf-8")


def test_lost_wakes_make_the_run_incomplete(tmp_path, tiny_params, monkeypatch) -> None:
    registry.all_arms()
    lossy = _fake("fake-lossy", lambda p: RawLatency(samples_ns=tuple(range(5, 5 + p.n - 1)), lost=1, warmup_discarded=0))
    monkeypatch.setitem(registry._REGISTRY, "fake-lossy", lossy)
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("fake-lossy",)))
    assert summary["arms"][0]["status"] == "ok"
    assert summary["arms"][0]["latency"]["lost"] == 1
    assert summary["complete"] is False


def test_an_arm_short_of_samples_fails_and_the_run_is_incomplete(tmp_path, tiny_params, monkeypatch) -> None:
    # Before: an arm that returned 2 of 20 wakes was "ok" and the run "complete".
    registry.all_arms()
    short = _fake("fake-short", lambda p: RawLatency(samples_ns=(5, 6), lost=0, warmup_discarded=0))
    monkeypatch.setitem(registry._REGISTRY, "fake-short", short)
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("fake-short", "event")))
    entry = summary["arms"][0]
    assert entry["status"] == "failed"
    assert entry["reason"] == "IncompleteReply: the arm returned 2 of 20 counted wakes (2 samples + 0 lost)"
    assert summary["arms"][1]["status"] == "ok"
    assert summary["complete"] is False


def test_a_run_whose_every_arm_was_skipped_is_not_complete(tmp_path, tiny_params, monkeypatch) -> None:
    registry.all_arms()
    monkeypatch.setitem(registry._REGISTRY, "fake-absent", _fake("fake-absent", lambda p: None, requires=lambda: "needs a unicorn"))
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("fake-absent",)))
    assert summary["arms"][0]["status"] == "skipped"
    assert summary["complete"] is False
    assert load_summary(str(tmp_path))["complete"] is False


def _doc(*arms):  # type: ignore[no-untyped-def]
    return {"arms": list(arms)}


def _latency(n: int, lost: int = 0, requested: int = 200, status: str = "ok"):  # type: ignore[no-untyped-def]
    return {"kind": "latency", "status": status, "requested": requested, "latency": {"n": n, "lost": lost}, "rate": None}


def _rate(rounds: int, n_per_round: int = 20000, requested: int = 140000):  # type: ignore[no-untyped-def]
    return {"kind": "rate", "status": "ok", "requested": requested, "latency": None,
            "rate": {"rounds": rounds, "n_per_round": n_per_round}}


def test_is_complete_compares_every_measured_arm_with_its_request() -> None:
    skipped = {"kind": "latency", "status": "skipped", "requested": 200, "latency": None, "rate": None}
    assert is_complete(_doc(_latency(200), _rate(7), skipped)) is True
    assert is_complete(_doc(_latency(2))) is False  # 2 of 200
    assert is_complete(_doc(_latency(198, lost=2))) is False  # all accounted for, but lost
    assert is_complete(_doc(_latency(201))) is False  # more than asked is not what was asked either
    assert is_complete(_doc(_rate(6))) is False
    assert is_complete(_doc(_rate(7, n_per_round=2000))) is False
    assert is_complete(_doc(skipped)) is False  # nothing measured
    assert is_complete(_doc()) is False
    for status in ("failed", "interrupted", "pending"):
        assert is_complete(_doc(_latency(200), dict(_latency(0), status=status, latency=None))) is False


def test_ctrl_c_leaves_valid_incomplete_evidence(tmp_path, tiny_params, monkeypatch, clean_state) -> None:
    def interrupt(params):
        raise KeyboardInterrupt

    registry.all_arms()
    monkeypatch.setitem(registry._REGISTRY, "fake-ctrl-c", _fake("fake-ctrl-c", interrupt))
    with pytest.raises(RunInterrupted):
        run_plan(_plan(tmp_path, tiny_params, arms=("event", "fake-ctrl-c", "sigusr1-self")))
    summary = load_summary(str(tmp_path))
    assert summary["complete"] is False and summary["interrupted"] is True
    assert [a["status"] for a in summary["arms"]] == ["ok", "interrupted", "pending"]
    assert "INCOMPLETE (interrupted)" in (tmp_path / "summary.txt").read_text(encoding="utf-8")


def test_ctrl_c_inside_a_real_signal_arm_restores_state(tmp_path, tiny_params, monkeypatch, clean_state) -> None:
    import wakelab.core.families.signals as signals_module

    real_kill = signals_module.os.kill
    calls = {"n": 0}

    def kill_then_interrupt(pid, sig):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        real_kill(pid, sig)

    monkeypatch.setattr(signals_module.os, "kill", kill_then_interrupt)
    with pytest.raises(RunInterrupted):
        run_plan(_plan(tmp_path, tiny_params, arms=("sigusr1-self",)))
    assert load_summary(str(tmp_path))["arms"][0]["status"] == "interrupted"


def test_planted_delay_is_recorded_and_visible(tmp_path, tiny_params) -> None:
    params = dataclasses.replace(tiny_params, planted_delay_us=2000)
    summary = run_plan(_plan(tmp_path, params, arms=("event",)))
    assert summary["parameters"]["planted_delay_us"] == 2000
    assert summary["arms"][0]["latency"]["min_ns"] >= 2_000_000
    assert "planted delay of 2000 µs" in summary["caveats"][0]


def test_no_switch_interval_tail_is_looked_for_without_busy_threads(tmp_path, tiny_params, monkeypatch) -> None:
    # Wakes clustered just above 5 and 10 ms, but no Python thread can hold the GIL: no flag.
    samples = tuple([20_000] * (tiny_params.n - 4) + [5_050_000, 5_100_000, 10_050_000, 10_100_000])
    registry.all_arms()
    monkeypatch.setitem(registry._REGISTRY, "fake-tail", _fake("fake-tail", lambda p: RawLatency(samples, 0, 0)))
    summary = run_plan(_plan(tmp_path, tiny_params, arms=("fake-tail",)))
    assert summary["arms"][0]["quality"] == {"populations": None, "switch_interval_tail": None, "polling": None}
    assert not [w for w in summary["warnings"] if w["kind"] == "switch-interval-tail"]


def test_a_signal_carried_by_the_interrupt_is_named(tmp_path, tiny_params, monkeypatch, clean_state) -> None:
    # The CLI turns SIGTERM and SIGHUP into a KeyboardInterrupt with ``signum``: the run ends as on
    # Ctrl-C, and the arm's reason names the signal.
    class Terminated(KeyboardInterrupt):
        signum = signal.SIGTERM

    def terminate(params):
        raise Terminated()

    registry.all_arms()
    monkeypatch.setitem(registry._REGISTRY, "fake-sigterm", _fake("fake-sigterm", terminate))
    with pytest.raises(RunInterrupted) as caught:
        run_plan(_plan(tmp_path, tiny_params, arms=("event", "fake-sigterm")))
    assert caught.value.signum == signal.SIGTERM
    summary = load_summary(str(tmp_path))
    assert summary["complete"] is False and summary["interrupted"] is True
    assert [(a["status"], a["reason"]) for a in summary["arms"]] == [("ok", None), ("interrupted", "interrupted by SIGTERM")]
    assert interruption_reason(signal.SIGINT) == "interrupted by the user (Ctrl-C)"
    assert interruption_reason(signal.SIGHUP) == "interrupted by SIGHUP"
