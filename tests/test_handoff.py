"""Tests for the hand-off arms (wakelab.core.families.handoff) and their two drivers
(wakelab.core.drivers.subinterp, wakelab.core.drivers.pool).

Behaviour, never speed: wakes arrive, a planted delay shows up by its size and only where it
was planted, the executor's start method is recorded, and nothing is left behind (processes,
threads, subinterpreters, the signal mask).  The subinterpreter arms need CPython 3.14+: their
tests run on the provisioned 3.14 / 3.15 (``.ci/provision-pythons``) and skip with the reason
where none is found.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from typing import Optional

import pytest

from conftest import children, open_fds, process_state, registry_arms
from wakelab.core.families import handoff
from wakelab.core.model import BLOCKED, CROSS_PROCESS, CROSS_THREAD, LATENCY, MeasureParams

ARMS = {arm.name: arm for arm in registry_arms(handoff)}
SMALL = MeasureParams(n=30, warmup=3, settle_us=300, timeout_s=2.0)
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
PLANT_US = 3000


def _newest(minimum: tuple) -> Optional[str]:
    """The newest CPython of at least ``minimum`` wakelab finds here (GIL build), or None."""
    from wakelab.harness.interpreters import discover

    found = [i for i in discover() if i.implementation == "cpython" and tuple(i.version[:2]) >= minimum
             and not i.free_threaded]
    if not found:
        return None
    return max(found, key=lambda i: i.version).path


def _python_314() -> str:
    path = _newest((3, 14))
    if path is None:
        pytest.skip("no CPython 3.14 or newer found here (.ci/provision-pythons provides 3.14 and 3.15)")
    return path


# -- identity -------------------------------------------------------------------


def test_family_declares_its_arms() -> None:
    assert set(ARMS) == {"interp-queue", "interp-pipe", "thread-pool-submit", "interp-pool-submit", "process-pool-submit"}
    for arm in ARMS.values():
        assert arm.family == "handoff" and arm.kind == LATENCY and arm.waiter == BLOCKED
        assert arm.driver in ("subinterp", "pool")
    assert ARMS["process-pool-submit"].scope == CROSS_PROCESS
    assert ARMS["interp-pipe"].scope == CROSS_THREAD
    # The polling queue asks for a random settle that spans its poll twice; no other arm does.
    assert ARMS["interp-queue"].min_settle_jitter_us >= 2 * handoff.INTERP_QUEUE_POLL_US
    assert [a.name for a in ARMS.values() if a.min_settle_jitter_us] == ["interp-queue"]
    assert ARMS["interp-pipe"].native == "native-pipe" and ARMS["interp-pipe"].native_match == "matched"


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="this interpreter has concurrent.interpreters")
def test_subinterpreter_arms_say_why_they_cannot_run_here() -> None:
    for name in ("interp-queue", "interp-pipe", "interp-pool-submit"):
        reason = ARMS[name].unavailable_reason()
        assert reason is not None and "3.14" in reason, reason


def test_the_hand_off_lab_names_the_family() -> None:
    from wakelab.labs import get_lab

    lab = get_lab("handoff")
    assert set(ARMS) <= set(lab.arms)
    assert get_lab("executors") is lab


# -- the pool driver, on this interpreter --------------------------------------------


@pytest.mark.parametrize("name", ["thread-pool-submit", "process-pool-submit"])
def test_pool_arm_takes_its_wakes_and_leaves_nothing(name: str) -> None:
    arm = ARMS[name]
    if arm.unavailable_reason():
        pytest.skip(arm.unavailable_reason())
    state, fds, kids = process_state(), open_fds(), children()
    raw = arm.measure(SMALL)
    assert raw.lost == 0 and len(raw.samples_ns) == SMALL.n
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)
    assert process_state() == state and open_fds() == fds
    assert children() - kids == set()
    if name == "process-pool-submit":
        assert raw.info["start_method"] in ("forkserver", "spawn")
        assert raw.info["default_start_method"]


@pytest.mark.parametrize("name", ["thread-pool-submit", "process-pool-submit"])
def test_pool_planted_delay_shows_by_its_size_and_only_before_the_notify(name: str) -> None:
    arm = ARMS[name]
    if arm.unavailable_reason():
        pytest.skip(arm.unavailable_reason())
    plain = sorted(arm.measure(SMALL).samples_ns)
    planted = sorted(arm.measure(dataclasses.replace(SMALL, planted_delay_us=PLANT_US)).samples_ns)
    after = sorted(arm.measure(dataclasses.replace(SMALL, planted_after_us=PLANT_US)).samples_ns)
    plant_ns = PLANT_US * 1000
    # Before the notify: every wake grows by the plant (it cannot be shorter), the median by about it.
    assert planted[0] >= plant_ns
    grown = planted[len(planted) // 2] - plain[len(plain) // 2]
    assert 0.5 * plant_ns < grown < 3 * plant_ns, (grown, plain[len(plain) // 2])
    # After the notify: the worker is already on its way, so most wakes do not wait for it.
    assert after[len(after) // 2] < plant_ns / 2


# -- the subinterpreter driver, on CPython 3.14+ --------------------------------------------

_IN_314 = textwrap.dedent("""
    import dataclasses, json, sys, threading
    sys.path.insert(0, sys.argv[1])
    from concurrent import interpreters
    from wakelab.core.families import handoff
    from wakelab.core.model import MeasureParams
    params = MeasureParams(n=int(sys.argv[3]), warmup=2, settle_us=300, timeout_s=2.0,
                           planted_delay_us=int(sys.argv[4]))
    threads = threading.active_count()
    arm = [a for a in handoff.ARMS if a.name == sys.argv[2]][0]
    raw = arm.measure(params)
    print(json.dumps({"samples": sorted(raw.samples_ns), "lost": raw.lost, "info": {k: v for k, v in raw.info.items() if k != "wake_t0_ns"},
                      "interpreters": len(interpreters.list_all()), "threads_left": threading.active_count() - threads}))
