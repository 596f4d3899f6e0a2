"""Writing the evidence bundle atomically (measuring side: stdlib only).

A bundle is a folder::

    summary.json          the run, per-arm figures, conditions (schema: summary.schema.json)
    summary.txt           the same for people
    samples/<arm>.json    raw nanosecond samples of each arm, to recompute any figure

Every file is written to a temporary name in the same folder, flushed,
fsynced and renamed over the old one, so a reader (or a crash) only ever
sees a whole old file or a whole new one.  The runner rewrites summary.json
after every arm, so an interrupted run leaves valid files with
``complete: false``.

Schema history (``schema_version``):
  1 -- first version (wakelab 0.1).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Dict, Mapping, Optional

SCHEMA_NAME = "wakelab.summary"
SAMPLES_SCHEMA = "wakelab.samples"
SCHEMA_VERSION = 1
SUMMARY_JSON = "summary.json"
SUMMARY_TXT = "summary.txt"
SAMPLES_DIR = "samples"


def atomic_write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old or the new file, never half."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def dumps(doc: Mapping[str, object]) -> str:
    """The canonical JSON text of an evidence document (sorted keys, trailing newline)."""
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def samples_path(folder: str, arm_name: str) -> str:
    return os.path.join(folder, SAMPLES_DIR, arm_name + ".json")


def write_samples(folder: str, arm_name: str, doc: Mapping[str, object]) -> str:
    """Write one arm's raw samples document; returns the path relative to ``folder``."""
    os.makedirs(os.path.join(folder, SAMPLES_DIR), exist_ok=True)
    path = samples_path(folder, arm_name)
    # Compact: samples files can hold millions of integers.
    atomic_write_text(path, json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n")
    return os.path.relpath(path, folder)


def write_bundle(folder: str, summary: Mapping[str, object], text: Optional[str]) -> None:
    """Write summary.json then (when ``text`` is given) summary.txt into ``folder`` (which must exist)."""
    atomic_write_text(os.path.join(folder, SUMMARY_JSON), dumps(summary))
    if text is not None:
        atomic_write_text(os.path.join(folder, SUMMARY_TXT), text)


def prepare_output_folder(folder: str) -> str:
    """Create ``folder`` (and parents) and prove it is writable; returns its absolute path.

    Raises OSError with the OS's reason when it cannot be created or written.
    """
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".wakelab-probe-", dir=folder)
    os.close(fd)
    os.unlink(probe)
    return folder


def create_unique_folder(parent: str, stem: str) -> str:
    """Create and return ``parent/stem`` or ``parent/stem-2``, ``-3`` ...

    Never an existing folder, even with two runs starting in the same second:
    ``os.mkdir`` either creates the folder or fails, atomically.
    """
    os.makedirs(parent, exist_ok=True)
    i = 1
    while True:
        candidate = os.path.join(parent, stem if i == 1 else "%s-%d" % (stem, i))
        try:
            os.mkdir(candidate)
            return os.path.abspath(candidate)
        except FileExistsError:
            i += 1


def samples_doc(arm_name: str, raw_fields: Dict[str, object]) -> Dict[str, object]:
    """Wrap an arm's raw record as a versioned samples document."""
    doc: Dict[str, object] = {
        "schema": SAMPLES_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "arm": arm_name,
        "unit": "ns",
    }
    doc.update(raw_fields)
    return doc
