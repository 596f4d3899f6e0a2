"""Shared fixtures: deterministic summaries built from fixed raw samples."""

from __future__ import annotations

import copy
import os
import signal
import tempfile
import threading
from typing import Dict, Iterator, Mapping, Optional, Sequence, Tuple

import pytest

from wakelab.core.model import LATENCY, MeasureParams, Raw, RawLatency, RawRate
from wakelab.evidence.model import ArmRecord, WorkerRecord
from wakelab.harness import runner
from wakelab.harness.summary import RawFigures, Spread, all_taken
from wakelab.labs import LAB_135
from wakelab.analysis.caveats import derive_caveats
from wakelab.analysis.quality import derive_warnings

# The interpreters wakelab built or unpacked (3.13t, 3.14, 3.15: .ci/run provisions them) stay
# where they are: pin the interpreter cache to the user's before XDG_CACHE_HOME moves below.
os.environ.setdefault("WAKELAB_CACHE", os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "wakelab"))
# The native-floor arms compile into $XDG_CACHE_HOME: keep the suite's builds out of the
# user's cache (subprocesses started by tests inherit this too).
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="wakelab-test-cache-")
# Runs recorded by tests go to a throwaway history, never the user's.
os.environ["WAKELAB_HISTORY"] = os.path.join(tempfile.mkdtemp(prefix="wakelab-test-history-"), "history.sqlite3")

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")

FIXED_INTERPRETER = {
    "implementation": "CPython",
    "version": "3.13.5",
    "executable": "/usr/bin/python3.13",
    "build": "main, Jun 11 2025 15:36:57",
    "compiler": "GCC 12.2.0",
    "debug_build": False,
    "switch_interval_s": 0.005,
    "free_threaded_build": False,
    "gil_enabled": True,
}
FIXED_MACHINE = {
    "os": "Linux",
    "kernel": "6.1.0-test",
    "architecture": "x86_64",
    "hostname": "testbox",
    "cpu_model": "Test CPU @ 2.00GHz",
    "cpu_count": 2,
    "cpus_allowed": [0, 1],
}
FIXED_SYSTEM = {
    "clocksource": "tsc",
    "cpuidle_driver": "none",
    "cpuidle_governor": "menu",
    "idle_states": [],
    "cpufreq_governor": None,
    "load_average": [0.1, 0.2, 0.3],
    "isolated_cpus": "",
    "nohz_full": None,
    "smt_active": "0",
    "hypervisor": True,
}
FIXED_TIMER = {
    "clock": "time.perf_counter_ns",
    "implementation": "clock_gettime(CLOCK_MONOTONIC)",
    "monotonic": True,
    "resolution_ns": 1.0,
    "pairs": 20000,
    "floor_min_ns": 40,
    "floor_p50_ns": 50,
    "harness": {"bare_pair_ns": 100.0, "per_sample_ns": 110.0, "overhead_ratio": 1.1},
}


# -- summaries as documents, made by the runner's own records (what the fixtures build bundles on) --


def summarize_raw(entry: Dict[str, object], raw: Raw) -> None:
    """Fill an arm's figures in its document ``entry`` from its raw record."""
    entry.update(RawFigures.of(raw).to_dict())


def worker_spread(workers: Sequence[object]) -> Optional[Dict[str, object]]:
    """How far apart stored workers' medians are (None with fewer than two workers)."""
    records = [WorkerRecord.from_dict(w) for w in workers]
    key = "p50_ns" if records and records[0].n is not None else "ops_per_s"
    spread = Spread.of_values(key, [getattr(w, key) for w in records])
    return None if spread is None else spread.to_dict()


def is_complete(summary: Mapping[str, object]) -> bool:
    """:meth:`RunSummary.is_complete` of a summary document, its arms read as the loader reads them."""
    def counted(arm: ArmRecord) -> Optional[Tuple[int, int]]:
        if arm.kind == LATENCY:
            return None if arm.latency is None else (arm.latency.n + arm.latency.lost, arm.latency.lost)
        return None if arm.rate is None else (arm.rate.rounds * arm.rate.n_per_round, 0)

    arms = summary["arms"]
    assert isinstance(arms, list)
    return all_taken((record.status, record.requested, counted(record)) for record in map(ArmRecord.from_dict, arms))


