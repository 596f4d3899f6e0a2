"""The sections of one run: verdict, lead table, repetitions and placement, honesty, caveats, details, guidance."""

from __future__ import annotations

import math
from typing import List, Mapping, Optional, Sequence, Union

from wakelab.analysis.caveats import NativeRatio
from wakelab.analysis.guidance import open_loop_note
from wakelab.analysis.view import RunView, view_of
from wakelab.evidence.model import ArmOrigin
from wakelab.formatting import DASH, format_ns
from wakelab.core.registry import FAMILY_TITLES
from wakelab.report.lead import (LATENCY_COLUMNS, NATIVE_LEGEND, NEAREST_FLOOR, RATE_COLUMNS, REPETITIONS_LEGEND, lead_table,
                                 native_text, pairing_figures, placement_rows, rate_cells, verdict_figures)
from wakelab.report.honesty import honesty_facts, readable
from wakelab.report.text import format_lost, format_machine_load, format_warning, format_warning_group, origin_text, reproduce_commands
from wakelab.report.html.common import _badge, _slug, _status_cell, esc, table as html_table
from wakelab.report.html.load import RunEvidence

#: What a section is laid out from: a loaded run, its analysis view, or its summary document.
Run = Union[RunEvidence, RunView, Mapping[str, object]]


def _view(run: Run) -> RunView:
    """The run's :class:`~wakelab.analysis.view.RunView` (a loaded run's own, computed once)."""
    return run.view if isinstance(run, RunEvidence) else view_of(run)


def render_verdict(run: Run) -> str:
    """The lab's comparisons first (the answer), then each measured arm's p50 and p99: summary.txt's verdict in another
    order, so that the answer is the first thing read."""
    view = _view(run)
    arm_items: List[str] = []
    comparison_items: List[str] = []
    for arm in view.bundle.arms():
        figures = tuple(esc(f) for f in verdict_figures(arm) or ()) if arm.ok else ()
        if not figures:
            continue
        if arm.latency is not None:
            text = "<strong>%s</strong>: p50 <b>%s</b>, p99 <b>%s</b> over %s wakes %s %s" % (
                (esc(arm.name),) + figures + (_badge(arm.waiter, "w-" + arm.waiter), esc(arm.scope)))
            if arm.latency.lost:
                text += ' <span class="warn">%s.</span>' % esc(format_lost(arm))
        else:
            text = "<strong>%s</strong>: <b>%s ops/s</b> (median of %s rounds of %s calls; empty loop %s iterations/s)" % (
                (esc(arm.name),) + figures)
        arm_items.append("<li>%s</li>" % text)
    for pairing in pairing_figures(view):
        judgement = ('<span class="badge good">like for like</span> %s' if pairing.pairing.like_for_like
                     else '<span class="badge bad">NOT like for like</span> %s') % esc(pairing.detail)
        comparison_items.append("<li><strong>%s / %s</strong> = <b>%s</b> at p50%s. %s.</li>" % (
            esc(pairing.pairing.a), esc(pairing.pairing.b), esc(pairing.p50),
            ", <b>%s</b> at p99" % esc(pairing.p99) if pairing.p99 else "", judgement))
    if not arm_items:
        return '<p class="muted">No arm produced figures in this run.</p>'
    note = open_loop_note(view.bundle)  # what an open-loop figure holds, as summary.txt says before its figures
    out = '<ul class="answer">%s</ul>' % "".join(comparison_items) if comparison_items else ""
    out += '<p class="muted">%s%s.</p>' % (esc(note[0].upper()), esc(note[1:])) if note else ""
    return out + '<ul class="verdict">%s</ul>' % "".join(arm_items)


def _native_cell(ratio: Optional[NativeRatio]) -> str:
    """A "vs C" cell (escaped HTML): the ratio, badged "nearest floor" unless the floor is the same experiment."""
    if ratio is None:
        return DASH
    text, nearest = native_text(ratio)
    title = "the closest C experiment, not the same one: not the interpreter's share"
    return '%s <span class="badge nearest" title="%s">%s</span>' % (esc(text), esc(title), esc(NEAREST_FLOOR)) if nearest else esc(text)


def _num_cells(cells: Sequence[str]) -> str:
    return "".join('<td class="num">%s</td>' % c for c in cells)


