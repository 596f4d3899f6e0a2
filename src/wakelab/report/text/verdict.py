"""The verdict and the guidance: what the run found, up front (summary.txt's first two sections).

A run of a few arms gets a line per arm; more than :data:`RANK_ABOVE` latency
arms are ranked by group of comparable arms instead.  Then each of the lab's
pairings, with whether it compares like for like.  Before the figures of an
open-loop run, what they hold (:func:`~wakelab.analysis.guidance.open_loop_note`;
a ranking says it in its own line).
"""

from __future__ import annotations

from typing import List, Optional

from wakelab.analysis.guidance import Guidance, format_ranking, open_loop_note
from wakelab.analysis.view import RunView, view_of
from wakelab.evidence.words import status_word
from wakelab.formatting import format_ratio
from wakelab.report.lead import pairing_detail, verdict_figures
from wakelab.report.text.tables import format_lost
from wakelab.report.text.wrap import Run, bullets_figures, wrap, wrap_figures


# Above this many latency arms with figures, the verdict ranks them instead of listing each.
RANK_ABOVE = 6


def measured_latency_count(view: RunView) -> int:
    """How many arms measured a latency (the verdict ranks them above :data:`RANK_ABOVE`)."""
    return sum(1 for arm in view.bundle.arms() if arm.ok and arm.p50_ns is not None)


def format_rankings(run: Run, limit: Optional[int] = None) -> List[str]:
    """One line per group of comparable arms (in-process, signals, processes ...), fastest first."""
    lines: List[str] = []
    for ranking in view_of(run).rankings:
        lines.extend(wrap_figures("%s: %s." % (ranking.title, format_ranking(ranking, limit)), "  ", "    "))
    return lines


def _not_measured(view: RunView) -> List[str]:
    names = ["%s (%s)" % (arm.name, status_word(arm.status)) for arm in view.bundle.arms() if not arm.ok]
    if not names:
        return []
    return wrap("Not measured: %s." % ", ".join(names))


def format_verdict(run: Run) -> List[str]:
    """One line per measured arm (many arms: ranked by group), then each of the lab's comparisons."""
    view = view_of(run)
    lines: List[str] = []
    ranked = measured_latency_count(view) > RANK_ABOVE
    if ranked:
        lines.extend(format_rankings(view))
    note = None if ranked else open_loop_note(view.bundle)
    for arm in view.bundle.arms():
        figures = verdict_figures(arm) if arm.ok else None
        if figures is None or (ranked and arm.latency is not None):
            continue  # an arm marked ok without figures has nothing to say
        if arm.latency is not None:
            if note is not None:  # once, before the first latency line: what an open-loop figure holds
                lines.extend(wrap_figures("%s%s." % (note[0].upper(), note[1:])))
                note = None
            text = "%s: p50 %s, p99 %s over %s wakes (%s waiter, %s)." % ((arm.name,) + figures + (arm.waiter, arm.scope))
            if arm.latency.lost:
                text += " %s." % format_lost(arm)
        else:
            text = "%s: %s ops/s (median of %s rounds of %s calls; empty loop %s iterations/s)." % ((arm.name,) + figures)
        lines.extend(wrap(text))
    for pairing in view.pairings:
        if pairing.p50_ratio is None:
            continue
        text = "%s / %s = %s at p50%s; %s." % (
            pairing.a,
            pairing.b,
            format_ratio(pairing.p50_ratio),
            (", %s at p99" % format_ratio(pairing.p99_ratio)) if pairing.p99_ratio is not None else "",
            ("like for like: %s" if pairing.like_for_like else "NOT like for like (%s)") % pairing_detail(pairing),
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
