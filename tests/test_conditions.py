"""Conditions: busy threads and processes, switch interval, the idle hold; always undone."""

from __future__ import annotations

import sys
import threading

import pytest

from conftest import children
from wakelab.core.model import MeasureParams
from wakelab.harness import conditions as cond


def test_worker_conditions_apply_and_restore() -> None:
    interval = sys.getswitchinterval()
    threads = threading.active_count()
    with cond.worker_conditions(MeasureParams(), cond.Conditions(cpu_threads=2, switch_interval_s=0.001)) as applied:
        assert sys.getswitchinterval() == pytest.approx(0.001)
        assert threading.active_count() == threads + 2
        assert applied == {"switch_interval_s": pytest.approx(0.001), "cpu_threads": 2}
    assert sys.getswitchinterval() == interval
    assert threading.active_count() == threads


def test_worker_conditions_restore_when_the_arm_raises() -> None:
    interval = sys.getswitchinterval()
    threads = threading.active_count()
    with pytest.raises(RuntimeError):
        with cond.worker_conditions(MeasureParams(), cond.Conditions(cpu_threads=1, switch_interval_s=0.002)):
            raise RuntimeError("arm failed")
    assert sys.getswitchinterval() == interval
    assert threading.active_count() == threads


def test_run_conditions_start_and_reap_busy_processes() -> None:
    before = children()
    with cond.run_conditions(cond.Conditions(cpu_procs=2)) as applied:
        assert applied["cpu_procs"] == 2
        assert len(children() - before) == 2
    assert children() - before == set()


def test_idle_hold_is_held_and_released_or_refused_clearly(monkeypatch, tmp_path) -> None:
    fake = tmp_path / "cpu_dma_latency"
    fake.write_bytes(b"")
    monkeypatch.setattr(cond, "CPU_DMA_LATENCY", str(fake))
    with cond.run_conditions(cond.Conditions(idle_hold=True)) as applied:
        assert applied["idle_hold"] is True
    assert fake.read_bytes() == b"\x00\x00\x00\x00"  # the PM QoS request: a 32-bit zero
    monkeypatch.setattr(cond, "CPU_DMA_LATENCY", str(tmp_path / "missing" / "cpu_dma_latency"))
    with pytest.raises(cond.ConditionError, match="cannot hold .* at 0 .*drop --idle-hold"):
        with cond.run_conditions(cond.Conditions(idle_hold=True)):
            pass
    with pytest.raises(cond.ConditionError):
        cond.check_idle_hold()


def test_conditions_round_trip() -> None:
    c = cond.Conditions(cpu_threads=1, cpu_procs=2, switch_interval_s=0.01, idle_hold=True)
    assert cond.Conditions.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="unknown conditions: bogus"):
        cond.Conditions.from_dict({"bogus": 1})
