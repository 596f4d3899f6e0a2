"""``wakelab compare``: is a run faster or slower than a baseline, arm by arm?

The statistics and the comparability rules live in :mod:`wakelab.analysis.compare`;
this module parses the options, renders the text table or the JSON document
(every string from the evidence escaped for the terminal, see
:func:`wakelab.formatting.escape_text`), and picks the exit status (0 compared, 1 a regression beyond
``--fail-on-regression``, 2 bad input or runs that are not comparable).
"""

from __future__ import annotations

import argparse
import json
import math
import string
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from wakelab.commands import EXIT_OK
from wakelab.commands._options import whole_number
from wakelab.errors import UsageError
from wakelab.formatting import escape_text

EXIT_REGRESSION = 1
COMPARE_SCHEMA = "wakelab.analysis.compare"
COMPARE_SCHEMA_VERSION = 1
MAX_RUNS = len(string.ascii_uppercase)
RESAMPLES_LIMITS = (100, 100_000)
SEED_LIMITS = (0, 2**32 - 1)

EPILOG = """\
verdicts:
  faster / slower            the (1 - alpha) bootstrap CI of the p50 ratio excludes 1 AND the two-sided
                             Mann-Whitney U test gives p < alpha (rate arms: the median round's ops/s)
  no significant difference  either test does not find a difference
  not tested                 too few samples or rounds for a rank test (at least 3 per side, and enough
                             that p < alpha is possible)

--fail-on-regression PCT fails (exit 1) when an arm of any run is significantly slower than the baseline
and its ratio exceeds 1 + PCT/100. With --metric p50 (default), "significantly slower" is the verdict
"slower"; with --metric p99, the p99 ratio's CI lies entirely above 1 (the rank test is about the whole
distribution, not its tail). Rate arms always gate on their median ops/s.

exit status:
  0  compared (and no regression beyond --fail-on-regression, when given)
  1  --fail-on-regression: an arm is significantly slower by more than PCT percent
  2  bad input: a missing or corrupt bundle, a bad option, or runs that are not comparable
     (no arm in common, an arm of another kind, waiter state, scope or unit, different
     --settle-us, --planted-delay-us, --placement, --mode or conditions)

Differences in interpreter, machine or pinned CPUs are printed as warnings, not errors: they are
often the point of comparing, but every ratio then includes them.
"""


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number such as 0.05, got %r" % text) from None
    if not 0.0 < value <= 0.5:  # also rejects nan
        raise argparse.ArgumentTypeError("must be above 0 and at most 0.5, got %s" % text)
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a percentage such as 10, got %r" % text) from None
    if not 0.0 <= value <= 10_000.0:  # also rejects nan and inf
        raise argparse.ArgumentTypeError("must be between 0 and 10,000 (percent), got %s" % text)
    return value


