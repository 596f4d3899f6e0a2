#!/usr/bin/env python3
"""Calibration of ``wakelab ab``'s gate: A/A failures, and power at +10%, +25% and +50%.

Every trial is one whole ``wakelab ab`` command, as a CI job runs it, both sides this interpreter:

* **A/A**: nothing differs between the sides; a gate failure (exit 1) is a false alarm.  All the
  ``--arms`` are measured in each A/A, and a trial fails when any arm's gate fails.
* **Power**: head carries a planted delay of +P% of the arm's p50 (``--planted-delay-us head:US``,
  the p50 of a pilot A/B; at least 1 µs), one arm per trial; power is the share of trials whose
  gate fails.
* ``--sem-post US``: the issue's own plant instead -- every ``sem_post()`` of head's workers spins
  US µs first (an ``LD_PRELOAD`` wrapper, bench/plant/sem_post_spin.c, built here with gcc) --
  against as many A/A trials; arm ``event``.

Each at the defaults and at ``--rigorous`` (``--settings``), on the machine as it is ("quiet") and
with one busy process (a Python spin loop, not the A/B's own) started halfway through each trial
("busy"; halfway: half the pilot's wall time).  Targets (issue 21): A/A with a busy process
starting halfway at most 1 failure in 20; the +5 µs sem_post plant found in at least 19 of 20.

The figures depend on the machine and on what else it runs: the script prints the load average
before and after each block, and the wall time of a trial.  ``--json FILE`` keeps every trial.

    python3 bench/ab_calibration.py --trials 10                      # the table (about 30 min on 2 vCPUs)
    python3 bench/ab_calibration.py --settings rigorous --loads busy --trials 20 --only aa
    python3 bench/ab_calibration.py --sem-post 5 --trials 20         # the Done-when plant
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import _common
import _plants

HERE = os.path.dirname(os.path.abspath(__file__))
AA_TARGET = 1  # failures in 20, with a busy process starting halfway
POWER_TARGET = 19  # of 20, the +5 µs sem_post plant
SPIN = "while True:\n    pass\n"


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = _common.SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def loadavg() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


class Busy:
    """A process spinning on a CPU from ``delay_s`` after start() until stop(): someone else's work."""

    def __init__(self, delay_s: Optional[float]) -> None:
        self.delay_s = delay_s
        self.proc: Optional[subprocess.Popen] = None
        self._timer: Optional[threading.Timer] = None

    def start(self) -> None:
        if self.delay_s is None:
            return
        self._timer = threading.Timer(self.delay_s, self._spawn)
        self._timer.start()

    def _spawn(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SPIN])

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer.join()
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def ab(work: str, name: str, extra: Sequence[str], busy_after_s: Optional[float]) -> Dict[str, Any]:
    """One ``wakelab ab`` trial: its exit status, wall time and JSON document (None on an error)."""
    folder = os.path.join(work, name)
    argv = [sys.executable, "-m", "wakelab", "ab", sys.executable, sys.executable, "--json", "-q", "-o", folder, *extra]
    busy = Busy(busy_after_s)
    started = time.perf_counter()
    busy.start()
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=1800)
    finally:
        busy.stop()
    wall = time.perf_counter() - started
    doc = json.loads(done.stdout) if done.returncode in (0, 1) and done.stdout.strip() else None
    shutil.rmtree(folder, ignore_errors=True)
    return {"status": done.returncode, "wall_s": round(wall, 2), "doc": doc,
            "stderr": done.stderr.strip().splitlines()[-3:] if doc is None else []}


def failed_arms(trial: Dict[str, Any]) -> List[str]:
    doc = trial.get("doc") or {}
    return sorted({r["arm"] for r in (doc.get("gate") or {}).get("regressions") or []})


def p50s(trial: Dict[str, Any]) -> Dict[str, float]:
    doc = trial.get("doc") or {}
    return {row["arm"]: float(row["base"]) for row in (doc.get("gate") or {}).get("rows") or [] if row["at"] == "p50"}


