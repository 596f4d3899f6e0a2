"""What a run saw (summary.json ``observed``): busy processes other than its own, and both readings.

Real processes, no speed thresholds: a process that spins for the whole window uses far more than
the busy threshold of a CPU on any machine that runs it at all.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time

import pytest

from wakelab.harness import observed

SPIN = "import time\nend = time.monotonic() + %f\nwhile time.monotonic() < end:\n    pass\n"

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


def _orphan_spinner(seconds: float) -> int:
    """A process that spins for ``seconds`` and is *not* this process's descendant (its parent, a
    shell, exits at once, so it is reparented): as another user's busy process would be."""
    done = subprocess.run(["sh", "-c", '%s -c "$0" >/dev/null 2>&1 & echo $!' % sys.executable, SPIN % seconds],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_a_process_that_starts_halfway_is_seen_busy_and_our_own_child_is_not() -> None:
    watcher = observed.Observer()
    own = subprocess.Popen([sys.executable, "-c", SPIN % 1.2])  # a descendant: the run's own work
    other = _orphan_spinner(1.2)
    try:
        time.sleep(1.0)
        record = dataclasses.asdict(watcher.observe())
    finally:
        _kill(other)
        own.kill()
        own.wait()
    busy = {p["pid"]: p for p in record["busy_processes"]}
    assert other in busy, record["busy_processes"]
    assert busy[other]["started_during_run"] is True
    assert busy[other]["cpu_share"] >= observed.BUSY_SHARE
    assert own.pid not in busy
    assert os.getpid() not in busy
    for reading in (record["start"], record["end"]):
        assert set(reading) == {"utc", "load_average", "cpu_mhz", "cpufreq_governors", "cpuidle_governor", "idle_disabled"}
        assert reading["load_average"] is None or len(reading["load_average"]) == 3
    assert record["wall_s"] >= 0.9
    assert record["busy_share"] == observed.BUSY_SHARE and "descendants" in record["method"]

