#!/usr/bin/env python3
"""Harness overhead per sample against the bare ``perf_counter_ns()`` pair.

Target (issue: trustworthy numbers): the harness's per-sample bookkeeping
costs at most 1.2x a bare timer pair.  Prints the median of ``--repeats``
calibrations (:func:`wakelab.harness.clock.measure_harness_overhead`, what
every run records), each the median of interleaved blocks.

Then the same for both forms of :class:`wakelab.core.model.LatencyCollector`
slots, interleaved with bare pairs: the list that arms of up to
``LIST_SLOTS_MAX`` wakes store into (the calibration's case) and the compact
unsigned int64 array of larger arms (issue 13: 8 bytes a wake instead of
about 40, at the cost of converting each int on the store).
"""

from __future__ import annotations

import argparse
import time
from typing import Dict, List

import _common  # noqa: F401  (puts src/ on sys.path)
from _common import median, verdict

from wakelab.core.model import LIST_SLOTS_MAX, LatencyCollector, MeasureParams
from wakelab.harness.clock import measure_harness_overhead

TARGET = 1.2


def slot_forms(samples: int, rounds: int) -> Dict[str, float]:
    """Median ratio (store into the slots / bare pair) for the list and the compact slots."""
    now = time.perf_counter_ns
    loop = range(samples)
    ratios: Dict[str, List[float]] = {"list": [], "compact": []}
    for _ in range(rounds):
        for form, total in (("list", samples), ("compact", max(samples, LIST_SLOTS_MAX + 1))):
            slots = LatencyCollector(MeasureParams(n=total, warmup=0)).slots
            start = now()
            for _ in loop:
                a = now()
                b = now()
            bare = now() - start
            start = now()
            for i in loop:
                a = now()
                slots[i] = now() - a
            stored = now() - start
            ratios[form].append(stored / bare)
    del a, b
    return {form: median(values) for form, values in ratios.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=21, help="interleaved rounds of the slot-form comparison")
    args = parser.parse_args()
    runs = [measure_harness_overhead() for _ in range(args.repeats)]
    bare = median([float(r["bare_pair_ns"]) for r in runs])  # type: ignore[arg-type]
    per_sample = median([float(r["per_sample_ns"]) for r in runs])  # type: ignore[arg-type]
    ratio = median([float(r["overhead_ratio"]) for r in runs])  # type: ignore[arg-type]
    print("bare perf_counter_ns() pair: %.1f ns (median of %d)" % (bare, args.repeats))
    print("pair + harness bookkeeping:   %.1f ns" % per_sample)
    print("overhead ratio:               %.3f (target <= %.1f): %s" % (ratio, TARGET, verdict(ratio <= TARGET)))
    forms = slot_forms(10000, args.rounds)
    print("list slots (arms up to %s wakes):  %.3f x a bare pair (%s)"
          % (format(LIST_SLOTS_MAX, ","), forms["list"], verdict(forms["list"] <= TARGET)))
    print("compact int64 slots (larger arms): %.3f x a bare pair (%s)" % (forms["compact"], verdict(forms["compact"] <= TARGET)))


if __name__ == "__main__":
    main()
