"""A grid's "vs first" figures by arm and cell: :func:`~wakelab.analysis.matrix.compare_matrix` (matrix.txt's) run over
each cell's own records, once for the HTML matrix and the Markdown export alike."""

from __future__ import annotations

from typing import Dict, List, Mapping, NamedTuple, Sequence, Tuple

from wakelab.analysis.matrix import MatrixRow, compare_matrix
from wakelab.evidence.matrix import MatrixDoc, MatrixEntry
from wakelab.evidence.model import Grid


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
