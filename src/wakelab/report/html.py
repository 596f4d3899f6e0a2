"""The HTML report: one self-contained page from one or more evidence bundles (analysis side).

The page holds what ``summary.txt`` holds -- verdict, guidance (where the
analysis layer words it), lead table, each repetition's p50 and the wakes split
by where they ran, honesty block, caveats -- rendered as
HTML from the same summary documents, and the pictures a text file cannot
give.  It leads with charts that compare at a glance (see
:mod:`wakelab.report.interactive`): every latency arm on one shared log axis
(p50, p90 to p99, its C floor beside it; sortable, families toggleable, the
figures on hover), the rate arms, and, given several runs (a grid's cells,
interpreters, machines), a heat map per dimension that varies.  A run made
with ``--trace`` adds "Where the time goes": per traced arm, stacked bars of
its median and tail wakes split into notify path, scheduler, GIL wait and
interpreter, each Python arm beside its C floor, and the tracing overhead.  Each arm's
distribution (histogram and ECDF on log axes, :mod:`wakelab.report.distribution`)
is folded away until asked for, and drawn when unfolded.

Several runs are ordered by machine, then interpreter version (3.9 before
3.10), whatever order the paths came in; runs from several machines are
labelled by host name: a fleet report.

Self-contained means the page never fetches anything: styles are inline,
plotly.js is inlined once, figures are JSON data blocks, and a
Content-Security-Policy allows only the page's own two scripts (by hash) and
forbids every fetch, so even a page someone edited by hand cannot phone home.

Every string that comes from evidence (a note, a mechanism, a lab title, a
failure reason, a condition) is escaped with :func:`html.escape` where it
enters the page, and text handed to plotly is escaped before it
(:func:`interactive.label`).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.errors import OutputError, UsageError
from wakelab.evidence.bundle import atomic_write_text
from wakelab.evidence.model import ArmSamples, Bundle, Interpreter
from wakelab.analysis.caveats import (
    WAITING_FOR_GIL,
    NativeRatio,
    gil_enabled,
    lab_pairings,
    native_ratios,
    waiter_at_t0,
)
from wakelab.formatting import DASH, escape_text, format_ns, format_percent, format_rate, format_ratio, format_us
# The rule a ratio is coloured by is matrix.txt's, so that the text and the page judge a tail alike.
from wakelab.report.matrix_text import RATIO_NOISE, RatioTone, positive_ratio, ratio_tone  # noqa: F401 (RatioTone: part of this module's API)
from wakelab.report.text import (
    FAMILY_TITLES,
    NATIVE_LEGEND,
    NEAREST_FLOOR,
    format_lost,
    format_warning,
    reproduce_commands,
    split_warnings,
)

# Structured values (a list, a dict) longer than this are cut in tables (the bundle keeps them whole).
MAX_VALUE_CHARS = 400
# The kind of chart (interactive.chart_html) an arm's histogram and ECDF are.
DISTRIBUTION = "distribution"
STATUS_WORDS = {"ok": "ok", "skipped": "skipped", "failed": "FAILED", "interrupted": "interrupted", "pending": "not run"}


@dataclasses.dataclass(frozen=True)
class RunEvidence:
    """A loaded bundle (the evidence model's :class:`Bundle`) and the raw samples of its measured latency arms.

    ``samples`` are the raw samples the samples files keep: every wake, except
    for a soak past its raw-sample cap (``ArmSamples.every_wake`` False),
    whose every wake is in ``histograms`` (its
    :class:`~wakelab.analysis.hdr.LogLinearHistogram`, by arm name).
    """

    bundle: Bundle
    samples: Mapping[str, ArmSamples]
    grid: Optional[str] = None  # the grid folder this run is a cell of
    cell: Optional[str] = None  # its cell's label in that grid
    histograms: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def source(self) -> str:
        return self.bundle.source

    @property
    def folder(self) -> str:
        return self.bundle.folder

    @property
    def summary(self) -> Mapping[str, Any]:
        return self.bundle.summary


# --- loading ----------------------------------------------------------------------------


def load_run(path: str, grid: Optional[str] = None, cell: Optional[str] = None) -> RunEvidence:
    """Load and validate the bundle at ``path`` (its folder or its summary.json) with its samples.

    Raises :class:`EvidenceError` when the summary or the samples of an arm
    that says it was measured are missing, corrupt, or disagree in size.  A
    soak past its raw-sample cap is read as it is kept: the raw samples of its
    first chunks, and its histogram of every wake (checked here, once).
    """
    from wakelab.analysis.histogram import counters_of

    bundle = Bundle.load(path, label=cell or "", grid_hint="report its cells")
    samples = {arm.name: bundle.kept_latency_samples(arm) for arm in bundle.arms() if arm.kind == "latency" and arm.measured}
    histograms = {name: counters_of(kept, "%s: arm %s" % (bundle.source, name))
                  for name, kept in samples.items() if not kept.every_wake}
    return RunEvidence(bundle, samples, grid, cell, histograms)


@dataclasses.dataclass(frozen=True)
class GridCellView:
    """One cell of a grid as the page lays it out: its label, dimensions and state, and its run (None: never ran)."""

    label: str
    dimensions: Mapping[str, Any]
    status: str
    run: Optional[RunEvidence]


@dataclasses.dataclass(frozen=True)
class GridView:
    """A grid folder given to ``report``: its matrix.json and every cell, in the matrix's order."""

    folder: str
    matrix: Mapping[str, Any]
    cells: Tuple[GridCellView, ...]

    @property
    def dimensions(self) -> List[str]:
        return [str(d) for d in _list(self.matrix.get("dimensions"))]


@dataclasses.dataclass(frozen=True)
class ReportInput:
    """What a report is made of: the runs, notes about what was given but could not be shown, and the grids given."""

    runs: List[RunEvidence]
    notes: List[str]
    grids: List[GridView] = dataclasses.field(default_factory=list)


def load_grid(folder: str) -> ReportInput:
    """The cells of the grid in ``folder`` (matrix.json and cells/) that hold evidence, in the matrix's order.

    The grid is judged by :func:`wakelab.evidence.load.load_grid_index`: a
    cell not run yet (pending, no summary.json) is left out with a note; a
    cell whose evidence is gone although matrix.json says it ran, a cell
    folder outside the grid, or a corrupt matrix.json is an :class:`EvidenceError`.
    """
    from wakelab.evidence.load import load_grid_index

    index = load_grid_index(folder)
    views = []
    for cell in index.cells:
        run = load_run(cell.folder, grid=folder, cell=cell.label) if cell.has_evidence else None
        views.append(GridCellView(cell.label, cell.dimensions, cell.status, run))
    runs = [v.run for v in views if v.run is not None]
    pending = index.never_ran
    notes = ["%s: %d cell%s not run yet (%s)." % (folder, len(pending), "" if len(pending) == 1 else "s", ", ".join(pending))] if pending else []
    return ReportInput(runs, notes, [GridView(folder, index.matrix, tuple(views))])


def load_runs(paths: Sequence[str]) -> ReportInput:
    """Every run named by ``paths``: a bundle (its folder or summary.json) or a grid folder (its cells)."""
    from wakelab.evidence.load import is_grid_folder, orphan_cells_error, orphan_cells_folder

    runs: List[RunEvidence] = []
    notes: List[str] = []
    grids: List[GridView] = []
    for path in paths:
        if is_grid_folder(path):
            loaded = load_grid(path)
            runs.extend(loaded.runs)
            notes.extend(loaded.notes)
            grids.extend(loaded.grids)
        elif orphan_cells_folder(path):
            raise orphan_cells_error(path)
        else:
            runs.append(load_run(path))
    return ReportInput(runs, notes, grids)


def version_key(version: str) -> Tuple[int, ...]:
    """``3.10.4`` as (3, 10, 4), so that 3.9 sorts before 3.10 (``3.13.0rc1`` as (3, 13, 0))."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def order_runs(runs: Sequence[RunEvidence]) -> List[RunEvidence]:
    """Runs by machine (when there are several), then interpreter version; otherwise as given."""
    hosts = {r.bundle.hostname for r in runs}

    def key(run: RunEvidence) -> Tuple[Any, ...]:
        interp = run.bundle.interpreter
        return (run.bundle.hostname if len(hosts) > 1 else "", version_key(interp.version), interp.implementation,
                interp.free_threaded_build)

    return sorted(runs, key=key)


# --- small helpers ----------------------------------------------------------------------


def esc(value: object) -> str:
    """Evidence text made safe to place in HTML (element content or a quoted attribute).

    Control characters become visible escapes (``\\x1b``) first, so that a page printed
    to a terminal (``-o -``) cannot carry an escape sequence, and the page shows what is there.
    """
    return html.escape(escape_text(str(value), multiline=True), quote=True)


def _plain(value: object) -> str:
    """A value from the evidence as short plain text (JSON for anything structured)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (int,)):
        return str(value)
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _pairs(mapping: object) -> List[Tuple[str, str]]:
    """``(key, value)`` text pairs of a dict from the evidence (empty for anything else)."""
    if not isinstance(mapping, dict):
        return []
    return [(str(k), _plain(v)) for k, v in sorted(mapping.items(), key=lambda kv: str(kv[0]))]


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> List[Any]:
    return list(value) if isinstance(value, list) else []


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in text.lower())


