#!/usr/bin/env python3
"""Harness overhead per sample against the bare ``perf_counter_ns()`` pair.

Target (issue: trustworthy numbers): the harness's per-sample bookkeeping
costs at most 1.2x a bare timer pair.  Prints the median of ``--repeats``
calibrations, each the median of interleaved blocks.
"""

from __future__ import annotations

import argparse

import _common  # noqa: F401  (puts src/ on sys.path)
from _common import median, verdict

from wakelab.harness.clock import measure_harness_overhead

TARGET = 1.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    runs = [measure_harness_overhead() for _ in range(args.repeats)]
    bare = median([r["bare_pair_ns"] for r in runs])
    per_sample = median([r["per_sample_ns"] for r in runs])
    ratio = median([r["overhead_ratio"] for r in runs])
    print("bare perf_counter_ns() pair: %.1f ns (median of %d)" % (bare, args.repeats))
    print("pair + harness bookkeeping:   %.1f ns" % per_sample)
    print("overhead ratio:               %.3f (target <= %.1f): %s" % (ratio, TARGET, verdict(ratio <= TARGET)))


if __name__ == "__main__":
    main()
