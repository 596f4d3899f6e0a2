#!/usr/bin/env python3
"""A soak's memory, its histogram's accuracy, and the cost of recording into the histogram.

Targets (issue 13, soak runs):

1. A soak of 10,000,000 ``sigusr1-self`` wakes (``--wakes``): worker and
   parent memory flat after the raw-sample cap (1,000,000): peak RSS at 1 M
   and at 10 M wakes.  The soak runs in this process (the parent) through
   :func:`wakelab.harness.soak.run_soak`; a sampler thread reads this
   process's RSS and its descendants' peak (VmHWM of the template and of each
   chunk's worker) from /proc every 0.2 s.  (Not ``getrusage(RUSAGE_CHILDREN)``:
   the kernel records, at exec, the RSS the template's process had as a fork
   of this one, numpy and all, so that figure is this process's, not a
   worker's.)  The last row is after the soak's final pass over the kept raw
   samples (quality flags), a one-off bounded by the raw-sample cap.
2. Percentiles from the histogram within its stated precision (2 ** -11) of
   those computed exactly from a raw run of the same length: a second soak
   (``--accuracy-wakes``, default the same length) keeps every raw sample
   (``raw_cap`` = its length), so both exist for the same wakes.
3. Recording into the histogram, per sample, against a bare
   ``perf_counter_ns()`` pair (target <= 1.2x; recording happens in the
   parent after each worker replied, never inside a timed window).

Run it under ``nice`` on a quiet machine; it takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import _common  # noqa: F401  (puts src/ on sys.path)
from _common import median, verdict

from wakelab.analysis.hdr import RELATIVE_ERROR, LogLinearHistogram
from wakelab.core.model import MeasureParams, int64s
from wakelab.harness.runner import Execution, RunPlan
from wakelab.harness.soak import RAW_CAP, run_soak
from wakelab.labs import LAB_135, RunShape, lab_for_run

TARGET_RATIO = 1.2
FLAT_MB = 5.0  # RSS growth from 1 M to 10 M wakes counted as flat


def _status_mb(pid: int, key: str) -> Optional[float]:
    try:
        with open("/proc/%d/status" % pid, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


def _descendants(root: int) -> List[int]:
    children: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    found, pending = [], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


class Sampler:
    """RSS of this process and the peak of any descendant, every ``interval_s``, against wakes so far."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self.wakes = 0
        self.rows: List[Tuple[float, int, float, float]] = []  # (t, wakes, parent RSS MB, worker max RSS MB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._template: Optional[int] = None

    def __enter__(self) -> "Sampler":
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(self.interval_s):
            parent = _status_mb(me, "VmRSS") or 0.0
            workers = [_status_mb(pid, "VmHWM") or 0.0 for pid in _descendants(me)]
            self.rows.append((time.monotonic() - self._started, self.wakes, parent, max(workers, default=0.0)))

    def at(self, wakes: int) -> Tuple[float, float]:
        """(peak parent RSS, peak worker RSS) over the samples taken up to ``wakes`` wakes."""
        rows = [r for r in self.rows if r[1] <= wakes] or self.rows[:1]
        return max(r[2] for r in rows), max(r[3] for r in rows)


def _plan(folder: str, arm: str) -> RunPlan:
    return RunPlan(
        lab=lab_for_run(LAB_135, [arm], RunShape(in_process=False, workers=1)),
        arm_names=[arm],
        params=MeasureParams(n=1, warmup=10),
        folder=folder,
        execution=Execution(workers=1),
    )


def memory(wakes: int, arm: str) -> Dict[str, Any]:
    folder = tempfile.mkdtemp(prefix="wakelab-soak-bench-")
    with Sampler() as sampler:

        def progress(event: str, info: Dict[str, Any]) -> None:
            if event == "soak-progress":
                sampler.wakes = int(info["n"]) + int(info["lost"])

        started = time.monotonic()
        summary, error = run_soak(_plan(folder, arm), 86400.0, progress, max_wakes=wakes)
        wall = time.monotonic() - started
    at_cap = sampler.at(RAW_CAP)
    at_end = sampler.at(wakes)
    return {"summary": summary, "error": error, "wall_s": wall, "at_cap": at_cap, "at_end": at_end,
            "rows": sampler.rows, "folder": folder}


