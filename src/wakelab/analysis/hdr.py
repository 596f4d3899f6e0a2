"""A log-linear latency histogram with fixed relative precision (HdrHistogram's layout).

Why.  A soak run (``wakelab run --duration 30m``) takes more wakes than it can keep: raw samples are kept up to a cap,
and beyond it this histogram carries the distribution in a fixed 55,296 counters (432 KiB), however long the run.

Layout.  Exactly HdrHistogram's for ``lowest_trackable_value = 1`` and 3 significant digits: values
0..2047 ns have a counter each; above, bucket ``b >= 1`` covers ``[1024 << b, 2048 << b)`` in 1024
sub-buckets of width ``2 ** b``, so a counter's values are within 1/1024 of each other.  The counter
index is HdrHistogram's, so the evidence's sparse counts are those of an HdrHistogram of the same
wakes and :func:`encode_hdr` writes the form its tools decode (``HISTFAAA...``).

Percentiles are type 7 with each rank's value replaced by its counter's middle: within :data:`RELATIVE_ERROR`
(0.049 %) of the exact one, and exact below 2048 ns.  Recording happens in the parent after a worker has replied,
never inside a timed window."""

from __future__ import annotations

import array
import base64
import math
import struct
import zlib
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from wakelab.analysis.histogram import weighted_percentile
from wakelab.analysis.stats import LatencyStats, reportable

SIGNIFICANT_DIGITS = 3
# HdrHistogram's derived constants for 3 significant digits and a lowest value of 1 ns.
SUB_BUCKET_COUNT = 2048
SUB_BUCKET_HALF_COUNT = 1024
SUB_BUCKET_HALF_COUNT_MAGNITUDE = 10
# 53 buckets: the last, bucket 52, ends at 2 ** 63, so a counter holds any value up to int64's maximum.
COUNTS_LEN = 53 * SUB_BUCKET_HALF_COUNT + SUB_BUCKET_HALF_COUNT  # 55,296
# Bound on |histogram percentile - exact percentile| / exact percentile (see the module docstring).
RELATIVE_ERROR = 2.0**-11


