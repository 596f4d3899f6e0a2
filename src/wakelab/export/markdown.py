"""``--format markdown``: GitHub-flavoured tables, like hyperfine's ``--export-markdown``.

Latency arms first (times in µs, the unit in each header), then rate arms,
then any arm that produced no figures with its status and reason.  Every
string that comes from the evidence is escaped, so a summary.json cannot
break the table (``|``) or inject markup (``<b>``, ``*``, ``[link](...)``)
into the page that shows it.

Times are in µs with three significant digits (``110``, ``20.5``, ``2.10``:
never more than two decimals), as the text summary writes them; ops/s are
whole numbers with thousands separators.  The exact figures are in
summary.json and ``--format csv``.

A grid's export opens with its cells (label, interpreter, build, every
dimension, complete or not, a cell that never ran included), then tables
with a row per arm and cell, one arm's cells together, led by the cell's
label, its interpreter and every dimension that differs between the cells;
each latency row ends with its p50 and p99 over the arm's first cell
(:mod:`wakelab.report.versus`), a tail regression marked "(worse)".
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from wakelab.export.base import Evidence, Grid, one_file_exporter
from wakelab.analysis.caveats import NativeRatio
from wakelab.analysis.view import RunView, view_of
from wakelab.evidence.model import ArmRecord, LatencyFigures
from wakelab.evidence.words import CELL_NOT_RUN
from wakelab.formatting import DASH, format_ratio, format_us
from wakelab.report.lead import format_native_cell, rate_cells, us_cells
from wakelab.report.versus import Versus, versus_first

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


def _latency_cells(stats: LatencyFigures) -> List[str]:
    """n, lost, min ... max in µs, then mean ± σ."""
    mean, stdev = stats.mean_ns, stats.stdev_ns
    mean_text = DASH if mean is None else format_us(mean) if stdev is None else "%s ± %s" % (format_us(mean), format_us(stdev))
    return [str(stats.n), str(stats.lost)] + us_cells(stats)[:-1] + [mean_text]


NATIVE_NOTE = (
    "_vs C_: the arm's figure over its C floor's, both from this run (for rates: how many times faster C is). "
    "A plain ratio has the same experiment in C (same scope, waiter state and t1) and is the interpreter's share; "
    "one marked _nearest floor_ is against the closest C experiment there is, which differs, so it is not."
)


# A row of a table: the cells that lead it (the arm's identity; for a grid, its cell's labels
# too), the arm's record, and the "vs C" ratios of the run it comes from.
class Row(NamedTuple):
    lead: List[str]
    arm: ArmRecord
    ratios: Mapping[str, NativeRatio]
    cell: str = ""  # a grid's: the cell's label


def _has_native(rows: Sequence[Row]) -> bool:
    return any(row.arm.name in row.ratios for row in rows)


def latency_table(rows: Sequence[Row], lead_header: Sequence[str],
                  trailing: Optional[Tuple[Sequence[str], Sequence[Sequence[str]]]] = None) -> List[str]:
    """The latency arms' table; ``trailing`` adds columns at the end: (headers, one list of cells per row)."""
    show_native = _has_native(rows)
    header = list(lead_header) + ["n", "Lost", "Min [µs]", "p50 [µs]", "p90 [µs]", "p99 [µs]",
                                  "p99.9 [µs]", "Max [µs]", "Mean ± σ [µs]"]
    if show_native:
        header.append("p50 vs C")
    extra_header, extra_cells = trailing if trailing is not None else ((), [()] * len(rows))
    header += list(extra_header)
    lines: List[List[str]] = []
    for (lead, arm, ratios, _), extra in zip(rows, extra_cells):
        assert arm.latency is not None  # the latency table's rows have latency figures
        row = list(lead) + _latency_cells(arm.latency)
        if show_native:
            row.append(format_native_cell(ratios.get(arm.name)))
        lines.append(row + list(extra))
        for name, component in arm.components:
            sub = [code("%s.%s" % (arm.name, name))] + [""] * (len(lead) - 1) + _latency_cells(component)
            if show_native:
                sub.append("")
            lines.append(sub + [""] * len(extra_header))
    return format_table(header, lines, left=len(lead_header))


def rate_table(rows: Sequence[Row], lead_header: Sequence[str]) -> List[str]:
    show_native = _has_native(rows)
    header = list(lead_header) + ["Ops per round", "Rounds", "Median ops/s", "Slowest ops/s", "Fastest ops/s",
                                  "Empty loop ops/s", "Net ns/op"]
    if show_native:
        header.append("C is faster by")
    lines: List[List[str]] = []
    for lead, arm, ratios, _ in rows:
        rate = arm.rate
        assert rate is not None  # the rate table's rows have rate figures
        row = list(lead) + rate_cells(rate)
        if show_native:
            row.append(format_native_cell(ratios.get(arm.name)))
        lines.append(row)
    return format_table(header, lines, left=len(lead_header))


def not_measured_table(rows: Sequence[Row], lead_header: Sequence[str]) -> List[str]:
    lines = [list(lead) + [escape(arm.status), escape(arm.reason)] for lead, arm, _, _ in rows]
    return format_table(list(lead_header) + ["Status", "Reason"], lines, left=len(lead_header) + 2)


def _kind_of(arm: ArmRecord) -> str:
    """Which table an arm goes in: ``latency``, ``rate``, or ``rest`` (no figures)."""
    if arm.latency is not None:
        return "latency"
    return "rate" if arm.rate is not None else "rest"