""")


def _measure_in(python: str, name: str, n: int = 30, planted_us: int = 0) -> dict:
    out = subprocess.run([python, "-c", _IN_314, SRC, name, str(n), str(planted_us)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", ["interp-pipe", "interp-pool-submit"])
def test_subinterpreter_arm_plant_shows_and_nothing_is_left(name: str) -> None:
    python = _python_314()
    plain = _measure_in(python, name)
    planted = _measure_in(python, name, planted_us=PLANT_US)
    for result in (plain, planted):
        assert result["lost"] == 0 and len(result["samples"]) == 30
        assert result["interpreters"] == 1, "a subinterpreter outlived the arm"
        assert result["threads_left"] == 0, "a thread outlived the arm"
    assert planted["samples"][0] >= PLANT_US * 1000
    grown = planted["samples"][15] - plain["samples"][15]
    assert 0.5 * PLANT_US * 1000 < grown < 3 * PLANT_US * 1000


def test_a_subinterpreter_waiter_that_fails_is_reported_not_hung() -> None:
    python = _python_314()
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from concurrent import interpreters
        from wakelab.core.drivers import HarnessError, WakePath
        from wakelab.core.drivers import subinterp
        from wakelab.core.model import MeasureParams
        path = WakePath(reset=lambda: None, wait=lambda t: True, notify=lambda: None)
        try:
            subinterp.measure(MeasureParams(n=5, warmup=0, timeout_s=0.5), path, subinterp.requires_interpreters, ())
        except HarnessError as exc:
            print("HarnessError", exc)
        print("left", len(interpreters.list_all()))
    """)
    out = subprocess.run([python, "-c", code, SRC], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "HarnessError" in out.stdout and "left 1" in out.stdout


@pytest.mark.slow
def test_handoff_lab_on_314_shows_the_queue_polling_and_the_pipe_far_below(tmp_path) -> None:
    python = _python_314()
    folder = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "wakelab", "run", "--python", python, "--lab", "handoff", "-n", "60", "--repeat", "1",
         "--workers", "1", "-o", str(folder), "--no-history", "-q", "--json"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=SRC))
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((folder / "summary.json").read_text())
    arms = {a["name"]: a for a in summary["arms"]}
    for name in ARMS:
        assert arms[name]["status"] == "ok", (name, arms[name].get("status"), arms[name].get("reason"))
    queue, pipe = arms["interp-queue"]["latency"], arms["interp-pipe"]["latency"]
    # The queue polls every 10 ms: its median is milliseconds, its minimum far below its median.
    assert queue["p50_ns"] > 1_000_000 and queue["min_ns"] < queue["p50_ns"] / 5, queue
    assert pipe["p50_ns"] < queue["p50_ns"] / 10, (pipe, queue)
    info = arms["process-pool-submit"]["info"]
    workers = info.get("workers", [info])  # one record per worker process; flat for a single worker
    assert {w["start_method"] for w in workers} == {"forkserver"}
