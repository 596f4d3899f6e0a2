"""Measurement-quality warnings: reasons to distrust a figure, never errors (stdlib only).

As pyperf's ``check`` does, these say when a run's numbers should be read with care: workers that disagree, several
populations of wakes, figures near the timer's floor, tails at multiples of the GIL switch interval, a wait that
polls.  A percentile left out for want of wakes is a *note*: the figure is absent, not doubtful.  Per-arm flags come
from the raw samples (:func:`quality_flags`, summary.json's ``quality``); :func:`derive_warnings` turns them and the
figures into summary.json's ``warnings``, the records renderers word."""

from __future__ import annotations

import dataclasses
import math
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.caveats import Arm, Run, arm_record, bundle_of, gil_enabled, worker_infos
from wakelab.analysis.stats import PERCENTILES, min_n_for, percentile
from wakelab.analysis.warning_figures import (CauseKind, OmittedFigures, OmittedPercentile, Population, PopulationCause,
                                              Populations, PollingFigures, SwitchTailFigures, TimerFloorFigures)
from wakelab.evidence.model import NOTE_LEVEL, WARNING_LEVEL, ArmRecord, Record, WarningKind, WarningRecord

# Workers whose medians differ by more than this factor are worth a warning.
SPREAD_LIMIT = 1.5

# Populations: a log2 histogram, a quarter octave per bin, smoothed over three bins.  A
# population holds at least MIN_POPULATION_SHARE of the wakes; two populations' peaks are at
# least an octave apart and the histogram between them drops below half the smaller peak.
_BINS_PER_OCTAVE = 4
MIN_POPULATION_SHARE = 0.10
_VALLEY = 0.5
MIN_POPULATION_SAMPLES = 50
# A population is described by the middle of its wakes: from this percentile to its complement.
POPULATION_RANGE_Q = 10.0

# Switch-interval tails: a wake counts when it lies in [k·I - BELOW·I, k·I + ABOVE·I] for
# k = 1..SWITCH_MULTIPLES (at I = 5 ms: 4.9-5.5 ms, 9.9-10.5 ms, ...).  A waiter that needs the GIL asks for it when its wait returns, after
# t0, and gets it a switch interval after asking at the earliest: such wakes sit just above a
# multiple, never well below it.  BELOW only absorbs the clocks' granularity.
SWITCH_BAND_BELOW = 0.02
SWITCH_BAND_ABOVE = 0.10
SWITCH_MULTIPLES = 8
# The bands must hold this many times the wakes a smooth tail would put there (their share of the
# span from half an interval to the last band), so that a broad tail is not read as clustering.
SWITCH_CLUSTERING = 3.0
_SWITCH_MIN_WAKES = 3
_SWITCH_MIN_SHARE = 0.01

# Polling (see find_polling): an even spread fitted on the POLL_FIT_Q-th percentile and its complement, within
# POLL_MAX_DISTANCE of the wakes (Kolmogorov-Smirnov), each of its POLL_PARTS parts holding POLL_MIN_PART to
# POLL_MAX_PART of an even share (no tapering tail, no gap between two levels), ending at its top, and wider than
# POLL_MIN_PERIOD_NS (shorter periods are not told from the scheduler's and the GIL's own hand-offs) and than its
# floor.  bench/polling_margin.py checks them against polls and the shapes of waits that block; what the shape alone
# cannot tell from a poll is a mixture that is mostly an even spread.
POLL_MIN_SAMPLES = 50
POLL_FIT_Q = 5.0
POLL_EDGE_Q = 97.0
POLL_FLOOR_Q = 1.0
POLL_MAX_DISTANCE = 0.2
POLL_MAX_EDGE = 0.1
POLL_MIN_SPREAD_OVER_FLOOR = 8.0
POLL_PARTS = 5
POLL_MIN_PART = 0.4
POLL_MAX_PART = 1.8
POLL_MIN_PERIOD_NS = 100_000
# A spread this close to the settle's random part may be cut short by it: the period is at least that.
POLL_SPANS_JITTER = 0.9