def _latency(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(entry.get("latency"))


def _p50(entry: Optional[Mapping[str, Any]]) -> Optional[float]:
    if not entry or entry.get("status") != "ok":
        return None
    return _latency(entry).get("p50_ns")


def _arms(summary: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    return [a for a in _list(summary.get("arms")) if isinstance(a, dict)]


def _by_name(summary: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    return {str(a.get("name")): a for a in _arms(summary)}


def interpreter_label(summary: Mapping[str, Any]) -> str:
    """``CPython 3.13.5``, with ``free-threaded`` / ``GIL off`` when they apply."""
    return Interpreter.from_dict(_dict(summary.get("interpreter"))).label


def _run_state(summary: Mapping[str, Any]) -> Tuple[str, str]:
    """(word, css class) for the run's completeness, as summary.txt words it."""
    if summary.get("complete"):
        return "complete", "good"
    if summary.get("interrupted"):
        return "INCOMPLETE (interrupted)", "bad"
    if summary.get("finished_utc"):
        return "INCOMPLETE (see caveats)", "bad"
    return "IN PROGRESS (or stopped before the end)", "bad"


def _badge(text: object, kind: str = "") -> str:
    return '<span class="badge %s">%s</span>' % (esc(_slug(kind or str(text))), esc(text))


def _status_cell(entry: Mapping[str, Any], colspan: int) -> str:
    status = str(entry.get("status"))
    reason = entry.get("reason")
    return '<td class="status" colspan="%d"><span class="badge st-%s">%s</span>%s</td>' % (
        colspan,
        esc(_slug(status)),
        esc(STATUS_WORDS.get(status, status)),
        (" " + esc(reason)) if reason else "",
    )


# --- sections ---------------------------------------------------------------------------


def render_verdict(summary: Mapping[str, Any]) -> str:
    """The lab's comparisons first (the answer), then each measured arm's p50 and p99.

    The same figures and judgements as summary.txt's verdict, computed from the
    same document; only the order differs, so that the answer is the first thing read.
    """
    arm_items: List[str] = []
    comparison_items: List[str] = []
    for entry in _arms(summary):
        if entry.get("status") != "ok":
            continue
        name = esc(entry.get("name"))
        if entry.get("latency"):
            lat = _latency(entry)
            p99 = lat.get("p99_ns")
            text = "<strong>%s</strong>: p50 <b>%s</b>, p99 <b>%s</b> over %s wakes %s %s" % (
                name,
                esc(format_ns(lat.get("p50_ns"))),
                esc(format_ns(p99)) if p99 is not None else "not reported",
                esc(lat.get("n")),
                _badge(entry.get("waiter"), "w-" + str(entry.get("waiter"))),
                esc(entry.get("scope")),
            )
            if lat.get("lost"):
                text += ' <span class="warn">%s.</span>' % esc(format_lost(entry))
        elif entry.get("rate"):
            rate = _dict(entry.get("rate"))
            text = "<strong>%s</strong>: <b>%s ops/s</b> (median of %s rounds of %s calls; empty loop %s iterations/s)" % (
                name,
                esc(format_rate(rate.get("ops_per_s"))),
                esc(rate.get("rounds")),
                esc(format_rate(rate.get("n_per_round"))),
                esc(format_rate(rate.get("baseline_ops_per_s"))),
            )
        else:
            continue
        arm_items.append("<li>%s</li>" % text)
    for pairing in lab_pairings(summary):
        if pairing.p50_ratio is None:
            continue
        if pairing.like_for_like:
            judgement = '<span class="badge good">like for like</span> both %s, %s; at t0 the waiter is %s' % (
                esc(pairing.waiter), esc(pairing.scope), esc(pairing.at_t0)
            )
        else:
            judgement = '<span class="badge bad">NOT like for like</span> %s' % "; ".join(
                "%s: %s against %s" % (esc(d.aspect), esc(d.a), esc(d.b)) for d in pairing.differences
            )
        comparison_items.append(
            "<li><strong>%s / %s</strong> = <b>%s</b> at p50%s. %s.</li>"
            % (
                esc(pairing.a), esc(pairing.b), esc(format_ratio(pairing.p50_ratio)),
                (", <b>%s</b> at p99" % esc(format_ratio(pairing.p99_ratio))) if pairing.p99_ratio is not None else "",
                judgement,
            )
        )
    if not arm_items:
        return '<p class="muted">No arm produced figures in this run.</p>'
    out = ""
    if comparison_items:
        out += '<ul class="answer">%s</ul>' % "".join(comparison_items)
    return out + '<ul class="verdict">%s</ul>' % "".join(arm_items)


def _native_cell(ratio: Optional[NativeRatio]) -> str:
    """A "vs C" cell (escaped HTML): the ratio, badged "nearest floor" unless the floor is the same experiment."""
    if ratio is None:
        return DASH
    text = esc(format_ratio(ratio.ratio))
    if ratio.interpreter_share:
        return text
    title = "the closest C experiment, not the same one: not the interpreter's share"
    return '%s <span class="badge nearest" title="%s">%s</span>' % (text, esc(title), esc(NEAREST_FLOOR))


def render_lead_table(summary: Mapping[str, Any]) -> str:
    """Latency arms grouped by family (µs, with a log-scaled p50 bar), then rate arms."""
    arms = _arms(summary)
    ratios = native_ratios(summary)
    latency_arms = [a for a in arms if a.get("kind") == "latency"]
    rate_arms = [a for a in arms if a.get("kind") == "rate"]
    out: List[str] = []
    if latency_arms:
        show_native = any(str(a.get("name")) in ratios for a in latency_arms)
        p50s = [p for p in (_p50(a) for a in latency_arms) if p]
        lo, hi = (min(p50s), max(p50s)) if p50s else (1.0, 1.0)
        columns = ["n", "lost", "min", "p50", "p90", "p99", "p99.9", "max", "mean"]
        head = "".join("<th>%s</th>" % c for c in columns)
        if show_native:
            head += '<th title="p50 over the p50 of its C floor, in this run">vs C p50</th>'
        width = 4 + len(columns) + (1 if show_native else 0)
        rows: List[str] = []
        families: List[str] = []
        for a in latency_arms:
            if str(a.get("family")) not in families:
                families.append(str(a.get("family")))
        for family in families:
            if len(families) > 1:
                rows.append('<tr class="family"><th colspan="%d">%s</th></tr>' % (width, esc(FAMILY_TITLES.get(family, family))))
            for a in latency_arms:
                if str(a.get("family")) != family:
                    continue
                name_cells = '<th scope="row"><a href="#arm-%s">%s</a></th><td>%s</td><td>%s</td>' % (
                    esc(_slug(str(a.get("name")))), esc(a.get("name")),
                    _badge(a.get("waiter"), "w-" + str(a.get("waiter"))), esc(a.get("scope")),
                )
                lat = _latency(a)
                if a.get("status") != "ok" or not lat:
                    rows.append('<tr class="not-ok">%s<td></td>%s</tr>' % (name_cells, _status_cell(a, width - 4)))
                    continue
                bar = _log_bar(lat.get("p50_ns"), lo, hi)
                cells = [
                    esc(lat.get("n")),
                    '<span class="warn">%s</span>' % esc(lat.get("lost")) if lat.get("lost") else "0",
                ] + [esc(format_us(lat.get(k))) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns")]
                cells[3] = "<b>%s</b>" % cells[3]
                row = '<tr>%s<td class="bar">%s</td>%s' % (name_cells, bar, "".join('<td class="num">%s</td>' % c for c in cells))
                if show_native:
                    row += '<td class="num">%s</td>' % _native_cell(ratios.get(str(a.get("name"))))
                rows.append(row + "</tr>")
                for comp_name, comp in sorted(_dict(a.get("components")).items()):
                    comp = _dict(comp)
                    comp_cells = [esc(comp.get("n")), ""] + [
                        esc(format_us(comp.get(k))) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns")
                    ]
                    rows.append(
                        '<tr class="component"><th scope="row">↳ %s</th><td colspan="3"></td>%s%s</tr>'
                        % (esc(comp_name), "".join('<td class="num">%s</td>' % c for c in comp_cells), "<td></td>" if show_native else "")
                    )
        out.append(
            '<div class="table-wrap"><table class="lead"><caption>Wake latency, µs (p50 bar on a log scale)</caption>'
            '<thead><tr><th>arm</th><th>waiter</th><th>scope</th><th aria-label="p50 on a log scale"></th>%s</tr></thead><tbody>%s</tbody></table></div>'
            % (head, "".join(rows))
        )
    if rate_arms:
        show_native = any(str(a.get("name")) in ratios for a in rate_arms)
        columns = ["calls/round", "rounds", "median ops/s", "slowest", "fastest", "empty loop/s", "net ns/call"]
        if show_native:
            columns.append("C is faster by")
        rows = []
        for a in rate_arms:
            rate = _dict(a.get("rate"))
            name = '<th scope="row">%s</th>' % esc(a.get("name"))
            if a.get("status") != "ok" or not rate:
                rows.append('<tr class="not-ok">%s%s</tr>' % (name, _status_cell(a, len(columns))))
                continue
            net = rate.get("net_ns_per_op")
            cells = [
                esc(format_rate(rate.get("n_per_round"))), esc(rate.get("rounds")),
                "<b>%s</b>" % esc(format_rate(rate.get("ops_per_s"))),
                esc(format_rate(rate.get("min_ops_per_s"))), esc(format_rate(rate.get("max_ops_per_s"))),
                esc(format_rate(rate.get("baseline_ops_per_s"))),
                esc("%.1f" % net) if isinstance(net, (int, float)) else DASH,
            ]
            if show_native:
                cells.append(_native_cell(ratios.get(str(a.get("name")))))
            rows.append("<tr>%s%s</tr>" % (name, "".join('<td class="num">%s</td>' % c for c in cells)))
        out.append(
            '<div class="table-wrap"><table class="lead rate"><caption>Rate arms</caption><thead><tr><th>arm</th>%s</tr></thead>'
            "<tbody>%s</tbody></table></div>" % ("".join("<th>%s</th>" % esc(c) for c in columns), "".join(rows))
        )
    if ratios:
        out.append('<p class="muted legend">%s</p>' % esc(NATIVE_LEGEND))
    return "".join(out) or '<p class="muted">This run has no arms.</p>'


REPETITIONS_LEGEND = (
    "Repetitions: each repetition's own p50, in the order they ran; range: (largest - smallest) over their median. "
    "Where they ran: a wake's CPUs are read outside the timed window (the notifier's right before t0, the waiter's "
    "right after t1); crossed: the share of the wakes with both CPUs known that ran on two CPUs. '-' where an arm "
    "does not record them (self-signal arms, the C floor's process experiments, open loop); a p99 needs 100 wakes "
    "in its population."
)


def _number(value: object) -> Optional[float]:
    """A finite number from the evidence, else None (a bool, a string, NaN are not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _population_cells(population: object) -> List[str]:
    """n, p50 and p99 (µs) of one placement population, escaped; dashes when it is not recorded."""
    if not isinstance(population, dict):
        return [DASH] * 3
    n = population.get("n")
    return [esc(n if _number(n) is not None else DASH)] + [esc(format_us(_number(population.get(k)))) for k in ("p50_ns", "p99_ns")]


def render_repetitions_and_placement(summary: Mapping[str, Any]) -> str:
    """Per latency arm, each repetition's own p50 and their range, and its wakes split by where they ran.

    Laid out from the arm's ``repetitions`` and ``cpu_split`` as the run
    recorded them (summary.txt's REPETITIONS AND PLACEMENT); empty for a
    bundle that has neither (made before ``--repeat``), so such a page is as it was.
    """
    rows: List[str] = []
    for a in _arms(summary):
        if a.get("kind") != "latency" or a.get("status") != "ok" or not _latency(a):
            continue
        spread = _dict(_dict(a.get("repetitions")).get("spread"))
        split = a.get("cpu_split")
        if not spread and not isinstance(split, dict):
            continue
        values = [v for v in (_number(x) for x in _list(spread.get("values"))) if v is not None]
        reps = [esc(" · ".join(format_us(v) for v in values)) if values else DASH, esc(format_percent(_number(spread.get("range_pct"))))]
        if isinstance(split, dict):
            share = _number(split.get("cross_share"))
            crossed = esc(format_percent(None if share is None else 100 * share))
            unknown = _number(split.get("unknown"))
            if unknown:
                crossed += ' <span class="muted">(%s unknown)</span>' % esc(split.get("unknown"))
            placed = _population_cells(split.get("same_cpu")) + _population_cells(split.get("cross_cpu")) + [crossed]
        else:
            placed = [DASH] * 7
        rows.append('<tr><th scope="row"><a href="#arm-%s">%s</a></th>%s</tr>' % (
            esc(_slug(str(a.get("name")))), esc(a.get("name")), "".join('<td class="num">%s</td>' % c for c in reps + placed)))
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


def _dl(rows: Sequence[Tuple[str, str]]) -> str:
    """A definition list; ``rows`` are (label, already-escaped HTML)."""
    return '<dl class="facts">%s</dl>' % "".join("<dt>%s</dt><dd>%s</dd>" % (esc(k), v) for k, v in rows if v)


def readable(value: object) -> str:
    """A structured value from the evidence in words, never JSON: ``yes``/``no``, lists joined, dicts as ``key value``."""
    if value is None:
        return "not reported"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join("%s %s" % (k, readable(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _idle_words(system: Mapping[str, Any], conditions: Mapping[str, Any]) -> str:
    """The CPU idle set-up in words: driver, governor, each state's exit latency, and the idle hold."""
    parts = []
    if system.get("cpuidle_driver") or system.get("cpuidle_governor"):
        parts.append("cpuidle driver <b>%s</b>, governor %s" % (esc(readable(system.get("cpuidle_driver"))),
                                                                 esc(readable(system.get("cpuidle_governor")))))
    states = [s for s in _list(system.get("idle_states")) if isinstance(s, dict)]
    if states:
        words = []
        for state in states:
            text = "%s (exit %s µs%s)" % (esc(readable(state.get("name"))), esc(readable(state.get("exit_latency_us"))),
                                          ", disabled" if state.get("disabled") else "")
            words.append(text)
        disabled = sum(1 for st in states if st.get("disabled"))
        parts.append("idle states %s; %s" % (", ".join(words), "none disabled" if not disabled else "%d disabled" % disabled))
    if conditions.get("idle_hold"):
        parts.append("<b>/dev/cpu_dma_latency held at 0</b> (idle CPUs kept shallow)" if conditions.get("applied_idle_hold", True)
                     else '<span class="warn">idle hold requested but not applied</span>')
    else:
        parts.append("no low-latency idle request held (deep idle states allowed)")
    return "; ".join(parts)


def _system_words(system: Mapping[str, Any]) -> str:
    parts = []
    if system.get("clocksource"):
        parts.append("clocksource <b>%s</b>" % esc(readable(system["clocksource"])))
    if "cpufreq_governor" in system:
        parts.append("frequency governor %s" % esc(readable(system.get("cpufreq_governor"))))
    smt = system.get("smt_active")
    if smt is not None:
        parts.append("SMT %s" % ("on" if str(smt) in ("1", "True", "true") else "off"))
    if "isolated_cpus" in system:
        parts.append("isolated CPUs: %s" % esc(system.get("isolated_cpus") or "none"))
    if "nohz_full" in system:
        parts.append("nohz_full: %s" % esc(system.get("nohz_full") or "not set"))
    load = _list(system.get("load_average"))
    if len(load) == 3:
        parts.append("load average %s (1, 5, 15 min)" % esc(" / ".join(readable(v) for v in load)))
    if system.get("hypervisor"):
        parts.append("<b>under a hypervisor</b> (its idle and wake-up behaviour is in every figure)")
    known = {"clocksource", "cpufreq_governor", "smt_active", "isolated_cpus", "nohz_full", "load_average", "hypervisor",
             "idle_states", "cpuidle_driver", "cpuidle_governor"}
    for key in sorted(k for k in system if k not in known):
        parts.append("%s: %s" % (esc(key.replace("_", " ")), esc(readable(system[key]))))
    return "; ".join(parts)


def _placement_words(params: Mapping[str, Any], conditions: Mapping[str, Any]) -> str:
    placement = params.get("placement") or "any"
    if placement == "any":
        where = "unpinned (the scheduler chose the CPUs)"
    elif placement == "same":
        where = "notifier and waiter pinned to <b>one CPU</b> (CPU %s)" % esc(params.get("notifier_cpu"))
    else:
        where = "notifier pinned to CPU %s, waiter to CPU %s (<b>split</b>)" % (esc(params.get("notifier_cpu")), esc(params.get("waiter_cpu")))
    load = []
    if conditions.get("cpu_threads"):
        load.append("%s busy Python thread(s) beside the waiter" % esc(conditions["cpu_threads"]))
    if conditions.get("cpu_procs"):
        load.append("%s busy process(es)" % esc(conditions["cpu_procs"]))
    if conditions.get("switch_interval_s") is not None:
        load.append("switch interval set to %s s" % esc(conditions["switch_interval_s"]))
    return "%s; load: %s" % (where, "; ".join(load) if load else "none added")


def _execution_words(summary: Mapping[str, Any]) -> str:
    execution = _dict(summary.get("execution"))
    if not execution:
        return ""
    repeat = execution.get("repeat") or 1  # absent before --repeat: one pass
    workers = execution.get("workers")
    if execution.get("mode") == "in-process":
        text = "in the runner's own process" + ("" if repeat == 1 else ", %s repetitions per arm" % esc(repeat))
    elif repeat == 1 or not isinstance(repeat, int) or not isinstance(workers, (int, type(None))):
        text = "%s fresh worker process%s per arm, wakes split between them and pooled" % (esc(workers), "" if workers == 1 else "es")
    else:
        # As summary.txt words it: an arm's workers are spread over its repetitions, at least one in each.
        text = ("%s repetitions (one pass over all arms after another), %s fresh worker processes per arm spread over "
                "them, wakes split between them and pooled" % (esc(repeat), esc(max(int(workers or 1), repeat))))
    if execution.get("python"):
        text += " · <code>%s</code>" % esc(execution["python"])
    return text


def _soak_words(summary: Mapping[str, Any]) -> str:
    """A soak's duration and where its figures come from (summary.txt's Soak line, with what the page draws from)."""
    soak = _dict(summary.get("soak"))
    figures = _dict(soak.get("figures"))
    hist = _dict(soak.get("histogram"))
    text = "%s s asked for, %s s run, in %s consecutive workers%s; n, lost, min, max, mean and stdev are exact" % (
        esc(soak.get("duration_s")), esc(soak.get("elapsed_s")), esc(soak.get("chunks")),
        "" if soak.get("finished") else ' <span class="warn">(ended early)</span>')
    if _list(figures.get("from_histogram")):
        relative = _number(hist.get("relative_error"))
        text += (", the percentiles come from a log-linear histogram of every wake (HdrHistogram layout, %s significant "
                 "digits: within %s of the exact ones). The raw samples kept are the first %s wakes, of the first %s "
                 "workers; the workers' spread and the quality flags are computed on them, the plots are of every wake"
                 % (esc(hist.get("significant_digits")), esc(DASH if relative is None else "%.2g %%" % (100 * relative)),
                    esc(soak.get("raw_kept")), esc(soak.get("raw_kept_slices"))))
    else:
        text += ", and so are the percentiles (every wake's raw sample is kept)"
    return text


def _timing_words(params: Mapping[str, Any]) -> str:
    if params.get("mode") == "open":
        timing = "open loop: a notify every %s µs on a fixed schedule, latency from the scheduled instant" % esc(params.get("interval_us"))
    else:
        timing = "closed loop: blocked waiters settle %s µs before each notify, latency from t0" % esc(params.get("settle_us"))
    return (
        "%s; %s counted wakes per latency arm after %s warm-up wakes; rate arms: %s rounds of %s calls after %s warm-up round(s); "
        "every wait times out after %s s (a lost wake)%s"
        % (timing, esc(params.get("n")), esc(params.get("warmup")), esc(params.get("rounds")), esc(format_rate(params.get("install_n"))),
           esc(params.get("warmup_rounds")), esc(params.get("timeout_s")),
           ('; <span class="warn">planted delay %s µs</span> (self-test)' % esc(params["planted_delay_us"])) if params.get("planted_delay_us") else "")
    )


def render_honesty(summary: Mapping[str, Any]) -> str:
    """When, on what, how: the facts a reader needs before quoting a figure, in words (no raw JSON)."""
    interp = _dict(summary.get("interpreter"))
    machine = _dict(summary.get("machine"))
    params = _dict(summary.get("parameters"))
    timer = _dict(summary.get("timer"))
    system = _dict(summary.get("system"))
    conditions = _dict(summary.get("conditions"))
    gil = interp.get("gil_enabled")
    gil_text = {True: "GIL on", False: "GIL off", None: "GIL state not reported"}.get(gil, str(gil)) if isinstance(gil, (bool, type(None))) else str(gil)
    rows: List[Tuple[str, str]] = [
        ("Date", "%s (UTC), wall time %s s" % (esc(summary.get("started_utc")), esc(summary.get("wall_s")))),
        (
            "Interpreter",
            "%s <span class=\"muted\">(%s; %s)</span>, %s%s, switch interval %s s%s"
            % (
                esc(interpreter_label(summary)), esc(interp.get("build")), esc(interp.get("compiler")),
                "free-threaded build, " if interp.get("free_threaded_build") else "", esc(gil_text),
                esc(interp.get("switch_interval_s")),
                (" · <code>%s</code>" % esc(interp["executable"])) if interp.get("executable") else "",
            ),
        ),
        (
            "Machine",
            "%s%s %s %s, %s, %s CPUs (allowed: %s)"
            % (
                ("host <b>%s</b>: " % esc(machine["hostname"])) if machine.get("hostname") else "",
                esc(machine.get("os")), esc(machine.get("kernel")), esc(machine.get("architecture")),
                esc(machine.get("cpu_model")), esc(machine.get("cpu_count")), esc(readable(machine.get("cpus_allowed"))),
            ),
        ),
    ]
    if timer:
        text = "%s (%s); back-to-back floor <b>%s ns</b> median, %s ns min: no figure below it means anything" % (
            esc(timer.get("clock")), esc(timer.get("implementation")), esc(timer.get("floor_p50_ns")), esc(timer.get("floor_min_ns")))
        harness = _dict(timer.get("harness"))
        if harness:
            text += "; harness bookkeeping %s ns per sample against %s ns for a bare pair (%s×)" % (
                esc(harness.get("per_sample_ns")), esc(harness.get("bare_pair_ns")), esc(harness.get("overhead_ratio")))
        rows.append(("Clock", text))
    rows.append(("Execution", _execution_words(summary)))
    if _dict(summary.get("soak")):
        rows.append(("Soak", _soak_words(summary)))
    rows.append(("Timing", _timing_words(params)))
    rows.append(("Placement", _placement_words(params, conditions)))
    if system or conditions:
        rows.append(("CPU idle", _idle_words(system, conditions)))
    if system:
        rows.append(("System", _system_words(system)))
    latency_arms = [a for a in _arms(summary) if a.get("kind") == "latency"]
    if len({str(a.get("waiter")) for a in latency_arms}) > 1:
        states: Dict[str, List[str]] = {}
        for a in latency_arms:
            states.setdefault(str(a.get("waiter")), []).append(str(a.get("name")))
        described = "; ".join("%s waiter: %s" % (esc(state), esc(", ".join(names))) for state, names in states.items())
        rows.append((
            "Models",
            '<span class="warn">These arms are not identical models</span> (%s). Compare arms only within one waiter state.' % described,
        ))
    gil = gil_enabled(summary)
    on_gil = [str(a.get("name")) for a in latency_arms if waiter_at_t0(a, gil) == WAITING_FOR_GIL]
    if on_gil:
        rows.append((
            "Spinning under the GIL",
            "%s: a waiter in another thread cannot poll while the notifier runs, so at t0 it is waiting for the GIL, "
            "and its wake is the GIL's hand-over." % esc(", ".join(on_gil)),
        ))
    if summary.get("note"):
        rows.append(("Note", esc(summary["note"])))
    command = _list(summary.get("command"))
    if command:
        rows.append(("Command", "<code>%s</code>" % esc(" ".join(str(c) for c in command))))
    recorded = "".join(
        "<dt>%s</dt><dd>%s</dd>" % (esc(section), esc(readable(summary.get(section))))
        for section in ("parameters", "conditions", "execution", "system") if summary.get(section)
    )
    out = _dl(rows)
    if recorded:
        out += '<details class="recorded"><summary>Every recorded setting</summary><dl class="facts">%s</dl></details>' % recorded
    return out


def render_caveats(summary: Mapping[str, Any]) -> str:
    caveats = [c for c in _list(summary.get("caveats"))]
    quality, notes = split_warnings([w for w in _list(summary.get("warnings")) if isinstance(w, (str, dict))])
    parts: List[str] = []
    if caveats:
        parts.append('<ul class="caveats">%s</ul>' % "".join("<li>%s</li>" % esc(c) for c in caveats))
    if quality:
        parts.append(
            '<h3>Measurement-quality warnings</h3><ul class="caveats quality">%s</ul>'
            % "".join("<li>%s</li>" % esc(format_warning(w)) for w in quality)
        )
    if notes:
        parts.append('<h3>Notes</h3><ul class="caveats notes">%s</ul>' % "".join("<li>%s</li>" % esc(format_warning(w)) for w in notes))
    return "".join(parts) or '<p class="muted">No caveats: every arm ran, no wake was lost.</p>'


def render_details(summary: Mapping[str, Any]) -> str:
    """What each arm times, the methodology, limits and how to reproduce: folded away."""
    lab = _dict(summary.get("lab"))
    rows = "".join(
        '<tr><th scope="row">%s</th><td>%s</td><td>%s</td><td>%s</td></tr>'
        % (esc(a.get("name")), esc(a.get("mechanism")), esc(a.get("t0")), esc(a.get("t1")))
        for a in _arms(summary)
    )
    parts = [
        '<details><summary>What each arm times (t0, t1)</summary><div class="table-wrap"><table class="defs">'
        "<thead><tr><th>arm</th><th>mechanism</th><th>t0</th><th>t1</th></tr></thead><tbody>%s</tbody></table></div></details>" % rows
    ]
    if _list(lab.get("methodology")):
        parts.append("<details><summary>Methodology</summary>%s</details>" % "".join("<p>%s</p>" % esc(p) for p in lab["methodology"]))
    if _list(lab.get("limits")):
        parts.append("<details><summary>Limits</summary><ul>%s</ul></details>" % "".join("<li>%s</li>" % esc(p) for p in lab["limits"]))
    try:
        commands = reproduce_commands(summary)
    except (KeyError, TypeError, AttributeError):
        commands = []
    if commands:
        parts.append("<details><summary>Reproduce</summary>%s</details>" % "".join("<pre><code>%s</code></pre>" % esc(c) for c in commands))
    return "".join(parts)


# --- several runs -----------------------------------------------------------------------

_DIFF_SECTIONS = ("interpreter", "conditions", "execution", "parameters", "machine")


def _flat(summary: Mapping[str, Any]) -> Dict[str, str]:
    flat = {"lab": str(_dict(summary.get("lab")).get("id")), "wakelab": str(_dict(summary.get("tool")).get("version"))}
    for section in _DIFF_SECTIONS:
        for key, value in _pairs(summary.get(section)):
            flat["%s.%s" % (section, key)] = value
    return flat


def differing_fields(runs: Sequence[RunEvidence]) -> List[str]:
    """Fields (``section.key``) whose values are not the same in every run, in a stable order."""
    flats = [_flat(r.summary) for r in runs]
    keys: List[str] = []
    for flat in flats:
        keys.extend(k for k in flat if k not in keys)
    return [k for k in keys if len({f.get(k, DASH) for f in flats}) > 1]


@dataclasses.dataclass(frozen=True)
class RunLabel:
    """How the page names a run: ``short`` (``#2 CPython 3.13.5``) and ``full`` (with what sets it apart)."""

    short: str
    full: str
    color: str


# Conditions named in a run's label, at most; the table "What differs" has them all.
MAX_LABEL_CONDITIONS = 3
MAX_SHORT_LABEL_CHARS = 32
MAX_HOST_CHARS = 24
# Besides conditions, the fields a run's label names when they tell the runs apart (a grid's placements, settle times).
LABEL_FIELDS = ("parameters.placement", "parameters.settle_us", "parameters.mode", "execution.mode", "execution.workers")


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_labels(runs: Sequence[RunEvidence]) -> List[RunLabel]:
    """``#1 CPython 3.11.7``, and in full with the conditions that tell the runs apart."""
    from wakelab.report.distribution import PALETTE

    differing = [k for k in differing_fields(runs) if k.startswith("conditions.") or k in LABEL_FIELDS]
    # A condition as requested says what the run was meant to be; its applied_ twin is in the table.
    requested = [k for k in differing if not k.split(".", 1)[1].startswith("applied_")] or differing
    shown = requested[:MAX_LABEL_CONDITIONS]
    labels = []
    fleet = len({r.bundle.hostname for r in runs}) > 1
    for i, run in enumerate(runs, 1):
        flat = _flat(run.summary)
        short = "#%d %s" % (i, _truncate(interpreter_label(run.summary), MAX_SHORT_LABEL_CHARS))
        if fleet:
            short = "#%d %s · %s" % (i, _truncate(run.bundle.hostname or "?", MAX_HOST_CHARS),
                                     _truncate(interpreter_label(run.summary), MAX_SHORT_LABEL_CHARS))
        extra = ", ".join("%s=%s" % (k.split(".", 1)[1], flat.get(k, DASH)) for k in shown)
        if len(requested) > len(shown):
            extra += ", …"
        labels.append(RunLabel(short, "%s (%s)" % (short, extra) if extra else short, PALETTE[(i - 1) % len(PALETTE)]))
    return labels


def _swatch(label: RunLabel) -> str:
    return '<span class="swatch" style="background:%s"></span>' % esc(label.color)


def render_runs_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    """One row per run (grouped by machine when they come from several: a fleet)."""
    fleet = len({r.bundle.hostname for r in runs}) > 1
    rows = []
    host: Optional[str] = None
    for run, label in zip(runs, labels):
        s = run.summary
        if fleet and run.bundle.hostname != host:
            host = run.bundle.hostname
            machine = _dict(s.get("machine"))
            rows.append('<tr class="family"><th colspan="5">machine %s <span class="muted">%s %s, %s, %s CPUs</span></th></tr>' % (
                esc(host or "?"), esc(machine.get("os")), esc(machine.get("kernel")), esc(machine.get("cpu_model")), esc(machine.get("cpu_count"))))
        state, css = _run_state(s)
        rows.append(
            '<tr><th scope="row">%s%s</th><td><code>%s</code></td><td>%s<br><span class="muted">%s</span></td><td>%s</td><td>%s</td></tr>'
            % (
                _swatch(label), esc(label.full), esc(run.source), esc(_dict(s.get("lab")).get("id")), esc(s.get("started_utc")),
                _conditions_words(s),
                '<span class="badge %s">%s</span>' % (css, esc(state)),
            )
        )
    return (
        '<div class="table-wrap"><table class="runs"><thead><tr><th>run</th><th>evidence</th><th>lab, started (UTC)</th>'
        "<th>conditions</th><th>state</th></tr></thead><tbody>%s</tbody></table></div>" % "".join(rows)
    )


def _conditions_words(summary: Mapping[str, Any]) -> str:
    """Placement and load of a run in a few words (escaped)."""
    params = _dict(summary.get("parameters"))
    conditions = _dict(summary.get("conditions"))
    words = ["placement %s" % esc(params.get("placement") or "any")]
    if params.get("settle_us") is not None:
        words.append("settle %s µs" % esc(params["settle_us"]))
    for key, text in (("cpu_threads", "busy threads"), ("cpu_procs", "busy processes")):
        if conditions.get(key):
            words.append("%s %s" % (esc(conditions[key]), text))
    if conditions.get("idle_hold"):
        words.append("idle hold")
    if conditions.get("switch_interval_s") is not None:
        words.append("switch interval %s s" % esc(conditions["switch_interval_s"]))
    return ", ".join(words)


# Parameters that are conditions a grid sweeps (where the two sides ran, the settle time, the loop), not a change of method.
CONDITION_PARAMETERS = ("placement", "notifier_cpu", "waiter_cpu", "settle_us", "mode", "interval_us")


def render_differences(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    fields = differing_fields(runs)
    notes = []
    if any(f.startswith("machine.hostname") or f.startswith("machine.cpu_model") for f in fields):
        notes.append("These runs come from different machines: a difference may be the machine, not the interpreter or the conditions.")
    if any(f.startswith("parameters.") and f.split(".", 1)[1] not in CONDITION_PARAMETERS for f in fields):
        notes.append("The runs used different parameters (see below): compare with care.")
    if "lab" in fields:
        notes.append("The runs are of different labs; only arms present in both are compared.")
    if not fields:
        return '<p class="muted">Nothing recorded differs between these runs except the date: they repeat one experiment.</p>'
    flats = [_flat(r.summary) for r in runs]
    tables = []
    for chunk in _chunks(len(runs), MAX_RUNS_PER_TABLE):
        head = "".join("<th>%s</th>" % esc(labels[i].short) for i in chunk)
        rows = "".join(
            '<tr><th scope="row"><code>%s</code></th>%s</tr>' % (esc(f), "".join("<td>%s</td>" % esc(flats[i].get(f, DASH)) for i in chunk))
            for f in fields
        )
        tables.append("<div class=\"table-wrap\"><table class=\"diff\"><caption>What differs between the runs</caption><thead><tr><th>field</th>%s</tr></thead>"
                      "<tbody>%s</tbody></table></div>" % (head, rows))
    return "".join('<p class="note">%s</p>' % esc(n) for n in notes) + "".join(tables)


def _arm_order(runs: Sequence[RunEvidence], kind: Optional[str] = "latency") -> List[str]:
    names: List[str] = []
    for run in runs:
        for a in _arms(run.summary):
            if (kind is None or a.get("kind") == kind) and str(a.get("name")) not in names:
                names.append(str(a.get("name")))
    return names


# Runs side by side in one table, at most: more are split into tables of this many, so none scrolls sideways.
MAX_RUNS_PER_TABLE = 6


def _chunks(count: int, size: int) -> List[range]:
    return [range(i, min(i + size, count)) for i in range(0, count, size)]


def _ratio_html(p50_ratio: Optional[float], p99_ratio: Optional[float], suffix: str = "") -> str:
    """A p50 ratio coloured by :func:`ratio_tone`, with the p99 ratio beside it when the tail got worse (escaped)."""
    tone = ratio_tone(p50_ratio, p99_ratio)
    text = esc(format_ratio(p50_ratio)) + esc(suffix) if p50_ratio is not None else ""
    if tone.tail_worse:
        text += '%s<span class="tail">p99 %s</span>' % (" · " if text else "", esc(format_ratio(p99_ratio)))
    return '<span class="ratio %s" title="%s">%s</span>' % (tone.css, esc(tone.why), text)


def render_comparison_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    """p50 / p99 of each arm per run (µs), each with its p50 over run #1's, in tables that fit a laptop's width."""
    names = _arm_order(runs)
    maps = [_by_name(r.summary) for r in runs]
    tables = []
    for chunk in _chunks(len(runs), MAX_RUNS_PER_TABLE):
        head = "".join('<th title="%s">%s%s</th>' % (esc(labels[i].full), _swatch(labels[i]), esc(labels[i].short)) for i in chunk)
        rows = []
        for name in names:
            cells = []
            base = _p50(maps[0].get(name))
            base_p99 = _latency(maps[0][name]).get("p99_ns") if base else None
            for i in chunk:
                entry = maps[i].get(name)
                if entry is None:
                    cells.append('<td class="muted">not in this run</td>')
                    continue
                if _p50(entry) is None:
                    cells.append('<td class="muted">%s</td>' % esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status"))))
                    continue
                lat = _latency(entry)
                ratio = positive_ratio(lat.get("p50_ns"), base) if i else None
                cells.append('<td class="num"><b>%s</b> / %s%s</td>' % (
                    esc(format_us(lat.get("p50_ns"))), esc(format_us(lat.get("p99_ns"))),
                    ("<br>" + _ratio_html(ratio, positive_ratio(lat.get("p99_ns"), base_p99))) if ratio is not None else ""))
            rows.append('<tr><th scope="row"><a href="#arm-%s">%s</a></th>%s</tr>' % (esc(_slug(name)), esc(name), "".join(cells)))
        tables.append(
            '<div class="table-wrap"><table class="compare"><caption>p50 / p99 per run, µs; below, each run\'s p50 over run #1\'s '
            "(p50 vs #1; above 1: slower than #1). Green: p50 faster by more than 10%% and p99 not worse; red: p50 or "
            "p99 slower by more than 10%% (a worse p99 is shown beside the p50 ratio)</caption><thead><tr><th>arm</th>%s</tr></thead><tbody>%s</tbody></table></div>"
            % (head, "".join(rows))
        )
    return "".join(tables)


def render_rate_comparison(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    """Median ops/s of each rate arm per run, and each run's rate over run #1's."""
    names = _arm_order(runs, "rate")
    if not names:
        return ""
    maps = [_by_name(r.summary) for r in runs]
    tables = []
    for chunk in _chunks(len(runs), MAX_RUNS_PER_TABLE):
        head = "".join('<th title="%s">%s%s</th>' % (esc(labels[i].full), _swatch(labels[i]), esc(labels[i].short)) for i in chunk)
        rows = []
        for name in names:
            rates = [_dict(m.get(name, {}).get("rate")).get("ops_per_s") if m.get(name, {}).get("status") == "ok" else None for m in maps]
            cells = []
            for i in chunk:
                rate = rates[i]
                if rate is None:
                    entry = maps[i].get(name)
                    cells.append('<td class="muted">%s</td>' % ("not in this run" if entry is None else esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status")))))
                    continue
                text = "<b>%s</b>" % esc(format_rate(rate))
                if i and rates[0]:
                    text += '<br><span class="ratio">%s of #1</span>' % esc(format_ratio(rate / rates[0]))
                cells.append('<td class="num">%s</td>' % text)
            rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(name), "".join(cells)))
        tables.append(
            '<div class="table-wrap"><table class="compare rate"><caption>Rate arms: median ops/s per run (higher is faster)</caption>'
            "<thead><tr><th>arm</th>%s</tr></thead><tbody>%s</tbody></table></div>" % (head, "".join(rows))
        )
    return "".join(tables)


# --- distributions ----------------------------------------------------------------------


class _Plots:
    """The distribution charts of one page, each with its own element id."""

    def __init__(self) -> None:
        self.count = 0

    def next_id(self) -> str:
        self.count += 1
        return "plot-%d" % self.count


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


def render_distributions(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], plots_: _Plots) -> str:
    """One card per latency arm: its histogram and ECDF (runs overlaid), with each run's figures."""
    from wakelab.report.distribution import COMPONENT_COLORS, Series, distribution_chart
    from wakelab.report.interactive import chart_html

    cards = []
    several = len(runs) > 1
    for name in _arm_order(runs):
        entries = [_by_name(r.summary).get(name) for r in runs]
        first = next(e for e in entries if e is not None)
        series = []
        facts = []
        for run, entry, label in zip(runs, entries, labels):
            who = '%s<b title="%s">%s</b>: ' % (_swatch(label), esc(label.full), esc(label.short)) if several else ""
            if entry is None:
                facts.append('<li class="muted">%snot in this run</li>' % who)
                continue
            if entry.get("status") != "ok" or not entry.get("latency"):
                reason = entry.get("reason")
                facts.append(
                    '<li>%s<span class="badge st-%s">%s</span>%s</li>'
                    % (who, esc(_slug(str(entry.get("status")))), esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status"))),
                       (" " + esc(reason)) if reason else "")
                )
                continue
            lat = _latency(entry)
            text = "p50 <b>%s</b> · p99 <b>%s</b>%s · max %s · n %s" % (
                esc(format_ns(lat.get("p50_ns"))), esc(format_ns(lat.get("p99_ns"))),
                (" · p99.9 %s" % esc(format_ns(lat["p99_9_ns"]))) if lat.get("p99_9_ns") is not None else "",
                esc(format_ns(lat.get("max_ns"))), esc(lat.get("n")),
            )
            if lat.get("lost"):
                text += ' · <span class="warn">%s lost</span>' % esc(lat["lost"])
            spread = _dict(entry.get("spread"))
            if spread.get("max_over_min") is not None and spread.get("of") == "p50_ns":
                if spread.get("between") == "repetitions":
                    text += " · %s repetitions, medians within %s" % (
                        esc(_dict(entry.get("repetitions")).get("count", DASH)), esc(format_ratio(spread["max_over_min"])))
                else:
                    text += " · %s workers, medians within %s" % (esc(len(_list(entry.get("workers")))), esc(format_ratio(spread["max_over_min"])))
            samples = run.samples.get(name)
            counters = run.histograms.get(name)
            if samples is not None and not samples.every_wake:
                # A soak past its raw-sample cap: the plots are of every wake, from its histogram;
                # what summary.json computed on the raw samples (the workers' spread) is of the first K.
                if spread.get("max_over_min") is not None and spread.get("of") == "p50_ns":
                    text += ", %s" % esc(kept_words(samples.kept, samples.total))
                facts.append("<li>%s%s</li>" % (who, text))
                facts.append('<li class="muted">%s%s</li>' % (who, esc(soak_plot_words(samples, counters))))
            else:
                facts.append("<li>%s%s</li>" % (who, text))
            if samples is None or not samples.samples_ns:
                continue
            if counters is not None and not samples.every_wake:
                values, weights = counters.weighted_values()
                series.append(Series(label.short if several else name, values, lat.get("p50_ns"), lat.get("p99_ns"), label.color,
                                     weights=weights))
                continue
            series.append(Series(label.short if several else name, samples.samples_ns, lat.get("p50_ns"), lat.get("p99_ns"), label.color))
            if not several:
                for j, (comp, values) in enumerate(samples.components_ns.items()):
                    if values:
                        comp_lat = _dict(_dict(entry.get("components")).get(comp))
                        series.append(Series(comp, values, comp_lat.get("p50_ns"), comp_lat.get("p99_ns"),
                                             COMPONENT_COLORS[j % len(COMPONENT_COLORS)], dashed=True))
        figure = (
            '<div class="plot">%s</div>' % chart_html(distribution_chart(plots_.next_id(), series, marks=not several), DISTRIBUTION)
            if series
            else '<p class="muted noplot">No samples to plot.</p>'
        )
        headline = _headline(entries)
        cards.append(
            '<details class="arm" id="arm-%s"><summary><b>%s</b> %s %s %s <span class="muted">%s</span></summary>'
            '<ul class="figs">%s</ul>%s</details>'
            % (
                esc(_slug(name)), esc(name), _badge(FAMILY_TITLES.get(str(first.get("family")), first.get("family")), "fam"),
                _badge(first.get("waiter"), "w-" + str(first.get("waiter"))), _badge(first.get("scope"), "scope"),
                headline, "".join(facts), figure,
            )
        )
    if not cards:
        return '<p class="muted">No latency arms.</p>'
    return '<div class="arms">%s</div>' % "".join(cards)


def _headline(entries: Sequence[Optional[Mapping[str, Any]]]) -> str:
    """The figures a folded arm shows: p50 and p99 of the first run that measured it (escaped)."""
    for entry in entries:
        if entry is not None and _p50(entry) is not None:
            lat = _latency(entry)
            return "p50 %s · p99 %s" % (esc(format_ns(lat.get("p50_ns"))), esc(format_ns(lat.get("p99_ns"))) if lat.get("p99_ns") is not None else DASH)
    for entry in entries:
        if entry is not None:
            return esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status")))
    return ""


# --- the page ---------------------------------------------------------------------------

CSS = """
:root{--fg:#1d2329;--muted:#5f6b76;--line:#dfe3e8;--soft:#f5f7f9;--accent:#0072B2;--good:#1a7f37;--bad:#b3261e;--warn:#8a5a00;
color-scheme:light}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#fff;color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1280px;margin:0 auto;padding:24px 28px 64px}
header.top{border-bottom:1px solid var(--line);padding-bottom:14px;margin-bottom:8px}
h1{font-size:1.65rem;line-height:1.25;margin:0 0 6px}
h2{font-size:1.2rem;margin:34px 0 10px;padding-top:6px;border-top:1px solid var(--line)}
h3{font-size:1rem;margin:18px 0 8px}
.question{font-size:1.05rem;color:#333;max-width:80ch;margin:6px 0 8px}
.meta{color:var(--muted);font-size:.9rem;margin:0}
nav.toc{font-size:.88rem;margin:10px 0 0;display:flex;flex-wrap:wrap;gap:4px 14px}
nav.toc a{color:var(--accent);text-decoration:none}
nav.toc a:hover{text-decoration:underline}
a{color:var(--accent)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.85em}
pre{background:var(--soft);padding:10px 12px;border-radius:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.muted{color:var(--muted)}
.warn{color:var(--warn);font-weight:600}
.note{background:#fff8e6;border-left:4px solid #e0a800;padding:8px 12px;margin:8px 0;border-radius:4px}
.swatch{display:inline-block;width:.7em;height:.7em;border-radius:2px;margin-right:5px;vertical-align:0}
.badge{display:inline-block;font-size:.72rem;font-weight:600;line-height:1.5;padding:0 7px;border-radius:999px;
background:#eef1f4;color:#39434d;vertical-align:1px;white-space:nowrap;margin-right:4px}
.badge.good{background:#dcf3e3;color:var(--good)}
.badge.bad,.badge.st-failed,.badge.st-interrupted{background:#fde3e1;color:var(--bad)}
.badge.st-skipped,.badge.st-pending{background:#fff1cc;color:var(--warn)}
.badge.nearest{background:#eeeeee;color:#444444;font-weight:500}
.badge.w-blocked{background:#e3effa;color:#0a4f86}
.badge.w-spinning{background:#fbe9d7;color:#8a4500}
.answer{list-style:none;padding:12px 16px;margin:8px 0 14px;background:var(--soft);border-radius:8px;font-size:1.05rem}
.answer li{margin:4px 0}
.verdict{padding-left:1.2em;margin:6px 0;columns:2 520px;column-gap:32px}
.verdict li{margin:2px 0;break-inside:avoid}
.table-wrap{overflow-x:auto;margin:8px 0 12px}
table{border-collapse:collapse;font-size:.9rem;font-variant-numeric:tabular-nums}
caption{text-align:left;color:var(--muted);font-size:.82rem;padding:0 0 6px;caption-side:top}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-weight:600;color:#39434d;border-bottom:2px solid #c9d0d7;white-space:nowrap;background:#fff;position:sticky;top:0}
td.num{text-align:right;white-space:nowrap}
table.lead thead th:nth-child(n+5){text-align:right}
table.lead th[scope=row]{font-weight:600;white-space:nowrap}
table.lead th[scope=row] a{color:inherit;text-decoration:none}
table.lead th[scope=row] a:hover{color:var(--accent);text-decoration:underline}
table.reps th[scope=row]{font-weight:600;white-space:nowrap}
table.reps th[scope=row] a{color:inherit;text-decoration:none}
table.reps thead tr:first-child th{text-align:center;border-bottom:0}
table.reps thead tr:first-child th:first-child{text-align:left;vertical-align:bottom}
table.reps thead tr+tr th{text-align:right}
tr.family th{background:var(--soft);color:#39434d;font-size:.82rem;text-transform:uppercase;letter-spacing:.04em;padding-top:10px}
tr.component th,tr.component td{color:var(--muted);font-size:.84rem;font-weight:400}
tbody tr:hover{background:#fafbfc}
td.bar{width:120px;min-width:90px;vertical-align:middle}
.p50bar{display:block;height:8px;border-radius:4px;background:linear-gradient(90deg,#8fc1e3,#0072B2)}
td.status{color:#39434d}
td.slower{color:var(--bad)} td.faster{color:var(--good)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:6px 18px;margin:8px 0}
dl.facts dt{font-weight:600;color:#39434d}
dl.facts dd{margin:0;overflow-wrap:anywhere}
ul.caveats{padding-left:1.2em}
ul.caveats li{margin:4px 0}
details{margin:8px 0;border:1px solid var(--line);border-radius:6px;padding:6px 12px}
details summary{cursor:pointer;font-weight:600}
.arms{display:block}
details.arm{border-radius:6px;padding:4px 12px;margin:4px 0}
details.arm[open]{padding-bottom:10px}
details.arm summary{font-weight:400}
ul.figs{list-style:none;margin:6px 0 4px;padding:0;font-size:.85rem;color:#39434d}
.plot{max-width:820px}
.plot.wide{max-width:920px}
.chart{width:100%;margin:4px 0 14px}
.controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:8px 0 2px;font-size:.84rem}
.controls .sep{margin-left:14px}
.controls button{font:inherit;border:1px solid #c9d0d7;background:#fff;color:var(--fg);border-radius:999px;padding:1px 10px;cursor:pointer}
.controls button.sort[aria-pressed=true]{background:var(--accent);border-color:var(--accent);color:#fff}
.controls button.family[aria-pressed=false]{opacity:.5;text-decoration:line-through}
.controls button:focus-visible{outline:2px solid var(--accent);outline-offset:1px}
ul.guidance{padding-left:1.2em;margin:6px 0}
ul.guidance li{margin:5px 0}
.badge.topic{background:#e8eef6;color:#20466e}
.cites{font-size:.8rem}
.cite{display:inline-block;margin-right:6px;color:var(--muted);text-decoration:none;border-bottom:1px dotted #aab4be}
.ratio{font-size:.8rem;color:var(--muted)}
.ratio.slower{color:var(--bad)} .ratio.faster{color:var(--good)} .ratio .tail{font-weight:600}
details.run{border:0;border-top:1px solid var(--line);border-radius:0;padding:8px 0;margin:18px 0 0}
details.run>summary h2{display:inline;border:0;margin:0;padding:0}
table.runs td,table.diff td,table.defs td{overflow-wrap:anywhere}
table.runs code,table.diff code{word-break:break-all}
.noplot{margin:8px 0}
section.run{margin-top:8px}
footer{margin-top:48px;color:var(--muted);font-size:.82rem;border-top:1px solid var(--line);padding-top:10px}
@media (max-width:700px){main{padding:16px}.arms{grid-template-columns:1fr}dl.facts{grid-template-columns:1fr}}
@media print{thead th{position:static}details.arm{break-inside:avoid;margin-bottom:12px}.controls{display:none}}
"""

# A page without charts runs no script at all; one with charts allows exactly its own two, by hash.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def page_csp(script_hashes: Sequence[str]) -> str:
    """The Content-Security-Policy of a page whose only scripts are those with ``script_hashes``."""
    if not script_hashes:
        return CSP
    return "default-src 'none'; script-src %s; style-src 'unsafe-inline'; img-src data:; font-src data:; base-uri 'none'; " \
        "form-action 'none'" % " ".join(script_hashes)


def _page(title: str, body: str, scripts: Sequence[str] = ()) -> str:
    from wakelab.report.interactive import script_hash

    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta http-equiv="Content-Security-Policy" content="%s">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="wakelab">'
        '<link rel="icon" href="data:,">'
        "<title>%s</title><style>%s</style></head>\n<body><main>%s</main>%s</body></html>\n"
        % (page_csp([script_hash(js) for js in scripts]), esc(title), CSS.strip(), body,
           "".join("<script>%s</script>" % js for js in scripts))
    )


def _section(anchor: str, title: str, body: str, toc: List[Tuple[str, str]]) -> str:
    toc.append((anchor, title))
    return '<section id="%s"><h2>%s</h2>%s</section>' % (esc(anchor), esc(title), body)


class _Charts:
    """The interactive charts of one page, each with its own element id."""

    def __init__(self) -> None:
        self.count = 0

    def next_id(self) -> str:
        self.count += 1
        return "chart-%d" % self.count


# --- guidance (computed by the analysis layer, laid out here) ---------------------------------


def guidance_of(run: RunEvidence) -> Optional[Any]:
    """:func:`wakelab.analysis.guidance.guidance_for` of the run (a ``Guidance``), or None where that module is absent.

    The analysis layer computes the advice (a headline, and items each with a
    topic, a text and the figures it cites); this renderer only lays it out.
    Imported lazily, so that a wakelab without the module still writes reports.
    """
    try:
        from wakelab.analysis.guidance import guidance_for
    except ImportError as exc:
        if exc.name not in ("wakelab.analysis.guidance", "wakelab.analysis"):
            raise
        return None
    return guidance_for(run.bundle)


def render_guidance(run: RunEvidence) -> str:
    """The GUIDANCE section's body (escaped HTML): the headline, then each claim with the figures it cites."""
    found = guidance_of(run)
    if found is None or (not found.headline and not found.items):
        return ""
    # A cite links to the arm's distributions where it has them (latency arms); a rate arm's is plain text.
    cards = {str(a.get("name")) for a in _arms(run.summary) if a.get("kind") == "latency"}
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


# --- the charts ----------------------------------------------------------------------------


def _family_order(runs: Sequence[RunEvidence]) -> List[str]:
    families: List[str] = []
    for run in runs:
        for a in _arms(run.summary):
            if str(a.get("family")) not in families:
                families.append(str(a.get("family")))
    return families


def _latency_points(runs: Sequence[RunEvidence]) -> List[Any]:
    from wakelab.report.interactive import ArmPoint, Floor

    points = []
    for index, run in enumerate(runs):
        ratios = native_ratios(run.summary)
        by_name = _by_name(run.summary)
        for a in _arms(run.summary):
            if a.get("kind") != "latency" or _p50(a) is None:
                continue
            lat = _latency(a)
            ratio = ratios.get(str(a.get("name")))
            floor = None
            if ratio is not None and ratio.kind == "latency" and _p50(by_name.get(ratio.native)) is not None:
                floor = Floor(ratio.native, ratio.native_value, ratio.ratio, ratio.interpreter_share)
            points.append(ArmPoint(
                run=index, arm=str(a.get("name")), family=str(a.get("family")),
                family_title=FAMILY_TITLES.get(str(a.get("family")), str(a.get("family"))),
                waiter=str(a.get("waiter")), scope=str(a.get("scope")), n=int(lat.get("n") or 0), lost=int(lat.get("lost") or 0),
                p50_ns=float(lat["p50_ns"]), p90_ns=lat.get("p90_ns"), p99_ns=lat.get("p99_ns"), p99_9_ns=lat.get("p99_9_ns"),
                max_ns=lat.get("max_ns"), floor=floor,
            ))
    return points


def render_overview(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], charts: _Charts) -> str:
    """The chart that compares at a glance: every latency arm of every run on one log axis, with its buttons."""
    from wakelab.report.interactive import Series, chart_html, overview_chart, sort_controls

    points = _latency_points(runs)
    if not points:
        return '<p class="muted">No latency arm produced figures.</p>'
    families = _family_order(runs)
    chart = overview_chart(charts.next_id(), points, [Series(label.full, label.color) for label in labels], families)
    shown = [f for f in families if any(p.family == f for p in points)]
    controls = sort_controls(chart.chart_id, [(f, FAMILY_TITLES.get(f, f)) for f in shown])
    several = len(runs) > 1
    intro = (
        "Every latency arm on one shared log axis: the dot is its p50, the bar spans p90 to p99, and the open diamond "
        "is the p50 of its C floor in the same run (grey where it is only the nearest floor, not the same experiment). "
        "Hover a dot for the figures; sort the rows, or hide a family, with the buttons; %s."
        % ("each run has its colour, and clicking a run in the legend hides it" if several
           else "clicking a family in the legend hides its dots")
    )
    return '<p class="muted">%s</p>%s%s' % (esc(intro), controls, chart_html(chart))


def render_rate_chart(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], charts: _Charts) -> str:
    from wakelab.report.interactive import RatePoint, Series, chart_html, rate_chart

    points = []
    for index, run in enumerate(runs):
        for a in _arms(run.summary):
            rate = _dict(a.get("rate"))
            if a.get("kind") != "rate" or a.get("status") != "ok" or not rate.get("ops_per_s"):
                continue
            points.append(RatePoint(
                run=index, arm=str(a.get("name")), ops_per_s=float(rate["ops_per_s"]),
                min_ops_per_s=float(rate.get("min_ops_per_s") or rate["ops_per_s"]),
                max_ops_per_s=float(rate.get("max_ops_per_s") or rate["ops_per_s"]),
                baseline_ops_per_s=float(rate.get("baseline_ops_per_s") or 0.0), net_ns_per_op=rate.get("net_ns_per_op"),
                rounds=int(rate.get("rounds") or 0), n_per_round=int(rate.get("n_per_round") or 0),
            ))
    if not points:
        return ""
    chart = rate_chart(charts.next_id(), points, [Series(label.full, label.color) for label in labels])
    return '<h3>Rate arms</h3><p class="muted">Median operations per second of each rate arm%s (higher is faster); whiskers span the ' \
        'slowest and the fastest round; hover for the empty-loop baseline.</p>%s' % (
            ", per run" if len(runs) > 1 else "", chart_html(chart))


# How the page names each component of a wake in running text.
COMPONENT_WORDS = {
    "notify": "notify path", "sched_wake": "wake delivery", "sched_queue": "run-queue wait", "gil_wait": "GIL wait",
    "interpreter": "interpreter", "unattributed": "unattributed",
}


def _signed_us_text(value_ns: float) -> str:
    """A difference in µs with its sign (``+7.58``, ``−5.92``, ``0``)."""
    if not value_ns:
        return "0"
    return ("+" if value_ns > 0 else "\u2212") + format_us(abs(value_ns))


def _trace_bands(trace: Any) -> Dict[str, Tuple[float, Mapping[str, float]]]:
    """The p50 and p99 bands of an arm's :class:`~wakelab.evidence.model.TraceFigures` that have figures."""
    bands: Dict[str, Tuple[float, Mapping[str, float]]] = {}
    for key, latency_ns, parts in (("p50", trace.at_p50_ns, trace.at_p50), ("p99", trace.at_p99_ns, trace.at_p99)):
        if latency_ns is not None and parts:
            bands[key] = (float(latency_ns), parts)
    return bands


def render_where_time_goes(run: RunEvidence, charts: _Charts) -> str:
    """Where each traced arm's time goes (a run with ``--trace``): stacked bars at p50 and at p99, each
    Python arm beside its C floor, then the tracing overhead; empty for a run that did not ask to trace.

    The bands (``trace.at_p50`` / ``at_p99``) and the overhead were computed by the analysis layer
    (:mod:`wakelab.analysis.components`, stored in summary.json); this lays them out.
    """
    from wakelab.analysis.components import COMPONENT_TITLES, COMPONENTS, floor_gaps, traced_arm_order
    from wakelab.report.interactive import ComponentBar, chart_html, components_chart

    s = run.summary
    tracing = _dict(s.get("tracing"))
    if not tracing.get("requested"):
        return ""
    records = {arm.name: arm for arm in run.bundle.arms()}
    bars: List[Any] = []
    overhead_rows: List[str] = []
    not_split: List[str] = []
    for entry, floor_of in traced_arm_order(s):
        record = records.get(str(entry.get("name")))
        trace = record.trace if record is not None else None
        if trace is None or record is None:
            continue
        if not trace.traced:
            if record.kind == "latency" and record.measured:
                not_split.append("<li><code>%s</code>: %s</li>" % (esc(record.name), esc(trace.reason or "no reason recorded")))
            continue
        bands = _trace_bands(trace)
        if bands:
            bars.append(ComponentBar(record.name, bands, floor_of))
        after = _dict(_dict(entry.get("trace")).get("overhead")).get("untraced_after_p50_ns")
        overhead_rows.append(
            "<tr><td><code>%s</code>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%d / %d</td></tr>" % (
                esc(record.name), (' <span class="muted">C floor of %s</span>' % esc(floor_of)) if floor_of else "",
                esc(format_us(trace.untraced_p50_ns)), esc(format_us(trace.traced_p50_ns)),
                esc(format_us(after if isinstance(after, (int, float)) and not isinstance(after, bool) else None)),
                ("%.2f×" % trace.overhead_ratio) if trace.overhead_ratio is not None else DASH,
                trace.fully_attributed, trace.wakes))
    parts: List[str] = []
    if not tracing.get("traced") and not bars:
        return '<p class="trace-off">Tracing was asked for but did not run: %s. The figures above are untraced.</p>' % esc(
            tracing.get("reason") or "no reason recorded")
    if not tracing.get("traced"):
        parts.append('<p class="trace-off">Tracing stopped during the run: %s.</p>' % esc(tracing.get("reason") or "no reason recorded"))
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
            % (esc(tracing.get("tool") or "perf"), chart_html(chart)))
    gaps = [gap for band in ("p50", "p99") for gap in floor_gaps(s, band)]
    if gaps:
        items = []
        for gap in gaps:
            shown = ["%s %s" % (esc(COMPONENT_WORDS[name]), esc(_signed_us_text(value)))
                     for name, value in gap.parts_ns.items() if name != "unattributed" or value]
            items.append("<li><code>%s</code> at %s: %s µs %s %s<code>%s</code> (%s against %s µs): %s µs.</li>" % (
                esc(gap.arm), esc(gap.band), esc(format_us(abs(gap.extra_ns))), "above" if gap.extra_ns >= 0 else "below",
                "" if gap.matched else "its nearest C floor (not the same experiment) ", esc(gap.floor),
                esc(format_us(gap.arm_ns)), esc(format_us(gap.floor_ns)), ", ".join(shown)))
        parts.append('<p class="muted">Where the difference from C goes (the arm\'s parts minus its floor\'s, in the same '
                     'band; they sum to the difference):</p><ul class="trace-gaps">%s</ul>' % "".join(items))
    if overhead_rows:
        parts.append(
            '<div class="table-wrap"><table class="trace-overhead"><caption>Tracing overhead: each arm measured untraced '
            "(its figures), traced, and untraced again, in this run; µs</caption><thead><tr><th>arm</th><th>untraced p50</th>"
            "<th>traced p50</th><th>untraced p50 after</th><th>traced / untraced</th><th>wakes fully attributed</th></tr>"
            "</thead><tbody>%s</tbody></table></div>" % "".join(overhead_rows))
    if not_split:
        parts.append('<p class="muted">Not split:</p><ul class="trace-not-split">%s</ul>' % "".join(not_split))
    return "".join(parts)


def render_where_time_goes_runs(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], charts: _Charts) -> str:
    """:func:`render_where_time_goes` for each run of several that asked to trace, under its label."""
    out = []
    for run, run_label in zip(runs, labels):
        body = render_where_time_goes(run, charts)
        if body:
            out.append("<h3>%s%s</h3>%s" % (_swatch(run_label), esc(run_label.full), body))
    return "".join(out)


# Dimensions a set of runs can vary in, as (key, title); the values come from run_dimension.
DIMENSIONS = (
    ("machine", "machine"), ("interpreter", "interpreter"), ("placement", "placement"), ("settle_us", "settle time"),
    ("cpu_threads", "busy threads"), ("cpu_procs", "busy processes"), ("idle_hold", "idle hold"),
    ("switch_interval_s", "switch interval"), ("mode", "loop"),
)


def run_dimension(run: RunEvidence, key: str) -> str:
    """The value of dimension ``key`` for ``run``, in words (plain text)."""
    s = run.summary
    params = _dict(s.get("parameters"))
    conditions = _dict(s.get("conditions"))
    if key == "machine":
        return run.bundle.hostname or "?"
    if key == "interpreter":
        return interpreter_label(s)
    if key == "placement":
        return str(params.get("placement") or "any")
    if key == "settle_us":
        return "settle %s µs" % params.get("settle_us")
    if key == "mode":
        return "%s loop" % (params.get("mode") or "closed")
    if key == "idle_hold":
        return "idle hold" if conditions.get("idle_hold") else "no idle hold"
    if key == "switch_interval_s":
        value = conditions.get("switch_interval_s")
        return "switch interval %s s" % value if value is not None else "default switch interval"
    return "%s %s" % (conditions.get(key) or 0, dict(DIMENSIONS).get(key, key))


def varying_dimensions(runs: Sequence[RunEvidence]) -> List[Tuple[str, str]]:
    return [(key, title) for key, title in DIMENSIONS if len({run_dimension(r, key) for r in runs}) > 1]


def render_grids(runs: Sequence[RunEvidence], charts: _Charts) -> str:
    """A heat map of p50 per arm for each dimension the runs vary in (interpreter, placement, machine, ...)."""
    from wakelab.report.interactive import GridCell, chart_html, grid_chart, label as plot_text

    dims = varying_dimensions(runs)
    names = [n for n in _arm_order(runs) if any(_p50(_by_name(r.summary).get(n)) is not None for r in runs)]
    if not dims or not names:
        return ""
    out = []
    for key, title in dims:
        values = [run_dimension(r, key) for r in runs]
        first_seen = {v: values.index(v) for v in values}
        columns = sorted(range(len(runs)), key=lambda i: (first_seen[values[i]], i))
        others = [k for k, _ in dims if k != key]
        ticks = []
        for i in columns:
            rest = " · ".join(plot_text(run_dimension(runs[i], k)) for k in others)
            ticks.append("<b>%s</b>%s" % (plot_text(values[i]), ("<br>" + rest) if rest else ""))
        cells = []
        for column, i in enumerate(columns):
            by_name = _by_name(runs[i].summary)
            for name in names:
                entry = by_name.get(name)
                if _p50(entry) is not None and entry is not None:
                    lat = _latency(entry)
                    cells.append(GridCell(name, column, float(lat["p50_ns"]), lat.get("p99_ns")))
        chart = grid_chart(charts.next_id(), "p50 by %s" % title, names, ticks, cells)
        out.append(chart_html(chart))
    return ('<h3>Grids</h3><p class="muted">p50 of each arm in each run, one heat map per dimension the runs vary in '
            "(columns grouped by it); darker is slower, on a log colour scale. Hover a cell for p50 and p99.</p>%s" % "".join(out))


# --- a grid's matrix ------------------------------------------------------------------------

# Headers of the grid dimensions in the cells table (python is the interpreter column).
GRID_DIMENSION_TITLES = {"placement": "placement", "settle_us": "settle µs", "cpu_threads": "busy threads",
                         "cpu_procs": "busy processes"}


def _cell_state(view: GridCellView) -> Tuple[str, str]:
    if view.run is None:
        return "not run", "bad"
    return _run_state(view.run.summary)


def render_grid_matrix(grid: GridView) -> str:
    """A grid as matrix.txt lays it out: its cells, then one table per arm with a row per cell.

    Figures come from each cell's own (validated) summary.json, in the
    matrix's cell order; "vs first" is a cell's figure over the first cell
    that measured the arm, its p50 coloured by :func:`ratio_tone` (a p99
    that got worse is drawn as a regression, whatever the p50 did).
    """
    matrix = grid.matrix
    lab = _dict(matrix.get("lab"))
    dims = [d for d in grid.dimensions if d != "python"]
    head = "".join("<th>%s</th>" % esc(GRID_DIMENSION_TITLES.get(d, d)) for d in dims)
    rows = []
    for view in grid.cells:
        state, css = _cell_state(view)
        interp = interpreter_label(view.run.summary) if view.run is not None else DASH
        rows.append('<tr><th scope="row">%s</th><td>%s</td>%s<td><span class="badge %s">%s</span></td></tr>' % (
            esc(view.label), esc(interp), "".join("<td>%s</td>" % esc(DASH if view.dimensions.get(d) is None else _plain(view.dimensions.get(d))) for d in dims), css, esc(state)))
    out = [
        '<p class="meta"><code>%s</code> · %s · started %s · %d cells · %s</p>' % (
            esc(grid.folder), esc(lab.get("title") or lab.get("id")), esc(matrix.get("started_utc")), len(grid.cells),
            "complete" if matrix.get("complete") else "INCOMPLETE"),
        '<div class="table-wrap"><table class="cells"><caption>Cells (each a complete run with its own evidence in '
        "cells/&lt;cell&gt;/)</caption><thead><tr><th>cell</th><th>interpreter</th>%s<th>state</th></tr></thead>"
        "<tbody>%s</tbody></table></div>" % (head, "".join(rows)),
    ]
    ran = [v for v in grid.cells if v.run is not None]
    names: List[str] = []
    for view in ran:
        assert view.run is not None
        names.extend(n for n in (str(a.get("name")) for a in _arms(view.run.summary)) if n not in names)
    for name in names:
        entries = [(v, _by_name(v.run.summary).get(name) if v.run is not None else None) for v in grid.cells]
        kind = next((str(e.get("kind")) for _, e in entries if e is not None), "latency")
        out.append(_matrix_rate_table(name, entries) if kind == "rate" else _matrix_latency_table(name, entries))
    out.append(
        '<p class="muted">vs first: the cell\'s figure over the first cell that measured the arm. Green needs the p50 '
        "faster by more than 10% and the p99 not worse; a p99 worse by more than 10% is drawn red with its ratio, "
        "even when the p50 got faster. Spread: the largest median over the smallest, of the cell's repetitions "
        "(--repeat), or of its worker processes in a run without repetitions.</p>")
    return "".join(out)


def _status_text(view: GridCellView, entry: Optional[Mapping[str, Any]]) -> str:
    if view.run is None:
        return "not run"
    if entry is None:
        return "not in this cell"
    status = str(entry.get("status"))
    reason = entry.get("reason")
    return "%s%s" % (STATUS_WORDS.get(status, status), ": %s" % reason if reason else "")


def _spread_text(entry: Mapping[str, Any]) -> str:
    value = _dict(entry.get("spread")).get("max_over_min")
    return format_ratio(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else DASH


def _matrix_latency_table(name: str, entries: Sequence[Tuple[GridCellView, Optional[Mapping[str, Any]]]]) -> str:
    base_entry = next((e for _, e in entries if _p50(e) is not None), None)
    base = _latency(base_entry) if base_entry is not None else {}
    rows = []
    for view, entry in entries:
        lat = _latency(entry) if entry is not None else {}
        if entry is None or _p50(entry) is None:
            rows.append('<tr class="not-ok"><th scope="row">%s</th><td class="status muted" colspan="10">%s</td></tr>' % (
                esc(view.label), esc(_status_text(view, entry))))
            continue
        first = entry is base_entry
        p50_ratio = None if first else positive_ratio(lat.get("p50_ns"), base.get("p50_ns"))
        p99_ratio = None if first else positive_ratio(lat.get("p99_ns"), base.get("p99_ns"))
        figures = [esc(lat.get("n")), '<span class="warn">%s</span>' % esc(lat.get("lost")) if lat.get("lost") else "0"]
        figures += [esc(format_us(lat.get(k))) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")]
        figures[3] = "<b>%s</b>" % figures[3]
        if first:
            figures += ['<span class="muted">first</span>', '<span class="muted">first</span>']
        else:
            p99_css = "" if p99_ratio is None else ("slower" if p99_ratio > RATIO_NOISE else "faster" if p99_ratio < 1 / RATIO_NOISE else "")
            figures += [_ratio_html(p50_ratio, p99_ratio) if p50_ratio is not None else DASH,
                        '<span class="ratio %s">%s</span>' % (p99_css, esc(format_ratio(p99_ratio)))]
        figures.append(esc(_spread_text(entry)))
        rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(view.label), "".join('<td class="num">%s</td>' % f for f in figures)))
    head = "".join("<th>%s</th>" % h for h in ("n", "lost", "min", "p50", "p90", "p99", "max", "p50 vs first", "p99 vs first", "spread"))
    return ('<div class="table-wrap"><table class="matrix" data-arm="%s"><caption><b>%s</b> (µs)</caption><thead><tr><th>cell</th>%s</tr>'
            "</thead><tbody>%s</tbody></table></div>" % (esc(name), esc(name), head, "".join(rows)))


def _matrix_rate_table(name: str, entries: Sequence[Tuple[GridCellView, Optional[Mapping[str, Any]]]]) -> str:
    rates = [_dict(e.get("rate")).get("ops_per_s") if e is not None and e.get("status") == "ok" else None for _, e in entries]
    base = next((r for r in rates if positive_ratio(r, 1.0) is not None), None)
    rows = []
    for (view, entry), rate in zip(entries, rates):
        if entry is None or positive_ratio(rate, 1.0) is None:
            rows.append('<tr class="not-ok"><th scope="row">%s</th><td class="status muted" colspan="5">%s</td></tr>' % (
                esc(view.label), esc(_status_text(view, entry))))
            continue
        figures = _dict(entry.get("rate"))
        ratio = positive_ratio(rate, base)
        rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(view.label), "".join('<td class="num">%s</td>' % f for f in (
            "<b>%s</b>" % esc(format_rate(rate)), esc(format_rate(figures.get("min_ops_per_s"))), esc(format_rate(figures.get("max_ops_per_s"))),
            esc(format_ratio(ratio)), esc(_spread_text(entry))))))
    head = "".join("<th>%s</th>" % h for h in ("median ops/s", "slowest", "fastest", "vs first", "spread"))
    return ('<div class="table-wrap"><table class="matrix rate" data-arm="%s"><caption><b>%s</b> (rate arm: higher is faster)</caption>'
            "<thead><tr><th>cell</th>%s</tr></thead><tbody>%s</tbody></table></div>" % (esc(name), esc(name), head, "".join(rows)))


