"""A wait that polls every 2 ms, measured honestly: the random settle reveals it and the report names it.

The arm is ``examples/arms_polling.py``'s ``poll-2ms``: a waiter that looks at a flag and sleeps
2 ms between looks.  With the settle's random part (the default, and 4 ms) its wakes spread
evenly up to the period and the run flags it as polling, with the period; with the random part
at 0 every settle lands at the same phase of the poll and the figures come out narrow -- which
is why the default is not 0.  ``event`` beside it, a wait that blocks, is not flagged.  Real
timing: the checks are about shape (spread, order of the figures), never a speed threshold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
POLLING_ARMS = os.path.join(ROOT, "examples", "arms_polling.py")
PERIOD_NS = 2_000_000
RUN = ["-n", "200", "--warmup", "5", "--repeat", "1", "--workers", "2"]


def _run(tmp_path: Any, name: str, *args: str) -> Tuple[Dict[str, Any], str]:
    folder = os.path.join(str(tmp_path), name)
    done = subprocess.run(
        [sys.executable, "-m", "wakelab", "run", "--arm-file", POLLING_ARMS, *RUN, *args, "-o", folder, "--no-history", "-q"],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", "")),
    )
    assert done.returncode == 0, done.stderr
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    with open(os.path.join(folder, "summary.txt"), encoding="utf-8") as fh:
        return summary, fh.read()


def _samples(summary: Dict[str, Any], tmp_path: Any, name: str, arm: str) -> List[int]:
    entry = next(a for a in summary["arms"] if a["name"] == arm)
    with open(os.path.join(str(tmp_path), name, entry["samples_file"]), encoding="utf-8") as fh:
        return sorted(json.load(fh)["samples_ns"])


def _q(values: List[int], q: float) -> float:
    return float(values[int(round(q * (len(values) - 1)))])


def _polling(summary: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {w["arm"]: w["figures"] for w in summary["warnings"] if w["kind"] == "polling"}


@pytest.fixture(scope="module")
def jittered(tmp_path_factory: Any) -> Tuple[Dict[str, Any], str, Any]:
    """The default run: the settle's random part at its default (2 ms), beside event."""
    tmp = tmp_path_factory.mktemp("polling")
    summary, text = _run(tmp, "default", "--arms", "poll-2ms,event")
    return summary, text, tmp


def test_with_the_random_settle_a_2ms_poll_is_named_with_its_period(jittered: Tuple[Dict[str, Any], str, Any]) -> None:
    summary, text, tmp = jittered
    assert summary["parameters"]["settle_jitter_us"] == 2000
    polling = _polling(summary)
    assert "poll-2ms" in polling, summary["warnings"]
    figures = polling["poll-2ms"]
    assert 0.75 * PERIOD_NS <= figures["period_ns"] <= 1.25 * PERIOD_NS
    # The wakes spread over the period: half of it at the median, some near nothing.
    latency = next(a for a in summary["arms"] if a["name"] == "poll-2ms")["latency"]
    assert latency["p50_ns"] > 300_000
    assert latency["min_ns"] < latency["p50_ns"] / 3
    assert "poll-2ms: this wait polls" in " ".join(text.split())
    guidance = [item for item in summary["guidance"]["items"] if item["topic"] == "polling"]
    assert len(guidance) == 1 and "blocks in the kernel" in guidance[0]["text"]
    assert guidance[0]["cites"][0]["arm"] == "poll-2ms"


def test_a_blocking_wait_beside_it_is_not_flagged(jittered: Tuple[Dict[str, Any], str, Any]) -> None:
    summary, _, _ = jittered
    assert "event" not in _polling(summary)
    entry = next(a for a in summary["arms"] if a["name"] == "event")
    assert entry["quality"]["polling"] is None


def test_a_random_part_of_two_periods_measures_the_period_itself(tmp_path: Any) -> None:
    summary, text = _run(tmp_path, "wide", "--arms", "poll-2ms", "--settle-jitter-us", "4000")
    figures = _polling(summary)["poll-2ms"]
    assert 0.75 * PERIOD_NS <= figures["period_ns"] <= 1.25 * PERIOD_NS
    assert figures["spans_jitter"] is False  # the random part reached beyond the period: the period is measured
    assert "poll-2ms: this wait polls about every" in " ".join(text.split())


def test_a_fixed_settle_hides_the_poll(tmp_path: Any, jittered: Tuple[Dict[str, Any], str, Any]) -> None:
    """Why the default random part is not 0: every settle lands at the same phase of the poll."""
    summary, _ = _run(tmp_path, "fixed", "--arms", "poll-2ms", "--settle-jitter-us", "0")
    assert "poll-2ms" not in _polling(summary)
    fixed = _samples(summary, tmp_path, "fixed", "poll-2ms")
    spread_fixed = _q(fixed, 0.9) - _q(fixed, 0.1)
    assert spread_fixed < 0.25 * _q(fixed, 0.5)  # narrow: a constant that is not the wait's latency
    summary_j, _, tmp = jittered
    spread = _q(_samples(summary_j, tmp, "default", "poll-2ms"), 0.9) - _q(_samples(summary_j, tmp, "default", "poll-2ms"), 0.1)
    assert spread_fixed < spread / 4  # the random settle shows the spread the fixed one hides