# A figure below this multiple of the timer floor (back-to-back perf_counter_ns) has the clock's
# own cost as at least a tenth of it.  On a TSC clocksource (~50 ns) no wake gets close; on hpet
# or acpi_pm (about 1 µs per read) the fast arms do.
FLOOR_MULTIPLE = 10


@dataclasses.dataclass(frozen=True)
class QualityFlags(Record):
    """A latency arm's flags, stored under ``quality``; each None when not found."""

    populations: Optional[Populations] = None
    switch_interval_tail: Optional[SwitchTailFigures] = None
    polling: Optional[PollingFigures] = None

    @classmethod
    def from_dict(cls, quality: object) -> "QualityFlags":
        stored = quality if isinstance(quality, Mapping) else {}
        populations, tail, polling = (stored.get(key) for key in ("populations", "switch_interval_tail", "polling"))
        return cls(Populations.from_dict(populations) if populations else None,
                   SwitchTailFigures.from_dict(tail) if tail else None, PollingFigures.from_dict(polling) if polling else None)


def find_populations(samples_ns: Sequence[int]) -> Optional[Populations]:
    """Two or more well-separated populations of wakes in ``samples_ns``, largest share first, or None.  Peaks of the
    smoothed log2 histogram are kept largest first, each an octave and a deep valley from those kept before; each
    population is the wakes between the valleys either side of its peak."""
    values = sorted(v for v in samples_ns if v > 0)
    n = len(values)
    if n < MIN_POPULATION_SAMPLES:
        return None
    bin_of = [int(math.floor(math.log2(v) * _BINS_PER_OCTAVE)) for v in values]
    low = bin_of[0]
    counts = [0] * (bin_of[-1] - low + 1)
    for b in bin_of:
        counts[b - low] += 1
    smooth = [sum(counts[max(0, i - 1) : i + 2]) for i in range(len(counts))]
    candidates = [
        i for i in range(len(smooth))
        if smooth[i] >= MIN_POPULATION_SHARE * n
        and smooth[i] >= (smooth[i - 1] if i > 0 else 0)
        and smooth[i] > (smooth[i + 1] if i + 1 < len(smooth) else 0)
    ]
    kept: List[int] = []
    for peak in sorted(candidates, key=lambda i: (-smooth[i], i)):
        if all(
            abs(peak - other) >= _BINS_PER_OCTAVE
            and min(smooth[min(peak, other) : max(peak, other) + 1]) < _VALLEY * min(smooth[peak], smooth[other])
            for other in kept
        ):
            kept.append(peak)
    if len(kept) < 2:
        return None
    kept.sort()
    # Each valley: the lowest bin between two neighbouring peaks (the first of equals); a wake
    # in a valley bin belongs to the population below it.
    cuts = [a + min(range(b - a + 1), key=lambda j: smooth[a + j]) for a, b in zip(kept, kept[1:])]
    groups: List[List[int]] = [[] for _ in kept]
    index = 0
    for value, b in zip(values, bin_of):
        while index < len(cuts) and b - low > cuts[index]:
            index += 1
        groups[index].append(value)
    populations = [
        Population(share=round(len(group) / n, 4), low_ns=int(round(percentile(group, POPULATION_RANGE_Q))),
                   high_ns=int(round(percentile(group, 100.0 - POPULATION_RANGE_Q))))
        for group in groups
        if len(group) >= MIN_POPULATION_SHARE * n
    ]
    if len(populations) < 2:
        return None
    populations.sort(key=lambda p: (-p.share, p.low_ns))
    return Populations(tuple(populations))


