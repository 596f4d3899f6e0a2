"""Plots for the HTML report: matplotlib figures rendered to inline SVG (analysis side).

matplotlib and numpy are imported inside the functions that need them, never
at module level: the measuring side must not pay for them.  Figures are built
with the object API (``Figure`` on an explicit Agg canvas), never pyplot, so
no global backend or figure registry is touched and nothing interactive can
open.

Why SVG, and how it is kept small and safe:

- Text stays text (``svg.fonttype: none``): it is crisp, searchable, and far
  smaller than glyph outlines.  matplotlib escapes ``& < >`` in text content
  and quotes in attributes, so a hostile label cannot become markup; labels
  are also parsed as plain text, never as mathtext (``text.parse_math``), so
  a ``$`` in a note can neither break rendering nor be interpreted.
- An ECDF of a million samples would be a million path vertices.  Series are
  decimated (:func:`ecdf_points`): evenly in probability for the body, and
  every point of the extreme tail, so p99 and the maximum stay exact.
- Several SVGs inline in one HTML page share one id namespace, and
  matplotlib's ids (``patch_1``, clip-path hashes) repeat across figures.
  :func:`figure_to_svg` drops ids nothing refers to and prefixes the rest.
- The RDF metadata block, the XML prolog and the DOCTYPE are removed; the
  prolog would be invalid inside HTML and the metadata is noise.
"""

from __future__ import annotations

import dataclasses
import io
import math
import re
import unicodedata
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from wakelab.formatting import format_ns

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#999999")
PYTHON_COLOR = "#0072B2"
COMPONENT_COLORS = ("#009E73", "#CC79A7", "#D55E00", "#56B4E9")
MARK_COLOR = "#444444"

# Beyond this many samples an ECDF is drawn from a decimated subset (tail kept exact).
ECDF_MAX_POINTS = 600
# Longest label drawn inside a figure; the full text is in the HTML around it.
MAX_LABEL_CHARS = 60
# matplotlib treats a sample of 0 ns as off a log axis; plot it at the floor of 1 ns.
MIN_PLOT_NS = 1

_RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "wakelab",  # deterministic ids: the same evidence gives the same file
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 8.5,
    "axes.titlesize": 9,
    "axes.labelsize": 8.5,
    "axes.edgecolor": "#888888",
    "axes.linewidth": 0.6,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.color": "#e4e4e4",
    "grid.linewidth": 0.6,
    "xtick.color": "#555555",
    "ytick.color": "#555555",
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "legend.fontsize": 7.5,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


class PlottingUnavailable(Exception):
    """matplotlib (or numpy) is not installed."""


@dataclasses.dataclass(frozen=True)
class Series:
    """One latency distribution to draw: raw samples (ns) and its reported percentiles.

    With ``weights``, ``samples_ns`` are values each standing for that many
    wakes (a soak's log-linear histogram past its raw-sample cap:
    :meth:`wakelab.analysis.hdr.LogLinearHistogram.weighted_values`), and
    both the histogram and the ECDF count every wake they stand for.
    """

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
    cleaned = " ".join(cleaned.split())
    if len(cleaned) > MAX_LABEL_CHARS:
        cleaned = cleaned[: MAX_LABEL_CHARS - 1] + "…"
    return cleaned


def _imports() -> Tuple[Any, Any, Any]:
    try:
        import matplotlib
        import numpy
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise PlottingUnavailable(str(exc)) from None
    return matplotlib, numpy, Figure


class _Plotting:
    """matplotlib with wakelab's style applied for the duration of a ``with`` block."""

    def __init__(self) -> None:
        self.matplotlib, self.np, self._figure_class = _imports()
        self._rc: Any = None
        self._warnings: Any = None

    def __enter__(self) -> "_Plotting":
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        # Labels are drawn as text in the SVG, so a glyph missing from the layout font
        # costs nothing in the browser; matplotlib would still warn about it.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from", category=UserWarning)
        self._rc = self.matplotlib.rc_context(_RC)
        self._rc.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._rc.__exit__(*exc)
        self._warnings.__exit__(*exc)

    def figure(self, width_in: float, height_in: float, constrained: bool = True) -> Any:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig = self._figure_class(figsize=(width_in, height_in), layout="constrained" if constrained else None)
        FigureCanvasAgg(fig)  # the non-interactive Agg canvas, explicitly; never pyplot
        return fig


