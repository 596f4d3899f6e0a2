#!/usr/bin/env python3
"""Where a traced wake's time goes, against a planted delay: issue 22's "Done when".

Builds the slow ``sem_post`` plant (``plant/sem_post_spin.c``: every ``sem_post`` busy-waits
``--spin-us`` first -- CPython 3.11's lock release, met by ``Event.set()`` inside the notify
path), preloads it into ``wakelab run --arms event --n 100 --trace`` and reads each run's
summary.json.  Per run and arm: the share of wakes fully attributed, and at p50 (the mean
of the wakes ranked 45th-55th percentile) the notify path, the scheduler (wake delivery +
run-queue wait), what is unattributed as a share of the wake, and the sentence summary.txt
gives.  Targets (for the plant, on an otherwise idle machine, in every run): >= 95% of wakes
fully attributed, notify 0.9-1.6 ms, scheduler < 0.3 ms, unattributed < 5% of the wake.

``--spin-us 0`` runs without the plant (any arms, e.g. ``--arms event,queue,pipe,native-condvar,
native-pipe``, and ``--cpu-threads 1`` for a busy Python thread beside them): the figures
and sentences only, no target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

import _common
from _common import verdict

import _plants

sys.path.insert(0, _common.SRC)


def run_once(args: argparse.Namespace, folder: str, env: Dict[str, str]) -> Dict[str, Any]:
    argv = [sys.executable, "-m", "wakelab", "run", "--arms", args.arms, "--n", str(args.n), "--trace",
            "-o", folder, "--no-history", "-q", "--full"]
    if args.cpu_threads:
        argv += ["--cpu-threads", str(args.cpu_threads)]
    env = dict(env, PYTHONPATH=_common.SRC + os.pathsep + env.get("PYTHONPATH", ""))
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0:
        raise SystemExit("wakelab run failed (%d): %s" % (proc.returncode, proc.stderr.strip()[-2000:]))
    with open(os.path.join(folder, "summary.json")) as fh:
        summary = json.load(fh)
    lines = proc.stdout.splitlines()
    where = []
    if "WHERE THE TIME GOES" in lines:
        for line in lines[lines.index("WHERE THE TIME GOES") + 1:]:
            if line and not line.startswith(" "):
                break
            where.append(line)
    summary["_where"] = where
    return summary


def figures(entry: Dict[str, Any]) -> Dict[str, float]:
    comps = (entry.get("trace") or {}).get("components") or {}
    band = comps.get("at_p50") or {}
    parts = band.get("parts_ns") or {}
    latency = float(band.get("latency_ns") or 0.0)
    return {
        "attributed_pct": 100.0 * (comps.get("fully_attributed") or 0) / max(1, comps.get("wakes") or 0),
        "latency_us": latency / 1e3,
        "notify_us": float(parts.get("notify") or 0.0) / 1e3,
        "scheduler_us": (float(parts.get("sched_wake") or 0.0) + float(parts.get("sched_queue") or 0.0)) / 1e3,
        "reblocked_us": float(parts.get("gil_wait") or 0.0) / 1e3,
        "own_work_us": float(parts.get("interpreter") or 0.0) / 1e3,
        "unattributed_pct": 100.0 * float(parts.get("unattributed") or 0.0) / latency if latency else 0.0,
        "overhead_ratio": float(((entry.get("trace") or {}).get("overhead") or {}).get("ratio") or float("nan")),
        "lost_events": float((entry.get("trace") or {}).get("lost_events") or 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--arms", default="event")
    parser.add_argument("--spin-us", type=int, default=1000, help="the plant's spin per sem_post (0: no plant)")
    parser.add_argument("--cpu-threads", type=int, default=0)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="wakelab-bench-attribution-")
    try:
        env = dict(os.environ)
        if args.spin_us:
            library = _plants.build_slow_sem_post(work)
            env = _plants.plant_env(library, args.spin_us * 1000)
            if not _plants.locks_use_sem_post(env=env):
                raise SystemExit("this interpreter's locks do not call sem_post (3.13+ parks them): the plant has no effect")
        print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        per_arm: Dict[str, List[Dict[str, float]]] = {}
        for run in range(args.runs):
            summary = run_once(args, os.path.join(work, "run%d" % run), env)
            print("\nrun %d: wakelab run --arms %s --n %d --trace%s%s" % (
                run + 1, args.arms, args.n, " --cpu-threads %d" % args.cpu_threads if args.cpu_threads else "",
                " (every sem_post spinning %d µs first)" % args.spin_us if args.spin_us else ""))
            for line in summary["_where"]:
                print(line)
            for entry in summary.get("arms") or []:
                if (entry.get("trace") or {}).get("traced"):
                    per_arm.setdefault(entry["name"], []).append(figures(entry))
        print("\n%-16s %4s %9s %10s %9s %10s %10s %10s %8s %9s" % (
            "arm", "run", "attrib %", "p50 µs", "notify", "scheduler", "reblocked", "own work", "unattr %", "overhead"))
        for name, runs in per_arm.items():
            for i, f in enumerate(runs):
                print("%-16s %4d %9.1f %10.1f %9.1f %10.1f %10.1f %10.1f %8.2f %9.2f" % (
                    name, i + 1, f["attributed_pct"], f["latency_us"], f["notify_us"], f["scheduler_us"],
                    f["reblocked_us"], f["own_work_us"], f["unattributed_pct"], f["overhead_ratio"]))
            med = {k: statistics.median(f[k] for f in runs) for k in runs[0]}
            print("%-16s %4s %9.1f %10.1f %9.1f %10.1f %10.1f %10.1f %8.2f %9.2f" % (
                name, "med", med["attributed_pct"], med["latency_us"], med["notify_us"], med["scheduler_us"],
                med["reblocked_us"], med["own_work_us"], med["unattributed_pct"], med["overhead_ratio"]))
            if args.spin_us and name == "event":
                spin = args.spin_us
                ok = all(f["attributed_pct"] >= 95 and 0.9 * spin <= f["notify_us"] <= 1.6 * spin
                         and f["scheduler_us"] < 0.3 * spin and f["unattributed_pct"] < 5 for f in runs)
                print("  every run: >= 95%% attributed, notify %.0f-%.0f µs, scheduler < %.0f µs, unattributed < 5%%: %s"
                      % (0.9 * spin, 1.6 * spin, 0.3 * spin, verdict(ok)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
