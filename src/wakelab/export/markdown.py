"""``--format markdown``: GitHub-flavoured tables, like hyperfine's ``--export-markdown``.

Latency arms first (times in µs, the unit in each header), then rate arms,
then any arm that produced no figures with its status and reason.  Every
string that comes from the evidence is escaped, so a summary.json cannot
break the table (``|``) or inject markup (``<b>``, ``*``, ``[link](...)``)
into the page that shows it.
"""

from __future__ import annotations

import re
from typing import Any, List, Mapping, Optional, Sequence

from wakelab.export.base import Evidence, Export, ExportedFile, Exporter, arm_entries
from wakelab.analysis.caveats import NativeRatio, native_ratios
from wakelab.formatting import DASH, format_rate, format_ratio, format_us

# ASCII punctuation that means something inline in GFM; a backslash makes it literal.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]|~!#])")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
# Arm names (``[a-z0-9-]``) and arm.component names are safe inside a code span.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,200}")


def escape(text: Optional[object]) -> str:
    """``text`` as literal table-cell content: no markup, no cell break, one line.

    >>> escape("a|b <b>x</b> *y*")
    'a\\\\|b &lt;b&gt;x&lt;/b&gt; \\\\*y\\\\*'
    """
    if text is None:
        return DASH
    value = _CONTROL.sub(" ", str(text)).strip()
    value = "".join(_HTML.get(ch, ch) for ch in value)
    value = _MARKDOWN_SPECIALS.sub(r"\\\1", value)
    return value or DASH


def code(name: object) -> str:
    """A name in a code span, as hyperfine writes commands; anything unusual is escaped instead."""
    text = str(name)
    if _PLAIN_NAME.fullmatch(text):
        return "`%s`" % text
    return escape(text)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> List[str]:
    """A GFM table; the first ``left`` columns are left-aligned, the rest right-aligned."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join(":---" if i < left else "---:" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _mean_pm_stdev(stats: Mapping[str, Any]) -> str:
    mean, stdev = stats.get("mean_ns"), stats.get("stdev_ns")
    if mean is None:
        return DASH
    if stdev is None:
        return format_us(mean)
    return "%s ± %s" % (format_us(mean), format_us(stdev))


def _latency_cells(stats: Mapping[str, Any]) -> List[str]:
    return [
        str(stats.get("n", DASH)),
        str(stats.get("lost", DASH)),
        format_us(stats.get("min_ns")),
        format_us(stats.get("p50_ns")),
        format_us(stats.get("p90_ns")),
        format_us(stats.get("p99_ns")),
        format_us(stats.get("p99_9_ns")),
        format_us(stats.get("max_ns")),
        _mean_pm_stdev(stats),
    ]


def native_cell(ratio: Optional[NativeRatio]) -> str:
    """A "vs C" cell: the ratio, marked *nearest floor* unless the floor is the same experiment."""
    if ratio is None:
        return DASH
    text = format_ratio(ratio.ratio)
    return text if ratio.interpreter_share else "%s (nearest floor)" % text


NATIVE_NOTE = (
    "_vs C_: the arm's figure over its C floor's, both from this run (for rates: how many times faster C is). "
    "A plain ratio has the same experiment in C (same scope, waiter state and t1) and is the interpreter's share; "
    "one marked _nearest floor_ is against the closest C experiment there is, which differs, so it is not."
)


def latency_table(arms: Sequence[Mapping[str, Any]], ratios: Mapping[str, NativeRatio]) -> List[str]:
    show_native = any(str(a.get("name")) in ratios for a in arms)
    header = ["Arm", "Family", "Waiter", "Scope", "n", "Lost", "Min [µs]", "p50 [µs]", "p90 [µs]", "p99 [µs]",
              "p99.9 [µs]", "Max [µs]", "Mean ± σ [µs]"]
    if show_native:
        header.append("p50 vs C")
    rows: List[List[str]] = []
    for entry in arms:
        head = [code(entry.get("name")), escape(entry.get("family")), escape(entry.get("waiter")), escape(entry.get("scope"))]
        row = head + _latency_cells(entry["latency"])
        if show_native:
            row.append(native_cell(ratios.get(str(entry.get("name")))))
        rows.append(row)
        components: Mapping[str, Any] = entry.get("components") or {}
        for name in sorted(components):
            sub = [code("%s.%s" % (entry.get("name"), name)), "", "", ""] + _latency_cells(components[name])
            if show_native:
                sub.append("")
            rows.append(sub)
    return format_table(header, rows, left=4)


def rate_table(arms: Sequence[Mapping[str, Any]], ratios: Mapping[str, NativeRatio]) -> List[str]:
    show_native = any(str(a.get("name")) in ratios for a in arms)
    header = ["Arm", "Family", "Ops per round", "Rounds", "Median ops/s", "Slowest ops/s", "Fastest ops/s",
              "Empty loop ops/s", "Net ns/op"]
    if show_native:
        header.append("C is faster by")
    rows: List[List[str]] = []
    for entry in arms:
        rate: Mapping[str, Any] = entry["rate"]
        net = rate.get("net_ns_per_op")
        row = [
            code(entry.get("name")),
            escape(entry.get("family")),
            format_rate(rate.get("n_per_round")),
            str(rate.get("rounds", DASH)),
            format_rate(rate.get("ops_per_s")),
            format_rate(rate.get("min_ops_per_s")),
            format_rate(rate.get("max_ops_per_s")),
            format_rate(rate.get("baseline_ops_per_s")),
            "%.1f" % net if isinstance(net, (int, float)) else DASH,
        ]
        if show_native:
            row.append(native_cell(ratios.get(str(entry.get("name")))))
        rows.append(row)
    return format_table(header, rows, left=2)


def not_measured_table(arms: Sequence[Mapping[str, Any]]) -> List[str]:
    rows = [[code(a.get("name")), escape(a.get("status")), escape(a.get("reason"))] for a in arms]
    return format_table(["Arm", "Status", "Reason"], rows, left=3)


def format_markdown(evidence: Evidence) -> str:
    """The run's arms as GitHub-flavoured Markdown tables."""
    arms = arm_entries(evidence)
    ratios = native_ratios(evidence.summary)
    latency = [a for a in arms if a.get("latency")]
    rate = [a for a in arms if not a.get("latency") and a.get("rate")]
    rest = [a for a in arms if not a.get("latency") and not a.get("rate")]
    tables = [table for table in (
        latency_table(latency, ratios) if latency else None,
        rate_table(rate, ratios) if rate else None,
        not_measured_table(rest) if rest else None,
    ) if table]
    if not tables:
        return "_This run has no arms._\n"
    if any(str(a.get("name")) in ratios for a in latency + rate):
        tables.append([NATIVE_NOTE])
    return "\n\n".join("\n".join(table) for table in tables) + "\n"


def serialize(evidence: Evidence) -> Export:
    return Export(files=(ExportedFile(evidence.name + ".md", format_markdown(evidence)),))


EXPORTER = Exporter(name="markdown", help="GitHub-flavoured Markdown tables, latency in µs", serialize=serialize)
