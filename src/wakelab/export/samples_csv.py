"""``--format samples-csv``: every counted wake, one row each, in the long ("tidy") form pandas and R expect for raw
data, so that ``pd.read_csv(path)`` gives a frame ready for ``groupby("arm")``.

Columns: ``arm``; ``worker``, which worker process measured the wake, from 0, in the order summary.json lists the arm's
workers (empty when the run does not say: an in-process run, or per-worker counts that do not add up to the samples);
``repetition``, from 0 (a worker's ``repetition`` in summary.json, else 0); ``wake``, the wake's index from 0 among its
worker's counted wakes (the arm's, when ``worker`` is empty), in measured order; ``latency_ns``, ``t1 - t0`` in integer
nanoseconds, exactly as measured.

Lost wakes have no latency and are not rows (summary.json counts them); rate arms time rounds, not wakes, and are left
out with a note; a wake's components stay in ``samples/<arm>.json``.  A grid's file leads each row with the cell's
labels, as ``--format csv`` does.
"""

from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

from wakelab.evidence.model import ArmRecord, Bundle, Grid
from wakelab.export.base import Export, ExportedFile, Exporter, missing_cell_notes, worker_spans
from wakelab.export.csv_format import format_text, grid_label_cells, grid_label_columns, write_rows

COLUMNS = ("arm", "worker", "repetition", "wake", "latency_ns")
SUFFIX = ".samples.csv"


def worker_slices(arm: ArmRecord, total: int) -> List[Tuple[Optional[int], int, int, int]]:
    """``(worker, repetition, start, stop)`` of each worker's wakes in the pooled series of ``total``; one slice with no
    worker when summary.json's per-worker counts do not add up to ``total`` (:func:`~wakelab.export.base.worker_spans`)."""
    spans = worker_spans(arm, total)
    if spans is None or arm.workers is None:
        return [(None, 0, 0, total)]
    return [(index, _repetition(arm.workers[index].repetition), start, stop) for index, start, stop in spans]


def _repetition(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def sample_rows(evidence: Bundle, arm: ArmRecord) -> Iterator[List[str]]:
    """The rows of one measured latency arm (its samples checked against the summary's n)."""
    values = evidence.latency_samples(arm).samples_ns
    name = format_text(arm.name)
    for worker, repetition, start, stop in worker_slices(arm, len(values)):
        shown = "" if worker is None else str(worker)
        for wake in range(stop - start):
            yield [name, shown, str(repetition), str(wake), str(int(values[start + wake]))]


def _arms(evidence: Bundle, where: str) -> Tuple[List[ArmRecord], List[str]]:
    """The arms with wakes to write, and a note for each one without."""
    arms: List[ArmRecord] = []
    notes: List[str] = []
    rates = []
    for arm in evidence.arms():
        if not arm.is_latency:
            rates.append(arm.name)
        elif not arm.measured or not arm.samples_file:
            notes.append("%sarm %s has no samples: %s%s" % (where, arm.name, arm.status, " (%s)" % " ".join(arm.reason.split()) if arm.reason else ""))
        else:
            arms.append(arm)
    if rates:
        notes.append("%srate arms time rounds, not wakes, and are not in the samples CSV: %s" % (where, ", ".join(rates)))
    return arms, notes


def serialize(evidence: Bundle) -> Export:
    arms, notes = _arms(evidence, "")
    text = write_rows(COLUMNS, (row for arm in arms for row in sample_rows(evidence, arm)))
    return Export(files=(ExportedFile(evidence.name + SUFFIX, text),), notes=tuple(notes))


def serialize_grid(grid: Grid) -> Export:
    """A grid's wakes: the rows of every cell, each led by the cell's labels."""
    labels = grid_label_cells(grid)
    selected = [(cell, _arms(cell.evidence, "cell %s: " % cell.label)) for cell in grid.with_evidence]
    rows = (labels[cell.label] + row for cell, (arms, _) in selected for arm in arms for row in sample_rows(cell.evidence, arm))
    text = write_rows(grid_label_columns(grid, COLUMNS) + list(COLUMNS), rows)
    notes = tuple(note for _, (_, cell_notes) in selected for note in cell_notes)
    return Export(files=(ExportedFile(grid.name + SUFFIX, text),), notes=missing_cell_notes(grid) + notes)


EXPORTER = Exporter("samples-csv", "every wake, one row each: arm, worker, repetition, wake, latency_ns (a grid: cell labels first)",
                    serialize, serialize_grid)
