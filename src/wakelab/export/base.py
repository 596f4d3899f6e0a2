"""The one interface every export format implements.

An exporter turns an :class:`Evidence` (a loaded bundle) into an
:class:`Export`: the files it would write, as text, plus notes on what it had
to leave out.  Serializing is pure; writing (stdout, one file, a folder) is
done afterwards by :func:`wakelab.export.write_export`, so a format that
fails half-way leaves nothing on disk.

Formats that write one document (csv, markdown, json) return one file; a
format that writes one file per arm (pyperf) sets ``per_arm`` and returns
several, named relative to the output folder.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Tuple

from wakelab.evidence.model import Bundle


# A loaded bundle, as the evidence model gives it.
Evidence = Bundle


@dataclasses.dataclass(frozen=True)
class ExportedFile:
    """One output file: its name (relative to the output folder) and its text."""

    name: str
    text: str


@dataclasses.dataclass(frozen=True)
class Export:
    """What an exporter produced: files, and one line for each thing it left out."""

    files: Tuple[ExportedFile, ...]
    notes: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Exporter:
    """One export format.

    ``serialize`` never writes and never prints; it raises
    :class:`wakelab.errors.WakelabError` subclasses for input it cannot use.
    """

    name: str
    help: str
    serialize: Callable[[Evidence], Export]
    per_arm: bool = False


def load_evidence(path: str) -> Evidence:
    """Load and validate the bundle at ``path`` (a folder or its summary.json)."""
    return Bundle.load(path)


def arm_entries(evidence: Evidence) -> Tuple[Mapping[str, Any], ...]:
    """The run's arms in run order (summary.json keeps them in run order)."""
    return evidence.arm_entries()
