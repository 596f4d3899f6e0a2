"""The HTML report: one self-contained page from one or more evidence bundles (analysis side).

The page holds what ``summary.txt`` holds, laid out from the same analysis view, and the pictures a text file
cannot give (:mod:`wakelab.report.interactive`, :mod:`wakelab.report.distribution`).  Several runs are ordered by
machine, then interpreter version (3.9 before 3.10), and are labelled by host name when they come from several
machines (a fleet report).

Self-contained means the page never fetches anything: styles are inline, plotly.js is inlined once, and a
Content-Security-Policy allows only the page's own two scripts (by hash) and forbids every fetch, so even a
page someone edited by hand cannot phone home.  Every string from the evidence is escaped where it enters the
page (:func:`~wakelab.report.html.common.esc`), or before plotly reads it (:func:`~wakelab.report.interactive.label`).

One module per concern, each importing only those before it: :mod:`.common`, :mod:`.load`, :mod:`.sections` (one
run), :mod:`.runs` (several compared), :mod:`.distributions`, :mod:`.page`, :mod:`.charts`, :mod:`.matrix`; this
module puts a page together and re-exports what the rest of wakelab uses.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

from wakelab.analysis.view import compare_with_first
from wakelab.errors import UsageError
from wakelab.evidence.model import Grid
from wakelab.formatting import counted
from wakelab.report.html.common import esc, IdCounter, _run_state
from wakelab.report.html.load import load_run, load_runs, order_runs, RunEvidence, version_key
from wakelab.report.html.sections import (render_caveats, render_details, render_guidance, render_honesty, render_lead_table,
                                          render_repetitions_and_placement, render_verdict)
from wakelab.report.html.runs import (render_comparison_table, render_differences, render_rate_table, render_runs_table, run_labels,
                                      _run_sections, RunLabel)
from wakelab.report.html.distributions import render_distributions
from wakelab.report.html.page import count_charts, count_plots, CSP, _page, page_csp, _section, write_report
from wakelab.report.html.charts import render_grids, render_overview, render_where_time_goes, render_where_time_goes_runs
from wakelab.report.html.matrix import _grid_sections


def render_report(runs: Sequence[RunEvidence], notes: Sequence[str] = (), grids: Sequence[Grid] = ()) -> str:
    """The whole HTML page for ``runs`` (one or more loaded bundles; several are shown in :func:`order_runs` order).

    ``grids`` are the grid folders the runs came from (:func:`load_runs`): each gets its matrix, cell by cell.
    """
    if not runs:
        raise UsageError("give at least one evidence folder")
    from wakelab.extras import install_command
    from wakelab.report.interactive import InteractiveUnavailable

    try:
        return _render(order_runs(runs) if len(runs) > 1 else list(runs), notes, grids)
    except InteractiveUnavailable as exc:
        raise UsageError("the HTML report needs plotly for its charts (%s): %s" % (install_command("report"), exc)) from None


def _render(runs: Sequence[RunEvidence], notes: Sequence[str], grids: Sequence[Grid] = ()) -> str:
    from wakelab import __version__
    from wakelab.report.interactive import GLUE_JS, plotly_js

    plots_ = IdCounter("plot")
    charts = IdCounter("chart")
    toc: List[Tuple[str, str]] = []
    first = runs[0].bundle
    lab = first.lab
    same_lab = len({str(r.bundle.lab.id) for r in runs}) == 1
    several = len(runs) > 1
    hosts = sorted({r.bundle.hostname for r in runs})
    grid_folders = sorted({grid.source for grid in grids})
    title = str(lab.name or "wakelab run") if same_lab else "wakelab: %d runs compared" % len(runs)
    header = ["<header class=\"top\"><h1>%s</h1>" % esc(title)]
    if same_lab and lab.question:
        header.append('<p class="question">%s</p>' % esc(lab.question))
    body: List[str] = []

    def add(anchor: str, title: str, content: str) -> None:
        if content:  # a section with nothing to say is left out
            body.append(_section(anchor, title, content, toc))

    if not several:
        state, css = _run_state(first)
        header.append(
            '<p class="meta">wakelab %s · %s · %s · <span class="badge %s">%s</span> · <code>%s</code></p>'
            % (esc(first.tool_version), esc(first.started_utc), esc(first.interpreter.label), css, esc(state), esc(first.source))
        )
        labels = [RunLabel(first.interpreter.label, first.interpreter.label, "#0072B2")]
        add("guidance", "Guidance", render_guidance(runs[0]))
        glance = render_overview(runs, labels, charts)
        if any(arm.is_rate for arm in first.arms()):  # ops/s are not wake times: the lead table has them, in a table of their own
            glance += '<p class="muted">The rate arms (operations per second) are in their own table: <a href="#lead-table">lead table</a>.</p>'
        add("overview", "At a glance", glance)
        body.extend(_grid_sections(grids, toc))
        add("where-time-goes", "Where the time goes", render_where_time_goes(runs[0], charts))
        add("verdict", "Verdict", render_verdict(runs[0]))
        add("lead-table", "Lead table", render_lead_table(runs[0]))
        add("repetitions", "Repetitions and placement", render_repetitions_and_placement(runs[0]))
        add("honesty", "Lab honesty", render_honesty(runs[0]))
        add("caveats", "Caveats", render_caveats(runs[0]))
        add("distributions", "Latency distributions", render_distributions(runs, labels, plots_))
        add("details", "Definitions, methodology, reproduce", render_details(runs[0]))
    else:
        labels = run_labels(runs)
        what = "%d runs" % len(runs)
        if grid_folders:
            what = "%d cells of the grid%s %s" % (len(runs), "s" if len(grid_folders) > 1 else "", ", ".join(grid_folders))
        if len(hosts) > 1:
            what += " from %d machines (%s)" % (len(hosts), ", ".join(hosts))
        header.append('<p class="meta">%s · report by wakelab %s</p>' % (esc(what), esc(__version__)))
        glance = render_overview(runs, labels, charts) + render_grids(runs, charts)
        add("overview", "At a glance", glance)
        body.extend(_grid_sections(grids, toc))
        add("where-time-goes", "Where the time goes", render_where_time_goes_runs(runs, labels, charts))
        versus = compare_with_first([run.bundle for run in runs])
        comparison = [render_runs_table(runs, labels), render_differences(runs, labels),
                      render_comparison_table(runs, labels, versus), render_rate_table(runs, labels, versus)]
        add("comparison", "Runs compared", "".join(comparison))
        add("distributions", "Latency distributions", render_distributions(runs, labels, plots_))
        for i, (run, label) in enumerate(zip(runs, labels), 1):
            body.append(_run_sections(run, label, "run-%d" % i, toc))
    if notes:
        header.append("".join('<p class="note">%s</p>' % esc(n) for n in notes))
    nav = '<nav class="toc">%s</nav>' % "".join('<a href="#%s">%s</a>' % (esc(a), esc(t)) for a, t in toc)
    header.append(nav + "</header>")
    footer = (
        "<footer>Generated by wakelab %s from the evidence bundle%s above. Times are wake latencies t1 - t0 "
        "(perf_counter_ns); percentiles use linear interpolation between closest ranks. %s (plotly.js, "
        "inlined), %s.</footer>"
        % (esc(__version__), "s" if several else "", counted(charts.count, "interactive chart"), counted(plots_.count, "plot"))
    )
    scripts = [plotly_js(), GLUE_JS] if charts.count or plots_.count else []
    return _page(title, "".join(header) + "".join(body) + footer, scripts)


__all__ = [
    "CSP", "RunEvidence", "RunLabel", "count_charts", "count_plots", "esc",
    "load_run", "load_runs", "order_runs", "page_csp", "render_caveats", "render_comparison_table", "render_details",
    "render_differences", "render_grids", "render_guidance", "render_honesty", "render_lead_table", "render_overview",
    "render_rate_table", "render_repetitions_and_placement", "render_report", "render_runs_table", "render_verdict", "run_labels",
    "version_key", "write_report",
]
