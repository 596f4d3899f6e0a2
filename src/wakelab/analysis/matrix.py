"""A grid's matrix with each arm's cells set against the first cell that measured it, and against its C floor.

The rule a ratio is judged by (:func:`ratio_tone`) is the one the HTML report colours its ratios by."""

from __future__ import annotations

import dataclasses
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

from wakelab.analysis.caveats import NativeRatio, native_ratio
from wakelab.evidence.matrix import MatrixDoc, MatrixEntry
from wakelab.evidence.model import LATENCY, RATE, ArmRecord, LatencyFigures
from wakelab.formatting import format_ratio, positive_ratio

# How far a ratio must move from 1 before it is called a change: the noise band the ratios of one
# figure to another are judged with (10%, either way).  Without intervals in the evidence this is
# the only yardstick there is; it is applied to p50 and p99 alike.
RATIO_NOISE = 1.1


@dataclasses.dataclass(frozen=True)
class RatioTone:
    """How a p50 ratio (this run over the baseline) is judged, given its p99 ratio: ``css`` ``slower``, ``faster``
    or ``""``; ``tail_worse`` when the p99 got worse beyond :data:`RATIO_NOISE`, whatever the p50 did."""

    css: str
    tail_worse: bool
    why: str


def _exact_ratio(ratio: Optional[float]) -> str:
    """A ratio below 10 with the two decimals a 10% threshold needs (the tables' ``1.1×`` hides why it was marked)."""
    if ratio is not None and ratio < 10:
        return "%.2f×" % ratio
    return format_ratio(ratio)


def ratio_tone(p50_ratio: Optional[float], p99_ratio: Optional[float]) -> RatioTone:
    """The judgement of a p50 ratio, given its p99 ratio (:class:`RatioTone`)."""
    tail_worse = p99_ratio is not None and p99_ratio > RATIO_NOISE
    if p50_ratio is None:
        return RatioTone("slower" if tail_worse else "", tail_worse, "the p99 got worse" if tail_worse else "")
    if tail_worse and p50_ratio <= RATIO_NOISE:
        what = "p50 %s but p99 %s" % (_exact_ratio(p50_ratio), _exact_ratio(p99_ratio))
        return RatioTone("slower", True, "%s: the tail got worse" % what)
    # Both slower: a tail regression of its own only where the p99 grew beyond the p50's growth (a whole
    # distribution shifted up is "slower", not a tail that got worse).
    if tail_worse and p99_ratio is not None and p99_ratio > p50_ratio * RATIO_NOISE:
        what = "p50 %s and p99 %s" % (_exact_ratio(p50_ratio), _exact_ratio(p99_ratio))
        return RatioTone("slower", True, "%s: the tail grew more than the median" % what)
    if p50_ratio > RATIO_NOISE:
        return RatioTone("slower", False, "p50 slower by more than %d%%" % round((RATIO_NOISE - 1) * 100))
    if p50_ratio < 1 / RATIO_NOISE:
        if p99_ratio is None:
            return RatioTone("", False, "p50 faster, but no p99 to show the tail did not get worse")
        return RatioTone("faster", False, "p50 faster and p99 not worse")
    return RatioTone("", False, "within %d%%" % round((RATIO_NOISE - 1) * 100))


@dataclasses.dataclass(frozen=True)
class MatrixRow:
    """One arm in one cell against the arm's first measured cell, and against its C floor in the same cell."""

    entry: MatrixEntry
    p50_ratio: Optional[float] = None
    p99_ratio: Optional[float] = None
    tone: RatioTone = RatioTone("", False, "")
    rate_ratio: Optional[float] = None
    native: Optional[NativeRatio] = None

    @property
    def cell(self) -> str:
        return self.entry.cell

    @property
    def arm(self) -> ArmRecord:
        return self.entry.arm


@dataclasses.dataclass(frozen=True)
class MatrixArm:

    name: str
    kind: str
    rows: Tuple[MatrixRow, ...]
    base_cell: Optional[str]

    @property
    def has_native(self) -> bool:
        return any(row.native is not None for row in self.rows)


@dataclasses.dataclass(frozen=True)
class Matrix:

    doc: MatrixDoc
    arms: Tuple[MatrixArm, ...]

    @property
    def has_native(self) -> bool:
        return any(arm.has_native for arm in self.arms)


def _compare(name: str, entries: Sequence[MatrixEntry], natives: Mapping[str, NativeRatio]) -> MatrixArm:
    kind = next((e.arm.kind for e in entries if e.arm.kind), LATENCY)
    base = next((e for e in entries if e.arm.latency is not None and e.arm.latency.p50_ns), None)
    base_lat: Optional[LatencyFigures] = base.arm.latency if base is not None else None
    base_rate = next((e.arm.rate.ops_per_s for e in entries if e.arm.rate is not None), None)
    rows = []
    for entry in entries:
        row, arm = MatrixRow(entry, native=natives.get(entry.cell)), entry.arm
        if kind == RATE and arm.rate is not None:
            ops = arm.rate.ops_per_s
            row = dataclasses.replace(row, rate_ratio=ops / base_rate if base_rate and ops else None)
        elif kind != RATE and arm.latency is not None:
            p50 = positive_ratio(arm.latency.p50_ns, base_lat.p50_ns if base_lat else None)
            p99 = positive_ratio(arm.latency.p99_ns, base_lat.p99_ns if base_lat else None)
            row = dataclasses.replace(row, p50_ratio=p50, p99_ratio=p99, tone=ratio_tone(p50, p99))
        rows.append(row)
    return MatrixArm(name, kind, tuple(rows), base.cell if base is not None else None)


def compare_matrix(doc: Union[MatrixDoc, Mapping[str, object]]) -> Matrix:
    """The matrix document ``doc`` with every arm's cells compared."""
    matrix = doc if isinstance(doc, MatrixDoc) else MatrixDoc.from_dict(doc)
    by_cell: Dict[str, Dict[str, ArmRecord]] = {}
    for _, entries in matrix.arms:
        for entry in entries:
            by_cell.setdefault(entry.cell, {})[entry.arm.name] = entry.arm
    natives: Dict[str, Dict[str, NativeRatio]] = {}
    for cell, arms in by_cell.items():
        for name, arm in arms.items():
            ratio = native_ratio(arm, arms.get(arm.native)) if arm.native else None
            if ratio is not None:
                natives.setdefault(name, {})[cell] = ratio
    return Matrix(matrix, tuple(_compare(name, entries, natives.get(name) or {}) for name, entries in matrix.arms))
