"""``--format json``: the validated summary.json (a grid: matrix.json) in its canonical form.

The same text :func:`wakelab.evidence.bundle.dumps` writes (sorted keys,
two-space indent, trailing newline), so exporting a bundle's summary gives
back its file byte for byte, and any field this wakelab does not know yet is
passed through unchanged.  A grid's export is its matrix.json, validated the
same way; each cell's summary is ``wakelab export GRID/cells/<cell> -f json``.
"""

from __future__ import annotations

from wakelab.evidence.bundle import dumps
from wakelab.export.base import one_file_exporter

EXPORTER = one_file_exporter("json", "the validated summary.json (a grid: matrix.json), canonical form", ".summary.json",
                             lambda run: dumps(run.summary), lambda grid: dumps(grid.matrix), grid_suffix=".matrix.json")
