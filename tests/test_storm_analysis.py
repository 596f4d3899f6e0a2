"""wakelab.analysis.storms: storm counts summed over every storm, the storm table in summary.txt,
and the guidance on storms and realtime scheduling, from the run's own figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from wakelab.analysis.caveats import bundle_of
from wakelab.analysis import storms
from wakelab.analysis.guidance import guidance_for, rank_wake_paths
from wakelab.evidence.model import Bundle
from wakelab.report.text import format_storms, format_summary

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _storm(sent: int, delivered: int, work_lost: float, **more: Any) -> Dict[str, Any]:
    info = {"signal": "SIGRTMIN", "receiver": "handler", "senders": 4, "sender_kind": "process", "sent": sent,
            "refused": 0, "delivered": delivered, "flushed": 0, "work_lost": work_lost}
    info.update(more)
    return info


def _entry(name: str, info: Any, p50_us: float = 100.0, receiver: str = "handler", signal: str = "SIGRTMIN") -> Dict[str, Any]:
    if isinstance(info, dict) and "workers" in info:
        for one in info["workers"]:
            one.update(receiver=receiver, signal=signal)
    elif isinstance(info, dict):
        info.update(receiver=receiver, signal=signal)
    return {"name": name, "family": "storms", "kind": "latency", "status": "ok", "waiter": "spinning",
            "scope": "cross-process", "info": info,
            "latency": {"n": 40, "lost": 0, "p50_ns": p50_us * 1000, "p99_ns": p50_us * 3000, "max_ns": p50_us * 4000,
                        "min_ns": p50_us * 500, "mean_ns": p50_us * 1000, "p90_ns": p50_us * 2000}}


def test_counts_are_summed_over_every_storm_and_the_ratio_is_of_the_sums() -> None:
    entry = _entry("storm-rt-handler", {"workers": [_storm(20_000, 2, 0.9), _storm(10_000, 8, 0.5), _storm(10_000, 0, 0.7)]})
    figures = storms.storm_figures(entry)
    assert figures is not None
    assert (figures.storms, figures.sent, figures.delivered) == (3, 40_000, 10)
    assert figures.ratio == pytest.approx(10 / 40_000)
    assert figures.work_lost == pytest.approx(0.7)  # the median storm's
    assert figures.receiver_title == "Python handler" and figures.p50_ns == 100_000
    assert storms.storm_figures(dict(entry, family="signals")) is None
    assert storms.storm_figures(_entry("x", {})) is None


@pytest.mark.parametrize("ratio, text", [(1.0, "100 %"), (0.9996, "100.0 %"), (0.059, "5.9 %"), (0.00035, "0.035 %"),
                                         (0.0001, "0.01 %"), (0.0, "0 %"), (None, "-")])
def test_shares_keep_their_order_of_magnitude(ratio, text) -> None:
    assert storms.format_share(ratio) == text


def _summary(arms: List[Dict[str, Any]], **conditions: Any) -> Dict[str, Any]:
    return {"schema": "wakelab.summary", "schema_version": 1, "lab": {"id": "storms"}, "arms": arms,
            "parameters": {"n": 40}, "conditions": dict(conditions), "warnings": [], "caveats": []}


def _storm_summary() -> Dict[str, Any]:
    return _summary([
        _entry("storm-usr1-handler", _storm(20_000, 7, 0.71), receiver="handler", signal="SIGUSR1"),
        _entry("storm-rt-handler", _storm(20_000, 2, 0.91), receiver="handler"),
        _entry("storm-rt-sigwait", _storm(20_000, 20_000, 0.65), receiver="sigwait"),
        _entry("storm-usr1-c-sigwait", _storm(20_000, 1_183, 0.36), receiver="c-sigwait", signal="SIGUSR1"),
    ])


def test_the_storm_table_puts_the_receivers_side_by_side() -> None:
    lines = format_storms(bundle_of(_storm_summary()))
    text = "\n".join(lines)
    assert lines[0].split() == ["arm", "signal", "received", "by", "sent", "delivered", "ratio", "reaction", "p50", "µs",
                                "p99", "µs", "work", "lost"]
    assert "storm-rt-handler" in text and "0.01 %" in text and "20,000     20,000    100 %" in text
    assert "1 storm per arm" in text
    assert format_storms(bundle_of(_summary([]))) == []


def test_storm_guidance_names_the_share_and_what_to_use_instead() -> None:
    guidance = guidance_for(Bundle(source="", folder="", summary=_storm_summary()))
    texts = [item.text for item in guidance if item.topic == storms.STORMS]
    assert any("SIGUSR1: 7 of 20,000 sent (0.035 %); SIGRTMIN: 2 of 20,000 sent (0.01 %)" in t for t in texts)
    assert any("sigtimedwait thread 20,000 of 20,000 sent (100 %)" in t for t in texts)
    assert any("the most any saw here was 5.9 % (storm-usr1-c-sigwait)" in t for t in texts)
    assert "A Python handler saw 0.01 % of a SIGRTMIN storm, sigtimedwait thread 100 %" in guidance.headline
    # Storm arms are not ranked against other wake paths, nor cited for another group's tail.
    assert [r.group for r in rank_wake_paths(Bundle(source="", folder="", summary=_storm_summary()))] == ["storms"]
    assert not any(item.topic == "tail" for item in guidance)


def _latency_entry(name: str, p50_us: float, p99_us: float, family: str = "threads", **info: Any) -> Dict[str, Any]:
    return {"name": name, "family": family, "kind": "latency", "status": "ok", "waiter": "blocked",
            "scope": "cross-thread", "info": info,
            "latency": {"n": 300, "lost": 0, "p50_ns": p50_us * 1000, "p90_ns": p99_us * 500, "p99_ns": p99_us * 1000,
                        "max_ns": p99_us * 2000, "min_ns": p50_us * 500, "mean_ns": p50_us * 1000}}


def test_realtime_guidance_says_what_fifo_bought_and_its_pitfalls() -> None:
    budget = {"sched_rt_runtime_us": 950000, "sched_rt_period_us": 1000000}
    summary = _summary([
        _latency_entry("event", 30, 1500),
        _latency_entry("event-fifo", 31, 60, waiter_sched="SCHED_FIFO priority 80", rt_budget=budget),
    ], cpu_procs=2, applied_cpu_procs=2, cpu_threads=0)
    guidance = guidance_for(Bundle(source="", folder="", summary=summary))
    texts = [item.text for item in guidance if item.topic == storms.REALTIME]
    assert texts[0].startswith("Under SCHED_FIFO 80 the Python waiter's p99 was 60.0 µs against 1.50 ms under the normal "
                               "policy (0.04×")
    assert "with 2 busy processes. Realtime protected the tail from the competing load." in texts[0]
    assert "run 950,000 of every 1,000,000 µs on a CPU" in texts[1] and "stopped for the other 50,000 µs" in texts[1]
    assert "SCHED_FIFO took the event waiter's p99 from 1.50 ms to 60.0 µs" in guidance.headline
    busy = _summary([_latency_entry("event", 40, 5000), _latency_entry("event-fifo", 35, 4800)], cpu_threads=1)
    text = next(i.text for i in guidance_for(Bundle(source="", folder="", summary=busy)) if i.topic == storms.REALTIME)
    assert "the GIL takes back what realtime bought" in text


def test_summary_txt_says_the_realtime_conditions_and_how_to_reproduce_them() -> None:
    summary = _summary([_latency_entry("event", 30, 100)], waiter_policy="fifo", waiter_priority=80,
                       notifier_policy="other", notifier_priority=0, mlock=True)
    summary.update(lab={"id": "custom", "title": "t"}, execution={"mode": "workers", "workers": 3, "repeat": 5})
    text = format_summary(summary)
    assert ("Scheduling: waiter SCHED_FIFO priority 80 (each waiter thread sets its own, the C floor's too); notifier "
            "SCHED_OTHER (the measuring process's main thread); memory locked (mlockall); restored after every arm.") in " ".join(text.split())
    assert "--policy fifo --priority 80 --notifier-policy other --mlock" in text
    assert ("The waiter's policy was not applied in event: their waiter is not a waiter thread of the thread driver "
            "or the C floor.") in " ".join(text.split())
    summary["arms"][0]["info"] = {"workers": [{"waiter_sched": "SCHED_FIFO priority 80"}]}
    assert "was not applied" not in format_summary(summary)


def test_the_storm_lab_reports_every_ratio_in_one_command(tmp_path) -> None:
    """wakelab run --lab storms: one command, the delivery ratios of both signals to a Python handler, a waiting
    thread and C side by side, with the receiver's lost work."""
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "wakelab", "run", "--lab", "storms", "-n", "6", "--warmup", "1",
                           "--repeat", "1", "--workers", "1", "--no-history", "-q", "--full", "-o", str(out)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    measured = {a["name"] for a in summary["arms"] if a["status"] == "ok"}
    table = proc.stdout.split("SIGNAL STORMS")[1].split("\n\n")[0]
    for name in ("storm-usr1-handler", "storm-rt-handler", "storm-usr1-sigwait", "storm-rt-sigwait",
                 "storm-usr1-c-handler", "storm-rt-c-handler"):
        if name in measured:
            row = next(line for line in table.splitlines() if line.strip().startswith(name + " "))
            assert "%" in row  # its ratio and its lost work
    assert {"storm-usr1-handler", "storm-rt-handler"} <= measured
