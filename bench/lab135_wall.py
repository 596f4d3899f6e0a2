#!/usr/bin/env python3
"""Wall time of the default Lab 135 run, worker processes included, against a plain script.

Target (issue: trustworthy numbers): within 1.5x the wall time of a plain
single-file script doing the same work -- 210 Event wakes with a settle of
1 ms plus a random 0-2 ms (wakelab's default settle), 210 SIGUSR1
self-signals, 8 rounds of 20,000 handler installs with the empty loop beside
each -- and nothing else.  Both are timed as whole commands (interpreter
start-up included, both started the same way: ``python3 FILE`` and
``python3 -m wakelab run``), alternately, ``--repeats`` times; medians are
compared.

``--settle-jitter-us US`` (repeatable) also times ``wakelab run
--settle-jitter-us US``, alternating with the others: the default run against
``--settle-jitter-us 0`` is what the settle's random part costs a default run,
and per blocked wake (the Event arm's counted and warm-up wakes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import _common
from _common import median, verdict

from wakelab.core.model import DEFAULT_SETTLE_JITTER_US

TARGET = 1.5

PLAIN = r'''
import os, random, signal, threading, time
JITTER_US = %d
now = time.perf_counter_ns
ev, go, ready, done = (threading.Event() for _ in range(4))
box = [0]
def waiter():
    while True:
        go.wait(); go.clear()
        if box[0] < 0: return
        ready.set(); ev.wait(1.0); box[0] = now(); done.set()
t = threading.Thread(target=waiter, daemon=True); t.start()
event = []
for _ in range(210):
    ev.clear(); ready.clear(); done.clear(); go.set(); ready.wait(); time.sleep(0.001 + random.randint(0, JITTER_US) / 1e6)
    t0 = now(); ev.set(); done.wait(); event.append(box[0] - t0)
box[0] = -1; go.set(); t.join()
seen = [0]
def handler(s, f): seen[0] = now()
old = signal.signal(signal.SIGUSR1, handler)
sig = []
for _ in range(210):
    seen[0] = 0; t0 = now(); os.kill(os.getpid(), signal.SIGUSR1)
    while not seen[0]: pass
    sig.append(seen[0] - t0)
rounds = []
for _ in range(8):
    t0 = now()
    for _ in range(20000): signal.signal(signal.SIGUSR1, handler)
    rounds.append(now() - t0)
    t0 = now()
    for _ in range(20000): pass
signal.signal(signal.SIGUSR1, old)
event.sort(); sig.sort()
print(event[100], sig[100], 20000e9 / sorted(rounds)[4])
'''


def timed(cmd, env=None) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--repeat", type=int, action="append", metavar="R",
                        help="also time 'wakelab run --repeat R' (repeatable), alternating with the others")
    parser.add_argument("--rigorous", action="store_true",
                        help="also time 'wakelab run --rigorous' (compare-grade), alternating with the others")
    parser.add_argument("--settle-jitter-us", type=int, action="append", metavar="US",
                        help="also time 'wakelab run --settle-jitter-us US' (repeatable), alternating with the others")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=_common.SRC, WAKELAB_HISTORY=os.path.join(tempfile.mkdtemp(), "h.sqlite3"))
    # As on a normal installation, compiled bytecode is cached (some sandboxes set
    # PYTHONDONTWRITEBYTECODE, which makes every start recompile the package from source).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    out = tempfile.mkdtemp()
    plain, lab = [], []
    others = {("--repeat", str(r)): [] for r in args.repeat or []}  # type: dict
    if args.rigorous:
        others[("--rigorous",)] = []
    for jitter in args.settle_jitter_us or []:
        others[("--settle-jitter-us", str(jitter))] = []
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(PLAIN % DEFAULT_SETTLE_JITTER_US)
    for i in range(args.repeats):
        plain.append(timed([sys.executable, fh.name], env))
        lab.append(timed([sys.executable, "-m", "wakelab", "run", "-q", "--no-history", "-o", os.path.join(out, str(i))], env))
        for k, (flags, times) in enumerate(others.items()):
            times.append(timed([sys.executable, "-m", "wakelab", "run", "-q", "--no-history", *flags,
                                "-o", os.path.join(out, "c%d-%d" % (k, i))], env))
    ratio = median(lab) / median(plain)
    print("plain single-file script:  median %.2f s  (%s)" % (median(plain), ", ".join("%.2f" % x for x in plain)))
    print("wakelab run (Lab 135):     median %.2f s  (%s)" % (median(lab), ", ".join("%.2f" % x for x in lab)))
    print("ratio %.2f (target <= %.1f): %s" % (ratio, TARGET, verdict(ratio <= TARGET)))
    for flags, times in others.items():
        print("  with %-20s median %.2f s, ratio %.2f" % (" ".join(flags) + ":", median(times), median(times) / median(plain)))
    blocked = _blocked_wakes(os.path.join(out, "0"))
    for flags, times in others.items():
        if flags[0] != "--settle-jitter-us":
            continue
        extra = median(lab) - median(times)
        print("  the default random part (0-%d us) against %s: %+.2f s a run, %+.2f ms a blocked wake (%d blocked wakes; "
              "expected %+.2f ms)" % (DEFAULT_SETTLE_JITTER_US, " ".join(flags), extra, 1e3 * extra / blocked, blocked,
                                      (DEFAULT_SETTLE_JITTER_US - int(flags[1])) / 2e3))


def _blocked_wakes(folder: str) -> int:
    """Wakes of the run's blocked latency arms, warm-up wakes included (each sleeps a settle)."""
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    return sum((a["latency"] or {}).get("n", 0) + (a["latency"] or {}).get("lost", 0) + (a.get("warmup_discarded") or 0)
               for a in summary["arms"] if a.get("kind") == "latency" and a.get("waiter") == "blocked" and a.get("latency"))


if __name__ == "__main__":
    main()
