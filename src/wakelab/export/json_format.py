"""``--format json``: the validated summary.json (a grid: matrix.json) in its canonical form.

The same text :func:`wakelab.evidence.bundle.dumps` writes (sorted keys,
two-space indent, trailing newline), so exporting a bundle's summary gives
back its file byte for byte, and any field this wakelab does not know yet is
passed through unchanged.  A grid's export is its matrix.json, validated the
same way; each cell's summary is ``wakelab export GRID/cells/<cell> -f json``.
"""

from __future__ import annotations

from wakelab.evidence.bundle import dumps
from wakelab.export.base import Evidence, Export, ExportedFile, Exporter, Grid, missing_cell_notes


def serialize(evidence: Evidence) -> Export:
    return Export(files=(ExportedFile(evidence.name + ".summary.json", dumps(evidence.summary)),))


def serialize_grid(grid: Grid) -> Export:
    return Export(files=(ExportedFile(grid.name + ".matrix.json", dumps(grid.matrix)),), notes=missing_cell_notes(grid))


EXPORTER = Exporter(
    name="json",
    help="the validated summary.json (a grid: matrix.json), canonical form",
    serialize=serialize,
    serialize_grid=serialize_grid,
)
