"""The settle's random part: one schedule per (seed, stream), slept by every closed-loop driver.

:func:`wakelab.core.drivers.settle_schedule_s` draws each wake's settle; these tests pin that the
schedule is reproducible from the seed on any interpreter and differs between streams, that the
runner gives every worker a stream of its own and records the seed, that an arm's own minimum
random part is applied, and that each driver -- thread, main, loop, task, child and the C floor --
sleeps exactly that schedule (a driver that slept the fixed part only fails them).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import pytest

from wakelab.core import drivers
from wakelab.core.drivers import settle_schedule_s, settle_schedule_us
from wakelab.core.model import LATENCY, Arm, DEFAULT_SETTLE_JITTER_US, MeasureParams, RawLatency, raw_to_dict
from wakelab.core.registry import get_arm
from wakelab.harness import runner
from wakelab.harness.conditions import Conditions
from wakelab.harness.workers import Reply, run_workers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

PARAMS = MeasureParams(n=40, warmup=2, settle_us=1000, settle_jitter_us=2000, seed=1)


def test_the_schedule_is_the_fixed_part_plus_a_whole_number_of_microseconds_up_to_the_random_part() -> None:
    schedule = settle_schedule_us(PARAMS)
    assert len(schedule) == PARAMS.total_wakes
    assert all(type(us) is int and 1000 <= us <= 3000 for us in schedule)
    assert len(set(schedule)) > PARAMS.total_wakes // 2  # drawn afresh for every wake
    assert settle_schedule_s(PARAMS) == [us / 1e6 for us in schedule]
    assert max(schedule) - min(schedule) > 1000  # it spans the random part, not a sliver of it


def test_the_schedule_is_reproducible_from_the_seed_and_pinned() -> None:
    # Pinned: a run recorded with seed 1 must sleep these settles in every later wakelab, on every interpreter.
    assert settle_schedule_us(dataclasses.replace(PARAMS, n=6, warmup=0)) == [2964, 2381, 1605, 2503, 1243, 1500]
    assert settle_schedule_us(PARAMS) == settle_schedule_us(dataclasses.replace(PARAMS))
    # A longer run's schedule starts with a shorter one's.
    assert settle_schedule_us(dataclasses.replace(PARAMS, n=400))[: PARAMS.total_wakes] == settle_schedule_us(PARAMS)
    # No seed (a measurement started outside the runner) is seed 0.
    assert settle_schedule_us(dataclasses.replace(PARAMS, seed=None)) == settle_schedule_us(dataclasses.replace(PARAMS, seed=0))


def test_seeds_and_streams_give_different_schedules() -> None:
    base = settle_schedule_us(PARAMS)
    others = [
        settle_schedule_us(dataclasses.replace(PARAMS, seed=2)),
        settle_schedule_us(dataclasses.replace(PARAMS, settle_stream=1)),
        settle_schedule_us(PARAMS, stream=1),
    ]
    for other in others:
        assert other != base
    assert others[1] != others[2]  # the worker's stream and a driver's second schedule are not the same stream


def test_no_random_part_is_the_fixed_settle_for_every_wake() -> None:
    fixed = dataclasses.replace(PARAMS, settle_jitter_us=0)
    assert settle_schedule_us(fixed) == [1000] * fixed.total_wakes
    assert fixed.settle_max_s == pytest.approx(0.001)
    assert PARAMS.settle_max_s == pytest.approx(0.003)


def test_the_default_random_part_and_old_parameters_load() -> None:
    assert MeasureParams().settle_jitter_us == DEFAULT_SETTLE_JITTER_US > 0
    # A worker request or bundle from before random settles lacks the keys: missing keys take the defaults.
    old = MeasureParams().to_dict()
    for key in ("settle_jitter_us", "seed", "settle_stream"):
        del old[key]
    assert MeasureParams.from_dict(old) == MeasureParams()
    with pytest.raises(ValueError, match="unknown measurement parameters: settle_noise_us"):
        MeasureParams.from_dict(dict(MeasureParams().to_dict(), settle_noise_us=1))


def _other_pythons() -> List[str]:
    """Interpreters besides this one: pyenv's, and PyPy on PATH."""
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin/python")))
    pypy = shutil.which("pypy3")
    return found + ([pypy] if pypy else []) or ["none found"]