def build_lab135_summary() -> Dict[str, object]:
    """A Lab 135 summary from fixed samples: event 10..209 µs, signal 2.0..2.199 µs."""
    params = MeasureParams(n=200, install_n=20000, rounds=7)
    plan = runner.RunPlan(
        lab=LAB_135,
        arm_names=list(LAB_135.arms),
        params=params,
        folder="/nonexistent",
        command=["wakelab", "run"],
    )
    summary = runner.RunSummary.start(plan).to_dict()
    summary.update(
        {
            "started_utc": "2026-10-01T06:00:00Z",
            "finished_utc": "2026-10-01T06:00:02Z",
            "wall_s": 1.5,
            "interpreter": dict(FIXED_INTERPRETER),
            "machine": dict(FIXED_MACHINE),
            "timer": dict(FIXED_TIMER),
            "system": dict(FIXED_SYSTEM),
            "execution": {"mode": "workers", "workers": 3, "python": "/usr/bin/python3.13"},
            "tool": {"name": "wakelab", "version": "0.1.0"},
        }
    )
    raws = {
        "event": RawLatency(samples_ns=tuple(10_000 + 1000 * i for i in range(200)), lost=0, warmup_discarded=10),
        "sigusr1-self": RawLatency(samples_ns=tuple(2000 + i for i in range(200)), lost=0, warmup_discarded=10),
        "signal-install": RawRate(
            n_per_round=20000,
            round_ns=(20_000_000, 18_000_000, 19_000_000, 21_000_000, 22_000_000, 20_500_000, 19_500_000),
            baseline_round_ns=(400_000,) * 7,
            warmup_rounds=1,
        ),
    }
    for entry in summary["arms"]:  # type: ignore[union-attr]
        summarize_raw(entry, raws[entry["name"]])
        entry["status"] = runner.OK
        entry["wall_s"] = 0.5
        entry["samples_file"] = "samples/%s.json" % entry["name"]
    summary["complete"] = is_complete(summary)
    summary["caveats"] = derive_caveats(summary)
    summary["warnings"] = derive_warnings(summary)
    return summary


@pytest.fixture
def lab135_summary() -> Dict[str, object]:
    return copy.deepcopy(build_lab135_summary())


def open_fds() -> set:
    return set(os.listdir("/proc/self/fd"))


def process_state() -> Dict[str, object]:
    """What an arm must leave as it found it."""
    from wakelab.core.sigstate import snapshot

    # SIGALRM belongs to pytest-timeout while a test runs.  SIGRTMIN: the storm arms' real-time signal.
    watched = [signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGCHLD] + ([signal.SIGRTMIN] if hasattr(signal, "SIGRTMIN") else [])
    return {
        "signals": snapshot(watched),
        "threads": sorted(t.name for t in threading.enumerate()),
        "switch_interval": __import__("sys").getswitchinterval(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        # The main thread's scheduling policy and priority (wakelab run --policy / --notifier-policy).
        "scheduling": (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) if hasattr(os, "sched_getscheduler") else None,
    }


def children() -> set:
    """Live child processes of this process (from /proc)."""
    me = str(os.getpid())
    found = set()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.add(int(pid))
    return found


@pytest.fixture
def tiny_params() -> MeasureParams:
    return MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0, install_n=500, rounds=2)


@pytest.fixture
def clean_state() -> Iterator[None]:
    """Fails the test if it leaves signal state, threads or fds changed."""
    before, fds = process_state(), open_fds()
    yield
    assert process_state() == before
    assert open_fds() == fds


def registry_arms(family_module):  # type: ignore[no-untyped-def]
    """A family module's arms as the registry serves them (with their C floor from the "vs C" table)."""
    from wakelab.core.registry import get_arm

    return [get_arm(arm.name) for arm in family_module.ARMS]


# -- test tiers (docs/contributing.md) ------------------------------------------------------------
# The full suite (plain `pytest`, what CI runs) takes about 9 minutes on 2 cores; nearly all of it
# is real measuring.  `pytest -m "not slow and not measures"` is the fast tier, about a minute: the
# statistics, analysis, evidence model, renderers, goldens and layering, on fixed samples.  These
# files are marked `measures`: their tests measure real wakes (worker processes, labs, C floors,
# other interpreters), run wakelab as a subprocess, drive a browser or fuzz the readers.  A new
# test file that does so belongs here.
MEASURING_FILES = frozenset("""
    test_ab test_arm_hygiene test_arms_aio test_arms_asynclibs test_arms_fds test_arms_lab135
    test_arms_native test_arms_processes test_arms_signals test_arms_threads test_bad_arguments
    test_chaos test_ci_ab test_cli test_compare_grid test_compare_levels test_did_you_mean
    test_extras test_fault_gaps test_fleet test_frames test_free_threading test_fuzz_evidence
    test_grid test_grid_turns test_handoff test_hostile_evidence test_independent_probe
    test_interpreters test_listing_user_arms test_measuring_side test_observed test_open_loop
    test_output_folder test_parent_death test_placement_arms test_polling test_provision test_pypy
    test_realtime test_repeat test_report_html test_rigorous test_run_lab_script test_runner
    test_separate_runs test_settle test_soak test_storms test_timed_window test_today_pythons
    test_trace test_trace_reblocks test_user_arms test_worker_liveness test_workers
""".split())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "measures: measures real wakes, or runs processes or a browser (left out of the fast tier)")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    for item in items:
        if item.path.stem in MEASURING_FILES:
            item.add_marker(pytest.mark.measures)
