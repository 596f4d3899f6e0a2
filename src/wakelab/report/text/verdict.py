"""The verdict and the guidance: what the run found, up front (summary.txt's first two sections)."""

from __future__ import annotations

from typing import List, Optional

from wakelab.analysis.guidance import Guidance, format_ranking, open_loop_note
from wakelab.analysis.view import RunView, view_of
from wakelab.evidence.words import status_word
from wakelab.report.lead import PairingFigures, pairing_figures, verdict_figures
from wakelab.report.text.tables import format_lost
from wakelab.report.text.wrap import Run, bullets_figures, wrap, wrap_figures


# Above this many latency arms with figures, the verdict ranks them instead of listing each.
RANK_ABOVE = 6


def measured_latency_count(view: RunView) -> int:
    """How many arms measured a latency (the verdict ranks them above :data:`RANK_ABOVE`)."""
    return sum(1 for arm in view.bundle.arms() if arm.ok and arm.p50_ns is not None)


def format_rankings(view: RunView, limit: Optional[int] = None, several_only: bool = False) -> List[str]:
    """One line per group of comparable arms (in-process, signals, processes ...), fastest first (``several_only``: the
    groups of two arms or more that compare)."""
    lines: List[str] = []
    for ranking in view.rankings:
        if not several_only or (len(ranking.ranked) > 1 and ranking.comparable):
            lines.extend(wrap_figures("%s: %s." % (ranking.title, format_ranking(ranking, limit)), "  ", "    "))
    return lines


def pairing_line(figures: PairingFigures, judgement: str) -> List[str]:
    """``a / b = 1.50× at p50, 2.00× at p99; JUDGEMENT.``, wrapped."""
    p99 = ", %s at p99" % figures.p99 if figures.p99 else ""
    return wrap("%s / %s = %s at p50%s; %s." % (figures.pairing.a, figures.pairing.b, figures.p50, p99, judgement))


def format_verdict(run: Run) -> List[str]:
    """One line per measured arm -- more than :data:`RANK_ABOVE`: ranked by group --, then each of the lab's pairings.

    Before the figures of an open-loop run, what they hold (a ranking says it in its own line).
    """
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
    for pairing in pairing_figures(view):
        judgement = "like for like: %s" if pairing.pairing.like_for_like else "NOT like for like (%s)"
        lines.extend(pairing_line(pairing, judgement % pairing.detail))
    missing = ["%s (%s)" % (arm.name, status_word(arm.status)) for arm in view.bundle.arms() if not arm.ok]
    if ranked and missing:
        lines.extend(wrap("Not measured: %s." % ", ".join(missing)))
    if not lines:
        lines.append("  No arm produced figures in this run.")
    return lines


def format_guidance(guidance: Guidance) -> List[str]:
    """The headline, then one bullet per piece of advice (each names the arms and figures it rests on)."""
    lines = wrap_figures(guidance.headline)
    lines.extend(bullets_figures([item.text for item in guidance]))
    return lines
