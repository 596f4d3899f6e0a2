"""Exports: the evidence of a run, or of a grid of runs, in other tools' formats.

One module per format, each an ``EXPORTER`` behind :mod:`wakelab.export.base`'s interface: adding a format is one module
plus one line in :data:`EXPORTERS`.  Without a destination an export goes beside its evidence (``RUN/export/``, pyperf's
``RUN/export/pyperf/``: docs/evidence.md); a destination is ``-`` (stdout), a folder to write into (an existing one, one
written with a trailing ``/``, or for pyperf any path not ending in ``.json``), or the file to write.

A format that needs a third-party package (pyperf) imports it inside its ``serialize``.  Nothing here prints:
:func:`write_export` writes atomically and raises :class:`wakelab.errors.OutputError`.
"""

from __future__ import annotations

import errno
import os
from typing import Dict, List, Optional

from wakelab.errors import OutputError, UsageError
from wakelab.export import csv_format, json_format, markdown, pyperf_format, samples_csv
from wakelab.evidence.bundle import EXPORT_DIR, atomic_write_files
from wakelab.export.base import Export, ExportedFile, Exporter, Source

EXPORTERS: Dict[str, Exporter] = {
    exporter.name: exporter
    for exporter in (csv_format.EXPORTER, samples_csv.EXPORTER, markdown.EXPORTER, json_format.EXPORTER,
                     pyperf_format.EXPORTER)
}

STDOUT = "-"

__all__ = [
    "EXPORTERS", "EXPORT_DIR", "STDOUT", "Export", "ExportedFile", "Exporter", "Source",
    "get_exporter", "write_export", "output_paths",
]


def get_exporter(name: str) -> Exporter:
    try:
        return EXPORTERS[name]
    except KeyError:
        raise UsageError("unknown export format %r (valid: %s)" % (name, ", ".join(EXPORTERS))) from None


def output_paths(export: Export, exporter: Exporter, destination: str) -> List[str]:
    """The paths ``export`` goes to for ``destination``: a folder to write into (see the module's docstring), or the one
    file to write (:class:`UsageError` for an export that is several files)."""
    into = os.path.isdir(destination) or destination.endswith(os.sep) or (os.altsep and destination.endswith(os.altsep))
    if into or (exporter.file_suffix is not None and not destination.endswith(exporter.file_suffix)):
        return [os.path.join(destination, f.name) for f in export.files]
    if len(export.files) != 1:
        raise UsageError("this export is %d files (%s ...): give a folder with -o, not the file %s" % (
            len(export.files), export.files[0].name, destination))
    return [destination]


def _make_folders(folder: str) -> List[str]:
    """Create ``folder`` and any missing parents; the folders created, deepest first."""
    missing = []
    path = os.path.abspath(folder)
    while not os.path.isdir(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        _remove_folders([path for path in missing if os.path.isdir(path)])
        if isinstance(exc, FileExistsError):  # a file where a folder must go: said as for a file on the way there
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)) from None
        raise
    return missing


def _remove_folders(folders: List[str]) -> None:
    for folder in folders:  # deepest first
        try:
            os.rmdir(folder)
        except OSError:
            pass


def write_export(export: Export, exporter: Exporter, destination: str) -> List[str]:
    """Write ``export`` to ``destination`` (a folder or a file, see :func:`output_paths`); the paths written.

    Nothing is written before the whole export has been serialized, and the files are written all or none
    (:func:`~wakelab.evidence.bundle.atomic_write_files`); folders this call created are removed again on a failure.
    """
    paths = output_paths(export, exporter, destination)
    created: List[str] = []
    try:
        for path in paths:
            if os.path.isdir(path):
                raise OutputError("cannot write %s: it is a folder (give a file name with -o)" % path)
        created = _make_folders(os.path.dirname(os.path.abspath(paths[0])))
        atomic_write_files({path: exported.text for path, exported in zip(paths, export.files)})
    except OSError as exc:
        _remove_folders(created)
        raise OutputError("cannot write %s: %s (choose another path with -o)" % (destination, exc.strerror or exc)) from None
    return paths


def destination_for(source: Source, exporter: Exporter, output: Optional[str]) -> str:
    """``output`` as given, or the default folder beside the evidence, ``<run or grid>/export[/<subfolder>]/``."""
    return output or os.path.join(source.folder, EXPORT_DIR, exporter.subfolder, "")
