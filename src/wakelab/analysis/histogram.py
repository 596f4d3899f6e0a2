"""Log-binned histograms of wake latencies (``wakelab show RUN --hist``).

Why log bins.  Wake latencies are skewed: most wakes sit within a factor of
two of the median, and a few (a preempted waiter, a halted CPU, a GC pause)
land 10-1000 times higher.  Linear bins wide enough to reach the outlier put
the whole body into one bin; bins of equal width on a log scale keep the
body's shape and still show the outlier, a row of its own, as cyclictest's
and ``pyperf hist``'s histograms do.

The edges are the powers ``10 ** (k / b)`` for whole ``k``, with ``b`` bins
per decade (10, then 5, 4, 2, 1 when 10 would give more than ``max_bins``
rows), so they fall on round numbers (1, 2, 5 and 10 for ``b = 10``: 1.00,
1.26, 1.58, 2.00, 2.51, 3.16, 3.98, 5.01, 6.31, 7.94 µs) and are the same for
every run: two runs' histograms line up.  A bin holds the wakes with
``low_ns <= latency < high_ns``.  A 0 ns wake (a timer that did not tick) has
no place on a log scale and is counted apart (``zero_count``).

p50 and p99 are computed as summary.json computes them
(:func:`wakelab.analysis.stats.percentile`, type 7); p99 only where the arm
has the wakes it needs (n >= 100), as in the summary.

numpy is imported lazily, inside :func:`log_histogram`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Optional, Sequence, Tuple

from wakelab.analysis.stats import min_n_for, percentile

# Bins per decade tried, finest first.
BINS_PER_DECADE = (10, 5, 4, 2, 1)
# Rows a histogram should fit in (one screen with its header).
MAX_BINS = 40


@dataclasses.dataclass(frozen=True)
class Bin:
    """Wakes with ``low_ns <= latency < high_ns``."""

    low_ns: float
    high_ns: float
    count: int


@dataclasses.dataclass(frozen=True)
class Histogram:
    """A log-binned histogram of one arm's wakes (times in ns).

    ``bins`` run from the bin holding the fastest wake to the one holding the
    slowest, empty bins between them included.  ``p99_ns`` is None when the
    arm has too few wakes for it.
    """

    n: int
    bins_per_decade: int
    bins: Tuple[Bin, ...]
    zero_count: int
    min_ns: int
    max_ns: int
    p50_ns: float
    p99_ns: Optional[float]

    def bin_index(self, value_ns: float) -> Optional[int]:
        """The index of the bin that holds ``value_ns``, None if none does."""
        for index, one in enumerate(self.bins):
            if one.low_ns <= value_ns < one.high_ns:
                return index
        return None


def _edge(k: int, bins_per_decade: int) -> float:
    return float(10.0 ** (k / bins_per_decade))


def _span(low: float, high: float, bins_per_decade: int) -> Tuple[int, int]:
    """``(k_low, k_high)``: edge exponents with ``edge(k_low) <= low`` and ``high < edge(k_high)``."""
    k_low = math.floor(math.log10(low) * bins_per_decade)
    k_high = math.floor(math.log10(high) * bins_per_decade) + 1
    # log10 rounds: a value on an edge may land one exponent off either way.
    while _edge(k_low, bins_per_decade) > low:
        k_low -= 1
    while _edge(k_low + 1, bins_per_decade) <= low:
        k_low += 1
    while _edge(k_high, bins_per_decade) <= high:
        k_high += 1
    while k_high - 1 > k_low and _edge(k_high - 1, bins_per_decade) > high:
        k_high -= 1
    return k_low, k_high


def choose_bins_per_decade(low_ns: float, high_ns: float, max_bins: int = MAX_BINS) -> int:
    """The finest of :data:`BINS_PER_DECADE` that spans ``low_ns..high_ns`` in at most ``max_bins`` bins."""
    for per_decade in BINS_PER_DECADE:
        k_low, k_high = _span(low_ns, high_ns, per_decade)
        if k_high - k_low <= max_bins:
            return per_decade
    return BINS_PER_DECADE[-1]


def log_histogram(
    samples_ns: Sequence[int],
    bins_per_decade: Optional[int] = None,
    max_bins: int = MAX_BINS,
) -> Histogram:
    """Bin ``samples_ns`` (wake latencies in ns, >= 0) on a log scale.

    ``bins_per_decade`` fixes the resolution; by default it is the finest
    that fits ``max_bins`` bins.  Raises ValueError for no samples or a
    negative one.
    """
    import numpy as np

    if len(samples_ns) == 0:
        raise ValueError("no samples to bin")
    values: Any = np.sort(np.asarray(samples_ns, dtype=np.int64))
    if values[0] < 0:
        raise ValueError("a latency sample is negative (%d ns)" % values[0])
    n = int(values.size)
    ordered = values.tolist()
    p50 = float(percentile(ordered, 50.0))
    p99 = float(percentile(ordered, 99.0)) if n >= min_n_for(99.0) else None
    positive = values[values > 0]
    zeros = n - int(positive.size)
    bins: Tuple[Bin, ...] = ()
    if positive.size:
        low, high = float(positive[0]), float(positive[-1])
        if bins_per_decade is None:
            bins_per_decade = choose_bins_per_decade(low, high, max_bins)
        if bins_per_decade < 1:
            raise ValueError("bins per decade must be at least 1, got %d" % bins_per_decade)
        k_low, k_high = _span(low, high, bins_per_decade)
        edges = np.array([_edge(k, bins_per_decade) for k in range(k_low, k_high + 1)])
        # side="right": a wake on an edge belongs to the bin that starts there.
        index = np.searchsorted(edges, positive.astype(np.float64), side="right") - 1
        counts = np.bincount(index, minlength=len(edges) - 1)
        bins = tuple(Bin(float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(len(edges) - 1))
    return Histogram(
        n=n,
        bins_per_decade=bins_per_decade or BINS_PER_DECADE[0],
        bins=bins,
        zero_count=zeros,
        min_ns=int(values[0]),
        max_ns=int(values[-1]),
        p50_ns=p50,
        p99_ns=p99,
    )
