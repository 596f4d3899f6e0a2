"""``--format markdown``: GitHub-flavoured tables, like hyperfine's ``--export-markdown``.

Latency arms first, then rate arms, then any arm without figures with its status and reason.  Every string from the
evidence is escaped, so a summary.json cannot break the table (``|``) or inject markup (``<b>``, ``[link](...)``) into
the page that shows it.  Times are in µs (the unit in each header) with three significant digits, as the text summary
writes them; ops/s whole, with thousands separators: the exact figures are in summary.json and ``--format csv``.

A grid's export opens with its cells (a cell that never ran included), then a row per arm and cell, one arm's cells
together, led by the cell's label, its interpreter and every dimension that differs between the cells; each latency
row ends with its p50 and p99 over the arm's first cell (:mod:`wakelab.report.versus`), a tail regression "(worse)".
"""

from __future__ import annotations

import re
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from wakelab.export.base import one_file_exporter
from wakelab.analysis.caveats import NativeRatio
from wakelab.analysis.view import RunView, view_of
from wakelab.evidence.model import ArmRecord, Bundle, Grid, LatencyFigures
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
    """``text`` as literal table-cell content: no markup, no cell break, one line."""
    if text is None:
        return DASH
    value = "".join(_HTML.get(ch, ch) for ch in _CONTROL.sub(" ", str(text)).strip())
    return _MARKDOWN_SPECIALS.sub(r"\\\1", value) or DASH


def code(name: object) -> str:
    """A name in a code span, as hyperfine writes commands; anything unusual is escaped instead."""
    text = str(name)
    return "`%s`" % text if _PLAIN_NAME.fullmatch(text) else escape(text)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> List[str]:
    """A GFM table; the first ``left`` columns are left-aligned, the rest right-aligned."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join(":---" if i < left else "---:" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _latency_cells(stats: LatencyFigures) -> List[str]:
    mean, stdev = stats.mean_ns, stats.stdev_ns
    mean_text = DASH if mean is None else format_us(mean) if stdev is None else "%s ± %s" % (format_us(mean), format_us(stdev))
    return [str(stats.n), str(stats.lost)] + us_cells(stats)[:-1] + [mean_text]


NATIVE_NOTE = (
    "_vs C_: the arm's figure over its C floor's, both from this run (for rates: how many times faster C is). "
    "A plain ratio has the same experiment in C (same scope, waiter state and t1) and is the interpreter's share; "
    "one marked _nearest floor_ is against the closest C experiment there is, which differs, so it is not."
)
LATENCY_HEADER = ["n", "Lost", "Min [µs]", "p50 [µs]", "p90 [µs]", "p99 [µs]", "p99.9 [µs]", "Max [µs]", "Mean ± σ [µs]"]
RATE_HEADER = ["Ops per round", "Rounds", "Median ops/s", "Slowest ops/s", "Fastest ops/s", "Empty loop ops/s", "Net ns/op"]


class Row(NamedTuple):
    """A row of a table: the cells that lead it (the arm's identity; a grid's cell labels too), the arm's record, the "vs C"
    ratios of its run, and a grid's cell label."""

    lead: List[str]
    arm: ArmRecord
    ratios: Mapping[str, NativeRatio]
    cell: str = ""


def _has_native(rows: Sequence[Row]) -> bool:
    return any(row.arm.name in row.ratios for row in rows)


def figures_table(rows: Sequence[Row], lead_header: Sequence[str], trailing: Sequence[str] = (),
                  trailing_cells: Optional[Sequence[Sequence[str]]] = None) -> List[str]:
    """The latency arms' table (each component a row of its own), or the rate arms'; ``trailing`` adds columns at the
    end, ``trailing_cells`` their cells, one list per row."""
    latency = rows[0].arm.latency is not None
    native = (["p50 vs C"] if latency else ["C is faster by"]) if _has_native(rows) else []
    lines: List[List[str]] = []
    for row, extra in zip(rows, trailing_cells or [()] * len(rows)):
        arm, figures = row.arm, row.arm.latency or row.arm.rate
        assert figures is not None  # the rows of one table have figures of its kind
        cells = _latency_cells(figures) if isinstance(figures, LatencyFigures) else rate_cells(figures)
        lines.append(row.lead + cells + ([format_native_cell(row.ratios.get(arm.name))] if native else []) + list(extra))
        for name, component in arm.components if latency else ():
            lines.append([code("%s.%s" % (arm.name, name))] + [""] * (len(row.lead) - 1) + _latency_cells(component)
                         + [""] * (len(native) + len(trailing)))
    header = list(lead_header) + (LATENCY_HEADER if latency else RATE_HEADER) + native + list(trailing)
    return format_table(header, lines, left=len(lead_header))


