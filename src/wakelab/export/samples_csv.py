"""``--format samples-csv``: every counted wake, one row each, in long ("tidy") form.

The layout pandas and R expect for raw data: one observation per row, one
variable per column, so ``pd.read_csv(path)`` or ``read.csv(path)`` gives a
frame ready for ``groupby("arm")`` / ``aggregate(latency_ns ~ arm)``:

``arm``
    the arm's name.
``worker``
    which worker process measured the wake, from 0, in the order summary.json
    lists the arm's workers (the samples file pools their wakes in that
    order).  Empty when the run does not say (an in-process run, or per-worker
    counts that do not add up to the samples).
``repetition``
    the repetition the wake belongs to, from 0: a worker's ``repetition`` in
    summary.json where the evidence records one, else 0 (a run of one
    repetition).
``wake``
    the wake's index, from 0, among its worker's counted wakes (among the
    arm's, when ``worker`` is empty), in the order they were measured.
``latency_ns``
    ``t1 - t0`` of the wake, in integer nanoseconds, exactly as measured.

Lost wakes have no latency and are not rows (summary.json counts them);
rate arms time rounds, not wakes, and are left out with a note; a wake's
components (``wakeup-fd-select``'s delivery and handler parts) stay in
``samples/<arm>.json``.  A grid's file starts each row with the cell's labels,
as ``--format csv`` does.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from wakelab.evidence.model import LATENCY, ArmRecord
from wakelab.export.base import Evidence, Export, ExportedFile, Exporter, Grid, missing_cell_notes, worker_spans
from wakelab.export.csv_format import format_text, grid_label_cells, grid_label_columns, write_rows

COLUMNS = ("arm", "worker", "repetition", "wake", "latency_ns")
SUFFIX = ".samples.csv"


def worker_slices(arm: ArmRecord, total: int) -> List[Tuple[Optional[int], int, int, int]]:
    """``(worker, repetition, start, stop)`` of each worker's wakes in the pooled series of ``total``.

    One slice with no worker when summary.json's per-worker counts do not add
    up to ``total`` (or there are none): see :func:`~wakelab.export.base.worker_spans`.
    """
    spans = worker_spans(arm, total)
    if spans is None or arm.workers is None:
        return [(None, 0, 0, total)]
    return [(index, _repetition(arm.workers[index].repetition), start, stop) for index, start, stop in spans]


def _repetition(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def sample_rows(evidence: Evidence, arm: ArmRecord) -> Iterator[List[str]]:
    """The rows of one measured latency arm (its samples checked against the summary's n)."""
    values = evidence.latency_samples(arm).samples_ns
    name = format_text(arm.name)
    for worker, repetition, start, stop in worker_slices(arm, len(values)):
        shown = "" if worker is None else str(worker)
        for wake in range(stop - start):
            yield [name, shown, str(repetition), str(wake), str(int(values[start + wake]))]


def _arms(evidence: Evidence, where: str) -> Tuple[List[ArmRecord], List[str]]:
    """The arms with wakes to write, and a note for each one without."""
    arms: List[ArmRecord] = []
    notes: List[str] = []
    rates = []
    for arm in evidence.arms():
        if arm.kind != LATENCY:
            rates.append(arm.name)
        elif not arm.measured or not arm.samples_file:
            notes.append("%sarm %s has no samples: %s%s" % (where, arm.name, arm.status, " (%s)" % " ".join(arm.reason.split()) if arm.reason else ""))
        else:
            arms.append(arm)
    if rates:
        notes.append("%srate arms time rounds, not wakes, and are not in the samples CSV: %s" % (where, ", ".join(rates)))
    return arms, notes


def format_samples_csv(evidence: Evidence) -> Tuple[str, List[str]]:
    """The run's wakes as CSV text, and notes on the arms left out."""
    arms, notes = _arms(evidence, "")
    return write_rows(COLUMNS, (row for arm in arms for row in sample_rows(evidence, arm))), notes


def format_grid_samples_csv(grid: Grid) -> Tuple[str, List[str]]:
    """A grid's wakes: the rows of every cell, each led by the cell's labels."""
    labels = grid_label_cells(grid)
    notes: List[str] = []
    selected = []
    for cell in grid.with_evidence:
        arms, cell_notes = _arms(cell.evidence, "cell %s: " % cell.label)
        selected.append((cell, arms))
        notes.extend(cell_notes)
    rows = (labels[cell.label] + row for cell, arms in selected for arm in arms for row in sample_rows(cell.evidence, arm))
    return write_rows(grid_label_columns(grid, COLUMNS) + list(COLUMNS), rows), notes


def serialize(evidence: Evidence) -> Export:
    text, notes = format_samples_csv(evidence)
    return Export(files=(ExportedFile(evidence.name + SUFFIX, text),), notes=tuple(notes))


def serialize_grid(grid: Grid) -> Export:
    text, notes = format_grid_samples_csv(grid)
    return Export(files=(ExportedFile(grid.name + SUFFIX, text),), notes=missing_cell_notes(grid) + tuple(notes))


EXPORTER = Exporter("samples-csv", "every wake, one row each: arm, worker, repetition, wake, latency_ns (a grid: cell labels first)",
                    serialize, serialize_grid)