def accuracy(wakes: int, arm: str) -> Dict[str, Any]:
    """A soak keeping every raw sample: the histogram's percentiles against the exact ones of the same wakes."""
    import numpy as np

    from wakelab.analysis.stats import PERCENTILES

    folder = tempfile.mkdtemp(prefix="wakelab-soak-accuracy-")
    summary, _ = run_soak(_plan(folder, arm), 86400.0, None, raw_cap=wakes, max_wakes=wakes)
    entry = summary["arms"][0]
    # The samples file's raw series straight into int64 (json.loads would build a list of 10 M ints).
    with open(os.path.join(folder, entry["samples_file"]), encoding="ascii") as fh:
        text = fh.read()
    start = text.index('"samples_ns":[') + len('"samples_ns":[')
    end = text.index("]", start)
    exact = np.array(text[start:end].split(","), dtype=np.int64) if end > start else np.zeros(0, dtype=np.int64)
    doc = json.loads(text[:start] + text[end:])
    del text
    hist = LogLinearHistogram.from_dict(doc["histogram"])
    rows = []
    for key, q in PERCENTILES:
        want = float(np.percentile(exact, q))
        got = hist.percentile_ns(q)
        rows.append((key, want, got, abs(got - want) / want if want else 0.0))
    return {"n": int(exact.size), "hist_total": hist.total, "rows": rows}


def recording_cost(chunk: int = 200_000, rounds: int = 9) -> Dict[str, float]:
    """Per-sample ns of LogLinearHistogram.record_many on a chunk as the soak gets it, and of a bare pair."""
    import numpy as np

    rng = np.random.default_rng(1)
    samples = int64s(rng.lognormal(8.5, 0.8, chunk).astype(np.int64).tolist())
    now = time.perf_counter_ns
    record: List[float] = []
    pair: List[float] = []
    for _ in range(rounds):
        hist = LogLinearHistogram()
        start = now()
        hist.record_many(samples)
        record.append((now() - start) / chunk)
        start = now()
        for _ in range(chunk):
            a = now()
            b = now()
        pair.append((now() - start) / chunk)
    del a, b
    return {"record_ns": median(record), "pair_ns": median(pair)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wakes", type=int, default=10_000_000)
    parser.add_argument("--accuracy-wakes", type=int, default=None, help="length of the all-raw soak (default: --wakes)")
    parser.add_argument("--arm", default="sigusr1-self")
    args = parser.parse_args()

    cost = recording_cost()
    ratio = cost["record_ns"] / cost["pair_ns"]
    print("histogram recording: %.1f ns a sample (chunks of 200,000) against %.1f ns for a bare perf_counter_ns() pair: "
          "%.3fx (target <= %.1f): %s" % (cost["record_ns"], cost["pair_ns"], ratio, TARGET_RATIO, verdict(ratio <= TARGET_RATIO)))

    result = memory(args.wakes, args.arm)
    summary = result["summary"]
    entry = summary["arms"][0]
    soak = summary["soak"]
    print("soak of %s %s wakes: %s in %.0f s, %d chunks, raw kept %s, percentiles from %s"
          % (format(entry["latency"]["n"] + entry["latency"]["lost"], ","), args.arm, entry["status"], result["wall_s"],
             soak["chunks"], format(soak["raw_kept"], ","), soak["figures"]["percentiles_from"]))
    (p_cap, w_cap), (p_end, w_end) = result["at_cap"], result["at_end"]
    rows = result["rows"]
    during = max((r[2] for r in rows if r[1] < args.wakes), default=0.0)
    print("  parent RSS peak: %.1f MB at 1 M wakes, %.1f MB up to %s wakes: %s; %.1f MB with the final quality pass over "
          "the kept raw samples" % (p_cap, during, format(args.wakes, ","), verdict(during - p_cap <= FLAT_MB), p_end))
    print("  worker RSS peak: %.1f MB at 1 M wakes, %.1f MB at %s wakes: %s"
          % (w_cap, w_end, format(args.wakes, ","), verdict(w_end - w_cap <= FLAT_MB)))
    print("  RSS over time (s, wakes, parent MB, worker peak MB):")
    for row in rows[:: max(1, len(rows) // 12)] + rows[-1:]:
        print("    %6.1f  %11s  %6.1f  %6.1f" % (row[0], format(row[1], ","), row[2], row[3]))

    check = accuracy(args.accuracy_wakes or args.wakes, args.arm)
    print("histogram against the exact percentiles of the same %s wakes (stated precision %.3g):"
          % (format(check["n"], ","), RELATIVE_ERROR))
    worst = 0.0
    for key, want, got, error in check["rows"]:
        worst = max(worst, error)
        print("  %-6s exact %12.1f ns  histogram %12.1f ns  relative error %.2e" % (key, want, got, error))
    print("  worst %.2e: %s" % (worst, verdict(worst <= RELATIVE_ERROR and check["hist_total"] == check["n"])))


if __name__ == "__main__":
    main()
