"""``summary.txt``: the run for people, rendered from the summary document alone.

Order: verdict up front, the guidance drawn from it, the lead table, the
lab-honesty block, methodology, what each arm times, caveats, limits, and the
command that reproduces it.  Everything is computed from the document, so
``wakelab show`` can re-render any bundle.  Stdlib only (the runner renders it
while measuring).

:func:`format_brief` is the short form ``wakelab run`` prints on a terminal:
the verdict, the guidance's headline, a compact table and where the full text
is -- a screen, not a scroll (about 20 lines for Lab 135, under 40 for the
catalogue's 41 arms).

The measurement-quality section says a warning that several arms share once,
then the arms worst first with their figure (:func:`format_quality`, from the
groups :mod:`wakelab.analysis.warning_groups` computes), within about a dozen
lines; ``wakelab show --full`` lists every warning arm by arm.

Every string of the document is evidence from outside (a note, a hostname, a
reason): it is rendered through :func:`wakelab.formatting.escape_text`, so no
control character reaches summary.txt or a terminal, and a table cell or a
heading stays on its line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import textwrap
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from wakelab.analysis.caveats import (
    WAITING_FOR_GIL,
    NativeRatio,
    Pairing,
    gil_enabled,
    lost_wakes,
    waiter_at_t0,
)
from wakelab.analysis.guidance import Guidance, format_ranking
from wakelab.analysis.view import RunView, view_of
from wakelab.analysis.warning_figures import (
    Figures,
    OmittedFigures,
    PollingFigures,
    PopulationCause,
    PopulationsFigures,
    SpreadFigures,
    StoredEntry,
    SwitchTailFigures,
    TimerFloorFigures,
    figures_of,
)
from wakelab.analysis.warning_groups import (
    DURATION_NS,
    SHARE,
    MachineLoad,
    PollingExplanation,
    PopulationsExplanation,
    SpreadExplanation,
    SwitchTailExplanation,
    TimerFloorExplanation,
    WarningGroup,
)
from wakelab.analysis.components import format_where_the_time_goes
from wakelab.analysis.storms import format_share, storm_table
from wakelab.core.registry import FAMILY_TITLES
from wakelab.evidence.model import DEFAULT_REPEAT, ArmOrigin, ArmRecord, Interpreter, WarningKind, WarningRecord
from wakelab.evidence.sections import Conditions, Parameters
from wakelab.evidence.words import FREE_THREADED, status_word
from wakelab.formatting import DASH, escape_strings, escape_text, format_ns, format_ns_plain, format_percent, format_rate, format_ratio, format_us

WIDTH = 100


def wrap(text: str, indent: str = "  ") -> List[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False) or [indent]


_FIGURE_UNIT = re.compile(r"(\d) (ns|µs|ms|s|ops/s)\b")
_KEEP = "\u00a0"  # textwrap never breaks at a no-break space


def wrap_figures(text: str, indent: str = "  ", subsequent: Optional[str] = None) -> List[str]:
    """:func:`wrap`, never parting a figure from its unit (``2.10 µs`` stays on one line)."""
    kept = _FIGURE_UNIT.sub(lambda m: m.group(1) + _KEEP + m.group(2), text)
    lines = textwrap.wrap(kept, WIDTH, initial_indent=indent, subsequent_indent=indent if subsequent is None else subsequent,
                          break_on_hyphens=False) or [indent]
    return [line.replace(_KEEP, " ") for line in lines]


def bullets_figures(items: Sequence[str]) -> List[str]:
    """:func:`bullets` with :func:`wrap_figures`."""
    lines: List[str] = []
    for item in items:
        lines.extend(wrap_figures(item, "  - ", "    "))
    return lines


def bullets(items: Sequence[str]) -> List[str]:
    lines: List[str] = []
    for item in items:
        lines.extend(textwrap.wrap(item, WIDTH, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False))
    return lines


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_left: int = 1) -> List[str]:
    """Plain text table; the first ``align_left`` columns are left-aligned.

    Each cell is escaped (:func:`~wakelab.formatting.escape_text`): one line, no control characters.
    """
    table = [[escape_text(c) for c in row] for row in [header, *rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for row in table:
        cells = [
            c.ljust(w) if i < align_left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


NEAREST_FLOOR = "nearest floor"


def format_native_cell(ratio: Optional[NativeRatio]) -> str:
    """A "vs C" cell: the ratio, marked ``(nearest floor)`` unless the floor is the same experiment."""
    if ratio is None:
        return DASH
    text = format_ratio(ratio.ratio)
    return text if ratio.interpreter_share else "%s (%s)" % (text, NEAREST_FLOOR)


NATIVE_LEGEND = (
    "vs C: the arm's figure over its C floor's, both from this run (for rates: how many times faster "
    "C is). A plain ratio has the same experiment in C -- same scope, waiter state and t1 -- and is "
    "the interpreter's share; a ratio marked 'nearest floor' is against the closest C experiment "
    "there is, which differs, so it is not."
)


def format_lost(arm: Union[ArmRecord, Mapping[str, Any]]) -> str:
    """``3 wakes lost`` with their causes apart when the record tells them (``2 timed out, 1 coalesced``)."""
    lost = lost_wakes(arm.entry if isinstance(arm, ArmRecord) else arm)
    if not lost.total:
        return ""
    if not (lost.coalesced or lost.stale):
        return "%d wakes lost (no wake within the timeout)" % lost.total
    parts = ["%d timed out" % lost.timed_out] if lost.timed_out else []
    if lost.coalesced:
        parts.append("%d coalesced into a later wake" % lost.coalesced)
    if lost.stale:
        parts.append("%d answered by an earlier wake" % lost.stale)
    return "%d wakes lost (%s)" % (lost.total, ", ".join(parts))


def format_pairing(pairing: Pairing) -> str:
    """``like for like: both ...`` or ``NOT like for like (waiter: ...; scope: ...)``, without the ratios."""
    if pairing.like_for_like:
        return "like for like: both %s, %s; at t0 the waiter is %s" % (pairing.waiter, pairing.scope, pairing.at_t0)
    return "NOT like for like (%s)" % "; ".join("%s: %s against %s" % (d.aspect, d.a, d.b) for d in pairing.differences)


def _status_word(arm: ArmRecord) -> str:
    return status_word(arm.status)


# Above this many latency arms with figures, the verdict ranks them instead of listing each.
RANK_ABOVE = 6


#: What a section is laid out from: a run's :class:`~wakelab.analysis.view.RunView`, or its summary document.
Run = Union[RunView, Mapping[str, Any]]


def _measured_latency_count(view: RunView) -> int:
    return sum(1 for arm in view.bundle.arms() if arm.ok and arm.p50_ns is not None)


def format_rankings(run: Run, limit: Optional[int] = None) -> List[str]:
    """One line per group of comparable arms (in-process, signals, processes ...), fastest first."""
    lines: List[str] = []
    for ranking in view_of(run).rankings:
        lines.extend(wrap_figures("%s: %s." % (ranking.title, format_ranking(ranking, limit)), "  ", "    "))
    return lines


#: Up to this many arms not measured, the short form names each; beyond, it counts them by family.
BRIEF_MISSING_BY_NAME = 12


def _not_measured(view: RunView) -> List[str]:
    names = ["%s (%s)" % (arm.name, _status_word(arm)) for arm in view.bundle.arms() if not arm.ok]
    if not names:
        return []
    return wrap("Not measured: %s." % ", ".join(names))


def format_verdict(run: Run) -> List[str]:
    """One line per measured arm (many arms: ranked by group), then each of the lab's comparisons."""
    view = view_of(run)
    lines: List[str] = []
    ranked = _measured_latency_count(view) > RANK_ABOVE
    if ranked:
        lines.extend(format_rankings(view))
    for arm in view.bundle.arms():
        if not arm.ok:
            continue
        if arm.latency is not None:
            if ranked:
                continue
            lat = arm.latency
            text = "%s: p50 %s, p99 %s over %s wakes (%s waiter, %s)." % (
                arm.name,
                format_ns(lat.p50_ns),
                format_ns(lat.p99_ns) if lat.p99_ns is not None else "not reported",
                lat.n,
                arm.waiter,
                arm.scope,
            )
            if lat.lost:
                text += " %s." % format_lost(arm)
        elif arm.rate is not None:
            rate = arm.rate
            text = "%s: %s ops/s (median of %s rounds of %s calls; empty loop %s iterations/s)." % (
                arm.name,
                format_rate(rate.ops_per_s),
                rate.rounds,
                format_rate(rate.n_per_round),
                format_rate(rate.baseline_ops_per_s),
            )
        else:
            continue  # an arm marked ok without figures has nothing to say
        lines.extend(wrap(text))
    for pairing in view.pairings:
        if pairing.p50_ratio is None:
            continue
        text = "%s / %s = %s at p50%s; %s." % (
            pairing.a,
            pairing.b,
            format_ratio(pairing.p50_ratio),
            (", %s at p99" % format_ratio(pairing.p99_ratio)) if pairing.p99_ratio is not None else "",
            format_pairing(pairing),
        )
        lines.extend(wrap(text))
    if ranked:
        lines.extend(_not_measured(view))
    if not lines:
        lines.append("  No arm produced figures in this run.")
    return lines


