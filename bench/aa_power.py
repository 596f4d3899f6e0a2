#!/usr/bin/env python3
"""Calibration of ``wakelab compare``: false verdicts between identical runs, and power.

Targets (issue: comparisons that hold across runs):

* **A/A**: at least 20 pairs of identical default Lab 135 runs (``wakelab run`` with its default
  repeat count), each pair compared; a verdict other than "no difference" / "cannot tell" on an
  arm's p50 or on a tail judged beside it is a false verdict.  Target: at most 5% of the
  arm-percentile verdicts.
* **Power**: for ``event`` and ``sigusr1-self``, a planted delay of +50% of the arm's p50
  (``--planted-delay-us``, measured on a pilot run) is called "slower" at p50 in at least 90% of
  at least 20 trials (each trial: an unplanted and a planted run, made back to back, compared).
  The minimum detectable effect compare reports is quoted beside it.

Compare-grade runs (``wakelab run --rigorous``: more wakes and workers at the same repeat count) are
calibrated the same way with ``--run-args=--rigorous``.

Every run is a whole command (``python -m wakelab run``), as a user makes it; runs alternate so
that a drift of the machine reaches both sides.  Quote the figures with the load they were made
under: this script prints the load average before and after.
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
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import _common
from _common import verdict

CLEAN = ("no difference", "cannot tell")
A_A_TARGET = 0.05
POWER_TARGET = 0.90


def _env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = _common.SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


REUSE = False  # --keep DIR on a folder that has the runs already: compare them again
EXTRA: List[str] = []  # --repeat R: passed to every run
MAKE_ONLY = False  # --make-only: make the runs, compare nothing
INTERLEAVED = False  # --interleaved: each A/A pair is one grid whose cells take turns
SETTLE_US = 1000  # Lab 135's settle


def run(folder: str, *args: str) -> float:
    """One ``wakelab run`` into ``folder``; its wall time in seconds (0 for a run reused)."""
    if REUSE and os.path.exists(os.path.join(folder, "summary.json")):
        return 0.0
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "wakelab", "run", "-q", "--no-history", "-o", folder, *args, *EXTRA],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(), timeout=600)
    return time.perf_counter() - started


def compare(baseline: str, *others_and_args: str) -> Dict[str, Any]:
    if MAKE_ONLY:
        return {}
    done = subprocess.run([sys.executable, "-m", "wakelab", "compare", baseline, *others_and_args, "--json"],
                          capture_output=True, text=True, env=_env(), timeout=600)
    if done.returncode not in (0, 1):
        raise SystemExit("compare failed (%d): %s" % (done.returncode, done.stderr.strip()))
    doc: Dict[str, Any] = json.loads(done.stdout)
    return doc


def _arms(doc: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """Every arm comparison of a compare document (schema wakelab.analysis.compare, version 2)."""
    for comparison in doc.get("comparisons") or []:
        yield from comparison.get("arms") or []


def judgements(arm: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """``{percentile: judgement}`` of one arm comparison: p50, p99, p99_9 or a rate's median."""
    return {str(k): v for k, v in (arm.get("ratios") or {}).items() if isinstance(v, dict)}


def load_p50_ns(folder: str, arm: str) -> float:
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    entry = next(e for e in doc["arms"] if e["name"] == arm)
    return float(entry["latency"]["p50_ns"])


def a_a(work: str, pairs: int) -> Tuple[List[Tuple[str, str, str]], List[float], int]:
    """``(false verdicts as (pair, arm, percentile: word)), wall times, verdicts judged)``."""
    walls: List[float] = []
    false: List[Tuple[str, str, str]] = []
    judged = 0
    for i in range(pairs):
        if INTERLEAVED:
            # One grid command whose two cells take turns, a repetition each; they differ by 1 µs of
            # settle (a grid's values must differ), which no figure here can resolve.
            grid_folder = os.path.join(work, "aa-%d-grid" % i)
            walls.append(run(grid_folder, "--settle-us", "%d,%d" % (SETTLE_US, SETTLE_US + 1)))
            doc = compare(grid_folder)
        else:
            a, b = os.path.join(work, "aa-%d-a" % i), os.path.join(work, "aa-%d-b" % i)
            walls.append(run(a))
            walls.append(run(b))
            doc = compare(a, b)
        for arm in _arms(doc):
            for key, judgement in judgements(arm).items():
                word = str(judgement.get("verdict"))
                if word in ("not tested", "None"):
                    continue
                judged += 1
                if not any(word.startswith(clean) for clean in CLEAN):
                    false.append(("pair %d" % i, str(arm.get("arm")), "%s: %s" % (key, word)))
        print("  A/A pair %d/%d: %d false so far" % (i + 1, pairs, len(false)), file=sys.stderr)
    return false, walls, judged


