#!/usr/bin/env python3
"""Peak resident memory of a worker process holding 1,000,000 samples.

Target (issue 13: compact raw samples): at most 30 MB (it was 65.6 MB with a
list of Python ints; the data itself is 8 MB as int64).  Runs one real worker
(``python -S -m wakelab.harness.worker``) on the spinning ``sigusr1-self``
arm with n = 1,000,000 and reads the child's peak RSS from
``getrusage(RUSAGE_CHILDREN)`` after it exits.  Also reports a worker that
takes 1,000 samples, the interpreter's own baseline.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import _common  # noqa: F401
from _common import verdict

from wakelab.core.model import MeasureParams
from wakelab.harness.workers import worker_env

TARGET_MB = 30


def peak_rss_mb(n: int, arm: str, family: str) -> tuple:
    request = {"protocol": 1, "arm": arm, "family": family, "params": MeasureParams(n=n, warmup=0).to_dict(), "conditions": {}}
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-S", "-m", "wakelab.harness.worker"], input=json.dumps(request).encode(),
        capture_output=True, env=worker_env(), check=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    reply = json.loads(proc.stdout)
    assert reply["ok"], reply
    raw = reply["raw"]
    assert len(raw["samples_ns"]) + raw["lost"] == n
    # ru_maxrss of children is the largest child so far: run the big worker last.
    return max(after, before) / 1024.0, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args()
    small, _ = peak_rss_mb(1000, "sigusr1-self", "signals")
    big, wall = peak_rss_mb(args.n, "sigusr1-self", "signals")
    print("worker with 1,000 samples:     peak RSS %.1f MB" % small)
    print("worker with %s samples: peak RSS %.1f MB in %.1f s (target <= %d MB): %s"
          % (format(args.n, ","), big, wall, TARGET_MB, verdict(big <= TARGET_MB)))


if __name__ == "__main__":
    main()
