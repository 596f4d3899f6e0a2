"""Tests for the native floor (wakelab.core.drivers.floor) and its arms (wakelab.core.families.native).

Real-timing tests check sanity only.  Every test builds into a temporary
cache folder (XDG_CACHE_HOME), shared by the session so the C source is
compiled once; the no-compiler tests use fresh folders of their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from wakelab.core.drivers import floor
from wakelab.core.registry import all_arms, get_arm
from wakelab.core.families import native as native_arms
from wakelab.core.model import (
    BLOCKED,
    CROSS_PROCESS,
    LATENCY,
    RATE,
    SELF,
    MeasureParams,
    RawLatency,
    RawRate,
)

LATENCY_ARMS = [
    "native-condvar",
    "native-pipe",
    "native-eventfd",
    "native-socketpair",
    "native-selector-pipe",
    "native-self-signal",
    "native-sigwait",
    "native-pause-handler",
    "native-wakeup-fd-select",
    "native-pipe-process",
    "native-eventfd-fork",
    "native-kill-sigwait-child",
]
PROCESS_ARMS = ["native-pipe-process", "native-eventfd-fork", "native-kill-sigwait-child"]
ALL_NATIVE = LATENCY_ARMS + ["native-sigaction-install"]
# Arms that run an experiment above under a condition of their own: native-condvar, its waiter SCHED_FIFO 80.
VARIANTS = {"native-condvar-fifo": "native-condvar"}
SMALL = MeasureParams(n=20, warmup=2, settle_us=200, timeout_s=1.0)
ONE_SECOND_NS = 1_000_000_000
SRC = str(Path(__file__).resolve().parent.parent / "src")


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(autouse=True)
def private_cache(shared_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never build into the user's real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(shared_cache))
    return shared_cache


@pytest.fixture
def have_floor() -> floor.FloorBinary:
    reason = floor.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return floor.floor_binary()


def _open_fds() -> List[str]:
    return sorted(os.listdir("/proc/self/fd"))


# -- the registry ---------------------------------------------------------


def test_registry_lists_every_native_arm() -> None:
    names = [arm.name for arm in all_arms() if arm.family == "native"]
    assert [name for name in names if name not in VARIANTS] == ALL_NATIVE
    assert names[names.index("native-condvar") + 1] == "native-condvar-fifo"
    for name in names:
        arm = get_arm(name)
        assert arm.native is None
        assert arm.kind == (RATE if name == "native-sigaction-install" else LATENCY)
        assert arm.t0 and arm.t1 and arm.mechanism
        assert "\n" not in arm.t0 and "\n" not in arm.t1
        assert not arm.needs_main_thread
        # Latency arms run on the floor driver (and so are enrolled in test_timed_window.py).
        assert arm.driver == ("floor" if arm.kind == LATENCY else "")
        assert not arm.open_loop


def test_every_experiment_of_the_binary_is_an_arm(have_floor: floor.FloorBinary) -> None:
    proc = subprocess.run([have_floor.path, "nonesuch"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    listed = proc.stderr.split("experiments:")[1].splitlines()[0].split()
    assert sorted(listed) == sorted(ALL_NATIVE + ["selftest"])


def test_the_floor_driver_has_no_open_loop() -> None:
    assert floor.OPEN_LOOP is False
    with pytest.raises(floor.NativeFloorError, match="closed loop only"):
        floor.measure_latency("native-pipe", MeasureParams(mode="open"))


def test_importing_does_not_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "fresh"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=SRC)
    subprocess.run(
        [sys.executable, "-c", "import wakelab.core.families.native, wakelab.core.registry; wakelab.core.registry.all_arms()"],
        env=env,
        check=True,
        timeout=60,
    )
    assert not cache.exists()


# -- real runs ------------------------------------------------------------


@pytest.mark.parametrize("name", LATENCY_ARMS)
def test_latency_arm_is_sane(name: str, have_floor: floor.FloorBinary) -> None:
    arm = get_arm(name)
    assert arm.requires() is None
    before = _open_fds()
    raw = arm.measure(SMALL)
    assert _open_fds() == before
    assert isinstance(raw, RawLatency)
    assert raw.lost == 0
    assert raw.warmup_discarded == SMALL.warmup
    assert len(raw.samples_ns) == SMALL.n
    assert all(0 < s < ONE_SECOND_NS for s in raw.samples_ns)
    assert raw.info["binary"] == have_floor.path
    assert raw.info["clock"] == "CLOCK_MONOTONIC"
    assert raw.info["stale_wakes"] == 0 and raw.info["mode"] == "closed"
    if arm.waiter == BLOCKED:
        assert raw.info["settle_us"] == SMALL.settle_us
    assert isinstance(raw.info["notifier_cpu_seen"], int)
    if arm.scope == SELF:
        assert "waiter_cpu_seen" not in raw.info
    else:
        assert isinstance(raw.info["waiter_cpu_seen"], int)


def test_rate_arm_gives_positive_ops(have_floor: floor.FloorBinary) -> None:
    params = MeasureParams(install_n=2000, rounds=3, warmup_rounds=1)
    raw = get_arm("native-sigaction-install").measure(params)
    assert isinstance(raw, RawRate)
    assert raw.n_per_round == 2000
    assert raw.warmup_rounds == 1
    assert len(raw.round_ns) == 3 and len(raw.baseline_round_ns) == 3
    assert all(0 < r < 10 * ONE_SECOND_NS for r in raw.round_ns)
    assert all(b >= 0 for b in raw.baseline_round_ns)
    assert all(raw.n_per_round / (r / 1e9) > 0 for r in raw.round_ns)


@pytest.mark.parametrize("name", LATENCY_ARMS)
def test_planted_delay_is_visible(name: str, have_floor: floor.FloorBinary) -> None:
    params = MeasureParams(n=10, warmup=1, settle_us=200, planted_delay_us=2000)
    raw = get_arm(name).measure(params)
    assert isinstance(raw, RawLatency)
    assert raw.lost == 0
    assert len(raw.samples_ns) == 10
    assert all(s >= 2_000_000 for s in raw.samples_ns)


@pytest.mark.parametrize("name", LATENCY_ARMS)
def test_planted_after_is_passed_and_bounded(name: str, have_floor: floor.FloorBinary) -> None:
    # The paired proof (it must not show) is in test_timed_window.py; here: it runs, loses nothing.
    params = MeasureParams(n=5, warmup=1, settle_us=200, planted_after_us=2000)
    assert "planted_after_us=2000" in floor._floor_args(params, None)
    raw = get_arm(name).measure(params)
    assert isinstance(raw, RawLatency)
    assert raw.lost == 0 and len(raw.samples_ns) == 5


# Runs the floor binary from a child subreaper (PR_SET_CHILD_SUBREAPER), so that any process
# the binary leaves behind -- alive or a zombie -- is reparented to it and shows up.  A
# separate interpreter, so the test process's own state is untouched.
_SUBREAPER = """
import ctypes, os, signal, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    print("no-subreaper"); sys.exit(0)
kill_after_s = float(sys.argv[1])
proc = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if kill_after_s > 0:
    time.sleep(kill_after_s)
    proc.kill()
