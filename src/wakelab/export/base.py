"""The one interface every export format implements, and what it reads.

An exporter turns one run (a loaded :class:`Bundle`) or a grid into an :class:`Export`: the files it would
write, as text, and notes on what it left out.  Serializing is pure; :func:`wakelab.export.write_export`
writes afterwards, so a format that fails half-way leaves nothing on disk.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Callable, List, Optional, Tuple, Union

from wakelab.evidence.model import ArmRecord, Bundle, Grid

# What an exporter is given: one run or a grid.
Source = Union[Bundle, Grid]


@dataclasses.dataclass(frozen=True)
class ExportedFile:
    """One output file: its name (a plain file name) and its text."""

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

    ``serialize`` (a run) and ``serialize_grid`` (a grid) never write and never print; they raise
    :class:`wakelab.errors.WakelabError` subclasses for input they cannot use.  ``subfolder`` is where, inside the run's
    ``export/`` folder, the format writes by default (pyperf: ``pyperf/``, so that ``compare_to`` names each suite after
    its run or cell).  When ``file_suffix`` is set, an ``-o`` path that does not end in it names a folder to write into.
    """

    name: str
    help: str
    serialize: Callable[[Bundle], Export]
    serialize_grid: Callable[[Grid], Export]
    subfolder: str = ""
    file_suffix: Optional[str] = None

    def export(self, source: Source) -> Export:
        return self.serialize_grid(source) if isinstance(source, Grid) else self.serialize(source)


def worker_spans(arm: ArmRecord, total: int, rounds: bool = False) -> Optional[List[Tuple[int, int, int]]]:
    """``(worker index, start, stop)`` of each worker's values in a pooled series of ``total`` values (pooled in worker
    order, each one's count its ``n``, or ``rounds`` for a rate arm); None when the workers' counts are not whole numbers
    adding up to ``total``."""
    recorded = [(w.rounds if rounds else w.n) if w.in_evidence else None for w in arm.workers or ()]
    counts: List[int] = [c for c in recorded if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    if not counts or len(counts) != len(recorded) or sum(counts) != total:
        return None
    ends = itertools.accumulate(counts)
    return [(index, stop - count, stop) for index, (count, stop) in enumerate(zip(counts, ends))]


def missing_cell_notes(grid: Grid) -> Tuple[str, ...]:
    return tuple("cell %s not exported: it has no evidence (the grid stopped before it)" % label for label in grid.never_ran)


def one_file_exporter(name: str, help: str, suffix: str, run: Callable[[Bundle], str], grid: Callable[[Grid], str],
                      grid_suffix: Optional[str] = None) -> Exporter:
    """A format that writes one file, named after the run with ``suffix`` (a grid: ``grid_suffix``, by default the same)."""
    return Exporter(name, help, lambda e: Export((ExportedFile(e.name + suffix, run(e)),)),
                    lambda g: Export((ExportedFile(g.name + (grid_suffix or suffix), grid(g)),), notes=missing_cell_notes(g)))

