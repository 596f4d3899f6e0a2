"""Separate runs told apart: what differed between two runs besides the code, and how far runs shift.

Two *separate* runs (minutes or days apart) are not an A/B: between them the machine itself changed. One busy process
beside the second run made ``event`` *faster* (0.73x) by keeping the other vCPU out of idle; an unchanged tree drifted
from 16 to 60 µs at p50 within five minutes.  compare's interval sees the spread between a run's own repetitions, not
that.  So for two separate runs compare names the conditions that differed (:func:`tell_apart`; a fact a bundle did
not record is named as not recorded, never guessed) and widens each interval by the level shifts identical earlier
runs show (:func:`level_shifts`, :func:`widen`): with s the standard deviation of their log figure, the ratio of two
separate runs carries about 2 s^2 of run-to-run variance, so the half-width in log terms becomes at least ``z *
sqrt(2) * s`` (erring wide).  With fewer than :data:`MIN_EARLIER_RUNS` such runs nothing is widened, and the
comparison says so.  Two cells of one grid took turns in one run: not separate."""

from __future__ import annotations

import dataclasses
import datetime
import math
import operator
import os
import statistics
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.compare import (
    CANNOT_TELL, RATE, ArmComparison, Judgement, RatioCI, RunComparison, format_pct, format_ratio_plain, label_of,
    minimum_detectable_effect, verdict)
from wakelab.analysis.warning_groups import BusyProcess
from wakelab.evidence.model import Bundle, Reading

# Differences below these are not named as differences (they are within what one run sees).
LOAD_DIFFERENCE = 0.5  # 1-minute load average
CPU_BUSY_DIFFERENCE = 0.2  # share of a CPU's time
FREQUENCY_DIFFERENCE = 0.05  # relative
# Fewer identical earlier runs than this say too little about how runs shift.
MIN_EARLIER_RUNS = 3
AB_ADVICE = ("for a gate, measure both in one run whose sides take turns: wakelab ab BASE HEAD "
             "(each side an interpreter, a venv or a checkout)")


@dataclasses.dataclass(frozen=True)
class Condition:
    """One condition of two runs: its name, each run's value in words, and whether they differ
    (None: a run did not record it)."""

    name: str
    baseline: str
    other: str
    differs: Optional[bool]


@dataclasses.dataclass(frozen=True)
class SeparateRuns:
    """Two separate runs told apart: the time between them and each condition checked."""

    baseline: str
    other: str
    gap_s: Optional[float]  # from the end of the earlier run to the start of the later one
    conditions: Tuple[Condition, ...]

    @property
    def differing(self) -> Tuple[Condition, ...]:
        return tuple(c for c in self.conditions if c.differs)

    @property
    def alike(self) -> Tuple[str, ...]:
        return tuple(c.name for c in self.conditions if c.differs is False)

    @property
    def unknown(self) -> Tuple[str, ...]:
        return tuple(c.name for c in self.conditions if c.differs is None)

    def to_dict(self) -> Dict[str, object]:
        return {"baseline": self.baseline, "other": self.other, "gap_s": self.gap_s,
                "differing": [dataclasses.asdict(c) for c in self.differing], "alike": list(self.alike),
                "not_recorded": list(self.unknown), "advice": AB_ADVICE}


def _grid_of(run: Bundle) -> Optional[str]:
    """The grid folder a cell's bundle belongs to (``GRID/cells/NAME``), or None."""
    folder = os.path.abspath(run.folder)
    cells = os.path.dirname(folder)
    if os.path.basename(cells) != "cells":
        return None
    grid = os.path.dirname(cells)
    return grid if os.path.isfile(os.path.join(grid, "matrix.json")) else None


def are_separate(baseline: Bundle, other: Bundle) -> bool:
    """False for two cells of one grid (they took turns in one run) and for two copies of one run (the same run id, or
    for bundles older than run ids the same start and host); True for anything else."""
    if baseline.run_id is not None or other.run_id is not None:
        same = baseline.run_id == other.run_id
    else:
        same = (baseline.started_utc, baseline.hostname) == (other.started_utc, other.hostname)
    grid = _grid_of(baseline)
    return not same and (grid is None or grid != _grid_of(other))


def _utc_seconds(text: Any) -> Optional[float]:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    return when.timestamp()


