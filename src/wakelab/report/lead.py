"""The lead table's and the verdict's model: rows, cells and sentence figures built once from the run's view, that
summary.txt, the Markdown export and the HTML page only place (text columns, Markdown pipes, HTML).

Latency cells are µs with three significant digits; a rate's are ops/s, its net cost ns per call with one decimal.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, List, Mapping, NamedTuple, Optional, Tuple

from wakelab.analysis.caveats import NativeRatio, Pairing
from wakelab.analysis.view import RunView
from wakelab.evidence.model import ArmRecord, CpuSide, LatencyFigures, RateFigures
from wakelab.formatting import DASH, finite_number, format_ns, format_ns_plain, format_percent, format_rate, format_ratio, format_us

#: The latency figures a row shows after its n and lost, in µs.
LATENCY_COLUMNS = ("min", "p50", "p90", "p99", "p99.9", "max", "mean")
#: A rate row's cells (:func:`rate_cells`), and the "vs C" column after them.
RATE_COLUMNS = ("calls/round", "rounds", "median ops/s", "slowest", "fastest", "empty loop/s", "net ns/call")
NEAREST_FLOOR = "nearest floor"
NATIVE_LEGEND = (
    "vs C: the arm's figure over its C floor's, both from this run (for rates: how many times faster "
    "C is). A plain ratio has the same experiment in C -- same scope, waiter state and t1 -- and is "
    "the interpreter's share; a ratio marked 'nearest floor' is against the closest C experiment "
    "there is, which differs, so it is not."
)
REPETITIONS_LEGEND = (
    "Repetitions: each repetition's own p50, in the order they ran; range: (largest - smallest) over their median. "
    "Where they ran: a wake's CPUs are read outside the timed window (the notifier's right before t0, the waiter's "
    "right after t1); crossed: the share of the wakes with both CPUs known that ran on two CPUs. '-' where an arm "
    "does not record them (self-signal arms, the C floor's process experiments, open loop); a p99 needs 100 wakes "
    "in its population."
)


def us_cells(figures: LatencyFigures) -> List[str]:
    f = figures
    return [format_us(v) for v in (f.min_ns, f.p50_ns, f.p90_ns, f.p99_ns, f.p99_9_ns, f.max_ns, f.mean_ns)]


def rate_cells(rate: RateFigures) -> List[str]:
    """calls per round, rounds, median, slowest, fastest and empty-loop ops/s, net ns per call."""
    return [format_rate(rate.n_per_round), str(rate.rounds)] + [
        format_rate(v) for v in (rate.ops_per_s, rate.min_ops_per_s, rate.max_ops_per_s, rate.baseline_ops_per_s)
    ] + [format_ns_plain(rate.net_ns_per_op)]


def native_text(ratio: NativeRatio) -> Tuple[str, bool]:
    """A "vs C" cell's ratio, and whether it is marked :data:`NEAREST_FLOOR` (the floor is not the same experiment)."""
    return format_ratio(ratio.ratio), not ratio.interpreter_share


def family_order(arms: Iterable[ArmRecord]) -> List[str]:
    return list(dict.fromkeys(a.family for a in arms))


class LeadRow(NamedTuple):
    """A latency arm's row, or one of its components' (``component``: its name) under it."""

    arm: ArmRecord
    figures: Optional[LatencyFigures]
    component: str = ""

    def cells(self, figures: LatencyFigures) -> List[str]:
        """n, lost ('' in a component's row) and :data:`LATENCY_COLUMNS`."""
        return [str(figures.n), "" if self.component else str(figures.lost)] + us_cells(figures)


@dataclasses.dataclass(frozen=True)
class LeadTable:
    """The lead tables of a run: its latency arms by family (each followed by its components), its rate arms, and "vs C"."""

    families: Tuple[Tuple[str, Tuple[LeadRow, ...]], ...]
    rates: Tuple[ArmRecord, ...]
    ratios: Mapping[str, NativeRatio]

    @property
    def latency_native(self) -> bool:
        return any(row.arm.name in self.ratios for _, rows in self.families for row in rows)

    @property
    def rate_native(self) -> bool:
        return any(arm.name in self.ratios for arm in self.rates)

    def native(self, arm: ArmRecord) -> Optional[NativeRatio]:
        return self.ratios.get(arm.name)