@pytest.mark.parametrize("python", _other_pythons())
def test_the_schedule_is_the_same_on_other_interpreters(python: str) -> None:
    if not os.path.exists(python):
        pytest.skip("no other interpreter found (pyenv, pypy3)")
    found = python
    code = ("from wakelab.core.model import MeasureParams; from wakelab.core.drivers import settle_schedule_us; "
            "print(settle_schedule_us(MeasureParams(n=40, warmup=2, settle_us=1000, settle_jitter_us=2000, seed=1, "
            "settle_stream=3)))")
    done = subprocess.run([found, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=SRC))
    if done.returncode != 0:
        pytest.skip("%s cannot run wakelab's measuring side: %s" % (python, done.stderr.strip()[-200:]))
    assert json.loads(done.stdout) == settle_schedule_us(dataclasses.replace(PARAMS, settle_stream=3))


# -- the runner: a seed for every run, a stream for every worker, an arm's own minimum ------------------------


def test_a_run_without_a_seed_gets_one_and_a_given_seed_is_kept() -> None:
    plan = runner.RunPlan(lab=None, arm_names=[], params=MeasureParams(), folder="/nonexistent")  # type: ignore[arg-type]
    seeded = runner.seeded(plan)
    assert isinstance(seeded.params.seed, int) and seeded.params.seed >= 0
    assert runner.seeded(seeded) is seeded
    again = runner.seeded(dataclasses.replace(plan, params=MeasureParams(seed=42)))
    assert again.params.seed == 42


def _arm(minimum: int = 0) -> Arm:
    return Arm(name="x", family="threads", kind=LATENCY, mechanism="", waiter="blocked", scope="cross-thread", t0="", t1="",
               measure=lambda params: RawLatency(samples_ns=(), lost=0, warmup_discarded=0), min_settle_jitter_us=minimum)


def test_each_repetition_starts_at_the_stream_after_the_earlier_repetitions_workers() -> None:
    execution = runner.Execution(workers=3, repeat=5)  # 5 workers, one per repetition
    streams = [runner.arm_params(PARAMS, _arm(), r, execution).settle_stream for r in range(5)]
    assert streams == [0, 1, 2, 3, 4]
    execution = runner.Execution(workers=7, repeat=3)  # 3, 2, 2 workers
    assert [runner.workers_in_repetition(execution, r) for r in range(3)] == [3, 2, 2]
    assert [runner.arm_params(PARAMS, _arm(), r, execution).settle_stream for r in range(3)] == [0, 3, 5]


def test_an_arm_declares_a_larger_random_part_for_itself() -> None:
    assert runner.arm_params(PARAMS, _arm(20000)).settle_jitter_us == 20000
    assert runner.arm_params(PARAMS, _arm(500)).settle_jitter_us == 2000  # a minimum, never less than the run's
    assert _arm(20000).params_for(dataclasses.replace(PARAMS, settle_jitter_us=0)).settle_jitter_us == 20000
    # The arm's entry in summary.json says so where its figures are; an arm that asks for nothing more, nothing.
    assert runner.ArmEntry.of(_arm(20000), PARAMS).to_dict()["settle_jitter_us"] == 20000
    assert "settle_jitter_us" not in runner.ArmEntry.of(_arm(500), PARAMS).to_dict()


class _FakePool:
    """Answers worker requests with full records, keeping every request's parameters."""

    def __init__(self) -> None:
        self.params: List[Dict[str, Any]] = []

    def call(self, request: Dict[str, Any], deadline_s: float) -> Reply:
        params = dict(request["params"])
        self.params.append(params)
        raw = RawLatency(samples_ns=(1000,) * params["n"], lost=0, warmup_discarded=params["warmup"])
        return Reply(ok=True, raw=raw_to_dict(raw), pid=1)


def test_every_worker_draws_from_a_stream_of_its_own() -> None:
    pool = _FakePool()
    run_workers("event", dataclasses.replace(PARAMS, settle_stream=5), Conditions(), workers=3, pool=pool)  # type: ignore[arg-type]
    assert [p["settle_stream"] for p in pool.params] == [5, 6, 7]
    assert {p["seed"] for p in pool.params} == {1}
    assert {p["settle_jitter_us"] for p in pool.params} == {2000}


