"""``matrix.txt``: a grid of runs side by side, one table per arm (stdlib only).

Each latency arm's cells are set against the first cell that measured it, at
p50 and at p99; a cell whose p99 got worse by more than the noise band is
marked as a tail regression whatever its p50 did (:func:`ratio_tone`, the
rule the HTML report colours its ratios by, is defined here so that both
renderers judge alike).

Strings from the matrix document are escaped as in summary.txt
(:func:`wakelab.formatting.escape_text`): no control character is printed.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

from wakelab.analysis.caveats import NativeRatio, native_ratio
from wakelab.evidence.model import Interpreter
from wakelab.evidence.words import grid_state_word, status_word
from wakelab.formatting import DASH, escape_text, format_rate, format_ratio, format_us
from wakelab.report.text import NATIVE_LEGEND, format_native_cell, format_table, wrap


# How far a ratio must move from 1 before it is called a change: the noise band the ratios of one
# figure to another are judged with (10%, either way).  Without intervals in the evidence this is
# the only yardstick there is; it is applied to p50 and p99 alike.
RATIO_NOISE = 1.1
# The mark of a cell whose tail got worse (matrix.txt), beside its p50 ratio.
TAIL_MARK = "!"


@dataclasses.dataclass(frozen=True)
class RatioTone:
    """How a p50 ratio (this run over the baseline) is judged, given its p99 ratio beside it.

    ``css`` is ``slower`` (red), ``faster`` (green) or ``""`` (no colour);
    ``tail_worse`` is true when the p99 got worse beyond :data:`RATIO_NOISE`,
    whatever the p50 did: such a ratio is a regression, shown with the p99
    ratio.  Green needs both: p50 faster beyond the noise, and a p99 known
    and not worse beyond it.
    """

    css: str
    tail_worse: bool
    why: str


def ratio_tone(p50_ratio: Optional[float], p99_ratio: Optional[float]) -> RatioTone:
    """The judgement of a p50 ratio, with its p99 ratio (see :class:`RatioTone`).

    >>> ratio_tone(0.56, 220.0).css, ratio_tone(0.56, 1.0).css, ratio_tone(0.56, None).css
    ('slower', 'faster', '')
    """
    tail_worse = p99_ratio is not None and p99_ratio > RATIO_NOISE
    if p50_ratio is None:
        return RatioTone("slower" if tail_worse else "", tail_worse, "the p99 got worse" if tail_worse else "")
    if tail_worse and p50_ratio <= RATIO_NOISE:
        what = "p50 %s but p99 %s" % (format_ratio(p50_ratio), format_ratio(p99_ratio))
        return RatioTone("slower", True, "%s: the tail got worse" % what)
    # Both slower: a tail regression of its own only where the p99 grew beyond the p50's growth (a whole
    # distribution shifted up is "slower", not a tail that got worse).
    if tail_worse and p99_ratio is not None and p99_ratio > p50_ratio * RATIO_NOISE:
        what = "p50 %s and p99 %s" % (format_ratio(p50_ratio), format_ratio(p99_ratio))
        return RatioTone("slower", True, "%s: the tail grew more than the median" % what)
    if p50_ratio > RATIO_NOISE:
        return RatioTone("slower", False, "p50 slower by more than %d%%" % round((RATIO_NOISE - 1) * 100))
    if p50_ratio < 1 / RATIO_NOISE:
        if p99_ratio is None:
            return RatioTone("", False, "p50 faster, but no p99 to show the tail did not get worse")
        return RatioTone("faster", False, "p50 faster and p99 not worse")
    return RatioTone("", False, "within %d%%" % round((RATIO_NOISE - 1) * 100))


def positive_ratio(value: Any, base: Any) -> Optional[float]:
    """``value / base`` for two positive finite figures, else None."""
    if not isinstance(value, (int, float)) or not isinstance(base, (int, float)) or isinstance(value, bool) or isinstance(base, bool):
        return None
    if not (math.isfinite(value) and math.isfinite(base)) or value <= 0 or base <= 0:
        return None
    return float(value) / float(base)


def _interpreter_cell(interp: Mapping[str, Any]) -> str:
    if not interp:
        return DASH
    return Interpreter.from_dict(interp).label


def format_matrix(doc: Mapping[str, Any]) -> str:
    """The whole matrix.txt for a matrix document, every string from it escaped (cells, headings, the whole)."""
    lab: Mapping[str, Any] = doc.get("lab") or {}
    cells: Sequence[Mapping[str, Any]] = doc.get("cells") or []
    out: List[str] = [
        escape_text("%s -- side by side" % (lab.get("title") or lab.get("id"))),
        escape_text("started %s · %d cells · %s" % (doc.get("started_utc"), len(cells), grid_state_word(doc.get("complete")))),
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
                    table.append([str(r.get("cell")), status_word(r.get("status")), "", "", "", ""])
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
            header = ["cell", "median ops/s", "slowest", "fastest", "vs first", "spread"]
            _add_native_column(header, table, arm_rows, ratios.get(str(name)) or {}, "C faster by")
            out += format_table(header, table)
            continue
        base_row = next((r for r in arm_rows if r.get("latency") and r["latency"].get("p50_ns")), None)
        base_lat: Mapping[str, Any] = (base_row or {}).get("latency") or {}
        table = []
        tails: List[str] = []
        for r in arm_rows:
            lat = r.get("latency") or {}
            if not lat:
                reason = r.get("reason")
                table.append([str(r.get("cell")), status_word(r.get("status")) + (": %s" % reason if reason else "")] + [""] * 9)
                continue
            p50_ratio = positive_ratio(lat.get("p50_ns"), base_lat.get("p50_ns"))
            p99_ratio = positive_ratio(lat.get("p99_ns"), base_lat.get("p99_ns"))
            tone = ratio_tone(p50_ratio, p99_ratio)
            p50_text = format_ratio(p50_ratio)
            if tone.tail_worse:
                p50_text += " " + TAIL_MARK
                tails.append("%s %s: %s (a tail regression against %s)." % (TAIL_MARK, r.get("cell"), tone.why, base_row.get("cell") if base_row else DASH))
            table.append(
                [
                    str(r.get("cell")),
                    str(lat.get("n")),
                    str(lat.get("lost")),
                    format_us(lat.get("min_ns")),
                    format_us(lat.get("p50_ns")),
                    format_us(lat.get("p90_ns")),
                    format_us(lat.get("p99_ns")),
                    format_us(lat.get("max_ns")),
                    p50_text,
                    format_ratio(p99_ratio),
                    _spread(r),
                ]
            )
        header = ["cell (µs)", "n", "lost", "min", "p50", "p90", "p99", "max", "p50 vs first", "p99 vs first", "spread"]
        _add_native_column(header, table, arm_rows, ratios.get(str(name)) or {}, "vs C p50")
        out += format_table(header, table)
        for line in tails:
            out += wrap(line, "  ")
    out += [""]
    if ratios:
        out += wrap(NATIVE_LEGEND, "")
        out += [""]
    out += wrap(
        "Each cell is a complete run with its own evidence in cells/<cell>/ (summary.txt there has its "
        "caveats and warnings). 'vs first' is a cell's figure over the first cell that measured the arm, at "
        "p50 and at p99; '%s' marks a cell whose p99 is worse than the first cell's by more than %d%%: a tail "
        "regression, whatever its p50 did (a p50 ratio below 1 there is no improvement). 'spread' is the largest "
        "median over the smallest: of the cell's repetitions (--repeat), or of its worker processes in a run "
        "without repetitions." % (TAIL_MARK, round((RATIO_NOISE - 1) * 100)),
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