def _run_sections(run: RunEvidence, label: RunLabel, anchor: str, toc: List[Tuple[str, str]]) -> str:
    """One run of several, folded: its guidance, verdict, lead table, honesty block, caveats and definitions."""
    s = run.summary
    verdict = render_verdict(s)
    body_lead = render_lead_table(s)
    repetitions = render_repetitions_and_placement(s)
    if repetitions:
        body_lead += "<h3>Repetitions and placement</h3>" + repetitions
    guidance = render_guidance(run)
    state, css = _run_state(s)
    toc.append((anchor, label.short))
    return (
        '<details class="run" id="%s"><summary><h2>%s%s <span class="badge %s">%s</span></h2></summary>'
        '<p class="meta"><code>%s</code> · %s · %s</p>%s'
        "<h3>Verdict (from this run's figures)</h3>%s<h3>Lead table</h3>%s<h3>Lab honesty</h3>%s<h3>Caveats</h3>%s%s</details>"
        % (
            esc(anchor), _swatch(label), esc(label.full), css, esc(state), esc(run.source), esc(_dict(s.get("lab")).get("title")), esc(s.get("started_utc")),
            ("<h3>Guidance</h3>" + guidance) if guidance else "", verdict, body_lead,
            render_honesty(s), render_caveats(s), render_details(s),
        )
    )


