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
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.formatting import format_ns, format_ratio

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#999999")
PYTHON_COLOR = "#0072B2"
NATIVE_COLOR = "#E69F00"
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
    """One latency distribution to draw: raw samples (ns) and its reported percentiles."""

    label: str
    samples_ns: Sequence[int]
    p50_ns: Optional[float]
    p99_ns: Optional[float]
    color: str = PYTHON_COLOR
    dashed: bool = False  # components of a wake are drawn dashed, on the ECDF only


@dataclasses.dataclass(frozen=True)
class NativePair:
    """A Python arm's p50 beside the p50 of the same experiment in C."""

    arm: str
    native: str
    p50_ns: float
    native_p50_ns: float


@dataclasses.dataclass(frozen=True)
class RunFigures:
    """One run's p50 and p99 (ns) per arm, for the comparison of runs."""

    label: str
    figures: Mapping[str, Tuple[Optional[float], Optional[float]]]
    color: str = PYTHON_COLOR


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
    for a single run, dashed component series drawn on the ECDF only.  Both
    panels share the x range.  With ``marks``, p50 and p99 of the first
    series are drawn as labelled lines; every series gets p50/p99 markers on
    its ECDF.
    """
    with _Plotting() as plt_:
        np = plt_.np
        arrays = [np.sort(np.maximum(np.asarray(s.samples_ns, dtype=np.float64), MIN_PLOT_NS)) for s in series]
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
        main = [(s, a) for s, a in zip(series, arrays) if not s.dashed and len(a)]
        edges = _bin_edges(np, lo_ns, hi_ns, max(len(a) for _, a in main) if main else 10)
        overlay = len(main) > 1
        for s, a in main:
            counts, _ = np.histogram(a, bins=edges)
            share = counts / len(a)
            ax_hist.stairs(
                share, edges / 1e3, fill=not overlay, alpha=0.55 if not overlay else 1.0, color=s.color,
                linewidth=1.2 if overlay else 0, label=plot_label(s.label),
            )
        ax_hist.set_xlabel("wake latency (µs, log scale)")
        ax_hist.set_ylabel("share of wakes")
        ax_hist.set_title("histogram", loc="left", color="#333333")
        for s, a in zip(series, arrays):
            if not len(a):
                continue
            x, y = ecdf_points(a)
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
        for ax in (ax_hist, ax_ecdf):
            _log_axis(ax, lo_ns / 1e3, hi_ns / 1e3)
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


def plot_native_pairs(pairs: Sequence[NativePair], *, id_prefix: str) -> str:
    """Horizontal bars: each Python arm's p50 beside its native counterpart's, with the ratio (SVG)."""
    with _Plotting() as plt_:
        np = plt_.np
        rows = len(pairs)
        fig = plt_.figure(6.8, 0.9 + 0.42 * rows)
        ax = fig.subplots()
        y = np.arange(rows)[::-1].astype(float)
        height = 0.36
        python_us = np.array([p.p50_ns for p in pairs]) / 1e3
        native_us = np.array([p.native_p50_ns for p in pairs]) / 1e3
        ax.barh(y + height / 2, python_us, height, color=PYTHON_COLOR, label="Python arm p50")
        ax.barh(y - height / 2, native_us, height, color=NATIVE_COLOR, label="native (C) p50")
        top = float(max(python_us.max(), native_us.max())) if rows else 1.0
        for yi, p, py_us, c_us in zip(y, pairs, python_us, native_us):
            ratio = p.p50_ns / p.native_p50_ns if p.native_p50_ns else None
            ax.text(py_us + top * 0.01, yi + height / 2, "%s  (%s native)" % (format_ns(p.p50_ns), format_ratio(ratio)),
                    va="center", fontsize=7, color="#222222")
            ax.text(c_us + top * 0.01, yi - height / 2, format_ns(p.native_p50_ns), va="center", fontsize=7, color="#555555")
        ax.set_yticks(y)
        ax.set_yticklabels([plot_label("%s vs %s" % (p.arm, p.native)) for p in pairs])
        ax.set_xlim(0, top * 1.35)
        ax.set_xlabel("p50 wake latency (µs)")
        ax.grid(False, axis="y")
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
        return figure_to_svg(fig, "p50 of each Python arm beside its native counterpart", id_prefix)


def plot_run_comparison(arms: Sequence[str], runs: Sequence[RunFigures], *, id_prefix: str) -> str:
    """Per arm, each run's p50 (dot) to p99 (bar end) on a log axis, runs side by side (SVG)."""
    with _Plotting() as plt_:
        np = plt_.np
        n_runs = len(runs)
        row_height = 0.13 * n_runs + 0.16
        fig = plt_.figure(7.2, 1.0 + row_height * len(arms) + 0.18 * n_runs)
        ax = fig.subplots()
        # Each arm owns a band of height 1 (shaded every other arm); its runs sit inside it.
        spread = min(0.6, 0.2 * (n_runs - 1))
        offsets = np.linspace(-spread / 2, spread / 2, n_runs) if n_runs > 1 else np.zeros(1)
        for i in range(0, len(arms), 2):
            ax.axhspan(len(arms) - 1 - i - 0.5, len(arms) - 1 - i + 0.5, color="#f3f5f7", zorder=0, linewidth=0)
        lo, hi = float("inf"), 0.0
        for run, off in zip(runs, offsets):
            color = run.color
            label = plot_label(run.label)
            for i, arm in enumerate(arms):
                p50, p99 = run.figures.get(arm, (None, None))
                if p50 is None:
                    continue
                yi = len(arms) - 1 - i - off
                x50 = max(p50, MIN_PLOT_NS) / 1e3
                lo, hi = min(lo, x50), max(hi, x50)
                if p99 is not None:
                    x99 = max(p99, MIN_PLOT_NS) / 1e3
                    hi = max(hi, x99)
                    ax.plot([x50, x99], [yi, yi], color=color, linewidth=1.6, solid_capstyle="butt")
                    ax.plot([x99], [yi], marker="|", markersize=6, markeredgewidth=1.6, color=color)
                ax.plot([x50], [yi], marker="o", markersize=4, color=color, linestyle="none", label=label)
                label = "_nolegend_"
        ax.set_yticks(np.arange(len(arms))[::-1])
        ax.set_yticklabels([plot_label(a) for a in arms])
        ax.set_ylim(-0.5, len(arms) - 0.5)
        if hi > 0:
            _log_axis(ax, lo, hi)
        tall = len(arms) > 12
        if tall:  # time labels at the top as well, and the legend above them
            ax.tick_params(axis="x", labeltop=True, top=True)
        ax.grid(False, axis="y")
        ax.set_xlabel("wake latency (µs, log scale): dot = p50, bar end = p99")
        above = 0.25 / max(fig.get_figheight() - 1.0, 0.5) if tall else 0.0  # clear the top tick labels
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0 + above), handletextpad=0.3)
        return figure_to_svg(fig, "p50 and p99 of each arm, per run", id_prefix)


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


def figures_by_arm(summary: Mapping[str, Any]) -> Dict[str, Tuple[Optional[float], Optional[float]]]:
    """p50 and p99 (ns) of each measured latency arm of ``summary``."""
    out: Dict[str, Tuple[Optional[float], Optional[float]]] = {}
    for entry in summary.get("arms") or []:
        latency = entry.get("latency") if entry.get("status") == "ok" else None
        if latency and latency.get("p50_ns") is not None:
            out[str(entry["name"])] = (latency.get("p50_ns"), latency.get("p99_ns"))
    return out


__all__: List[str] = [
    "NativePair",
    "PlottingUnavailable",
    "RunFigures",
    "Series",
    "ecdf_points",
    "figure_to_svg",
    "figures_by_arm",
    "plot_distribution",
    "plot_native_pairs",
    "plot_run_comparison",
    "plot_label",
]