def switch_interval_tail(samples_ns: Sequence[int], interval_s: Optional[float]) -> Optional[SwitchTailFigures]:
    """Wakes clustered just above multiples of the switch interval ``interval_s`` (see ``SWITCH_*``), or None."""
    if not samples_ns or not interval_s or interval_s <= 0:
        return None
    interval_ns = interval_s * 1e9
    per_multiple: Dict[int, int] = {}
    elsewhere = 0
    span_low = 0.5 * interval_ns
    span_high = (SWITCH_MULTIPLES + SWITCH_BAND_ABOVE) * interval_ns
    for v in samples_ns:
        if not span_low <= v <= span_high:
            continue
        k = int(round(v / interval_ns))
        if 1 <= k <= SWITCH_MULTIPLES and (k - SWITCH_BAND_BELOW) * interval_ns <= v <= (k + SWITCH_BAND_ABOVE) * interval_ns:
            per_multiple[k] = per_multiple.get(k, 0) + 1
        else:
            elsewhere += 1
    near = sum(per_multiple.values())
    share = near / len(samples_ns)
    if near < _SWITCH_MIN_WAKES or share < _SWITCH_MIN_SHARE:
        return None
    band_width = SWITCH_BAND_BELOW + SWITCH_BAND_ABOVE  # in intervals, per multiple
    band_span = SWITCH_MULTIPLES * band_width
    rest_span = (span_high - span_low) / interval_ns - band_span
    if elsewhere and (near / band_span) < SWITCH_CLUSTERING * (elsewhere / rest_span):
        return None
    return SwitchTailFigures(share=round(share, 4), count=near, multiples=tuple(sorted(per_multiple)), interval_s=interval_s)


def polling_statistics(samples_ns: Sequence[int]) -> Optional[Dict[str, object]]:
    """The figures :func:`find_polling` judges, whatever they say, as a mapping (bench/polling_margin.py tabulates
    them; None under POLL_MIN_SAMPLES wakes).  ``thinnest_part``: the emptiest fifth's share over an even share (an even
    spread: about 1); ``edge``: the 97th percentile above the 95th, in widths (an even spread: 0.022)."""
    figures = _polling_figures(samples_ns)
    if figures is None:
        return None
    return {k: v for k, v in figures.to_dict().items() if k not in ("settle_jitter_us", "spans_jitter")}


def _polling_figures(samples_ns: Sequence[int]) -> Optional[PollingFigures]:
    values = sorted(v for v in samples_ns if v > 0)
    n = len(values)
    if n < POLL_MIN_SAMPLES:
        return None
    q_low, q_high = percentile(values, POLL_FIT_Q), percentile(values, 100.0 - POLL_FIT_Q)
    if q_high <= q_low:
        return None
    width = (q_high - q_low) * 100.0 / (100.0 - 2 * POLL_FIT_Q)
    low = q_low - width * POLL_FIT_Q / 100.0
    distance = 0.0
    for i, value in enumerate(values):
        share = min(1.0, max(0.0, (value - low) / width))
        distance = max(distance, share - i / n, (i + 1) / n - share)
    floor = percentile(values, POLL_FLOOR_Q)
    edge = (percentile(values, POLL_EDGE_Q) - q_high) / width
    # The share of the wakes in each of POLL_PARTS equal parts of the spread: an even spread puts
    # 1/POLL_PARTS in each; a tail that tapers, or a gap between two levels, leaves a part thin.
    parts = [0] * POLL_PARTS
    for value in values:
        index = int((value - low) / width * POLL_PARTS)
        if 0 <= index < POLL_PARTS:
            parts[index] += 1
    return PollingFigures(low_ns=int(round(max(low, values[0]))), high_ns=int(round(low + width)),
                          period_ns=int(round(width)), distance=round(distance, 4), edge=round(edge, 4),
                          spread_over_floor=round(width / floor, 2) if floor > 0 else None,
                          thinnest_part=round(min(parts) / n * POLL_PARTS, 4),
                          thickest_part=round(max(parts) / n * POLL_PARTS, 4), n=n)


