"""A grid's matrix document (matrix.json, or the one a grid run holds in memory) as typed records: the lab, the cells
and, per arm, each cell's row as an :class:`~wakelab.evidence.model.ArmRecord`.  Anything in a row's figures that is
not a number is left out (matrix.json's schema lets a figure be a string).

The grid runner (:mod:`wakelab.harness.grid`) writes matrix.json with the same records (``of``, then ``to_dict``).
"""

from __future__ import annotations

import dataclasses
import os
import typing
from typing import Dict, Mapping, Optional, Tuple

from wakelab.evidence.bundle import CELLS_DIR, Record, json_field, json_meta, read_as
from wakelab.evidence.arms import ArmRecord
from wakelab.evidence.interpreter import Interpreter
from wakelab.evidence.sections import LabInfo

# Roles of an interpreter in the free-threading A/B, by (free-threaded build, GIL on as it ran).
GIL_BUILD, NO_GIL, FORCED_GIL = "gil", "no-gil", "ft-gil1"


def interpreter_role(interp: Optional[Interpreter]) -> Optional[str]:
    """``gil``, ``no-gil`` or ``ft-gil1`` for a run's interpreter; None when it has none (PyPy has a GIL: ``gil``)."""
    if interp is None:
        return None
    if interp.free_threaded_build:
        return FORCED_GIL if interp.gil_enabled else NO_GIL
    return GIL_BUILD


def _numbers(figures: object) -> Optional[Dict[str, object]]:
    """The numbers of a figures object (and its ``omitted``); None for no figures at all."""
    if not isinstance(figures, Mapping) or not figures:
        return None
    return {str(k): v for k, v in figures.items()
            if (isinstance(v, (int, float)) and not isinstance(v, bool)) or (k == "omitted" and isinstance(v, Mapping))}


@dataclasses.dataclass(frozen=True)
class MatrixCell(Record):
    """One cell as the matrix lists it (``interpreter`` None: its run has not recorded one)."""

    label: str = dataclasses.field(metadata=json_meta(read=str))
    dimensions: Mapping[str, object]
    interpreter: Optional[Interpreter]
    status: str = dataclasses.field(metadata=json_meta(read=str))
    complete: bool

    @classmethod
    def of(cls, label: str, dimensions: Mapping[str, object], status: str, complete: bool, interpreter: object) -> "MatrixCell":
        """The cell from its parts, ``interpreter`` as its run's summary records it."""
        return cls.from_dict(dict(label=label, dimensions=dict(dimensions), status=status, complete=complete, interpreter=interpreter))

    def to_dict(self) -> Dict[str, object]:
        return {"label": self.label, "folder": os.path.join(CELLS_DIR, self.label), "dimensions": dict(self.dimensions),
                "status": self.status, "complete": self.complete,
                "interpreter": self.interpreter.recorded if self.interpreter is not None else None}

    def dimension(self, name: str) -> str:
        """The cell's value of dimension ``name`` as text (``None`` where it has none)."""
        return str(self.dimensions.get(name))

    @property
    def placement(self) -> str:
        return self.dimension("placement")

    @property
    def cpu_threads(self) -> int:
        return read_as(int, self.dimensions.get("cpu_threads"))

    @property
    def role(self) -> Optional[str]:
        return interpreter_role(self.interpreter)

    @property
    def release(self) -> str:
        return self.interpreter.release if self.interpreter is not None else ""


#: A row's fields after its cell and status: the arm's own, from its entry in the cell's summary.
ROW_FIELDS = ("reason", "latency", "rate", "spread", "waiter", "kind", "native", "native_match")
# The latency figures a row gives the labs' A/Bs (:attr:`MatrixEntry.figures`), ns.
AB_FIGURES = ("p50", "p99", "max")