def _us_tick(value: float, _pos: object = None) -> str:
    """Tick label for a value in µs: 0.5, 2, 50, 1000 ..."""
    if value >= 1:
        return "{:,.0f}".format(value) if value >= 1000 else "%g" % value
    return "%g" % float("%.2g" % value)


def _log_axis(ax: Any, lo_us: float, hi_us: float) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    ax.set_xscale("log")
    lo, hi = _padded_range(lo_us, hi_us)
    ax.set_xlim(lo, hi)
    # 1-2-5 steps stay readable over one decade and over five.
    decades = max(1.0, math.log10(hi / lo))
    subs = (1.0, 2.0, 5.0) if decades <= 1.5 else (1.0, 3.0) if decades <= 2.5 else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs, numticks=40))
    ax.xaxis.set_major_formatter(FuncFormatter(_us_tick))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", axis="both")
    ax.grid(False, which="minor")


def _padded_range(lo: float, hi: float) -> Tuple[float, float]:
    """A log-axis range around [lo, hi] that is never empty."""
    lo = max(lo, MIN_PLOT_NS / 1e3)
    hi = max(hi, lo)
    return lo / 1.25, hi * 1.25


def weighted_ecdf_points(sorted_ns: Any, weights: Any, max_points: int = ECDF_MAX_POINTS) -> Tuple[Any, Any]:
    """(x, y) of the empirical CDF of ascending values ``sorted_ns`` standing for ``weights`` wakes each.

    y at a value is the share of wakes at or below it.  Decimated as
    :func:`ecdf_points` is: the first value, the last ``max_points // 3``
    values (the tail) and an even spread through the body in probability.
    """
    import numpy as np

    cumulative = np.cumsum(np.asarray(weights, dtype=np.int64))
    total = float(cumulative[-1])
    k = len(sorted_ns)
    if k <= max_points:
        index = np.arange(k)
    else:
        tail = max_points // 3
        body = np.searchsorted(cumulative, np.linspace(1, cumulative[k - tail - 1], max_points - tail), side="left")
        index = np.unique(np.concatenate([[0], np.minimum(body, k - tail - 1), np.arange(k - tail, k)]))
    return sorted_ns[index], cumulative[index] / total


def ecdf_points(sorted_ns: Any, max_points: int = ECDF_MAX_POINTS) -> Tuple[Any, Any]:
    """(x, y) of the empirical CDF of ``sorted_ns``, decimated to about ``max_points``.

    y at the i-th smallest sample is (i + 1) / n.  Kept exactly: the first
    sample, the last ``max_points // 3`` samples (the tail holds p99 and the
    maximum) and an even spread through the body.
    """
    import numpy as np

    n = len(sorted_ns)
    if n <= max_points:
        index = np.arange(n)
    else:
        tail = max_points // 3
        body = np.linspace(0, n - tail - 1, max_points - tail).round().astype(np.int64)
        index = np.unique(np.concatenate([body, np.arange(n - tail, n)]))
    return sorted_ns[index], (index + 1) / n


# The histogram bins the wakes between these shares of each series (each side at least one wake);
# wakes beyond, when far out (OUTLIER_FACTOR past the window's edge), go to one hatched bin at each
# edge, so that one outlier cannot stretch the bins and squash the rest into one.
HIST_TAIL_SHARE = 0.01
OUTLIER_FACTOR = 1.5


def histogram_window(sorted_ns: Any, tail_share: float = HIST_TAIL_SHARE) -> Tuple[float, float]:
    """(lo, hi) in ns: the range the histogram bins, leaving far-out wakes (at most ``tail_share`` a side) to edge bins.

    ``sorted_ns`` is sorted ascending and not empty.  An edge moves in only
    when what lies beyond it is more than :data:`OUTLIER_FACTOR` away: a
    distribution without outliers is binned whole.
    """
    import bisect

    n = len(sorted_ns)
    k = max(1, int(n * tail_share)) if n > 2 else 0
    lo, hi = float(sorted_ns[0]), float(sorted_ns[-1])
    if k:
        inner_lo, inner_hi = float(sorted_ns[k]), float(sorted_ns[n - 1 - k])
        values = [float(v) for v in sorted_ns]
        # Only the far-out wakes leave the window: every wake within OUTLIER_FACTOR of the inner range stays in.
        lo = values[bisect.bisect_left(values, inner_lo / OUTLIER_FACTOR)]
        hi = values[bisect.bisect_right(values, inner_hi * OUTLIER_FACTOR) - 1]
    return lo, hi


