"""``wakelab compare`` of separate runs: what differed besides the code, and the gate's warning.

The analysis is :mod:`wakelab.analysis.run_conditions`; this module reads the history it needs,
and lays the result out for compare's text and JSON (compare's own module only calls it).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.formatting import escape_text

if TYPE_CHECKING:  # the analysis is imported lazily, by the functions that need it
    from wakelab.analysis.compare import RunComparison, Settings
    from wakelab.analysis.run_conditions import LevelShifts, SeparateRuns

    # Per other run's label: what told it apart from the baseline, and the level shifts that widened it.
    Separate = Dict[str, Tuple[SeparateRuns, List[LevelShifts]]]


def history_points(args: argparse.Namespace) -> Optional[Callable[[str], List[Any]]]:
    """``points(arm)``: the history's recorded figures of ``arm`` (None with --no-history; none when the
    history cannot be read: then one warning on stderr, and the intervals are not widened)."""
    from wakelab.history import HistoryError, arm_trend

    warned: List[str] = []
    if getattr(args, "no_history", False):
        return None

    def points(arm: str) -> List[Any]:
        try:
            return list(arm_trend(arm, args.history))
        except HistoryError as exc:
            if not warned:
                warned.append(str(exc))
                sys.stderr.write("wakelab: warning: history not read (%s): intervals not widened by level shifts\n"
                                 % escape_text(str(exc)))
            return []

    return points


def tell_apart_all(comparisons: Sequence["RunComparison"], args: argparse.Namespace,
                   settings: "Settings") -> Tuple[List["RunComparison"], "Separate"]:
    """Each comparison of two separate runs widened by the history's level shifts, and what told
    them apart, by the other run's label (cells of one grid are left as they are)."""
    from wakelab.analysis.run_conditions import are_separate, tell_apart, widen_comparison

    points = history_points(args)
    out: List[RunComparison] = []
    separate: Separate = {}
    for comparison in comparisons:
        if not are_separate(comparison.baseline, comparison.other):
            out.append(comparison)
            continue
        widened, shifts = widen_comparison(comparison, points, settings.alpha, settings.min_effect_pct)
        separate[comparison.other.label] = (tell_apart(comparison.baseline, comparison.other), shifts)
        out.append(widened)
    return out, separate


def format_separate(found: Tuple["SeparateRuns", List["LevelShifts"]]) -> List[str]:
    """The lines under a comparison of separate runs: the gap, what differed, what was alike."""
    from wakelab.analysis.run_conditions import format_gap

    told, _shifts = found
    a, b = told.baseline, told.other
    gap = "" if told.gap_s is None else ", %s apart" % format_gap(told.gap_s)
    lines = ["  separate runs%s (not an A/B: the machine may have changed between them):" % gap]
    for condition in told.differing:
        lines.append("    differed: %s: %s %s; %s %s" % (condition.name, a, condition.baseline, b, condition.other))
    if not told.differing:
        lines.append("    differed: nothing recorded (besides the code)")
    if told.alike:
        lines.append("    alike: %s" % ", ".join(told.alike))
    if told.unknown:
        lines.append("    not recorded in both: %s" % ", ".join(told.unknown))
    return [escape_text(line) for line in lines]


def gate_warning(separate: "Separate", baseline: str) -> Optional[str]:
    """The regression check's sentence when it gated separate runs (None when it did not)."""
    from wakelab.analysis.run_conditions import AB_ADVICE

    if not separate:
        return None
    return ("not an A/B: %s and %s are separate runs, and a gate on separate runs also fails on what changed between "
            "them (load, idle states, which CPU is awake); %s" % (baseline, ", ".join(sorted(separate)), AB_ADVICE))


def json_doc(separate: "Separate") -> Dict[str, object]:
    """``separate_runs`` of compare's JSON: per other run, what told it apart and the level shifts found."""
    return {label: dict(told.to_dict(), level_shifts=[s.to_dict() for s in shifts])
            for label, (told, shifts) in separate.items()}
