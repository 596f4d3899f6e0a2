"""How the run was made: LAB HONESTY (:func:`wakelab.report.honesty.honesty_facts`, a bullet each), WHAT EACH ARM
TIMES (each arm's t0 and t1) and REPRODUCE (the command that measures the same again)."""

from __future__ import annotations

import shlex
from typing import List, Sequence, Tuple

from wakelab.analysis.view import view_of
from wakelab.evidence.model import DEFAULT_REPEAT, ArmOrigin, ArmRecord
from wakelab.report.text.wrap import Run, wrap


def arm_definitions(arms: Sequence[ArmRecord]) -> List[str]:
    lines: List[str] = []
    for a in arms:
        lines.extend(wrap("%s -- %s" % (a.name, a.mechanism)))
        lines.extend(wrap("t0: %s" % a.t0, "      "))
        lines.extend(wrap("t1: %s" % a.t1, "      "))
        if a.user_defined:
            lines.extend(wrap("user-defined: %s" % origin_text(a.origin or ArmOrigin()), "      "))
    return lines


def origin_text(origin: ArmOrigin) -> str:
    """``arm file /x/arms.py (sha256 1a87ee44125c)`` or ``entry point a = m:A (dist 1.0)``."""
    if origin.from_file:
        return "arm file %s (sha256 %s)" % (origin.path, str(origin.sha256)[:12])
    dist = " (%s %s)" % (origin.distribution, origin.version) if origin.distribution else ""
    return "entry point %s%s" % (origin.entry_point, dist)


_BARE = object()  # a flag without a value


def reproduce_commands(run: Run) -> List[str]:
    """The reproduce script where the lab has one, then the ``wakelab run`` that measures the same again."""
    bundle = view_of(run).bundle
    lab, params, conditions, execution = bundle.lab, bundle.parameters, bundle.conditions, bundle.execution
    arm_files = dict.fromkeys(str(a.origin.path) for a in bundle.arms() if a.user_defined and a.origin is not None and a.origin.from_file)
    pinned, jitter = params.placement not in (None, "any"), params.settle_jitter_us
    cpus = [params.notifier_cpu] if params.placement == "same" else [params.notifier_cpu, params.waiter_cpu]
    waiter, notifier = conditions.policy("waiter"), conditions.policy("notifier")
    options: List[Tuple[str, object, object]] = [  # (flag, its value or _BARE, whether it is said)
        ("--lab", lab.id, True), ("--arms", ",".join(a.name for a in bundle.arms()), True), ("--n", params.n, True),
        ("--warmup", params.warmup, True), ("--settle-us", params.settle_us, True), ("--timeout-s", params.timeout_s, True),
        ("--install-n", params.install_n, True), ("--rounds", params.rounds, True),
    ] + [("--arm-file", shlex.quote(path), True) for path in arm_files] + [  # entry points need no option
        ("--settle-jitter-us", jitter, jitter is not None), ("--seed", params.seed, jitter is not None and params.seed is not None),
        ("--planted-delay-us", params.planted_delay_us, params.planted_delay_us),
        ("--placement", params.placement, pinned), ("--cpus", ",".join(str(c) for c in cpus), pinned),
        ("--mode", "open", params.open_loop), ("--interval-us", params.interval_us, params.open_loop),
        ("--cpu-threads", conditions.cpu_threads, conditions.cpu_threads), ("--cpu-procs", conditions.cpu_procs, conditions.cpu_procs),
        ("--switch-interval", conditions.switch_interval_s, conditions.switch_interval_s), ("--idle-hold", _BARE, conditions.idle_hold),
        ("--policy", waiter, waiter), ("--priority", conditions.priority("waiter"), waiter and waiter != "other"),
        ("--notifier-policy", notifier, notifier),
        ("--notifier-priority", conditions.priority("notifier"), notifier and notifier != "other"),
        ("--mlock", _BARE, conditions.mlock), ("--in-process", _BARE, execution.in_process),
        ("--workers", execution.workers, not execution.in_process and execution.workers not in (None, 3)),
        ("--repeat", execution.repetitions, execution.repetitions != DEFAULT_REPEAT),
        ("--rigorous", _BARE, execution.rigorous),  # the counts above win over its own; the run is recorded compare-grade again
    ]
    cli = "wakelab run" + "".join(" " + flag if value is _BARE else " %s %s" % (flag, value) for flag, value, said in options if said)
    return (["python3 %s" % lab.reproduce_script] if lab.reproduce_script else []) + [cli]
