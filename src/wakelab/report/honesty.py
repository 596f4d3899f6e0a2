"""How a run was made -- summary.txt's LAB HONESTY, the page's "Lab honesty" -- worded once from the typed bundle.

Each :class:`Fact` is a label and its words: summary.txt writes ``Label: words.``, the page a definition list.  Words
the page sets apart (a figure to see first, a warning, muted detail, code) are :class:`Marked`; the text drops the mark.
"""

from __future__ import annotations

from typing import Dict, List, Literal, NamedTuple, Sequence, Tuple, Union

from wakelab.analysis.caveats import WAITING_FOR_GIL, gil_enabled, waiter_at_t0
from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.evidence.sections import Conditions, Execution, Parameters, Soak, System
from wakelab.evidence.words import FREE_THREADED
from wakelab.formatting import DASH, finite_number, format_rate

# Structured values longer than this are cut (the bundle keeps them whole).
MAX_VALUE_CHARS = 400


Mark = Literal["b", "warn", "muted", "code"]


class Marked(NamedTuple):
    mark: Mark
    text: str


Word = Union[str, Marked]


class Fact(NamedTuple):
    label: str
    words: Tuple[Word, ...]

    @property
    def text(self) -> str:
        return "".join(w if isinstance(w, str) else w.text for w in self.words)

    @property
    def sentence(self) -> str:
        """``Label: words.`` as summary.txt writes it: no full stop after a sentence's own, or after code a reader may copy."""
        last = self.words[-1]
        code = isinstance(last, Marked) and last.mark == "code"
        return "%s: %s%s" % (self.label, self.text, "" if code or self.text.endswith(".") else ".")


def _m(mark: Mark, value: object) -> Marked:
    return Marked(mark, str(value))


def _code_after(value: object) -> Tuple[Word, ...]:
    """`` · `` and ``value`` as code (a path, a command line); nothing when it is not recorded."""
    return (" · ", _m("code", value)) if value else ()


def _joined(parts: Sequence[Tuple[Word, ...]]) -> Tuple[Word, ...]:
    return tuple(word for i, part in enumerate(parts) for word in (("; ",) if i else ()) + part)


