"""Each arm's latency distribution for the HTML report: a histogram and an ECDF side by side on log time axes,
as one plotly chart (:mod:`wakelab.report.interactive`).

- The histogram bins the body of the wakes (:func:`histogram_window`) in log-spaced bins, the same for every run
  overlaid, and gathers far-out wakes in one hatched bin at each edge, so that one outlier cannot squash the others.
- An ECDF of a million samples would be a million points: it is decimated (:func:`ecdf_points`) evenly in
  probability for the body, keeping every point of the extreme tail, so p99 and the maximum stay exact.
- A soak past its raw-sample cap is drawn from its histogram's counters, each value standing for ``weights``
  wakes; both panels count every wake.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
import unicodedata
from typing import Dict, List, Optional, Sequence, Tuple

from wakelab.formatting import counted, format_ns
from wakelab.report.honesty import clip
from wakelab.report.interactive import Chart, figure, label, log_axis, trace

# Okabe-Ito: distinguishable with the common colour-vision deficiencies (a run's colour, in order).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#999999")
PYTHON_COLOR = "#0072B2"
COMPONENT_COLORS = ("#009E73", "#CC79A7", "#D55E00", "#56B4E9")
MARK_COLOR = "#444444"

# Beyond this many samples an ECDF is drawn from a decimated subset (tail kept exact).
ECDF_MAX_POINTS = 600
# Longest label drawn inside a figure; the full text is in the HTML around it.
MAX_LABEL_CHARS = 60
# A sample of 0 ns is off a log axis; it is drawn at the floor of 1 ns.
MIN_PLOT_NS = 1
# The histogram bins the wakes between these shares of each series (each side at least one wake);
# wakes beyond, when far out (OUTLIER_FACTOR past the window's edge), go to one hatched bin at each
# edge, so that one outlier cannot stretch the bins and squash the rest into one.
HIST_TAIL_SHARE = 0.01
OUTLIER_FACTOR = 1.5
HEIGHT_PX = 300
# The two panels' shares of the chart's width.
HIST_DOMAIN = (0.0, 0.45)
ECDF_DOMAIN = (0.55, 1.0)


@dataclasses.dataclass(frozen=True)
class Series:
    """One latency distribution to draw: raw samples (ns; with ``weights``, values each standing for that many wakes:
    a soak's log-linear histogram past its raw-sample cap) and its reported percentiles."""

    label: str
    samples_ns: Sequence[float]
    p50_ns: Optional[float]
    p99_ns: Optional[float]
    color: str = PYTHON_COLOR
    dashed: bool = False  # components of a wake are drawn dashed, on the ECDF only
    weights: Optional[Sequence[int]] = None


def plot_label(text: object) -> str:
    """``text`` made fit to draw: printable characters only, one line, bounded length."""
    cleaned = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in str(text))
    return clip(" ".join(cleaned.split()), MAX_LABEL_CHARS)


def ecdf_points(sorted_ns: Sequence[float], weights: Optional[Sequence[int]] = None,
                max_points: int = ECDF_MAX_POINTS) -> Tuple[List[float], List[float]]:
    """(x, y) of the empirical CDF of ascending ``sorted_ns`` (each standing for ``weights`` wakes; None: one each),
    decimated to about ``max_points``: the first value, the last ``max_points // 3`` (the tail holds p99 and the
    maximum) and an even spread (in wakes) through the body."""
    k = len(sorted_ns)
    cumulative = list(range(1, k + 1)) if weights is None else list(itertools.accumulate(int(w) for w in weights))
    if k <= max_points:
        index: Sequence[int] = range(k)
    else:
        tail = max_points // 3
        body = max_points - tail
        last_body = k - tail - 1
        if weights is None:
            step = last_body / (body - 1)
            picked = {round(i * step) for i in range(body)}
        else:
            wanted = [1 + (cumulative[last_body] - 1) * i / (body - 1) for i in range(body)]
            picked = {0} | {min(bisect.bisect_left(cumulative, w), last_body) for w in wanted}
        index = sorted(picked | set(range(k - tail, k)))
    return [float(sorted_ns[i]) for i in index], [cumulative[i] / cumulative[-1] for i in index]