def test_the_cli_records_the_seed_and_repeats_a_run_with_it(tmp_path: Any) -> None:
    env = dict(os.environ, PYTHONPATH=SRC)
    common = ["run", "--arms", "event", "-n", "5", "--warmup", "1", "--settle-us", "100", "--settle-jitter-us", "300",
              "--repeat", "1", "--workers", "1", "--no-history", "-q"]
    out = str(tmp_path / "a")
    done = subprocess.run([sys.executable, "-m", "wakelab", *common, "-o", out], capture_output=True, text=True,
                          timeout=120, env=env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as fh:
        params = json.load(fh)["parameters"]
    assert params["settle_jitter_us"] == 300 and isinstance(params["seed"], int) and params["settle_stream"] == 0
    with open(os.path.join(out, "summary.txt"), encoding="utf-8") as fh:
        text = fh.read()
    assert "settle 100 µs plus a random 0-300 µs drawn for each wake (seed %d)" % params["seed"] in " ".join(text.split())
    assert "--settle-jitter-us 300 --seed %d" % params["seed"] in text
    out = str(tmp_path / "b")
    done = subprocess.run([sys.executable, "-m", "wakelab", *common, "--seed", "7", "-o", out], capture_output=True,
                          text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as fh:
        assert json.load(fh)["parameters"]["seed"] == 7


# -- every driver sleeps the schedule ---------------------------------------------------------------------------


@pytest.fixture
def slept(monkeypatch: Any) -> List[float]:
    """Every ``time.sleep`` of this process while the test runs, in order (from any thread)."""
    calls: List[float] = []
    lock = threading.Lock()
    real = time.sleep

    def sleep(seconds: float) -> None:
        with lock:
            calls.append(seconds)
        real(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    return calls


def _is_subsequence(wanted: List[float], seen: List[float]) -> bool:
    it = iter(seen)
    return all(any(value == s for s in it) for value in wanted)


# One blocked arm per Python driver (the floor is below); each driver must sleep settle_schedule_s.
DRIVER_ARMS = ["event", "pause-handler", "call-soon-threadsafe", "trio-token-event", "pipe-process"]


@pytest.mark.parametrize("name", DRIVER_ARMS)
def test_each_driver_sleeps_the_schedule(name: str, slept: List[float]) -> None:
    arm = get_arm(name)
    reason = arm.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    params = MeasureParams(n=12, warmup=1, settle_us=200, settle_jitter_us=5000, seed=11, settle_stream=2, timeout_s=2.0)
    raw = arm.measure(params)
    assert isinstance(raw, RawLatency) and len(raw.samples_ns) + raw.lost == params.n
    schedule = settle_schedule_s(params)
    assert len(set(schedule)) > 6
    assert _is_subsequence(schedule, slept), "%s's driver did not sleep the schedule %r (slept %r)" % (
        arm.driver, schedule[:4], slept[:12])


def test_the_c_floor_sleeps_the_schedule_it_is_given() -> None:
    from wakelab.core.drivers import floor

    reason = floor.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    # No fixed part: the whole settle is the random part, so a binary that ignored it would take ~nothing.
    params = MeasureParams(n=20, warmup=0, settle_us=0, settle_jitter_us=20000, seed=3)
    schedule = settle_schedule_us(params)
    started = time.monotonic()
    raw = floor.measure_latency("native-condvar", params)
    elapsed = time.monotonic() - started
    assert len(raw.samples_ns) + raw.lost == params.n
    assert elapsed >= sum(schedule) / 1e6  # a lower bound: sleeps never return early
    # Given too few settles, the binary says so rather than guess.
    with pytest.raises(floor.NativeFloorError, match="settles=1"):
        floor.run_floor("native-condvar", params, {"settles": 1}, "5 5\n")


def test_a_driver_with_the_random_part_removed_would_be_caught(slept: List[float], monkeypatch: Any) -> None:
    """The check above has teeth: a thread driver that sleeps the fixed part only fails it."""
    from wakelab.core.drivers import thread

    monkeypatch.setattr(thread, "settle_schedule_s", lambda params: [params.settle_s] * params.total_wakes)
    params = MeasureParams(n=8, warmup=0, settle_us=200, settle_jitter_us=5000, seed=11)
    get_arm("event").measure(params)
    assert not _is_subsequence(settle_schedule_s(params), slept)
    assert drivers.settle_schedule_s is settle_schedule_s  # the module's own is untouched
