"""Measurement-quality warnings: reasons to distrust a figure, never errors (stdlib only).

As pyperf's ``check`` does for throughput, these say when a run's numbers
should be read with care and what to do about it: too few wakes for a
percentile, workers that disagree, two populations of wakes mixed in one
distribution, figures near the timer's floor, and tails that sit at
multiples of the GIL switch interval (another thread held the GIL).
Per-arm flags are computed from the raw samples when the arm finishes
(:func:`quality_flags`); :func:`derive_warnings` turns them into sentences.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence

# Workers whose medians differ by more than this factor are worth a warning.
SPREAD_LIMIT = 1.5
# Bimodality: histogram bins per octave, the smallest share a mode must hold.
_BINS_PER_OCTAVE = 4
_MIN_MODE_SHARE = 0.10
# Switch-interval tails: a sample within this factor of k * interval counts.
_SWITCH_TOLERANCE = 1.25
FLOOR_MULTIPLE = 10


def find_modes(samples_ns: Sequence[int]) -> Optional[Dict[str, float]]:
    """Two well-separated modes in ``samples_ns``, or None.

    Works on a log2 histogram (a quarter octave per bin), smoothed over three
    bins.  Two peaks count as modes when each holds at least 10% of the
    samples (in its 3-bin neighbourhood), they are at least an octave apart,
    and the valley between them drops below half of the smaller peak.
    """
    values = [v for v in samples_ns if v > 0]
    n = len(values)
    if n < 50:
        return None
    bins: Dict[int, int] = {}
    for v in values:
        b = int(math.floor(math.log2(v) * _BINS_PER_OCTAVE))
        bins[b] = bins.get(b, 0) + 1
    low, high = min(bins), max(bins)
    counts = [bins.get(b, 0) for b in range(low, high + 1)]
    smooth = [sum(counts[max(0, i - 1) : i + 2]) for i in range(len(counts))]
    peaks = [
        i for i in range(len(smooth))
        if smooth[i] >= _MIN_MODE_SHARE * n
        and smooth[i] >= (smooth[i - 1] if i > 0 else 0)
        and smooth[i] > (smooth[i + 1] if i + 1 < len(smooth) else 0)
    ]
    best = None
    for a_index, a in enumerate(peaks):
        for b in peaks[a_index + 1 :]:
            if b - a < _BINS_PER_OCTAVE:
                continue
            valley = min(smooth[a : b + 1])
            if valley < 0.5 * min(smooth[a], smooth[b]):
                best = (a, b)
                break
        if best:
            break
    if best is None:
        return None
    a, b = best
    split = 2 ** ((low + (a + b) / 2) / _BINS_PER_OCTAVE)
    return {
        "low_mode_ns": 2 ** ((low + a + 0.5) / _BINS_PER_OCTAVE),
        "high_mode_ns": 2 ** ((low + b + 0.5) / _BINS_PER_OCTAVE),
        "high_share": sum(1 for v in values if v > split) / n,
    }


def switch_interval_tail(samples_ns: Sequence[int], interval_s: float) -> Optional[Dict[str, float]]:
    """Share of wakes near 1..4 switch intervals, when it is large enough to matter."""
    if not samples_ns or interval_s <= 0:
        return None
    interval_ns = interval_s * 1e9
    near = 0
    for v in samples_ns:
        k = round(v / interval_ns)
        if 1 <= k <= 4 and k * interval_ns / _SWITCH_TOLERANCE <= v <= k * interval_ns * _SWITCH_TOLERANCE:
            near += 1
    share = near / len(samples_ns)
    if near >= 3 and share >= 0.01:
        return {"share": share, "interval_s": interval_s}
    return None


def quality_flags(samples_ns: Sequence[int], interval_s: float) -> Dict[str, Any]:
    """The per-arm flags stored under ``quality`` in summary.json."""
    return {"modes": find_modes(samples_ns), "switch_interval_tail": switch_interval_tail(samples_ns, interval_s)}


def derive_warnings(summary: Mapping[str, Any]) -> List[str]:
    """Quality warnings for ``summary``, from its figures and per-arm flags."""
    from wakelab.formatting import format_ns

    warnings: List[str] = []
    arms: Sequence[Mapping[str, Any]] = summary.get("arms") or []
    timer: Mapping[str, Any] = summary.get("timer") or {}
    floor = timer.get("floor_p50_ns")

    short = sorted(
        {
            "%s (n=%s)" % (key.replace("_", "."), (e.get("latency") or {}).get("n"))
            for e in arms
            for key in ((e.get("latency") or {}).get("omitted") or {})
            if (e.get("latency") or {}).get("n")
        }
    )
    if short:
        warnings.append(
            "Too few wakes for some percentiles, which are left out: %s. pQ needs n >= 1/(1-Q/100) "
            "(p99: 100, p99.9: 1000); raise --n." % ", ".join(short)
        )
    for e in arms:
        spread: Mapping[str, Any] = e.get("spread") or {}
        ratio = spread.get("max_over_min")
        if isinstance(ratio, (int, float)) and ratio > SPREAD_LIMIT:
            warnings.append(
                "%s: worker processes disagree (their %s differ %.1f×): the level shifts between processes; "
                "raise --workers and compare runs side by side." % (e["name"], "medians" if spread.get("of") == "p50_ns" else "rates", ratio)
            )
        quality: Mapping[str, Any] = e.get("quality") or {}
        modes: Mapping[str, float] = quality.get("modes") or {}
        if modes:
            warnings.append(
                "%s: two populations of wakes, around %s and %s (%.0f%% in the slower one); a single percentile "
                "hides that. Placement often explains it: try --placement same,split." % (
                    e["name"], format_ns(modes["low_mode_ns"]), format_ns(modes["high_mode_ns"]), 100 * modes["high_share"])
            )
        tail: Mapping[str, float] = quality.get("switch_interval_tail") or {}
        if tail:
            warnings.append(
                "%s: %.1f%% of wakes took about 1-4 switch intervals (%s each): another thread held the GIL "
                "and the waiter had to wait for the interpreter to force a switch." % (
                    e["name"], 100 * tail["share"], format_ns(tail["interval_s"] * 1e9))
            )
        p50 = (e.get("latency") or {}).get("p50_ns")
        if floor and p50 is not None and p50 < FLOOR_MULTIPLE * floor:
            warnings.append(
                "%s: p50 %s is within %d× the timer floor (%s ns): much of the figure is the clock's own cost."
                % (e["name"], format_ns(p50), FLOOR_MULTIPLE, floor)
            )
    return warnings
