#!/usr/bin/env python3
"""How far the polling test (wakelab.analysis.quality.find_polling) is from its thresholds.

Two parts:

* ``--synthetic``: distributions drawn here, with the settle's random part
  between one and four periods of a poll (even and uneven cover, 2 % of
  outliers) and the shapes of waits that block (lognormal, gamma, normal,
  two-level mixtures, a busy thread's 5 ms switch-interval waits), at 50, 200
  and 1000 wakes, 20 draws each: how many of each are flagged.  Target: every
  blocking shape 0 of 20; every poll of 2 ms or more at 200 wakes or more 20 of 20.
* ``FOLDER ...``: the latency arms of real bundles (a catalogue run, with and
  without ``--cpu-threads 1``): each arm's statistics beside the thresholds,
  and the nearest miss of every criterion.  Target: none flagged but a wait
  that polls.

Run from a clone: ``python3 bench/polling_margin.py --synthetic`` or
``python3 bench/polling_margin.py wakelab-runs/catalogue-*``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import _common  # noqa: F401 -- puts src/ on sys.path

from wakelab.analysis import quality
from wakelab.analysis.quality import find_polling, polling_statistics

# (statistic, threshold, True when a value must be at most the threshold)
CRITERIA: Tuple[Tuple[str, float, bool], ...] = (
    ("distance", quality.POLL_MAX_DISTANCE, True),
    ("thinnest_part", quality.POLL_MIN_PART, False),
    ("thickest_part", quality.POLL_MAX_PART, True),
    ("edge", quality.POLL_MAX_EDGE, True),
    ("spread_over_floor", quality.POLL_MIN_SPREAD_OVER_FLOOR, False),
    ("period_ns", quality.POLL_MIN_PERIOD_NS, False),
)


def passes(stats: Dict[str, Any]) -> Dict[str, bool]:
    out = {}
    for key, threshold, at_most in CRITERIA:
        value = stats.get(key)
        out[key] = value is not None and (value <= threshold if at_most else value >= threshold)
    return out


# -- synthetic shapes ------------------------------------------------------------------------------------------


def poller(rng: random.Random, period_us: float, jitter_us: float, hiccups: float = 0.0) -> Callable[[], float]:
    """A wait polled every ``period_us``: the wake lands at the next look after a random settle."""

    def one() -> float:
        settle = 1000 + rng.uniform(0, jitter_us)
        wake = period_us - (settle % period_us) + 60 + abs(rng.gauss(0, 20))
        if rng.random() < hiccups:
            wake += rng.uniform(200, 3000)
        return wake

    return one


# What a shape's draws should give: every one flagged (at 200 and 1000 wakes), at least 80 % of
# them (a random part between one and two periods covers the period unevenly), none, or -- for a
# mixture that is mostly an even spread, which the shape alone cannot tell from a poll -- no target.
ALL, MOST, NONE, LIMIT = "all", "most", "none", "limit"


def shapes(rng: random.Random) -> List[Tuple[str, str, Callable[[], float]]]:
    """(name, what its draws should give, one wake in µs)."""
    out: List[Tuple[str, str, Callable[[], float]]] = []
    for ratio in (1.0, 1.3, 1.5, 1.9, 2.5, 4.0):
        out.append(("poll 2.08 ms, random part %.1f periods" % ratio, MOST if 1.1 < ratio < 1.8 else ALL,
                    poller(rng, 2080, 2080 * ratio)))
    out.append(("poll 2.08 ms, one period, 2% outliers", ALL, poller(rng, 2080, 2080, hiccups=0.02)))
    out.append(("poll 10 ms, two periods", ALL, poller(rng, 10050, 20100)))
    out.append(("poll 1 ms, two periods", ALL, poller(rng, 1060, 2120)))
    for sigma in (0.2, 0.3, 0.5, 0.7, 1.0, 1.5):
        out.append(("lognormal sigma %.1f" % sigma, NONE, lambda s=sigma: 20 * math.exp(rng.gauss(0, s))))
    for k in (2, 3, 4, 6, 9):
        out.append(("gamma k=%d" % k, NONE, lambda k=k: rng.gammavariate(k, 10)))
    out.append(("normal 100 sd 30", NONE, lambda: max(1.0, rng.gauss(100, 30))))
    out.append(("exponential 5 + 20", NONE, lambda: 5 + rng.expovariate(1 / 20)))

    def mixture(parts: Sequence[Tuple[float, Callable[[], float]]]) -> Callable[[], float]:
        def one() -> float:
            r, acc = rng.random(), 0.0
            for weight, draw in parts:
                acc += weight
                if r < acc:
                    return draw()
            return parts[-1][1]()
        return one

    out.append(("two levels 15 / 35 us", NONE, mixture([(0.5, lambda: rng.gauss(15, 2)), (0.5, lambda: rng.gauss(35, 4))])))
    out.append(("two levels 5 / 35 us", NONE, mixture([(0.4, lambda: rng.gauss(5, 1)), (0.6, lambda: rng.gauss(35, 6))])))
    out.append(("busy thread: 20 us or 5 ms", NONE,
                mixture([(0.5, lambda: rng.gauss(20, 3)), (0.5, lambda: 5000 + rng.expovariate(1 / 200))])))
    out.append(("30% at 20 us, 70% even to 5 ms", LIMIT,
                mixture([(0.3, lambda: rng.gauss(20, 3)), (0.7, lambda: rng.uniform(50, 5000))])))
    return out


def synthetic(draws: int) -> int:
    rng = random.Random(20261203)
    failures = 0
    print("%-44s %8s %8s %8s" % ("shape (flagged of %d draws)" % draws, "n=50", "n=200", "n=1000"))
    for name, wanted, one in shapes(rng):
        row = []
        for n in (50, 200, 1000):
            flagged = sum(1 for _ in range(draws) if find_polling([max(1, int(one() * 1000)) for _ in range(n)]))
            row.append(flagged)
        ok = {ALL: row[1] == draws and row[2] == draws, MOST: min(row[1:]) >= 0.8 * draws, NONE: not any(row),
              LIMIT: True}[wanted]
        failures += 0 if ok else 1
        print("%-44s %8d %8d %8d   want %s%s" % (name, row[0], row[1], row[2], wanted if wanted != LIMIT else
                                                 "(no target: mostly an even spread)", "" if ok else "  <-- MISSES"))
    return failures


# -- real bundles ------------------------------------------------------------------------------------------------


def arm_samples(folder: str) -> List[Tuple[str, List[int], Optional[Dict[str, Any]]]]:
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    out = []
    for entry in summary.get("arms") or []:
        if entry.get("kind") != "latency" or not entry.get("samples_file"):
            continue
        with open(os.path.join(folder, entry["samples_file"]), encoding="utf-8") as fh:
            samples = json.load(fh)
        out.append((entry["name"], list(samples.get("samples_ns") or []), (entry.get("quality") or {}).get("polling")))
    return out


def real(folders: Sequence[str]) -> int:
    print("%-34s %5s %9s %8s %7s %9s %10s  %s" % ("arm", "n", "distance", "thinnest", "edge", "spread/fl", "period", "flagged"))
    print("%-34s %5s %9s %8s %7s %9s %10s" % ("thresholds", "", "<= %.2f" % quality.POLL_MAX_DISTANCE,
                                              ">= %.2f" % quality.POLL_MIN_PART, "<= %.2f" % quality.POLL_MAX_EDGE,
                                              ">= %.0f" % quality.POLL_MIN_SPREAD_OVER_FLOOR,
                                              ">= %d us" % (quality.POLL_MIN_PERIOD_NS // 1000)))
    nearest: Dict[str, Tuple[float, str]] = {}
    most_passed: List[Tuple[int, str, Dict[str, Any]]] = []
    flagged = 0
    for folder in folders:
        for name, samples, stored in arm_samples(folder):
            stats = polling_statistics(samples)
            if stats is None:
                continue
            ok = passes(stats)
            label = "%s/%s" % (os.path.basename(os.path.normpath(folder)), name)
            hit = find_polling(samples) is not None  # the library's own decision
            flagged += hit
            print("%-34s %5d %9.3f %8.2f %7.3f %9.1f %10s  %s" % (
                label[-34:], stats["n"], stats["distance"], stats["thinnest_part"], stats["edge"],
                stats["spread_over_floor"] or 0, "%.0f us" % (stats["period_ns"] / 1000), "FLAGGED" if hit else
                "no (%d of %d pass)" % (sum(ok.values()), len(ok))) + ("" if stored is None else ", stored: yes"))
            most_passed.append((sum(ok.values()), label, stats))
            for key, threshold, at_most in CRITERIA:
                value = stats.get(key)
                if value is None or key == "period_ns":
                    continue
                # How far inside the flagged side the value is, in units of the threshold (<0: not there).
                margin = (threshold - value) / threshold if at_most else (value - threshold) / threshold
                if key not in nearest or margin > nearest[key][0]:
                    nearest[key] = (margin, "%s (%s %.3g)" % (label, key, value))
    print()
    print("closest to each threshold (margin > 0: on the flagged side):")
    for key, (margin, where) in sorted(nearest.items()):
        print("  %-18s %+.0f%%  %s" % (key, 100 * margin, where))
    most_passed.sort(key=lambda t: -t[0])
    if most_passed:
        count, label, stats = most_passed[0]
        failed = [k for k, v in passes(stats).items() if not v]
        print("most criteria met by one arm: %s, %d of %d (fails %s)" % (label, count, len(CRITERIA), ", ".join(failed) or "none"))
    print("arms flagged as polling: %d" % flagged)
    return flagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", help="evidence folders whose latency arms to judge")
    parser.add_argument("--synthetic", action="store_true", help="judge synthetic distributions")
    parser.add_argument("--draws", type=int, default=20)
    args = parser.parse_args()
    if args.synthetic:
        failures = synthetic(args.draws)
        print("synthetic: %s" % ("meets target" if not failures else "%d shapes miss the target" % failures))
    if args.folders:
        real(args.folders)


if __name__ == "__main__":
    main()
