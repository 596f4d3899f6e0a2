"""Log-binned histograms of wake latencies (``wakelab show RUN --hist``).

Why log bins.  Wake latencies are skewed: most wakes sit within a factor of two of the median, and a
few (a preempted waiter, a halted CPU, a GC pause) land 10-1000 times higher.  Linear bins wide enough
to reach the outlier put the whole body into one bin; log bins keep the body's shape and still show
the outlier, as cyclictest's and ``pyperf hist``'s histograms do.  The edges are ``10 ** (k / b)`` with
``b`` bins per decade (10, then 5, 4, 2, 1 to stay within ``max_bins``), so they fall on round numbers
and are the same for every run: two runs' histograms line up.  A 0 ns wake has no place on a log scale
and is counted apart (``zero_count``)."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from wakelab.analysis.stats import min_n_for

if TYPE_CHECKING:
    from wakelab.analysis.hdr import LogLinearHistogram
    from wakelab.evidence.model import ArmSamples

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
    """A log-binned histogram of one arm's wakes (ns), empty bins included; ``from_counters``: binned from a soak's
    log-linear histogram (each wake within ``relative_error`` of its own; ``raw_kept`` the raw samples kept)."""

    n: int
    bins_per_decade: int
    bins: Tuple[Bin, ...]
    zero_count: int
    min_ns: int
    max_ns: int
    p50_ns: float
    p99_ns: Optional[float]
    from_counters: bool = False
    relative_error: float = 0.0
    raw_kept: Optional[int] = None

    def bin_index(self, value_ns: float) -> Optional[int]:
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


def _log_bins(positive: Sequence[float], weights: Optional[Sequence[int]], bins_per_decade: Optional[int],
              max_bins: int) -> Tuple[Optional[int], Tuple[Bin, ...]]:
    if not positive:
        return bins_per_decade, ()
    low, high = float(positive[0]), float(positive[-1])
    if bins_per_decade is None:
        bins_per_decade = choose_bins_per_decade(low, high, max_bins)
    if bins_per_decade < 1:
        raise ValueError("bins per decade must be at least 1, got %d" % bins_per_decade)
    k_low, k_high = _span(low, high, bins_per_decade)
    edges = [_edge(k, bins_per_decade) for k in range(k_low, k_high + 1)]
    counts = [0] * len(edges)  # _span puts every value below the last edge; one spare slot all the same
    for i, value in enumerate(positive):
        # bisect_right: a wake on an edge belongs to the bin that starts there.
        counts[bisect.bisect_right(edges, value) - 1] += 1 if weights is None else weights[i]
    return bins_per_decade, tuple(Bin(edges[i], edges[i + 1], counts[i]) for i in range(len(edges) - 1))


def log_histogram(samples_ns: Sequence[int], bins_per_decade: Optional[int] = None, max_bins: int = MAX_BINS) -> Histogram:
    """Bin ``samples_ns`` (ns, >= 0) on a log scale; ValueError for no samples or a negative one."""
    return log_histogram_weighted([int(v) for v in samples_ns], [1] * len(samples_ns), bins_per_decade, max_bins)


def weighted_percentile(values_ns: Sequence[float], counts: Sequence[int], q: float) -> float:
    """Type-7 percentile ``q`` (0..100) of ascending ``values_ns`` where value ``i`` stands for ``counts[i]`` wakes."""
    cumulative = list(itertools.accumulate(int(c) for c in counts))
    total = cumulative[-1] if cumulative else 0
    if total <= 0:
        raise ValueError("percentile of an empty sample")
    if not 0.0 <= q <= 100.0:
        raise ValueError("percentile must be within 0..100, got %r" % (q,))
    position = (total - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, total - 1)
    # The value holding the k-th smallest wake (0-based): the first whose cumulative count exceeds k.
    low_index, high_index = bisect.bisect_right(cumulative, lower), bisect.bisect_right(cumulative, upper)
    low_value = float(values_ns[low_index])
    return low_value + (float(values_ns[high_index]) - low_value) * (position - lower)


def log_histogram_weighted(values_ns: Sequence[float], counts: Sequence[int], bins_per_decade: Optional[int] = None,
                           max_bins: int = MAX_BINS, *, min_ns: Optional[int] = None, max_ns: Optional[int] = None,
                           p50_ns: Optional[float] = None, p99_ns: Optional[float] = None) -> Histogram:
    """:func:`log_histogram` of weighted values: value ``i`` (ns, >= 0) stands for ``counts[i]`` wakes; the extremes
    and percentiles default to those of the weighted values."""
    given_values = [float(v) for v in values_ns]
    given_counts = [int(c) for c in counts]
    if len(given_values) != len(given_counts):
        raise ValueError("values and counts differ in length (%d against %d)" % (len(given_values), len(given_counts)))
    if given_counts and min(given_counts) < 0:
        raise ValueError("a count is negative")
    # Ascending by value (a stable sort: equal values keep their order), wakes only.
    order = sorted((i for i, c in enumerate(given_counts) if c > 0), key=given_values.__getitem__)
    values: List[float] = [given_values[i] for i in order]
    weights: List[int] = [given_counts[i] for i in order]
    n = sum(weights)
    if n == 0:
        raise ValueError("no samples to bin")
    if values[0] < 0:
        raise ValueError("a latency value is negative (%g ns)" % values[0])
    if p50_ns is None:
        p50_ns = weighted_percentile(values, weights, 50.0)
    if n < min_n_for(99.0):
        p99_ns = None
    elif p99_ns is None:
        p99_ns = weighted_percentile(values, weights, 99.0)
    first_positive = bisect.bisect_right(values, 0.0)
    zeros = sum(weights[:first_positive])
    bins_per_decade, bins = _log_bins(values[first_positive:], weights[first_positive:], bins_per_decade, max_bins)
    return Histogram(n=n, bins_per_decade=bins_per_decade or BINS_PER_DECADE[0], bins=bins, zero_count=zeros,
                     min_ns=int(min_ns) if min_ns is not None else int(math.floor(values[0])),
                     max_ns=int(max_ns) if max_ns is not None else int(math.ceil(values[-1])), p50_ns=float(p50_ns),
                     p99_ns=None if p99_ns is None else float(p99_ns))


def log_histogram_of_counters(hist: "LogLinearHistogram", bins_per_decade: Optional[int] = None,
                              max_bins: int = MAX_BINS, raw_kept: Optional[int] = None) -> Histogram:
    """Every wake of a log-linear histogram on :func:`log_histogram`'s bins, its min, max, p50 and p99 its own."""
    from wakelab.analysis.hdr import RELATIVE_ERROR

    if hist.total == 0:
        raise ValueError("no samples to bin")
    values, counts = hist.weighted_values()  # as many wakes as hist.total: under 100 the p99 is left out
    binned = log_histogram_weighted(values, counts, bins_per_decade, max_bins, min_ns=hist.min_ns, max_ns=hist.max_ns,
                                    p50_ns=hist.percentile_ns(50.0), p99_ns=hist.percentile_ns(99.0))
    return dataclasses.replace(binned, from_counters=True, relative_error=RELATIVE_ERROR, raw_kept=raw_kept)


