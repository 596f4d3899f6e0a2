"""Exports: the evidence of a run in other tools' formats.

One module per format, each exposing an ``EXPORTER`` behind the interface in
:mod:`wakelab.export.base` (as hyperfine keeps one exporter per file behind
one ``serialize``): ``csv_format``, ``markdown``, ``json_format`` and
``pyperf_format``.  Adding a format is one module plus one line in
:data:`EXPORTERS`.

Analysis side: these modules import only the standard library at the top;
a format that needs a third-party package (pyperf) imports it inside its
``serialize``.  Nothing here prints; :func:`write_export` writes atomically
and raises :class:`wakelab.errors.OutputError`.
"""

from __future__ import annotations

import os
from typing import Dict, List

from wakelab.errors import OutputError, UsageError
from wakelab.export import csv_format, json_format, markdown, pyperf_format
from wakelab.export.base import Evidence, Export, ExportedFile, Exporter, load_evidence

EXPORTERS: Dict[str, Exporter] = {
    exporter.name: exporter
    for exporter in (csv_format.EXPORTER, markdown.EXPORTER, json_format.EXPORTER, pyperf_format.EXPORTER)
}

__all__ = [
    "EXPORTERS", "Evidence", "Export", "ExportedFile", "Exporter",
    "get_exporter", "load_evidence", "write_export", "default_folder",
]


def get_exporter(name: str) -> Exporter:
    try:
        return EXPORTERS[name]
    except KeyError:
        raise UsageError("unknown export format %r (valid: %s)" % (name, ", ".join(EXPORTERS))) from None


def default_folder(evidence: Evidence, exporter: Exporter) -> str:
    """Where a per-arm format writes when no folder is given: ``./<run-folder>-<format>``."""
    return "%s-%s" % (evidence.name, exporter.name)


def write_export(export: Export, exporter: Exporter, destination: str) -> List[str]:
    """Write ``export`` to ``destination``; returns the paths written.

    A one-document format writes the file ``destination``; a per-arm format
    writes its files into the folder ``destination`` (created if needed,
    files of the same names replaced).  Nothing is written before the whole
    export has been serialized, and the files are written all or none: each
    to a temporary file first, renamed into place only when every one is
    whole, so a full disk or an I/O error leaves no partial or half-new set
    (and a folder this call created is removed again).
    """
    from wakelab.evidence.bundle import atomic_write_files

    created = False
    try:
        if exporter.per_arm:
            if not os.path.isdir(destination):
                os.makedirs(destination)
                created = True
            paths = [os.path.join(destination, f.name) for f in export.files]
        else:
            if os.path.isdir(destination):
                raise OutputError("cannot write %s: it is a folder (give a file name with -o)" % destination)
            paths = [destination]
        atomic_write_files({path: exported.text for path, exported in zip(paths, export.files)})
    except OSError as exc:
        if created:
            try:
                os.rmdir(destination)
            except OSError:
                pass
        raise OutputError("cannot write %s: %s (choose another path with -o)" % (destination, exc.strerror or exc)) from None
    return paths