def histogram_window(sorted_ns: Sequence[float], weights: Optional[Sequence[int]] = None,
                     tail_share: float = HIST_TAIL_SHARE) -> Tuple[float, float]:
    """(lo, hi) in ns: the range the histogram bins, leaving far-out wakes (at most ``tail_share`` a side) to edge bins.

    ``sorted_ns`` is ascending and not empty, each value standing for ``weights`` wakes (None: one each).  An edge
    moves in only when what lies beyond it is more than :data:`OUTLIER_FACTOR` away: a distribution without
    outliers is binned whole.
    """
    counts = [1] * len(sorted_ns) if weights is None else weights
    cumulative = list(itertools.accumulate(int(w) for w in counts))
    n = cumulative[-1]
    k = max(1, int(n * tail_share)) if n > 2 else 0
    values = [float(v) for v in sorted_ns]
    lo, hi = values[0], values[-1]
    if k:
        # The value holding the wake of rank r (0-based): the first whose cumulative count exceeds r.
        inner_lo = values[bisect.bisect_right(cumulative, k)]
        inner_hi = values[bisect.bisect_right(cumulative, n - 1 - k)]
        # Only the far-out wakes leave the window: every wake within OUTLIER_FACTOR of the inner range stays in.
        lo = values[bisect.bisect_left(values, inner_lo / OUTLIER_FACTOR)]
        hi = values[bisect.bisect_right(values, inner_hi * OUTLIER_FACTOR) - 1]
    return lo, hi


def bin_edges(lo_ns: float, hi_ns: float, wakes: int) -> List[float]:
    """Log-spaced bin edges over [lo_ns, hi_ns]: 8 to 40 bins, more for more wakes."""
    lo, hi = max(lo_ns, MIN_PLOT_NS), max(hi_ns, MIN_PLOT_NS)
    if hi <= lo * 1.02:  # (nearly) one value: a narrow window around it
        lo, hi = lo / 1.1, hi * 1.1
    bins = int(min(40, max(8, 1.5 * wakes ** 0.5)))
    ratio = hi / lo
    return [lo] + [lo * ratio ** (i / bins) for i in range(1, bins)] + [hi]


def binned_shares(sorted_ns: Sequence[float], weights: Optional[Sequence[int]], edges: Sequence[float]) -> Tuple[List[float], int, int]:
    """The share of wakes in each bin of ``edges`` (``low <= value < high``, the last one its upper edge too), and the
    wakes below and beyond them (counted, not shares)."""
    bins = len(edges) - 1
    counts = [0] * bins
    lo, hi = float(edges[0]), float(edges[-1])
    below = beyond = total = 0
    for i, value in enumerate(sorted_ns):
        wakes = 1 if weights is None else int(weights[i])
        total += wakes
        if value < lo:
            below += wakes
        elif value > hi:
            beyond += wakes
        else:
            counts[min(bisect.bisect_right(edges, value) - 1, bins - 1)] += wakes
    return [c / total for c in counts], below, beyond


def padded_range(lo: float, hi: float) -> Tuple[float, float]:
    """A log-axis range around [lo, hi] (µs) that is never empty."""
    lo = max(lo, MIN_PLOT_NS / 1e3)
    hi = max(hi, lo)
    return lo / 1.25, hi * 1.25


def _short(value: float) -> float:
    """A coordinate for the page: six significant digits are far below a pixel, and half the bytes."""
    return float("%.6g" % value)


def _prepared(series: Sequence[Series]) -> List[Tuple[Series, List[float], Optional[List[int]]]]:
    """Each series' values ascending (at least 1 ns), with the wakes each stands for (None: one each)."""
    out: List[Tuple[Series, List[float], Optional[List[int]]]] = []
    for s in series:
        values = [max(float(v), MIN_PLOT_NS) for v in s.samples_ns]
        if s.weights is None:
            out.append((s, sorted(values), None))
            continue
        counts = [int(c) for c in s.weights]
        order = sorted(range(len(values)), key=values.__getitem__)  # stable: equal values keep their order
        kept = [i for i in order if counts[i] > 0]
        out.append((s, [values[i] for i in kept], [counts[i] for i in kept]))
    return out


