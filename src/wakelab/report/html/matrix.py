"""A grid's matrix: its cells, then each arm cell by cell with its p50 and p99 over the first cell's."""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple

from wakelab.evidence.words import CELL_NOT_RUN, grid_state_word, status_word
from wakelab.formatting import DASH, format_ratio
from wakelab.analysis.matrix import RATIO_NOISE, positive_ratio
from wakelab.report.versus import Versus, matrix_figures, matrix_rate_figures, spread_text, versus_first
from wakelab.evidence.model import ArmRecord, Grid, GridCell
from wakelab.report.html.common import esc, _plain, _run_state, table
from wakelab.report.html.runs import _ratio_html
from wakelab.report.html.page import _section


# Headers of the grid dimensions in the cells table (python is the interpreter column).
GRID_DIMENSION_TITLES = {"placement": "placement", "settle_us": "settle µs", "cpu_threads": "busy threads",
                         "cpu_procs": "busy processes"}


def render_grid_matrix(grid: Grid) -> str:
    """A grid as matrix.txt lays it out: its cells, then one table per arm with a row per cell, from each cell's own
    records in the matrix's cell order ("vs first": :mod:`wakelab.report.versus`)."""
    dims = [d for d in grid.dimensions if d != "python"]
    head = "".join("<th>%s</th>" % esc(GRID_DIMENSION_TITLES.get(d, d)) for d in dims)
    rows = []
    for cell in grid.cells:
        state, css = (CELL_NOT_RUN, "bad") if cell.bundle is None else _run_state(cell.bundle)
        interp = cell.bundle.interpreter.label if cell.bundle is not None else DASH
        rows.append('<tr><th scope="row">%s</th><td>%s</td>%s<td><span class="badge %s">%s</span></td></tr>' % (
            esc(cell.label), esc(interp), "".join("<td>%s</td>" % esc(DASH if cell.dimensions.get(d) is None else _plain(cell.dimensions.get(d))) for d in dims), css, esc(state)))
    out = [
        '<p class="meta"><code>%s</code> · %s · started %s · %d cells · %s</p>' % (
            esc(grid.source), esc(grid.lab.name), esc(grid.started_utc), len(grid.cells), grid_state_word(grid.complete)),
        table("cells", "Cells (each a complete run with its own evidence in cells/&lt;cell&gt;/)",
              "<th>cell</th><th>interpreter</th>%s<th>state</th>" % head, "".join(rows)),
    ]
    records = [c.bundle.arms_by_name() if c.bundle is not None else {} for c in grid.cells]
    compared = versus_first(grid)
    for name in dict.fromkeys(n for by_name in records for n in by_name):
        arms = [(v, by_name.get(name), compared.get((name, v.label))) for v, by_name in zip(grid.cells, records)]
        rate = next((a.kind for _, a, _ in arms if a is not None), "latency") == "rate"
        out.append(_matrix_table(name, arms, *(_RATE if rate else _LATENCY)))
    out.append(
        '<p class="muted">vs first: the cell\'s figure over the first cell that measured the arm. Green needs the p50 '
        "faster by more than 10% and the p99 not worse; a p99 worse by more than 10% is drawn red with its ratio, "
        "even when the p50 got faster. Spread: the largest median over the smallest, of the cell's repetitions "
        "(--repeat), or of its worker processes in a run without repetitions.</p>")
    return "".join(out)


def _latency_cells(arm: ArmRecord, compared: Versus) -> Optional[List[str]]:
    lat = arm.latency if arm.ok and arm.p50_ns is not None else None
    if lat is None:
        return None
    p50_ratio, p99_ratio = compared.row.p50_ratio, compared.row.p99_ratio
    figures = [esc(f) for f in matrix_figures(lat)]
    figures[1], figures[3] = '<span class="warn">%s</span>' % figures[1] if lat.lost else "0", "<b>%s</b>" % figures[3]
    if compared.first:
        figures += ['<span class="muted">first</span>', '<span class="muted">first</span>']
    else:
        p99_css = "" if p99_ratio is None else ("slower" if p99_ratio > RATIO_NOISE else "faster" if p99_ratio < 1 / RATIO_NOISE else "")
        figures += [_ratio_html(p50_ratio, p99_ratio) if p50_ratio is not None else DASH,
                    '<span class="ratio %s">%s</span>' % (p99_css, esc(format_ratio(p99_ratio)))]
    return figures + [esc(spread_text(compared.row.entry.spread))]


def _rate_cells(arm: ArmRecord, compared: Versus) -> Optional[List[str]]:
    rate = arm.rate if arm.ok else None
    if rate is None or positive_ratio(rate.ops_per_s, 1.0) is None:
        return None
    figures = [esc(f) for f in matrix_rate_figures(rate, compared.row)]
    figures[0] = "<b>%s</b>" % figures[0]
    return figures


CellsOf = Callable[[ArmRecord, Versus], Optional[List[str]]]
# Each kind of arm's table: its class, caption, header and the cells of a row (None: the cell has no figures).
_LATENCY: Tuple[str, str, Tuple[str, ...], CellsOf] = (
    "matrix", "<b>%s</b> (µs)", ("n", "lost", "min", "p50", "p90", "p99", "max", "p50 vs first", "p99 vs first", "spread"),
    _latency_cells)
_RATE: Tuple[str, str, Tuple[str, ...], CellsOf] = (
    "matrix rate", "<b>%s</b> (rate arm: higher is faster)", ("median ops/s", "slowest", "fastest", "vs first", "spread"), _rate_cells)


def _matrix_table(name: str, arms: Sequence[Tuple[GridCell, Optional[ArmRecord], Optional[Versus]]],
                  css: str, caption: str, heads: Sequence[str], cells: CellsOf) -> str:
    """An arm's table: a row per cell, its figures or why it has none."""
    rows = []
    for view, arm, compared in arms:
        figures = cells(arm, compared) if arm is not None and compared is not None else None
        if figures is None:
            why = CELL_NOT_RUN if view.bundle is None else "not in this cell" if arm is None else "%s%s" % (
                status_word(arm.status), ": %s" % arm.reason if arm.reason else "")
            rows.append('<tr class="not-ok"><th scope="row">%s</th><td class="status muted" colspan="%d">%s</td></tr>' % (
                esc(view.label), len(heads), esc(why)))
        else:
            rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(view.label), "".join('<td class="num">%s</td>' % f for f in figures)))
    return table(css, caption % esc(name), "<th>cell</th>" + "".join("<th>%s</th>" % h for h in heads), "".join(rows),
                 ' data-arm="%s"' % esc(name))


def _grid_sections(grids: Sequence[Grid], toc: List[Tuple[str, str]]) -> List[str]:
    return [
        _section("matrix-%d" % i if len(grids) > 1 else "matrix", "Grid matrix" + (" %d" % i if len(grids) > 1 else ""),
                 render_grid_matrix(grid), toc)
        for i, grid in enumerate(grids, 1)
    ]
