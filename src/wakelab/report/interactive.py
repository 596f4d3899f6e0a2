"""Interactive charts for the HTML report: plotly.js, embedded once per page (analysis side).

Every chart of the report is a plotly figure (a plain dict: ``data``, ``layout``, ``config``), built from
figures the analysis computed.  Nothing is fetched: plotly.js (the ``plotly`` package, imported lazily) is
inlined once, each figure is a JSON data block, and one small glue script draws them (a chart in a folded
``<details>`` when it is unfolded) and wires the buttons with ``Plotly.newPlot``, ``relayout`` and ``restyle``.

Why the page is still safe with scripts in it:

- The page's Content-Security-Policy allows exactly two scripts, by their SHA-256 (:func:`script_hash`):
  plotly.js and the glue.  Markup that got into the page some other way could not run a script, and
  ``connect-src`` falls back to ``'none'``: no script can phone home.
- A figure's JSON sits in ``<script type="application/json">``, a data block the browser never runs, with
  ``<``, ``>`` and ``&`` written as JSON escapes (:func:`json_for_script`), so evidence text can neither end
  the block nor start a tag.
- plotly reads a few HTML-like tags (``<b>``, ``<br>``, ``<a>``) in labels and hover text, and decodes
  entities: every string from the evidence is passed through :func:`label` first.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import html
import json
import math
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Set, Tuple

from wakelab.analysis.caveats import NativeRatio
from wakelab.core.registry import FAMILY_COLORS, FAMILY_TITLES
from wakelab.evidence.model import ArmRecord, LatencyFigures, TraceFigures
from wakelab.formatting import format_ns, format_ratio

# Pixels per arm row in the overview; the chart grows with the arms so labels never overlap.
ROW_PX = 24
GROUP_ROW_PX = 12  # extra pixels per arm for each further run sharing a row
CHART_MARGIN_PX = 110
FLOOR_MATCHED_COLOR = "#222222"
FLOOR_NEAREST_COLOR = "#8a8a8a"
RANGE_OPACITY = 0.45
# A log axis reaches this factor beyond the smallest and the largest value it draws.
AXIS_PAD = 1.3
# Each family's colour in the overview is its module's (FAMILY_COLORS); a family this version does not know
# gets Okabe-Ito's sky blue, which no family declares.
OTHER_FAMILY_COLOR = "#56B4E9"
# No "edit in Chart Studio", no image export that needs a server; zooming and panning stay.
CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False,
          "modeBarButtonsToRemove": ["sendDataToCloud", "lasso2d", "select2d", "toImage"]}
# Every chart's legend, below the plot (the height of the figure's bottom, grown to fit it): above it, it ran
# into plotly's toolbar (modebar) at the top right once it wrapped on a narrow window.
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yref": "container", "yanchor": "bottom",
                "font": {"size": 11}}
FONT = {"family": 'system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif',
        "size": 12, "color": "#1d2329"}
# Every chart's hover label (the heat map's keeps plotly's font size) and its white plot and paper.
HOVER_LABEL = {"align": "left", "bgcolor": "#ffffff", "bordercolor": "#999999", "font": {"size": 12}}
WHITE = {"plot_bgcolor": "#ffffff", "paper_bgcolor": "#ffffff"}


class InteractiveUnavailable(Exception):
    """plotly is not installed."""


# Escaped in the JSON a page carries: what could end a data block or start a tag, JavaScript's two line separators,
# and (json.dumps escapes C0) DEL, the C1 controls and the bidirectional overrides and isolates, so that a page
# printed to a terminal carries no control sequence and has no text reordered.
_JSON_ESCAPED = re.compile("[<>&\u2028\u2029\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


@functools.lru_cache(maxsize=1)
def plotly_js() -> str:
    r"""The text of plotly.js as the installed ``plotly`` package ships it, fit to inline and to print: its few raw
    control characters in string literals (a PNG signature's ``\x1a``) are written as ``\xNN`` escapes, the same
    string to JavaScript, so that a page sent to a terminal carries no control sequence."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError as exc:
        raise InteractiveUnavailable(str(exc)) from None
    text: str = get_plotlyjs()
    if "</script" in text.lower():  # would end the inline script early; no plotly.js release has it
        raise InteractiveUnavailable("this plotly.js cannot be inlined (it holds '</script')")
    if any(m.start() and text[m.start() - 1] == "\\" for m in _RAW_CONTROL.finditer(text)):
        raise InteractiveUnavailable("this plotly.js holds an escaped raw control character wakelab cannot rewrite")
    return _RAW_CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)