def readable(value: object) -> str:
    """A structured value from the evidence in words, never JSON: ``yes``/``no``, lists joined, dicts as ``key value``."""
    if value is None:
        return "not reported"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join("%s %s" % (k, readable(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    return clip(str(value))


def clip(text: str, limit: int = MAX_VALUE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def honesty_facts(bundle: Bundle) -> List[Fact]:
    """When, on what and how the run was made: the facts a reader needs before quoting a figure."""
    interp, machine, params, timer, execution = bundle.interpreter, bundle.machine, bundle.parameters, bundle.timer, bundle.execution
    system, conditions, arms, harness = bundle.system, bundle.conditions, bundle.arms(), bundle.timer.harness
    own, gil = interp.own_version, gil_enabled(bundle)
    details = (["%s %s" % (interp.implementation, own)] if own else []) + [str(interp.build), str(interp.compiler)]
    described = _waiter_states(arms)
    spinning = ", ".join(a.name for a in arms if a.is_latency and waiter_at_t0(a, gil) == WAITING_FOR_GIL)
    rows: List[Tuple[str, Tuple[Word, ...]]] = [  # a fact without words is left out
        ("Date", ("%s (UTC), wall time %s s" % (bundle.started_utc, bundle.wall_s),)),
        ("Interpreter", ("%s %s " % (interp.implementation, interp.version), _m("muted", "(%s)" % "; ".join(details)),
                         ", %s%s, switch interval %s s" % ("%s build, " % FREE_THREADED if interp.free_threaded_build else "",
                                                            interp.gil_word, interp.switch_interval_s)) + _code_after(interp.executable)),
        ("Machine", (("host ", _m("b", machine.hostname), ": ") if machine.hostname else ()) + (
            "%s %s %s, %s, %s CPUs (allowed: %s)" % (machine.os, machine.kernel, machine.architecture, machine.cpu_model,
                                                     machine.cpu_count, readable(machine.cpus_allowed)),)),
        ("Timer", (
            "%s (%s); back-to-back floor " % (timer.clock, timer.implementation), _m("b", "%s ns" % timer.floor_p50_ns),
            " median, %s ns min: no figure below it means anything" % timer.floor_min_ns,
            "; harness bookkeeping %s ns per sample against %s ns for a bare pair (%s×)" % (
                harness.per_sample_ns, harness.bare_pair_ns, harness.overhead_ratio) if harness is not None else "") if timer.present else ()),
        ("Execution", (_execution_words(execution),) + _code_after(execution.python) if execution.present else ()),
        ("Soak", _soak_words(bundle.soak) if bundle.soak is not None else ()),
        ("Timing", _timing_words(params, arms, execution.in_process)),
        ("Placement", _placement_words(params, conditions)),
        ("Scheduling", (_scheduling_words(conditions, arms),)),
        ("CPU idle", _idle_words(system, conditions) if system.present or conditions.present else ()),
        ("System", _system_words(system) if system.present else ()),
        ("Models", (_m("warn", "These arms are not identical models"),
                    " (%s). Compare arms only within one waiter state." % described) if described else ()),
        ("Spinning in name only", ("%s (under this interpreter's GIL a waiter in another thread cannot poll while the notifier runs, "
                                   "so at t0 it is waiting for the GIL, and its wake is the GIL's hand-over)" % spinning,) if spinning else ()),
        ("Note", (str(bundle.note or ""),)),
        ("Command", (_m("code", " ".join(map(str, bundle.command))),)),
    ]
    return [fact for fact in (Fact(label, words) for label, words in rows) if fact.text]


def _execution_words(execution: Execution) -> str:
    """How the arms ran: in the runner's process, or in how many fresh workers over how many repetitions; compare-grade or not."""
    repeat, workers = execution.repetitions, execution.workers
    if execution.in_process:
        text = "in the runner's own process" + ("" if repeat == 1 else ", %s repetitions per arm" % repeat)
    elif repeat == 1 or not isinstance(repeat, int) or not isinstance(workers, (int, type(None))):
        text = "%s fresh worker process%s per arm, wakes split between them and pooled" % (workers, "" if workers == 1 else "es")
    else:  # an arm's workers are spread over its repetitions, at least one in each
        text = ("%s repetitions (one pass over all arms after another), %s fresh worker processes per arm spread over them, "
                "wakes split between them and pooled" % (repeat, max(int(workers or 1), repeat)))
    return text + ("; compare-grade (--rigorous: more wakes and workers than the lab's defaults)" if execution.rigorous else "")


def _soak_words(soak: Soak) -> Tuple[Word, ...]:
    """A soak's duration, and where its figures come from: exact, or a histogram of every wake beside raw samples kept."""
    words: Tuple[Word, ...] = ("%s s asked for, %s s run, in %s consecutive workers" % (soak.duration_s, soak.elapsed_s, soak.chunks),)
    words += () if soak.finished else (" ", _m("warn", "(ended early)"))
    words += ("; n, lost, min, max, mean and stdev are exact, ",)
    if not soak.from_histogram:
        return words + ("and so are the percentiles (every wake's raw sample is kept)",)
    relative = finite_number(soak.relative_error)
    return words + (
        "the percentiles come from a log-linear histogram of every wake (HdrHistogram layout, %s significant digits: within "
        "%s of the exact ones). The raw samples kept are the first %s wakes, of the first %s workers: the workers' spread, the "
        "quality flags and compare's resampling are computed on them; the plots (show --hist, report) are of every wake" % (
            soak.significant_digits, DASH if relative is None else "%.3g %%" % (100 * relative), soak.raw_kept, soak.raw_kept_slices),)


def _timing_words(params: Parameters, arms: Sequence[ArmRecord], in_process: bool) -> Tuple[Word, ...]:
    if params.open_loop:
        timing = "open loop: a notify every %s µs on a fixed schedule, latency from the scheduled instant" % params.interval_us
    else:
        timing = "closed loop: blocked waiters settle %s before each notify, latency from t0" % _settle_words(params, arms)
    words: Tuple[Word, ...] = (
        "%s; %s counted wakes per latency arm after %s discarded warm-up wakes%s; rate arms: %s rounds of %s calls after %s "
        "short warm-up round(s); every wait times out after %s s (a lost wake)" % (
            timing, params.n, params.warmup, "" if in_process else " in each worker", params.rounds,
            format_rate(params.install_n), params.warmup_rounds, params.timeout_s),)
    if params.planted_delay_us:
        words += ("; ", _m("warn", "planted delay %s µs" % params.planted_delay_us), " (self-test)")
    return words


def _settle_words(params: Parameters, arms: Sequence[ArmRecord]) -> str:
    """``1000 µs`` (a bundle from before random settles), or ``1000 µs plus a random 0-2000 µs ... (seed 7)``."""
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


def _placement_words(params: Parameters, conditions: Conditions) -> Tuple[Word, ...]:
    """Where the notifier and the waiter ran, and the load a run added beside the waiter."""
    load = ["%s busy Python thread(s) beside the waiter" % conditions.cpu_threads] if conditions.cpu_threads else []
    load += ["%s busy process(es)" % conditions.cpu_procs] if conditions.cpu_procs else []
    load += ["switch interval set to %s s" % conditions.switch_interval_s] if conditions.switch_interval_s is not None else []
    said = ("; load: %s" % ("; ".join(load) or "none added"),)
    if (params.placement or "any") == "any":
        return ("unpinned (the scheduler chose the CPUs)",) + said
    if params.placement == "same":
        return ("notifier and waiter pinned to ", _m("b", "one CPU"), " (CPU %s)" % params.notifier_cpu) + said
    return ("notifier pinned to CPU %s, waiter to CPU %s (" % (params.notifier_cpu, params.waiter_cpu), _m("b", "split"), ")") + said


def _scheduling_words(conditions: Conditions, arms: Sequence[ArmRecord]) -> str:
    """``waiter SCHED_FIFO priority 80 (each waiter thread sets its own ...); restored after every arm``; "" when none was asked for."""
    names = {"other": "SCHED_OTHER", "fifo": "SCHED_FIFO", "rr": "SCHED_RR"}
    parts = []
    for role, where in (("waiter", "each waiter thread sets its own, the C floor's too"), ("notifier", "the measuring process's main thread")):
        policy = conditions.policy(role)
        if policy:
            priority = "" if policy == "other" else " priority %s" % conditions.priority(role)
            parts.append("%s %s%s (%s)" % (role, names.get(str(policy), str(policy)), priority, where))
    if conditions.mlock:
        parts.append("memory locked (mlockall)")
    if not parts:
        return ""
    text = "%s; restored after every arm." % "; ".join(parts)
    untouched = [a.name for a in arms if conditions.waiter_policy and a.is_latency and a.ok and not a.took_waiter_policy]
    if untouched:
        text += (" The waiter's policy was not applied in %s: their waiter is not a waiter thread of the thread driver "
                 "or the C floor." % ", ".join(untouched))
    return text


def _idle_words(system: System, conditions: Conditions) -> Tuple[Word, ...]:
    """The CPU idle set-up: driver, governor, each state's exit latency, and the idle hold."""
    parts: List[Tuple[Word, ...]] = []
    if system.cpuidle_driver or system.cpuidle_governor:
        parts.append(("cpuidle driver ", _m("b", readable(system.cpuidle_driver)), ", governor %s" % readable(system.cpuidle_governor)))
    states = system.states
    if states:
        disabled = sum(1 for state in states if state.disabled)
        parts.append(("idle states %s; %s" % (
            ", ".join("%s (exit %s µs%s)" % (readable(s.name), readable(s.exit_latency_us), ", disabled" if s.disabled else "")
                      for s in states),
            "%d disabled" % disabled if disabled else "none disabled"),))
    if not conditions.idle_hold:
        parts.append(("no low-latency idle request held (deep idle states allowed)",))
    elif conditions.applied_idle_hold:
        parts.append((_m("b", "/dev/cpu_dma_latency held at 0"), " (idle CPUs kept shallow)"))
    else:
        parts.append((_m("warn", "idle hold requested but not applied"),))
    return _joined(parts)


# System settings worded by _system_words or _idle_words; any other one recorded (a newer wakelab's) is listed as it is.
_KNOWN_SYSTEM = {"clocksource", "cpufreq_governor", "smt_active", "isolated_cpus", "nohz_full", "load_average", "hypervisor",
                 "idle_states", "cpuidle_driver", "cpuidle_governor"}


def _system_words(system: System) -> Tuple[Word, ...]:
    recorded = system.recorded
    parts: List[Tuple[Word, ...]] = [("clocksource ", _m("b", readable(system.clocksource)))] if system.clocksource else []
    if "cpufreq_governor" in recorded:
        parts.append(("frequency governor %s" % readable(system.cpufreq_governor),))
    if system.smt_active is not None:
        parts.append(("SMT %s" % ("on" if str(system.smt_active) in ("1", "True", "true") else "off"),))
    if "isolated_cpus" in recorded:
        parts.append(("isolated CPUs: %s" % (system.isolated_cpus or "none"),))
    if "nohz_full" in recorded:
        parts.append(("nohz_full: %s" % (system.nohz_full or "not set"),))
    load = system.load_average
    if isinstance(load, list) and len(load) == 3:
        parts.append(("load average %s (1, 5, 15 min)" % " / ".join(readable(v) for v in load),))
    if system.hypervisor:
        parts.append((_m("b", "under a hypervisor"), " (its idle and wake-up behaviour is in every figure)"))
    parts += [("%s: %s" % (key.replace("_", " "), readable(recorded[key])),) for key in sorted(recorded) if key not in _KNOWN_SYSTEM]
    return _joined(parts)


def _waiter_states(arms: Sequence[ArmRecord]) -> str:
    """``blocked waiter: event, queue; spinning waiter: spin`` when the latency arms' waiters differ, else ""."""
    states: Dict[str, List[str]] = {}
    for a in (a for a in arms if a.is_latency):
        states.setdefault(a.waiter, []).append(a.name)
    return "; ".join("%s waiter: %s" % (state, ", ".join(names)) for state, names in states.items()) if len(states) > 1 else ""
