"""A two-level (hierarchical) bootstrap of percentiles: units first, then the wakes within them.

Analysis side: numpy is imported lazily, inside the functions that need it.

Why two levels
--------------
A run's wakes are not one independent sample.  They come in *units*, the
worker slices of an arm (``entry["workers"]`` in summary.json: one record per
fresh worker process of each repetition, in the order their samples are pooled
in the arm's samples file).  Each unit has its own CPU placement, memory
layout, clock frequency and cache state, so wakes inside one unit resemble
each other more than wakes of two units do: whole units shift level (the same
pinned arm gave p50 5.7 µs in one process and 13 µs in the next).  A bootstrap
that resamples the pooled wakes treats 300 wakes as 300 independent draws and
so sees only the wake-to-wake noise; its interval is far too narrow, and
identical runs compare as "faster" or "slower" (an A/A test found 9 of 15).

The hierarchical bootstrap resamples the way the data were made (Davison &
Hinkley 1997, section 3.8, "multistage sampling"; Field & Welsh 2007; Saravanan
et al. 2020 for nested experiments): draw K units with replacement from the K
units of the run, then, inside each chosen unit, draw as many wakes as it holds
with replacement, pool them, and compute the percentile of the pool.  The
spread of that percentile over many resamples carries both the between-unit
variation (the first stage) and the within-unit noise (the second).  Resampling
at both stages over-states the variance slightly when units are many and
similar (the within-unit noise is counted twice, Davison & Hinkley p. 101);
that errs on the side of "cannot tell", which is the side a regression gate
should err on.  With few units the first stage errs the other way: the
bootstrap's spread of a between-unit effect is (K - 1) / K of the variance it
stands for (Davison & Hinkley p. 101, the same bias as a variance divided by K
instead of K - 1), two thirds of it for the three slices of a default run.
:func:`widen_for_few_units` corrects that, spreading the resampled percentiles
about the point estimate by sqrt(K / (K - 1)) in log terms before the interval
is read.  With 3 units the first stage also has few distinct outcomes, so the
interval is coarse: this is the honest answer, and ``wakelab run --repeat R``
(or ``--workers``) buys more units.

Percentiles are type 7 (linear interpolation), as in summary.json.  Rate arms
use the same machinery on each round's ops/s, with the worker slices of rounds
as units, and the median as the statistic.

A run whose arm has no usable worker records (older or synthetic bundles, a
slice count that does not add up to the samples) is one unit: the first stage
then has nothing to choose and the interval is the ordinary one-level
bootstrap, which sees wake-to-wake noise only.  :func:`split_units` says so.

Cost, and how it stays bounded
------------------------------
Resamples are drawn in chunks whose number of drawn values stays under
:data:`CHUNK_ELEMENTS`, so memory is bounded (about 30 MB) whatever the sample
size.  Two exact-in-distribution methods, chosen per arm by cost:

* **direct**: materialise each resample (random unit choices, random positions
  inside each chosen unit) and read the order statistics the percentile needs
  (``np.partition``, or a sort when units differ in size).  Work grows as
  resamples x wakes.
* **binned**: resampling n wakes with replacement from a unit is the same as a
  multinomial draw of how many times each of its values is picked.  Grouping
  the pooled values into at most :data:`BINS` bins makes that one multinomial
  of :data:`BINS` cells per chosen unit, whatever the unit's size; the
  resample's k-th value is found from the cumulative bin counts.  While the run
  holds no more distinct values than :data:`BINS`, the bins *are* the values
  and the method is exact.  Beyond that, bins are cut at quantiles of the pooled
  sample, dense in the upper tail (half of them on a log scale towards the
  largest value, so p99 and p99.9 keep fine bins), and the k-th value inside a
  bin is read off the pooled sample's own values in that bin at the same
  relative rank.  The error is within one bin, far below the width of any
  interval it feeds.  Work grows as resamples x units x bins, so 10^6 wakes
  cost no more than 10^4.

``method="auto"`` picks direct while a resample holds at most
:data:`DIRECT_LIMIT` wakes, binned above.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, List, Optional, Sequence, Tuple

from wakelab.evidence.arms import WorkerRecord

# At most this many values drawn per chunk of resamples (bounds memory, ~8 bytes x 3 each).
CHUNK_ELEMENTS = 1 << 20
# The direct method while one resample pools at most this many values; binned above.
DIRECT_LIMIT = 20_000
# Cells of the binned method's multinomial (exact while a run has no more distinct values).
BINS = 2048

DIRECT = "direct"
BINNED = "binned"
AUTO = "auto"


@dataclasses.dataclass(frozen=True)
class Units:
    """One run's arm as the bootstrap sees it: its values split into units (worker slices).

    ``values`` holds one float64 array per unit, in pooling order; ``note`` says
    why the arm is a single unit when its worker records could not be used
    (None when the units are the worker slices).
    """

    values: Tuple[Any, ...]
    note: Optional[str] = None

    @property
    def count(self) -> int:
        return len(self.values)

    @property
    def sizes(self) -> Tuple[int, ...]:
        return tuple(int(v.size) for v in self.values)

    @property
    def total(self) -> int:
        return sum(self.sizes)


def _whole(value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def slice_sizes(workers: Optional[Sequence[WorkerRecord]], key: str) -> Optional[List[int]]:
    """Each worker slice's count (``key``: ``n`` for wakes, ``rounds`` for rate rounds), or None when unusable."""
    sizes = [_whole(getattr(record, key)) if record.recorded else None for record in workers or ()]
    return [size for size in sizes if size is not None] if sizes and None not in sizes else None


