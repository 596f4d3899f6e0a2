"""A grid's "vs first" figures by arm and cell: :func:`~wakelab.analysis.matrix.compare_matrix` (matrix.txt's) run over
each cell's own records, once for the HTML matrix and the Markdown export alike."""

from __future__ import annotations

from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from wakelab.analysis.matrix import MatrixRow, compare_matrix
from wakelab.evidence.matrix import MatrixDoc, MatrixEntry
from wakelab.evidence.model import Grid, LatencyFigures, RateFigures
from wakelab.formatting import DASH, format_rate, format_ratio, format_us


class Versus(NamedTuple):
    """An arm's row in a cell, and whether that cell is the first that measured it (the one the others are set against)."""

    row: MatrixRow
    first: bool


def versus_first(grid: Grid) -> Dict[Tuple[str, str], Versus]:
    """Every arm's row in every cell of ``grid`` that ran, by (arm name, cell label)."""
    entries: Dict[str, List[MatrixEntry]] = {}
    for cell in grid.with_evidence:
        for arm in cell.evidence.arms():
            spread = arm.spread.max_over_min if arm.spread is not None else None
            entries.setdefault(arm.name, []).append(MatrixEntry(cell.label, arm, spread or None))
    return versus_of(entries)


def versus_of(entries: Mapping[str, Sequence[MatrixEntry]]) -> Dict[Tuple[str, str], Versus]:
    """Each arm's ``entries`` (its record in each cell, in cell order) compared, by (arm name, cell label)."""
    doc = MatrixDoc("", None, False, (), tuple((name, tuple(rows)) for name, rows in entries.items()), None)
    return {(arm.name, row.cell): Versus(row, row.cell == arm.base_cell) for arm in compare_matrix(doc).arms for row in arm.rows}


def spread_text(value: Optional[float]) -> str:
    return format_ratio(value) if value else DASH


def matrix_figures(lat: LatencyFigures) -> List[str]:
    """A latency arm's figures in a matrix row: n, lost, then min, p50, p90, p99 and max (µs)."""
    return [str(lat.n), str(lat.lost)] + [format_us(v) for v in (lat.min_ns, lat.p50_ns, lat.p90_ns, lat.p99_ns, lat.max_ns)]


def matrix_rate_figures(rate: RateFigures, row: MatrixRow) -> List[str]:
    """A rate arm's figures in a matrix row: median, slowest and fastest ops/s, the median over the first cell's, the spread."""
    return [format_rate(v) for v in (rate.ops_per_s, rate.min_ops_per_s, rate.max_ops_per_s)] + [
        format_ratio(row.rate_ratio), spread_text(row.entry.spread)]
