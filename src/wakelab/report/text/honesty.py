"""How the run was made: LAB HONESTY, WHAT EACH ARM TIMES and REPRODUCE.

The interpreter, machine, timer, execution, timing, placement, load and
scheduling the figures came from; each arm's t0 and t1; and the command that
measures the same again.
"""

from __future__ import annotations

import shlex
from typing import Callable, Dict, List, Sequence

from wakelab.analysis.caveats import WAITING_FOR_GIL, gil_enabled, waiter_at_t0
from wakelab.analysis.view import view_of
from wakelab.evidence.model import DEFAULT_REPEAT, ArmOrigin, ArmRecord, Bundle, Interpreter
from wakelab.evidence.sections import Conditions, Execution, Parameters, Timer
from wakelab.evidence.words import FREE_THREADED
from wakelab.report.text.wrap import Run, bullets, wrap


def _interpreter_line(interp: Interpreter) -> str:
    build = "%s build, " % FREE_THREADED if interp.free_threaded_build else ""
    own = interp.own_version
    details = (["%s %s" % (interp.implementation, own)] if own else []) + [str(interp.build), str(interp.compiler)]
    return "%s %s (%s), %s%s, switch interval %s s" % (
        interp.implementation, interp.version, "; ".join(details), build, interp.gil_word, interp.switch_interval_s)


def format_honesty(run: Run) -> List[str]:
    bundle = view_of(run).bundle
    machine, params, timer, execution = bundle.machine, bundle.parameters, bundle.timer, bundle.execution
    items = [
        "Date: %s (UTC), wall time %s s." % (bundle.started_utc, bundle.wall_s),
        "Interpreter: %s." % _interpreter_line(bundle.interpreter),
        "Machine: %s %s %s, %s, %s CPUs (allowed: %s)." % (
            machine.os, machine.kernel, machine.architecture, machine.cpu_model, machine.cpu_count, machine.cpus_allowed),
    ]
    if timer.present:
        items.append("Timer: %s (%s); back-to-back floor %s ns median, %s ns min." % (
            timer.clock, timer.implementation, timer.floor_p50_ns, timer.floor_min_ns))
    if timer.harness is not None:
        items[-1] += " Harness bookkeeping: %s." % harness_words(timer)
    if execution.present:
        rigorous = "; compare-grade (--rigorous: more wakes and workers than the lab's defaults)" if execution.rigorous else ""
        items.append("Execution: %s%s." % (execution_words(execution), rigorous))
    soak = bundle.soak
    if soak is not None:
        if soak.from_histogram:
            where_from = ("from a log-linear histogram of every wake (HdrHistogram layout, %s significant digits: within "
                          "%.3g %% of the exact ones); the samples file keeps the raw samples of the first %s wakes "
                          "(compare resamples those) and the histogram of every wake (show --hist and report draw it)"
                          % (soak.significant_digits, 100 * float(soak.relative_error or 0), soak.raw_kept))
        else:
            where_from = "exact (every wake's raw sample is kept)"
        items.append("Soak: %s s asked for, %s s run, in %s consecutive workers%s; n, lost, min, max, mean and stdev are "
                     "exact, the percentiles %s." % (soak.duration_s, soak.elapsed_s, soak.chunks,
                                                     "" if soak.finished else " (ended early)", where_from))
    if params.open_loop:
        timing = "open loop: a notify every %s µs on a fixed schedule, latency from the scheduled instant" % params.interval_us
    else:
        timing = "closed loop: blocked waiters settle %s before each notify, latency from t0" % _settle_text(
            params, bundle.arms())
    items.append(
        "Timing: %s; %s warm-up wakes discarded per latency arm%s and %s short warm-up round(s) per rate arm; every wait "
        "times out after %s s (a lost wake)." % (timing, params.warmup, "" if execution.in_process else " (in each worker)",
                                                 params.warmup_rounds, params.timeout_s)
    )
    placement = params.placement or "any"
    if placement == "any":
        where = "unpinned (the scheduler chose the CPUs)"
    elif placement == "same":
        where = "notifier and waiter pinned to CPU %s" % params.notifier_cpu
    else:
        where = "notifier pinned to CPU %s, waiter to CPU %s" % (params.notifier_cpu, params.waiter_cpu)
    conditions = bundle.conditions
    load = load_words(conditions)
    if conditions.idle_hold:
        load.append("/dev/cpu_dma_latency held at 0" if conditions.applied_idle_hold else "idle hold requested")
    items.append("Placement: %s. Load: %s." % (where, "; ".join(load) if load else "none added"))
    scheduling = _scheduling_text(conditions, bundle.arms())
    if scheduling:
        items.append(scheduling)
    system = bundle.system
    if system.present:
        items.append("System: clocksource %s, cpuidle driver %s, load average %s%s." % (
            system.clocksource, system.cpuidle_driver, system.load_average, ", under a hypervisor" if system.hypervisor else ""))
    described = waiter_states(bundle.arms())
    if described:
        items.append("These arms are not identical models (%s).%s" % (described, ONE_WAITER_STATE))
    if spinning_on_gil(bundle):
        items.append("Spinning in name only under this interpreter's GIL (%s): %s" % (", ".join(spinning_on_gil(bundle)), ON_GIL))
    if bundle.note:
        items.append("Note: %s" % bundle.note)
    return bullets(items)