def label(text: object) -> str:
    """Evidence text made safe for plotly's labels and hover text: no tag, no entity it would read."""
    return html.escape(" ".join(str(text).split()), quote=True)


def json_for_script(value: Any) -> str:
    """``value`` as JSON fit to sit inside ``<script type="application/json">``: the same JSON to a parser, with no
    ``</script>`` or ``<!--`` in the page's text (:data:`_JSON_ESCAPED` as ``\\uXXXX`` escapes)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), sort_keys=True)
    return _JSON_ESCAPED.sub(lambda m: "\\u%04x" % ord(m.group()), text)


def script_hash(text: str) -> str:
    """The CSP source (``'sha256-...'``) that allows the inline script ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-%s'" % base64.b64encode(digest).decode("ascii")


def us(value_ns: Optional[float]) -> Optional[float]:
    """ns to µs for a chart axis (None stays None); a 0 is drawn at 1 ns, where a log axis can show it."""
    return None if value_ns is None else max(float(value_ns), 1.0) / 1e3


@dataclasses.dataclass(frozen=True)
class Chart:
    """A figure to place in the page: its element id, figure dict, what a screen reader says of it, its height."""

    chart_id: str
    figure: Dict[str, object]
    aria_label: str
    height_px: int


def family_color(family: str) -> str:
    return FAMILY_COLORS.get(family, OTHER_FAMILY_COLOR)


def log_axis(lo: float, hi: float, range_lo: float, range_hi: float, title: object, **fields: object) -> Dict[str, object]:
    """A log time axis (µs) drawn over [range_lo, range_hi], ticked in 1-2-5 steps over [lo, hi] (readable over one decade
    and over five; fewer steps over many decades)."""
    ticks: List[float] = []
    if lo > 0 and hi > 0:
        decades = math.log10(hi / lo)
        steps = (1.0, 2.0, 5.0) if decades <= 3.5 else (1.0, 3.0) if decades <= 5 else (1.0,)
        ticks = [float("%.6g" % (step * 10 ** exponent)) for exponent in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
                 for step in steps if lo / 1.3 <= step * 10 ** exponent <= hi * 1.3]
    return dict({"type": "log", "range": [math.log10(range_lo), math.log10(range_hi)], "tickvals": ticks,
                 "ticktext": ["{:,.0f}".format(v) if v >= 1000 else "%g" % v for v in ticks], "gridcolor": "#e4e4e4", "zeroline": False, "automargin": True,
                 "title": title}, **fields)


def trace(kind: str, **fields: object) -> Dict[str, object]:
    """A plotly trace; one with ``text`` shows it, as is, on hover (no trace box)."""
    return {"type": kind, "hovertemplate": "%{text}<extra></extra>", **fields} if "text" in fields else {"type": kind, **fields}


def figure(chart_id: str, data: List[Dict[str, object]], height: int, margin: Tuple[int, int, int, int], aria_label: str,
           **layout: object) -> Chart:
    """A chart of ``data``: the page's font, white plot and paper, closest-point hover, ``layout`` (a None there: left out)."""
    left, right, top, bottom = margin
    base = {"font": FONT, "height": height, "margin": {"l": left, "r": right, "t": top, "b": bottom}, "hovermode": "closest",
            "hoverlabel": HOVER_LABEL, **WHITE}
    fields = {k: v for k, v in dict(base, **layout).items() if v is not None}
    return Chart(chart_id, {"data": data, "layout": fields, "config": CONFIG}, aria_label, height)


class OverviewPoint(NamedTuple):
    """A measured latency arm of run number ``run``, with its C floor's ratio when the floor has figures."""

    run: int
    arm: ArmRecord
    figures: LatencyFigures
    floor: Optional[NativeRatio]