def find_polling(samples_ns: Sequence[int], settle_jitter_us: Optional[int] = None) -> Optional[PollingFigures]:
    """A wait that polls: wakes spread evenly from near nothing up to a period, or None.  A waiter that sleeps P
    between checks answers a notify at its next check; with a settle whose random part spans P the notify lands
    anywhere in the period, so the wakes spread evenly up to P, where a wait that blocks bunches near its floor.
    ``spans_jitter``: the period reached the settle's random part (``settle_jitter_us``), which may have cut it short
    (None: not known)."""
    figures = _polling_figures(samples_ns)
    if figures is None:
        return None
    ratio = figures.spread_over_floor
    if (
        figures.distance > POLL_MAX_DISTANCE
        or (figures.edge or 0.0) > POLL_MAX_EDGE
        or (figures.thinnest_part or 0.0) < POLL_MIN_PART
        or (figures.thickest_part or 0.0) > POLL_MAX_PART
        or figures.period_ns < POLL_MIN_PERIOD_NS
        or ratio is None
        or ratio < POLL_MIN_SPREAD_OVER_FLOOR
    ):
        return None
    spans = None if settle_jitter_us is None else figures.period_ns >= POLL_SPANS_JITTER * settle_jitter_us * 1000
    return dataclasses.replace(figures, settle_jitter_us=settle_jitter_us, spans_jitter=spans)


def gil_contended(entry: Arm, summary: Run) -> bool:
    """Whether another Python thread may hold the GIL the arm's waiter needs.  Only busy Python threads
    (``--cpu-threads``) hold it for a switch interval: the notifier of every driver blocks right after its notify,
    and the spinning waiters release it between polls.  None holds it when the GIL is off, for the C floor, or for a
    waiter in another process (another interpreter, its own GIL)."""
    arm, bundle = arm_record(entry), bundle_of(summary)
    if not gil_enabled(bundle) or arm.family == "native" or arm.scope == "cross-process":
        return False
    return bool(bundle.conditions.cpu_threads) or any(w.applied.get("cpu_threads") for w in arm.workers or ())


def quality_flags(samples_ns: Sequence[int], interval_s: Optional[float], settle_jitter_us: Optional[int] = None,
                  settles: bool = True) -> QualityFlags:
    """The per-arm flags stored under ``quality``: no tail looked for without a switch interval ``interval_s`` (no
    Python thread can hold the GIL), no polling for an arm that takes no settle (``settles``)."""
    return QualityFlags(populations=find_populations(samples_ns),
                        switch_interval_tail=switch_interval_tail(samples_ns, interval_s),
                        polling=find_polling(samples_ns, settle_jitter_us) if settles else None)


def _population_cause(arm: ArmRecord, populations: Sequence[Population], placement: object) -> Optional[PopulationCause]:
    """What in the evidence separates the populations, or None: the same-CPU and cross-CPU wakes' medians, the
    worker processes' medians, or an unpinned run's workers seeing notifier and waiter on one CPU in some and two in
    others."""
    by_cpu = _cpu_cause(arm, populations)
    if by_cpu is not None:
        return by_cpu
    medians = [float(w.p50_ns) for w in arm.workers or () if isinstance(w.p50_ns, (int, float))]
    if len({i for m in medians for i, p in enumerate(populations) if p.low_ns <= m <= p.high_ns}) >= 2:
        return PopulationCause(CauseKind.WORKERS, worker_p50_ns=tuple(sorted(medians)))
    # Per worker that recorded both CPUs: whether notifier and waiter were last seen on the same one.
    seen = [(one.get("notifier_cpu_seen"), one.get("waiter_cpu_seen")) for one in worker_infos(arm)]
    sides = [notifier == waiter for notifier, waiter in seen if isinstance(notifier, int) and isinstance(waiter, int)]
    if placement in (None, "any") and True in sides and False in sides:
        return PopulationCause(CauseKind.PLACEMENT, same_cpu_workers=sides.count(True), split_workers=sides.count(False))
    return None