def join_tables(tables: Sequence[List[str]], with_native_note: bool) -> str:
    if not tables:
        return "_This run has no arms._\n"
    tables = list(tables) + ([[NATIVE_NOTE]] if with_native_note else [])
    return "\n\n".join("\n".join(table) for table in tables) + "\n"


def format_markdown(run: Union[Evidence, RunView]) -> str:
    """The run's arms as GitHub-flavoured Markdown tables (``vs C`` from the run's analysis view)."""
    view = view_of(run)
    evidence = view.bundle
    ratios = view.native_ratios
    by_kind: Dict[str, List[Row]] = {"latency": [], "rate": [], "rest": []}
    for arm in evidence.arms():
        kind = _kind_of(arm)
        lead = [code(arm.name)]
        if kind != "rest":
            lead.append(escape(arm.family))
        if kind == "latency":
            lead += [escape(arm.waiter), escape(arm.scope)]
        by_kind[kind].append(Row(lead, arm, ratios))
    tables = [table for table in (
        latency_table(by_kind["latency"], ["Arm", "Family", "Waiter", "Scope"]) if by_kind["latency"] else None,
        rate_table(by_kind["rate"], ["Arm", "Family"]) if by_kind["rate"] else None,
        not_measured_table(by_kind["rest"], ["Arm"]) if by_kind["rest"] else None,
    ) if table]
    return join_tables(tables, _has_native(by_kind["latency"] + by_kind["rate"]))


# Headers of the grid dimensions a Markdown table shows (python is the Interpreter column).
DIMENSION_HEADERS = {"placement": "Placement", "settle_us": "Settle [µs]", "cpu_threads": "Busy threads",
                     "cpu_procs": "Busy processes"}


def grid_lead_header(grid: Grid) -> Tuple[List[str], List[str]]:
    """The lead header of a grid's tables, and the dimensions shown: those whose value differs between cells."""
    shown = [
        d for d in grid.dimensions
        if d != "python" and len({repr(cell.dimensions.get(d)) for cell in grid.with_evidence}) > 1
    ]
    return ["Arm", "Cell", "Interpreter"] + [DIMENSION_HEADERS.get(d) or escape(d) for d in shown], shown


def cells_table(grid: Grid) -> List[str]:
    """The grid's cells in the matrix's order (a cell that never ran too): label, interpreter, build, dimensions, complete."""
    dims = [d for d in grid.dimensions if d != "python"]
    header = ["Cell", "Interpreter", "Build"] + [DIMENSION_HEADERS.get(d) or escape(d) for d in dims] + ["Complete"]
    lines = []
    for cell in grid.cells:
        shown = [escape(cell.dimensions.get(d)) for d in dims]
        if cell.bundle is None:
            lines.append([escape(cell.label), DASH, DASH] + shown + [CELL_NOT_RUN])
            continue
        interpreter = cell.bundle.interpreter
        lines.append([escape(cell.label), escape(interpreter.label), escape(interpreter.build)] + shown
                     + [cell.bundle.run_state.answer])
    return format_table(header, lines, left=len(header))


VERSUS_HEADER = ("p50 vs first", "p99 vs first")


def versus_cells(rows: Sequence[Row], compared: Mapping[Tuple[str, str], Versus]) -> List[List[str]]:
    """Per latency row of a grid (its cell's label second in its lead), its p50 and p99 over the first cell's that measured
    the arm ("first" for that one); a tail regression (:func:`~wakelab.analysis.matrix.ratio_tone`) is marked "(worse)",
    so a cell whose p50 improved while its tail got worse does not read as a win."""
    out: List[List[str]] = []
    for row in rows:
        versus = compared.get((row.arm.name, row.cell))
        if versus is None or versus.first:
            out.append(["first", "first"] if versus is not None else [DASH, DASH])
            continue
        p99 = versus.row.p99_ratio
        out.append([format_ratio(versus.row.p50_ratio), DASH if p99 is None else format_ratio(p99) + (" (worse)" if versus.row.tone.tail_worse else "")])
    return out


def format_grid_markdown(grid: Grid) -> str:
    """A grid as Markdown (see the module's docstring): rows grouped by arm, in the order the arms first appear."""
    header, shown = grid_lead_header(grid)
    order: List[str] = []
    by_arm: Dict[str, List[Row]] = {}
    for cell in grid.with_evidence:
        ratios = view_of(cell.evidence).native_ratios
        lead = [escape(cell.label), escape(cell.evidence.interpreter.label)] + [
            escape(cell.dimensions.get(d)) for d in shown]
        for arm in cell.evidence.arms():
            if arm.name not in by_arm:
                order.append(arm.name)
                by_arm[arm.name] = []
            by_arm[arm.name].append(Row([code(arm.name)] + lead, arm, ratios, cell.label))
    by_kind: Dict[str, List[Row]] = {"latency": [], "rate": [], "rest": []}
    for name in order:
        for row in by_arm[name]:
            by_kind[_kind_of(row[1])].append(row)
    tables = [table for table in (
        cells_table(grid),
        latency_table(by_kind["latency"], header, (VERSUS_HEADER, versus_cells(by_kind["latency"], versus_first(grid)))) if by_kind["latency"] else None,
        rate_table(by_kind["rate"], header) if by_kind["rate"] else None,
        not_measured_table(by_kind["rest"], header) if by_kind["rest"] else None,
    ) if table]
    return join_tables(tables, _has_native(by_kind["latency"] + by_kind["rate"]))


EXPORTER = one_file_exporter("markdown", "GitHub-flavoured Markdown tables, times in µs to three significant digits (a grid: a table "
                             "of its cells, then a row per cell and arm, cell labels as columns, p50 and p99 vs the first cell)",
                             ".md", format_markdown, format_grid_markdown)