def _hover(point: OverviewPoint, run_name: Optional[str]) -> str:
    arm, lat, floor = point.arm, point.figures, point.floor
    lines = ["<b>%s</b>%s" % (label(arm.name), (" · " + label(run_name)) if run_name else ""),
             "%s · %s waiter · %s" % (label(FAMILY_TITLES.get(arm.family, arm.family)), label(arm.waiter), label(arm.scope))]
    figures = ["p50 <b>%s</b>" % format_ns(lat.p50_ns)] + [
        "%s %s" % (key, format_ns(value))
        for key, value in (("p90", lat.p90_ns), ("p99", lat.p99_ns), ("p99.9", lat.p99_9_ns), ("max", lat.max_ns)) if value is not None]
    lines.append(" · ".join(figures))
    lines.append("n %d%s" % (lat.n, (" · <b>%d lost</b>" % lat.lost) if lat.lost else ""))
    if floor is not None:
        lines.append("C floor %s: p50 %s · %s its floor%s" % (
            label(floor.native), format_ns(floor.native_value), format_ratio(floor.ratio),
            "" if floor.interpreter_share else " (nearest floor, not the same experiment)"))
    return "<br>".join(lines)


def overview_chart(chart_id: str, points: Sequence[OverviewPoint], series: Sequence[Tuple[str, str]],
                   family_order: Sequence[str]) -> Chart:
    """Every latency arm on one shared log axis: p50 dot, p90-p99 bar, its C floor beside it.

    One row per arm (the same arm of several runs -- ``series``: each run's name and colour -- shares its
    row, each run offset in its own colour).  The figure carries the row orders the sort buttons apply
    (``layout.meta.orders``) and each trace's family (``meta.family``) for the family buttons.
    """
    several = len(series) > 1
    first: Dict[str, OverviewPoint] = {}  # the row orders, top to bottom: by p50 (first run that has the arm), by family, by name
    for p in points:
        first.setdefault(label(p.arm.name), p)
    names = list(first)
    rank = {f: i for i, f in enumerate(family_order)}
    orders = {"p50": sorted(names, key=lambda a: (first[a].figures.p50_ns or 0.0, a)),
              "family": sorted(names, key=lambda a: (rank.get(first[a].arm.family, len(rank)), names.index(a))),
              "name": sorted(names, key=lambda a: a.lower())}
    families = [f for f in family_order if any(p.arm.family == f for p in points)]
    families += sorted({p.arm.family for p in points} - set(families))
    data: List[Dict[str, object]] = []
    drawn: List[Optional[float]] = []  # every x drawn, for the axis's range
    legend_groups: Set[str] = set()  # those that have their one legend entry

    def traces(group: str, mine: Sequence[OverviewPoint], run_index: int, **meta: object) -> Dict[str, object]:
        """What a family's traces of one run share; the first trace of ``group`` shows in the legend."""
        common = {"legendgroup": group, "meta": dict(family=mine[0].arm.family, run=run_index, **meta), "orientation": "h",
                  "showlegend": group not in legend_groups, "y": [label(p.arm.name) for p in mine],
                  "text": [_hover(p, series[run_index][0] if several else None) for p in mine]}
        legend_groups.add(group)
        return dict(common, offsetgroup=str(run_index), alignmentgroup="overview") if several else common

    for run_index, (run_name, run_color) in enumerate(series):
        for family in families:
            mine = [p for p in points if p.run == run_index and p.arm.family == family]
            if not mine:
                continue
            color = run_color if several else family_color(family)
            name = label(run_name if several else FAMILY_TITLES.get(family, family))
            common = traces("run-%d" % run_index if several else "family-%s" % family, mine, run_index)
            xs: List[Optional[float]] = []
            ys: List[Optional[str]] = []
            for p in mine:
                if p.figures.p90_ns is not None and p.figures.p99_ns is not None:
                    xs += [us(p.figures.p90_ns), us(p.figures.p99_ns), None]
                    ys += [label(p.arm.name), label(p.arm.name), None]
            drawn += xs + [us(p.figures.p50_ns) for p in mine]
            if xs:
                ranges = {k: v for k, v in common.items() if k != "text"}
                data.append(trace("scatter", **dict(ranges, mode="lines", x=xs, y=ys, name=name + " p90–p99", showlegend=False,
                                                    hoverinfo="skip", opacity=RANGE_OPACITY, line={"color": color, "width": 7},
                                                    connectgaps=False)))
            data.append(trace("scatter", **dict(common, mode="markers", name=name, x=[us(p.figures.p50_ns) for p in mine],
                                                marker={"color": color, "size": 9, "symbol": "circle",
                                                        "line": {"color": "#ffffff", "width": 1}})))
        for same, color, title in ((True, FLOOR_MATCHED_COLOR, "C floor p50"), (False, FLOOR_NEAREST_COLOR, "nearest C floor p50")):
            for family in families:
                floored = [p for p in points if p.run == run_index and p.arm.family == family and p.floor is not None
                           and p.floor.interpreter_share == same]
                if not floored:
                    continue
                floors = [us(p.floor.native_value) for p in floored if p.floor]
                drawn += floors
                # One legend entry for every run's floors.
                common = traces("floor-%s" % ("same" if same else "nearest"), floored, run_index, floor=True)
                data.append(trace("scatter", **dict(common, mode="markers", name=title, x=floors,
                                                    marker={"color": "rgba(0,0,0,0)", "size": 9, "symbol": "diamond",
                                                            "line": {"color": color, "width": 1.6}})))
    rows = len(orders["p50"])
    # The axis spans every figure drawn (each bar's p99 too) and a margin beyond, set rather than left to
    # plotly's autorange, which pads the markers but not the lines: a bar ending at the largest value ran off.
    xs_all = [x for x in drawn if x is not None]
    xaxis = log_axis(min(xs_all), max(xs_all), min(xs_all) / AXIS_PAD, max(xs_all) * AXIS_PAD,
                     {"text": "wake latency, µs (log scale): dot = p50, bar = p90 to p99, ◇ = C floor p50"})
    row_px = ROW_PX + GROUP_ROW_PX * (len(series) - 1)
    height = CHART_MARGIN_PX + rows * row_px
    return figure(
        chart_id, data, height, (10, 16, 36, 44), "every latency arm on one log axis: p50, p90 to p99 and its C floor",
        legend=LEGEND_BELOW, xaxis=xaxis,
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": list(reversed(orders["p50"])),
               "range": [-0.5, rows - 0.5], "automargin": True, "gridcolor": "#f0f0f0", "ticks": "", "fixedrange": True},
        meta={"orders": orders, "row_px": row_px, "margin_px": CHART_MARGIN_PX},
        scattermode="group" if several else None, scattergap=0.35 if several else None)


