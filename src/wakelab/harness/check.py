"""``wakelab check``: what on this machine will make wake latencies noisy, and how to fix it.

Reads only (pyperf's ``system show`` is the model): nothing here changes the
machine.  Each finding is computed from a facts dictionary (read once into :class:`Facts`,
the sections a run records and two of the check's own), so the logic is tested with made-up
machines.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Dict, List, Mapping, Optional

from wakelab.evidence.model import Interpreter, Machine, System, Timer

OK = "ok"
WARN = "warning"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One line of the check: a level, what was seen, and how to fix it."""

    level: str
    topic: str
    seen: str
    fix: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the check looks at, typed: the sections a run records (system, machine, interpreter,
    timer) and whether ``/dev/cpu_dma_latency`` is writable and turbo boost is on (None: not known)."""

    system: System
    machine: Machine
    interpreter: Interpreter
    timer: Timer
    dma_latency_writable: bool = False
    turbo: Optional[bool] = None

    @classmethod
    def from_dict(cls, facts: Mapping[str, object]) -> "Facts":
        """The facts of :func:`gather_facts` (or a made-up machine's); a missing one reads as not known."""
        interpreter, turbo = facts.get("interpreter"), facts.get("turbo")
        return cls(System.from_dict(facts), Machine.from_dict(facts.get("machine")),
                   Interpreter.from_dict(interpreter if isinstance(interpreter, Mapping) else {}),
                   Timer.from_dict(facts.get("timer")), bool(facts.get("dma_latency_writable")),
                   turbo if isinstance(turbo, bool) else None)


def gather_facts() -> Dict[str, object]:
    """Everything the check looks at, read from this machine."""
    from wakelab.harness.clock import measure_timer_floor
    from wakelab.harness.conditions import CPU_DMA_LATENCY
    from wakelab.harness.metadata import interpreter_info, machine_info, system_info

    facts = dict(system_info())
    facts["machine"] = machine_info()
    facts["interpreter"] = interpreter_info()
    facts["timer"] = measure_timer_floor(5000)
    facts["dma_latency_writable"] = os.access(CPU_DMA_LATENCY, os.W_OK)
    try:
        with open("/sys/devices/system/cpu/intel_pstate/no_turbo", encoding="utf-8") as fh:
            facts["turbo"] = fh.read().strip() == "0"
    except OSError:
        facts["turbo"] = None
    return facts


def evaluate(facts: Mapping[str, object]) -> List[Finding]:
    """The findings for ``facts`` (see :func:`gather_facts`), most important first."""
    findings: List[Finding] = []
    known = Facts.from_dict(facts)
    system, machine = known.system, known.machine
    cpus = len(machine.cpus_allowed or []) or int(machine.cpu_count or 1)

    load = system.load_average
    if load:
        one = float(load[0])
        if one > 0.5 * cpus:
            findings.append(Finding(WARN, "load", "load average %.2f on %d CPUs: other work competes with the waiter" % (one, cpus),
                                    "stop other work, and compare only runs taken side by side in one session"))
        else:
            findings.append(Finding(OK, "load", "load average %.2f on %d CPUs" % (one, cpus)))

    driver = system.cpuidle_driver
    states = system.states
    deep = [s for s in states if (s.exit_latency_us or 0) > 10 and not s.disabled]
    if driver in (None, "none") and not states:
        findings.append(Finding(WARN, "idle", "no cpuidle states (driver %s): an idle CPU halts, as in most VMs, and waking a "
                                "thread on it costs several times a same-CPU wake" % (driver or "absent"),
                                "measure with --placement same and --placement split side by side, or hold --idle-hold"))
    elif deep:
        findings.append(Finding(WARN, "idle", "deep idle states enabled: %s" % ", ".join(
            "%s (%s µs)" % (s.name, s.exit_latency_us) for s in deep),
            "run with --idle-hold (holds /dev/cpu_dma_latency at 0 during the run)"))
    else:
        findings.append(Finding(OK, "idle", "idle states are shallow or disabled"))

    if not known.dma_latency_writable:
        findings.append(Finding(WARN, "idle-hold", "/dev/cpu_dma_latency is not writable here, so --idle-hold will be refused",
                                "run as root on a kernel with PM QoS to use --idle-hold"))

    governor = system.cpufreq_governor
    if governor is None:
        findings.append(Finding(OK, "frequency", "no cpufreq governor exposed (fixed frequency, or set by the hypervisor)"))
    elif governor != "performance":
        findings.append(Finding(WARN, "frequency", "cpufreq governor is %s: the clock speed moves under the measurement" % governor,
                                "cpupower frequency-set -g performance (as root), and back afterwards"))
    else:
        findings.append(Finding(OK, "frequency", "cpufreq governor is performance"))
    if known.turbo:
        findings.append(Finding(WARN, "turbo", "turbo boost is on: the frequency depends on temperature and load",
                                "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (as root)"))

    isolated = system.isolated_cpus
    if not isolated:
        findings.append(Finding(WARN, "isolation", "no isolated CPUs: the scheduler may put any task beside the waiter",
                                "boot with isolcpus=N nohz_full=N and measure with --placement same --cpus N"))
    else:
        findings.append(Finding(OK, "isolation", "isolated CPUs: %s" % isolated))

    clocksource = system.clocksource
    if clocksource and clocksource not in ("tsc", "arch_sys_counter", "kvm-clock"):
        findings.append(Finding(WARN, "clock", "clocksource is %s: every timestamp is a slow read" % clocksource,
                                "use a TSC-based clocksource if the hardware allows (clocksource=tsc)"))
    elif clocksource:
        findings.append(Finding(OK, "clock", "clocksource %s" % clocksource))

    floor = known.timer.floor_p50_ns
    if isinstance(floor, (int, float)) and floor > 500:
        findings.append(Finding(WARN, "timer", "perf_counter_ns() pair costs %d ns: sub-microsecond figures are not resolvable" % floor,
                                "check the clocksource; quote nothing below a few times this floor"))
    elif floor is not None:
        findings.append(Finding(OK, "timer", "perf_counter_ns() pair costs %s ns" % floor))

    if system.smt_active == "1":
        findings.append(Finding(WARN, "smt", "SMT siblings are active: two 'CPUs' may share one core",
                                "for --placement split pick CPUs on different cores (lscpu -e)"))
    if cpus < 2:
        findings.append(Finding(WARN, "cpus", "only one CPU is available: --placement split is impossible",
                                "give the process at least two CPUs"))
    if system.hypervisor:
        findings.append(Finding(WARN, "virtualization", "running under a hypervisor: wake-ups include the host's scheduling of vCPUs",
                                "compare only runs taken side by side on the same VM; record placement"))

    if known.interpreter.debug_build:
        findings.append(Finding(WARN, "python", "this is a debug build of Python: figures are not representative",
                                "measure with a release build (--python PATH)"))
    order = {WARN: 0, OK: 1}
    return sorted(findings, key=lambda f: order[f.level])


def format_findings(findings: List[Finding]) -> str:
    lines = []
    for f in findings:
        tag = "WARNING" if f.level == WARN else "ok"
        lines.append("%-7s %-14s %s" % (tag, f.topic, f.seen))
        if f.fix:
            lines.append("%-7s %-14s fix: %s" % ("", "", f.fix))
    warnings = sum(1 for f in findings if f.level == WARN)
    lines.append("")
    lines.append("%d warning(s). Nothing was changed; wakelab records these facts with every run." % warnings)
    return "\n".join(lines) + "\n"
