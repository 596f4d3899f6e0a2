#!/usr/bin/env python3
"""Sampling rate of the arms against their physical limit.

Targets (issue: trustworthy numbers): a blocked arm takes samples at least at
half of ``1 / (settle + p50)`` -- the rate if the harness cost nothing but the
settle period and the wake itself; a spinning arm takes at least 100,000
samples/s.  Arms run in-process here so that the figure is the measuring
loop's, not worker start-up.
"""

from __future__ import annotations

import argparse
import time

import _common  # noqa: F401
from _common import verdict

from wakelab.core.registry import get_arm
from wakelab.core.model import MeasureParams
from wakelab.analysis.stats import summarize_latency

BLOCKED_ARMS = ("event", "queue", "pipe", "condition", "sigwait-thread-to-main")
SPINNING_ARMS = ("sigusr1-self", "event-spin", "queue-spin")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--settle-us", type=int, default=1000)
    args = parser.parse_args()
    print("%-24s %10s %10s %14s %14s %8s  %s" % ("arm", "waiter", "p50", "samples/s", "limit/s", "ratio", "target"))
    for name in BLOCKED_ARMS + SPINNING_ARMS:
        arm = get_arm(name)
        if arm.unavailable_reason():
            print("%-24s skipped: %s" % (name, arm.unavailable_reason()))
            continue
        params = MeasureParams(n=args.n, warmup=10, settle_us=args.settle_us)
        started = time.perf_counter()
        raw = arm.measure(params)
        wall = time.perf_counter() - started
        rate = params.total_wakes / wall
        p50 = summarize_latency(raw.samples_ns).percentiles_ns["p50"]
        if arm.waiter == "blocked":
            limit = 1e9 / (args.settle_us * 1000 + p50)
            ratio = rate / limit
            target = verdict(ratio >= 0.5) + " (>= 0.5 of limit)"
            print("%-24s %10s %9.1fus %14.0f %14.0f %8.2f  %s" % (name, arm.waiter, p50 / 1e3, rate, limit, ratio, target))
        else:
            target = verdict(rate >= 100_000) + " (>= 100,000/s)"
            print("%-24s %10s %9.1fus %14.0f %14s %8s  %s" % (name, arm.waiter, p50 / 1e3, rate, "-", "-", target))


if __name__ == "__main__":
    main()