def counts_index(value_ns: int) -> int:
    """HdrHistogram's ``get_counts_array_index``."""
    if value_ns < 0:
        raise ValueError("a latency cannot be negative: %r" % (value_ns,))
    bucket = max(0, int(value_ns).bit_length() - (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1))
    return (bucket << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + (int(value_ns) >> bucket)


def counter_range(index: int) -> Tuple[int, int]:
    """``(low, width)``: counter ``index`` holds the values ``low .. low + width - 1``."""
    if not 0 <= index < COUNTS_LEN:
        raise ValueError("no counter %r" % (index,))
    if index < SUB_BUCKET_COUNT:
        return index, 1
    bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1
    sub = (index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT
    return sub << bucket, 1 << bucket


def counter_middle(index: int) -> float:
    low, width = counter_range(index)
    return low + (width - 1) / 2.0


class LogLinearHistogram:
    """Counts of latencies (ns) in HdrHistogram's counters, and exact running figures: total, min, max,
    sum, mean and standard deviation (Chan's pairwise update) over every value; only percentiles come from the counters."""

    def __init__(self) -> None:
        self.counts = array.array("q", bytes(8 * COUNTS_LEN))
        self.total = 0
        self.min_ns: Optional[int] = None
        self.max_ns: Optional[int] = None
        self.sum_ns = 0
        self._mean = 0.0
        self._m2 = 0.0

    def record_many(self, values_ns: Iterable[int]) -> None:
        values = [int(v) for v in values_ns]
        if not values:
            return
        low, high = min(values), max(values)
        if low < 0:
            raise ValueError("a latency cannot be negative: %d" % low)
        counts = self.counts
        shift = SUB_BUCKET_HALF_COUNT_MAGNITUDE
        for v in values:  # counts_index, inlined: this loop is a soak's only per-wake cost in the parent
            bucket = v.bit_length() - (shift + 1)
            if bucket < 0:
                bucket = 0
            counts[(bucket << shift) + (v >> bucket)] += 1
        n = len(values)
        chunk_sum = sum(values)
        chunk_mean = chunk_sum / n
        chunk_m2 = math.fsum((v - chunk_mean) ** 2 for v in values)
        total = self.total + n
        delta = chunk_mean - self._mean
        self._mean += delta * n / total
        self._m2 += chunk_m2 + delta * delta * self.total * n / total
        self.total = total
        self.sum_ns += chunk_sum
        self.min_ns = low if self.min_ns is None else min(self.min_ns, low)
        self.max_ns = high if self.max_ns is None else max(self.max_ns, high)

    @property
    def mean_ns(self) -> Optional[float]:
        return self.sum_ns / self.total if self.total else None

    @property
    def stdev_ns(self) -> Optional[float]:
        return math.sqrt(max(self._m2, 0.0) / (self.total - 1)) if self.total >= 2 else None

    def percentile_ns(self, q: float) -> float:
        return self.percentiles_ns([q])[0]

    def percentiles_ns(self, qs: Sequence[float]) -> List[float]:
        if self.total == 0:
            raise ValueError("percentile of an empty histogram")
        values, counts = self._used_counters()
        return [weighted_percentile(values, counts, q) for q in qs]

    def _used_counters(self) -> Tuple[List[float], List[int]]:  # (clamped middle, count) of each counter holding a wake
        where = [i for i, count in enumerate(self.counts) if count]
        return [self._clamped_middle(i) for i in where], [self.counts[i] for i in where]

    def _clamped_middle(self, index: int) -> float:
        # The extreme counters' values are known exactly: never report beyond min or max.
        middle = counter_middle(index)
        if self.min_ns is not None and self.max_ns is not None:
            middle = min(max(middle, float(self.min_ns)), float(self.max_ns))
        return middle

    def latency_figures(self, lost: int = 0) -> Dict[str, object]:
        """The figures of :meth:`wakelab.analysis.stats.LatencyStats.to_dict`, percentiles from the counters."""
        wanted, omitted = reportable(self.total)
        values = dict(zip([k for k, _ in wanted], self.percentiles_ns([q for _, q in wanted]))) if wanted else {}
        return LatencyStats.of(self.total, lost, self.min_ns, self.max_ns, self.mean_ns, self.stdev_ns, values, omitted).to_dict()

    def weighted_values(self) -> Tuple[List[float], List[int]]:
        """``(values_ns, counts)``, ascending: a counter's wakes at its clamped middle, the fastest and the slowest wake
        at ``min_ns`` and ``max_ns`` themselves, so that re-binning them puts the extremes exactly."""
        values, counts = self._used_counters()
        if not values:
            return values, counts
        assert self.min_ns is not None and self.max_ns is not None
        # The exact extremes, split off their counters (one wake each, unless one counter holds only it).
        extremes = [(float(self.min_ns), 0)] if values[0] != self.min_ns else []
        if values[-1] != self.max_ns and self.total > 1:
            extremes.append((float(self.max_ns), -1))
        for _, index in extremes:
            counts[index] -= 1
        if extremes:
            values += [extreme for extreme, _ in extremes]
            counts += [1] * len(extremes)
            order = sorted(range(len(values)), key=values.__getitem__)  # stable: ties keep their order
            kept = [i for i in order if counts[i] > 0]
            values, counts = [values[i] for i in kept], [counts[i] for i in kept]
        return values, counts

    def nonzero(self) -> List[List[int]]:
        return [[i, count] for i, count in enumerate(self.counts) if count]

    def to_dict(self) -> Dict[str, object]:
        return {"layout": "hdrhistogram", "lowest_trackable_ns": 1, "significant_digits": SIGNIFICANT_DIGITS,
                "sub_bucket_count": SUB_BUCKET_COUNT, "relative_error": RELATIVE_ERROR, "total": self.total,
                "min_ns": self.min_ns, "max_ns": self.max_ns, "sum_ns": self.sum_ns, "stdev_ns": self.stdev_ns,
                "counts": self.nonzero(), "hdr_encoded": encode_hdr(self)}

    @classmethod
    def from_dict(cls, data: object) -> "LogLinearHistogram":
        if not isinstance(data, dict) or data.get("layout") != "hdrhistogram" or data.get("sub_bucket_count") != SUB_BUCKET_COUNT:
            raise ValueError("not a wakelab log-linear histogram")
        hist = cls()
        total = 0
        for pair in data.get("counts") or []:
            if not (isinstance(pair, list) and len(pair) == 2 and all(type(v) is int for v in pair)):
                raise ValueError("counts must be [index, count] pairs")
            index, count = pair
            if not 0 <= index < COUNTS_LEN or count <= 0:
                raise ValueError("bad counter %r" % (pair,))
            hist.counts[index] += count
            total += count
        if total != data.get("total"):
            raise ValueError("counts add up to %d, total says %r" % (total, data.get("total")))
        hist.total = total
        hist.min_ns, hist.max_ns = data.get("min_ns"), data.get("max_ns")
        hist.sum_ns = int(data.get("sum_ns") or 0)
        hist._mean = hist.sum_ns / total if total else 0.0
        stdev = data.get("stdev_ns")
        hist._m2 = float(stdev) ** 2 * (total - 1) if isinstance(stdev, (int, float)) and total >= 2 else 0.0
        return hist


# HdrHistogram's V2 encoding (see HdrHistogram's "Histogram encoding" and hdrh's codec).
_V2_ENCODING_COOKIE = 0x1C849313
_V2_COMPRESSED_COOKIE = 0x1C849314  # the V2 compressed cookie with word size 8, as hdrh and Java write it


def _zigzag_leb128(values: Iterable[int]) -> bytes:
    out = bytearray()
    for value in values:
        unsigned = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
        # Counts stay far below 2 ** 55, so the 9-byte form of 64-bit values is never needed.
        while unsigned > 0x7F:
            out.append((unsigned & 0x7F) | 0x80)
            unsigned >>= 7
        out.append(unsigned)
    return bytes(out)


def _run_length(counts: Sequence[int]) -> List[int]:
    out: List[int] = []
    zeros = 0
    for count in counts:
        if count == 0:
            zeros += 1
            continue
        if zeros:
            out.append(-zeros)
            zeros = 0
        out.append(count)
    return out


def encode_hdr(hist: LogLinearHistogram) -> str:
    """HdrHistogram's compressed V2 form of ``hist`` (base64 text, ``HISTFAAA...``), for ``lowest = 1``,
    ``highest = max(2, max_ns)``, 3 significant digits (Python's ``hdrh``: ``HdrHistogram.decode(text)``)."""
    used = next((i + 1 for i in range(len(hist.counts) - 1, -1, -1) if hist.counts[i]), 0)
    payload = _zigzag_leb128(_run_length(hist.counts[:used]))
    highest = max(2, int(hist.max_ns or 0))
    header = struct.pack(">iiiiqqd", _V2_ENCODING_COOKIE, len(payload), 0, SIGNIFICANT_DIGITS, 1, highest, 1.0)
    compressed = zlib.compress(header + payload)
    return base64.b64encode(struct.pack(">ii", _V2_COMPRESSED_COOKIE, len(compressed)) + compressed).decode("ascii")