def lead_table(view: RunView) -> LeadTable:
    """The run's lead table: latency arms grouped by family in the order the families first appear, then rate arms."""
    latency = [a for a in view.bundle.arms() if a.is_latency]
    families = tuple(
        (family, tuple(row for a in latency if a.family == family
                       for row in [LeadRow(a, a.latency)] + [LeadRow(a, comp, name) for name, comp in a.components]))
        for family in family_order(latency))
    return LeadTable(families, tuple(a for a in view.bundle.arms() if a.is_rate), view.native_ratios)


def format_native_cell(ratio: Optional[NativeRatio]) -> str:
    """A "vs C" cell in plain text: the ratio, marked ``(nearest floor)`` unless the floor is the same experiment."""
    if ratio is None:
        return DASH
    text, nearest = native_text(ratio)
    return "%s (%s)" % (text, NEAREST_FLOOR) if nearest else text


def verdict_figures(arm: ArmRecord) -> Optional[Tuple[str, ...]]:
    """The figures of an arm's verdict sentence: a latency arm's p50, p99 and wakes; a rate arm's ops/s, rounds, calls per
    round and empty-loop iterations/s (None: the arm has neither)."""
    lat, rate = arm.latency, arm.rate
    if lat is not None:
        return format_ns(lat.p50_ns), format_ns(lat.p99_ns) if lat.p99_ns is not None else "not reported", str(lat.n)
    if rate is not None:
        return format_rate(rate.ops_per_s), str(rate.rounds), format_rate(rate.n_per_round), format_rate(rate.baseline_ops_per_s)
    return None


class PairingFigures(NamedTuple):
    """A lab pairing's sentence: ``a / b = P50 at p50, P99 at p99`` (``p99``: '' when not reported), then its judgement
    and ``detail``: what its arms share (like for like) or where they differ."""

    pairing: Pairing
    p50: str
    p99: str
    detail: str


def pairing_figures(view: RunView) -> List[PairingFigures]:
    """The run's pairings with a p50 ratio."""
    return [PairingFigures(p, format_ratio(p.p50_ratio), "" if p.p99_ratio is None else format_ratio(p.p99_ratio),
                           "both %s, %s; at t0 the waiter is %s" % (p.waiter, p.scope, p.at_t0) if p.like_for_like else
                           "; ".join("%s: %s against %s" % (d.aspect, d.a, d.b) for d in p.differences))
            for p in view.pairings if p.p50_ratio is not None]


class PlacementRow(NamedTuple):
    """A latency arm's row of REPETITIONS AND PLACEMENT: each repetition's p50 (µs, none: not recorded), then its
    range, n, p50 and p99 (µs) of the same-CPU and of the cross-CPU wakes, and the share crossed (dashes: not recorded)."""

    arm: ArmRecord
    repetitions: Tuple[str, ...]
    cells: Tuple[str, ...]
    unknown: object = None  # wakes whose CPUs were not both read (a number when some were)


def _population_cells(population: CpuSide) -> List[str]:
    if not population.recorded:
        return [DASH] * 3
    n = population.n
    return [str(n if finite_number(n) is not None else DASH)] + [format_us(finite_number(v)) for v in (population.p50_ns, population.p99_ns)]


def placement_rows(view: RunView) -> List[PlacementRow]:
    """Per latency arm with either, each repetition's own p50 and their range, and its wakes split by where they ran."""
    rows = []
    for a in view.bundle.arms():
        spread = a.repetitions if a.repetitions is not None and a.repetitions.has_spread else None
        split = a.cpu_split
        if not a.is_latency or a.latency is None or (spread is None and split is None):
            continue
        values = [v for v in (finite_number(x) for x in (spread.values if spread is not None else ())) if v is not None]
        cells = [format_percent(finite_number(spread.range_pct) if spread is not None else None)]
        if split is None:
            rows.append(PlacementRow(a, tuple(format_us(v) for v in values), tuple(cells + [DASH] * 7)))
            continue
        share = finite_number(split.cross_share)
        cells += _population_cells(split.same_cpu) + _population_cells(split.cross_cpu) + [format_percent(None if share is None else 100 * share)]
        rows.append(PlacementRow(a, tuple(format_us(v) for v in values), tuple(cells), split.unknown if finite_number(split.unknown) else None))
    return rows