def grid_chart(chart_id: str, title: str, arms: Sequence[str], columns: Sequence[str],
               figures: Sequence[Mapping[str, LatencyFigures]]) -> Chart:
    """A heat map of p50 per arm (rows) and column (an interpreter, a condition, a machine: ``figures[column]``
    holds each measured arm's), on a log colour scale."""
    z: List[List[Optional[float]]] = [[None] * len(columns) for _ in arms]
    text: List[List[str]] = [[""] * len(columns) for _ in arms]
    hover: List[List[str]] = [["not measured"] * len(columns) for _ in arms]
    values = []
    for column, measured in enumerate(figures):
        for row, arm in enumerate(arms):
            lat = measured.get(arm)
            if lat is None or lat.p50_ns is None:
                continue
            values.append(max(lat.p50_ns, 1.0) / 1e3)
            z[row][column] = math.log10(values[-1])
            text[row][column] = format_ns(lat.p50_ns)
            hover[row][column] = "<b>%s</b> · %s<br>p50 <b>%s</b>%s" % (
                label(arm), columns[column].replace("<br>", " · "), format_ns(lat.p50_ns),
                (" · p99 %s" % format_ns(lat.p99_ns)) if lat.p99_ns is not None else "")
    lo = math.floor(math.log10(min(values))) if values else 0
    hi = math.ceil(math.log10(max(values))) if values else 1
    ticks = [float(v) for v in range(lo, max(hi, lo + 1) + 1)]
    data = [trace(
        "heatmap", x=list(range(len(columns))), y=[label(a) for a in arms], z=z, text=text, customdata=hover,
        hovertemplate="%{customdata}<extra></extra>", texttemplate="%{text}", textfont={"size": 11}, colorscale="Blues",
        reversescale=True, zmin=ticks[0], zmax=ticks[-1], xgap=2, ygap=2,
        colorbar={"title": {"text": "p50"}, "tickvals": ticks, "ticktext": [format_ns(10 ** t * 1e3) for t in ticks], "thickness": 12},
    )]
    return figure(
        chart_id, data, 120 + 26 * len(arms), (10, 10, 40, 10), "p50 per arm and %s" % title, hovermode=None,
        title={"text": label(title), "x": 0, "font": {"size": 13}},
        xaxis={"tickvals": list(range(len(columns))), "ticktext": list(columns), "side": "top", "automargin": True, "fixedrange": True},
        yaxis={"autorange": "reversed", "automargin": True, "fixedrange": True, "type": "category"},
        hoverlabel={"align": "left", "bgcolor": "#ffffff", "bordercolor": "#999999"})


