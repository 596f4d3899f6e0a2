"""The measuring side imports only the standard library and runs on every CPython 3.9+ here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from wakelab.core.model import MeasureParams
from wakelab.harness import grid
from wakelab.harness.interpreters import discover
from wakelab.harness.runner import Execution, RunPlan
from wakelab.labs import LAB_135

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
THIRD_PARTY = ("numpy", "scipy", "matplotlib", "plotly", "rich", "jsonschema", "pyperf", "hypothesis")

PROBE = """
import sys
sys.path.insert(0, %r)
import wakelab.harness.worker, wakelab.harness.runner, wakelab.report.text
from wakelab.core.registry import all_arms
from wakelab.core.model import MeasureParams
from wakelab.core.registry import get_arm
all_arms()
get_arm("event").measure(MeasureParams(n=3, warmup=0, settle_us=100))
loaded = sorted(m for m in sys.modules if m.split(".")[0] in %r)
print(",".join(loaded))
"""


def test_measuring_side_loads_no_third_party_module() -> None:
    # -S: no site-packages at all, as in a worker; the import itself would fail on a third-party module.
    result = subprocess.run([sys.executable, "-S", "-c", PROBE % (SRC, THIRD_PARTY)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def _two_versions():
    found = [i for i in discover() if i.implementation == "cpython" and i.version[:2] >= (3, 9)]
    by_minor = {i.version[:2]: i for i in found}
    if len(by_minor) < 2:
        return None
    versions = sorted(by_minor)
    return by_minor[versions[0]], by_minor[versions[-1]]


@pytest.mark.skipif(_two_versions() is None, reason="needs two CPython minor versions (3.9+) on this machine")
def test_one_grid_measures_on_the_oldest_and_newest_interpreter(tmp_path) -> None:
    oldest, newest = _two_versions()  # type: ignore[misc]
    base = RunPlan(lab=LAB_135, arm_names=["event", "sigusr1-self", "signal-install"],
                   params=MeasureParams(n=6, warmup=1, settle_us=100, install_n=200, rounds=2),
                   folder=str(tmp_path), execution=Execution(workers=2))
    cells = grid.expand([oldest.path, newest.path], [oldest.label, newest.label], [("any", None, None)], [100], [0])
    doc = grid.run_grid(base, cells)
    assert doc["complete"] is True
    versions = [c["interpreter"]["version"] for c in doc["cells"]]
    assert versions == ["%d.%d.%d" % oldest.version, "%d.%d.%d" % newest.version]
    assert all(r["status"] == "ok" for arm in doc["arms"] for r in arm["rows"])