@dataclasses.dataclass(frozen=True)
class MatrixEntry:
    """One arm in one cell: the cell's label, the arm's record there, the spread of its medians (largest over smallest),
    and the row as matrix.json stores it."""

    cell: str
    arm: ArmRecord
    spread: Optional[float]
    row: Mapping[str, object] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, name: str, cell: str, arm: Optional[ArmRecord]) -> "MatrixEntry":
        """Arm ``name``'s row in cell ``cell`` from its ``arm`` in the cell's run (None: the cell has not reached it)."""
        row: Dict[str, object] = {"cell": cell, "status": "pending" if arm is None else arm.status}
        row.update((key, None if arm is None else arm.entry.get(key)) for key in ROW_FIELDS)
        return cls.from_dict(name, row)

    @classmethod
    def from_dict(cls, name: str, row: Mapping[str, object]) -> "MatrixEntry":
        spread = _numbers(row.get("spread"))
        arm = ArmRecord.from_dict(dict(row, name=name, latency=_numbers(row.get("latency")), rate=_numbers(row.get("rate")), spread=spread))
        return cls(str(row.get("cell")), arm, typing.cast(Optional[float], (spread or {}).get("max_over_min") or None), row)

    def to_dict(self) -> Dict[str, object]:
        return dict(self.row)

    @property
    def measured(self) -> bool:
        """The arm has latency figures in this cell."""
        return self.arm.latency is not None

    @property
    def figures(self) -> Mapping[str, Optional[float]]:
        """The latency figures the labs' A/Bs read: p50, p99 and max in ns by ``p50``/``p99``/``max`` (None: missing,
        or not above 0), as the row stores them (a whole max is not rounded)."""
        latency = _numbers(self.row.get("latency")) or {}
        values = {key: latency.get(key + "_ns") for key in AB_FIGURES}
        return {key: float(v) if isinstance(v, (int, float)) and v > 0 else None for key, v in values.items()}


def _texts(value: object) -> Tuple[str, ...]:
    return tuple(str(text) for text in value or ())  # type: ignore[attr-defined]


@dataclasses.dataclass(frozen=True)
class VerdictTable(Record):
    title: str
    header: Tuple[str, ...] = dataclasses.field(metadata=json_meta(read=_texts))
    rows: Tuple[Tuple[str, ...], ...] = dataclasses.field(metadata=json_meta(read=lambda rows: tuple(_texts(row) for row in rows)))


@dataclasses.dataclass(frozen=True)
class MatrixVerdict(Record):
    """The lab's own tables and sentences over the cells (the free-threading lab's GIL A/B), as its analysis gave them."""

    title: str = dataclasses.field(metadata=json_meta(read=lambda title: str(title or "VERDICT")))
    #: Those with rows.
    tables: Tuple[VerdictTable, ...] = dataclasses.field(metadata=json_meta(read=lambda tables: tuple(
        VerdictTable.from_dict(t) for t in tables or () if isinstance(t, Mapping) and t.get("rows"))))
    sentences: Tuple[str, ...] = dataclasses.field(metadata=json_meta(read=_texts))


def _arms(arms: object) -> Tuple[Tuple[str, Tuple[MatrixEntry, ...]], ...]:
    named = ((str(arm.get("name")), arm.get("rows")) for arm in arms or () if isinstance(arm, Mapping))  # type: ignore[attr-defined]
    return tuple((name, tuple(MatrixEntry.from_dict(name, row) for row in rows or ())) for name, rows in named)


def _title(lab: object) -> str:
    lab = lab if isinstance(lab, Mapping) else {}
    return str(lab.get("title") or lab.get("id"))


@dataclasses.dataclass(frozen=True)
class MatrixDoc(Record):
    """A matrix document: the lab's title, when the grid started, whether it completed, its cells, each arm's rows, the verdict."""

    title: str = dataclasses.field(metadata=json_meta("lab", _title))
    started_utc: object
    complete: bool
    cells: Tuple[MatrixCell, ...]
    #: Per arm, in run order: its name and its entry in each cell, in cell order.
    arms: Tuple[Tuple[str, Tuple[MatrixEntry, ...]], ...] = dataclasses.field(metadata=json_meta(read=_arms))
    verdict: Optional[MatrixVerdict]
    command: Tuple[str, ...] = json_field(read=_texts, default=())
    #: The dimensions a cell is labelled by, in the matrix's order.
    dimensions: Tuple[str, ...] = ()
    lab: LabInfo = LabInfo()