def counters_of(samples: "ArmSamples", where: str = "") -> "LogLinearHistogram":
    """The log-linear histogram of every wake of a soak's ``samples`` (EvidenceError: missing, malformed or short)."""
    from wakelab.analysis.hdr import LogLinearHistogram
    from wakelab.errors import EvidenceError

    prefix = where + ": " if where else ""
    if samples.histogram is None:
        raise EvidenceError("%sthe samples file has no histogram of its wakes" % prefix)
    try:
        hist = LogLinearHistogram.from_dict(dict(samples.histogram))
    except (ValueError, TypeError) as exc:
        raise EvidenceError("%sthe samples file's histogram is unusable: %s" % (prefix, exc)) from None
    if hist.total != samples.total:
        raise EvidenceError("%sthe samples file's histogram holds %d wakes, summary.json says n = %d"
                            % (prefix, hist.total, samples.total))
    if hist.total and not (type(hist.min_ns) is int and type(hist.max_ns) is int and 0 <= hist.min_ns <= hist.max_ns):
        raise EvidenceError("%sthe samples file's histogram has no valid min and max" % prefix)
    return hist


def arm_histogram(samples: "ArmSamples", where: str = "", max_bins: int = MAX_BINS) -> Histogram:
    """The log-binned histogram of every wake of one arm: its raw samples when they are every wake, else its
    log-linear histogram's counters."""
    if samples.every_wake:
        return log_histogram(samples.samples_ns, max_bins=max_bins)
    return log_histogram_of_counters(counters_of(samples, where), max_bins=max_bins, raw_kept=samples.kept)