def render_report(runs: Sequence[RunEvidence], notes: Sequence[str] = (), grids: Sequence[GridView] = ()) -> str:
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


def _render(runs: Sequence[RunEvidence], notes: Sequence[str], grids: Sequence[GridView] = ()) -> str:
    from wakelab import __version__
    from wakelab.report.interactive import GLUE_JS, plotly_js

    plots_ = _Plots()
    charts = _Charts()
    toc: List[Tuple[str, str]] = []
    first = runs[0].summary
    lab = _dict(first.get("lab"))
    same_lab = len({str(_dict(r.summary.get("lab")).get("id")) for r in runs}) == 1
    several = len(runs) > 1
    hosts = sorted({r.bundle.hostname for r in runs})
    grid_folders = sorted({r.grid for r in runs if r.grid})
    title = str(lab.get("title") or lab.get("id") or "wakelab run") if same_lab else "wakelab: %d runs compared" % len(runs)
    header = ["<header class=\"top\"><h1>%s</h1>" % esc(title)]
    if same_lab and lab.get("question"):
        header.append('<p class="question">%s</p>' % esc(lab["question"]))
    body: List[str] = []
    if not several:
        state, css = _run_state(first)
        header.append(
            '<p class="meta">wakelab %s · %s · %s · <span class="badge %s">%s</span> · <code>%s</code></p>'
            % (esc(_dict(first.get("tool")).get("version")), esc(first.get("started_utc")), esc(interpreter_label(first)),
               css, esc(state), esc(runs[0].source))
        )
        labels = [RunLabel(interpreter_label(first), interpreter_label(first), "#0072B2")]
        guidance = render_guidance(runs[0])
        if guidance:
            body.append(_section("guidance", "Guidance", guidance, toc))
        glance = render_overview(runs, labels, charts) + render_rate_chart(runs, labels, charts)
        body.append(_section("overview", "At a glance", glance, toc))
        body.extend(_grid_sections(grids, toc))
        where = render_where_time_goes(runs[0], charts)
        if where:
            body.append(_section("where-time-goes", "Where the time goes", where, toc))
        body.append(_section("verdict", "Verdict", render_verdict(first), toc))
        body.append(_section("lead-table", "Lead table", render_lead_table(first), toc))
        repetitions = render_repetitions_and_placement(first)
        if repetitions:
            body.append(_section("repetitions", "Repetitions and placement", repetitions, toc))
        body.append(_section("honesty", "Lab honesty", render_honesty(first), toc))
        body.append(_section("caveats", "Caveats", render_caveats(first), toc))
        body.append(_section("distributions", "Latency distributions", _distribution_intro(False) + render_distributions(runs, labels, plots_), toc))
        details = render_details(first)
        if details:
            body.append(_section("details", "Definitions, methodology, reproduce", details, toc))
    else:
        labels = run_labels(runs)
        what = "%d runs" % len(runs)
        if grid_folders:
            what = "%d cells of the grid%s %s" % (len(runs), "s" if len(grid_folders) > 1 else "", ", ".join(grid_folders))
        if len(hosts) > 1:
            what += " from %d machines (%s)" % (len(hosts), ", ".join(hosts))
        header.append('<p class="meta">%s · report by wakelab %s</p>' % (esc(what), esc(__version__)))
        glance = render_overview(runs, labels, charts) + render_grids(runs, charts) + render_rate_chart(runs, labels, charts)
        body.append(_section("overview", "At a glance", glance, toc))
        body.extend(_grid_sections(grids, toc))
        where = render_where_time_goes_runs(runs, labels, charts)
        if where:
            body.append(_section("where-time-goes", "Where the time goes", where, toc))
        comparison = [render_runs_table(runs, labels), render_differences(runs, labels),
                      render_comparison_table(runs, labels), render_rate_comparison(runs, labels)]
        body.append(_section("comparison", "Runs compared", "".join(comparison), toc))
        body.append(_section("distributions", "Latency distributions", _distribution_intro(True) + render_distributions(runs, labels, plots_), toc))
        for i, (run, label) in enumerate(zip(runs, labels), 1):
            body.append(_run_sections(run, label, "run-%d" % i, toc))
    if notes:
        header.append("".join('<p class="note">%s</p>' % esc(n) for n in notes))
    nav = '<nav class="toc">%s</nav>' % "".join('<a href="#%s">%s</a>' % (esc(a), esc(t)) for a, t in toc)
    header.append(nav + "</header>")
    footer = (
        "<footer>Generated by wakelab %s from the evidence bundle%s above. Times are wake latencies t1 - t0 "
        "(perf_counter_ns); percentiles use linear interpolation between closest ranks. %d interactive chart%s (plotly.js, "
        "inlined), %d plot%s.</footer>"
        % (esc(__version__), "s" if several else "", charts.count, "" if charts.count == 1 else "s",
           plots_.count, "" if plots_.count == 1 else "s")
    )
    scripts = [plotly_js(), GLUE_JS] if charts.count or plots_.count else []
    return _page(title, "".join(header) + "".join(body) + footer, scripts)