def split_units(values: Any, sizes: Optional[Sequence[int]]) -> Units:
    """Split pooled ``values`` into consecutive units of ``sizes`` (empty units dropped).

    Without sizes, or when they do not add up to the values, the whole sample
    is one unit and ``note`` says why.
    """
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    if sizes is None:
        return Units((array,), "no worker slices recorded: one unit, the interval sees wake-to-wake noise only")
    if sum(sizes) != array.size:
        return Units((array,), "the worker slices (%d values) do not add up to the samples (%d): one unit, the "
                     "interval sees wake-to-wake noise only" % (sum(sizes), array.size))
    bounds = np.cumsum([0] + list(sizes))
    parts = tuple(array[bounds[i]:bounds[i + 1]] for i in range(len(sizes)) if sizes[i] > 0)
    if not parts:
        return Units((array,), "every worker slice is empty")
    if len(parts) == 1:
        return Units(parts, "one worker slice only: the interval sees wake-to-wake noise only")
    return Units(parts)


def _type7(sorted_rows: Any, n: Any, q: float) -> Any:
    """Type-7 percentile ``q`` of each row of ``sorted_rows`` whose first ``n`` (per row) values are sorted."""
    import numpy as np

    position = (n - 1) * (q / 100.0)
    lo = np.floor(position).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    fraction = position - lo
    rows = np.arange(sorted_rows.shape[0])
    low = sorted_rows[rows, lo]
    return low + (sorted_rows[rows, hi] - low) * fraction