def register(sub: Any) -> None:
    from wakelab.analysis.compare import DEFAULT_ALPHA, DEFAULT_RESAMPLES, DEFAULT_SEED

    compare = sub.add_parser(
        "compare",
        help="compare runs with a baseline, arm by arm, with confidence intervals",
        description=(
            "Compare each RUN with BASELINE, arm by arm: p50 and p99 of both, their ratio with a\n"
            "bootstrap confidence interval from the raw samples, a Mann-Whitney U test, and a verdict.\n"
            "Where both runs were made with 'wakelab run --trace', also each component of a wake (notify\n"
            "path, scheduler, GIL wait, interpreter): its p50 in both, the difference with a bootstrap\n"
            "interval, and which component moved most.\n"
            "A RUN is an evidence folder or its summary.json. Output is deterministic (fixed seed)."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare.add_argument("baseline", metavar="BASELINE", help="the run the others are compared with (A)")
    compare.add_argument("runs", metavar="RUN", nargs="+", help="runs to compare with BASELINE (B, C, ...)")
    compare.add_argument("--alpha", type=_alpha, default=DEFAULT_ALPHA, metavar="A",
                         help="significance level; CIs are at 1 - A (default: %(default)s, a 95%% CI)")
    compare.add_argument("--fail-on-regression", type=_percent, metavar="PCT",
                         help="exit 1 when an arm is significantly slower by more than PCT percent (for CI jobs)")
    compare.add_argument("--metric", choices=("p50", "p99"), default="p50",
                         help="which latency percentile --fail-on-regression gates on (default: %(default)s)")
    compare.add_argument("--resamples", type=whole_number(*RESAMPLES_LIMITS), default=DEFAULT_RESAMPLES, metavar="N",
                         help="bootstrap resamples per arm (default: %(default)s)")
    compare.add_argument("--seed", type=whole_number(*SEED_LIMITS), default=DEFAULT_SEED, metavar="S",
                         help="bootstrap seed (default: %(default)s); the same inputs and seed give the same output")
    compare.add_argument("--json", action="store_true", help="print a JSON document instead of the text table")
    compare.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from wakelab.analysis.compare import Settings, compare_runs, find_regressions, load_run

    paths = [args.baseline, *args.runs]
    if len(paths) > MAX_RUNS:
        raise UsageError("compare takes at most %d runs (a baseline and %d others), got %d" % (MAX_RUNS, MAX_RUNS - 1, len(paths)))
    runs = [load_run(path, label) for path, label in zip(paths, string.ascii_uppercase)]
    settings = Settings(alpha=args.alpha, resamples=args.resamples, seed=args.seed)
    comparisons = [compare_runs(runs[0], other, settings) for other in runs[1:]]
    regressions: List[Any] = []
    unchecked: List[str] = []
    if args.fail_on_regression is not None:
        regressions, unchecked = find_regressions(comparisons, args.fail_on_regression, args.metric)
    status = EXIT_REGRESSION if regressions else EXIT_OK
    if args.json:
        doc = format_json(runs, comparisons, settings, args, regressions, unchecked, status)
        sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    else:
        sys.stdout.write(format_text(runs, comparisons, settings, args, regressions, unchecked))
    return status


def format_json(runs: Sequence[Any], comparisons: Sequence[Any], settings: Any, args: argparse.Namespace,
                regressions: Sequence[Any], unchecked: Sequence[str], status: int) -> Dict[str, object]:
    """The ``--json`` document (schema ``wakelab.analysis.compare``, version 1).

    ``runs``: label, path and description of each run (A is the baseline);
    ``settings``: alpha, CI level, resamples, seed; ``comparisons``: one per
    run after the first, with per-arm ratios (``p50``/``p99`` of wake times,
    or ``median`` of ops/s), CIs, the Mann-Whitney result and the verdict, and,
    where both runs traced the arm, ``components`` (``moved_most``,
    ``significant``, and per component its ``p50`` in both runs, the
    ``difference`` with ``ci_low``/``ci_high``, and the ``ratio``; ns);
    ``regression_check``: null without ``--fail-on-regression``;
    ``exit_status``: what the command returned.
    """
    check: Optional[Dict[str, object]] = None
    if args.fail_on_regression is not None:
        check = {
            "limit_pct": args.fail_on_regression,
            "metric": args.metric,
            "regressions": [r.to_dict() for r in regressions],
            "unchecked": list(unchecked),
        }
    return {
        "schema": COMPARE_SCHEMA,
        "schema_version": COMPARE_SCHEMA_VERSION,
        "runs": [
            {"label": r.label, "path": r.source, "description": r.describe(), "lab": (r.summary.get("lab") or {}).get("id"),
             "started_utc": r.summary.get("started_utc"), "interpreter": r.summary.get("interpreter"),
             "machine": r.summary.get("machine")}
            for r in runs
        ],
        "baseline": runs[0].label,
        "settings": settings.to_dict(),
        "comparisons": [c.to_dict() for c in comparisons],
        "regression_check": check,
        "exit_status": status,
    }


# ---------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------


def _ratio(value: Optional[float]) -> str:
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "inf"
    return ("%.1f" if value >= 10 else "%.2f") % value


def _ratio_with_ci(ci: Any) -> str:
    if ci is None:
        return "-"
    text = _ratio(ci.ratio) + "×"
    if not math.isnan(ci.low):
        text += " (%s–%s)" % (_ratio(ci.low), _ratio(ci.high))
    return text


def _latency_rows(comparison: Any) -> Tuple[List[str], List[List[str]]]:
    from wakelab.analysis.compare import LATENCY, format_p
    from wakelab.formatting import format_us

    a, b = comparison.baseline.label, comparison.other.label
    level = "%g%%" % round(100 * _confidence(comparison), 6)
    header = ["latency (µs)", "verdict", "n %s/%s" % (a, b), "%s p50" % a, "%s p50" % b, "%s/%s p50 (%s CI)" % (b, a, level),
              "%s p99" % a, "%s p99" % b, "%s/%s p99 (%s CI)" % (b, a, level), "MWU p", "P(%s>%s)" % (b, a)]
    rows = []
    for arm in comparison.arms:
        if arm.kind != LATENCY:
            continue
        p50, p99 = arm.ratios.get("p50"), arm.ratios.get("p99")
        rows.append([
            arm.name,
            arm.verdict,
            "%d/%d" % (arm.n_baseline, arm.n_other),
            format_us(p50.baseline), format_us(p50.other), _ratio_with_ci(p50),
            format_us(p99.baseline) if p99 else "-", format_us(p99.other) if p99 else "-", _ratio_with_ci(p99),
            format_p(arm.test.p_value) if arm.test else "-",
            "%.2f" % arm.test.p_greater if arm.test else "-",
        ])
    return header, rows


def _rate_rows(comparison: Any) -> Tuple[List[str], List[List[str]]]:
    from wakelab.analysis.compare import RATE, format_p
    from wakelab.formatting import format_rate

    a, b = comparison.baseline.label, comparison.other.label
    level = "%g%%" % round(100 * _confidence(comparison), 6)
    header = ["rate (median round)", "verdict", "rounds %s/%s" % (a, b), "%s ops/s" % a, "%s ops/s" % b,
              "%s/%s (%s CI)" % (b, a, level), "MWU p", "P(%s>%s)" % (b, a)]
    rows = []
    for arm in comparison.arms:
        if arm.kind != RATE:
            continue
        median = arm.ratios["median"]
        rows.append([
            arm.name,
            arm.verdict,
            "%d/%d" % (arm.n_baseline, arm.n_other),
            format_rate(median.baseline), format_rate(median.other), _ratio_with_ci(median),
            format_p(arm.test.p_value) if arm.test else "-",
            "%.2f" % arm.test.p_greater if arm.test else "-",
        ])
    return header, rows


def _signed_us(value_ns: float) -> str:
    from wakelab.formatting import format_us

    if value_ns is None or math.isnan(value_ns):
        return "-"
    sign = "+" if value_ns > 0 else "-" if value_ns < 0 else ""
    return sign + format_us(abs(value_ns))


def _difference_with_ci(shift: Any) -> str:
    text = _signed_us(shift.difference)
    if not math.isnan(shift.low):
        text += " (%s to %s)" % (_signed_us(shift.low), _signed_us(shift.high))
    return text


def _component_rows(comparison: Any) -> Tuple[List[str], List[List[str]]]:
    """Per traced arm, each component's p50 in both runs, the difference with its interval, and the ratio.

    Components at 0 in both runs (often the GIL wait and the unattributed remainder) are left out.
    """
    from wakelab.analysis.components import SHORT_NAMES
    from wakelab.formatting import format_us

    a, b = comparison.baseline.label, comparison.other.label
    level = "%g%%" % round(100 * _confidence(comparison), 6)
    header = ["where the time goes (µs)", "component", "traced %s/%s" % (a, b), "%s p50" % a, "%s p50" % b,
              "%s-%s p50 (%s CI)" % (b, a, level), "%s/%s" % (b, a)]
    rows = []
    for arm in comparison.arms:
        found = arm.components
        if found is None:
            continue
        first = True
        for name, shift in found.shifts.items():
            if shift.baseline == 0 and shift.other == 0:
                continue
            mark = " *" if name == found.moved_most and found.significant else ""
            rows.append([
                arm.name if first else "",
                SHORT_NAMES.get(name, name) + mark,
                "%d/%d" % (found.n_baseline, found.n_other) if first else "",
                format_us(shift.baseline), format_us(shift.other), _difference_with_ci(shift),
                _ratio(found.ratio(name)) + "×" if found.ratio(name) is not None else "-",
            ])
            first = False
    return header, rows


# How the moved-most line names a component of a wake (wakelab.analysis.components.COMPONENTS).
MOVED_WORDS = {
    "notify": "notify path", "sched_wake": "scheduler wake delivery", "sched_queue": "run-queue wait",
    "gil_wait": "GIL wait", "interpreter": "interpreter", "unattributed": "unattributed remainder",
}


def format_moved(arm: Any, baseline: str, other: str) -> Optional[str]:
    """One line naming the component of ``arm``'s wake that moved most between two traced runs (None: untraced)."""
    from wakelab.formatting import format_us

    found = arm.components
    if found is None:
        return None
    if found.moved_most is None:
        return "%s: no component's p50 moved" % arm.name
    shift = found.shifts[found.moved_most]
    ci = "" if math.isnan(shift.low) else ", CI %s to %s" % (_signed_us(shift.low), _signed_us(shift.high))
    figures = "%s p50 %s µs in %s, %s in %s (%s µs%s)" % (
        MOVED_WORDS.get(found.moved_most, found.moved_most), format_us(shift.baseline), baseline,
        format_us(shift.other), other, _signed_us(shift.difference), ci)
    if found.significant:
        return "%s: the component that moved most: %s" % (arm.name, figures)
    return "%s: no component moved beyond its interval; the largest change: %s" % (arm.name, figures)


def _confidence(comparison: Any) -> float:
    for arm in comparison.arms:
        for ratio in arm.ratios.values():
            return float(ratio.confidence)
    return 0.95


def format_comparison(comparison: Any) -> List[str]:
    """The block of one run against the baseline."""
    from wakelab.report.text import bullets, format_table

    a, b = comparison.baseline.label, comparison.other.label
    lines = [escape_text("%s AGAINST %s" % (b, a))]
    # One line each, however long: easy to grep in a CI log.
    lines.extend("  warning: " + escape_text(warning) for warning in comparison.warnings)
    for header, rows in (_latency_rows(comparison), _component_rows(comparison), _rate_rows(comparison)):
        if rows:
            lines.append("")
            lines.extend(format_table(header, rows, align_left=2))
    if not comparison.arms:
        lines.append("")
        lines.append("  No arm has figures in both runs.")
    listed: List[str] = []
    if comparison.only_in_baseline:
        listed.append("only in %s (not compared): %s" % (a, ", ".join(comparison.only_in_baseline)))
    if comparison.only_in_other:
        listed.append("only in %s (not compared): %s" % (b, ", ".join(comparison.only_in_other)))
    for name, reason in comparison.not_compared:
        listed.append("%s not compared: %s" % (name, reason))
    for arm in comparison.arms:
        moved = format_moved(arm, a, b)
        if moved is not None:
            listed.append(moved)
    for arm in comparison.arms:
        for note in arm.notes:
            listed.append("%s: %s" % (arm.name, note))
    if listed:
        lines.append("")
        lines.extend(bullets([escape_text(item) for item in listed]))
    return lines


def format_text(runs: Sequence[Any], comparisons: Sequence[Any], settings: Any, args: argparse.Namespace,
                regressions: Sequence[Any], unchecked: Sequence[str]) -> str:
    """The text report: the runs, one block per run against the baseline, the regression check, a legend."""
    from wakelab.report.text import bullets, wrap

    out = [escape_text("wakelab compare: %s against baseline %s" % (", ".join(r.label for r in runs[1:]), runs[0].label)), ""]
    for run in runs:
        out.extend(wrap(escape_text("%s  %s  (%s)" % (run.label, run.source, run.describe()))))
    for comparison in comparisons:
        out.append("")
        out.extend(format_comparison(comparison))
    if args.fail_on_regression is not None:
        out.append("")
        out.append("REGRESSION CHECK (--fail-on-regression %g, --metric %s)" % (args.fail_on_regression, args.metric))
        limit = 1.0 + args.fail_on_regression / 100.0
        items = [
            "FAIL: %s in %s is significantly slower than in %s: %s× at %s, above the %s× limit"
            % (r.arm, r.label, runs[0].label, _ratio(r.slowdown), r.metric, _ratio(limit))
            for r in regressions
        ]
        if not regressions:
            items.append("pass: no arm is significantly slower than %s by more than %g%%"
                         % (runs[0].label, args.fail_on_regression))
        items.extend("not checked: %s" % text for text in unchecked)
        out.extend(bullets([escape_text(item) for item in items]))
    out.append("")
    out.append("HOW TO READ")
    level = "%g%%" % round(100 * settings.confidence, 6)
    out.extend(bullets([
        "Ratios are the other run's figure over the baseline's: for latencies above 1 is slower, for rates "
        "above 1 is faster. Times are µs.",
        "CI: %s percentile-bootstrap interval of the ratio from the raw samples (%d resamples, seed %d)."
        % (level, settings.resamples, settings.seed),
        "A verdict of faster or slower needs both the p50 (or median rate) ratio's CI to exclude 1 and the "
        "two-sided Mann-Whitney U test (MWU p) to be below %g." % settings.alpha,
        "P(B>A): the chance that a random sample of the other run is larger than one of the baseline "
        "(0.50: no shift; the common-language effect size).",
        "The CI and the test see only the wake-to-wake noise within each run. Run-to-run variation (CPU "
        "placement, clock frequency, other load) is not in them: repeat a run before trusting a small change.",
    ] + ([
        "Where the time goes (runs made with --trace): each component's own p50 over the traced wakes of each run "
        "(notify path, scheduler wake delivery and run-queue wait, GIL wait, interpreter; these p50s do not sum), "
        "the other run's minus the baseline's with its %s bootstrap interval, and their ratio; * marks the "
        "component that moved most among those whose interval excludes 0. The traced passes ran with perf "
        "recording, slower than the untraced figures above." % level
    ] if any(arm.components is not None for c in comparisons for arm in c.arms) else [])))
    out.append("")
    return escape_text("\n".join(out), multiline=True)

