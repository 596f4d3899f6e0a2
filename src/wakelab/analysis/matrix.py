"""A grid's matrix as typed records, each arm's cells set against the first cell that measured it.

The matrix document (matrix.json, or the one a grid run holds in memory) is
read here once into a :class:`Matrix`; the comparisons its renderers show --
each latency cell's p50 and p99 over the first cell's, their judgement
(:func:`ratio_tone`), a rate cell's ops/s over the first, each cell's arm
against its C floor measured in the same cell -- are computed here too, so
that matrix.txt only lays them out.

The rule a ratio is judged by (:data:`RATIO_NOISE`, :func:`ratio_tone`) is the
one the HTML report colours its ratios by: both renderers judge alike.

Figures are read as the matrix holds them, and anything in a figure that is
not a number is left out (matrix.json's schema lets a figure be a string).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.caveats import NativeRatio, native_ratio
from wakelab.evidence.model import LATENCY, RATE, ArmRecord, Interpreter, LatencyFigures
from wakelab.formatting import format_ratio

# How far a ratio must move from 1 before it is called a change: the noise band the ratios of one
# figure to another are judged with (10%, either way).  Without intervals in the evidence this is
# the only yardstick there is; it is applied to p50 and p99 alike.
RATIO_NOISE = 1.1


@dataclasses.dataclass(frozen=True)
class RatioTone:
    """How a p50 ratio (this run over the baseline) is judged, given its p99 ratio beside it.

    ``css`` is ``slower`` (red), ``faster`` (green) or ``""`` (no colour);
    ``tail_worse`` is true when the p99 got worse beyond :data:`RATIO_NOISE`,
    whatever the p50 did: such a ratio is a regression, shown with the p99
    ratio.  Green needs both: p50 faster beyond the noise, and a p99 known
    and not worse beyond it.
    """

    css: str
    tail_worse: bool
    why: str


def ratio_tone(p50_ratio: Optional[float], p99_ratio: Optional[float]) -> RatioTone:
    """The judgement of a p50 ratio, with its p99 ratio (see :class:`RatioTone`).

    >>> ratio_tone(0.56, 220.0).css, ratio_tone(0.56, 1.0).css, ratio_tone(0.56, None).css
    ('slower', 'faster', '')
    """
    tail_worse = p99_ratio is not None and p99_ratio > RATIO_NOISE
    if p50_ratio is None:
        return RatioTone("slower" if tail_worse else "", tail_worse, "the p99 got worse" if tail_worse else "")
    if tail_worse and p50_ratio <= RATIO_NOISE:
        what = "p50 %s but p99 %s" % (format_ratio(p50_ratio), format_ratio(p99_ratio))
        return RatioTone("slower", True, "%s: the tail got worse" % what)
    # Both slower: a tail regression of its own only where the p99 grew beyond the p50's growth (a whole
    # distribution shifted up is "slower", not a tail that got worse).
    if tail_worse and p99_ratio is not None and p99_ratio > p50_ratio * RATIO_NOISE:
        what = "p50 %s and p99 %s" % (format_ratio(p50_ratio), format_ratio(p99_ratio))
        return RatioTone("slower", True, "%s: the tail grew more than the median" % what)
    if p50_ratio > RATIO_NOISE:
        return RatioTone("slower", False, "p50 slower by more than %d%%" % round((RATIO_NOISE - 1) * 100))
    if p50_ratio < 1 / RATIO_NOISE:
        if p99_ratio is None:
            return RatioTone("", False, "p50 faster, but no p99 to show the tail did not get worse")
        return RatioTone("faster", False, "p50 faster and p99 not worse")
    return RatioTone("", False, "within %d%%" % round((RATIO_NOISE - 1) * 100))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def positive_ratio(value: Any, base: Any) -> Optional[float]:
    """``value / base`` for two positive finite figures, else None."""
    if not _number(value) or not _number(base):
        return None
    if not (math.isfinite(value) and math.isfinite(base)) or value <= 0 or base <= 0:
        return None
    return float(value) / float(base)


def _numbers(figures: object) -> Optional[Dict[str, Any]]:
    """The numbers of a figures object (and its ``omitted``); None for no figures at all."""
    if not isinstance(figures, Mapping) or not figures:
        return None
    return {str(k): v for k, v in figures.items() if _number(v) or (k == "omitted" and isinstance(v, Mapping))}


@dataclasses.dataclass(frozen=True)
class MatrixCell:
    """One cell as the matrix lists it: label, its value of each dimension, interpreter, status and whether it completed."""

    label: str
    dimensions: Mapping[str, Any]
    interpreter: Optional[Interpreter]
    status: str
    complete: bool

    def dimension(self, name: str) -> str:
        """The cell's value of dimension ``name`` as text (``None`` where it has none)."""
        return str(self.dimensions.get(name))


@dataclasses.dataclass(frozen=True)
class MatrixRow:
    """One arm in one cell: the arm's record there (its figures, status, C floor) and how it compares.

    ``p50_ratio``/``p99_ratio`` set a latency cell against the arm's first
    measured cell, ``tone`` judges them; ``rate_ratio`` is a rate cell's ops/s
    over the first cell's; ``native`` the arm against its C floor measured in
    the same cell (None where there is none).
    """

    cell: str
    arm: ArmRecord
    spread: Optional[float] = None
    p50_ratio: Optional[float] = None
    p99_ratio: Optional[float] = None
    tone: RatioTone = RatioTone("", False, "")
    rate_ratio: Optional[float] = None
    native: Optional[NativeRatio] = None


