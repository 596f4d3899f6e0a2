"""A grid's "vs first" figures by arm and cell, as :func:`~wakelab.analysis.matrix.compare_matrix` computes them once for
matrix.txt, the HTML matrix and the Markdown export alike."""

from __future__ import annotations

from typing import Dict, NamedTuple, Tuple

from wakelab.analysis.matrix import MatrixRow, compare_matrix
from wakelab.evidence.model import Grid


class Versus(NamedTuple):
    """An arm's row in a cell, and whether that cell is the first that measured it (the one the others are set against)."""

    row: MatrixRow
    first: bool


def versus_first(grid: Grid) -> Dict[Tuple[str, str], Versus]:
    """Every arm's row in every cell of ``grid``'s matrix, by (arm name, cell label)."""
    return {(arm.name, row.cell): Versus(row, row.cell == arm.base_cell) for arm in compare_matrix(grid.matrix).arms for row in arm.rows}