def render_lead_table(run: Run) -> str:
    """Latency arms grouped by family (µs, with a log-scaled p50 bar), then rate arms."""
    table = lead_table(_view(run))
    out: List[str] = []
    if table.families:
        show_native = table.latency_native
        p50s = [row.arm.p50_ns for _, rows in table.families for row in rows if row.arm.ok and not row.component and row.arm.p50_ns]
        lo, hi = (min(p50s), max(p50s)) if p50s else (1.0, 1.0)
        head = "".join("<th>%s</th>" % c for c in ("n", "lost") + LATENCY_COLUMNS)
        if show_native:
            head += '<th title="p50 over the p50 of its C floor, in this run">vs C p50</th>'
        width = 4 + 2 + len(LATENCY_COLUMNS) + (1 if show_native else 0)
        rows: List[str] = []
        for family, members in table.families:
            if len(table.families) > 1:
                rows.append('<tr class="family"><th colspan="%d">%s</th></tr>' % (width, esc(FAMILY_TITLES.get(family, family))))
            for row in members:
                a, lat = row.arm, row.figures
                cells = [esc(c) for c in row.cells(lat)] if lat is not None else []
                if row.component and lat is not None:
                    rows.append('<tr class="component"><th scope="row">↳ %s</th><td colspan="3"></td>%s%s</tr>' % (
                        esc(row.component), _num_cells(cells), "<td></td>" if show_native else ""))
                    continue
                name_cells = '<th scope="row"><a href="#arm-%s">%s</a></th><td>%s</td><td>%s</td>' % (
                    esc(_slug(a.name)), esc(a.name), _badge(a.waiter, "w-" + a.waiter), esc(a.scope))
                if not a.ok or lat is None:
                    rows.append('<tr class="not-ok">%s<td></td>%s</tr>' % (name_cells, _status_cell(a, width - 4)))
                    continue
                cells[1] = '<span class="warn">%s</span>' % cells[1] if lat.lost else cells[1]
                cells[3] = "<b>%s</b>" % cells[3]
                rows.append('<tr>%s<td class="bar">%s</td>%s%s</tr>' % (name_cells, _log_bar(lat.p50_ns, lo, hi), _num_cells(cells),
                                                                    '<td class="num">%s</td>' % _native_cell(table.native(a)) if show_native else ""))
        out.append(html_table("lead", "Wake latency, µs (p50 bar on a log scale)", '<th>arm</th><th>waiter</th><th>scope</th>'
                              '<th aria-label="p50 on a log scale"></th>' + head, "".join(rows)))
    if table.rates:
        columns = RATE_COLUMNS + (("C is faster by",) if table.rate_native else ())
        rows = []
        for a in table.rates:
            name = '<th scope="row">%s</th>' % esc(a.name)
            if not a.ok or a.rate is None:
                rows.append('<tr class="not-ok">%s%s</tr>' % (name, _status_cell(a, len(columns))))
                continue
            cells = [esc(c) for c in rate_cells(a.rate)] + ([_native_cell(table.native(a))] if table.rate_native else [])
            cells[2] = "<b>%s</b>" % cells[2]
            rows.append("<tr>%s%s</tr>" % (name, _num_cells(cells)))
        out.append(html_table("lead rate", "Rate arms", "<th>arm</th>" + "".join("<th>%s</th>" % esc(c) for c in columns), "".join(rows)))
    if table.ratios:
        out.append('<p class="muted legend">%s</p>' % esc(NATIVE_LEGEND))
    return "".join(out) or '<p class="muted">This run has no arms.</p>'


def render_repetitions_and_placement(run: Run) -> str:
    """Per latency arm, each repetition's own p50 and their range, and its wakes split by where they ran.

    Empty for a bundle that has neither (made before ``--repeat``), so such a page is as it was.
    """
    rows: List[str] = []
    for row in placement_rows(_view(run)):
        if not row.arm.ok:
            continue
        cells = [esc(" · ".join(row.repetitions) or DASH)] + [esc(c) for c in row.cells]
        if row.unknown is not None:
            cells[-1] += ' <span class="muted">(%s unknown)</span>' % esc(row.unknown)
        rows.append('<tr><th scope="row"><a href="#arm-%s">%s</a></th>%s</tr>' % (esc(_slug(row.arm.name)), esc(row.arm.name), _num_cells(cells)))
    if not rows:
        return ""
    return (
        '<div class="table-wrap"><table class="reps"><caption>Wake latency, µs: each repetition\'s own p50, '
        "and the wakes split by where they ran</caption><thead>"
        '<tr><th rowspan="2">arm</th><th colspan="2">repetitions</th><th colspan="3">same CPU</th><th colspan="3">cross CPU</th>'
        '<th rowspan="2">crossed</th></tr>'
        "<tr><th>p50 of each</th><th>range</th><th>n</th><th>p50</th><th>p99</th><th>n</th><th>p50</th><th>p99</th></tr>"
        "</thead><tbody>%s</tbody></table></div>"
        '<p class="muted legend">%s</p>' % ("".join(rows), esc(REPETITIONS_LEGEND))
    )


def _log_bar(value: Optional[float], lo: float, hi: float) -> str:
    """A bar whose length is ``value``'s place between ``lo`` and ``hi`` on a log scale."""
    if value is None or value <= 0 or lo <= 0:
        return ""
    span = math.log(hi / lo) if hi > lo else 1.0
    share = 0.08 + 0.92 * (math.log(value / lo) / span if hi > lo else 1.0)
    return '<span class="p50bar" style="width:%.0f%%"></span>' % (100 * min(1.0, max(0.0, share)))