def _weighted_window(sorted_ns: Any, weights: Any, tail_share: float = HIST_TAIL_SHARE) -> Tuple[float, float]:
    """:func:`histogram_window` of weighted values: the ranks count the wakes each value stands for."""
    import numpy as np

    cumulative = np.cumsum(np.asarray(weights, dtype=np.int64))
    n = int(cumulative[-1])
    k = max(1, int(n * tail_share)) if n > 2 else 0
    lo, hi = float(sorted_ns[0]), float(sorted_ns[-1])
    if k:
        # The value holding the wake of rank r (0-based): the first whose cumulative count exceeds r.
        inner_lo = float(sorted_ns[int(np.searchsorted(cumulative, k, side="right"))])
        inner_hi = float(sorted_ns[int(np.searchsorted(cumulative, n - 1 - k, side="right"))])
        lo = float(sorted_ns[int(np.searchsorted(sorted_ns, inner_lo / OUTLIER_FACTOR, side="left"))])
        hi = float(sorted_ns[int(np.searchsorted(sorted_ns, inner_hi * OUTLIER_FACTOR, side="right")) - 1])
    return lo, hi


def binned_shares(sorted_ns: Any, weights: Any, edges: Any) -> Tuple[Any, int, int]:
    """The share of wakes in each bin of ``edges``, and the wakes below and beyond them (counted, not shares).

    ``weights`` None: ``sorted_ns`` are raw samples; else each value stands for
    ``weights[i]`` wakes.  numpy arrays in, a float64 array of shares out.
    """
    import numpy as np

    counts, _ = np.histogram(sorted_ns, bins=edges, weights=weights)
    lo, hi = float(edges[0]), float(edges[-1])
    if weights is None:
        total = len(sorted_ns)
        below, beyond = int(np.count_nonzero(sorted_ns < lo)), int(np.count_nonzero(sorted_ns > hi))
    else:
        total = int(np.sum(weights))
        below, beyond = int(weights[sorted_ns < lo].sum()), int(weights[sorted_ns > hi].sum())
    return counts / total, below, beyond


def _bin_edges(np: Any, lo_ns: float, hi_ns: float, n: int) -> Any:
    lo, hi = max(lo_ns, MIN_PLOT_NS), max(hi_ns, MIN_PLOT_NS)
    if hi <= lo * 1.02:  # (nearly) one value: a narrow window around it
        lo, hi = lo / 1.1, hi * 1.1
    bins = int(min(40, max(8, 1.5 * n ** 0.5)))
    return np.geomspace(lo, hi, bins + 1)


def _mark(ax: Any, x_us: float, text: str, y_text: float, color: str = MARK_COLOR) -> None:
    """A dashed vertical line at ``x_us`` labelled ``text``; the label sits on the roomier side."""
    ax.axvline(x_us, color=color, linewidth=0.8, linestyle=(0, (3, 2)), zorder=1)
    lo, hi = ax.get_xlim()
    place = (math.log(x_us) - math.log(lo)) / (math.log(hi) - math.log(lo))
    right_side = place > 0.62
    ax.annotate(
        text,
        xy=(x_us, y_text),
        xycoords=("data", "axes fraction"),
        xytext=(-3 if right_side else 3, 0),
        textcoords="offset points",
        fontsize=7,
        color=color,
        va="top",
        ha="right" if right_side else "left",
    )