def mdes(trials: Sequence[Dict[str, Any]], arm: str) -> List[float]:
    found = []
    for trial in trials:
        for row in ((trial.get("doc") or {}).get("gate") or {}).get("rows") or []:
            if row["arm"] == arm and row["at"] == "p50" and row.get("min_detectable_effect_pct") is not None:
                found.append(float(row["min_detectable_effect_pct"]))
    return found


def block(work: str, label: str, setting: str, load: str, arms: Sequence[str], levels: Sequence[int], trials: int,
          only: Optional[str], log: List[Dict[str, Any]]) -> List[Tuple[str, ...]]:
    """One setting under one load: a pilot, the A/A trials, the power trials; the table's rows."""
    flags = ["--rigorous"] if setting == "rigorous" else []
    print("[%s] %s, %s: load average %s" % (now(), setting, load, loadavg()), file=sys.stderr)
    pilot = ab(work, "%s-pilot" % label, ["--arms", ",".join(arms), *flags], None)
    if pilot["doc"] is None:
        raise SystemExit("the pilot A/B failed: %s" % pilot["stderr"])
    half = pilot["wall_s"] / 2.0 if load == "busy" else None
    rows: List[Tuple[str, ...]] = []
    if only in (None, "aa"):
        results = []
        for i in range(trials):
            results.append(ab(work, "%s-aa-%d" % (label, i), ["--arms", ",".join(arms), *flags], half))
            print("  A/A %d/%d: %s %s" % (i + 1, trials, failed_arms(results[-1]) or results[-1]["status"],
                                         " ".join(results[-1]["stderr"])), file=sys.stderr)
        log.append({"block": label, "kind": "aa", "arms": list(arms), "trials": results})
        any_failed = sum(1 for r in results if r["status"] == 1)
        errors = sum(1 for r in results if r["status"] not in (0, 1))
        walls = [r["wall_s"] for r in results]
        per_arm = ", ".join("%s %d" % (a, sum(1 for r in results if a in failed_arms(r))) for a in arms)
        seen = [m for a in arms for m in mdes(results, a)]
        rows.append((setting, load, "A/A (%s)" % ",".join(arms), "%d of %d (%s)%s" % (any_failed, trials, per_arm,
                     "; %d errors" % errors if errors else ""), "%.0f%%" % statistics.median(seen) if seen else "-",
                     "%.1f s" % statistics.median(walls)))
    if only in (None, "power"):
        for arm in arms:
            p50_ns = p50s(pilot)[arm]
            for level in levels:
                planted_us = max(1, int(round(level / 100.0 * p50_ns / 1000.0)))
                results = []
                for i in range(trials):
                    results.append(ab(work, "%s-%s-%d-%d" % (label, arm, level, i),
                                      ["--arms", arm, "--planted-delay-us", "head:%d" % planted_us, *flags], half))
                log.append({"block": label, "kind": "power", "arm": arm, "level_pct": level, "planted_us": planted_us,
                            "trials": results})
                found = sum(1 for r in results if arm in failed_arms(r))
                seen = mdes(results, arm)
                rows.append((setting, load, "%s +%d%% (+%d µs of %.1f)" % (arm, level, planted_us, p50_ns / 1000.0),
                             "%d of %d" % (found, trials), "%.0f%%" % statistics.median(seen) if seen else "-",
                             "%.1f s" % statistics.median(r["wall_s"] for r in results)))
                print("  power %s +%d%%: %d of %d" % (arm, level, found, trials), file=sys.stderr)
    print("[%s] %s, %s done: load average %s" % (now(), setting, load, loadavg()), file=sys.stderr)
    return rows