proc.wait()
left = []
deadline = time.monotonic() + 5.0
while time.monotonic() < deadline:
    try:
        pid, status = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        time.sleep(0.01)
    else:
        left.append((pid, status))
else:
    print("still-alive"); sys.exit(0)
print("orphans=%d rc=%d" % (len(left), proc.returncode))
"""


def _run_from_subreaper(binary: str, argv: List[str], kill_after_s: float = 0.0) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _SUBREAPER, str(kill_after_s), binary] + argv,
        capture_output=True, text=True, timeout=120, check=True,
    )
    out = proc.stdout.strip()
    if out == "no-subreaper":
        pytest.skip("PR_SET_CHILD_SUBREAPER is not available here")
    return out


@pytest.mark.parametrize("name", PROCESS_ARMS)
def test_cross_process_arms_reap_their_child(name: str, have_floor: floor.FloorBinary) -> None:
    if (os.cpu_count() or 1) > 1023:
        pytest.skip("this machine may have a CPU 1023")
    assert get_arm(name).scope == CROSS_PROCESS
    assert _run_from_subreaper(have_floor.path, [name, "n=3", "warmup=0", "settle_us=100"]) == "orphans=0 rc=0"
    # A child that cannot pin itself: the binary fails (status 3) and still leaves no child.
    out = _run_from_subreaper(have_floor.path, [name, "n=2", "warmup=0", "waiter_cpu=1023"])
    assert out == "orphans=0 rc=3"


@pytest.mark.parametrize("name", PROCESS_ARMS)
def test_the_child_dies_with_a_killed_floor(name: str, have_floor: floor.FloorBinary) -> None:
    # SIGKILL for the binary mid-run (as run_floor's timeout does), while the child sits in a
    # 60 s wait that no notify will end (lose_every=1): PR_SET_PDEATHSIG must end the child at
    # once, and the subreaper reaps it -- one orphan, dead within the script's 5 s bound.
    argv = [name, "n=100", "warmup=0", "settle_us=100", "timeout_ms=60000", "lose_every=1"]
    out = _run_from_subreaper(have_floor.path, argv, kill_after_s=0.5)
    assert out == "orphans=1 rc=-9"


@pytest.mark.parametrize("name", PROCESS_ARMS)
def test_a_child_that_cannot_be_pinned_is_a_clear_error(name: str, have_floor: floor.FloorBinary) -> None:
    if (os.cpu_count() or 1) > 1023:
        pytest.skip("this machine may have a CPU 1023")
    params = MeasureParams(n=2, warmup=0, settle_us=100, placement="split", notifier_cpu=0, waiter_cpu=1023)
    with pytest.raises(floor.NativeFloorError, match="pinning the waiter to CPU 1023"):
        floor.measure_latency(name, params)


@pytest.mark.parametrize("name", LATENCY_ARMS)
def test_skipped_notifies_are_counted_lost(name: str, have_floor: floor.FloorBinary) -> None:
    # lose_every=2: the C notifier skips every second notify; the wait times out.
    params = MeasureParams(n=4, warmup=0, settle_us=100, timeout_s=0.02)
    raw = floor.measure_latency(name, params, extra={"lose_every": 2})
    assert raw.lost == 2
    assert len(raw.samples_ns) == 2
    assert all(0 < s < ONE_SECOND_NS for s in raw.samples_ns)


# -- building ---------------------------------------------------------------


def test_build_is_cached_and_leaves_no_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, have_floor: floor.FloorBinary
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = floor.floor_binary()
    assert built.path.startswith(str(tmp_path / "wakelab" / "native") + os.sep)
    assert os.access(built.path, os.X_OK)
    assert os.listdir(os.path.dirname(built.path)) == [floor.BINARY_NAME]
    stamp = os.stat(built.path).st_mtime_ns
    # A new process (simulated by forgetting the in-process memo) reuses it.
    monkeypatch.setattr(floor, "_MEMO", {})
    assert floor.floor_binary().path == built.path
    assert os.stat(built.path).st_mtime_ns == stamp


def test_concurrent_builds_agree(tmp_path: Path, have_floor: floor.FloorBinary) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=SRC)
    code = "from wakelab.core.drivers import floor as native; print(native.floor_binary().path)"
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE)
        for _ in range(3)
    ]
    paths = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        paths.append(out.decode().strip())
    assert len(set(paths)) == 1
    assert os.listdir(os.path.dirname(paths[0])) == [floor.BINARY_NAME]


def test_a_broken_cached_binary_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, have_floor: floor.FloorBinary
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = floor.floor_binary().path
    with open(path, "wb") as f:
        f.write(b"not a binary")
    monkeypatch.setattr(floor, "_MEMO", {})
    assert floor.floor_binary().path == path
    assert floor.measure_latency("native-condvar", MeasureParams(n=3, warmup=0, settle_us=100)).lost == 0


def test_default_cache_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the path computation: nothing is built in the user's cache.
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert floor.cache_root() == os.path.join(os.path.expanduser("~"), ".cache", "wakelab", "native")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")
    assert floor.cache_root() == os.path.join(os.path.expanduser("~"), ".cache", "wakelab", "native")


@pytest.fixture
def no_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("CC", "/nonexistent/wakelab-cc")
    monkeypatch.setenv("PATH", "")
    return cache


def test_without_a_compiler_native_arms_are_unavailable(no_compiler: Path) -> None:
    for arm in native_arms.ARMS:
        reason = arm.requires()
        assert reason is not None and "no C compiler found" in reason
        assert "CC" in reason
    with pytest.raises(floor.NativeFloorUnavailable, match="no C compiler found"):
        get_arm("native-condvar").measure(SMALL)
    assert not no_compiler.exists()


def test_without_cc_and_empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", "")
    assert floor.find_compiler() == (None, "no C compiler found (set CC or install gcc)")
    assert native_arms.requires_native_floor() == "no C compiler found (set CC or install gcc)"


def test_a_failing_compiler_makes_arms_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fakecc.py"
    fake.write_text(
        textwrap.dedent(
            """
            import sys
            if "--version" in sys.argv:
                print("fakecc 1.0")
            else:
                print("fakecc: error: boom", file=sys.stderr)
                sys.exit(1)
            """
        )
    )
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("CC", "%s %s" % (sys.executable, fake))
    reason = native_arms.requires_native_floor()
    assert reason is not None
    assert "compiling the native floor failed" in reason and "boom" in reason
    built = cache / "wakelab" / "native"
    leftovers = [p for p in built.rglob("*") if p.is_file()] if built.exists() else []
    assert leftovers == []


# -- a binary that misbehaves -------------------------------------------------


def _fake_binary(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    fake = floor.FloorBinary(path=path, compiler=("cc",), compiler_version="test")
    monkeypatch.setattr(floor, "floor_binary", lambda: fake)


def test_garbage_output_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    echo = shutil.which("echo") or "/bin/echo"
    _fake_binary(monkeypatch, echo)
    with pytest.raises(floor.NativeFloorError, match="unexpected output from the native floor native-condvar"):
        get_arm("native-condvar").measure(SMALL)
    with pytest.raises(floor.NativeFloorError, match="unexpected output"):
        get_arm("native-sigaction-install").measure(MeasureParams(install_n=10, rounds=1))


def test_a_failing_binary_raises_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    false = shutil.which("false") or "/bin/false"
    _fake_binary(monkeypatch, false)
    with pytest.raises(floor.NativeFloorError, match="exited with status 1"):
        get_arm("native-pipe").measure(SMALL)
    _fake_binary(monkeypatch, "/nonexistent/wakelab_floor")
    with pytest.raises(floor.NativeFloorError, match="cannot run the native floor"):
        get_arm("native-pipe").measure(SMALL)


def test_usage_errors_of_the_binary_surface(have_floor: floor.FloorBinary) -> None:
    with pytest.raises(floor.NativeFloorError, match="unknown experiment"):
        floor.measure_latency("native-nonesuch", SMALL)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello\n",
        "wakelab-floor 3 latency native-pipe 2\n5\n6\nran-on notifier=0 waiter=1\nend 2\n",  # wrong experiment
        "wakelab-floor 1 latency native-condvar 2\n5\n6\nend 2\n",  # old version
        "wakelab-floor 2 latency native-condvar 2\n5\n6\nran-on notifier=0 waiter=1\nend 2\n",  # old version
        "wakelab-floor 3 latency native-condvar 2\n5\n-6\nran-on notifier=0 waiter=1\nend 2\n",  # never negative
        "wakelab-floor 3 latency native-condvar 1\nStale\nran-on notifier=0 waiter=1\nend 1\n",
        "wakelab-floor 3 rate native-condvar 2\n5\n6\nran-on notifier=0 waiter=1\nend 2\n",  # wrong kind
        "wakelab-floor 3 latency native-condvar 2\n5\n6\nran-on notifier=0 waiter=1\n",  # truncated
        "wakelab-floor 3 latency native-condvar 2\n5\n6\nend 2\n",  # no ran-on line
        "wakelab-floor 3 latency native-condvar 2\n5\nran-on notifier=0 waiter=1\nend 2\n",  # short
        "wakelab-floor 3 latency native-condvar 2\n5\nsix\nran-on notifier=0 waiter=1\nend 2\n",
        "wakelab-floor 3 latency native-condvar 2\n5\n+6\nran-on notifier=0 waiter=1\nend 2\n",
        "wakelab-floor 3 latency native-condvar x\nend x\n",
    ],
)
def test_parse_latency_output_rejects_garbage(text: str) -> None:
    with pytest.raises(floor.NativeFloorError, match="unexpected output"):
        floor.parse_latency_output(text, "native-condvar")


def test_parse_latency_output_reads_lost_wakes() -> None:
    text = "wakelab-floor 3 latency native-condvar 3\n1500\nlost\n2200\nran-on notifier=0 waiter=1\nend 3\n"
    assert floor.parse_latency_output(text, "native-condvar") == [1500, None, 2200]


def test_the_format_version_is_the_binarys() -> None:
    assert floor.FLOOR_FORMAT == 3
    with open(floor.source_path()) as f:
        assert "#define FLOOR_FORMAT 3\n" in f.read()


def test_stale_wakes_are_lost_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "wakelab-floor 3 latency native-pipe 4\n1500\nstale\nlost\n2200\nran-on notifier=0 waiter=1\nend 4\n"
    assert floor.parse_latency_records(text, "native-pipe") == [1500, floor.STALE, floor.LOST, 2200]
    assert floor.parse_latency_output(text, "native-pipe") == [1500, None, None, 2200]
    _fake_binary(monkeypatch, "/unused")
    monkeypatch.setattr(floor, "run_floor", lambda experiment, params, extra=None, stdin_text=None: text)
    raw = floor.measure_latency("native-pipe", MeasureParams(n=3, warmup=1))
    assert raw.samples_ns == (2200,)  # the first wake was warm-up; stale and lost are lost
    assert raw.lost == 2
    assert raw.info["stale_wakes"] == 1


def test_parse_rate_output() -> None:
    text = "wakelab-floor 3 rate native-sigaction-install 2\n300 7\n310 8\nran-on notifier=1\nend 2\n"
    assert floor.parse_rate_output(text, "native-sigaction-install") == [(300, 7), (310, 8)]
    assert floor.parse_ran_on(text, "native-sigaction-install", "rate") == {"notifier_cpu_seen": 1}
    with pytest.raises(floor.NativeFloorError, match="bad record"):
        floor.parse_rate_output(
            "wakelab-floor 3 rate native-sigaction-install 1\n300\nran-on notifier=0\nend 1\n",
            "native-sigaction-install",
        )


def test_parse_ran_on_reads_each_side() -> None:
    def text(ran_on: str) -> str:
        return "wakelab-floor 3 latency native-pipe 1\n900\n%s\nend 1\n" % ran_on

    assert floor.parse_ran_on(text("ran-on notifier=0 waiter=1"), "native-pipe") == {
        "notifier_cpu_seen": 0,
        "waiter_cpu_seen": 1,
    }
    assert floor.parse_ran_on(text("ran-on notifier=3"), "native-pipe") == {"notifier_cpu_seen": 3}
    assert floor.parse_ran_on(text("ran-on notifier=- waiter=2"), "native-pipe") == {
        "notifier_cpu_seen": None,
        "waiter_cpu_seen": 2,
    }


@pytest.mark.parametrize(
    "ran_on",
    [
        "ran-on",
        "ran-on waiter=1",
        "cpus notifier=0",
        "ran-on notifier=0 notifier=1",
        "ran-on notifier=0 spinner=1",
        "ran-on notifier=x",
        "ran-on notifier=",
    ],
)
def test_parse_ran_on_rejects_garbage(ran_on: str) -> None:
    text = "wakelab-floor 3 latency native-pipe 1\n900\n%s\nend 1\n" % ran_on
    with pytest.raises(floor.NativeFloorError, match="unexpected output"):
        floor.parse_ran_on(text, "native-pipe")


def test_placement_cpus_are_passed_to_the_binary() -> None:
    args = floor._floor_args(MeasureParams(), None)
    assert "notifier_cpu=-1" in args and "waiter_cpu=-1" in args
    args = floor._floor_args(MeasureParams(placement="split", notifier_cpu=0, waiter_cpu=1), None)
    assert "notifier_cpu=0" in args and "waiter_cpu=1" in args
    args = floor._floor_args(MeasureParams(placement="same", notifier_cpu=1, waiter_cpu=1), None)
    assert "notifier_cpu=1" in args and "waiter_cpu=1" in args


@pytest.mark.parametrize("cpu", [1023, 4095])
def test_a_cpu_that_cannot_be_used_is_a_clear_error(cpu: int, have_floor: floor.FloorBinary) -> None:
    if (os.cpu_count() or 1) > 1023:
        pytest.skip("this machine may have a CPU 1023")
    params = MeasureParams(n=2, warmup=0, settle_us=100, placement="split", notifier_cpu=0, waiter_cpu=cpu)
    with pytest.raises(floor.NativeFloorError, match="pinning the waiter to CPU %d" % cpu):
        floor.measure_latency("native-pipe", params)


def test_timeout_is_rounded_up_to_a_whole_millisecond() -> None:
    args = floor._floor_args(MeasureParams(timeout_s=0.0004), None)
    assert "timeout_ms=1" in args
    args = floor._floor_args(MeasureParams(timeout_s=1.5), {"lose_every": 3})
    assert "timeout_ms=1500" in args and "lose_every=3" in args
