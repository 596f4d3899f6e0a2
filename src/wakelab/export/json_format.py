"""``--format json``: the validated summary.json in its canonical form.

The same text :func:`wakelab.evidence.bundle.dumps` writes (sorted keys,
two-space indent, trailing newline), so exporting a bundle's summary gives
back its file byte for byte, and any field this wakelab does not know yet is
passed through unchanged.
"""

from __future__ import annotations

from wakelab.evidence.bundle import SUMMARY_JSON, dumps
from wakelab.export.base import Evidence, Export, ExportedFile, Exporter


def serialize(evidence: Evidence) -> Export:
    return Export(files=(ExportedFile(SUMMARY_JSON, dumps(evidence.summary)),))


EXPORTER = Exporter(name="json", help="the validated summary.json, canonical form", serialize=serialize)
