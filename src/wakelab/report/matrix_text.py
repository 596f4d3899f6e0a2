"""``matrix.txt``: a grid of runs side by side, one table per arm (stdlib only).

Strings from the matrix document are escaped as in summary.txt
(:func:`wakelab.formatting.escape_text`): no control character is printed.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

from wakelab.analysis.caveats import NativeRatio, native_ratio
from wakelab.formatting import DASH, escape_text, format_rate, format_ratio, format_us
from wakelab.report.text import NATIVE_LEGEND, format_native_cell, format_table, wrap


def _interpreter_cell(interp: Mapping[str, Any]) -> str:
    if not interp:
        return DASH
    text = "%s %s" % (interp.get("implementation"), interp.get("version"))
    if interp.get("free_threaded_build"):
        text += " (free-threaded, GIL %s)" % ("on" if interp.get("gil_enabled") else "off")
    return text


def format_matrix(doc: Mapping[str, Any]) -> str:
    """The whole matrix.txt for a matrix document, every string from it escaped (cells, headings, the whole)."""
    lab: Mapping[str, Any] = doc.get("lab") or {}
    cells: Sequence[Mapping[str, Any]] = doc.get("cells") or []
    out: List[str] = [
        escape_text("%s -- side by side" % (lab.get("title") or lab.get("id"))),
        escape_text("started %s · %d cells · %s" % (doc.get("started_utc"), len(cells), "complete" if doc.get("complete") else "INCOMPLETE")),
        "",
        "CELLS",
    ]
    rows = []
    for cell in cells:
        dims: Mapping[str, Any] = cell.get("dimensions") or {}
        interp: Mapping[str, Any] = cell.get("interpreter") or {}
        rows.append(
            [
                str(cell.get("label")),
                _interpreter_cell(interp),
                str(interp.get("build", DASH)),
                str(dims.get("placement")),
                str(dims.get("settle_us")),
                str(dims.get("cpu_threads")),
                "yes" if cell.get("complete") else str(cell.get("status")),
            ]
        )
    out += format_table(["cell", "interpreter", "build", "placement", "settle µs", "cpu threads", "complete"], rows, align_left=4)
    out += _verdict(doc.get("verdict"))
    arms: Sequence[Mapping[str, Any]] = doc.get("arms") or []
    ratios = matrix_native_ratios(doc)
    for arm in arms:
        name, arm_rows = arm.get("name"), arm.get("rows") or []
        out += ["", escape_text(name)]
        kind = next((r.get("kind") for r in arm_rows if r.get("kind")), "latency")
        if kind == "rate":
            base = next((r["rate"]["ops_per_s"] for r in arm_rows if r.get("rate")), None)
            table = []
            for r in arm_rows:
                rate = r.get("rate") or {}
                if not rate:
                    table.append([str(r.get("cell")), str(r.get("status")), "", "", "", ""])
                    continue
                ops = rate.get("ops_per_s")
                table.append(
                    [
                        str(r.get("cell")),
                        format_rate(ops),
                        format_rate(rate.get("min_ops_per_s")),
                        format_rate(rate.get("max_ops_per_s")),
                        format_ratio(ops / base if base and ops else None),
                        _spread(r),
                    ]
                )
            header = ["cell", "median ops/s", "slowest", "fastest", "vs first", "worker spread"]
            _add_native_column(header, table, arm_rows, ratios.get(str(name)) or {}, "C faster by")
            out += format_table(header, table)
            continue
        base = next((r["latency"]["p50_ns"] for r in arm_rows if r.get("latency") and r["latency"].get("p50_ns")), None)
        table = []
        for r in arm_rows:
            lat = r.get("latency") or {}
            if not lat:
                reason = r.get("reason")
                table.append([str(r.get("cell")), str(r.get("status")) + (": %s" % reason if reason else "")] + [""] * 8)
                continue
            p50 = lat.get("p50_ns")
            table.append(
                [
                    str(r.get("cell")),
                    str(lat.get("n")),
                    str(lat.get("lost")),
                    format_us(lat.get("min_ns")),
                    format_us(p50),
                    format_us(lat.get("p90_ns")),
                    format_us(lat.get("p99_ns")),
                    format_us(lat.get("max_ns")),
                    format_ratio(p50 / base if base and p50 else None),
                    _spread(r),
                ]
            )
        header = ["cell (µs)", "n", "lost", "min", "p50", "p90", "p99", "max", "p50 vs first", "worker spread"]
        _add_native_column(header, table, arm_rows, ratios.get(str(name)) or {}, "vs C p50")
        out += format_table(header, table)
    out += [""]
    if ratios:
        out += wrap(NATIVE_LEGEND, "")
        out += [""]
    out += wrap(
        "Each cell is a complete run with its own evidence in cells/<cell>/ (summary.txt there has its "
        "caveats and warnings). 'worker spread' is the largest worker median over the smallest.",
        "",
    )
    return escape_text("\n".join(out), multiline=True) + "\n"


def _verdict(verdict: Any) -> List[str]:
    """The lab's own tables and sentences over the cells, laid out as the lab's analysis gave them."""
    if not isinstance(verdict, Mapping):
        return []
    out = ["", escape_text(str(verdict.get("title") or "VERDICT"))]
    for table in verdict.get("tables") or []:
        if not isinstance(table, Mapping) or not table.get("rows"):
            continue
        if table.get("title"):
            out += ["", "  " + escape_text(str(table["title"]))]
        header = [str(h) for h in table.get("header") or []]
        out += format_table(header, [[str(c) for c in row] for row in table["rows"]], align_left=3)
    out.append("")
    for sentence in verdict.get("sentences") or []:
        out += wrap(str(sentence), "  ")
    return out


def matrix_native_ratios(doc: Mapping[str, Any]) -> Dict[str, Dict[str, NativeRatio]]:
    """Per arm and cell, the arm against its C floor measured in the same cell.

    Uses the ``native`` and ``native_match`` that each row carries (matrix
    documents before 0.2 carry neither: no "vs C" then).
    """
    by_cell: Dict[str, Dict[str, Mapping[str, Any]]] = {}
    for arm in doc.get("arms") or []:
        for row in arm.get("rows") or []:
            by_cell.setdefault(str(row.get("cell")), {})[str(arm.get("name"))] = dict(row, name=arm.get("name"))
    ratios: Dict[str, Dict[str, NativeRatio]] = {}
    for cell, entries in by_cell.items():
        for name, entry in entries.items():
            ratio = native_ratio(entry, entries.get(str(entry.get("native")))) if entry.get("native") else None
            if ratio is not None:
                ratios.setdefault(name, {})[cell] = ratio
    return ratios


def _add_native_column(
    header: List[str], table: List[List[str]], rows: Sequence[Mapping[str, Any]], ratios: Mapping[str, NativeRatio], title: str
) -> None:
    """Append a "vs C" column when any of the arm's cells has a ratio (rows and table align)."""
    if not ratios:
        return
    header.append(title)
    for line, row in zip(table, rows):
        ratio: Optional[NativeRatio] = ratios.get(str(row.get("cell")))
        line.append(format_native_cell(ratio))


def _spread(row: Mapping[str, Any]) -> str:
    spread = row.get("spread") or {}
    value = spread.get("max_over_min")
    return format_ratio(value) if value else DASH
