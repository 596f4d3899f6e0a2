"""A grid's matrix document (matrix.json, or the one a grid run holds in memory) as typed records.

Read once by :meth:`MatrixDoc.from_dict`: the lab, the cells and, per arm, each
cell's row as an :class:`~wakelab.evidence.model.ArmRecord` (its figures,
status and C floor, named after the arm).  Anything in a row's figures that
is not a number is left out (matrix.json's schema lets a figure be a string).
The comparisons of the cells are :mod:`wakelab.analysis.matrix`'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Tuple

from wakelab.evidence.model import ArmRecord, Interpreter


def _numbers(figures: object) -> Optional[Dict[str, Any]]:
    """The numbers of a figures object (and its ``omitted``); None for no figures at all."""
    if not isinstance(figures, Mapping) or not figures:
        return None
    return {str(k): v for k, v in figures.items()
            if (isinstance(v, (int, float)) and not isinstance(v, bool)) or (k == "omitted" and isinstance(v, Mapping))}


@dataclasses.dataclass(frozen=True)
class MatrixCell:
    """One cell as the matrix lists it: label, its value of each dimension, interpreter, status and whether it completed."""

    label: str
    dimensions: Mapping[str, Any]
    interpreter: Optional[Interpreter]
    status: str
    complete: bool

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "MatrixCell":
        interp = doc.get("interpreter")
        return cls(str(doc.get("label")), dict(doc.get("dimensions") or {}),
                   Interpreter.from_dict(interp) if isinstance(interp, Mapping) and interp else None,
                   str(doc.get("status")), bool(doc.get("complete")))

    def dimension(self, name: str) -> str:
        """The cell's value of dimension ``name`` as text (``None`` where it has none)."""
        return str(self.dimensions.get(name))


@dataclasses.dataclass(frozen=True)
class MatrixEntry:
    """One arm in one cell: the cell's label, the arm's record there, and the spread of its medians (largest over smallest)."""

    cell: str
    arm: ArmRecord
    spread: Optional[float]

    @classmethod
    def from_dict(cls, name: str, row: Mapping[str, Any]) -> "MatrixEntry":
        arm = ArmRecord.from_dict(dict(row, name=name, latency=_numbers(row.get("latency")), rate=_numbers(row.get("rate"))))
        return cls(str(row.get("cell")), arm, (_numbers(row.get("spread")) or {}).get("max_over_min") or None)


@dataclasses.dataclass(frozen=True)
class VerdictTable:
    title: str
    header: Tuple[str, ...]
    rows: Tuple[Tuple[str, ...], ...]


@dataclasses.dataclass(frozen=True)
class MatrixVerdict:
    """The lab's own tables and sentences over the cells (the free-threading lab's GIL A/B), as its analysis gave them."""

    title: str
    tables: Tuple[VerdictTable, ...]
    sentences: Tuple[str, ...]

    @classmethod
    def from_dict(cls, doc: object) -> Optional["MatrixVerdict"]:
        if not isinstance(doc, Mapping):
            return None
        tables = tuple(
            VerdictTable(str(t.get("title") or ""), tuple(str(h) for h in t.get("header") or ()),
                         tuple(tuple(str(c) for c in row) for row in t["rows"]))
            for t in doc.get("tables") or () if isinstance(t, Mapping) and t.get("rows")
        )
        return cls(str(doc.get("title") or "VERDICT"), tables, tuple(str(s) for s in doc.get("sentences") or ()))


@dataclasses.dataclass(frozen=True)
class MatrixDoc:
    """A matrix document: the lab's title, when the grid started, whether it completed, its cells, each arm's rows, the verdict."""

    title: str
    started_utc: Any
    complete: bool
    cells: Tuple[MatrixCell, ...]
    #: Per arm, in run order: its name and its entry in each cell, in cell order.
    arms: Tuple[Tuple[str, Tuple[MatrixEntry, ...]], ...]
    verdict: Optional[MatrixVerdict]

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "MatrixDoc":
        lab = doc.get("lab") or {}
        arms = tuple((str(arm.get("name")), tuple(MatrixEntry.from_dict(str(arm.get("name")), row) for row in arm.get("rows") or ()))
                     for arm in doc.get("arms") or ())
        return cls(str(lab.get("title") or lab.get("id")), doc.get("started_utc"), bool(doc.get("complete")),
                   tuple(MatrixCell.from_dict(c) for c in doc.get("cells") or ()), arms, MatrixVerdict.from_dict(doc.get("verdict")))


__all__ = ["MatrixCell", "MatrixDoc", "MatrixEntry", "MatrixVerdict", "VerdictTable"]
