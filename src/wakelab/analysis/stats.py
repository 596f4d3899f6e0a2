"""Statistics on raw nanosecond samples: pure functions, no I/O, stdlib only.

Percentiles are type 7 (:func:`wakelab.percentile.percentile`).  A tail percentile is only reported when the sample
holds enough wakes to put at least one above it: ``pQ`` needs ``n >= 1 / (1 - Q/100)`` (p90: 10, p99: 100, p99.9:
1000).  Below that the figure would just be the maximum in disguise, so it is omitted with a reason."""

from __future__ import annotations

import dataclasses
import math
import statistics
from typing import Dict, List, Optional, Sequence, Tuple

from wakelab.evidence.figures import LatencyFigures, RateFigures
from wakelab.percentile import percentile

# The percentiles every latency arm reports, as (key, q in percent).
PERCENTILES: Tuple[Tuple[str, float], ...] = (("p50", 50.0), ("p90", 90.0), ("p99", 99.0), ("p99_9", 99.9))


def min_n_for(q: float) -> int:
    """Smallest sample size for which percentile ``q`` (0..100) is reported."""
    if q <= 50.0:
        return 1
    return int(math.ceil(round(1.0 / (1.0 - q / 100.0), 9)))


@dataclasses.dataclass(frozen=True)
class LatencyStats(LatencyFigures):
    """Summary of one latency arm (ns), as summary.json stores it; a percentile not reported is in ``omitted``."""

    @classmethod
    def of(cls, n: int, lost: int, min_ns: Optional[int], max_ns: Optional[int], mean_ns: Optional[float],
           stdev_ns: Optional[float], percentiles: Dict[str, float], omitted: Dict[str, str]) -> "LatencyStats":
        p50, p90, p99, p99_9 = (percentiles.get(key) for key, _ in PERCENTILES)
        return cls(n, lost, min_ns, max_ns, mean_ns, stdev_ns, p50, p90, p99, p99_9, omitted)

    @property
    def percentiles_ns(self) -> Dict[str, float]:
        return {key: getattr(self, key + "_ns") for key, _ in PERCENTILES if getattr(self, key + "_ns") is not None}


def reportable(n: int) -> Tuple[List[Tuple[str, float]], Dict[str, str]]:
    """The percentiles ``n`` wakes report, and why each of the others is omitted."""
    omitted = {key: "no samples" if n == 0 else "needs n >= %d, this arm has n = %d" % (min_n_for(q), n)
               for key, q in PERCENTILES if n < min_n_for(q)}
    return [(key, q) for key, q in PERCENTILES if key not in omitted], omitted


def summarize_latency(samples_ns: Sequence[int], lost: int = 0) -> LatencyStats:
    """n, lost, min, percentiles, max, mean and sample stdev of ``samples_ns`` (ns)."""
    ordered = sorted(samples_ns)
    n = len(ordered)
    wanted, omitted = reportable(n)
    percentiles = {key: percentile(ordered, q) for key, q in wanted}
    return LatencyStats.of(n, lost, ordered[0] if n else None, ordered[-1] if n else None, statistics.fmean(ordered) if n else None,
                           statistics.stdev(ordered) if n >= 2 else None, percentiles, omitted)


@dataclasses.dataclass(frozen=True)
class RateStats(RateFigures):
    """Summary of a rate arm: operations per second per round (the median round's, the slowest's, the fastest's, the
    empty loop's); ``net_ns_per_op`` the median round's cost per call less the empty loop's (never below zero)."""

    def to_dict(self) -> Dict[str, object]:
        out = super().to_dict()
        out["net_ns_per_op"] = out.pop("net_ns_per_op")  # summary.json keeps it after ns_per_op
        return out


def summarize_rate(n_per_round: int, round_ns: Sequence[int], baseline_round_ns: Sequence[int]) -> RateStats:
    """Per-round rates (ops/s) of ``n_per_round`` operations taking ``round_ns`` each."""
    if not round_ns or not baseline_round_ns:
        raise ValueError("a rate needs at least one round and one baseline round")
    if n_per_round <= 0:
        raise ValueError("n_per_round must be positive")
    # A round can't take 0 ns on a real clock, but keep the division safe.
    rates = [n_per_round * 1e9 / max(t, 1) for t in round_ns]
    baseline_rates = [n_per_round * 1e9 / max(t, 1) for t in baseline_round_ns]
    ns_per_op = statistics.median(round_ns) / n_per_round
    baseline_ns_per_op = statistics.median(baseline_round_ns) / n_per_round
    return RateStats(rounds=len(round_ns), n_per_round=n_per_round, ops_per_s=statistics.median(rates),
                     min_ops_per_s=min(rates), max_ops_per_s=max(rates),
                     baseline_ops_per_s=statistics.median(baseline_rates), ns_per_op=ns_per_op,
                     net_ns_per_op=max(ns_per_op - baseline_ns_per_op, 0.0))


def cpu_split(samples_ns: Sequence[int], waiter_cpus: Sequence[int], notifier_cpus: Sequence[int]) -> Optional[Dict[str, object]]:
    """An arm's wakes split by where they ran: notifier and waiter on one CPU, or on two (CPUs -1: unknown); None when
    no wake has both recorded."""
    if not samples_ns or len(waiter_cpus) != len(samples_ns) or len(notifier_cpus) != len(samples_ns):
        return None
    same: list = []
    cross: list = []
    unknown = 0
    for value, waiter, notifier in zip(samples_ns, waiter_cpus, notifier_cpus):
        if waiter < 0 or notifier < 0:
            unknown += 1
        elif waiter == notifier:
            same.append(value)
        else:
            cross.append(value)
    known = len(same) + len(cross)
    if not known:
        return None

    def population(values: list) -> Dict[str, object]:
        ordered = sorted(values)
        return {"n": len(ordered), "p50_ns": percentile(ordered, 50.0) if ordered else None,
                "p99_ns": percentile(ordered, 99.0) if len(ordered) >= min_n_for(99.0) else None}

    return {"same_cpu": population(same), "cross_cpu": population(cross), "unknown": unknown,
            "cross_share": round(len(cross) / known, 4)}


def repetition_spread(medians: Sequence[Optional[float]]) -> Optional[Dict[str, object]]:
    """How far apart the repetitions' own medians are, or None with fewer than two repetitions measured."""
    values = [float(v) for v in medians if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(values) < 2:
        return None
    middle = statistics.median(values)
    return {"values": values, "min": min(values), "max": max(values),
            "range_pct": round((max(values) - min(values)) / middle * 100.0, 2) if middle > 0 else None}
