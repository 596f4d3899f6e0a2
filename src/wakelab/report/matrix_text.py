"""``matrix.txt``: a grid of runs side by side, one table per arm, laid out from :mod:`wakelab.analysis.matrix`'s
:class:`Matrix` (a tail that got worse is marked by :func:`ratio_tone`, the rule the HTML report colours by)."""

from __future__ import annotations

from typing import List, Mapping, Optional, Union

from wakelab.analysis.matrix import RATIO_NOISE, Matrix, MatrixArm, compare_matrix
from wakelab.evidence.matrix import MatrixVerdict
from wakelab.evidence.words import grid_state_word, status_word
from wakelab.formatting import DASH, escape_text, format_ratio
from wakelab.report.lead import NATIVE_LEGEND, format_native_cell
from wakelab.report.versus import matrix_figures, matrix_rate_figures, spread_text
from wakelab.report.text import format_table, wrap

# The mark of a cell whose tail got worse (matrix.txt), beside its p50 ratio.
TAIL_MARK = "!"


def format_matrix(doc: Union[Matrix, Mapping[str, object]]) -> str:
    """The whole matrix.txt for a matrix (or its document), every string from it escaped (cells, headings, the whole)."""
    matrix = doc if isinstance(doc, Matrix) else compare_matrix(doc)
    grid = matrix.doc
    out: List[str] = [
        escape_text("%s -- side by side" % grid.title),
        escape_text("started %s · %d cells · %s" % (grid.started_utc, len(grid.cells), grid_state_word(grid.complete))),
        "",
        "CELLS",
    ]
    rows = [
        [cell.label, cell.interpreter.label if cell.interpreter else DASH,
         DASH if cell.interpreter is None or cell.interpreter.build is None else str(cell.interpreter.build),
         cell.dimension("placement"), cell.dimension("settle_us"), cell.dimension("cpu_threads"),
         "yes" if cell.complete else cell.status]
        for cell in grid.cells
    ]
    out += format_table(["cell", "interpreter", "build", "placement", "settle µs", "cpu threads", "complete"], rows, align_left=4)
    out += _verdict(grid.verdict)
    for arm in matrix.arms:
        out += ["", escape_text(arm.name)]
        out += _rate_table(arm) if arm.kind == "rate" else _latency_table(arm)
    out += [""]
    if matrix.has_native:
        out += wrap(NATIVE_LEGEND, "")
        out += [""]
    out += wrap(
        "Each cell is a complete run with its own evidence in cells/<cell>/ (summary.txt there has its "
        "caveats and warnings). 'vs first' is a cell's figure over the first cell that measured the arm, at "
        "p50 and at p99; '%s' beside a p99 ratio marks a tail regression: a p99 more than %d%% worse than the first "
        "cell's, and by more than the p50 grew (a p50 ratio below 1 there is no improvement). 'spread' is the largest "
        "median over the smallest: of the cell's repetitions (--repeat), or of its worker processes in a run "
        "without repetitions." % (TAIL_MARK, round((RATIO_NOISE - 1) * 100)),
        "",
    )
    return escape_text("\n".join(out), multiline=True) + "\n"


def _rate_table(arm: MatrixArm) -> List[str]:
    table = []
    for row in arm.rows:
        rate = row.arm.rate
        if rate is None:
            table.append([row.cell, status_word(row.arm.status), "", "", "", ""])
            continue
        table.append([row.cell] + matrix_rate_figures(rate, row))
    header = ["cell", "median ops/s", "slowest", "fastest", "vs first", "spread"]
    _add_native_column(header, table, arm, "C faster by")
    return format_table(header, table)


def _latency_table(arm: MatrixArm) -> List[str]:
    table = []
    tails: List[str] = []
    for row in arm.rows:
        lat = row.arm.latency
        if lat is None:
            reason = row.arm.reason
            table.append([row.cell, status_word(row.arm.status) + (": %s" % reason if reason else "")] + [""] * 9)
            continue
        p99_text = format_ratio(row.p99_ratio)
        if row.tone.tail_worse:
            p99_text += " " + TAIL_MARK
            tails.append("%s %s: %s (a tail regression against %s)." % (TAIL_MARK, row.cell, row.tone.why, arm.base_cell or DASH))
        table.append([row.cell] + matrix_figures(lat) + [format_ratio(row.p50_ratio), p99_text, spread_text(row.entry.spread)])
    header = ["cell (µs)", "n", "lost", "min", "p50", "p90", "p99", "max", "p50 vs first", "p99 vs first", "spread"]
    _add_native_column(header, table, arm, "vs C p50")
    out = format_table(header, table)
    for line in tails:
        out += wrap(line, "  ")
    return out


def _verdict(verdict: Optional[MatrixVerdict]) -> List[str]:
    """The lab's own tables and sentences over the cells, laid out as the lab's analysis gave them."""
    if verdict is None:
        return []
    out = ["", escape_text(verdict.title)]
    for table in verdict.tables:
        if table.title:
            out += ["", "  " + escape_text(table.title)]
        out += format_table(list(table.header), [list(row) for row in table.rows], align_left=3)
    out.append("")
    for sentence in verdict.sentences:
        out += wrap(sentence, "  ")
    return out


def _add_native_column(header: List[str], table: List[List[str]], arm: MatrixArm, title: str) -> None:
    """Append a "vs C" column when any of the arm's cells has a ratio (rows and table align)."""
    if not arm.has_native:
        return
    header.append(title)
    for line, row in zip(table, arm.rows):
        line.append(format_native_cell(row.native))

