"""``wakelab check``'s findings, from made-up machines (the check reads only; nothing here touches this one)."""

from __future__ import annotations

from typing import Any, Dict

from wakelab.harness.check import OK, WARN, evaluate, format_findings

QUIET_MACHINE: Dict[str, Any] = {
    "load_average": [0.1, 0.1, 0.1],
    "cpuidle_driver": "intel_idle",
    "idle_states": [{"name": "POLL", "exit_latency_us": 0, "disabled": False},
                    {"name": "C6", "exit_latency_us": 133, "disabled": True}],
    "dma_latency_writable": True,
    "cpufreq_governor": "performance",
    "turbo": False,
    "isolated_cpus": "3",
    "clocksource": "tsc",
    "smt_active": "0",
    "hypervisor": None,
    "machine": {"cpu_count": 4, "cpus_allowed": [0, 1, 2, 3]},
    "interpreter": {"implementation": "CPython", "version": "3.13.5", "debug_build": False},
    "timer": {"floor_p50_ns": 40},
}


def warned(facts: Dict[str, Any]) -> Dict[str, str]:
    return {f.topic: f.seen for f in evaluate(facts) if f.level == WARN}


def test_a_quiet_machine_has_no_warning() -> None:
    findings = evaluate(QUIET_MACHINE)
    assert [f.level for f in findings] == [OK] * len(findings)
    assert "0 warning(s)" in format_findings(findings)


def test_each_noisy_fact_is_a_warning_with_what_was_seen() -> None:
    noisy = dict(QUIET_MACHINE, load_average=[3.0, 1.0, 1.0], cpufreq_governor="powersave", turbo=True, isolated_cpus="",
                 clocksource="hpet", smt_active="1", hypervisor="KVM", dma_latency_writable=False,
                 idle_states=[{"name": "C6", "exit_latency_us": 133, "disabled": False}, "not a state"],
                 machine={"cpu_count": 8, "cpus_allowed": [0]}, timer={"floor_p50_ns": 900},
                 interpreter={"debug_build": True})
    seen = warned(noisy)
    assert set(seen) == {"load", "idle", "idle-hold", "frequency", "turbo", "isolation", "clock", "timer", "smt", "cpus",
                         "virtualization", "python"}
    assert seen["load"].startswith("load average 3.00 on 1 CPUs")  # the CPUs it may use, not the machine's
    assert seen["idle"] == "deep idle states enabled: C6 (133 µs)"
    assert seen["python"].startswith("this is a debug build of Python")
    findings = evaluate(noisy)
    assert [f.level for f in findings] == [WARN] * len(findings)  # warnings first; here every finding is one


def test_facts_a_machine_does_not_give_read_as_unknown() -> None:
    seen = warned({})
    assert "python" not in seen and "turbo" not in seen and "timer" not in seen
    assert seen["idle"].startswith("no cpuidle states (driver absent)")
    assert seen["cpus"].startswith("only one CPU")