def _home(value: float, populations: Sequence[Population]) -> Optional[int]:
    best, distance = None, None
    for index, population in enumerate(populations):
        low, high = float(population.low_ns), float(population.high_ns)
        if low <= value <= high:
            return index
        gap = abs(math.log(value / (low if value < low else high))) if value > 0 and low > 0 else None
        if gap is not None and (distance is None or gap < distance):
            best, distance = index, gap
    return best


def _cpu_cause(arm: ArmRecord, populations: Sequence[Population]) -> Optional[PopulationCause]:
    split = arm.cpu_split
    if split is None:
        return None
    n_same, n_cross = split.same_cpu.n or 0, split.cross_cpu.n or 0
    known = n_same + n_cross
    same_p50, cross_p50 = split.same_cpu.p50_ns, split.cross_cpu.p50_ns
    if not known or not isinstance(same_p50, (int, float)) or not isinstance(cross_p50, (int, float)) \
            or min(n_same, n_cross) < MIN_POPULATION_SHARE * known:
        return None
    homes = {_home(float(same_p50), populations), _home(float(cross_p50), populations)}
    if len(homes) < 2 or None in homes:
        return None
    return PopulationCause(CauseKind.CPUS, cross_share=split.cross_share, same_cpu_p50_ns=same_p50, cross_cpu_p50_ns=cross_p50,
                           same_cpu_n=n_same, cross_cpu_n=n_cross)


def derive_warnings(summary: Run) -> List[Dict[str, object]]:
    """Quality warnings and notes of a run, in arm order, the run-wide note first, as summary.json stores them."""
    bundle = bundle_of(summary)
    records: List[WarningRecord] = []
    arms, floor, placement = bundle.arms(), bundle.timer.floor_p50_ns, bundle.parameters.placement
    left_out: Dict[Tuple[float, int], OmittedPercentile] = {}
    for latency in (arm.latency for arm in arms if arm.latency is not None and arm.latency.n):
        for key, q in PERCENTILES:
            if key in latency.omitted:
                left_out[(q, latency.n)] = OmittedPercentile(key, latency.n, min_n_for(q))
    if left_out:
        figures = OmittedFigures(tuple(left_out[k] for k in sorted(left_out)))
        records.append(WarningRecord(WarningKind.PERCENTILES_OMITTED, NOTE_LEVEL, None, figures.to_dict()))

    def warn(kind: WarningKind, name: str, figures: Dict[str, object]) -> None:
        records.append(WarningRecord(kind, WARNING_LEVEL, name, figures))

    for arm in arms:
        spread = arm.spread
        if spread is not None and spread.max_over_min is not None and spread.max_over_min > SPREAD_LIMIT:
            warn(WarningKind.WORKER_SPREAD, arm.name, {"of": spread.of, "max_over_min": spread.max_over_min,
                                                      "between": spread.between or "workers"})
        quality = QualityFlags.from_dict(arm.entry.get("quality"))
        populations = quality.populations.populations if quality.populations is not None else ()
        if len(populations) >= 2:
            cause = _population_cause(arm, populations, placement)
            warn(WarningKind.POPULATIONS, arm.name, {"populations": [p.to_dict() for p in populations],
                                                    "cause": None if cause is None else cause.to_dict()})
        if quality.switch_interval_tail is not None and gil_contended(arm, bundle):
            warn(WarningKind.SWITCH_INTERVAL_TAIL, arm.name, quality.switch_interval_tail.to_dict())
        if quality.polling is not None:
            warn(WarningKind.POLLING, arm.name, quality.polling.to_dict())
        for series, stats in [("", arm.latency)] + list(arm.components) if floor else ():
            if stats is not None and stats.p50_ns is not None and stats.p50_ns < FLOOR_MULTIPLE * floor:
                warn(WarningKind.TIMER_FLOOR, arm.name, TimerFloorFigures(
                    series or None, stats.p50_ns, floor, FLOOR_MULTIPLE, bundle.system.clocksource).to_dict())
    return [record.to_dict() for record in records]
