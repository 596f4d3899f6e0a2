"""The async-library arms (wakelab.core.families.asynclibs) and their task driver (wakelab.core.drivers.task).

The libraries (uvloop, trio, anyio, gevent) are in the ``test`` extra, so these
tests run the arms for real; an arm whose library is missing here is skipped
with its own reason.  Real-timing tests check behaviour, never speed: n wakes
and nothing lost, a planted delay that shows by its size (and one planted
after the notify that does not), lost wakes counted, nothing left behind.
The driver's own behaviour (lost, stale, failing and half-built paths) is
tested with a stdlib stand-in for a library, so it runs everywhere.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Coroutine, Dict, FrozenSet, Generator, Iterator, List, Optional

import pytest

from wakelab.core import sigstate
from wakelab.core.drivers import HarnessError
from wakelab.core.drivers import loop as loop_driver
from wakelab.core.drivers import task as task_driver
from wakelab.core.drivers.task import TaskPath, WaiterLoop, run_unsuspended
from wakelab.core.families import aio, asynclibs
from wakelab.core.model import BLOCKED, CROSS_THREAD, LATENCY, MeasureParams, RawLatency, now_ns

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
ARMS_BY_NAME = {arm.name: arm for arm in asynclibs.ARMS}
NAMES = sorted(ARMS_BY_NAME)
PARAMS = MeasureParams(n=30, warmup=3, settle_us=300, timeout_s=1.0)
SHORT_TIMEOUT = MeasureParams(n=3, warmup=1, settle_us=200, timeout_s=0.05)
D_US = 2000  # the planted delay of the paired runs
LIBRARIES = ("uvloop", "trio", "anyio", "gevent", "greenlet", "sniffio", "outcome")


_REASONS: Dict[str, Optional[str]] = {}


@pytest.fixture(scope="module", autouse=True)
def reasons() -> Dict[str, Optional[str]]:
    """Every arm's ``requires``, asked once before any test, as the harness asks before measuring.

    (A library's first use may open what it keeps for the process's life -- libuv's signal-lock
    pipe -- and ``requires`` is where that happens, not the arm.)
    """
    _REASONS.update((name, ARMS_BY_NAME[name].unavailable_reason()) for name in NAMES)
    return _REASONS


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """No thread, fd, signal handler, signal mask or wakeup fd outlives a test."""
    threads, fds = set(threading.enumerate()), _open_fds()
    signums = sorted(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP, signal.SIGALRM})  # SIGALRM: pytest-timeout's
    signals = sigstate.snapshot(signums)
    yield
    assert [t.name for t in threading.enumerate() if t not in threads] == []
    assert _open_fds() == fds
    assert sigstate.snapshot(signums) == signals


def _open_fds() -> FrozenSet[str]:
    return frozenset(os.listdir("/proc/self/fd"))


def _available(name: str) -> None:
    reason = _REASONS[name]
    if reason is not None:
        pytest.skip(reason)


def _measure(name: str, params: MeasureParams) -> RawLatency:
    raw = ARMS_BY_NAME[name].measure(params)
    assert isinstance(raw, RawLatency)
    return raw


def _nothing() -> None:
    return None


def _median_us(raw: RawLatency) -> float:
    return statistics.median(raw.samples_ns) / 1000.0


# -- the table --------------------------------------------------------------------


def test_family_has_the_five_arms_with_their_counterparts() -> None:
    from wakelab.core.registry import all_arms

    assert NAMES == ["anyio-asyncio-run-sync", "anyio-trio-run-sync", "gevent-async-watcher",
                     "trio-token-event", "uvloop-call-soon-threadsafe"]
    assert set(asynclibs.COUNTERPARTS) == set(NAMES)
    assert set(asynclibs.RUNNERS) == set(NAMES) - {"uvloop-call-soon-threadsafe"}
    stdlib = {arm.name: arm for arm in all_arms()}
    doc = asynclibs.__doc__ or ""
    for arm in asynclibs.ARMS:
        assert arm.family == asynclibs.FAMILY.id == "asynclibs"
        assert arm.kind == LATENCY and arm.waiter == BLOCKED and arm.scope == CROSS_THREAD
        assert arm.driver == ("loop" if arm.name.startswith("uvloop") else "task")
        assert not arm.open_loop  # neither driver has an open loop
        assert arm.t0.startswith("main thread: perf_counter_ns() immediately before ")
        assert "perf_counter_ns() as the first statement" in arm.t1
        assert "\n" not in arm.t0 and "\n" not in arm.t1
        counterpart = stdlib[asynclibs.COUNTERPARTS[arm.name]]
        assert counterpart.family == "asyncio"
        assert (counterpart.waiter, counterpart.scope, counterpart.kind) == (arm.waiter, arm.scope, arm.kind)
        assert "counterpart: %s" % counterpart.name in arm.mechanism
        assert arm.name in doc and "``%s``" % counterpart.name in doc
        # Never matched to C: at most the nearest floor.
        assert arm.native_match in (None, "nearest")


def test_the_family_module_imports_no_library() -> None:
    """Importing the family (a worker template preloads it) and listing its arms loads none of the libraries.

    Without ``-S``, so that the libraries are there to be imported (by mistake).
    """
    probe = ("import sys; sys.path.insert(0, %r)\n"
             "import wakelab.core.families.asynclibs as m\n"
             "[a.describe() for a in m.ARMS]\n"
             "print(','.join(sorted(n for n in sys.modules if n.split('.')[0] in %r)))") % (SRC, LIBRARIES)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


# -- real runs ----------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_arm_measures_n_wakes_with_none_lost(name: str) -> None:
    _available(name)
    raw = _measure(name, PARAMS)
    assert raw.lost == 0
    assert raw.warmup_discarded == PARAMS.warmup
    assert len(raw.samples_ns) == PARAMS.n
    assert all(0 < s < 1_000_000_000 for s in raw.samples_ns)
    assert raw.info["mode"] == "closed" and raw.info["stale_wakes"] == 0
    library = name.split("-")[0]
    assert str(raw.info["library"]).startswith(library + " ")
    assert raw.info["site_started"] is False  # pytest started site itself


@pytest.mark.parametrize("name", NAMES)
def test_a_planted_delay_moves_the_median_by_its_size_and_one_after_the_notify_does_not(name: str) -> None:
    _available(name)
    base = _measure(name, PARAMS)
    planted = _measure(name, dataclasses.replace(PARAMS, planted_delay_us=D_US))
    after = _measure(name, dataclasses.replace(PARAMS, planted_after_us=D_US))
    for raw in (base, planted, after):
        assert raw.lost == 0 and len(raw.samples_ns) == PARAMS.n
    shift = _median_us(planted) - _median_us(base)
    assert 1500 <= shift <= 4000, "%s: a %d µs delay moved the median %.0f µs" % (name, D_US, shift)
    assert _median_us(after) - _median_us(base) < D_US / 2, "%s: a delay after the notify showed" % name


@pytest.mark.parametrize("name", NAMES)
def test_a_long_settle_stays_outside_the_window(name: str) -> None:
    _available(name)
    params = MeasureParams(n=5, warmup=1, settle_us=40_000, timeout_s=1.0)
    raw = _measure(name, params)
    assert raw.lost == 0
    assert _median_us(raw) < params.settle_us / 2


def _never_notifying_runner(runner: Callable[[WaiterLoop], object]) -> Callable[[WaiterLoop], object]:
    """The same library and loop, with a path whose notify does nothing."""

    def changed(waiter_loop: WaiterLoop) -> object:
        async def with_silent_notify(path: TaskPath) -> None:
            await waiter_loop(dataclasses.replace(path, notify=_nothing, bind=None))

        return runner(with_silent_notify)

    return changed


@pytest.mark.parametrize("name", NAMES)
def test_a_notify_that_never_comes_is_a_lost_wake_not_a_hang(name: str) -> None:
    _available(name)
    started = time.monotonic()
    if name == "uvloop-call-soon-threadsafe":
        def silent(loop: Any) -> loop_driver.LoopPath:
            return dataclasses.replace(aio.call_soon_threadsafe_path(loop), notify=_nothing, bind=None)

        raw = loop_driver.measure(SHORT_TIMEOUT, silent, loop_factory=asynclibs.new_uvloop)
    else:
        raw = task_driver.measure(SHORT_TIMEOUT, _never_notifying_runner(asynclibs.RUNNERS[name]()))
    assert raw.samples_ns == ()
    assert raw.lost == SHORT_TIMEOUT.n
    assert time.monotonic() - started < 10


def test_uvloop_arm_runs_a_uvloop_loop_and_its_counterpart_the_stdlib_one() -> None:
    _available("uvloop-call-soon-threadsafe")
    mine = _measure("uvloop-call-soon-threadsafe", SHORT_TIMEOUT)
    stdlib = aio.measure_call_soon_threadsafe(SHORT_TIMEOUT)
    assert mine.info["loop"] == "uvloop.Loop" and mine.info["asyncio_debug"] is False
    assert stdlib.info["loop"] == "asyncio.SelectorEventLoop"


def test_anyio_asyncio_backend_runs_the_stdlib_selector_loop() -> None:
    _available("anyio-asyncio-run-sync")
    raw = _measure("anyio-asyncio-run-sync", SHORT_TIMEOUT)
    assert raw.info["backend"] == "asyncio" and raw.info["loop"] == "asyncio.SelectorEventLoop"
    if _REASONS["anyio-trio-run-sync"] is None:
        raw = _measure("anyio-trio-run-sync", SHORT_TIMEOUT)
        assert raw.info["backend"] == "trio" and raw.info["loop"] == "trio.run"


# -- gevent and global state ----------------------------------------------------------


def test_gevent_arm_patches_nothing_and_leaves_no_hub() -> None:
    _available("gevent-async-watcher")
    import socket
    import gevent
    import gevent.monkey

    originals = (threading.Thread, threading.Event, time.sleep, socket.socket)
    raw = _measure("gevent-async-watcher", PARAMS)
    assert raw.lost == 0 and raw.info["monkey_patched"] is False
    assert not gevent.monkey.is_anything_patched()
    assert (threading.Thread, threading.Event, time.sleep, socket.socket) == originals
    from gevent._hub_local import get_hub_if_exists

    assert get_hub_if_exists() is None


def test_gevent_arm_refuses_a_monkey_patched_interpreter() -> None:
    _available("gevent-async-watcher")
    probe = ("import sys; sys.path.insert(0, %r)\n"
             "from gevent import monkey; monkey.patch_all()\n"
             "from wakelab.core.families import asynclibs\n"
             "print(asynclibs.requires_gevent())") % SRC
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "monkey-patching is active" in result.stdout


# -- with and without the library in the measuring interpreter --------------------------------


def _run_in_workers(names: List[str], folder: str, python: Optional[str]) -> Dict[str, Any]:
    """A real run of ``names`` in one worker process of ``python`` each (workers start with python -S)."""
    from wakelab.harness.runner import Execution, RunPlan, run_plan
    from wakelab.labs import LAB_CATALOGUE

    plan = RunPlan(lab=LAB_CATALOGUE, arm_names=names, params=MeasureParams(n=8, warmup=1, settle_us=200),
                   folder=folder, execution=Execution(workers=1, python=python))
    return run_plan(plan)


def test_worker_processes_see_the_interpreters_libraries(tmp_path: Any) -> None:
    """Workers run ``python -S``; the arms still find the libraries installed in the interpreter."""
    available = [name for name in NAMES if _REASONS[name] is None]
    if not available:
        pytest.skip("none of uvloop, trio, anyio, gevent is installed here")
    summary = _run_in_workers(available, str(tmp_path), None)
    entries = {entry["name"]: entry for entry in summary["arms"]}
    for name in available:
        assert entries[name]["status"] == "ok", (name, entries[name].get("reason"))
    with open(os.path.join(str(tmp_path), "samples", available[0] + ".json"), encoding="utf-8") as fh:
        samples = json.load(fh)
    assert len(samples["samples_ns"]) == 8


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: Any) -> str:
    """An interpreter without any of the libraries: a fresh venv of this Python, without pip."""
    folder = tmp_path_factory.mktemp("bare-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120,
                   capture_output=True)
    python = os.path.join(str(folder), "bin", "python")
    assert subprocess.run([python, "-c", "import trio"], capture_output=True, timeout=60).returncode != 0
    return python


def test_a_run_without_the_libraries_marks_each_arm_skipped_with_its_reason(tmp_path: Any, bare_python: str) -> None:
    summary = _run_in_workers(NAMES, str(tmp_path), bare_python)
    entries = {entry["name"]: entry for entry in summary["arms"]}
    first_missing = {"uvloop-call-soon-threadsafe": "uvloop", "trio-token-event": "trio", "anyio-asyncio-run-sync": "anyio",
                     "anyio-trio-run-sync": "anyio", "gevent-async-watcher": "gevent"}
    for name in NAMES:
        assert entries[name]["status"] == "skipped", name
        assert entries[name]["reason"].startswith("%s is not installed in this interpreter (CPython " % first_missing[name])


def test_without_site_packages_the_reason_names_the_library() -> None:
    """``python -S`` with no site directory to start (a bare prefix): every arm says which library is missing."""
    probe = ("import sys, site; sys.path.insert(0, %r)\n"
             "site.main = lambda: None  # a -S process whose site start finds nothing\n"
             "from wakelab.core.families import asynclibs\n"
             "for arm in asynclibs.ARMS: print(arm.name, '|', arm.unavailable_reason())\n"
             "print('loaded:', ','.join(sorted(n for n in sys.modules if n.split('.')[0] in %r)))") % (SRC, LIBRARIES)
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    reasons = dict(line.split(" | ") for line in lines[:-1])
    assert reasons["uvloop-call-soon-threadsafe"].startswith("uvloop is not installed in this interpreter")
    assert reasons["trio-token-event"].startswith("trio is not installed in this interpreter")
    assert reasons["gevent-async-watcher"].startswith("gevent is not installed in this interpreter")
    assert lines[-1] == "loaded: "  # and nothing of any library was imported


# -- the task driver, with a stdlib stand-in for a library --------------------------------


def _blocking_runner(*, stale: bool = False, fail_in_wait: bool = False, call_loop: bool = True,
                     silent: bool = False) -> Callable[[WaiterLoop], None]:
    """A "library" whose wait blocks (as gevent's does), built on a threading.Event.

    ``stale``: prepare never clears the Event, so every wake after the first finds it set already;
    ``fail_in_wait``: the third wait raises; ``call_loop`` False: the runner never enters the
    waiter's loop; ``silent``: the notify does nothing.
    """

    def runner(waiter_loop: WaiterLoop) -> None:
        event = threading.Event()
        waits = [0]

        def prepare() -> None:
            if not stale:
                event.clear()

        async def wait(timeout_s: float) -> Optional[int]:
            waits[0] += 1
            if fail_in_wait and waits[0] == 3:
                raise RuntimeError("the library broke")
            if event.wait(timeout_s):
                t1 = now_ns()
                return t1
            return None

        path = TaskPath(prepare=prepare, wait=wait, notify=_nothing if silent else event.set)
        if call_loop:
            run_unsuspended(waiter_loop(path))

    return runner


def test_task_driver_measures_every_wake() -> None:
    raw = task_driver.measure(PARAMS, _blocking_runner())
    assert raw.lost == 0 and len(raw.samples_ns) == PARAMS.n
    assert all(s > 0 for s in raw.samples_ns)
    assert raw.info["stale_wakes"] == 0 and raw.info["waiter_tid"] != raw.info["notifier_tid"]


def test_task_driver_counts_a_silent_notify_lost() -> None:
    raw = task_driver.measure(SHORT_TIMEOUT, _blocking_runner(silent=True))
    assert raw.samples_ns == () and raw.lost == SHORT_TIMEOUT.n


def test_task_driver_counts_a_wake_that_came_before_its_notify_stale_never_negative() -> None:
    raw = task_driver.measure(MeasureParams(n=5, warmup=1, settle_us=200, timeout_s=0.5), _blocking_runner(stale=True))
    assert all(s > 0 for s in raw.samples_ns)
    # The first wake is real; every later wait found the Event still set, before its t0.
    assert raw.info["stale_wakes"] == 5 and raw.lost == 5 and raw.samples_ns == ()


def test_task_driver_reports_a_failing_wait_and_stops() -> None:
    with pytest.raises(HarnessError, match="the library broke"):
        task_driver.measure(PARAMS, _blocking_runner(fail_in_wait=True))


def test_task_driver_reports_a_runner_that_never_enters_the_loop() -> None:
    with pytest.raises(HarnessError, match="without running the waiter's loop"):
        task_driver.measure(SHORT_TIMEOUT, _blocking_runner(call_loop=False))


def test_task_driver_reports_a_runner_that_fails_to_start() -> None:
    def broken(waiter_loop: WaiterLoop) -> None:
        raise ImportError("no such library")

    with pytest.raises(HarnessError, match="no such library"):
        task_driver.measure(SHORT_TIMEOUT, broken)


def test_task_driver_has_no_open_loop() -> None:
    assert task_driver.OPEN_LOOP is False
    with pytest.raises(ValueError, match="no 'open' mode"):
        task_driver.measure(dataclasses.replace(SHORT_TIMEOUT, mode="open"), _blocking_runner())


def test_a_task_path_takes_one_notify() -> None:
    async def wait(timeout_s: float) -> Optional[int]:
        return None

    with pytest.raises(ValueError):
        TaskPath(prepare=_nothing, wait=wait)
    with pytest.raises(ValueError):
        TaskPath(prepare=_nothing, wait=wait, notify=_nothing, bind=lambda: _nothing)


def test_run_unsuspended_refuses_a_coroutine_that_suspends() -> None:
    class Suspend:
        def __await__(self) -> Generator[None, None, None]:
            yield None

    async def suspends() -> None:
        await Suspend()

    async def returns() -> int:
        return 7

    coroutine: Coroutine[Any, Any, None] = suspends()
    with pytest.raises(HarnessError, match="suspended"):
        run_unsuspended(coroutine)
    assert run_unsuspended(returns()) == 7
