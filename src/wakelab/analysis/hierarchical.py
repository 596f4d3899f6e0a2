"""A two-level (hierarchical) bootstrap of percentiles: units first, then the wakes within them.

Why two levels.  A run's wakes come in *units*, the worker slices of an arm (one fresh worker process of each
repetition).  Wakes inside one unit resemble each other more than wakes of two units do: whole units shift level (the
same pinned arm gave p50 5.7 µs in one process and 13 µs in the next).  Resampling the pooled wakes sees only the
wake-to-wake noise; its interval is far too narrow, and identical runs compare as "faster" or "slower" (an A/A test
found 9 of 15).

So we resample the way the data were made (Davison & Hinkley 1997, section 3.8, "multistage sampling"): draw K units
with replacement, then as many wakes as each chosen unit holds, with replacement, pool them, take the percentile.
Resampling both stages over-states the variance slightly when units are many (the side a regression gate should err
on); with few units the first stage under-states it by (K - 1) / K, which :func:`widen_for_few_units` corrects.

Cost.  ``direct`` materialises each resample (work: resamples x wakes); ``binned`` draws, per chosen unit, one
multinomial over at most :data:`BINS` bins of the pooled values (exact while there are no more distinct values than
bins; else bins cut at quantiles, dense in the upper tail, the error within one bin), so 10^6 wakes cost no more than
10^4.  numpy is imported lazily."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, List, Literal, Optional, Sequence, Tuple

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
    """One arm's values split into units (worker slices, one float64 array each); ``note`` says why the arm is a
    single unit (None when the units are the worker slices)."""

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
    sizes = [_whole(getattr(record, key)) for record in workers or ()]
    return [size for size in sizes if size is not None] if sizes and None not in sizes else None


def split_units(values: Any, sizes: Optional[Sequence[int]]) -> Units:
    """Split pooled ``values`` into consecutive units of ``sizes`` (empty units dropped)."""
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


def _type7(value_at: Callable[[Any], Any], n: Any, q: float) -> Any:
    """Type-7 percentile ``q`` of each resample of ``n`` values, ``value_at(i)`` its i-th smallest (0-based)."""
    import numpy as np

    position = (n - 1) * (q / 100.0)
    lo = np.floor(position).astype(np.int64)
    low = value_at(lo)
    return low + (value_at(np.minimum(lo + 1, n - 1)) - low) * (position - lo)


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
            out[i, start:start + c] = _type7(lambda at: values[np.arange(c), at], n, q)  # noqa: B023 -- called at once
    return out


def _bin_edges(pooled: Any) -> Tuple[Any, bool]:
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
    # Exact: a value's bin is its own distinct value; else bin i holds the values from cut i - 1 up to cut i.
    side: Literal["left", "right"] = "left" if exact else "right"
    bins, starts, ends = cuts.size, None, None
    if not exact:
        bins = cuts.size + 1
        starts = np.concatenate([[0], np.searchsorted(pooled, cuts, side="left")])
        ends = np.concatenate([np.searchsorted(pooled, cuts, side="left"), [pooled.size]])
    k = units.count
    sizes = np.array(units.sizes, dtype=np.int64)
    pvals = []
    for unit in units.values:
        counts = np.bincount(np.searchsorted(cuts, unit, side=side), minlength=bins).astype(np.float64)
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
            out[i, start:start + c] = _type7(lambda at: _value_at(at + 1, counts, cumulative, cuts, exact, pooled, starts, ends),  # noqa: B023
                                             n, q)
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
    """``boot`` spread about ``point`` by sqrt(K / (K - 1)) in log terms, for K = ``units`` (where all are positive)."""
    import numpy as np

    boot = np.asarray(boot, dtype=np.float64)
    if units < 2 or not point > 0 or not np.all(boot > 0) or not np.all(np.isfinite(boot)):
        return boot
    factor = math.sqrt(units / (units - 1.0))
    return point * np.exp(factor * np.log(boot / point))


def check_resampling(qs: Sequence[float], resamples: int) -> None:
    """ValueError unless there is a resample to draw and every percentile is within 0..100."""
    if resamples < 1:
        raise ValueError("resamples must be positive, got %r" % (resamples,))
    for q in qs:
        if not 0.0 <= q <= 100.0:
            raise ValueError("percentile must be within 0..100, got %r" % (q,))


def choose_method(units: Units) -> str:
    return DIRECT if units.count * max(units.sizes) <= DIRECT_LIMIT else BINNED


def resample_percentiles(units: Units, qs: Sequence[float], resamples: int, rng: Any,
                         method: str = AUTO) -> Any:
    """Percentiles ``qs`` (type 7) of ``resamples`` two-level bootstrap resamples, shape (len(qs), resamples)."""
    check_resampling(qs, resamples)
    if units.total == 0:
        raise ValueError("no values to resample")
    if method == AUTO:
        method = choose_method(units)
    if method == DIRECT:
        return _direct(units, qs, resamples, rng)
    if method == BINNED:
        return _binned(units, qs, resamples, rng)
    raise ValueError("method must be direct, binned or auto, got %r" % (method,))


@dataclasses.dataclass(frozen=True)
class LevelInterval:
    """One run's own interval for a percentile; its level is known to ±``half_width_pct`` (log terms, percent)."""

    point: float
    low: float
    high: float
    half_width_pct: float


def outward_interval(ordered: Any, confidence: float) -> Tuple[float, float]:
    """The ``confidence`` interval of ascending resampled values, its order statistics rounded outwards."""
    tail, last = (1.0 - confidence) / 2.0, ordered.size - 1
    return float(ordered[int(math.floor(tail * last))]), float(ordered[int(math.ceil((1.0 - tail) * last))])


def level_interval(point: float, boot: Any, confidence: float) -> LevelInterval:
    """The percentile interval of one run's resampled percentiles ``boot`` around ``point``."""
    import numpy as np

    low, high = outward_interval(np.sort(np.asarray(boot, dtype=np.float64)), confidence)
    if low > 0 and math.isfinite(high):
        half = (math.exp((math.log(high) - math.log(low)) / 2.0) - 1.0) * 100.0
    else:
        half = math.inf
    return LevelInterval(point, low, high, half)

