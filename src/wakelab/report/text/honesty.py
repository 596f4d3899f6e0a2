"""How the run was made: LAB HONESTY (:func:`wakelab.report.honesty.honesty_facts`, a bullet each), WHAT EACH ARM
TIMES (each arm's t0 and t1) and REPRODUCE (the command that measures the same again)."""

from __future__ import annotations

import shlex
from typing import List, Sequence

from wakelab.analysis.view import view_of
from wakelab.evidence.model import DEFAULT_REPEAT, ArmOrigin, ArmRecord
from wakelab.report.honesty import honesty_facts
from wakelab.report.text.wrap import Run, bullets, wrap


def format_honesty(run: Run) -> List[str]:
    return bullets([fact.sentence for fact in honesty_facts(view_of(run).bundle)])


def format_arm_definitions(run: Run) -> List[str]:
    return arm_definitions(view_of(run).bundle.arms())


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


def reproduce_commands(run: Run) -> List[str]:
    bundle = view_of(run).bundle
    lab, params, conditions, execution = bundle.lab, bundle.parameters, bundle.conditions, bundle.execution
    commands = []
    if lab.reproduce_script:
        commands.append("python3 %s" % lab.reproduce_script)
    arms = ",".join(a.name for a in bundle.arms())
    cli = "wakelab run --lab %s --arms %s --n %s --warmup %s --settle-us %s --timeout-s %s --install-n %s --rounds %s" % (
        lab.id, arms, params.n, params.warmup, params.settle_us, params.timeout_s, params.install_n, params.rounds)
    arm_files: List[str] = []
    for a in bundle.arms():
        if a.user_defined and a.origin is not None and a.origin.from_file and str(a.origin.path) not in arm_files:
            arm_files.append(str(a.origin.path))
    for path in arm_files:  # user-defined arms: the files they came from (entry points need no option)
        cli += " --arm-file %s" % shlex.quote(path)
    if params.settle_jitter_us is not None:  # absent from bundles before random settles
        cli += " --settle-jitter-us %s" % params.settle_jitter_us
        if params.seed is not None:
            cli += " --seed %s" % params.seed
    if params.planted_delay_us:
        cli += " --planted-delay-us %s" % params.planted_delay_us
    if params.placement not in (None, "any"):
        cpus = [params.notifier_cpu] if params.placement == "same" else [params.notifier_cpu, params.waiter_cpu]
        cli += " --placement %s --cpus %s" % (params.placement, ",".join(str(c) for c in cpus))
    if params.open_loop:
        cli += " --mode open --interval-us %s" % params.interval_us
    for value, flag in ((conditions.cpu_threads, "--cpu-threads"), (conditions.cpu_procs, "--cpu-procs"),
                        (conditions.switch_interval_s, "--switch-interval")):
        if value:
            cli += " %s %s" % (flag, value)
    if conditions.idle_hold:
        cli += " --idle-hold"
    for role, flag in (("waiter", "--policy"), ("notifier", "--notifier-policy")):
        if conditions.policy(role):
            cli += " %s %s" % (flag, conditions.policy(role))
            if conditions.policy(role) != "other":
                cli += " %s %s" % (flag.replace("policy", "priority"), conditions.priority(role))
    if conditions.mlock:
        cli += " --mlock"
    if execution.in_process:
        cli += " --in-process"
    elif execution.workers not in (None, 3):
        cli += " --workers %s" % execution.workers
    if execution.repetitions != DEFAULT_REPEAT:
        cli += " --repeat %s" % execution.repetitions
    if execution.rigorous:
        cli += " --rigorous"  # the counts above win over its own; the run is recorded compare-grade again
    commands.append(cli)
    return commands