def sem_post_block(work: str, spin_us: int, trials: int, setting: str, load: str,
                   log: List[Dict[str, Any]]) -> List[Tuple[str, ...]]:
    """The issue's plant: head's every sem_post spins ``spin_us`` µs; against as many A/A trials; arm event."""
    library = _plants.build_slow_sem_post(work)
    flags = ["--arms", "event"] + (["--rigorous"] if setting == "rigorous" else [])
    plant = ["--env", "head:LD_PRELOAD=%s" % library, "--env", "head:%s=%d" % (_plants.SPIN_ENV, spin_us * 1000)]
    print("[%s] sem_post +%d µs, %s, %s: load average %s" % (now(), spin_us, setting, load, loadavg()), file=sys.stderr)
    pilot = ab(work, "sem-pilot", flags, None)
    half = pilot["wall_s"] / 2.0 if load == "busy" else None
    rows = []
    for kind, extra in (("A/A", []), ("sem_post +%d µs" % spin_us, plant)):
        results = []
        for i in range(trials):
            results.append(ab(work, "sem-%s-%d" % ("aa" if not extra else "plant", i), flags + extra, half))
            print("  %s %d/%d: %s" % (kind, i + 1, trials, failed_arms(results[-1]) or results[-1]["status"]), file=sys.stderr)
        log.append({"block": "sem_post", "kind": kind, "trials": results})
        failed = sum(1 for r in results if r["status"] == 1)
        errors = sum(1 for r in results if r["status"] not in (0, 1))
        seen = mdes(results, "event")
        ratios = [row["ratio"] for r in results for row in ((r.get("doc") or {}).get("gate") or {}).get("rows", [])
                  if row["at"] == "p50"]
        rows.append((setting, load, "event, %s (p50 ratio median %.2f×)" % (kind, statistics.median(ratios) if ratios else 0),
                     "%d of %d%s" % (failed, trials, "; %d errors" % errors if errors else ""),
                     "%.0f%%" % statistics.median(seen) if seen else "-", "%.1f s" % statistics.median(r["wall_s"] for r in results)))
    print("[%s] sem_post done: load average %s" % (now(), loadavg()), file=sys.stderr)
    return rows


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per row (default 20)")
    parser.add_argument("--arms", default="event,queue,pipe", help="arms (default: event,queue,pipe)")
    parser.add_argument("--levels", default="10,25,50", help="planted delays, percent of the arm's p50 (default 10,25,50)")
    parser.add_argument("--settings", default="default,rigorous", help="default, rigorous or both (default both)")
    parser.add_argument("--loads", default="quiet,busy", help="quiet, busy or both (default both)")
    parser.add_argument("--only", choices=("aa", "power"), help="one half of each block only")
    parser.add_argument("--sem-post", type=int, metavar="US",
                        help="instead of the table: A/A against head's every sem_post spinning US µs (arm event)")
    parser.add_argument("--json", metavar="FILE", help="write every trial's figures to FILE")
    args = parser.parse_args(argv)
    if args.sem_post is not None and not shutil.which("gcc"):
        parser.error("--sem-post builds an LD_PRELOAD wrapper with gcc, which is not on PATH")
    work = tempfile.mkdtemp(prefix="wakelab-ab-calibration-")
    log: List[Dict[str, Any]] = []
    rows: List[Tuple[str, ...]] = []
    started = now()
    print("started %s, load average %s, %d CPUs" % (started, loadavg(), os.cpu_count() or 0))
    try:
        for setting in args.settings.split(","):
            for load in args.loads.split(","):
                if args.sem_post is not None:
                    rows += sem_post_block(work, args.sem_post, args.trials, setting, load, log)
                else:
                    rows += block(work, "%s-%s" % (setting, load), setting, load, args.arms.split(","),
                                  [int(x) for x in args.levels.split(",")], args.trials, args.only, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"started": started, "finished": now(), "argv": sys.argv, "blocks": log}, fh, indent=1)
    print("finished %s, load average %s" % (now(), loadavg()))
    print()
    print("| setting | load | trial | gate failed | MDE at p50 (median) | wall per A/B |")
    print("| --- | --- | --- | --- | ---: | ---: |")
    for row in rows:
        print("| %s |" % " | ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