_MARKUP = {"b": "<b>%s</b>", "warn": '<span class="warn">%s</span>', "muted": '<span class="muted">%s</span>', "code": "<code>%s</code>"}


def render_honesty(run: Run) -> str:
    """When, on what, how (:func:`~wakelab.report.honesty.honesty_facts`), then every recorded setting folded away."""
    bundle = _view(run).bundle
    facts = "".join("<dt>%s</dt><dd>%s</dd>" % (esc(fact.label), "".join(
        esc(w) if isinstance(w, str) else _MARKUP[w.mark] % esc(w.text) for w in fact.words)) for fact in honesty_facts(bundle))
    recorded = "".join(
        "<dt>%s</dt><dd>%s</dd>" % (esc(section), esc(readable(bundle.recorded(section))))
        for section in ("parameters", "conditions", "execution", "system") if bundle.recorded(section)
    )
    out = '<dl class="facts">%s</dl>' % facts
    if recorded:
        out += '<details class="recorded"><summary>Every recorded setting</summary><dl class="facts">%s</dl></details>' % recorded
    return out


def render_caveats(run: Run) -> str:
    """The caveats, then the measurement-quality warnings -- the load the run saw first, the arms that share a
    warning on one item with each arm's own sentence folded under it -- and the notes."""
    view = _view(run)
    caveats = view.bundle.caveats
    quality = [g for g in view.warning_groups if all(isinstance(w.raw, (str, dict)) for w in g.records)]
    notes = [w for w in view.notes if isinstance(w.raw, (str, dict))]
    parts: List[str] = []
    if caveats:
        parts.append('<ul class="caveats">%s</ul>' % "".join("<li>%s</li>" % esc(c) for c in caveats))
    items = ["<li>%s</li>" % esc(format_machine_load(view.machine_load))] if view.machine_load is not None else []
    for group in quality:
        if group.grouped:
            items.append("<li>%s<details><summary>Arm by arm</summary><ul>%s</ul></details></li>" % (
                esc(format_warning_group(group)), "".join("<li>%s</li>" % esc(format_warning(w)) for w in group.records)))
        else:
            items.append("<li>%s</li>" % esc(format_warning(group.records[0])))
    if items:
        parts.append('<h3>Measurement-quality warnings</h3><ul class="caveats quality">%s</ul>' % "".join(items))
    if notes:
        parts.append('<h3>Notes</h3><ul class="caveats notes">%s</ul>' % "".join("<li>%s</li>" % esc(format_warning(w)) for w in notes))
    return "".join(parts) or '<p class="muted">No caveats: every arm ran, no wake was lost.</p>'


def render_details(run: Run) -> str:
    """What each arm times, the methodology, limits and how to reproduce: folded away."""
    view = _view(run)
    lab = view.bundle.lab
    rows = "".join(
        '<tr><th scope="row">%s</th><td>%s%s</td><td>%s</td><td>%s</td></tr>'
        % (esc(a.name), esc(a.mechanism), "<br>user-defined: %s" % esc(origin_text(a.origin or ArmOrigin())) if a.user_defined else "",
           esc(a.t0), esc(a.t1))
        for a in view.bundle.arms()
    )
    parts = ["<details><summary>What each arm times (t0, t1)</summary>%s</details>" % html_table(
        "defs", "", "<th>arm</th><th>mechanism</th><th>t0</th><th>t1</th>", rows)]
    if lab.methodology:
        parts.append("<details><summary>Methodology</summary>%s</details>" % "".join("<p>%s</p>" % esc(p) for p in lab.methodology))
    if lab.limits:
        parts.append("<details><summary>Limits</summary><ul>%s</ul></details>" % "".join("<li>%s</li>" % esc(p) for p in lab.limits))
    parts.append("<details><summary>Reproduce</summary>%s</details>" % "".join(
        "<pre><code>%s</code></pre>" % esc(c) for c in reproduce_commands(view)))
    return "".join(parts)


def render_guidance(run: RunEvidence) -> str:
    """The GUIDANCE section's body (escaped HTML): the headline, then each claim with the figures it cites."""
    found = run.view.guidance
    if not found.headline and not found.items:
        return ""
    # A cite links to the arm's distributions where it has them (latency arms); a rate arm's is plain text.
    cards = {a.name for a in run.bundle.arms() if a.is_latency}
    items = []
    for advice in found.items:
        cites = "".join(
            ('<a class="cite" href="#arm-%s">%%s</a>' % esc(_slug(cite.arm)) if cite.arm in cards else '<span class="cite">%s</span>')
            % ("%s %s %s" % (esc(cite.arm), esc(cite.figure.replace("per_call", "per call")), esc(format_ns(cite.value_ns))))
            for cite in advice.cites
        )
        items.append('<li><span class="badge topic">%s</span> %s%s</li>' % (
            esc(advice.topic), esc(advice.text), (' <span class="cites">%s</span>' % cites) if cites else ""))
    return '<p class="answer">%s</p><ul class="guidance">%s</ul>' % (esc(found.headline), "".join(items))
