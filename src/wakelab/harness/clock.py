"""Timer calibration: what ``perf_counter_ns()`` can and cannot resolve here.

No figure below the cost of two back-to-back ``perf_counter_ns()`` calls is
meaningful, so every run measures that floor and reports it beside the arms.
"""

from __future__ import annotations

import time
from typing import Dict, List


def measure_timer_floor(pairs: int = 10000) -> Dict[str, object]:
    """Cost (ns) of back-to-back ``perf_counter_ns()`` pairs, and the clock's facts.

    Returns the minimum and median of ``pairs`` differences ``b - a`` where
    ``a`` and ``b`` are taken one after the other, plus the clock's name,
    declared resolution and monotonicity from ``time.get_clock_info``.
    """
    if pairs < 1:
        raise ValueError("pairs must be at least 1")
    now = time.perf_counter_ns
    deltas: List[int] = []
    append = deltas.append
    for _ in range(pairs):
        a = now()
        b = now()
        append(b - a)
    deltas.sort()
    info = time.get_clock_info("perf_counter")
    return {
        "clock": "time.perf_counter_ns",
        "implementation": info.implementation,
        "monotonic": info.monotonic,
        "resolution_ns": info.resolution * 1e9,
        "pairs": pairs,
        "floor_min_ns": deltas[0],
        "floor_p50_ns": deltas[len(deltas) // 2],
    }


def measure_harness_overhead(samples: int = 10000, blocks: int = 5) -> Dict[str, object]:
    """Per-sample cost (ns) of the harness's bookkeeping against a bare timer pair.

    A counted wake costs the harness one ``perf_counter_ns()`` pair plus a
    store into :attr:`LatencyCollector.slots`; this times ``samples`` of
    each, in ``blocks`` interleaved blocks, and reports the medians per sample.
    """
    from wakelab.core.model import LatencyCollector, MeasureParams

    now = time.perf_counter_ns
    bare: List[float] = []
    harness: List[float] = []
    loop = range(samples)
    for _ in range(blocks):
        start = now()
        for _ in loop:
            a = now()
            b = now()
        bare.append((now() - start) / samples)
        collector = LatencyCollector(MeasureParams(n=samples, warmup=0))
        slots = collector.slots
        start = now()
        for i in loop:
            a = now()
            slots[i] = now() - a
        harness.append((now() - start) / samples)
    bare.sort()
    harness.sort()
    bare_ns, harness_ns = bare[len(bare) // 2], harness[len(harness) // 2]
    del a, b
    return {
        "bare_pair_ns": round(bare_ns, 1),
        "per_sample_ns": round(harness_ns, 1),
        "overhead_ratio": round(harness_ns / bare_ns, 3) if bare_ns else None,
    }


def calibrate() -> Dict[str, object]:
    """Timer floor and harness overhead, as recorded under ``timer`` in summary.json."""
    floor = measure_timer_floor()
    floor["harness"] = measure_harness_overhead()
    return floor