def format_gap(seconds: float) -> str:
    """``12 s``, ``4 min 10 s``, ``3 h 5 min``, ``2 days``."""
    seconds = abs(seconds)
    if seconds < 90:
        return "%d s" % round(seconds)
    if seconds < 3600:
        return "%d min %d s" % divmod(round(seconds), 60)
    if seconds < 2 * 86400:
        hours, rest = divmod(round(seconds), 3600)
        return "%d h %d min" % (hours, rest // 60)
    return "%.0f days" % (seconds / 86400)


def _readings(run: Bundle) -> Tuple[Reading, ...]:
    """The run's readings of the machine, at its start and its end (those it recorded)."""
    seen = run.observed
    return tuple(r for r in (seen.start, seen.end) if r is not None) if seen is not None else ()


def _loads(run: Bundle) -> Optional[Tuple[Optional[float], Optional[float]]]:
    """The 1-minute load average at the start and the end (the end None in older bundles)."""
    seen = run.observed
    if seen is not None:
        return (seen.start.load_1min if seen.start else None, seen.end.load_1min if seen.end else None)
    start = Reading(load_average=run.system.load_average).load_1min
    return (start, None) if start is not None else None


def _load_words(loads: Tuple[Optional[float], Optional[float]]) -> str:
    start, end = loads
    return "%s at the start, %s at the end" % ("-" if start is None else "%.2f" % start, "not recorded" if end is None else "%.2f" % end)


def _load_differs(a: Tuple[Optional[float], Optional[float]], b: Tuple[Optional[float], Optional[float]]) -> Optional[bool]:
    pa, pb = (max((v for v in loads if v is not None), default=None) for loads in (a, b))
    return None if pa is None or pb is None else abs(pa - pb) >= LOAD_DIFFERENCE


def _busy(run: Bundle) -> Optional[Tuple[List[BusyProcess], Mapping[str, float]]]:
    """The processes busy beside the run and each CPU's busy share (None: not recorded)."""
    seen = run.observed
    if seen is None or seen.busy_processes is None:
        return None
    procs = [BusyProcess(str(p.name), p.pid, float(p.cpu_share or 0), bool(p.started_during_run)) for p in seen.busy_processes]
    return procs, seen.cpu_busy


def _busy_words(busy: Tuple[List[BusyProcess], Mapping[str, float]]) -> str:
    procs, cpus = busy
    shares = "; CPUs busy %s" % ", ".join("%s %d%%" % (cpu, round(100 * v)) for cpu, v in sorted(cpus.items())) if cpus else ""
    if not procs:
        return "none besides the run's own" + shares
    named = ["%s (pid %s) %d%% of a CPU%s" % (p.name, p.pid, round(100 * p.cpu_share), ", started during the run" if p.started_during_run else "")
             for p in procs[:4]]
    return "; ".join(named) + (" and %d more" % (len(procs) - 4) if len(procs) > 4 else "") + shares


def _busy_differs(a: Tuple[List[BusyProcess], Mapping[str, float]], b: Tuple[List[BusyProcess], Mapping[str, float]]) -> bool:
    (pa, cpus_a), (pb, cpus_b) = a, b
    return (sorted(p.name for p in pa) != sorted(p.name for p in pb)
            or abs(sum(p.cpu_share for p in pa) - sum(p.cpu_share for p in pb)) >= CPU_BUSY_DIFFERENCE
            or (bool(cpus_a and cpus_b) and abs(statistics.fmean(cpus_a.values()) - statistics.fmean(cpus_b.values())) >= CPU_BUSY_DIFFERENCE))


def _frequency_condition(a: Bundle, b: Bundle) -> Condition:
    def mhz(run: Bundle) -> Optional[float]:
        values = [v for reading in _readings(run) for v in reading.cpu_mhz.values()]
        return statistics.fmean(values) if values else None

    fa, fb = mhz(a), mhz(b)
    words = [("%.0f MHz (mean of the CPUs at start and end)" % f) if f is not None else "not readable" for f in (fa, fb)]
    differs = None if fa is None or fb is None else abs(fa - fb) / max(fa, fb) >= FREQUENCY_DIFFERENCE
    return Condition("CPU frequency", words[0], words[1], differs)


def _governor(run: Bundle) -> Optional[str]:
    governors = sorted({g for reading in _readings(run) for g in reading.cpufreq_governors.values()})
    if governors:
        return ", ".join(governors)
    value = run.system.cpufreq_governor
    return str(value) if value else None


# Each reader below is None for a run without its section; an empty one is recorded, and read.

def _idle(run: Bundle) -> Optional[str]:
    system = run.system
    if not system.in_evidence:
        return None
    parts = ["governor %s" % (system.cpuidle_governor or "none")]
    if isinstance(system.idle_states, list) and system.idle_states:
        parts.append("states %s" % ", ".join("%s%s" % (s.name, " (disabled)" if s.disabled else "") for s in system.states))
    disabled = {cpu: names for reading in _readings(run) for cpu, names in reading.idle_disabled.items() if names}
    if disabled:
        parts.append("disabled on CPU %s" % "; ".join("%s: %s" % (cpu, ", ".join(names)) for cpu, names in sorted(disabled.items())))
    if run.conditions.idle_hold:
        parts.append("held shallow (--idle-hold)")
    return "; ".join(parts)


def _placement(run: Bundle) -> Optional[str]:
    params = run.parameters
    if not params.in_evidence:
        return None
    text = str(params.placement or "any")
    if params.notifier_cpu is not None or params.waiter_cpu is not None:
        text += " (notifier CPU %s, waiter CPU %s)" % (params.notifier_cpu, params.waiter_cpu)
    return text


def _build(run: Bundle) -> Optional[str]:
    if not run.interpreter.in_evidence:
        return None
    field = run.interpreter.as_recorded
    text = "%s %s (%s; %s)" % (field("implementation"), field("version"), field("build"), field("compiler"))
    if field("free_threaded_build"):
        text += ", free-threaded"
    if field("python_gil_env"):
        text += ", PYTHON_GIL=%s" % field("python_gil_env")
    return text + ", " + str(field("executable"))


def _machine(run: Bundle) -> Optional[str]:
    machine = run.machine
    return "%s, %s, kernel %s" % (machine.hostname, machine.cpu_model, machine.kernel) if machine.in_evidence else None


def _condition(name: str, a: Any, b: Any, words: Callable[[Any], str] = str,
               differs: Callable[[Any, Any], Optional[bool]] = operator.ne) -> Condition:
    """Condition ``name`` from each run's fact (None: not recorded), in ``words``; whether they differ when both have one."""
    said = ["not recorded" if fact is None else words(fact) for fact in (a, b)]
    return Condition(name, said[0], said[1], None if a is None or b is None else differs(a, b))


def tell_apart(baseline: Bundle, other: Bundle) -> SeparateRuns:
    """What differed between two separate runs besides the code (see the module docstring)."""
    (a_start, a_end), (b_start, b_end) = ((_utc_seconds(r.started_utc), _utc_seconds(r.finished_utc)) for r in (baseline, other))
    gap: Optional[float] = None
    if a_start is not None and b_start is not None:
        (first, end), later = ((a_start, a_end), b_start) if a_start <= b_start else ((b_start, b_end), a_start)
        gap = later - (end if end is not None else first)
    # Three conditions judged by their own rules, then those that differ whenever their words do.
    conditions = (_condition("load average (1 min)", _loads(baseline), _loads(other), _load_words, _load_differs),
                  _condition("busy processes", _busy(baseline), _busy(other), _busy_words, _busy_differs),
                  _frequency_condition(baseline, other)) + tuple(_condition(name, read(baseline), read(other)) for name, read in (
                      ("CPU frequency governor", _governor), ("idle states", _idle), ("placement", _placement),
                      ("interpreter build", _build), ("machine", _machine)))
    return SeparateRuns(baseline.label, other.label, gap, conditions)


@dataclasses.dataclass(frozen=True)
class LevelShifts:
    """How far identical earlier runs of one arm shifted: per figure (p50, p99, median) the standard
    deviation of its logarithm over ``runs`` runs (None: too few runs, or the figure missing)."""

    arm: str
    runs: int
    log_sd: Mapping[str, float]

    def to_dict(self) -> Dict[str, object]:
        return {"arm": self.arm, "earlier_runs": self.runs,
                "run_to_run_pct": {k: round(100 * (math.exp(v) - 1), 2) for k, v in self.log_sd.items()}}


# History figure of each judged key.
_HISTORY_FIGURE = {"p50": "p50_ns", "p99": "p99_ns", "p99_9": "p99_9_ns", "median": "ops_per_s"}


def level_shifts(points: Sequence[Any], baseline: Bundle, other: Bundle, arm: str) -> LevelShifts:
    """The level shifts of ``arm`` in ``points`` (:class:`wakelab.history.ArmPoint`, any order) that
    are identical earlier runs of the compared ones: the same conditions key as one of them
    (:func:`wakelab.history.figure_conditions`), the same machine (hostname, CPU model, kernel),
    status ok, started before the later of the two, and neither of the two itself."""
    from wakelab.history import figure_conditions

    keys = [figure_conditions(run) for run in (baseline, other)]
    hosts = {(run.machine.hostname, run.machine.cpu_model, run.machine.kernel) for run in (baseline, other)}
    latest = max(run.started_utc for run in (baseline, other))
    own = {os.path.abspath(run.folder) for run in (baseline, other)}
    # A run without a start reads "" here, not None: either way no point chosen (each started) matches it.
    own_starts = {(run.started_utc, run.machine.hostname) for run in (baseline, other)}
    chosen = []
    for point in points:
        facts, figures = point.facts, point.figures
        identical = (figures.arm == arm and figures.status == "ok" and facts.figure_conditions is not None
                     and facts.figure_conditions in keys and (facts.hostname, facts.cpu_model, facts.kernel) in hosts)
        earlier = bool(facts.started_utc) and facts.started_utc < latest
        if identical and earlier and os.path.abspath(facts.folder) not in own and (facts.started_utc, facts.hostname) not in own_starts:
            chosen.append(figures)
    log_sd: Dict[str, float] = {}
    if len(chosen) >= MIN_EARLIER_RUNS:
        for key, field in _HISTORY_FIGURE.items():
            values = [float(v) for v in (getattr(p, field) for p in chosen) if isinstance(v, (int, float)) and v > 0]
            if len(values) >= MIN_EARLIER_RUNS:
                log_sd[key] = statistics.stdev(math.log(v) for v in values)
    return LevelShifts(arm, len(chosen), log_sd)


NOT_WIDENED = ("separate runs: fewer than %d identical earlier runs in the history (same arm, conditions and machine): "
               "the interval sees each run's own spread only, not how runs shift" % MIN_EARLIER_RUNS)
NO_HISTORY = "separate runs: the history was not read (--no-history): the interval sees each run's own spread only"


def widen(arm: ArmComparison, shifts: Optional[LevelShifts], alpha: float, min_effect_pct: float) -> ArmComparison:
    """``arm`` with each interval's half-width (log terms) at least ``z * sqrt(2) * s`` of ``shifts``,
    its verdicts and minimum detectable effects judged again, and a note saying what was done
    (``shifts`` None: the history was not read)."""
    if shifts is None or not shifts.log_sd:
        return dataclasses.replace(arm, notes=arm.notes + (NO_HISTORY if shifts is None else NOT_WIDENED,))
    z = statistics.NormalDist().inv_cdf(1.0 - alpha / 2.0)
    ratios: Dict[str, RatioCI] = dict(arm.ratios)
    judgements: Dict[str, Judgement] = dict(arm.judgements)
    widened: List[str] = []
    for key, ci in arm.ratios.items():
        s = shifts.log_sd.get(key)
        judged = arm.judgements.get(key)
        if s is None or judged is None or not (ci.low > 0 and math.isfinite(ci.high)):
            continue
        centre = (math.log(ci.low) + math.log(ci.high)) / 2.0
        half = (math.log(ci.high) - math.log(ci.low)) / 2.0
        wanted = z * math.sqrt(2.0) * s
        if wanted <= half:
            continue
        low, high = math.exp(centre - wanted), math.exp(centre + wanted)
        ratios[key] = dataclasses.replace(ci, low=low, high=high)
        word = verdict(low, high, min_effect_pct, higher_is_better=(arm.kind == RATE))
        mde = minimum_detectable_effect(low, high, min_effect_pct)
        reason = ("cannot tell: separate runs of it shift ±%s from run to run; the smallest change this comparison could "
                  "detect is %s" % (format_pct(100 * (math.exp(s) - 1)), format_pct(mde))) if word == CANNOT_TELL else None
        judgements[key] = dataclasses.replace(judged, ci=ratios[key], verdict=word, mde_pct=mde, reason=reason)
        widened.append("%s to %s–%s" % (label_of(key), format_ratio_plain(low), format_ratio_plain(high)))
    main = next(iter(arm.ratios))
    note = ("separate runs: %d identical earlier runs of %s in the history shift ±%s at %s from run to run; %s"
            % (shifts.runs, arm.name, format_pct(100 * (math.exp(shifts.log_sd.get(main, 0.0)) - 1)), main,
               "intervals widened by it (%s)" % "; ".join(widened) if widened else "the intervals were wider already"))
    if widened:  # the verdicts' own sentences, judged again
        notes = tuple(n for n in arm.notes if "cannot tell" not in n) + tuple(
            "%s %s" % (label_of(k), j.reason) for k, j in judgements.items() if j.reason) + (note,)
    else:
        notes = arm.notes + (note,)
    return dataclasses.replace(arm, ratios=ratios, judgements=judgements, verdict=judgements[main].verdict if main in judgements
                               else arm.verdict, notes=notes)


def widen_comparison(comparison: RunComparison, points_of: Optional[Any], alpha: float,
                     min_effect_pct: float) -> Tuple[RunComparison, List[LevelShifts]]:
    """Every arm of ``comparison`` widened (:func:`widen`) by the level shifts of the history points
    ``points_of(arm)`` returns (None: the history is not read); the comparison and the shifts found."""
    found = [level_shifts(points_of(arm.name), comparison.baseline, comparison.other, arm.name)
             for arm in comparison.arms] if points_of is not None else []
    arms = tuple(widen(arm, found[i] if found else None, alpha, min_effect_pct) for i, arm in enumerate(comparison.arms))
    return dataclasses.replace(comparison, arms=arms), found