def plot_distribution(series: Sequence[Series], *, id_prefix: str, marks: bool = True) -> str:
    """Histogram and ECDF of one arm's wake latencies, side by side, on log time axes (SVG).

    ``series`` holds one entry per run (overlaid, each in its own colour) plus,
    for a single run, dashed component series drawn on the ECDF only.  The
    histogram bins the body of the wakes (:func:`histogram_window`) and
    gathers far-out ones in a hatched bin at each edge, labelled with their
    count and extreme; the ECDF spans every wake.  With ``marks``, p50 and p99 of the first
    series are drawn as labelled lines; every series gets p50/p99 markers on
    its ECDF.
    """
    with _Plotting() as plt_:
        np = plt_.np
        arrays: List[Any] = []
        weights: List[Any] = []  # None for raw samples; else the wakes each value stands for
        for s in series:
            values = np.maximum(np.asarray(s.samples_ns, dtype=np.float64), MIN_PLOT_NS)
            if s.weights is None:
                arrays.append(np.sort(values))
                weights.append(None)
                continue
            counts_of = np.asarray(s.weights, dtype=np.int64)
            order = np.argsort(values, kind="stable")
            values, counts_of = values[order], counts_of[order]
            keep = counts_of > 0
            arrays.append(values[keep])
            weights.append(counts_of[keep])

        def wakes(a: Any, w: Any) -> int:
            return len(a) if w is None else int(w.sum())

        filled = [a for a in arrays if len(a)]
        if not filled:
            raise ValueError("plot_distribution needs at least one non-empty series")
        lo_ns = min(float(a[0]) for a in filled)
        hi_ns = max(float(a[-1]) for a in filled)
        # Fixed margins: every distribution figure has the same furniture, and constrained
        # layout would cost a second draw of each of the dozens of figures of a catalogue.
        fig = plt_.figure(6.4, 2.35, constrained=False)
        fig.subplots_adjust(left=0.085, right=0.985, bottom=0.19, top=0.9, wspace=0.27)
        ax_hist, ax_ecdf = fig.subplots(1, 2)
        main = [(s, a, w) for s, a, w in zip(series, arrays, weights) if not s.dashed and len(a)]
        windows = [histogram_window(a) if w is None else _weighted_window(a, w) for _, a, w in main] or [(lo_ns, hi_ns)]
        win_lo, win_hi = min(w[0] for w in windows), max(w[1] for w in windows)
        edges = _bin_edges(np, win_lo, win_hi, max(wakes(a, w) for _, a, w in main) if main else 10)
        win_lo, win_hi = float(edges[0]), float(edges[-1])
        step = float(edges[1] / edges[0])
        overlay = len(main) > 1
        hist_lo, hist_hi = win_lo, win_hi
        for s, a, w in main:
            total = wakes(a, w)
            share, below, beyond = binned_shares(a, w, edges)
            ax_hist.stairs(
                share, edges / 1e3, fill=not overlay, alpha=0.55 if not overlay else 1.0, color=s.color,
                linewidth=1.2 if overlay else 0, label=plot_label(s.label),
            )
            for count, left, extreme, side in ((below, win_lo / step, float(a[0]), "below"), (beyond, win_hi, float(a[-1]), "beyond")):
                if not count:
                    continue
                ax_hist.bar(left / 1e3, count / total, width=(left * step - left) / 1e3, align="edge", color="none",
                            edgecolor=s.color, hatch="////", linewidth=0.8)
                ax_hist.annotate(
                    "%d wake%s %s\n%s" % (count, "" if count == 1 else "s", "down to" if side == "below" else "up to", format_ns(extreme)),
                    xy=((left * step ** 0.5) / 1e3, count / total), xytext=(0, 3), textcoords="offset points",
                    ha="right" if side == "beyond" else "left", va="bottom", fontsize=6.5, color="#444444",
                )
                if side == "below":
                    hist_lo = min(hist_lo, left)
                else:
                    hist_hi = max(hist_hi, left * step)
        ax_hist.set_xlabel("wake latency (µs, log scale)")
        ax_hist.set_ylabel("share of wakes")
        ax_hist.set_title("histogram", loc="left", color="#333333")
        for s, a, w in zip(series, arrays, weights):
            if not len(a):
                continue
            x, y = ecdf_points(a) if w is None else weighted_ecdf_points(a, w)
            ax_ecdf.plot(
                np.concatenate([[x[0]], x]) / 1e3, np.concatenate([[0.0], y]),
                drawstyle="steps-post", color=s.color, linewidth=1.3 if not s.dashed else 1.0,
                linestyle="--" if s.dashed else "-", label=plot_label(s.label),
            )
            if not s.dashed:
                for q, value, marker in ((0.5, s.p50_ns, "o"), (0.99, s.p99_ns, "D")):
                    if value is not None:
                        ax_ecdf.plot([max(value, MIN_PLOT_NS) / 1e3], [q], marker=marker, markersize=3.5,
                                     color=s.color, linestyle="none", zorder=3)
        ax_ecdf.set_ylim(0, 1.02)
        ax_ecdf.set_yticks([0, 0.25, 0.5, 0.75, 0.9, 1.0])
        ax_ecdf.set_yticklabels(["0", "", "0.5", "", "0.9", "1"])
        ax_ecdf.set_xlabel("wake latency (µs, log scale)")
        ax_ecdf.set_ylabel("fraction of wakes ≤ x")
        ax_ecdf.set_title("ECDF", loc="left", color="#333333")
        if marks and main:
            for value in (main[0][0].p50_ns, main[0][0].p99_ns):
                if value is not None:
                    hist_lo, hist_hi = min(hist_lo, max(value, MIN_PLOT_NS)), max(hist_hi, max(value, MIN_PLOT_NS))
        _log_axis(ax_hist, hist_lo / 1e3, hist_hi / 1e3)
        _log_axis(ax_ecdf, lo_ns / 1e3, hi_ns / 1e3)
        if marks and main:
            first = main[0][0]
            for ax, top in ((ax_hist, 0.98), (ax_ecdf, 0.98)):
                if first.p50_ns is not None:
                    _mark(ax, max(first.p50_ns, MIN_PLOT_NS) / 1e3, "p50 " + format_ns(first.p50_ns), top)
                if first.p99_ns is not None:
                    _mark(ax, max(first.p99_ns, MIN_PLOT_NS) / 1e3, "p99 " + format_ns(first.p99_ns), top - 0.12)
        if len(series) > 1:
            ax_ecdf.legend(loc="lower right", handlelength=1.6)
        return figure_to_svg(fig, "wakelab latency distribution: histogram and ECDF", id_prefix)