def format_guidance(guidance: Guidance) -> List[str]:
    """The headline, then one bullet per piece of advice (each names the arms and figures it rests on)."""
    lines = wrap_figures(guidance.headline)
    lines.extend(bullets_figures([item.text for item in guidance]))
    return lines


def format_lead_table(run: Run) -> List[str]:
    """Latency arms grouped by family (times in µs), then rate arms."""
    view = view_of(run)
    arms = view.bundle.arms()
    ratios = view.native_ratios
    latency_arms = [a for a in arms if a.is_latency]
    rate_arms = [a for a in arms if a.is_rate]
    families: List[str] = []
    for a in latency_arms:
        if a.family not in families:
            families.append(a.family)
    show_native = any(a.name in ratios for a in latency_arms)
    lines: List[str] = []
    if latency_arms:
        header = ["latency (µs)", "waiter", "scope", "n", "lost", "min", "p50", "p90", "p99", "p99.9", "max", "mean"]
        if show_native:
            header.append("vs C p50")
        rows: List[List[str]] = []
        for family in families:
            if len(families) > 1:
                rows.append(["[%s]" % FAMILY_TITLES.get(family, family)] + [""] * (len(header) - 1))
            for a in latency_arms:
                if a.family != family:
                    continue
                lat = a.latency
                if lat is None:
                    row = [a.name, a.waiter, a.scope, _status_word(a)] + [""] * (len(header) - 4)
                else:
                    row = [a.name, a.waiter, a.scope, str(lat.n), str(lat.lost)] + [
                        format_us(v) for v in (lat.min_ns, lat.p50_ns, lat.p90_ns, lat.p99_ns, lat.p99_9_ns, lat.max_ns, lat.mean_ns)]
                    if show_native:
                        row.append(format_native_cell(ratios.get(a.name)))
                rows.append(row)
                for comp_name, comp in a.components:
                    comp_row = ["  ." + comp_name, "", "", str(comp.n), ""] + [
                        format_us(v) for v in (comp.min_ns, comp.p50_ns, comp.p90_ns, comp.p99_ns, comp.p99_9_ns, comp.max_ns, comp.mean_ns)]
                    if show_native:
                        comp_row.append("")
                    rows.append(comp_row)
        lines.extend(format_table(header, rows, align_left=3))
    if rate_arms:
        if lines:
            lines.append("")
        header = ["rate", "calls/round", "rounds", "median ops/s", "slowest", "fastest", "empty loop/s", "net ns/call"]
        show_rate_native = any(a.name in ratios for a in rate_arms)
        if show_rate_native:
            header.append("C faster by")
        rows = []
        for a in rate_arms:
            rate = a.rate
            if rate is None:
                rows.append([a.name, _status_word(a)] + [""] * (len(header) - 2))
                continue
            row = [a.name, format_rate(rate.n_per_round), str(rate.rounds)] + [
                format_rate(v) for v in (rate.ops_per_s, rate.min_ops_per_s, rate.max_ops_per_s, rate.baseline_ops_per_s)]
            row.append(format_ns_plain(rate.net_ns_per_op))
            if show_rate_native:
                row.append(format_native_cell(ratios.get(a.name)))
            rows.append(row)
        lines.extend(format_table(header, rows))
    if ratios:
        lines.append("")
        lines.extend(wrap(NATIVE_LEGEND))
    return lines


