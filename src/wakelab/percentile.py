"""The one percentile every figure of wakelab is computed and checked with (stdlib only, a leaf).

Linear interpolation between the two nearest ranks (Hyndman & Fan type 7,
numpy's default), so that ``p50`` of an even-sized sample is the mean of the
two middle values.  The analysis computes summary.json's percentiles with it
(:mod:`wakelab.analysis.stats`), the evidence model checks a stored median
against its samples with it, and the labs' A/B verdicts take their medians with it:
one definition, below every layer that needs it.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence


def percentile(sorted_samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of already-sorted samples (type 7)."""
    if not sorted_samples:
        raise ValueError("percentile of an empty sample")
    if not 0.0 <= q <= 100.0:
        raise ValueError("percentile must be within 0..100, got %r" % (q,))
    position = (len(sorted_samples) - 1) * q / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_samples) - 1)
    fraction = position - lower
    low_value = sorted_samples[lower]
    return low_value + (sorted_samples[upper] - low_value) * fraction


def median(values: Sequence[Optional[float]]) -> Optional[float]:
    """The median (type 7) of ``values`` in any order, the Nones left out; None when nothing is left."""
    kept = sorted(v for v in values if v is not None)
    return float(percentile(kept, 50.0)) if kept else None


__all__ = ["median", "percentile"]
