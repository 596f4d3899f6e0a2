"""Each latency arm's card: its figures, folded, and its histogram and ECDF (runs overlaid)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from wakelab.evidence.model import ArmRecord, ArmSamples, LatencyFigures
from wakelab.evidence.words import status_word
from wakelab.formatting import DASH, format_ns, format_ratio
from wakelab.core.registry import FAMILY_TITLES
from wakelab.report.html.common import _badge, DISTRIBUTION, esc, IdCounter, _slug, _status_badge
from wakelab.report.html.load import RunEvidence
from wakelab.report.html.runs import _arm_order, RunLabel, _swatch


def kept_words(kept: int, total: int) -> str:
    """What a figure computed on a soak's kept raw samples is of."""
    return "from the first %s of %s wakes (the raw samples kept)" % (format(kept, ","), format(total, ","))


def soak_plot_words(samples: ArmSamples, counters: Any) -> str:
    """Where a soak past its raw-sample cap's plots come from (every wake, from its histogram; else the kept raw samples)."""
    if counters is None:
        return "Histogram and ECDF %s." % kept_words(samples.kept, samples.total)
    from wakelab.analysis.hdr import RELATIVE_ERROR

    return ("Histogram and ECDF of all %s wakes, from the soak's log-linear histogram (each wake at its counter's value, "
            "within %.2g %% of its own); the samples file keeps the raw samples of the first %s."
            % (format(samples.total, ","), 100 * RELATIVE_ERROR, format(samples.kept, ",")))


def _figures(arm: ArmRecord, lat: LatencyFigures, samples: Optional[ArmSamples]) -> str:
    """An arm's figures in one line (escaped): p50, p99, p99.9, max, n, lost, and how far apart its workers' medians are."""
    text = "p50 <b>%s</b> · p99 <b>%s</b>%s · max %s · n %s" % (
        esc(format_ns(lat.p50_ns)), esc(format_ns(lat.p99_ns)),
        (" · p99.9 %s" % esc(format_ns(lat.p99_9_ns))) if lat.p99_9_ns is not None else "",
        esc(format_ns(lat.max_ns)), esc(lat.n),
    )
    if lat.lost:
        text += ' · <span class="warn">%s lost</span>' % esc(lat.lost)
    spread = arm.spread
    if spread is not None and spread.max_over_min is not None and spread.of == "p50_ns":
        repetitions = spread.between == "repetitions"
        count = len(arm.workers or ()) if not repetitions else arm.repetitions.count if arm.repetitions is not None else None
        text += " · %s %s, medians within %s" % (esc(DASH if count is None else count), "repetitions" if repetitions else "workers", esc(format_ratio(spread.max_over_min)))
        if samples is not None and not samples.every_wake:
            # A soak past its raw-sample cap: what summary.json computed on the raw samples (the workers' spread) is of the first K.
            text += ", %s" % esc(kept_words(samples.kept, samples.total))
    return text


def render_distributions(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], plots_: IdCounter) -> str:
    """What the plots show, then one card per latency arm: its histogram and ECDF (runs overlaid), with each run's figures."""
    from wakelab.report.distribution import COMPONENT_COLORS, Series, distribution_chart
    from wakelab.report.interactive import chart_html

    cards = []
    several = len(runs) > 1
    records = [r.bundle.arms_by_name() for r in runs]
    for name in _arm_order(runs):
        arms = [by_name.get(name) for by_name in records]
        first = next(a for a in arms if a is not None)
        series = []
        facts = []
        for run, arm, label in zip(runs, arms, labels):
            who = '%s<b title="%s">%s</b>: ' % (_swatch(label), esc(label.full), esc(label.short)) if several else ""
            if arm is None:
                facts.append('<li class="muted">%snot in this run</li>' % who)
                continue
            lat = arm.latency
            if not arm.ok or lat is None:
                facts.append("<li>%s%s</li>" % (who, _status_badge(arm)))
                continue
            samples = run.samples.get(name)
            counters = run.histograms.get(name)
            facts.append("<li>%s%s</li>" % (who, _figures(arm, lat, samples)))
            if samples is not None and not samples.every_wake:
                # A soak past its raw-sample cap: the plots are of every wake, from its histogram.
                facts.append('<li class="muted">%s%s</li>' % (who, esc(soak_plot_words(samples, counters))))
            if samples is None or not samples.samples_ns:
                continue
            values, weights = counters.weighted_values() if counters is not None and not samples.every_wake else (samples.samples_ns, None)
            series.append(Series(label.short if several else name, values, lat.p50_ns, lat.p99_ns, label.color, weights=weights))
            if not several and weights is None:
                components = dict(arm.components)
                for j, (comp, part_ns) in enumerate(samples.components_ns.items()):
                    figures = components.get(comp)
                    if part_ns:
                        series.append(Series(comp, part_ns, figures.p50_ns if figures else None, figures.p99_ns if figures else None,
                                             COMPONENT_COLORS[j % len(COMPONENT_COLORS)], dashed=True))
        figure = ('<div class="plot">%s</div>' % chart_html(distribution_chart(plots_.next_id(), series, marks=not several), DISTRIBUTION)
                  if series else '<p class="muted noplot">No samples to plot.</p>')
        cards.append(
            '<details class="arm" id="arm-%s"><summary><b>%s</b> %s %s %s <span class="muted">%s</span></summary>'
            '<ul class="figs">%s</ul>%s</details>'
            % (esc(_slug(name)), esc(name), _badge(FAMILY_TITLES.get(first.family, first.family), "fam"),
               _badge(first.waiter, "w-" + first.waiter), _badge(first.scope, "scope"), _headline(arms), "".join(facts), figure))
    intro = (
        "Each arm's wakes as a histogram (share of wakes per log-spaced bin; the rare wakes far beyond the rest are "
        "gathered in one hatched bin at the edge, so one outlier cannot squash the others) and an ECDF (fraction of "
        "wakes at or below a latency, over the whole range), both on a log time axis. Open an arm to see them. " + (
            "Runs are overlaid in their colours; on the ECDF a dot marks each run's p50 and a diamond its p99." if several else
            "Dashed lines mark p50 and p99; dashed curves are the named components of a wake, where an arm records them."))
    return '<p class="muted">%s</p>%s' % (intro, '<div class="arms">%s</div>' % "".join(cards) if cards else '<p class="muted">No latency arms.</p>')


def _headline(arms: Sequence[Optional[ArmRecord]]) -> str:
    """The figures a folded arm shows: p50 and p99 of the first run that measured it (escaped)."""
    for arm in arms:
        if arm is not None and arm.ok and arm.p50_ns is not None and arm.latency is not None:
            return "p50 %s · p99 %s" % (esc(format_ns(arm.p50_ns)), esc(format_ns(arm.latency.p99_ns)) if arm.latency.p99_ns is not None else DASH)
    for arm in arms:
        if arm is not None:
            return esc(status_word(arm.status))
    return ""

