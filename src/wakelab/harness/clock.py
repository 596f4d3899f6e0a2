"""Timer calibration: what ``perf_counter_ns()`` can and cannot resolve here.

No figure below the cost of two back-to-back ``perf_counter_ns()`` calls is
meaningful, so every run measures that floor and reports it beside the arms.
"""

from __future__ import annotations

import time
from typing import Dict, List


def measure_timer_floor(pairs: int = 20000) -> Dict[str, object]:
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