# --- SVG post-processing ----------------------------------------------------------------

_TAG = re.compile(r"<[^<>]+>")
_ID_ATTR = re.compile(r'\sid="([^"]*)"')
_REFERENCE = re.compile(r'(url\(#|xlink:href="#|href="#)([^)"]+)')
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def figure_to_svg(fig: Any, aria_label: str, id_prefix: str) -> str:
    """``fig`` as an SVG fragment fit to inline in HTML: no prolog, no metadata, unique ids.

    Within a tag no attribute value holds ``<``, ``>`` or ``"`` (matplotlib
    escapes them), and text content holds no ``<`` or ``>``: so the tag
    pattern below matches tags only, never evidence text drawn in the figure.
    """
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = _METADATA.sub("", svg)
    prefix = id_prefix
    referenced = set(m.group(2) for m in _REFERENCE.finditer(svg))

    def fix_tag(match: "re.Match[str]") -> str:
        tag = match.group(0)

        def fix_id(m: "re.Match[str]") -> str:
            return ' id="%s%s"' % (prefix, m.group(1)) if m.group(1) in referenced else ""

        tag = _ID_ATTR.sub(fix_id, tag)
        return _REFERENCE.sub(lambda m: m.group(1) + prefix + m.group(2), tag)

    svg = _TAG.sub(fix_tag, svg)
    # Accessible name; the text is ours, never evidence, but escape it all the same.
    import html

    svg = svg.replace("<svg ", '<svg role="img" aria-label="%s" ' % html.escape(aria_label, quote=True), 1)
    return _compact(svg)


_NUMBER = re.compile(r"(\d+\.\d)\d+")
_TOKEN = re.compile(r"<[^<>]+>|[^<]+")
_NO_ROTATION = re.compile(r' transform="rotate\(-?0 [^"]*\)"')


def _compact(svg: str) -> str:
    """The same picture in fewer bytes.

    Coordinates are cut to 1/10 pt (a third of a pixel on a 2x screen), the newlines matplotlib puts inside
    paths and the indentation between tags go, as do zero rotations and the
    attribute-less ``<g>`` wrappers matplotlib nests every artist in.  Text
    content (where evidence may appear) is never changed.
    """
    out: List[str] = []
    groups: List[bool] = []  # per open <g>: was it kept?
    for token in _TOKEN.findall(svg):
        if token.startswith("<"):
            if token == "<g>":
                groups.append(False)
                continue
            if token == "</g>":
                if groups.pop():
                    out.append(token)
                continue
            if token.startswith("<g ") and not token.endswith("/>"):
                groups.append(True)
            token = _NUMBER.sub(lambda m: m.group(1), token.replace(" \n", " ").replace("\n", " "))
            token = _NO_ROTATION.sub("", token)
        elif not token.strip():
            continue  # indentation between tags
        out.append(token)
    return "".join(out)


__all__: List[str] = [
    "PlottingUnavailable",
    "Series",
    "binned_shares",
    "ecdf_points",
    "histogram_window",
    "weighted_ecdf_points",
    "figure_to_svg",
    "plot_distribution",
    "plot_label",
]
