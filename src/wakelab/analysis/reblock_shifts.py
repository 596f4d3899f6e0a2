"""What moved between two traced runs, in re-blocks: each cause's time per wake, and its change.

A re-block is absent from most wakes of a run and long in a few (a GIL wait behind a busy thread: 5 ms in one wake in
five), so its p50 is 0 in both runs and says nothing.  What it costs a run is its *mean time per wake*, the figure
that adds up to the mean latency: each cause is compared by that, with a percentile-bootstrap interval of the
difference."""

from __future__ import annotations

import dataclasses
import math
import zlib
from typing import Dict, List, Mapping, Optional, Sequence

from wakelab.analysis.reblocks import cause_order, cause_phrase


@dataclasses.dataclass(frozen=True)
class ReblockShift:
    """One re-block cause in two traced runs: its mean time per wake in each (ns), the difference with its interval
    (NaN: too few wakes to resample), and in how many wakes of each run it occurred."""

    cause: str
    baseline_ns: float
    other_ns: float
    difference_ns: float
    low_ns: float
    high_ns: float
    wakes_baseline: int
    wakes_other: int
    confidence: float

    def excludes_zero(self) -> bool:
        return self.low_ns > 0.0 or self.high_ns < 0.0

    def to_dict(self) -> Dict[str, object]:
        from wakelab.analysis.compare.bootstrap import finite
        return {"cause": self.cause, "baseline_mean_ns": self.baseline_ns, "other_mean_ns": self.other_ns,
                "difference_ns": self.difference_ns, "low_ns": finite(self.low_ns), "high_ns": finite(self.high_ns),
                "confidence": self.confidence, "wakes_baseline": self.wakes_baseline, "wakes_other": self.wakes_other}


#: Fewer traced wakes than this on a side: the difference is given without an interval.
MIN_WAKES = 20


def compare_reblocks(baseline: Mapping[str, Sequence[float]], other: Mapping[str, Sequence[float]], n_baseline: int,
                     n_other: int, confidence: float = 0.95, resamples: int = 2000, seed: int = 0,
                     name: str = "") -> List[ReblockShift]:
    """Each cause's mean time per wake in both runs (per-wake series by cause), largest change first."""
    import numpy as np

    shifts: List[ReblockShift] = []
    for cause in cause_order(list(baseline) + list(other)):
        a = np.asarray(baseline.get(cause, np.zeros(n_baseline)), dtype=np.float64)
        b = np.asarray(other.get(cause, np.zeros(n_other)), dtype=np.float64)
        mean_a, mean_b = float(a.mean()) if a.size else 0.0, float(b.mean()) if b.size else 0.0
        low = high = float("nan")
        if min(a.size, b.size) >= MIN_WAKES and resamples > 0:
            stream = [seed, zlib.crc32(("%s/reblock/%s" % (name, cause)).encode("utf-8"))]
            rng_a, rng_b = (np.random.default_rng(s) for s in np.random.SeedSequence(stream).spawn(2))
            boot_a = a[rng_a.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
            boot_b = b[rng_b.integers(0, b.size, size=(resamples, b.size))].mean(axis=1)
            alpha = (1.0 - confidence) / 2.0
            low, high = (float(v) for v in np.quantile(boot_b - boot_a, [alpha, 1.0 - alpha]))
        shifts.append(ReblockShift(cause, mean_a, mean_b, mean_b - mean_a, low, high, int(np.count_nonzero(a)),
                                   int(np.count_nonzero(b)), confidence))
    shifts.sort(key=lambda s: (-abs(s.difference_ns), s.cause))
    return shifts


def moved_most(shifts: Sequence[ReblockShift]) -> Optional[ReblockShift]:
    """The largest change whose interval excludes 0, else the largest (None: no re-block in either run)."""
    significant = [s for s in shifts if s.excludes_zero()]
    pool = significant or [s for s in shifts if s.difference_ns != 0]
    return max(pool, key=lambda s: abs(s.difference_ns)) if pool else None


def format_reblocks_moved(arm: str, shifts: Sequence[ReblockShift], baseline: str, other: str) -> Optional[str]:
    """One line: the re-block that moved most between two traced runs (None when neither run re-blocked)."""
    from wakelab.formatting import format_signed_us, format_us

    found = moved_most(shifts)
    if found is None:
        return None
    what = cause_phrase(found.cause).replace("re-blocked on ", "on ", 1)
    ci = "" if math.isnan(found.low_ns) else ", CI %s to %s" % (format_signed_us(found.low_ns), format_signed_us(found.high_ns))
    figures = "%s µs a wake in %s (%d wakes), %s in %s (%d) (%s µs%s)" % (
        format_us(found.baseline_ns), baseline, found.wakes_baseline, format_us(found.other_ns), other,
        found.wakes_other, format_signed_us(found.difference_ns), ci)
    if found.excludes_zero():
        return "%s: of its re-blocks, %s moved most: %s" % (arm, what, figures)
    return "%s: no re-block moved beyond its interval; the largest change, %s: %s" % (arm, what, figures)