# One colour per component of a wake, in wake order (Okabe-Ito; the remainder grey).
COMPONENT_COLORS = {"notify": "#D55E00", "sched_wake": "#56B4E9", "sched_queue": "#0072B2", "gil_wait": "#E69F00",
                    "interpreter": "#009E73", "unattributed": "#B0B0B0"}
COMPONENT_ROW_PX = 34
BANDS = (("p50", "median wake (45th–55th percentile)"), ("p99", "tail wakes (99th percentile and above)"))


def trace_bands(trace: TraceFigures) -> Dict[str, Tuple[float, Mapping[str, float]]]:
    """An arm's bands that have figures, ``p50`` / ``p99``: (the band's mean latency, its mean components), as the
    analysis computed them (the parts sum to the latency)."""
    return {key: (float(latency_ns), parts) for key, latency_ns, parts in (
        ("p50", trace.at_p50_ns, trace.at_p50), ("p99", trace.at_p99_ns, trace.at_p99)) if latency_ns is not None and parts}


def components_chart(chart_id: str, bars: Sequence[Tuple[str, TraceFigures, Optional[str]]], components: Sequence[str],
                     titles: Mapping[str, str]) -> Chart:
    """Stacked bars of where each traced arm's time goes (``bars``: its name, trace and the Python arm it is the C
    floor of): the median wake (left) and the tail (right).

    One trace per component and band, a component's two in one legend group.  Linear axes: a stacked bar on a log
    axis would misdraw the parts.
    """
    banded = [(arm, trace_bands(trace), floor_of) for arm, trace, floor_of in bars]
    rows = [label(arm) for arm, _, _ in banded]
    data: List[Dict[str, object]] = []
    for name in components:
        title = titles.get(name, name)
        for index, (band, words) in enumerate(BANDS):
            mine = [(arm, bands[band], floor_of) for arm, bands, floor_of in banded if band in bands]
            if not mine:
                continue
            hover = []
            for arm, (latency_ns, parts), floor_of in mine:
                value_ns = float(parts.get(name) or 0.0)
                share = (" (%.0f%%)" % (100.0 * value_ns / latency_ns)) if latency_ns > 0 else ""
                hover.append("<b>%s</b>%s · %s<br>%s: <b>%s</b>%s<br>of %s, the mean of the %s" % (
                    label(arm), (" · C floor of %s" % label(floor_of)) if floor_of else "", band, label(title),
                    format_ns(value_ns), share, format_ns(latency_ns), words))
            data.append(trace(
                "bar", orientation="h", name=label(title), legendgroup=name, showlegend=index == 0,
                marker={"color": COMPONENT_COLORS.get(name, OTHER_FAMILY_COLOR), "line": {"color": "#ffffff", "width": 0.5}},
                x=[max(float(parts.get(name) or 0.0), 0.0) / 1e3 for _, (_, parts), _ in mine], y=[label(arm) for arm, _, _ in mine],
                xaxis="x" if index == 0 else "x2", yaxis="y", textposition="none", meta={"component": name, "band": band},
                text=hover,
            ))
    axis = {"gridcolor": "#e4e4e4", "zeroline": True, "zerolinecolor": "#999999", "automargin": True, "rangemode": "tozero"}
    return figure(
        chart_id, data, 150 + COMPONENT_ROW_PX * max(len(rows), 1),  # the legend (three lines) sits above the bars
        (10, 16, 24, 44), "where each traced arm's time goes: notify path, scheduler, GIL wait, interpreter, at p50 and at p99",
        barmode="stack", bargap=0.35, legend=dict(LEGEND_BELOW, traceorder="normal"),
        xaxis=dict(axis, domain=[0.0, 0.47], title={"text": "<b>at p50</b>: %s, µs" % BANDS[0][1]}),
        xaxis2=dict(axis, domain=[0.53, 1.0], anchor="y", title={"text": "<b>at p99</b>: %s, µs" % BANDS[1][1]}),
        yaxis={"type": "category", "categoryorder": "array", "categoryarray": list(reversed(rows)), "automargin": True,
               "fixedrange": True, "ticks": ""})


