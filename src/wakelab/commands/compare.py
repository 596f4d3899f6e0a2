"""``wakelab compare``: is a run faster or slower than a baseline, arm by arm?

The statistics and the comparability rules live in :mod:`wakelab.analysis.compare`, what tells separate runs apart in
:mod:`wakelab.analysis.run_conditions`; this module parses the options, reads the history separate runs need, renders
the text table or the JSON document (every string from the evidence escaped for the terminal) and picks the exit
status (0 compared, 1 a regression beyond ``--fail-on-regression``, 2 bad input or runs that are not comparable).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import string
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.analysis.compare import (
    DEFAULT_ALPHA, DEFAULT_METRICS, DEFAULT_MIN_EFFECT_PCT, DEFAULT_RESAMPLES, DEFAULT_SEED, LATENCY, RATE, RunComparison,
    Settings, compare_grid, compare_runs, find_regressions, format_p, format_ratio_plain, grid_across, label_of, load_run)
from wakelab.commands import EXIT_OK
from wakelab.commands._options import number_in, parsed_by, whole_number
from wakelab.errors import UsageError
from wakelab.formatting import escape_text, format_percent, format_rate, format_signed_us, format_us

if TYPE_CHECKING:
    from wakelab.analysis.run_conditions import LevelShifts, SeparateRuns

    # Per other run's label: what told it apart from the baseline, and the level shifts that widened it.
    Separate = Dict[str, Tuple[SeparateRuns, List[LevelShifts]]]

EXIT_REGRESSION = 1
COMPARE_SCHEMA = "wakelab.analysis.compare"
# 2: two-level bootstrap intervals, verdicts with --min-effect (no difference / cannot tell),
#    per-percentile verdicts, spread and minimum detectable effect, tail_regression, units,
#    across, grid; --metric is a list.  1: one-level bootstrap, Mann-Whitney + CI verdict.
COMPARE_SCHEMA_VERSION = 2
MAX_RUNS = len(string.ascii_uppercase)
RESAMPLES_LIMITS = (100, 100_000)
SEED_LIMITS = (0, 2**32 - 1)

EPILOG = """\
verdicts (per percentile: p50; p99 when both runs have n >= 100; p99.9 when n >= 1000; rate arms: the
median round's ops/s), from the (1 - alpha) interval of the ratio other/baseline, read as a time ratio
(above 1 slower), with m = --min-effect / 100:
  slower          the interval lies entirely above 1 + m
  faster          the interval lies entirely below 1 / (1 + m)
  no difference   the interval lies inside [1 / (1 + m), 1 + m]: any change is smaller than m
  cannot tell     otherwise: the runs vary too much for m; the note names the spread and the minimum
                  detectable effect (MDE)
  not tested      fewer than 3 samples or rounds on a side

The interval comes from a two-level bootstrap: the units of an arm are its worker slices (each fresh worker
process of each repetition, see wakelab run --repeat); a resample draws units with replacement, then wakes
within each drawn unit. It sees run-to-run variation between worker processes, not only wake-to-wake noise.
MDE = (1 + m) * exp(h) - 1, h the half-width of the interval in log terms: the smallest change that this
comparison could still call slower. The Mann-Whitney U test (MWU p) is shown as a secondary check only.

--fail-on-regression PCT fails (exit 1) when, at any percentile of --metric (default p50,p99), an arm's
verdict is "slower" and its ratio exceeds 1 + PCT/100: a tail regression fails even when the p50 improved.
Rate arms always gate on their median ops/s.

runs that differ in conditions are refused unless every difference is named with --across NAME[,NAME]:
placement, settle, planted-delay, mode, interval, cpu-threads, cpu-procs, idle-hold, switch-interval,
interpreter (which also turns the interpreter warning into a difference compared on purpose).
A GRID folder (wakelab run with several --python, --placement, --settle-us or --cpu-threads values) compares
every cell with --baseline-cell (default: the first) across the dimensions the grid varies.

exit status:
  0  compared (and no regression beyond --fail-on-regression, when given)
  1  --fail-on-regression: an arm is slower by more than PCT percent at a gated percentile
  2  bad input: a missing or corrupt bundle, a bad option, or runs that are not comparable
     (no arm in common, an arm of another kind, waiter state, scope or unit, a difference in
     --settle-us, --planted-delay-us, --placement, --mode or conditions that --across does not name,
     a grid mixed with runs, a --baseline-cell the grid does not have)

Differences in machine or pinned CPUs are printed as warnings, not errors: every ratio then includes them.

separate runs (any two runs but the cells of one grid, whose repetitions took turns): the machine itself changes
between them, so compare names what differed besides the code -- the load and busy processes each run saw, CPU
frequency and governor, idle states, placement, interpreter build, machine, the time between them (summary.json
observed; "not recorded" for older bundles) -- and widens each interval to the run-to-run shift of identical
earlier runs in the history (same arm, conditions and machine, at least 3; --history PATH, --no-history), saying
so when there are none. A --fail-on-regression check of separate runs says it is not an A/B: for a gate, use
wakelab ab BASE HEAD, whose sides take turns in one run.
"""


_alpha = number_in("a number such as 0.05", lambda v: 0.0 < v <= 0.5, "above 0 and at most 0.5")
_percent = number_in("a percentage such as 10", lambda v: 0.0 <= v <= 10_000.0, "between 0 and 10,000 (percent)")
_min_effect = number_in("a percentage such as 5", lambda v: 0.0 < v < 100.0, "above 0 and below 100 (percent)")


_across = parsed_by("wakelab.analysis.compare", "parse_across")
_metrics = parsed_by("wakelab.analysis.compare", "parse_metrics")


def register(sub: Any) -> None:
    compare = sub.add_parser(
        "compare",
        help="compare runs (or a grid's cells) with a baseline, arm by arm, with confidence intervals",
        description=(
            "Compare each RUN with BASELINE, arm by arm: p50, p99 (and p99.9) of both, their ratio with a\n"
            "two-level bootstrap interval (worker slices, then wakes), a verdict against --min-effect, the\n"
            "minimum detectable effect, and a Mann-Whitney U test as a secondary check. With a GRID folder\n"
            "alone, compare every cell with a baseline cell. Where both runs were made with 'wakelab run\n"
            "--trace', also each component of a wake (notify path, scheduler, re-blocked, the waiter's own\n"
            "work): its p50 in both, the difference with a bootstrap interval, and which component moved\n"
            "most; and each named re-block's time per wake, and which moved most.\n"
            "A RUN is an evidence folder or its summary.json. Output is deterministic (fixed seed)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare.add_argument("baseline", metavar="BASELINE",
                         help="the run the others are compared with (A), or a grid folder to compare its cells")
    compare.add_argument("runs", metavar="RUN", nargs="*", help="runs to compare with BASELINE (B, C, ...)")
    compare.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, metavar="A",
                         help="intervals are at 1 - A (default: %(default)s, a 95%% interval)")
    compare.add_argument("--min-effect", type=_min_effect, default=DEFAULT_MIN_EFFECT_PCT, metavar="PCT",
                         help="the smallest change worth a verdict, percent (default: %(default)g); "
                              "must be above 0 and below 100")
    compare.add_argument("--fail-on-regression", type=_percent, metavar="PCT",
                         help="exit 1 when an arm is slower by more than PCT percent at a --metric percentile (for CI jobs)")
    compare.add_argument("--metric", type=_metrics, default=DEFAULT_METRICS, metavar="P[,P]",
                         help="the latency percentiles --fail-on-regression gates on: p50, p99, p99.9 "
                              "(default: %s)" % ",".join(DEFAULT_METRICS))
    compare.add_argument("--across", type=_across, default=(), metavar="NAME[,NAME]",
                         help="compare runs that differ in these conditions on purpose (see below)")
    compare.add_argument("--baseline-cell", metavar="NAME",
                         help="with a GRID folder: the cell the others are compared with (default: the first)")
    compare.add_argument("--resamples", type=whole_number(*RESAMPLES_LIMITS), default=DEFAULT_RESAMPLES, metavar="N",
                         help="bootstrap resamples per arm (default: %(default)s)")
    compare.add_argument("--seed", type=whole_number(*SEED_LIMITS), default=DEFAULT_SEED, metavar="S",
                         help="bootstrap seed (default: %(default)s); the same inputs and seed give the same output")
    compare.add_argument("--json", action="store_true", help="print a JSON document instead of the text table")
    from wakelab.commands.history import add_history_option

    # Separate runs: identical earlier runs in the history widen the interval (see "separate runs" in the epilog).
    add_history_option(compare)
    compare.add_argument("--no-history", action="store_true",
                         help="separate runs: do not read the history (their intervals are then not widened)")
    compare.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from wakelab.extras import require

    require("compare", "wakelab compare")  # before any bundle is read: a missing numpy is no traceback half-way
    from wakelab.evidence.load import is_grid
    from wakelab.evidence.model import Grid

    settings = Settings(alpha=args.alpha, resamples=args.resamples, seed=args.seed, min_effect_pct=args.min_effect)
    paths = [args.baseline, *args.runs]
    grid = None
    skipped: List[Tuple[str, str]] = []
    separate: Separate = {}
    if not args.runs:
        if not is_grid(args.baseline):
            raise UsageError("compare needs BASELINE and at least one RUN, or a grid folder alone (one with "
                             "matrix.json); %s is not a grid" % args.baseline)
        grid = Grid.load(args.baseline)
        baseline, comparisons, skipped = compare_grid(grid, args.baseline_cell, settings, args.across)
        runs = [baseline] + [c.other for c in comparisons]
    else:
        for path in paths:
            if is_grid(path):
                raise UsageError("%s is a grid of runs: compare it alone (wakelab compare %s [--baseline-cell NAME]), "
                                 "or name one of its cells (%s) to compare it with runs"
                                 % (path, path, os.path.join(path, "cells", "NAME")))
        if args.baseline_cell is not None:
            raise UsageError("--baseline-cell applies to a grid folder given alone; %s is a run" % args.baseline)
        if len(paths) > MAX_RUNS:
            raise UsageError("compare takes at most %d runs (a baseline and %d others), got %d"
                             % (MAX_RUNS, MAX_RUNS - 1, len(paths)))
        runs = [load_run(path, label) for path, label in zip(paths, string.ascii_uppercase)]
        comparisons, separate = tell_apart_all([compare_runs(runs[0], other, settings, args.across) for other in runs[1:]],
                                               args, settings)
    checked = args.fail_on_regression is not None
    regressions, unchecked = find_regressions(comparisons, args.fail_on_regression, args.metric) if checked else ([], [])
    status = EXIT_REGRESSION if regressions else EXIT_OK
    if args.json:
        doc = format_json(runs, comparisons, settings, args, regressions, unchecked, status, grid, skipped, separate)
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    else:
        sys.stdout.write(format_text(runs, comparisons, settings, args, regressions, unchecked, grid, skipped, separate))
    return status


def tell_apart_all(comparisons: Sequence[RunComparison], args: argparse.Namespace,
                   settings: Settings) -> Tuple[List[RunComparison], Separate]:
    """Each comparison of two separate runs widened by the level shifts in the history (unread with --no-history; when
    it cannot be read, one warning on stderr and nothing is widened), and what told them apart, by the other run's
    label (cells of one grid are left as they are)."""
    from wakelab.analysis.run_conditions import are_separate, tell_apart, widen_comparison
    from wakelab.history import HistoryError, arm_trend

    warned: List[str] = []

    def points(arm: str) -> List[Any]:
        try:
            return list(arm_trend(arm, args.history))
        except HistoryError as exc:
            if not warned:
                warned.append(str(exc))
                sys.stderr.write("wakelab: warning: history not read (%s): intervals not widened by level shifts\n"
                                 % escape_text(str(exc)))
            return []

    out: List[RunComparison] = []
    separate: Separate = {}
    for comparison in comparisons:
        if are_separate(comparison.baseline, comparison.other):
            comparison, shifts = widen_comparison(comparison, None if args.no_history else points, settings.alpha,
                                                  settings.min_effect_pct)
            separate[comparison.other.label] = (tell_apart(comparison.baseline, comparison.other), shifts)
        out.append(comparison)
    return out, separate


def format_separate(found: Tuple[SeparateRuns, List[LevelShifts]]) -> List[str]:
    """The lines under a comparison of separate runs: the gap, what differed, what was alike."""
    from wakelab.analysis.run_conditions import format_gap

    told, _shifts = found
    a, b = told.baseline, told.other
    gap = "" if told.gap_s is None else ", %s apart" % format_gap(told.gap_s)
    lines = ["  separate runs%s (not an A/B: the machine may have changed between them):" % gap]
    lines += (["    differed: %s: %s %s; %s %s" % (c.name, a, c.baseline, b, c.other) for c in told.differing]
              or ["    differed: nothing recorded (besides the code)"])
    if told.alike:
        lines.append("    alike: %s" % ", ".join(told.alike))
    if told.unknown:
        lines.append("    not recorded in both: %s" % ", ".join(told.unknown))
    return [escape_text(line) for line in lines]


def gate_warning(separate: Separate, baseline: str) -> Optional[str]:
    """The regression check's sentence when it gated separate runs (None when it did not)."""
    from wakelab.analysis.run_conditions import AB_ADVICE

    if not separate:
        return None
    return ("not an A/B: %s and %s are separate runs, and a gate on separate runs also fails on what changed between "
            "them (load, idle states, which CPU is awake); %s" % (baseline, ", ".join(sorted(separate)), AB_ADVICE))


def format_json(runs: Sequence[Any], comparisons: Sequence[RunComparison], settings: Settings, args: argparse.Namespace,
                regressions: Sequence[Any], unchecked: Sequence[str], status: int, grid: Any = None,
                skipped: Sequence[Tuple[str, str]] = (), separate: Optional[Separate] = None) -> Dict[str, object]:
    """The ``--json`` document (schema ``wakelab.analysis.compare``, version 2): the runs (their recorded interpreter
    and machine sections whole), the settings, the grid (null for runs), one comparison per other run, the regression
    check (null without ``--fail-on-regression``), ``separate_runs`` (only for separate runs) and the exit status."""
    check: Optional[Dict[str, object]] = None
    if args.fail_on_regression is not None:
        check = {"limit_pct": args.fail_on_regression, "metrics": list(args.metric),
                 "regressions": [r.to_dict() for r in regressions], "unchecked": list(unchecked)}
        if separate:
            check["not_an_ab"] = gate_warning(separate, runs[0].label)
    grid_doc: Optional[Dict[str, object]] = None
    if grid is not None:
        grid_doc = {"path": grid.source, "baseline_cell": runs[0].label, "across": list(grid_across(grid)),
                    "cells": [c.label for c in grid.cells],
                    "not_compared": [{"cell": label, "reason": why} for label, why in skipped]}
    return {
        "schema": COMPARE_SCHEMA, "schema_version": COMPARE_SCHEMA_VERSION,
        **({"separate_runs": {label: dict(told.to_dict(), level_shifts=[s.to_dict() for s in shifts])
                              for label, (told, shifts) in separate.items()}} if separate else {}),
        "runs": [{"label": r.label, "path": r.source, "description": r.describe(), "lab": r.lab.id, "started_utc": r.started_utc,
                  "interpreter": r.recorded("interpreter"), "machine": r.recorded("machine")} for r in runs],
        "baseline": runs[0].label, "grid": grid_doc, "settings": settings.to_dict(),
        "comparisons": [c.to_dict() for c in comparisons], "regression_check": check, "exit_status": status,
    }


def _with_interval(fmt: Callable[[float], str], value: float, ci: Any, mark: str = "", to: str = "–") -> str:
    """A figure and its interval, each written by ``fmt`` (a figure without an interval alone)."""
    text = fmt(value) + mark
    return text if math.isnan(ci.low) else text + " (%s%s%s)" % (fmt(ci.low), to, fmt(ci.high))


def _level(confidence: float) -> str:
    return "%g%%" % round(100 * confidence, 6)


def _arm_rows(comparison: Any, kind: str) -> Tuple[List[str], List[List[str]]]:
    """One row per judged percentile of each arm of ``kind``: verdict, both figures, ratio and interval, ±, MDE."""
    a, b = comparison.baseline.label, comparison.other.label
    title, count, unit, figure = (("latency (µs)", "n", "", format_us) if kind == LATENCY
                                  else ("rate (median round)", "rounds", " ops/s", format_rate))
    header = [title, "at", "verdict", "%s %s/%s" % (count, a, b), "units", a + unit, b + unit,
              "%s/%s (%s CI)" % (b, a, _level(comparison.confidence)), "±run", "MDE", "MWU p"]
    rows = []
    for arm in (arm for arm in comparison.arms if arm.kind == kind):
        for index, (key, ci) in enumerate(arm.ratios.items()):
            judged = arm.judgements.get(key)
            word, spread, mde = ((judged.verdict, format_percent(judged.spread_pct, "±"), format_percent(judged.mde_pct))
                                 if judged is not None else (arm.verdict, "-", "-"))
            name, n, units, p = [""] * 4 if index else [arm.name, "%d/%d" % (arm.n_baseline, arm.n_other),
                                                           "%d/%d" % (arm.units_baseline, arm.units_other),
                                                           format_p(arm.test.p_value) if arm.test else "-"]
            rows.append([name, label_of(key), word, n, units, figure(ci.baseline), figure(ci.other),
                         _with_interval(format_ratio_plain, ci.ratio, ci, "×"), spread, mde, p])
    return header, rows


def _component_rows(comparison: Any) -> Tuple[List[str], List[List[str]]]:
    """Per traced arm, each component's p50 in both runs, the difference with its interval, and the ratio.

    Components at 0 in both runs (often the re-blocks and the unattributed remainder) are left out.
    """
    from wakelab.analysis.components import SHORT_NAMES

    a, b = comparison.baseline.label, comparison.other.label
    header = ["where the time goes (µs)", "component", "traced %s/%s" % (a, b), "%s p50" % a, "%s p50" % b,
              "%s-%s p50 (%s CI)" % (b, a, _level(comparison.confidence)), "%s/%s" % (b, a)]
    rows = []
    for arm in (arm for arm in comparison.arms if arm.components is not None):
        found = arm.components
        moved = [(name, shift) for name, shift in found.shifts.items() if shift.baseline != 0 or shift.other != 0]
        for index, (name, shift) in enumerate(moved):
            mark = " *" if name == found.moved_most and found.significant else ""
            rows.append([
                "" if index else arm.name, SHORT_NAMES.get(name, name) + mark,
                "" if index else "%d/%d" % (found.n_baseline, found.n_other),
                format_us(shift.baseline), format_us(shift.other), _with_interval(format_signed_us, shift.difference, shift, to=" to "),
                format_ratio_plain(found.ratio(name)) + "×" if found.ratio(name) is not None else "-",
            ])
    return header, rows


# How the moved-most line names a component of a wake (wakelab.analysis.components.COMPONENTS).
MOVED_WORDS = {
    "notify": "notify path", "sched_wake": "scheduler wake delivery", "sched_queue": "run-queue wait",
    "gil_wait": "re-blocked (further sleeps)", "interpreter": "the waiter's own work",
    "unattributed": "unattributed remainder",
}


def format_moved(arm: Any, baseline: str, other: str) -> str:
    """One line naming the component of traced ``arm``'s wake that moved most between two runs."""
    found = arm.components
    if found.moved_most is None:
        return "%s: no component's p50 moved" % arm.name
    shift = found.shifts[found.moved_most]
    ci = "" if math.isnan(shift.low) else ", CI %s to %s" % (format_signed_us(shift.low), format_signed_us(shift.high))
    figures = "%s p50 %s µs in %s, %s in %s (%s µs%s)" % (
        MOVED_WORDS.get(found.moved_most, found.moved_most), format_us(shift.baseline), baseline,
        format_us(shift.other), other, format_signed_us(shift.difference), ci)
    if found.significant:
        return "%s: the component that moved most: %s" % (arm.name, figures)
    return "%s: no component moved beyond its interval; the largest change: %s" % (arm.name, figures)


def format_comparison(comparison: Any) -> List[str]:
    """The block of one run against the baseline."""
    from wakelab.analysis.reblock_shifts import format_reblocks_moved
    from wakelab.report.text import bullets, format_table

    a, b = comparison.baseline.label, comparison.other.label
    lines = [escape_text("%s AGAINST %s" % (b, a))]
    # One line each, however long: easy to grep in a CI log.
    lines.extend("  across: " + escape_text(difference) for difference in comparison.across)
    lines.extend("  warning: " + escape_text(warning) for warning in comparison.warnings)
    for header, rows in (_arm_rows(comparison, LATENCY), _component_rows(comparison), _arm_rows(comparison, RATE)):
        if rows:
            lines += ["", *format_table(header, rows, align_left=3)]
    if not comparison.arms:
        lines += ["", "  No arm has figures in both runs."]
    listed = ["only in %s (not compared): %s" % (label, ", ".join(names))
              for label, names in ((a, comparison.only_in_baseline), (b, comparison.only_in_other)) if names]
    listed += ["%s not compared: %s" % (name, reason) for name, reason in comparison.not_compared]
    for arm in (arm for arm in comparison.arms if arm.components is not None):
        moved = (format_moved(arm, a, b), format_reblocks_moved(arm.name, arm.components.reblocks, a, b))
        listed += [line for line in moved if line is not None]
    # A note that several arms share (one unit in both runs, say) is listed once, naming them all.
    shared: Dict[str, List[str]] = {}
    for arm in comparison.arms:
        for note in arm.notes:
            shared.setdefault(note, []).append(arm.name)
    listed.extend("%s: %s" % (", ".join(names), note) for note, names in shared.items())
    if listed:
        lines += ["", *bullets([escape_text(item) for item in listed])]
    return lines


def regression_items(regressions: Sequence[Any], base: str, limit_pct: float, metrics: Sequence[str], unchecked: Sequence[str],
                     errors: Sequence[str] = (), head: Optional[str] = None) -> List[str]:
    """The regression check's findings, compare's and ab's gate alike: each arm slower than the limit (or that none is), then why
    the check could not answer, then what it could not check."""
    limit = format_ratio_plain(1.0 + limit_pct / 100.0)
    items = ["FAIL: %s in %s is slower than in %s: %s× at %s, above the %s× limit"
             % (r.arm, r.label, base, format_ratio_plain(r.slowdown), r.metric, limit) for r in regressions]
    if not (regressions or errors):
        items.append("pass: no arm %sis slower than %s by more than %g%% at %s"
                     % ("of %s " % head if head else "", base, limit_pct, ", ".join(metrics)))
    return items + ["error: %s" % e for e in errors] + ["not checked: %s" % u for u in unchecked]


def format_text(runs: Sequence[Any], comparisons: Sequence[RunComparison], settings: Settings, args: argparse.Namespace,
                regressions: Sequence[Any], unchecked: Sequence[str], grid: Any = None,
                skipped: Sequence[Tuple[str, str]] = (), separate: Optional[Separate] = None) -> str:
    """The text report: the runs, one block per run against the baseline, the regression check, a legend."""
    from wakelab.report.text import bullets, wrap

    others = ", ".join(r.label for r in runs[1:]) or "no other cell"
    if grid is not None:
        out = [escape_text("wakelab compare: grid %s, cells %s against baseline cell %s" % (grid.source, others, runs[0].label))]
        if grid_across(grid):
            out.append(escape_text("  compared across: %s" % ", ".join(grid_across(grid))))
        out.append("")
    else:
        out = [escape_text("wakelab compare: %s against baseline %s" % (others, runs[0].label)), ""]
    for run in runs:
        out.extend(wrap(escape_text("%s  %s  (%s)" % (run.label, run.source, run.describe()))))
    if skipped:
        out.extend(bullets([escape_text("cell %s not compared: %s" % (label, why)) for label, why in skipped]))
    separate = separate or {}
    for comparison in comparisons:
        out += ["", *format_comparison(comparison)]
        if comparison.other.label in separate:
            out += ["", *format_separate(separate[comparison.other.label])]
    if args.fail_on_regression is not None:
        out += ["", escape_text("REGRESSION CHECK (--fail-on-regression %g, --metric %s, --min-effect %g)"
                                % (args.fail_on_regression, ",".join(args.metric), settings.min_effect_pct))]
        items = regression_items(regressions, runs[0].label, args.fail_on_regression, args.metric, unchecked)
        warning = gate_warning(separate, runs[0].label)
        out.extend(bullets([escape_text(item) for item in items + ([warning] if warning else [])]))
    out += ["", "HOW TO READ"]
    level = _level(settings.confidence)
    m = settings.min_effect_pct
    out.extend(bullets([
        "Ratios are the other run's figure over the baseline's: for latencies above 1 is slower, for rates "
        "above 1 is faster. Times are µs.",
        "CI: %s interval of the ratio from a two-level bootstrap (%d resamples, seed %d): worker slices (units) "
        "are resampled, then wakes (rounds) within them, so the interval carries the variation between worker "
        "processes and repetitions, not only wake-to-wake noise. units: slices per run (1: wake-to-wake noise "
        "only)." % (level, settings.resamples, settings.seed),
        "Verdict (--min-effect %g%%): slower when the interval lies above %s×, faster when below %s×, no "
        "difference when inside both, cannot tell otherwise. Tails (p99, p99.9) get their own verdict."
        % (m, format_ratio_plain(1 + m / 100.0), format_ratio_plain(1 / (1 + m / 100.0))),
        "±run: how well the runs pin their own level (the wider half-width of the two runs' own intervals). "
        "MDE: the smallest change this comparison could call slower, (1 + m) exp(h) - 1 with h the interval's "
        "half-width in log terms. More wakes and workers (wakelab run --rigorous) or repetitions (--repeat) shrink both.",
        "MWU p: a Mann-Whitney U test of the pooled wakes, a secondary check that sees wake-to-wake noise only; "
        "it never decides a verdict.",
    ] + ([
        "Where the time goes (runs made with --trace): each component's own p50 over the traced wakes of each run "
        "(notify path, scheduler wake delivery and run-queue wait, re-blocked, the waiter's own work; these p50s "
        "do not sum), the other run's minus the baseline's with its %s bootstrap interval (one level: the traced "
        "wakes pooled), and their ratio; * marks the component that moved most among those whose interval excludes "
        "0. Re-blocks, named by what the waiter waited on and who held it, are compared by their mean time per "
        "wake (most wakes have none, so their p50 is 0), with the same kind of interval. "
        "The traced passes ran with perf recording, slower than the untraced figures above." % level
    ] if any(arm.components is not None for c in comparisons for arm in c.arms) else [])))
    out.append("")
    return escape_text("\n".join(out), multiline=True)