@dataclasses.dataclass(frozen=True)
class MatrixArm:
    """One arm across the grid: its kind, a row per cell in cell order, and the cell the others are set against."""

    name: str
    kind: str
    rows: Tuple[MatrixRow, ...]
    base_cell: Optional[str]

    @property
    def has_native(self) -> bool:
        return any(row.native is not None for row in self.rows)


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
class Matrix:
    """A grid's matrix document, read once, with every arm's cells compared (see the module's docstring)."""

    title: str
    started_utc: Any
    complete: bool
    cells: Tuple[MatrixCell, ...]
    arms: Tuple[MatrixArm, ...]
    verdict: Optional[MatrixVerdict]

    @property
    def has_native(self) -> bool:
        """True when any arm has a "vs C" ratio in any cell."""
        return any(arm.has_native for arm in self.arms)


def _cell(doc: Mapping[str, Any]) -> MatrixCell:
    interp = doc.get("interpreter")
    return MatrixCell(str(doc.get("label")), dict(doc.get("dimensions") or {}),
                      Interpreter.from_dict(interp) if isinstance(interp, Mapping) and interp else None,
                      str(doc.get("status")), bool(doc.get("complete")))


def _arm_record(name: str, row: Mapping[str, Any]) -> ArmRecord:
    return ArmRecord.from_dict(dict(row, name=name, latency=_numbers(row.get("latency")), rate=_numbers(row.get("rate"))))


def _compare(name: str, records: Sequence[Tuple[Mapping[str, Any], ArmRecord]],
             natives: Mapping[str, NativeRatio]) -> MatrixArm:
    """Arm ``name``'s rows, each set against the first cell that measured it."""
    arms = [arm for _, arm in records]
    kind = next((a.kind for a in arms if a.kind), LATENCY)
    base = next(((raw, a) for raw, a in records if a.latency is not None and a.latency.p50_ns), None)
    base_lat: Optional[LatencyFigures] = base[1].latency if base is not None else None
    base_rate = next((a.rate.ops_per_s for a in arms if a.rate is not None), None)
    rows = []
    for raw, arm in records:
        spread = (_numbers(raw.get("spread")) or {}).get("max_over_min")
        row = MatrixRow(str(raw.get("cell")), arm, spread or None, native=natives.get(str(raw.get("cell"))))
        if kind == RATE and arm.rate is not None:
            ops = arm.rate.ops_per_s
            row = dataclasses.replace(row, rate_ratio=ops / base_rate if base_rate and ops else None)
        elif kind != RATE and arm.latency is not None:
            p50 = positive_ratio(arm.latency.p50_ns, base_lat.p50_ns if base_lat else None)
            p99 = positive_ratio(arm.latency.p99_ns, base_lat.p99_ns if base_lat else None)
            row = dataclasses.replace(row, p50_ratio=p50, p99_ratio=p99, tone=ratio_tone(p50, p99))
        rows.append(row)
    return MatrixArm(name, kind, tuple(rows), str(base[0].get("cell")) if base is not None else None)


def read_matrix(doc: Mapping[str, Any]) -> Matrix:
    """The matrix document ``doc`` as a :class:`Matrix`, every arm's cells compared.

    "vs C" uses the ``native`` and ``native_match`` each row carries
    (matrices before 0.2 carry neither: no "vs C" then).
    """
    lab = doc.get("lab") or {}
    raw_arms = [(str(arm.get("name")), arm.get("rows") or []) for arm in doc.get("arms") or []]
    records = [[(row, _arm_record(name, row)) for row in rows] for name, rows in raw_arms]
    by_cell: Dict[str, Dict[str, ArmRecord]] = {}
    for arm_rows in records:
        for raw, arm in arm_rows:
            by_cell.setdefault(str(raw.get("cell")), {})[arm.name] = arm
    natives: Dict[str, Dict[str, NativeRatio]] = {}
    for cell, entries in by_cell.items():
        for name, arm in entries.items():
            ratio = native_ratio(arm, entries.get(str(arm.native))) if arm.native else None
            if ratio is not None:
                natives.setdefault(name, {})[cell] = ratio
    return Matrix(
        title=str(lab.get("title") or lab.get("id")),
        started_utc=doc.get("started_utc"),
        complete=bool(doc.get("complete")),
        cells=tuple(_cell(c) for c in doc.get("cells") or ()),
        arms=tuple(_compare(name, arm_rows, natives.get(name) or {}) for (name, _), arm_rows in zip(raw_arms, records)),
        verdict=MatrixVerdict.from_dict(doc.get("verdict")),
    )


__all__ = [
    "RATIO_NOISE", "Matrix", "MatrixArm", "MatrixCell", "MatrixRow", "MatrixVerdict", "RatioTone", "VerdictTable",
    "positive_ratio", "ratio_tone", "read_matrix",
]