def power(work: str, arm: str, trials: int) -> Tuple[int, int, float, List[Optional[float]]]:
    """``(trials called slower at p50, trials, planted µs, minimum detectable effects seen)``."""
    pilot = os.path.join(work, "pilot-%s" % arm)
    run(pilot, "--arms", arm)
    planted_us = max(1, int(round(0.5 * load_p50_ns(pilot, arm) / 1000.0)))
    slower = 0
    mdes: List[Optional[float]] = []
    for t in range(trials):
        base, planted = os.path.join(work, "p-%s-%d-a" % (arm, t)), os.path.join(work, "p-%s-%d-b" % (arm, t))
        if t % 2:  # alternate which side is made first
            run(planted, "--arms", arm, "--planted-delay-us", str(planted_us))
            run(base, "--arms", arm)
        else:
            run(base, "--arms", arm)
            run(planted, "--arms", arm, "--planted-delay-us", str(planted_us))
        doc = compare(base, planted, "--across", "planted-delay")
        for found in _arms(doc):
            p50 = judgements(found).get("p50") or {}
            if str(p50.get("verdict")) == "slower":
                slower += 1
            mde = p50.get("min_detectable_effect_pct")
            mdes.append(float(mde) if isinstance(mde, (int, float)) else None)
        print("  power %s trial %d/%d: %d slower" % (arm, t + 1, trials, slower), file=sys.stderr)
    return slower, trials, planted_us, mdes


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=20, help="A/A pairs (default 20)")
    parser.add_argument("--trials", type=int, default=20, help="power trials per arm (default 20)")
    parser.add_argument("--only", choices=("aa", "power"), help="run one half only")
    parser.add_argument("--keep", metavar="DIR", help="keep the runs in DIR (default: a temporary folder, removed); "
                                                     "runs already in DIR are reused, not made again")
    parser.add_argument("--make-only", action="store_true", help="make the runs (into --keep DIR), compare nothing")
    parser.add_argument("--interleaved", action="store_true",
                        help="A/A: make each pair as one grid (--settle-us 1000,1001) whose cells take turns, and "
                             "compare its cells (wakelab compare GRID), instead of two runs one after the other")
    parser.add_argument("--repeat", type=int, metavar="R", help="pass --repeat R to every run (default: wakelab's own)")
    parser.add_argument("--run-args", default="", metavar="'ARGS'",
                        help="more options for every run, after an equals sign when they start with a dash: "
                             "--run-args=--rigorous, --run-args='--placement same --cpus 0'")
    parser.add_argument("--power-arms", default="event,sigusr1-self", metavar="A,B",
                        help="the arms of the power half (default: event,sigusr1-self)")
    args = parser.parse_args(argv)
    global REUSE, MAKE_ONLY, INTERLEAVED
    REUSE, MAKE_ONLY, INTERLEAVED = bool(args.keep), args.make_only, args.interleaved
    if args.repeat is not None:
        EXTRA.extend(["--repeat", str(args.repeat)])
    EXTRA.extend(args.run_args.split())
    if MAKE_ONLY and not args.keep:
        parser.error("--make-only needs --keep DIR")
    work = args.keep or tempfile.mkdtemp(prefix="wakelab-aa-")
    os.makedirs(work, exist_ok=True)
    print("load average before: %s" % (os.getloadavg(),))
    ok = True
    try:
        if args.only in (None, "aa"):
            false, walls, judged = a_a(work, args.pairs)
            share = len(false) / judged if judged else 1.0
            ok &= share <= A_A_TARGET
            print("A/A: %d pairs of default Lab 135 runs%s%s, %d verdicts judged, %d false (%.1f%%; target <= %.0f%%): %s"
                  % (args.pairs, " (%s)" % " ".join(EXTRA) if EXTRA else "",
                     ", each pair one grid whose cells took turns" if INTERLEAVED else "", judged, len(false), 100 * share,
                     100 * A_A_TARGET, verdict(share <= A_A_TARGET)))
            for item in false:
                print("  false: %s %s %s" % item)
            made = [w for w in walls if w > 0]
            if made:
                print("%s wall time: median %.2f s over %d" % ("grid of two Lab 135 cells" if INTERLEAVED else "Lab 135 run",
                                                             statistics.median(made), len(made)))
        if args.only in (None, "power"):
            for arm in args.power_arms.split(","):
                slower, trials, planted_us, mdes = power(work, arm, args.trials)
                share = slower / trials if trials else 0.0
                ok &= share >= POWER_TARGET
                seen = [m for m in mdes if m is not None]
                print("power %s: +%d µs planted (+50%% of its pilot p50), called slower in %d of %d trials (%.0f%%; "
                      "target >= %.0f%%): %s; minimum detectable effect reported: median %s"
                      % (arm, planted_us, slower, trials, 100 * share, 100 * POWER_TARGET, verdict(share >= POWER_TARGET),
                         "%.1f%%" % statistics.median(seen) if seen else "not reported"))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("load average after: %s" % (os.getloadavg(),))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
