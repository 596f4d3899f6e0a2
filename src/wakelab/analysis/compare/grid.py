"""Grids: every cell of a grid folder (matrix.json and cells/*) against a baseline cell, across the dimensions the
grid varies."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

from wakelab.analysis.compare.comparable import across_name_of_condition, compact
from wakelab.analysis.compare.records import DEFAULT_SETTINGS, Run, RunComparison, Settings
from wakelab.analysis.compare.runs import compare_runs
from wakelab.errors import EvidenceError
from wakelab.evidence.model import Grid

# A grid's dimensions (matrix.json) -> the --across name that compares them.
GRID_DIMENSIONS = {"python": "interpreter", "placement": "placement", "settle_us": "settle",
                   "cpu_threads": "cpu-threads", "cpu_procs": "cpu-procs", "idle_hold": "idle-hold",
                   "switch_interval_s": "switch-interval", "mode": "mode"}


def grid_across(grid: Grid) -> Tuple[str, ...]:
    """The --across names of the dimensions whose values differ between ``grid``'s cells (every cell, run or not)."""
    values: Dict[str, Set[str]] = {}
    for cell in grid.cells:
        for key, value in cell.dimensions.items():
            values.setdefault(str(key), set()).add(compact(value))
    names = (GRID_DIMENSIONS.get(key) or across_name_of_condition(key) for key in sorted(values) if len(values[key]) > 1)
    return tuple(dict.fromkeys(name for name in names if name is not None))


def compare_grid(grid: Grid, baseline_cell: Optional[str] = None, settings: Settings = DEFAULT_SETTINGS,
                 across: Sequence[str] = ()) -> Tuple[Run, List[RunComparison], List[Tuple[str, str]]]:
    """Every cell of ``grid`` against ``baseline_cell`` (default: the first), across the grid's dimensions.  Returns
    the baseline run, one comparison per other cell with evidence, and the cells not compared with why. EvidenceError
    when the baseline cell does not exist or has no evidence."""
    base = grid.cell(baseline_cell) if baseline_cell is not None else grid.cells[0]
    if base.bundle is None:
        raise EvidenceError("%s: the baseline cell %s has %s: choose another with --baseline-cell" % (
            grid.source, base.label, base.why_missing))
    names = tuple(dict.fromkeys(list(grid_across(grid)) + list(across)))
    others = [cell for cell in grid.cells if cell is not base]
    comparisons = [compare_runs(base.bundle, cell.bundle, settings, names) for cell in others if cell.bundle is not None]
    return base.bundle, comparisons, [(cell.label, str(cell.why_missing)) for cell in others if cell.bundle is None]
