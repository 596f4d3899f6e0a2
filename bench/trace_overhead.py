#!/usr/bin/env python3
"""What tracing costs a wake: the scheduler's events alone against them plus the waiter's
blocking system calls (what ``wakelab run --trace`` records now).

Each traced arm is measured untraced, traced, and untraced again in one run; its overhead is
the traced p50 over the mean of the two untraced p50s (summary.json's
``trace.overhead.ratio``).  This script makes traced runs of the same arms with each event set,
taking turns (A B B A ...), and prints per arm and set: the overhead ratio, perf's recording
size per traced wake and the share of wakes fully attributed, each as the median over
``--rounds`` turns.  No target: the overhead is reported with every traced run; this says what
following the system calls adds to it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from typing import Dict, List, Tuple

import _common  # noqa: F401

from wakelab.core.model import MeasureParams
from wakelab.harness import trace
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.labs import LAB_135

SETS = {
    "sched": lambda: trace.EVENTS,
    "sched+syscalls": lambda: trace.EVENTS + tuple(trace.syscall_events()),
}


def measure(arms: List[str], n: int, events: str, folder: str) -> Dict[str, Tuple[float, float, float]]:
    original = trace.default_events
    trace.default_events = SETS[events]  # type: ignore[assignment]
    try:
        plan = RunPlan(lab=LAB_135, arm_names=arms, params=MeasureParams(n=n, warmup=10, settle_us=1000),
                       folder=folder, command=["bench/trace_overhead.py"], execution=Execution(trace=True))
        summary = run_plan(plan)
    finally:
        trace.default_events = original  # type: ignore[assignment]
    out = {}
    for entry in summary["arms"]:
        split = entry.get("trace") or {}
        if not split.get("traced"):
            continue
        comps = split.get("components") or {}
        wakes = max(1, comps.get("wakes") or 0)
        out[entry["name"]] = (float((split.get("overhead") or {}).get("ratio") or float("nan")),
                              float(split.get("perf_data_bytes") or 0) / wakes,
                              100.0 * (comps.get("fully_attributed") or 0) / wakes)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", default="event,pipe,native-condvar")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    reason = trace.precheck()
    if reason:
        raise SystemExit("cannot trace here: " + reason)
    arms = args.arms.split(",")
    results: Dict[Tuple[str, str], List[Tuple[float, float, float]]] = {}
    print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    for turn in range(args.rounds):
        order = list(SETS) if turn % 2 == 0 else list(reversed(SETS))
        for events in order:
            folder = tempfile.mkdtemp(prefix="wakelab-bench-overhead-")
            try:
                for name, figures in measure(arms, args.n, events, folder).items():
                    results.setdefault((name, events), []).append(figures)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    print("\n%-18s %-16s %14s %16s %12s  (medians of %d turns)" % ("arm", "events", "overhead p50", "perf bytes/wake",
                                                                 "attributed", args.rounds))
    for name in arms:
        for events in SETS:
            runs = results.get((name, events)) or []
            if not runs:
                continue
            ratio = statistics.median(r[0] for r in runs)
            size = statistics.median(r[1] for r in runs)
            attributed = statistics.median(r[2] for r in runs)
            each = ", ".join("x%.2f" % r[0] for r in runs)
            print("%-18s %-16s %13.2fx %16.0f %11.0f%%  (%s)" % (name, events, ratio, size, attributed, each))


if __name__ == "__main__":
    main()