def _grid_sections(grids: Sequence[GridView], toc: List[Tuple[str, str]]) -> List[str]:
    """One section per grid given: its matrix (cells, then each arm cell by cell)."""
    return [
        _section("matrix-%d" % i if len(grids) > 1 else "matrix", "Grid matrix" + (" %d" % i if len(grids) > 1 else ""),
                 render_grid_matrix(grid), toc)
        for i, grid in enumerate(grids, 1)
    ]


def _distribution_intro(several: bool) -> str:
    text = (
        "Each arm's wakes as a histogram (share of wakes per log-spaced bin; the rare wakes far beyond the rest are "
        "gathered in one hatched bin at the edge, so one outlier cannot squash the others) and an ECDF (fraction of "
        "wakes at or below a latency, over the whole range), both on a log time axis. Open an arm to see them. "
    )
    if several:
        text += "Runs are overlaid in their colours; on the ECDF a dot marks each run's p50 and a diamond its p99."
    else:
        text += "Dashed lines mark p50 and p99; dashed curves are the named components of a wake, where an arm records them."
    return '<p class="muted">%s</p>' % text


def count_plots(page: str) -> int:
    """How many figures a rendered page holds: the arms' distributions and the charts at a glance."""
    return page.count('data-chart="%s"' % DISTRIBUTION) + count_charts(page)


def count_charts(page: str) -> int:
    """How many charts a rendered page holds besides the arms' distributions (the overview, rates, grids, traces)."""
    return page.count('data-chart="1"')


def write_report(path: str, page: str) -> None:
    """Write ``page`` to ``path`` atomically; :class:`OutputError` with the OS's reason if it cannot."""
    try:
        atomic_write_text(path, page)
    except OSError as exc:
        raise OutputError("cannot write the report to %s: %s (choose another path with -o)" % (path, exc.strerror or exc)) from None
