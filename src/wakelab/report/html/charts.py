"""The charts at a glance: the overview of every latency arm, where the time goes (traced runs), the grids' heat maps."""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from wakelab.formatting import DASH, format_signed_us, format_us
from wakelab.core.registry import FAMILY_TITLES
from wakelab.evidence.model import TraceFigures
from wakelab.report.lead import family_order
from wakelab.report.html.common import esc, IdCounter, table
from wakelab.report.html.load import RunEvidence
from wakelab.report.html.runs import _arm_order, DIMENSIONS, dimension_words, RunLabel, _swatch


def _sort_controls(chart_id: str, families: Sequence[str]) -> str:
    """The overview's buttons: sort its rows, show or hide a family."""
    from wakelab.report.interactive import family_color

    sorts = "".join('<button type="button" class="sort" data-chart="%s" data-sort="%s" aria-pressed="%s">%s</button>'
                    % (esc(chart_id), key, "true" if key == "p50" else "false", key) for key in ("p50", "family", "name"))
    toggles = "".join('<button type="button" class="family" data-chart="%s" data-family="%s" aria-pressed="true">'
                      '<span class="swatch" style="background:%s"></span>%s</button>'
                      % (esc(chart_id), esc(f), esc(family_color(f)), esc(FAMILY_TITLES.get(f, f))) for f in families)
    return ('<div class="controls" role="toolbar" aria-label="overview controls"><span class="muted">Sort by</span> %s'
            '<span class="muted sep">Families</span> %s</div>' % (sorts, toggles))


def render_overview(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], charts: IdCounter) -> str:
    """The chart that compares at a glance: every latency arm of every run on one log axis, with its buttons."""
    from wakelab.report.interactive import OverviewPoint, chart_html, overview_chart

    points = []
    for index, run in enumerate(runs):
        by_name = run.bundle.arms_by_name()
        for a in run.bundle.arms():
            if not a.is_latency or not a.ok or a.latency is None or a.latency.p50_ns is None:
                continue
            ratio = run.view.native_ratios.get(a.name)
            native = by_name.get(ratio.native) if ratio is not None else None
            has_floor = ratio is not None and ratio.kind == "latency" and native is not None and native.ok and native.p50_ns is not None
            points.append(OverviewPoint(index, a, a.latency, ratio if has_floor else None))
    if not points:
        return '<p class="muted">No latency arm produced figures.</p>'
    families = family_order(a for run in runs for a in run.bundle.arms())
    chart = overview_chart(charts.next_id(), points, [(label.full, label.color) for label in labels], families)
    controls = _sort_controls(chart.chart_id, [f for f in families if any(p.arm.family == f for p in points)])
    several = len(runs) > 1
    intro = (
        "Every latency arm on one shared log axis: the dot is its p50, the bar spans p90 to p99, and the open diamond "
        "is the p50 of its C floor in the same run (grey where it is only the nearest floor, not the same experiment). "
        "Hover a dot for the figures; sort the rows, or hide a family, with the buttons; %s."
        % ("each run has its colour, and clicking a run in the legend hides it" if several
           else "clicking a family in the legend hides its dots")
    )
    return '<p class="muted">%s</p>%s%s' % (esc(intro), controls, chart_html(chart))


# How the page names each component of a wake in running text.
COMPONENT_WORDS = {
    "notify": "notify path", "sched_wake": "wake delivery", "sched_queue": "run-queue wait", "gil_wait": "GIL wait",
    "interpreter": "interpreter", "unattributed": "unattributed",
}