def format_repetitions_and_placement(run: Run) -> List[str]:
    """Per latency arm: each repetition's p50 and their range, and the same-CPU / cross-CPU
    split of its wakes (µs); empty when no arm has either."""
    header = ["arm", "repetition p50s", "range", "same CPU: n", "p50", "p99", "cross CPU: n", "p50", "p99", "crossed"]
    rows: List[List[str]] = []
    for a in view_of(run).bundle.arms():
        if not a.is_latency or a.latency is None:
            continue
        reps, split = a.repetitions, a.cpu_split
        spread = reps if reps is not None and reps.has_spread else None
        if spread is None and split is None:
            continue
        rng = spread.range_pct if spread is not None else None
        row = [a.name, " ".join(format_us(v) for v in spread.values) if spread is not None and spread.values else "-",
               format_percent(rng) if isinstance(rng, (int, float)) else DASH]
        if split is not None:
            same, cross, share = split.same_cpu, split.cross_cpu, split.cross_share
            row += [str(same.n), format_us(same.p50_ns), format_us(same.p99_ns),
                    str(cross.n), format_us(cross.p50_ns), format_us(cross.p99_ns),
                    format_percent(share * 100) if isinstance(share, (int, float)) else DASH]
        else:
            row += ["-"] * 7
        rows.append(row)
    if not rows:
        return []
    lines = format_table(header, rows, align_left=2)
    lines.append("")
    lines.extend(wrap("range: (largest - smallest repetition p50) / their median. A wake's CPUs are read outside the "
                      "timed window: the notifier's right before t0, the waiter's right after t1; '-' where an arm "
                      "does not record them (self-signal arms, open loop). p99 "
                      "needs 100 wakes in a population."))
    return lines


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
        harness = timer.harness
        items[-1] += " Harness bookkeeping: %s ns per sample against %s ns for a bare pair (%s×)." % (
            harness.per_sample_ns, harness.bare_pair_ns, harness.overhead_ratio)
    in_process = execution.in_process
    if execution.present:
        workers, repeat = execution.workers, execution.repetitions
        if in_process:
            how = "in the runner's own process%s" % ("" if repeat == 1 else ", %s repetitions per arm" % repeat)
        elif repeat == 1:
            how = "%s fresh worker process%s per arm, wakes split between them and pooled" % (workers, "" if workers == 1 else "es")
        else:
            total = max(int(workers or 1), int(repeat))
            how = ("%s repetitions (one pass over all arms after another), %s fresh worker processes per arm spread "
                   "over them, wakes split between them and pooled" % (repeat, total))
        if execution.rigorous:
            how += "; compare-grade (--rigorous: more wakes and workers than the lab's defaults)"
        items.append("Execution: %s." % how)
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
        "times out after %s s (a lost wake)." % (timing, params.warmup, "" if in_process else " (in each worker)",
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
    load = []
    if conditions.cpu_threads:
        load.append("%s busy Python thread(s) beside the waiter" % conditions.cpu_threads)
    if conditions.cpu_procs:
        load.append("%s busy process(es)" % conditions.cpu_procs)
    if conditions.switch_interval_s is not None:
        load.append("switch interval set to %s s" % conditions.switch_interval_s)
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
    arms = [a for a in bundle.arms() if a.is_latency]
    states: Dict[str, List[str]] = {}
    for a in arms:
        states.setdefault(a.waiter, []).append(a.name)
    if len(states) > 1:
        described = "; ".join("%s waiter: %s" % (state, ", ".join(names)) for state, names in states.items())
        items.append("These arms are not identical models (%s). Compare arms only within one waiter state." % described)
    gil = gil_enabled(bundle.summary)
    on_gil = [a.name for a in arms if waiter_at_t0(a.entry, gil) == WAITING_FOR_GIL]
    if on_gil:
        items.append(
            "Spinning in name only under this interpreter's GIL (%s): a waiter in another thread cannot poll while "
            "the notifier runs, so at t0 it is waiting for the GIL, and its wake is the GIL's hand-over." % ", ".join(on_gil)
        )
    if bundle.note:
        items.append("Note: %s" % bundle.note)
    return bullets(items)


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


Warning = Union[str, Mapping[str, Any], WarningRecord]


def split_warnings(records: Sequence[Warning]) -> Tuple[List[WarningRecord], List[WarningRecord]]:
    """``(warnings, notes)`` as records: those of level ``note`` apart; worded strings (bundles before 0.2) are warnings."""
    warnings: List[WarningRecord] = []
    notes: List[WarningRecord] = []
    for record in map(WarningRecord.from_json, records):
        (notes if record.is_note else warnings).append(record)
    return warnings, notes


def _multiples(ks: Sequence[int]) -> str:
    ks = sorted(int(k) for k in ks)
    if not ks:
        return "a few"
    if ks == list(range(ks[0], ks[-1] + 1)) and len(ks) > 2:
        return "%d-%d" % (ks[0], ks[-1])
    return " or ".join(str(k) for k in ks) if len(ks) <= 2 else ", ".join(str(k) for k in ks[:-1]) + " or %d" % ks[-1]


def _population_cause(cause: Optional[PopulationCause]) -> str:
    if cause is None:
        return "Nothing this run recorded tells why; --placement same,split shows whether placement does."
    if cause.kind == "cpus":
        share = cause.cross_share
        return "Where each wake ran explains it: %s of wakes crossed CPUs, p50 %s against %s on one CPU." % (
            format_percent(float(share) * 100) if isinstance(share, (int, float)) else "some",
            format_ns(cause.cross_cpu_p50_ns), format_ns(cause.same_cpu_p50_ns))
    if cause.kind == "workers":
        medians = ", ".join(format_ns(m) for m in cause.worker_p50_ns)
        return "The worker processes' medians (%s) fall in different populations: the level shifted between processes." % medians
    if cause.kind == "placement":
        return (
            "Where the two sides ran differed between worker processes (the same CPU in %s, different CPUs in %s), "
            "which can explain it; --placement same,split measures each apart."
            % (cause.same_cpu_workers, cause.split_workers)
        )
    return "Cause recorded: %s." % json.dumps(cause.stored, sort_keys=True)


_COUNT_WORDS = {2: "two", 3: "three", 4: "four"}


def format_warning(record: Warning) -> str:
    """One warning or note of summary.json (a :class:`WarningRecord` or the entry as stored), worded.

    A sentence from an older bundle is kept as it is.  The schema leaves
    ``figures`` open, so a record whose figures are not what its kind says (a
    hand-edited or newer bundle: :func:`~wakelab.analysis.warning_figures.figures_of`
    raises), or whose kind is none of :class:`WarningKind`, is shown as its
    stored figures.
    """
    record = WarningRecord.from_json(record)
    if record.text is not None:
        return record.text
    stored = StoredEntry.of(record)
    arm = "%s: " % stored.arm if stored.arm else ""
    wording = _WORDINGS.get(record.kind) if isinstance(record.kind, WarningKind) else None
    try:
        if not isinstance(stored.figures or {}, Mapping):
            raise TypeError("figures")
        if wording is None:
            return "%s%s: %s" % (arm, stored.kind, json.dumps(dict(stored.figures or {}), sort_keys=True))
        return wording(record.arm, figures_of(record))
    except (AttributeError, KeyError, OverflowError, TypeError, ValueError):
        return "%s%s: %s" % (arm, stored.kind, json.dumps(stored.figures, sort_keys=True, default=repr))


def _word_percentiles_omitted(arm: object, f: Figures) -> str:
    assert isinstance(f, OmittedFigures)
    shown = ", ".join(
        "%s where n = %s (it needs n >= %s)" % (str(x.percentile).replace("_", "."), x.n, x.needs_n) for x in f.left_out
    )
    return (
        "Percentiles left out for want of wakes: %s. A tail percentile pQ needs n >= 1/(1-Q/100), so that at "
        "least one wake lies above it; raise --n to report it." % shown
    )


def _word_worker_spread(arm: object, f: Figures) -> str:
    assert isinstance(f, SpreadFigures)
    what = "medians" if f.medians else "rates"
    if f.between_repetitions:
        return (
            "%s: repetitions disagree (their %s differ %s): the level shifts over the run; compare gives such an arm "
            "a wider interval, and more repetitions (--repeat) narrow it." % (arm, what, format_ratio(f.max_over_min))
        )
    return (
        "%s: worker processes disagree (their %s differ %s): the level shifts between processes; raise --workers "
        "and compare runs side by side." % (arm, what, format_ratio(f.max_over_min))
    )


def _word_populations(arm: object, f: Figures) -> str:
    assert isinstance(f, PopulationsFigures)
    described = ", ".join(
        "%.0f%% between %s and %s" % (100 * p.share, format_ns(p.low_ns), format_ns(p.high_ns)) for p in f.named
    )
    more = " and %d smaller" % (f.count - len(f.named)) if f.count > len(f.named) else ""
    return (
        "%s: %s populations of wakes: %s%s (the middle 80%% of each); a single percentile hides that. %s"
        % (arm, _COUNT_WORDS.get(f.count, str(f.count)), described, more, _population_cause(f.cause))
    )


def _word_switch_interval_tail(arm: object, f: Figures) -> str:
    assert isinstance(f, SwitchTailFigures)
    return (
        "%s: %.1f%% of wakes (%s) took just over %s switch interval(s) of %s: a busy Python thread held the GIL "
        "and the waiter waited for the interpreter to force a switch."
        % (arm, 100 * f.share, f.count, _multiples(f.multiples), format_ns(f.interval_s * 1e9))
    )


def _word_timer_floor(arm: object, f: Figures) -> str:
    assert isinstance(f, TimerFloorFigures)
    series = " of .%s" % f.series if f.series else ""
    clocksource = " (clocksource %s)" % f.clocksource if f.clocksource else ""
    return (
        "%s: p50%s %s is under %s× the timer floor, %s ns per perf_counter_ns() pair%s: the clock's own cost "
        "is a tenth of the figure or more." % (arm, series, format_ns(f.p50_ns), f.multiple, f.floor_ns, clocksource)
    )


def _word_polling(arm: object, f: Figures) -> str:
    """A ``polling`` record (:func:`wakelab.analysis.quality.find_polling`), worded."""
    assert isinstance(f, PollingFigures)
    period = f.period_ns
    spread = "its wakes spread evenly from %s to %s instead of bunching near a floor as a blocked wait's do" % (
        format_ns(f.low_ns), format_ns(f.high_ns))
    figures = "(distance to an even spread %.2f)" % f.distance
    jitter = f.settle_jitter_us
    if f.spans_jitter and jitter:
        return (
            "%s: this wait polls, every %s or more slowly: %s, as far as the settle's random part (%s) reaches, "
            "so the period may be longer; --settle-jitter-us %d (twice that) would measure it %s. A wake that "
            "polls costs up to a whole period, half of it on average." % (
                arm, format_ns(period), spread, format_ns(float(jitter) * 1000), 2 * int(jitter), figures))
    return (
        "%s: this wait polls about every %s: %s. A notify is seen at the next poll, so a wake costs up to a whole "
        "period, half of it on average, however fast the machine %s." % (arm, format_ns(period), spread, figures))


#: How each kind of record is worded: ``(arm, figures of its kind) -> sentence``.
_WORDINGS: Dict[WarningKind, Callable[[object, Figures], str]] = {
    WarningKind.PERCENTILES_OMITTED: _word_percentiles_omitted,
    WarningKind.WORKER_SPREAD: _word_worker_spread,
    WarningKind.POPULATIONS: _word_populations,
    WarningKind.SWITCH_INTERVAL_TAIL: _word_switch_interval_tail,
    WarningKind.POLLING: _word_polling,
    WarningKind.TIMER_FLOOR: _word_timer_floor,
}


# -- warnings gathered by what they say ---------------------------------------------------------

QUALITY_TITLE = "MEASUREMENT QUALITY (warnings, not errors)"
#: The title when arms that share a warning were gathered on one line: where each arm's own is.
QUALITY_TITLE_GROUPED = "MEASUREMENT QUALITY (warnings, not errors; arm by arm: wakelab show --full)"
#: The quality section's bullets are kept to this many lines, where the arms a group lists can be
#: cut short (a group still names its worst arms); a warning about one arm is never cut.
QUALITY_MAX_LINES = 12
#: A group cut short still names this many arms, its worst.
GROUP_MIN_SHOWN = 1

#: What explains a group of populations records, by the cause the run recorded (None: nothing did).
_POPULATION_CAUSES = {
    "cpus": "where each wake ran explains them",
    "workers": "the level shifted between worker processes",
    "placement": "the sides' CPUs differed between worker processes (--placement same,split measures each apart)",
    None: "nothing recorded tells why (measure --placement same,split)",
}
_POPULATIONS_HEAD = "Two or more populations of wakes (a single percentile hides them)"
_LEVELS_APART = "levels apart by"


def _group_sentence(group: WarningGroup) -> str:
    """What a group's arms share, worded once, up to the colon that the arms and their figures follow."""
    explanation = group.explanation
    if isinstance(explanation, SpreadExplanation):
        what = "medians" if explanation.medians else "rates"
        if explanation.between_repetitions:
            return ("Repetitions disagree (the level shifts over the run; compare widens the interval, --repeat narrows "
                    "it), %s apart by" % what)
        return ("Worker processes disagree (the level shifts between processes; raise --workers, compare runs side "
                "by side), %s apart by" % what)
    if isinstance(explanation, PopulationsExplanation):
        return "%s; %s, %s" % (_POPULATIONS_HEAD, _POPULATION_CAUSES.get(explanation.cause, _POPULATION_CAUSES[None]),
                               _LEVELS_APART)
    if isinstance(explanation, SwitchTailExplanation):
        return ("Wakes just over multiples of the switch interval of %s (a busy Python thread held the GIL and the "
                "waiter waited for the interpreter to force a switch), share of the wakes" % format_ns(explanation.interval_s * 1e9))
    if isinstance(explanation, TimerFloorExplanation):
        return ("p50 under %s× the timer floor, %s ns per perf_counter_ns() pair%s: the clock's own cost is a tenth of "
                "the figure or more; p50" % (explanation.multiple, _plain(explanation.floor_ns),
                                        " (clocksource %s)" % explanation.clocksource if explanation.clocksource else ""))
    if isinstance(explanation, PollingExplanation):
        if explanation.settle_jitter_us:
            jitter = explanation.settle_jitter_us
            return ("These waits poll (their wakes spread evenly, as far as the settle's random part (%s) reaches, so a "
                    "period may be longer: --settle-jitter-us %d would measure it; a wake costs up to a whole period, "
                    "half of it on average), every" % (format_ns(jitter * 1000), 2 * int(jitter)))
        return ("These waits poll (their wakes spread evenly instead of bunching near a floor; a wake costs up to a "
                "whole period, half of it on average), about every")
    return str(group.kind)


def _plain(value: float) -> str:
    """``300`` for 300.0, ``312.5`` as it is (a floor stored as a whole number prints as one)."""
    return "%d" % value if float(value).is_integer() else "%s" % value


def _member_figure(group: WarningGroup, figure: float) -> str:
    if group.unit == SHARE:
        return format_percent(100 * figure)
    if group.unit == DURATION_NS:
        return format_ns(figure)
    return format_ratio(figure)


def format_group_arms(group: WarningGroup, shown: Optional[int] = None) -> str:
    """A group's arms worst first with their figure -- the first ``shown`` (all when None) and how many more --
    and their count: ``pipe 3.5×, queue 2.0× and 4 more (6 arms)``."""
    members = group.members
    count = len(members)
    shown = count if shown is None else max(1, min(shown, count))
    arms = ", ".join("%s %s" % (m.label, _member_figure(group, m.figure)) for m in members[:shown])
    more = " and %d more" % (count - shown) if shown < count else ""
    # A timer-floor group may name an arm and its components apart: each is a figure, not an arm.
    return "%s%s (%d %s)" % (arms, more, count, "figures" if any(m.series for m in members) else "arms")


def format_warning_group(group: WarningGroup, shown: Optional[int] = None) -> str:
    """A group's sentence, said once, then its arms (:func:`format_group_arms`); a group of one is its
    record worded in full (:func:`format_warning`)."""
    if not group.grouped:
        return format_warning(group.records[0])
    return "%s: %s." % (_group_sentence(group), format_group_arms(group, shown))


def format_machine_load(load: MachineLoad) -> str:
    """The other processes that kept the machine busy (the busiest two) and the 1-minute load average at the
    run's start and end, in one line where it fits: ``The machine was busy: stress (pid 42) 97% of a CPU; load
    average 0.27 → 2.10 over the run.``"""
    named = ["%s (pid %s) %s of a CPU" % (p.name, p.pid, format_percent(100 * p.cpu_share)) for p in load.busy[:2]]
    more = " and %d more" % (len(load.busy) - 2) if len(load.busy) > 2 else ""
    loads = ""
    if load.load_start is not None or load.load_end is not None:
        loads = "; load average %s → %s over the run" % tuple(
            DASH if v is None else "%.2f" % v for v in (load.load_start, load.load_end))
    return "The machine was busy: %s%s%s." % (", ".join(named), more, loads)


# -- the quality section's layout: a bullet per group, the populations' causes one line each under one head


@dataclasses.dataclass
class _Item:
    """One bullet of the quality section: the groups it lays out and how many arms each names."""

    groups: List[WarningGroup]
    shown: List[Optional[int]]

    def lines(self) -> List[str]:
        if len(self.groups) == 1:
            group = self.groups[0]
            if not group.grouped:
                return bullets([format_warning(group.records[0])])
            return bullets_figures([_keep_counts(format_warning_group(group, self.shown[0]))])
        lines = wrap_figures("%s, %s:" % (_POPULATIONS_HEAD, _LEVELS_APART), "  - ", "    ")
        for group, shown in zip(self.groups, self.shown):
            cause = group.explanation.cause if isinstance(group.explanation, PopulationsExplanation) else None
            lines.extend(wrap_figures(_keep_counts("%s: %s;" % (_POPULATION_CAUSES.get(cause, _POPULATION_CAUSES[None]),
                                                                format_group_arms(group, shown))), "    ", "      "))
        lines[-1] = lines[-1][:-1] + "."
        return lines

    def grow(self) -> None:
        """Name more arms where the bullet's last lines have room for them (no line more)."""
        for index, group in enumerate(self.groups):
            count = self.lines_count()
            while self.shown[index] is not None and int(self.shown[index] or 0) < len(group.members):
                self.shown[index] = int(self.shown[index] or 0) + 1
                if self.lines_count() > count:
                    self.shown[index] = int(self.shown[index] or 0) - 1
                    break

    def lines_count(self) -> int:
        return len(self.lines())

    def cut(self) -> bool:
        """Name one arm fewer in the group that names the most (beyond :data:`GROUP_MIN_SHOWN`); False when none can."""
        cuttable = [i for i, (g, n) in enumerate(zip(self.groups, self.shown))
                    if n is not None and n > min(GROUP_MIN_SHOWN, len(g.members))]
        if not cuttable:
            return False
        index = max(cuttable, key=lambda i: (self.shown[i] or 0, i))
        self.shown[index] = int(self.shown[index] or 0) - 1
        return True


_COUNTS = re.compile(r"(and \d+) (more) \((\d+) (arms|figures)\)")


def _keep_counts(text: str) -> str:
    """``and 24 more (27 arms)`` kept on one line by :func:`wrap_figures`."""
    return _COUNTS.sub(lambda m: "%s%s%s (%s%s%s)" % (m.group(1), _KEEP, m.group(2), m.group(3), _KEEP, m.group(4)), text)


def _quality_items(groups: Sequence[WarningGroup]) -> List[_Item]:
    """A bullet per group; the populations groups of several arms together, under one head, where there are several."""
    populations = [g for g in groups if g.grouped and isinstance(g.explanation, PopulationsExplanation)]
    items: List[_Item] = []
    for group in groups:
        if len(populations) > 1 and group in populations:
            if group is populations[0]:
                items.append(_Item(list(populations), [len(g.members) for g in populations]))
            continue
        items.append(_Item([group], [len(group.members) if group.grouped else None]))
    return items


def format_quality(run: Run, arm_by_arm: bool = False) -> List[str]:
    """The measurement-quality section's bullets: the load the run saw beside it, then its warnings gathered
    by what they say, each group naming its worst arms first, cut short where the bullets would pass
    :data:`QUALITY_MAX_LINES` lines (``arm_by_arm``: every warning on its own, as summary.json records them)."""
    view = view_of(run)
    lines: List[str] = []
    if view.machine_load is not None:
        lines.extend(bullets_figures([format_machine_load(view.machine_load)]))
    if arm_by_arm:
        return lines + bullets([format_warning(w) for w in view.warnings])
    items = _quality_items(view.warning_groups)
    blocks = [item.lines() for item in items]
    while len(lines) + sum(len(b) for b in blocks) > QUALITY_MAX_LINES:
        # Shorten the longest bullet that can still be cut by a line (of equals, the later one).
        order = sorted(range(len(items)), key=lambda i: (-len(blocks[i]), -i))
        for index in order:
            before = len(blocks[index])
            while len(blocks[index]) >= before and items[index].cut():
                blocks[index] = items[index].lines()
            if len(blocks[index]) < before:
                break
        else:
            break
    for index, item in enumerate(items):
        item.grow()  # a cut bullet's last line may have room for arms again
        blocks[index] = item.lines()
    for block in blocks:
        lines.extend(block)
    return lines


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
    lines: List[str] = []
    for a in view_of(run).bundle.arms():
        lines.extend(wrap("%s -- %s" % (a.name, a.mechanism)))
        lines.extend(wrap("t0: %s" % a.t0, "      "))
        lines.extend(wrap("t1: %s" % a.t1, "      "))
        if a.user_defined:
            lines.extend(wrap("user-defined: %s" % _origin_text(a.origin or ArmOrigin()), "      "))
    return lines


def _origin_text(origin: Union[ArmOrigin, Mapping[str, Any]]) -> str:
    """``arm file /x/arms.py (sha256 1a87ee44125c)`` or ``entry point a = m:A (dist 1.0)``."""
    if not isinstance(origin, ArmOrigin):
        origin = ArmOrigin.from_dict(origin)
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


def format_storms(summary: Mapping[str, Any]) -> List[str]:
    """The storm arms side by side: sent, delivered, the ratio, the reaction and the main thread's lost work."""
    rows = storm_table(summary)
    if not rows:
        return []
    apart = any(f.refused or f.flushed for f in rows)
    header = ["arm", "signal", "received by", "sent", "delivered", "ratio"] + (["refused", "flushed"] if apart else []) + [
        "reaction p50 µs", "p99 µs", "work lost"]
    table = []
    for f in rows:
        line = [f.arm, f.signal, f.receiver_title, "{:,}".format(f.sent), "{:,}".format(f.delivered), format_share(f.ratio)]
        if apart:
            line += ["{:,}".format(f.refused), "{:,}".format(f.flushed)]
        table.append(line + [format_us(f.p50_ns), format_us(f.p99_ns), format_share(f.work_lost)])
    storms = sorted({f.storms for f in rows})
    out = format_table(header, table, align_left=3)
    out += wrap(
        "Sent: os.kill calls that returned without error (refused: EAGAIN, a full real-time queue); delivered: the "
        "times the receiving code ran for the signal (handler calls, sigtimedwait returns, wakeup-fd bytes read); "
        "flushed: still pending when the receiver stopped looking, consumed by the clean-up. %s storm%s per arm, "
        "summed. Reaction: from a probe's send to the first delivery after it. Work lost: the receiver main thread's "
        "loop rate against a storm-free pass (the median over the storms)." % (
            "/".join(str(n) for n in storms), "" if storms == [1] else "s"))
    return out


def format_summary(summary: Mapping[str, Any], arm_by_arm: bool = False) -> str:
    """The whole summary.txt for ``summary``, every string from it escaped (no control characters).

    ``arm_by_arm``: every measurement-quality warning on its own, as summary.json
    records them (``wakelab show --full``), instead of gathered by what they say.
    """
    summary = escape_strings(summary, multiline=True)  # line feeds kept for wrapped text; cells and headings escape them
    view = view_of(summary)
    bundle = view.bundle
    lab = bundle.lab
    out: List[str] = [
        escape_text(lab.name),
        escape_text("wakelab %s · %s · %s · %s"
                    % (bundle.tool_version, bundle.started_utc, bundle.interpreter.name, bundle.run_state.word)),
        "",
    ]
    if lab.question:
        out.extend(wrap(str(lab.question), ""))
        out.append("")
    sections: List[tuple] = [
        ("VERDICT (from this run's figures)", format_verdict(view)),
        ("GUIDANCE (drawn from this run's figures; each point names what it rests on)", format_guidance(view.guidance)),
        ("LEAD TABLE", format_lead_table(view)),
        ("LAB HONESTY", format_honesty(view)),
    ]
    storms = format_storms(summary)  # empty unless the run measured a signal storm
    if storms:
        sections.insert(1, ("SIGNAL STORMS (what reached the code, summed over every storm of each arm)", storms))
    spread = format_repetitions_and_placement(view)
    if spread:
        sections.insert(3, ("REPETITIONS AND PLACEMENT (each repetition's own p50; wakes by where they ran)", spread))
    where = format_where_the_time_goes(summary)  # empty unless the run asked for --trace
    if where:
        sections.insert(2, ("WHERE THE TIME GOES", where))
    if lab.methodology:
        method: List[str] = []
        for paragraph in lab.methodology:
            if method:
                method.append("")
            method.extend(wrap(paragraph))
        sections.append(("METHODOLOGY", method))
    sections.append(("WHAT EACH ARM TIMES", format_arm_definitions(view)))
    if bundle.caveats:
        sections.append(("CAVEATS", bullets(bundle.caveats)))
    quality = format_quality(view, arm_by_arm=arm_by_arm)
    if quality:
        grouped = not arm_by_arm and any(g.grouped for g in view.warning_groups)
        sections.append((QUALITY_TITLE_GROUPED if grouped else QUALITY_TITLE, quality))
    if view.notes:
        sections.append(("NOTES", bullets([format_warning(w) for w in view.notes])))
    if lab.limits:
        sections.append(("LIMITS", bullets(lab.limits)))
    sections.append(("REPRODUCE", ["  " + escape_text(c) for c in reproduce_commands(view)]))
    for title, body in sections:
        out.append(title)
        out.extend(body)
        out.append("")
    return escape_text("\n".join(out), multiline=True)


# -- the short form, for a terminal ---------------------------------------------------------------

# A compact table with more rows than this is laid out in two columns.
BRIEF_ONE_COLUMN_ROWS = 12
# The short form's length: a screen for a lab of a few arms, and for a many-armed one.
BRIEF_MAX_LINES = 25
BRIEF_MAX_LINES_MANY = 44
NEAREST_MARK = "~"


def _compact_row(arm: ArmRecord, ratio: Optional[NativeRatio], wide: bool) -> List[str]:
    """``[arm, (waiter, scope,) p50, p99, (max,) vs C]`` of a measured latency arm, in µs."""
    lat = arm.latency
    p50, p99, worst = (lat.p50_ns, lat.p99_ns, lat.max_ns) if lat is not None else (None, None, None)
    native = DASH if ratio is None else format_ratio(ratio.ratio) + ("" if ratio.interpreter_share else NEAREST_MARK)
    if wide:
        return [arm.name, arm.waiter, arm.scope, format_us(p50), format_us(p99), format_us(worst), native]
    return [arm.name, format_us(p50), format_us(p99), native]


def format_compact_table(run: Run) -> List[str]:
    """Each measured latency arm's p50 and p99 (µs) and vs C -- two columns side by side for many arms --,
    then the rate arms, the lost wakes and the arms not measured, one line each.

    A C floor that a shown arm is measured against has no row of its own: its
    figure is in that arm's "vs C".
    """
    view = view_of(run)
    arms = view.bundle.arms()
    ratios = view.native_ratios
    floors = {r.native for r in ratios.values()}
    latency = [a for a in arms if a.is_latency and a.measured and a.name not in floors]
    wide = len(latency) <= BRIEF_ONE_COLUMN_ROWS
    rows = [_compact_row(a, ratios.get(a.name), wide) for a in latency]
    show_native = any(row[-1] != DASH for row in rows)
    header = ["latency (µs)", "waiter", "scope", "p50", "p99", "max", "vs C"] if wide else ["latency (µs)", "p50", "p99", "vs C"]
    if not show_native:
        header, rows = header[:-1], [row[:-1] for row in rows]
    lines: List[str] = []
    if rows and wide:
        lines.extend(format_table(header, rows, align_left=3))
    elif rows:
        half = (len(rows) + 1) // 2
        left = format_table(header, rows[:half])
        right = format_table(header, rows[half:]) + [""]
        pad = max(len(line) for line in left)
        lines.extend(("%s  │%s" % (one.ljust(pad), two) if two else one).rstrip() for one, two in zip(left, right))
    for a in arms:
        if not a.is_rate or not a.measured or a.name in floors:
            continue
        ops = _finite_positive(a.rate.ops_per_s if a.rate is not None else None)
        if ops is None:
            continue
        text = "%s: %s ops/s, %s per call" % (a.name, format_rate(ops), format_ns(1e9 / ops))
        ratio = ratios.get(a.name)
        if ratio is not None:
            text += "; C %s faster" % format_ratio(ratio.ratio)
        lines.extend(wrap(text))
    lost = ["%s %d" % (a.name, lost_wakes(a.entry).total) for a in latency if lost_wakes(a.entry).total]
    if lost:
        lines.extend(wrap("Lost wakes: %s." % ", ".join(lost)))
    missing = [a for a in arms if not a.measured]
    if len(missing) > BRIEF_MISSING_BY_NAME:
        # Many (a catalogue where optional libraries, a newer Python or a compiler are missing): by family.
        families: Dict[str, List[str]] = {}
        for a in missing:
            families.setdefault(a.family or "other", []).append(_status_word(a))
        lines.extend(wrap("Not measured: %d arms -- %s; summary.txt says why, arm by arm." % (len(missing), ", ".join(
            "%s %d (%s)" % (family, len(words), ", ".join(sorted(set(words)))) for family, words in families.items()))))
    elif missing:
        lines.extend(wrap("Not measured: %s." % ", ".join("%s (%s)" % (a.name, _status_word(a))
                                                          for a in missing)))
    if show_native:
        lines.extend(wrap("vs C: p50 over its C floor's, from this run; %s: a nearest floor, not the same experiment."
                          % NEAREST_MARK))
    return lines


def _finite_positive(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if number > 0 and number != float("inf") else None


def _brief_pairings(view: RunView) -> List[str]:
    lines: List[str] = []
    for pairing in view.pairings:
        if pairing.p50_ratio is None:
            continue
        differ = [d.aspect for d in pairing.differences]
        lines.extend(wrap("%s / %s = %s at p50%s; %s." % (
            pairing.a, pairing.b, format_ratio(pairing.p50_ratio),
            (", %s at p99" % format_ratio(pairing.p99_ratio)) if pairing.p99_ratio is not None else "",
            "like for like" if not differ else "NOT like for like (%s differ)" % _and_list(differ))))
    return lines


def format_brief(summary: Mapping[str, Any], folder: Optional[str] = None) -> str:
    """The short form for a terminal: verdict, guidance headline, compact table, where the full text is.

    At most :data:`BRIEF_MAX_LINES` lines for a run of a few latency arms and
    :data:`BRIEF_MAX_LINES_MANY` for more than :data:`RANK_ABOVE` (the lab's
    pairings are left to the full text when they would not fit).  Every string
    from the document is escaped, as in :func:`format_summary`.
    """
    view = view_of(escape_strings(summary, multiline=False))
    bundle = view.bundle
    rankings: List[str] = []
    for ranking in view.rankings:
        if len(ranking.ranked) > 1 and ranking.comparable:  # spinning waiters and C floors: see the table
            rankings.extend(wrap_figures("%s: %s." % (ranking.title, format_ranking(ranking, 3)), "  ", "    "))
    pairings = _brief_pairings(view)
    guidance = view.guidance
    warnings = view.warnings
    caveats = bundle.caveats
    where = os.path.join(escape_text(folder), "summary.txt") if folder else "summary.txt"
    counts = [_count(len(guidance), "point of guidance", "points of guidance"), _count(len(caveats), "caveat", "caveats"),
              _count(len(warnings), "measurement-quality warning", "measurement-quality warnings")]

    def assemble(with_pairings: bool) -> List[str]:
        verdict = rankings + (pairings if with_pairings or not rankings else [])
        out = ["%s · %s · %s · %s" % (bundle.lab.name, bundle.started_utc, bundle.interpreter.name, bundle.run_state.word),
               "", "VERDICT"]
        out += verdict or ["  See the table."]
        out += ["", "GUIDANCE"] + wrap_figures(guidance.headline) + [""]
        out += format_compact_table(view)
        out += [""] + wrap("Full text: %s (%s); figures and raw samples beside it." % (where, ", ".join(counts)), "")
        return out

    limit = BRIEF_MAX_LINES_MANY if _measured_latency_count(view) > RANK_ABOVE else BRIEF_MAX_LINES
    lines = assemble(with_pairings=True)
    if len(lines) > limit:
        lines = assemble(with_pairings=False)
    return escape_text("\n".join(lines), multiline=True) + "\n"


def _count(n: int, one: str, many: str) -> str:
    return "%s %s" % (n if n else "no", one if n == 1 else many)


def _and_list(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else "%s and %s" % (", ".join(items[:-1]), items[-1])