def chart_html(chart: Chart, kind: str = "1") -> str:
    """The chart's element and its figure as a JSON data block (drawn by :data:`GLUE_JS`); ``kind`` tells the page's
    kinds of chart apart for counting."""
    return (
        '<div class="chart" id="%s" data-chart="%s" role="img" aria-label="%s" style="min-height:%dpx"></div>'
        '<script type="application/json" id="%s-spec">%s</script>'
        % (html.escape(chart.chart_id), html.escape(kind), html.escape(chart.aria_label), chart.height_px,
           html.escape(chart.chart_id), json_for_script(chart.figure))
    )


# The glue: draws each chart from its data block and wires the overview's buttons.  Rows of hidden
# families (or runs hidden from the legend) are dropped from the axis, so the chart closes up.  A
# chart inside a folded <details> (an arm's distribution) is drawn when it is first unfolded: drawn
# while hidden it would have no width, and a catalogue's dozens of them would slow the page's load.
GLUE_JS = r"""(function () {
  "use strict";
  var charts = {};
  function spec(div) { return JSON.parse(document.getElementById(div.id + "-spec").textContent); }
  function hiddenFamilies(id) {
    var out = {};
    document.querySelectorAll('button.family[data-chart="' + id + '"]').forEach(function (b) {
      if (b.getAttribute("aria-pressed") === "false") { out[b.getAttribute("data-family")] = true; }
    });
    return out;
  }
  function layoutRows(id) {
    var div = document.getElementById(id), state = charts[id];
    if (!state || !state.orders) { return; }
    var shown = {};
    div.data.forEach(function (t) {
      if (t.visible === false || t.visible === "legendonly") { return; }
      (t.y || []).forEach(function (y) { if (y !== null) { shown[y] = true; } });
    });
    var rows = state.orders[state.sort].filter(function (a) { return shown[a]; });
    var n = Math.max(rows.length, 1);
    Plotly.relayout(div, {
      "yaxis.categoryarray": rows.slice().reverse(),
      "yaxis.range": [-0.5, n - 0.5],
      "height": state.margin + n * state.rowPx
    });
    div.setAttribute("data-rows", rows.join("\n"));
  }
  function draw(div) {
    var fig = spec(div), meta = (fig.layout && fig.layout.meta) || {};
    charts[div.id] = { orders: meta.orders, sort: "p50", rowPx: meta.row_px, margin: meta.margin_px };
    Plotly.newPlot(div, fig.data, fig.layout, fig.config).then(function () {
      div.setAttribute("data-drawn", "1");
      if (meta.orders) {
        div.setAttribute("data-rows", meta.orders.p50.join("\n"));
        div.on("plotly_legendclick", function () { setTimeout(function () { layoutRows(div.id); }, 0); return true; });
      }
    });
  }
  document.querySelectorAll("div.chart[data-chart]").forEach(function (div) {
    var folded = div.closest("details:not([open])");
    if (!folded) { draw(div); return; }
    folded.addEventListener("toggle", function unfolded() {
      if (!folded.open) { return; }
      folded.removeEventListener("toggle", unfolded);
      draw(div);
    });
  });
  document.querySelectorAll("button.sort[data-chart]").forEach(function (button) {
    button.addEventListener("click", function () {
      var id = button.getAttribute("data-chart");
      charts[id].sort = button.getAttribute("data-sort");
      document.querySelectorAll('button.sort[data-chart="' + id + '"]').forEach(function (b) {
        b.setAttribute("aria-pressed", b === button ? "true" : "false");
      });
      layoutRows(id);
    });
  });
  document.querySelectorAll("button.family[data-chart]").forEach(function (button) {
    button.addEventListener("click", function () {
      var id = button.getAttribute("data-chart"), div = document.getElementById(id);
      button.setAttribute("aria-pressed", button.getAttribute("aria-pressed") === "false" ? "true" : "false");
      var hidden = hiddenFamilies(id), traces = [], visible = [];
      div.data.forEach(function (t, i) {
        var fam = t.meta && t.meta.family;
        if (fam) { traces.push(i); visible.push(hidden[fam] ? false : true); }
      });
      Plotly.restyle(div, { visible: visible }, traces).then(function () { layoutRows(id); });
    });
  });
})();
"""