ONE_WAITER_STATE = " Compare arms only within one waiter state."
ON_GIL = ("a waiter in another thread cannot poll while the notifier runs, so at t0 it is waiting for the GIL, and its wake is "
          "the GIL's hand-over.")


def harness_words(timer: Timer, value: Callable[[object], str] = str) -> str:
    harness = timer.harness
    assert harness is not None
    return "%s ns per sample against %s ns for a bare pair (%s×)" % (
        value(harness.per_sample_ns), value(harness.bare_pair_ns), value(harness.overhead_ratio))


def execution_words(execution: Execution, value: Callable[[object], str] = str) -> str:
    """How the arms ran (``value`` places each figure: the page escapes them)."""
    repeat, workers = execution.repetitions, execution.workers
    if execution.in_process:
        return "in the runner's own process" + ("" if repeat == 1 else ", %s repetitions per arm" % value(repeat))
    if repeat == 1 or not isinstance(repeat, int) or not isinstance(workers, (int, type(None))):
        return "%s fresh worker process%s per arm, wakes split between them and pooled" % (value(workers), "" if workers == 1 else "es")
    # An arm's workers are spread over its repetitions, at least one in each.
    return ("%s repetitions (one pass over all arms after another), %s fresh worker processes per arm spread over them, "
            "wakes split between them and pooled" % (value(repeat), value(max(int(workers or 1), repeat))))


def spinning_on_gil(bundle: Bundle) -> List[str]:
    """The latency arms whose spinning waiter waits for the GIL at t0 under this interpreter."""
    gil = gil_enabled(bundle)
    return [a.name for a in bundle.arms() if a.is_latency and waiter_at_t0(a, gil) == WAITING_FOR_GIL]


def load_words(conditions: Conditions) -> List[str]:
    """The load a run added beside the waiter, one phrase each (summary.txt's and the page's Placement)."""
    load = ["%s busy Python thread(s) beside the waiter" % conditions.cpu_threads] if conditions.cpu_threads else []
    load += ["%s busy process(es)" % conditions.cpu_procs] if conditions.cpu_procs else []
    return load + (["switch interval set to %s s" % conditions.switch_interval_s] if conditions.switch_interval_s is not None else [])


def waiter_states(arms: Sequence[ArmRecord]) -> str:
    """``blocked waiter: event, queue; spinning waiter: spin`` when the latency arms' waiters differ, else ""."""
    states: Dict[str, List[str]] = {}
    for a in (a for a in arms if a.is_latency):
        states.setdefault(a.waiter, []).append(a.name)
    return "; ".join("%s waiter: %s" % (state, ", ".join(names)) for state, names in states.items()) if len(states) > 1 else ""


def _scheduling_text(conditions: Conditions, arms: Sequence[ArmRecord] = ()) -> str:
    """``Scheduling: waiter SCHED_FIFO priority 80 (each waiter thread sets its own) ...``; "" when none was asked for."""
    names = {"other": "SCHED_OTHER", "fifo": "SCHED_FIFO", "rr": "SCHED_RR"}
    parts = []
    for role, where in (("waiter", "each waiter thread sets its own, the C floor's too"), ("notifier", "the measuring process's main thread")):
        policy = conditions.policy(role)
        if policy:
            name = names.get(str(policy), str(policy))
            if policy != "other":
                name += " priority %s" % conditions.priority(role)
            parts.append("%s %s (%s)" % (role, name, where))
    if conditions.mlock:
        parts.append("memory locked (mlockall)")
    if not parts:
        return ""
    text = "Scheduling: %s; restored after every arm." % "; ".join(parts)
    untouched = [a.name for a in arms if conditions.waiter_policy and a.is_latency and a.ok and not a.took_waiter_policy]
    if untouched:
        text += (" The waiter's policy was not applied in %s: their waiter is not a waiter thread of the thread driver "
                 "or the C floor." % ", ".join(untouched))
    return text


def _settle_text(params: Parameters, arms: Sequence[ArmRecord]) -> str:
    """``1000 µs`` (a bundle from before random settles), or ``1000 µs plus a random 0-2000 µs (seed 7)``."""
    text = "%s µs" % params.settle_us
    jitter = params.settle_jitter_us
    if jitter is None:
        return text
    if jitter:
        seed = params.seed
        text += " plus a random 0-%s µs drawn for each wake%s" % (jitter, "" if seed is None else " (seed %s)" % seed)
    else:
        text += ", the same for every wake (no random part)"
    own = ["%s 0-%s µs" % (a.name, a.settle_jitter_us) for a in arms if a.settle_jitter_us]
    if own:
        text += " (a larger random part, the arm's own minimum: %s)" % ", ".join(own)
    return text


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