def render_where_time_goes(run: RunEvidence, charts: IdCounter) -> str:
    """Where each traced arm's time goes (a run with ``--trace``): stacked bars at p50 and at p99, each
    Python arm beside its C floor, then the tracing overhead; empty for a run that did not ask to trace.

    The bands (``trace.at_p50`` / ``at_p99``) and the overhead were computed by the analysis layer
    (:mod:`wakelab.analysis.components`, stored in summary.json); this lays them out.
    """
    from wakelab.analysis.components import COMPONENT_TITLES, COMPONENTS
    from wakelab.report.interactive import chart_html, components_chart, trace_bands

    tracing = run.bundle.tracing
    if not tracing.requested:
        return ""
    bars: List[Tuple[str, TraceFigures, Optional[str]]] = []
    overhead_rows: List[str] = []
    not_split: List[str] = []
    for record, floor_of in run.view.traced_order:
        trace = record.trace
        if trace is None:
            continue
        if not trace.traced:
            if record.kind == "latency" and record.measured:
                not_split.append("<li><code>%s</code>: %s</li>" % (esc(record.name), esc(trace.reason or "no reason recorded")))
            continue
        if trace_bands(trace):
            bars.append((record.name, trace, floor_of))
        overhead_rows.append(
            "<tr><td><code>%s</code>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d / %d</td></tr>" % (
                esc(record.name), (' <span class="muted">C floor of %s</span>' % esc(floor_of)) if floor_of else "",
                esc(format_us(trace.untraced_p50_ns)), esc(format_us(trace.traced_p50_ns)),
                esc(format_us(trace.untraced_after_p50_ns)),
                ("%.2f×" % trace.overhead_ratio) if trace.overhead_ratio is not None else DASH,
                trace.fully_attributed, trace.wakes))
    parts: List[str] = []
    if not tracing.traced and not bars:
        return '<p class="trace-off">Tracing was asked for but did not run: %s. The figures above are untraced.</p>' % esc(
            tracing.reason or "no reason recorded")
    if not tracing.traced:
        parts.append('<p class="trace-off">Tracing stopped during the run: %s.</p>' % esc(tracing.reason or "no reason recorded"))
    if bars:
        chart = components_chart(charts.next_id(), bars, COMPONENTS, COMPONENT_TITLES)
        parts.append(
            '<p class="muted">Each traced wake was split at the kernel\'s scheduler events (%s, on the clock of t0 and t1): '
            "notify path (t0 to the kernel waking the waiter), scheduler (wake delivery: the cross-CPU interrupt and idle "
            "exit; run-queue wait), GIL wait (further sleep/wake cycles after the waiter first ran) and interpreter (on a "
            "CPU, up to t1); what the events cannot place is shown as unattributed. The parts of every wake sum to its "
            "latency. Left: the mean parts of the wakes ranked 45th to 55th percentile (where the median wake goes); "
            "right: of the wakes at the 99th percentile and above. Each Python arm is drawn above its C floor. Hover a "
            "segment for its figure; click a component in the legend to hide it.</p>%s"
            % (esc(tracing.tool or "perf"), chart_html(chart)))
    gaps = [gap for band in ("p50", "p99") for gap in run.view.floor_gaps(band)]
    if gaps:
        items = []
        for gap in gaps:
            shown = ["%s %s" % (esc(COMPONENT_WORDS[name]), esc(format_signed_us(value, minus="\u2212") if value else "0"))
                     for name, value in gap.parts_ns.items() if name != "unattributed" or value]
            items.append("<li><code>%s</code> at %s: %s µs %s %s<code>%s</code> (%s against %s µs): %s µs.</li>" % (
                esc(gap.arm), esc(gap.band), esc(format_us(abs(gap.extra_ns))), "above" if gap.extra_ns >= 0 else "below",
                "" if gap.matched else "its nearest C floor (not the same experiment) ", esc(gap.floor),
                esc(format_us(gap.arm_ns)), esc(format_us(gap.floor_ns)), ", ".join(shown)))
        parts.append('<p class="muted">Where the difference from C goes (the arm\'s parts minus its floor\'s, in the same '
                     'band; they sum to the difference):</p><ul class="trace-gaps">%s</ul>' % "".join(items))
    if overhead_rows:
        parts.append(table(
            "trace-overhead", "Tracing overhead: each arm measured untraced (its figures), traced, and untraced again, in this run; µs",
            "<th>arm</th><th>untraced p50</th><th>traced p50</th><th>untraced p50 after</th><th>traced / untraced</th>"
            "<th>wakes fully attributed</th>", "".join(overhead_rows)))
    if not_split:
        parts.append('<p class="muted">Not split:</p><ul class="trace-not-split">%s</ul>' % "".join(not_split))
    return "".join(parts)


def render_where_time_goes_runs(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], charts: IdCounter) -> str:
    """:func:`render_where_time_goes` for each run of several that asked to trace, under its label."""
    out = []
    for run, run_label in zip(runs, labels):
        body = render_where_time_goes(run, charts)
        if body:
            out.append("<h3>%s%s</h3>%s" % (_swatch(run_label), esc(run_label.full), body))
    return "".join(out)


def render_grids(runs: Sequence[RunEvidence], charts: IdCounter) -> str:
    """A heat map of p50 per arm for each dimension the runs vary in (interpreter, placement, machine, ...)."""
    from wakelab.report.interactive import chart_html, grid_chart, label as plot_text

    dims = [(key, title) for key, title, _ in DIMENSIONS if len({dimension_words(r.bundle, key) for r in runs}) > 1]
    records = [r.bundle.arms_by_name() for r in runs]
    measured = [{name: arm.latency for name, arm in by_name.items() if arm.ok and arm.p50_ns is not None and arm.latency is not None}
                for by_name in records]
    names = [n for n in _arm_order(runs) if any(n in figures for figures in measured)]
    if not dims or not names:
        return ""
    out = []
    for key, title in dims:
        values = [dimension_words(r.bundle, key) for r in runs]
        first_seen = {v: values.index(v) for v in values}
        columns = sorted(range(len(runs)), key=lambda i: (first_seen[values[i]], i))
        others = [k for k, _ in dims if k != key]
        ticks = []
        for i in columns:
            rest = " · ".join(plot_text(dimension_words(runs[i].bundle, k)) for k in others)
            ticks.append("<b>%s</b>%s" % (plot_text(values[i]), ("<br>" + rest) if rest else ""))
        chart = grid_chart(charts.next_id(), "p50 by %s" % title, names, ticks, [measured[i] for i in columns])
        out.append(chart_html(chart))
    return ('<h3>Grids</h3><p class="muted">p50 of each arm in each run, one heat map per dimension the runs vary in '
            "(columns grouped by it); darker is slower, on a log colour scale. Hover a cell for p50 and p99.</p>%s" % "".join(out))