def distribution_chart(chart_id: str, series: Sequence[Series], *, marks: bool = True) -> Chart:
    """Histogram and ECDF of one arm's wake latencies, side by side: one series per run, overlaid, plus for a single
    run dashed component series on the ECDF only.  ``marks``: the first series' p50 and p99 as labelled dashed lines."""
    prepared = _prepared(series)
    filled = [values for _, values, _ in prepared if values]
    if not filled:
        raise ValueError("distribution_chart needs at least one non-empty series")
    lo_ns = min(values[0] for values in filled)
    hi_ns = max(values[-1] for values in filled)
    main = [(s, v, w) for s, v, w in prepared if not s.dashed and v]
    overlay = len(main) > 1

    def wakes(values: List[float], weights: Optional[List[int]]) -> int:
        return len(values) if weights is None else sum(weights)

    windows = [histogram_window(v, w) for _, v, w in main] or [(lo_ns, hi_ns)]
    edges = bin_edges(min(lo for lo, _ in windows), max(hi for _, hi in windows),
                      max(wakes(v, w) for _, v, w in main) if main else 10)
    win_lo, win_hi = edges[0], edges[-1]
    step = edges[1] / edges[0]
    hist_lo, hist_hi = win_lo, win_hi
    data: List[Dict[str, object]] = []
    annotations: List[Dict[str, object]] = [
        {"text": "<b>%s</b>" % text, "xref": "paper", "yref": "paper", "x": x, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
         "showarrow": False, "font": {"size": 12, "color": "#333333"}}
        for text, x in (("histogram", HIST_DOMAIN[0]), ("ECDF", ECDF_DOMAIN[0]))]
    shapes: List[Dict[str, object]] = []
    for index, (s, values, weights) in enumerate(main):
        name = label(plot_label(s.label))
        total = wakes(values, weights)
        shares, below, beyond = binned_shares(values, weights, edges)
        hover = ["<b>%s</b><br>%s – %s: %.1f%% of wakes" % (name, format_ns(edges[i]), format_ns(edges[i + 1]), 100 * shares[i])
                 for i in range(len(shares))]
        panel = {"mode": "lines", "name": name, "legendgroup": "series-%d" % index, "showlegend": False,
                 "xaxis": "x", "yaxis": "y"}
        data.append(trace(
            "scatter", **panel, x=[_short(e / 1e3) for e in edges], y=[_short(v) for v in shares + shares[-1:]],
            line={"shape": "hv", "color": s.color, "width": 1.2 if overlay else 0.8},
            fill="none" if overlay else "tozeroy", opacity=1.0 if overlay else 0.6, text=hover + hover[-1:],
        ))
        for count, left, extreme, side in ((below, win_lo / step, values[0], "below"), (beyond, win_hi, values[-1], "beyond")):
            if not count:
                continue
            height = _short(count / total)
            right = left * step
            wakes_to = "%s %s" % (counted(count, "wake"), "down to" if side == "below" else "up to")
            data.append(trace(
                "scatter", **panel, x=[_short(x / 1e3) for x in (left, left, right, right, left)], y=[0, height, height, 0, 0],
                fill="toself", fillcolor="rgba(0,0,0,0)", fillpattern={"shape": "/", "fgcolor": s.color, "size": 6},
                line={"color": s.color, "width": 0.8}, text=["<b>%s</b><br>%s %s" % (name, wakes_to, format_ns(extreme))] * 5,
            ))
            annotations.append({
                "text": "%s<br>%s" % (wakes_to, format_ns(extreme)),
                "x": math.log10(left * step ** 0.5 / 1e3), "y": height, "xref": "x", "yref": "y", "showarrow": False,
                "xanchor": "right" if side == "beyond" else "left", "yanchor": "bottom", "font": {"size": 10, "color": "#444444"},
            })
            hist_lo, hist_hi = min(hist_lo, left), max(hist_hi, right)  # an edge bin lies beyond the window on its side
    for index, (s, values, weights) in enumerate(prepared):
        if not values:
            continue
        name = label(plot_label(s.label))
        x, y = ecdf_points(values, weights)
        group = "component-%d" % index if s.dashed else "series-%d" % [m[0] for m in main].index(s)
        data.append(trace(
            "scatter", mode="lines", name=name, legendgroup=group, showlegend=len(series) > 1, xaxis="x2", yaxis="y2",
            x=[_short(v / 1e3) for v in x[:1] + x], y=[0.0] + [_short(v) for v in y],
            line={"shape": "hv", "color": s.color, "width": 1.0 if s.dashed else 1.5, "dash": "dash" if s.dashed else "solid"},
            text=["<b>%s</b><br>≤ %s: %.1f%% of wakes" % (name, format_ns(v), 100 * share) for v, share in zip(x[:1] + x, [0.0] + y)],
        ))
        if not s.dashed:
            marked = [(q, value, symbol) for q, value, symbol in ((0.5, s.p50_ns, "circle"), (0.99, s.p99_ns, "diamond"))
                      if value is not None]
            if marked:
                data.append(trace(
                    "scatter", mode="markers", name=name, legendgroup=group, showlegend=False, xaxis="x2", yaxis="y2",
                    x=[_short(max(value, MIN_PLOT_NS) / 1e3) for _, value, _ in marked], y=[q for q, _, _ in marked],
                    marker={"color": s.color, "size": 7, "symbol": [symbol for _, _, symbol in marked]},
                    text=["<b>%s</b><br>p%s %s" % (name, "50" if q == 0.5 else "99", format_ns(value)) for q, value, _ in marked],
                ))
    first = main[0][0] if marks and main else None
    mark_lines = [(key, value, top) for key, value, top in (("p50", first.p50_ns, 1.0), ("p99", first.p99_ns, 0.9))
                  if value is not None] if first is not None else []
    for _, value, _ in mark_lines:
        hist_lo, hist_hi = min(hist_lo, max(value, MIN_PLOT_NS)), max(hist_hi, max(value, MIN_PLOT_NS))
    ranges = {"x": padded_range(hist_lo / 1e3, hist_hi / 1e3), "x2": padded_range(lo_ns / 1e3, hi_ns / 1e3)}
    for axis_name, (lo_us, hi_us) in ranges.items():
        lo, hi = math.log10(lo_us), math.log10(hi_us)
        for key, value, top in mark_lines:
            at = math.log10(max(value, MIN_PLOT_NS) / 1e3)
            shapes.append({"type": "line", "xref": axis_name, "yref": "paper", "x0": 10 ** at, "x1": 10 ** at, "y0": 0, "y1": 1,
                           "line": {"color": MARK_COLOR, "width": 1, "dash": "dash"}, "layer": "below"})
            right_side = (at - lo) / (hi - lo) > 0.62
            annotations.append({
                "text": "%s %s" % (key, format_ns(value)), "x": at, "y": top, "xref": axis_name, "yref": "paper",
                "xanchor": "right" if right_side else "left", "yanchor": "top", "xshift": -3 if right_side else 3,
                "showarrow": False, "font": {"size": 10, "color": MARK_COLOR},
            })
    title = {"text": "wake latency (µs, log scale)", "font": {"size": 12}}
    return figure(
        chart_id, data, HEIGHT_PX, (10, 16, 28, 44), "latency distribution: histogram and ECDF on log time axes",
        showlegend=len(series) > 1, annotations=annotations, shapes=shapes,
        legend={"x": 1.0, "xanchor": "right", "y": 0.02, "yanchor": "bottom", "bgcolor": "rgba(255,255,255,0.8)", "font": {"size": 11}},
        xaxis=log_axis(*ranges["x"], *ranges["x"], title, domain=list(HIST_DOMAIN)),
        yaxis={"title": {"text": "share of wakes", "font": {"size": 12}}, "tickformat": ".0%", "rangemode": "tozero",
               "gridcolor": "#e4e4e4", "automargin": True, "fixedrange": True},
        xaxis2=log_axis(*ranges["x2"], *ranges["x2"], title, domain=list(ECDF_DOMAIN)),
        yaxis2={"anchor": "x2", "range": [0, 1.02], "tickvals": [0, 0.25, 0.5, 0.75, 0.9, 1.0], "ticktext": ["0", "", "0.5", "", "0.9", "1"],
                "title": {"text": "fraction of wakes ≤ x", "font": {"size": 12}}, "gridcolor": "#e4e4e4", "automargin": True,
                "fixedrange": True})
