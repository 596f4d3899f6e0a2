"""Terminal histograms of wake latencies (``wakelab show RUN --hist``), laid out from
:class:`wakelab.analysis.histogram.Histogram` records.

One row per log bin, like cyclictest's histogram and ``pyperf hist``: the bin's range, its count and a bar; the bins
that hold p50 and p99 say so.  Three or more empty bins in a row (the gap between the body and a far outlier) fold
into one ``⋮`` row, so an outlier costs two rows, not twenty.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from wakelab.analysis.histogram import Histogram
from wakelab.formatting import escape_text, format_ns

BAR = "█"
# A bin with wakes gets at least this, so a lone outlier is seen.
THIN_BAR = "▏"
GAP = "⋮"
# This many empty bins in a row, or more, fold into one row.
FOLD_EMPTY = 3
MIN_BAR_WIDTH = 10


def _markers(hist: Histogram, index: int) -> str:
    marks = ["%s %s" % (name, format_ns(value)) for name, value in (("p50", hist.p50_ns), ("p99", hist.p99_ns))
             if value is not None and hist.bin_index(value) == index]
    return "◀ " + ", ".join(marks) if marks else ""


def _rows(hist: Histogram) -> List[Tuple[str, Optional[int], str]]:
    """(range label, count or None for a folded gap, marker) per row; ranges aligned on their dash."""
    bins = hist.bins
    ranges = [(format_ns(one.low_ns), format_ns(one.high_ns)) for one in bins]
    low_width = max([len(low) for low, _ in ranges] + [len("0 ns")])
    high_width = max([len(high) for _, high in ranges], default=0)
    rows: List[Tuple[str, Optional[int], str]] = []
    if hist.zero_count:
        rows.append(("0 ns".rjust(low_width), hist.zero_count, ""))
    i = 0
    while i < len(bins):
        j = i
        while j < len(bins) and bins[j].count == 0:
            j += 1
        if j - i >= FOLD_EMPTY:
            rows.append(("%s none from %s to %s" % (GAP, format_ns(bins[i].low_ns), format_ns(bins[j - 1].high_ns)), None, ""))
            i = j
            continue
        low, high = ranges[i]
        rows.append(("%s – %s" % (low.rjust(low_width), high.rjust(high_width)), bins[i].count, _markers(hist, i)))
        i += 1
    return rows


def format_histogram(title: str, hist: Histogram, width: int = 80) -> str:
    """One arm's histogram (``title``: the arm) as text lines, at most ``width`` columns where the bars allow."""
    header = [
        "%s: %d wakes, on log bins (%d per decade)" % (escape_text(title), hist.n, hist.bins_per_decade),
        "  min %s   p50 %s   p99 %s   max %s" % (
            format_ns(hist.min_ns), format_ns(hist.p50_ns),
            format_ns(hist.p99_ns) if hist.p99_ns is not None else "- (needs 100 wakes)", format_ns(hist.max_ns)),
    ]
    if hist.from_counters:
        import textwrap

        note = ("the histogram holds all %d wakes, read from the soak's log-linear histogram: each wake is binned at its "
                "counter's value, within %s of its own; p50 and p99 come from the same counters, as in summary.json%s" % (
                    hist.n, "%.2g%%" % (100 * hist.relative_error),  # no space: a wrapped line keeps it whole
                    " (the samples file keeps the first %d raw samples)" % hist.raw_kept if hist.raw_kept is not None else ""))
        header[1:1] = textwrap.wrap(note, width=max(40, width), initial_indent="  ", subsequent_indent="  ")
    rows = _rows(hist)
    label_width = max(len(label) for label, count, _ in rows if count is not None)
    count_width = max(len(str(count)) for _, count, _ in rows if count is not None)
    marker_width = max((len(marker) for _, _, marker in rows), default=0)
    used = 2 + label_width + 1 + count_width + 1 + (1 + marker_width if marker_width else 0)
    bar_width = max(MIN_BAR_WIDTH, width - used)
    top = max((count for _, count, _ in rows if count is not None), default=0)
    lines = list(header)
    for label, count, marker in rows:
        if count is None:
            lines.append("  " + label)
            continue
        length = round(count * bar_width / top) if top else 0
        bar = BAR * length if length else (THIN_BAR if count else "")
        line = "  %s %s %s" % (label.ljust(label_width), str(count).rjust(count_width), bar)
        if marker:
            line = "%s %s" % (line.ljust(used - marker_width - 1 + bar_width), marker)
        lines.append(line.rstrip())
    return "\n".join(lines) + "\n"


def format_histograms(sections: Sequence[Tuple[str, Histogram]], notes: Sequence[str] = (), width: int = 80) -> str:
    """Several arms' histograms, a blank line apart, then one line per note (escaped)."""
    parts = [format_histogram(title, hist, width) for title, hist in sections]
    text = "\n".join(parts)
    if notes:
        text += ("\n" if parts else "") + "".join("%s\n" % escape_text(note) for note in notes)
    return text
