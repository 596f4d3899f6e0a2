"""A grid's matrix: its cells, then each arm cell by cell with its p50 and p99 over the first cell's."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence, Tuple

from wakelab.evidence.words import CELL_NOT_RUN, grid_state_word, status_word
from wakelab.formatting import DASH, format_rate, format_ratio, format_us
# The rule a ratio is coloured by is matrix.txt's, so that the text and the page judge a tail alike.
from wakelab.report.matrix_text import RATIO_NOISE, positive_ratio
from wakelab.report.html.common import (
    _arms,
    _by_name,
    _dict,
    esc,
    interpreter_label,
    _latency,
    _p50,
    _plain,
    _run_state,
)
from wakelab.report.html.load import GridCellView, GridView
from wakelab.report.html.runs import _ratio_html
from wakelab.report.html.page import _section


# Headers of the grid dimensions in the cells table (python is the interpreter column).
GRID_DIMENSION_TITLES = {"placement": "placement", "settle_us": "settle µs", "cpu_threads": "busy threads",
                         "cpu_procs": "busy processes"}


def _cell_state(view: GridCellView) -> Tuple[str, str]:
    if view.run is None:
        return CELL_NOT_RUN, "bad"
    return _run_state(view.run.summary)


def render_grid_matrix(grid: GridView) -> str:
    """A grid as matrix.txt lays it out: its cells, then one table per arm with a row per cell.

    Figures come from each cell's own (validated) summary.json, in the
    matrix's cell order; "vs first" is a cell's figure over the first cell
    that measured the arm, its p50 coloured by :func:`ratio_tone` (a p99
    that got worse is drawn as a regression, whatever the p50 did).
    """
    matrix = grid.matrix
    lab = _dict(matrix.get("lab"))
    dims = [d for d in grid.dimensions if d != "python"]
    head = "".join("<th>%s</th>" % esc(GRID_DIMENSION_TITLES.get(d, d)) for d in dims)
    rows = []
    for view in grid.cells:
        state, css = _cell_state(view)
        interp = interpreter_label(view.run.summary) if view.run is not None else DASH
        rows.append('<tr><th scope="row">%s</th><td>%s</td>%s<td><span class="badge %s">%s</span></td></tr>' % (
            esc(view.label), esc(interp), "".join("<td>%s</td>" % esc(DASH if view.dimensions.get(d) is None else _plain(view.dimensions.get(d))) for d in dims), css, esc(state)))
    out = [
        '<p class="meta"><code>%s</code> · %s · started %s · %d cells · %s</p>' % (
            esc(grid.folder), esc(lab.get("title") or lab.get("id")), esc(matrix.get("started_utc")), len(grid.cells),
            grid_state_word(matrix.get("complete"))),
        '<div class="table-wrap"><table class="cells"><caption>Cells (each a complete run with its own evidence in '
        "cells/&lt;cell&gt;/)</caption><thead><tr><th>cell</th><th>interpreter</th>%s<th>state</th></tr></thead>"
        "<tbody>%s</tbody></table></div>" % (head, "".join(rows)),
    ]
    ran = [v for v in grid.cells if v.run is not None]
    names: List[str] = []
    for view in ran:
        assert view.run is not None
        names.extend(n for n in (str(a.get("name")) for a in _arms(view.run.summary)) if n not in names)
    for name in names:
        entries = [(v, _by_name(v.run.summary).get(name) if v.run is not None else None) for v in grid.cells]
        kind = next((str(e.get("kind")) for _, e in entries if e is not None), "latency")
        out.append(_matrix_rate_table(name, entries) if kind == "rate" else _matrix_latency_table(name, entries))
    out.append(
        '<p class="muted">vs first: the cell\'s figure over the first cell that measured the arm. Green needs the p50 '
        "faster by more than 10% and the p99 not worse; a p99 worse by more than 10% is drawn red with its ratio, "
        "even when the p50 got faster. Spread: the largest median over the smallest, of the cell's repetitions "
        "(--repeat), or of its worker processes in a run without repetitions.</p>")
    return "".join(out)


def _status_text(view: GridCellView, entry: Optional[Mapping[str, Any]]) -> str:
    if view.run is None:
        return CELL_NOT_RUN
    if entry is None:
        return "not in this cell"
    status = str(entry.get("status"))
    reason = entry.get("reason")
    return "%s%s" % (status_word(status), ": %s" % reason if reason else "")


def _spread_text(entry: Mapping[str, Any]) -> str:
    value = _dict(entry.get("spread")).get("max_over_min")
    return format_ratio(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else DASH


def _matrix_latency_table(name: str, entries: Sequence[Tuple[GridCellView, Optional[Mapping[str, Any]]]]) -> str:
    base_entry = next((e for _, e in entries if _p50(e) is not None), None)
    base = _latency(base_entry) if base_entry is not None else {}
    rows = []
    for view, entry in entries:
        lat = _latency(entry) if entry is not None else {}
        if entry is None or _p50(entry) is None:
            rows.append('<tr class="not-ok"><th scope="row">%s</th><td class="status muted" colspan="10">%s</td></tr>' % (
                esc(view.label), esc(_status_text(view, entry))))
            continue
        first = entry is base_entry
        p50_ratio = None if first else positive_ratio(lat.get("p50_ns"), base.get("p50_ns"))
        p99_ratio = None if first else positive_ratio(lat.get("p99_ns"), base.get("p99_ns"))
        figures = [esc(lat.get("n")), '<span class="warn">%s</span>' % esc(lat.get("lost")) if lat.get("lost") else "0"]
        figures += [esc(format_us(lat.get(k))) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")]
        figures[3] = "<b>%s</b>" % figures[3]
        if first:
            figures += ['<span class="muted">first</span>', '<span class="muted">first</span>']
        else:
            p99_css = "" if p99_ratio is None else ("slower" if p99_ratio > RATIO_NOISE else "faster" if p99_ratio < 1 / RATIO_NOISE else "")
            figures += [_ratio_html(p50_ratio, p99_ratio) if p50_ratio is not None else DASH,
                        '<span class="ratio %s">%s</span>' % (p99_css, esc(format_ratio(p99_ratio)))]
        figures.append(esc(_spread_text(entry)))
        rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(view.label), "".join('<td class="num">%s</td>' % f for f in figures)))
    head = "".join("<th>%s</th>" % h for h in ("n", "lost", "min", "p50", "p90", "p99", "max", "p50 vs first", "p99 vs first", "spread"))
    return ('<div class="table-wrap"><table class="matrix" data-arm="%s"><caption><b>%s</b> (µs)</caption><thead><tr><th>cell</th>%s</tr>'
            "</thead><tbody>%s</tbody></table></div>" % (esc(name), esc(name), head, "".join(rows)))


def _matrix_rate_table(name: str, entries: Sequence[Tuple[GridCellView, Optional[Mapping[str, Any]]]]) -> str:
    rates = [_dict(e.get("rate")).get("ops_per_s") if e is not None and e.get("status") == "ok" else None for _, e in entries]
    base = next((r for r in rates if positive_ratio(r, 1.0) is not None), None)
    rows = []
    for (view, entry), rate in zip(entries, rates):
        if entry is None or positive_ratio(rate, 1.0) is None:
            rows.append('<tr class="not-ok"><th scope="row">%s</th><td class="status muted" colspan="5">%s</td></tr>' % (
                esc(view.label), esc(_status_text(view, entry))))
            continue
        figures = _dict(entry.get("rate"))
        ratio = positive_ratio(rate, base)
        rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(view.label), "".join('<td class="num">%s</td>' % f for f in (
            "<b>%s</b>" % esc(format_rate(rate)), esc(format_rate(figures.get("min_ops_per_s"))), esc(format_rate(figures.get("max_ops_per_s"))),
            esc(format_ratio(ratio)), esc(_spread_text(entry))))))
    head = "".join("<th>%s</th>" % h for h in ("median ops/s", "slowest", "fastest", "vs first", "spread"))
    return ('<div class="table-wrap"><table class="matrix rate" data-arm="%s"><caption><b>%s</b> (rate arm: higher is faster)</caption>'
            "<thead><tr><th>cell</th>%s</tr></thead><tbody>%s</tbody></table></div>" % (esc(name), esc(name), head, "".join(rows)))


def _grid_sections(grids: Sequence[GridView], toc: List[Tuple[str, str]]) -> List[str]:
    """One section per grid given: its matrix (cells, then each arm cell by cell)."""
    return [
        _section("matrix-%d" % i if len(grids) > 1 else "matrix", "Grid matrix" + (" %d" % i if len(grids) > 1 else ""),
                 render_grid_matrix(grid), toc)
        for i, grid in enumerate(grids, 1)
    ]
