"""``--format csv``: one row per arm, for spreadsheets and data frames.

hyperfine's conventions: a header row of machine-friendly column names with the unit in the name, numbers without
thousands separators or unit suffixes, and an empty cell where a value does not exist (a rate arm has no percentiles;
p99.9 needs 1000 wakes; a skipped arm has no figures).

Each column has one fixed format, so that a data frame reads it as one type and no cell shows a float artefact
(``42741.39999999999``): counts, figures that are a measured sample or a whole number, and rates (``*ops_per_s``) are
integers; derived times in ns (percentiles, the mean and standard deviation, ``ns_per_op``) have exactly one decimal --
0.1 ns is far below the ~50 ns floor of ``perf_counter_ns()``, so no information is lost.  summary.json keeps the
unrounded figures; ``samples-csv`` has every wake.

A grid's CSV has one row per cell and arm, led by the cell's label, its value of each grid dimension and the interpreter
that measured it.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Dict, Iterable, List, Optional, Sequence

from wakelab.formatting import finite_number
from wakelab.evidence.model import ArmRecord, Bundle, Grid
from wakelab.export.base import one_file_exporter

ARM_COLUMNS = ("arm", "family", "kind", "waiter", "scope", "status", "native")
LATENCY_COLUMNS = ("n", "lost", "min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns", "stdev_ns")
RATE_COLUMNS = ("rounds", "n_per_round", "ops_per_s", "min_ops_per_s", "max_ops_per_s", "baseline_ops_per_s", "ns_per_op", "net_ns_per_op")
COLUMNS = ARM_COLUMNS + LATENCY_COLUMNS + RATE_COLUMNS
# The columns written as integers; every other figure column has one decimal.
INTEGER_COLUMNS = frozenset(("n", "lost", "min_ns", "max_ns", "rounds", "n_per_round", "ops_per_s", "min_ops_per_s", "max_ops_per_s",
                             "baseline_ops_per_s"))

# A spreadsheet runs a cell that starts with one of these as a formula; evidence strings are data, so such a cell gets
# a leading apostrophe (OWASP's advice).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def format_integer(value: Any) -> str:
    """A figure as a whole number (rounded half to even), ``""`` when it does not exist."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    number = finite_number(value)
    return "" if number is None else str(int(round(number)))


def format_decimal(value: Any, decimals: int = 1) -> str:
    """A figure with exactly ``decimals`` decimals, ``""`` when it does not exist."""
    number = finite_number(value)
    text = "" if number is None else "%.*f" % (decimals, number)
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.0"


def format_text(value: Optional[object]) -> str:
    """An evidence string as a CSV cell, defused if a spreadsheet would run it."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def format_value(value: Any) -> str:
    """A grid dimension's value (a string, an integer or null) as a cell."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else format_text(value)


def arm_row(arm: ArmRecord) -> List[str]:
    row = [format_text(v) for v in (arm.name, arm.family, arm.kind, arm.waiter, arm.scope, arm.status, arm.native)]
    figures = [(arm.latency, column) for column in LATENCY_COLUMNS] + [(arm.rate, column) for column in RATE_COLUMNS]
    return row + [(format_integer if column in INTEGER_COLUMNS else format_decimal)(getattr(of, column, None)) for of, column in figures]


def grid_label_columns(grid: Grid, taken: Sequence[str]) -> List[str]:
    """The label columns of a grid's rows: ``cell``, each dimension (``cell_`` before one already a column), ``interpreter``."""
    names = ["cell"]
    for dimension in grid.dimensions:
        names.append(format_text(dimension if dimension not in taken and dimension not in names else "cell_" + dimension))
    return names + ["interpreter"]


def grid_label_cells(grid: Grid) -> Dict[str, List[str]]:
    """Per cell label, the values of :func:`grid_label_columns`."""
    return {cell.label: [format_text(cell.label)] + [format_value(cell.dimensions.get(d)) for d in grid.dimensions]
            + [format_text(cell.evidence.interpreter.label)] for cell in grid.with_evidence}


def write_rows(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A header and rows as CSV text (``\\n`` line ends); ``rows`` may be a generator (the samples CSV streams its wakes)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def format_csv(evidence: Bundle) -> str:
    return write_rows(COLUMNS, (arm_row(arm) for arm in evidence.arms()))


def format_grid_csv(grid: Grid) -> str:
    labels = grid_label_cells(grid)
    return write_rows(grid_label_columns(grid, COLUMNS) + list(COLUMNS),
                      (labels[cell.label] + arm_row(arm) for cell in grid.with_evidence for arm in cell.evidence.arms()))


EXPORTER = one_file_exporter("csv", "one row per arm (a grid: per cell and arm, cell labels as columns); times in ns with one decimal, "
                             "counts and ops/s as integers", ".csv", format_csv, format_grid_csv)
