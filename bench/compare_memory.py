"""Peak memory of ``wakelab compare`` on two large bundles (issue 14: "compare of two 80 MB bundles").

Makes two small real runs, scales each arm's samples up by repeating them (the percentiles of a
sample repeated k times are the sample's own, so the bundles stay consistent), and runs
``wakelab compare A B`` in a fresh process, reporting its peak RSS (ru_maxrss of the child).

    python bench/compare_memory.py [--mb 80] [--target-mb 400]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from _common import ROOT, SRC, verdict

ARMS = "event,pipe,queue,condition"


def _run(folder: str) -> None:
    subprocess.run([sys.executable, "-m", "wakelab", "run", "--arms", ARMS, "--n", "400", "-o", folder, "--no-history", "-q"],
                   check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, PYTHONPATH=SRC), cwd=ROOT)


def _scale(folder: str, megabytes: float) -> float:
    """Repeat every arm's samples until the bundle's samples total about ``megabytes``; its size in MB."""
    samples_dir = os.path.join(folder, "samples")
    names = sorted(os.listdir(samples_dir))
    now = sum(os.path.getsize(os.path.join(samples_dir, n)) for n in names)
    factor = max(1, int(megabytes * 1e6 / now))
    with open(os.path.join(folder, "summary.json")) as fh:
        summary = json.load(fh)
    for entry in summary["arms"]:
        path = os.path.join(folder, entry["samples_file"])
        with open(path) as fh:
            doc = json.load(fh)
        doc["samples_ns"] = doc["samples_ns"] * factor
        entry["latency"]["n"] = len(doc["samples_ns"])
        with open(path, "w") as fh:
            json.dump(doc, fh)
    with open(os.path.join(folder, "summary.json"), "w") as fh:
        json.dump(summary, fh)
    return sum(os.path.getsize(os.path.join(samples_dir, n)) for n in names) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=80.0, help="samples per bundle, MB (default 80)")
    parser.add_argument("--target-mb", type=float, default=400.0, help="peak RSS the compare should stay under")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wakelab-compare-memory-") as tmp:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        _run(a)
        _run(b)
        sizes = (_scale(a, args.mb), _scale(b, args.mb))
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "wakelab", "compare", a, b], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=SRC), cwd=ROOT)
        wall = time.monotonic() - started
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        return 1
    print("bundles: %.1f MB and %.1f MB of samples" % sizes)
    print("compare: peak RSS %.0f MB, %.1f s wall (target < %.0f MB): %s"
          % (peak_mb, wall, args.target_mb, verdict(peak_mb < args.target_mb)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
