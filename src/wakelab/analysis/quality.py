"""Measurement-quality warnings: reasons to distrust a figure, never errors (stdlib only).

As pyperf's ``check`` does for throughput, these say when a run's numbers
should be read with care and what to do about it: workers that disagree,
several populations of wakes mixed in one distribution, figures near the
timer's floor, and tails that sit at multiples of the GIL switch interval
(another Python thread held the GIL).  A percentile left out for want of wakes
is a *note*, not a warning: the figure is absent, not doubtful.

Per-arm flags are computed from the raw samples when the arm finishes
(:func:`quality_flags`, stored under ``quality``).  :func:`derive_warnings`
turns the flags and the summary's figures into *records* -- ``kind``,
``level``, ``arm``, ``figures`` -- stored under ``warnings`` in summary.json;
renderers word them (hyperfine's warnings are an enum turned into sentences at
the edge in the same way).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

from wakelab.analysis.caveats import gil_enabled
from wakelab.analysis.stats import PERCENTILES, min_n_for, percentile

# Record levels.
WARNING = "warning"
NOTE = "note"

# Record kinds.
PERCENTILES_OMITTED = "percentiles-omitted"
WORKER_SPREAD = "worker-spread"
POPULATIONS = "populations"
SWITCH_INTERVAL_TAIL = "switch-interval-tail"
TIMER_FLOOR = "timer-floor"

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

# A figure below this multiple of the timer floor (back-to-back perf_counter_ns) has the clock's
# own cost as at least a tenth of it.  On a TSC clocksource (~50 ns) no wake gets close; on hpet
# or acpi_pm (about 1 µs per read) the fast arms do.
FLOOR_MULTIPLE = 10


def find_populations(samples_ns: Sequence[int]) -> Optional[Dict[str, Any]]:
    """Two or more well-separated populations of wakes in ``samples_ns``, or None.

    Peaks of the smoothed log2 histogram are taken largest first; a peak is
    kept when it is at least an octave from every peak kept before it, with a
    valley deeper than half the smaller peak between them.  Each kept peak's
    population is the wakes between the valleys either side of it; it counts
    when it holds at least 10% of the wakes.  Returns ``{"populations":
    [{"share", "low_ns", "high_ns"}, ...]}``, largest share first, where
    ``low_ns``..``high_ns`` are the 10th and 90th percentiles of the
    population's own wakes (measured values, not bin positions).
    """
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
        {
            "share": round(len(group) / n, 4),
            "low_ns": int(round(percentile(group, POPULATION_RANGE_Q))),
            "high_ns": int(round(percentile(group, 100.0 - POPULATION_RANGE_Q))),
        }
        for group in groups
        if len(group) >= MIN_POPULATION_SHARE * n
    ]
    if len(populations) < 2:
        return None
    populations.sort(key=lambda p: (-p["share"], p["low_ns"]))
    return {"populations": populations}


def switch_interval_tail(samples_ns: Sequence[int], interval_s: Optional[float]) -> Optional[Dict[str, Any]]:
    """Wakes clustered just above multiples of the switch interval, when they matter.

    Counts the wakes in a narrow band at each of the first eight multiples of
    ``interval_s`` (see ``SWITCH_BAND_*``).  Reported when at least 3 wakes and
    1% of all fall in the bands, and the bands are at least three times as
    dense as the rest of the span from half an interval to the last band.
    Returns ``{"share", "count", "interval_s", "multiples"}`` (the multiples
    that hold wakes), or None.
    """
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
    return {"share": round(share, 4), "count": near, "interval_s": interval_s, "multiples": sorted(per_multiple)}


def gil_contended(entry: Mapping[str, Any], summary: Mapping[str, Any]) -> bool:
    """Whether another Python thread may hold the GIL the arm's waiter needs.

    Only busy Python threads (``--cpu-threads``) hold it for a switch
    interval: the notifier of every driver blocks right after its notify, and
    the spinning waiters release it between polls.  None holds it when the GIL
    is off, for the C floor, or for a waiter in another process (another
    interpreter, its own GIL).
    """
    if not gil_enabled(summary) or entry.get("family") == "native" or entry.get("scope") == "cross-process":
        return False
    conditions = summary.get("conditions") or {}
    busy = conditions.get("cpu_threads") or 0
    applied = [(w.get("applied") or {}).get("cpu_threads") or 0 for w in entry.get("workers") or [] if isinstance(w, Mapping)]
    return bool(busy) or any(applied)


def quality_flags(samples_ns: Sequence[int], interval_s: Optional[float]) -> Dict[str, Any]:
    """The per-arm flags stored under ``quality`` in summary.json.

    ``interval_s`` is the switch interval, or None where no Python thread can
    hold the GIL the waiter needs (:func:`gil_contended`): then no tail is looked for.
    """
    return {
        "populations": find_populations(samples_ns),
        "switch_interval_tail": switch_interval_tail(samples_ns, interval_s),
    }


def _record(kind: str, arm: Optional[str], figures: Dict[str, Any], level: str = WARNING) -> Dict[str, Any]:
    return {"kind": kind, "level": level, "arm": arm, "figures": figures}


def _worker_sides(entry: Mapping[str, Any]) -> List[Optional[bool]]:
    """Per worker: True when notifier and waiter were last seen on the same CPU, False when on
    different ones, None when not recorded."""
    info = entry.get("info") or {}
    workers = info.get("workers")
    infos: List[Any] = list(workers) if isinstance(workers, list) else [info]
    sides: List[Optional[bool]] = []
    for one in infos:
        one = one if isinstance(one, Mapping) else {}
        notifier, waiter = one.get("notifier_cpu_seen"), one.get("waiter_cpu_seen")
        sides.append(None if not isinstance(notifier, int) or not isinstance(waiter, int) else notifier == waiter)
    return sides


def _population_cause(entry: Mapping[str, Any], populations: Sequence[Mapping[str, Any]], placement: object) -> Optional[Dict[str, Any]]:
    """What in the evidence separates the populations, or None when nothing recorded does.

    ``cpus``: each wake's recorded CPUs (``cpu_split``) put the same-CPU and
    the cross-CPU wakes' medians in different populations, each side holding
    at least MIN_POPULATION_SHARE of the wakes: where the wake ran explains it.
    ``workers``: the worker processes' own medians fall in different
    populations (the level shifted between processes).  ``placement``: the run
    was not pinned and the workers recorded notifier and waiter on the same CPU
    in some and on different CPUs in others.
    """
    by_cpu = _cpu_cause(entry, populations)
    if by_cpu is not None:
        return by_cpu
    medians = [w.get("p50_ns") for w in entry.get("workers") or [] if isinstance(w, Mapping)]
    medians = [float(m) for m in medians if isinstance(m, (int, float))]
    homes = set()
    for median in medians:
        for index, population in enumerate(populations):
            if population["low_ns"] <= median <= population["high_ns"]:
                homes.add(index)
    if len(homes) >= 2:
        return {"kind": "workers", "worker_p50_ns": sorted(medians)}
    sides = [s for s in _worker_sides(entry) if s is not None]
    if placement in (None, "any") and True in sides and False in sides:
        return {"kind": "placement", "same_cpu_workers": sides.count(True), "split_workers": sides.count(False)}
    return None


def _home(value: float, populations: Sequence[Mapping[str, Any]]) -> Optional[int]:
    """The population whose range holds ``value``, else the one whose range is nearest (log scale)."""
    best, distance = None, None
    for index, population in enumerate(populations):
        low, high = float(population["low_ns"]), float(population["high_ns"])
        if low <= value <= high:
            return index
        gap = abs(math.log(value / (low if value < low else high))) if value > 0 and low > 0 else None
        if gap is not None and (distance is None or gap < distance):
            best, distance = index, gap
    return best


def _cpu_cause(entry: Mapping[str, Any], populations: Sequence[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    split = entry.get("cpu_split")
    if not isinstance(split, Mapping):
        return None
    same, cross = split.get("same_cpu") or {}, split.get("cross_cpu") or {}
    n_same, n_cross = same.get("n") or 0, cross.get("n") or 0
    known = n_same + n_cross
    same_p50, cross_p50 = same.get("p50_ns"), cross.get("p50_ns")
    if not known or not isinstance(same_p50, (int, float)) or not isinstance(cross_p50, (int, float)):
        return None
    if min(n_same, n_cross) < MIN_POPULATION_SHARE * known:
        return None
    homes = {_home(float(same_p50), populations), _home(float(cross_p50), populations)}
    if len(homes) < 2 or None in homes:
        return None
    return {"kind": "cpus", "cross_share": split.get("cross_share"), "same_cpu_p50_ns": same_p50,
            "cross_cpu_p50_ns": cross_p50, "same_cpu_n": n_same, "cross_cpu_n": n_cross}


def derive_warnings(summary: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Quality warnings and notes for ``summary``, as records, from its figures and per-arm flags.

    Each record is ``{"kind", "level", "arm", "figures"}``; see the module
    docstring for the kinds.  Records come in arm order, the run-wide note first.
    """
    records: List[Dict[str, Any]] = []
    arms: Sequence[Mapping[str, Any]] = summary.get("arms") or []
    timer: Mapping[str, Any] = summary.get("timer") or {}
    floor = timer.get("floor_p50_ns")
    placement = (summary.get("parameters") or {}).get("placement")

    left_out: Dict[tuple, Dict[str, Any]] = {}
    for e in arms:
        latency = e.get("latency") or {}
        n = latency.get("n")
        for key, q in PERCENTILES:
            if n and key in (latency.get("omitted") or {}):
                left_out[(q, n)] = {"percentile": key, "n": n, "needs_n": min_n_for(q)}
    if left_out:
        records.append(_record(PERCENTILES_OMITTED, None, {"left_out": [left_out[k] for k in sorted(left_out)]}, NOTE))

    for e in arms:
        name = str(e.get("name"))
        spread: Mapping[str, Any] = e.get("spread") or {}
        ratio = spread.get("max_over_min")
        if isinstance(ratio, (int, float)) and ratio > SPREAD_LIMIT:
            records.append(_record(WORKER_SPREAD, name, {"of": spread.get("of"), "max_over_min": ratio,
                                                         "between": spread.get("between") or "workers"}))
        quality: Mapping[str, Any] = e.get("quality") or {}
        populations = (quality.get("populations") or {}).get("populations") or []
        if len(populations) >= 2:
            records.append(_record(POPULATIONS, name, {
                "populations": [dict(p) for p in populations],
                "cause": _population_cause(e, populations, placement),
            }))
        tail: Mapping[str, Any] = quality.get("switch_interval_tail") or {}
        if tail and gil_contended(e, summary):
            records.append(_record(SWITCH_INTERVAL_TAIL, name, dict(tail)))
        if floor:
            series = [("", e.get("latency") or {})] + sorted((e.get("components") or {}).items())
            for series_name, stats in series:
                p50 = (stats or {}).get("p50_ns")
                if p50 is not None and p50 < FLOOR_MULTIPLE * floor:
                    records.append(_record(TIMER_FLOOR, name, {
                        "series": series_name or None, "p50_ns": p50, "floor_ns": floor, "multiple": FLOOR_MULTIPLE,
                        "clocksource": (summary.get("system") or {}).get("clocksource"),
                    }))
    return records