def not_measured_table(rows: Sequence[Row], lead_header: Sequence[str]) -> List[str]:
    lines = [row.lead + [escape(row.arm.status), escape(row.arm.reason)] for row in rows]
    return format_table(list(lead_header) + ["Status", "Reason"], lines, left=len(lead_header) + 2)


def _kind_of(arm: ArmRecord) -> str:
    """Which table an arm goes in: ``latency``, ``rate``, or ``rest`` (no figures)."""
    if arm.latency is not None:
        return "latency"
    return "rate" if arm.rate is not None else "rest"


def arm_tables(rows: Sequence[Row], headers: Mapping[str, Sequence[str]], tables: Sequence[List[str]] = (),
               versus: Optional[Callable[[Sequence[Row]], List[List[str]]]] = None) -> str:
    """``tables``, then the latency arms' table (``versus`` gives its trailing "vs first" cells), the rate arms' and those
    of the arms without figures, each led by its header in ``headers``, and the note on "vs C" where one shows it."""
    by_kind: Dict[str, List[Row]] = {"latency": [], "rate": [], "rest": []}
    for row in rows:
        by_kind[_kind_of(row.arm)].append(row)
    latency, rate, rest = by_kind["latency"], by_kind["rate"], by_kind["rest"]
    tables = list(tables)
    if latency:
        tables.append(figures_table(latency, headers["latency"], *((VERSUS_HEADER, versus(latency)) if versus else ())))
    if rate:
        tables.append(figures_table(rate, headers["rate"]))
    if rest:
        tables.append(not_measured_table(rest, headers["rest"]))
    if not tables:
        return "_This run has no arms._\n"
    if _has_native(latency + rate):
        tables.append([NATIVE_NOTE])
    return "\n\n".join("\n".join(table) for table in tables) + "\n"


def format_markdown(run: Union[Bundle, RunView]) -> str:
    """The run's arms as GitHub-flavoured Markdown tables (``vs C`` from the run's analysis view)."""
    view = view_of(run)
    rows = []
    for arm in view.bundle.arms():
        kind = _kind_of(arm)
        lead = [code(arm.name)] + ([escape(arm.family)] if kind != "rest" else [])
        rows.append(Row(lead + ([escape(arm.waiter), escape(arm.scope)] if kind == "latency" else []), arm, view.native_ratios))
    return arm_tables(rows, {"latency": ["Arm", "Family", "Waiter", "Scope"], "rate": ["Arm", "Family"], "rest": ["Arm"]})


# Headers of the grid dimensions a Markdown table shows (python is the Interpreter column).
DIMENSION_HEADERS = {"placement": "Placement", "settle_us": "Settle [µs]", "cpu_threads": "Busy threads",
                     "cpu_procs": "Busy processes"}


def cells_table(grid: Grid) -> List[str]:
    """The grid's cells in the matrix's order (a cell that never ran too): label, interpreter, build, dimensions, complete."""
    dims = [d for d in grid.dimensions if d != "python"]
    header = ["Cell", "Interpreter", "Build"] + [DIMENSION_HEADERS.get(d) or escape(d) for d in dims] + ["Complete"]
    lines = []
    for cell in grid.cells:
        run = cell.bundle
        about = [escape(run.interpreter.label), escape(run.interpreter.build)] if run is not None else [DASH, DASH]
        lines.append([escape(cell.label)] + about + [escape(cell.dimensions.get(d)) for d in dims]
                     + [run.run_state.answer if run is not None else CELL_NOT_RUN])
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
    """A grid as Markdown (see the module's docstring): rows grouped by arm, in the order the arms first appear, led by
    the dimensions whose value differs between cells."""
    shown = [d for d in grid.dimensions
             if d != "python" and len({repr(cell.dimensions.get(d)) for cell in grid.with_evidence}) > 1]
    header = ["Arm", "Cell", "Interpreter"] + [DIMENSION_HEADERS.get(d) or escape(d) for d in shown]
    by_arm: Dict[str, List[Row]] = {}
    for cell in grid.with_evidence:
        ratios = view_of(cell.evidence).native_ratios
        lead = [escape(cell.label), escape(cell.evidence.interpreter.label)] + [escape(cell.dimensions.get(d)) for d in shown]
        for arm in cell.evidence.arms():
            by_arm.setdefault(arm.name, []).append(Row([code(arm.name)] + lead, arm, ratios, cell.label))
    rows = [row for arm_rows in by_arm.values() for row in arm_rows]
    return arm_tables(rows, dict.fromkeys(("latency", "rate", "rest"), header), [cells_table(grid)],
                      lambda latency: versus_cells(latency, versus_first(grid)))


EXPORTER = one_file_exporter("markdown", "GitHub-flavoured Markdown tables, times in µs to three significant digits (a grid: a table "
                             "of its cells, then a row per cell and arm, cell labels as columns, p50 and p99 vs the first cell)",
                             ".md", format_markdown, format_grid_markdown)