def _direct(units: Units, qs: Sequence[float], resamples: int, rng: Any) -> Any:
    import numpy as np

    k = units.count
    sizes = np.array(units.sizes, dtype=np.int64)
    widest = int(sizes.max())
    equal = bool(np.all(sizes == widest))
    padded = np.full((k, widest), np.inf)
    for j, unit in enumerate(units.values):
        padded[j, :unit.size] = unit
    out = np.empty((len(qs), resamples))
    chunk = max(1, CHUNK_ELEMENTS // (k * widest))
    slot = np.arange(widest)
    for start in range(0, resamples, chunk):
        c = min(chunk, resamples - start)
        chosen = rng.integers(k, size=(c, k))
        chosen_sizes = sizes[chosen]
        positions = (rng.random((c, k, widest)) * chosen_sizes[..., None]).astype(np.int64)
        values = padded[chosen[..., None], positions]
        if not equal:
            values[slot[None, None, :] >= chosen_sizes[..., None]] = np.inf
        values = values.reshape(c, k * widest)
        n = chosen_sizes.sum(axis=1)
        if equal:
            total = k * widest
            ranks: set = set()
            for q in qs:
                lo = int(math.floor((total - 1) * q / 100.0))
                ranks.update((lo, min(lo + 1, total - 1)))
            values.partition(sorted(ranks), axis=1)
        else:
            values.sort(axis=1)
        for i, q in enumerate(qs):
            out[i, start:start + c] = _type7(values, n, q)
    return out


def _bin_edges(pooled: Any) -> Tuple[Any, bool]:
    """Cut points of the binned method and whether the bins are the distinct values themselves."""
    import numpy as np

    distinct = np.unique(pooled)
    if distinct.size <= BINS:
        return distinct, True
    n = pooled.size
    body = np.linspace(0.0, 1.0, BINS // 2 + 1)[1:-1]
    tail = 1.0 - np.logspace(math.log10(0.5), math.log10(0.5 / n), BINS // 2)
    levels = np.unique(np.concatenate([body, tail]))
    cuts = np.unique(pooled[np.minimum((levels * (n - 1)).astype(np.int64) + 1, n - 1)])
    return cuts, False


def _binned(units: Units, qs: Sequence[float], resamples: int, rng: Any) -> Any:
    import numpy as np

    pooled = np.sort(np.concatenate(units.values))
    cuts, exact = _bin_edges(pooled)
    if exact:
        def bin_of(values: Any) -> Any:
            return np.searchsorted(cuts, values)
        bins = cuts.size
        starts = ends = None
    else:
        def bin_of(values: Any) -> Any:
            return np.searchsorted(cuts, values, side="right")
        bins = cuts.size + 1
        starts = np.concatenate([[0], np.searchsorted(pooled, cuts, side="left")])
        ends = np.concatenate([np.searchsorted(pooled, cuts, side="left"), [pooled.size]])
    k = units.count
    sizes = np.array(units.sizes, dtype=np.int64)
    pvals = []
    for unit in units.values:
        counts = np.bincount(bin_of(unit), minlength=bins).astype(np.float64)
        pvals.append(counts / counts.sum())
    out = np.empty((len(qs), resamples))
    chunk = max(1, CHUNK_ELEMENTS // bins)
    for start in range(0, resamples, chunk):
        c = min(chunk, resamples - start)
        chosen = rng.integers(k, size=(c, k))
        counts = np.zeros((c, bins), dtype=np.int64)
        for j in range(k):
            rows = np.nonzero(chosen == j)[0]
            if rows.size:
                np.add.at(counts, rows, rng.multinomial(int(sizes[j]), pvals[j], size=rows.size))
        cumulative = np.cumsum(counts, axis=1)
        n = cumulative[:, -1]
        for i, q in enumerate(qs):
            position = (n - 1) * (q / 100.0)
            lo = np.floor(position).astype(np.int64)
            hi = np.minimum(lo + 1, n - 1)
            low = _value_at(lo + 1, counts, cumulative, cuts, exact, pooled, starts, ends)
            high = _value_at(hi + 1, counts, cumulative, cuts, exact, pooled, starts, ends)
            out[i, start:start + c] = low + (high - low) * (position - lo)
    return out


def _value_at(rank: Any, counts: Any, cumulative: Any, cuts: Any, exact: bool, pooled: Any,
              starts: Any, ends: Any) -> Any:
    """The rank-th (1-based) smallest value of each resample, from its bin counts."""
    import numpy as np

    where = (cumulative < rank[:, None]).sum(axis=1)
    if exact:
        return cuts[where]
    row = np.arange(counts.shape[0])
    in_bin = counts[row, where]
    before = cumulative[row, where] - in_bin
    fraction = (rank - before - 0.5) / in_bin
    width = ends[where] - starts[where]
    return pooled[starts[where] + np.minimum((fraction * width).astype(np.int64), width - 1)]


def widen_for_few_units(point: float, boot: Any, units: int) -> Any:
    """``boot`` spread about ``point`` by sqrt(K / (K - 1)) in log terms, for K = ``units`` (see the module docstring).

    Left unchanged for one unit, or when ``point`` or a resampled value is not positive.
    """
    import numpy as np

    boot = np.asarray(boot, dtype=np.float64)
    if units < 2 or not point > 0 or not np.all(boot > 0) or not np.all(np.isfinite(boot)):
        return boot
    factor = math.sqrt(units / (units - 1.0))
    return point * np.exp(factor * np.log(boot / point))


def choose_method(units: Units) -> str:
    """``direct`` while one resample pools at most :data:`DIRECT_LIMIT` values, ``binned`` above."""
    return DIRECT if units.count * max(units.sizes) <= DIRECT_LIMIT else BINNED


def resample_percentiles(units: Units, qs: Sequence[float], resamples: int, rng: Any,
                         method: str = AUTO) -> Any:
    """Percentiles ``qs`` (type 7) of ``resamples`` two-level bootstrap resamples, shape (len(qs), resamples).

    Each resample draws ``units.count`` units with replacement, then as many
    values as each chosen unit holds, with replacement, from it, and pools them.
    ``rng`` is a numpy Generator; ``method`` is ``direct``, ``binned`` or ``auto``
    (see the module docstring).
    """
    if resamples < 1:
        raise ValueError("resamples must be positive, got %r" % (resamples,))
    if units.total == 0:
        raise ValueError("no values to resample")
    for q in qs:
        if not 0.0 <= q <= 100.0:
            raise ValueError("percentile must be within 0..100, got %r" % (q,))
    if method == AUTO:
        method = choose_method(units)
    if method == DIRECT:
        return _direct(units, qs, resamples, rng)
    if method == BINNED:
        return _binned(units, qs, resamples, rng)
    raise ValueError("method must be direct, binned or auto, got %r" % (method,))


@dataclasses.dataclass(frozen=True)
class LevelInterval:
    """One run's own interval for a percentile: how well the run pins its level.

    ``low``/``high`` bound the percentile at the interval's confidence;
    ``half_width_pct`` is that interval's half-width in log terms, as a percent
    (``exp((ln high - ln low) / 2) - 1``): the run's level is known to ±this.
    """

    point: float
    low: float
    high: float
    half_width_pct: float


def level_interval(point: float, boot: Any, confidence: float) -> LevelInterval:
    """The percentile interval of one run's resampled percentiles ``boot`` around ``point``."""
    import numpy as np

    ordered = np.sort(np.asarray(boot, dtype=np.float64))
    tail = (1.0 - confidence) / 2.0
    last = ordered.size - 1
    low = float(ordered[int(math.floor(tail * last))])
    high = float(ordered[int(math.ceil((1.0 - tail) * last))])
    if low > 0 and math.isfinite(high):
        half = (math.exp((math.log(high) - math.log(low)) / 2.0) - 1.0) * 100.0
    else:
        half = math.inf
    return LevelInterval(point, low, high, half)


__all__ = ["Units", "LevelInterval", "slice_sizes", "split_units", "resample_percentiles", "level_interval",
           "widen_for_few_units",
           "choose_method", "DIRECT", "BINNED", "AUTO", "BINS", "DIRECT_LIMIT", "CHUNK_ELEMENTS"]
