#!/usr/bin/env python3
"""RT throttling, measured: how long a SCHED_FIFO thread that never blocks is stopped.

With ``kernel.sched_rt_runtime_us`` below ``sched_rt_period_us`` (950000 of 1000000
by default), realtime tasks together may run at most that share of each period on a
CPU; past it the kernel stops them until the period ends, so that normal tasks get
the rest.  A realtime waiter that blocks never meets the limit; one that spins does.

This script pins a thread to one CPU, switches it to SCHED_FIFO (``--priority``), and
has it spin on ``perf_counter_ns()`` for ``--seconds``, recording every gap between
two consecutive readings longer than ``--gap-us``: the times it was not running.
It prints the budget, the gaps (count, total, longest) and the share of the time
the thread ran.  Needs root (or RLIMIT_RTPRIO).  While it runs, one CPU belongs to
the spinning thread for 95 % of each second: keep ``--seconds`` short on a shared box.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import _common  # noqa: F401  (puts src/ on sys.path)

from wakelab.core import realtime


def spin(seconds: float, gap_ns: int, request: realtime.Scheduling, cpu: int, out: dict) -> None:
    os.sched_setaffinity(0, {cpu})
    with realtime.scheduled(request):
        clock = time.perf_counter_ns
        gaps = []
        start = last = clock()
        end = start + int(seconds * 1e9)
        while last < end:
            now = clock()
            if now - last > gap_ns:
                gaps.append((last - start, now - last))
            last = now
        out["gaps"] = gaps
        out["elapsed_ns"] = last - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.5)
    parser.add_argument("--priority", type=int, default=50)
    parser.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    parser.add_argument("--gap-us", type=int, default=1000)
    args = parser.parse_args()
    request = realtime.Scheduling("fifo", args.priority)
    problem = realtime.permission_problem(request)
    if problem is not None:
        raise SystemExit("rt_throttle: %s" % problem)
    out: dict = {}
    thread = threading.Thread(target=spin, args=(args.seconds, args.gap_us * 1000, request, args.cpu, out))
    thread.start()
    thread.join()
    gaps = out["gaps"]
    stopped = sum(g for _, g in gaps)
    budget = realtime.rt_budget()
    print("budget: %s" % ", ".join("%s=%s" % kv for kv in sorted(budget.items())))
    print("spun %.3f s on CPU %d under %s" % (out["elapsed_ns"] / 1e9, args.cpu, request.describe()))
    print("gaps over %d us: %d, %.1f ms in all, longest %.1f ms; ran %.1f %% of the time"
          % (args.gap_us, len(gaps), stopped / 1e6, max((g for _, g in gaps), default=0) / 1e6,
             100.0 * (1 - stopped / out["elapsed_ns"])))
    for at, gap in gaps[:12]:
        print("  at %8.1f ms: stopped %6.1f ms" % (at / 1e6, gap / 1e6))


if __name__ == "__main__":
    main()
