"""User-defined arms (wakelab.api.v1, --arm-file, the wakelab.arms entry points), through the CLI.

Every hostile arm file is a file in ``tmp_path`` run through ``python -m wakelab run``, in a
subprocess with a timeout: a load-time problem must give one line and exit status 2, a run-time
problem a failed arm with its reason (or lost wakes), never a traceback or a hang.  The two
worked examples in ``examples/`` are measured for real, with a planted-delay check.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from typing import Any, Dict, List, Optional, Tuple

import pytest

from wakelab.api import v1
from wakelab.core import registry
from wakelab.core.user_arms import ENTRY_POINT, FILE, ArmFileError, UserArmOrigin, load_arm_file, load_origin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
EXAMPLES = os.path.join(ROOT, "examples")
MAILBOX = os.path.join(EXAMPLES, "arms_mailbox.py")
JOBQUEUE = os.path.join(EXAMPLES, "arms_jobqueue.py")
# Quick runs: a few wakes, short waits.
QUICK = ["-n", "6", "--warmup", "1", "--settle-us", "200", "--timeout-s", "0.2", "--workers", "1"]

HEADER = """
import functools, threading, time
from wakelab.api.v1 import BLOCKED, CROSS_THREAD, Arm, WakePath, now_ns
"""


def arm_source(name: str = "hostile", path: str = "event_path", **fields: str) -> str:
    """An ``Arm(...)`` declaration's source; ``fields`` replace the defaults (value "DROP" drops one)."""
    values = {
        "name": repr(name), "family": "'threads'", "waiter": "BLOCKED", "scope": "CROSS_THREAD",
        "t0": "'main thread: before set()'", "t1": "'waiter: after wait()'", "path": path,
    }
    values.update(fields)
    return "Arm(%s)" % ", ".join("%s=%s" % (k, v) for k, v in values.items() if v != "DROP")


EVENT_PATH = """
def event_path():
    event = threading.Event()
    return WakePath(reset=event.clear, wait=event.wait, notify=event.set)
"""


def write(tmp_path: Any, body: str, name: str = "arms.py") -> str:
    path = os.path.join(str(tmp_path), name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(textwrap.dedent(body))
    return path


def wakelab(*args: str, timeout: float = 240.0, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    environment = dict(os.environ)
    environment["PYTHONPATH"] = SRC + (os.pathsep + environment["PYTHONPATH"] if environment.get("PYTHONPATH") else "")
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "wakelab", *args], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=ROOT)


def run_arms(tmp_path: Any, *args: str, out: str = "out", timeout: float = 240.0,
             env: Optional[Dict[str, str]] = None) -> Tuple["subprocess.CompletedProcess[str]", str]:
    folder = os.path.join(str(tmp_path), out)
    return wakelab("run", *args, "-o", folder, "--no-history", "-q", timeout=timeout, env=env), folder


def summary_of(folder: str) -> Dict[str, Any]:
    with open(os.path.join(folder, "summary.json"), encoding="utf-8") as fh:
        doc: Dict[str, Any] = json.load(fh)
    return doc


def arm_entry(folder: str, name: str) -> Dict[str, Any]:
    entry: Dict[str, Any] = next(a for a in summary_of(folder)["arms"] if a["name"] == name)
    return entry


def assert_one_line_usage_error(result: "subprocess.CompletedProcess[str]", *needles: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("wakelab: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def clean_registry():
    """Tests that load arm files in this process leave no user arm registered."""
    registry.forget_user_arms()
    yield
    registry.forget_user_arms()


# ---------------------------------------------------------------- the API module


def test_api_module_is_stdlib_only_and_loads_with_dash_S() -> None:
    """A worker started with -S imports the API and the loader, and nothing outside the stdlib."""
    probe = (
        "import sys; sys.path.insert(0, %r)\n"
        "import wakelab.api.v1 as v1, wakelab.core.user_arms\n"
        "assert v1.API_VERSION == 1\n"
        "arms = wakelab.core.user_arms.load_arm_file(%r)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'scipy', 'matplotlib', 'rich', 'jsonschema', 'hypothesis'}))\n"
        "print([a.name for a in arms])\n"
    ) % (SRC, MAILBOX)
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "['mailbox']"]


def test_api_names_are_the_versioned_contract() -> None:
    assert v1.__all__ == ["API_VERSION", "BLOCKED", "SPINNING", "CROSS_THREAD", "CROSS_PROCESS", "WAITER_STATES",
                          "SCOPES", "FAMILIES", "LOAD_TIMEOUT_S", "now_ns", "WakePath", "Arm", "ArmDeclarationError"]
    assert (v1.BLOCKED, v1.SPINNING, v1.CROSS_THREAD, v1.CROSS_PROCESS) == ("blocked", "spinning", "cross-thread", "cross-process")
    assert "native" not in v1.FAMILIES
    assert "Stable" in (v1.__doc__ or "") or "stable" in (v1.__doc__ or "")


@pytest.mark.parametrize(
    "fields, needle",
    [
        ({"name": "'Bad_Name'"}, "Arm name must be lower-case"),
        ({"family": "'native'"}, "Arm family must be one of"),
        ({"waiter": "'parked'"}, "Arm waiter must be one of 'blocked', 'spinning'"),
        ({"waiter": "'none'"}, "waiter 'none' is for rate arms"),
        ({"scope": "'self'"}, "scope 'self' is not offered"),
        ({"scope": "'cross-machine'"}, "Arm scope must be one of"),
        ({"t0": "''"}, "Arm t0 must say exactly which instant"),
        ({"t1": "'a\\nb'"}, "Arm t1 must be one line"),
        ({"path": "event_path()"}, "pass the function that builds it"),
        ({"path": "42"}, "Arm: path must be a function"),
    ],
)
def test_a_declaration_against_the_rules_is_refused(fields: Dict[str, str], needle: str) -> None:
    namespace: Dict[str, Any] = {}
    exec(textwrap.dedent(HEADER + EVENT_PATH), namespace)
    with pytest.raises(v1.ArmDeclarationError, match=re.escape(needle)):
        eval(arm_source(**fields), namespace)


def test_a_wake_path_takes_one_wait_and_one_notify() -> None:
    with pytest.raises(v1.ArmDeclarationError, match="exactly one of wait= and wait_stamped="):
        v1.WakePath(reset=list, notify=list)
    with pytest.raises(v1.ArmDeclarationError, match="exactly one of notify= and bind="):
        v1.WakePath(reset=list, wait=bool)
    with pytest.raises(v1.ArmDeclarationError, match="reset must be a function"):
        v1.WakePath(reset=None, wait=bool, notify=list)  # type: ignore[arg-type]
    with pytest.raises(v1.ArmDeclarationError, match="before= or bind=, not both"):
        v1.WakePath(reset=list, wait=bool, bind=lambda: list, before=list)


def test_one_wake_path_for_the_core_and_the_api() -> None:
    """The API's WakePath is the drivers' own: a user's path reaches the driver as declared, and a
    built-in arm's path is held to the same rules, with the same error."""
    from wakelab.core import drivers

    assert v1.WakePath is drivers.WakePath
    assert v1.ArmDeclarationError is drivers.ArmDeclarationError
    with pytest.raises(v1.ArmDeclarationError, match="exactly one of notify= and bind="):
        drivers.WakePath(reset=list, wait=bool)


# ---------------------------------------------------------------- load-time problems: one line, exit 2


HOSTILE_FILES = [
    ("syntax-error", HEADER + "def broken(:\n    pass\n", ["line 4: syntax error"]),
    ("missing-field", HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(t1="DROP"), ["line 9:", "TypeError", "'t1'"]),
    ("bad-waiter", HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(waiter="'parked'"), ["line 9:", "Arm waiter must be one of"]),
    ("bad-scope", HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(scope="'global'"), ["line 9:", "Arm scope must be one of"]),
    ("builtin-name", HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(name="event"), ["'event' is the name of a built-in arm"]),
    ("no-arms", HEADER + EVENT_PATH, ["defines no ARMS"]),
    ("empty-arms", HEADER + "ARMS = []\n", ["ARMS is empty"]),
    ("not-an-arm", HEADER + "ARMS = ['event']\n", ["ARMS[0] is a str, not a wakelab.api.v1.Arm"]),
    ("twice", HEADER + EVENT_PATH + "\nARMS = [%s, %s]\n" % (arm_source(), arm_source()), ["declares the arm 'hostile' twice"]),
    ("raises-on-import", HEADER + "import wakelab_no_such_module\n", ["line 4:", "ModuleNotFoundError"]),
    ("exits-on-import", HEADER + "import sys\nsys.exit(3)\n", ["called sys.exit(3)"]),
]


@pytest.mark.parametrize("body, needles", [(b, n) for _, b, n in HOSTILE_FILES], ids=[k for k, _, _ in HOSTILE_FILES])
def test_a_broken_arm_file_is_one_line_and_exit_2(tmp_path: Any, body: str, needles: List[str]) -> None:
    path = write(tmp_path, body)
    result, folder = run_arms(tmp_path, "--arm-file", path, *QUICK, timeout=60)
    assert_one_line_usage_error(result, "arm file %s" % path, *needles)
    assert not os.path.exists(folder)  # nothing measured, nothing written


def test_a_missing_file_and_a_folder_are_one_line(tmp_path: Any) -> None:
    missing = os.path.join(str(tmp_path), "nope.py")
    assert_one_line_usage_error(run_arms(tmp_path, "--arm-file", missing, timeout=60)[0], "does not exist")
    assert_one_line_usage_error(run_arms(tmp_path, "--arm-file", str(tmp_path), timeout=60)[0], "is a directory")


def test_two_files_defining_one_name_and_one_file_twice(tmp_path: Any) -> None:
    first = write(tmp_path, HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(), "one.py")
    second = write(tmp_path, HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(), "two.py")
    assert_one_line_usage_error(run_arms(tmp_path, "--arm-file", first, "--arm-file", second, timeout=60)[0],
                                "arm 'hostile' is already defined by arm file %s" % first)
    assert_one_line_usage_error(run_arms(tmp_path, "--arm-file", first, "--arm-file", first, timeout=60)[0], "names %s twice" % first)


def test_a_top_level_that_hangs_is_cut_at_the_load_bound(tmp_path: Any) -> None:
    path = write(tmp_path, HEADER + "time.sleep(3600)\n")
    result, _ = run_arms(tmp_path, "--arm-file", path, timeout=60)
    assert_one_line_usage_error(result, "did not finish within 10 s")


def test_a_busy_top_level_is_cut_too_and_the_alarm_is_restored(tmp_path: Any, clean_registry: None) -> None:
    import signal

    path = write(tmp_path, HEADER + "while True:\n    pass\n")
    before = signal.getsignal(signal.SIGALRM)
    timer_before = signal.getitimer(signal.ITIMER_REAL)  # a test-timeout plugin may hold one
    with pytest.raises(ArmFileError, match="did not finish within 0.3 s"):
        load_arm_file(path, timeout_s=0.3)
    assert signal.getsignal(signal.SIGALRM) is before
    timer_after = signal.getitimer(signal.ITIMER_REAL)
    if timer_before[0] == 0:
        assert timer_after == (0.0, 0.0)
    else:  # put back, less the time the load took
        assert timer_before[0] - 5 < timer_after[0] <= timer_before[0] and timer_after[1] == timer_before[1]
    assert registry.user_arms() == []


def test_what_a_file_prints_at_import_stays_off_stdout(tmp_path: Any) -> None:
    """--json output stays one JSON document although the arm file prints."""
    path = write(tmp_path, HEADER + EVENT_PATH + "print('hello from the arm file')\nARMS = [%s]\n" % arm_source())
    result, _ = run_arms(tmp_path, "--arm-file", path, *QUICK, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["arms"][0]["name"] == "hostile"
    assert "hello from the arm file" in result.stderr


# ---------------------------------------------------------------- run-time problems: a failed arm or lost wakes


RUN_TIME = [
    (
        "notify-raises",
        """
        def notify():
            raise ZeroDivisionError("no notify today")

        def path():
            event = threading.Event()
            return WakePath(reset=event.clear, wait=event.wait, notify=notify)
        """,
        ["UserArmError: arm hostile: a move raised ZeroDivisionError: no notify today (arms.py line 6, in notify)"],
    ),
    (
        "wait-raises",
        """
        def path():
            event = threading.Event()

            def wait(timeout_s):
                return {}["missing"]

            return WakePath(reset=event.clear, wait=wait, notify=event.set)
        """,
        ["UserArmError: arm hostile: its wait raised KeyError: 'missing' (arms.py line 9, in wait)"],
    ),
    (
        "path-raises",
        """
        def path():
            raise RuntimeError("cannot build it")
        """,
        ["its path() raised RuntimeError: cannot build it (arms.py line 6, in path)"],
    ),
    (
        "path-returns-junk",
        """
        def path():
            return 42
        """,
        ["its path() returned a int, not a wakelab.api.v1.WakePath"],
    ),
    (
        "wait-ignores-its-timeout",
        """
        def path():
            never = threading.Event()
            return WakePath(reset=never.clear, wait=lambda timeout_s: never.wait(), notify=list)
        """,
        ["waiter thread did not return from its wait"],
    ),
    (
        "notify-sleeps-forever",
        """
        def path():
            event = threading.Event()
            return WakePath(reset=event.clear, wait=event.wait, notify=functools.partial(time.sleep, 3600))
        """,
        ["worker stalled"],
    ),
]


@pytest.mark.parametrize("body, needles", [(b, n) for _, b, n in RUN_TIME], ids=[k for k, _, _ in RUN_TIME])
def test_an_arm_that_fails_while_measuring_is_a_failed_arm_with_its_reason(tmp_path: Any, body: str, needles: List[str]) -> None:
    path = write(tmp_path, HEADER + textwrap.dedent(body) + "\nARMS = [%s]\n" % arm_source(path="path"))
    result, folder = run_arms(tmp_path, "--arm-file", path, "--arms", "hostile,event", *QUICK, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    entry = arm_entry(folder, "hostile")
    assert entry["status"] == "failed"
    for needle in needles:
        assert needle in entry["reason"], entry["reason"]
    assert arm_entry(folder, "event")["status"] == "ok"  # the run goes on with the next arm


def test_an_arm_that_never_notifies_counts_lost_wakes(tmp_path: Any) -> None:
    path = write(tmp_path, HEADER + """
def path():
    event = threading.Event()
    return WakePath(reset=event.clear, wait=event.wait, notify=int)   # int(): a call that notifies nothing
""" + "\nARMS = [%s]\n" % arm_source(path="path"))
    result, folder = run_arms(tmp_path, "--arm-file", path, "-n", "4", "--warmup", "0", "--settle-us", "100",
                              "--timeout-s", "0.05", "--workers", "1", timeout=120)
    assert "Traceback" not in result.stderr
    entry = arm_entry(folder, "hostile")
    assert entry["latency"]["n"] == 0 and entry["latency"]["lost"] == 4
    assert summary_of(folder)["complete"] is False


def test_a_busy_hang_in_notify_is_cut_at_the_worker_deadline(tmp_path: Any, monkeypatch: Any, clean_registry: None) -> None:
    """A notify that spins forever keeps the worker running (no stall): the worker deadline ends it."""
    from wakelab.core.model import MeasureParams
    from wakelab.harness import runner, workers
    from wakelab.labs import LAB_135

    path = write(tmp_path, HEADER + """
def spin():
    while True:
        pass

def path():
    event = threading.Event()
    return WakePath(reset=event.clear, wait=event.wait, notify=spin)
""" + "\nARMS = [%s]\n" % arm_source(path="path"))
    load_arm_file(path)
    monkeypatch.setattr(workers, "WORKER_GRACE_S", 2.0)
    os.makedirs(str(tmp_path / "out"))
    plan = runner.RunPlan(lab=LAB_135, arm_names=["hostile"], params=MeasureParams(n=2, warmup=0, settle_us=100, timeout_s=0.05),
                          folder=str(tmp_path / "out"), execution=runner.Execution(workers=1))
    summary = runner.run_plan(plan)
    entry = summary["arms"][0]
    assert entry["status"] == "failed"
    assert "worker hung: no reply within 2 s (killed)" in entry["reason"]


# ---------------------------------------------------------------- the evidence marks user arms


def test_user_arms_are_marked_in_the_evidence_with_their_file_and_hash(tmp_path: Any) -> None:
    from wakelab.evidence.load import load_summary

    result, folder = run_arms(tmp_path, "--arm-file", MAILBOX, "--arms", "mailbox,event", *QUICK)
    assert result.returncode == 0, result.stderr
    entry = arm_entry(folder, "mailbox")
    assert entry["status"] == "ok" and entry["latency"]["n"] == 6
    assert entry["user_defined"] is True
    with open(MAILBOX, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    assert entry["origin"] == {"source": "file", "path": MAILBOX, "sha256": digest}
    assert entry["driver"] == "thread" and entry["waiter"] == "blocked" and entry["scope"] == "cross-thread"
    builtin = arm_entry(folder, "event")
    assert "user_defined" not in builtin and "origin" not in builtin
    load_summary(folder)  # the schema takes the marks
    with open(os.path.join(folder, "summary.txt"), encoding="utf-8") as fh:
        text = fh.read()
    assert "user-defined: arm file %s (sha256 %s)" % (MAILBOX, digest[:12]) in " ".join(text.split())
    reproduce = text.split("REPRODUCE")[1]
    assert "--arms mailbox,event" in reproduce and "--arm-file %s" % MAILBOX in reproduce


def test_without_arms_the_files_arms_run_and_with_a_lab_after_its_own(tmp_path: Any) -> None:
    result, folder = run_arms(tmp_path, "--arm-file", MAILBOX, "--arm-file", JOBQUEUE, *QUICK)
    assert result.returncode == 0, result.stderr
    assert [a["name"] for a in summary_of(folder)["arms"]] == ["mailbox", "jobqueue-socket"]
    result, folder = run_arms(tmp_path, "--lab", "135", "--arm-file", MAILBOX, *QUICK, "--install-n", "100",
                              "--rounds", "1", out="lab")
    assert result.returncode == 0, result.stderr
    assert [a["name"] for a in summary_of(folder)["arms"]] == ["event", "sigusr1-self", "signal-install", "mailbox"]


def test_a_worker_refuses_a_file_that_changed_since_the_run_started(tmp_path: Any, clean_registry: None) -> None:
    path = write(tmp_path, HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source())
    arm = load_arm_file(path)[0]
    origin = registry.user_arm_origin(arm.name)
    with open(path, "rb") as fh:
        assert origin is not None and origin.sha256 == hashlib.sha256(fh.read()).hexdigest()
    registry.forget_user_arms()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("# edited\n")
    with pytest.raises(ArmFileError, match="changed since the run started"):
        load_origin(origin.to_dict())
    assert registry.user_arms() == []


def test_an_origin_is_read_back_as_written_and_a_bad_one_is_named() -> None:
    file = UserArmOrigin(FILE, path="/x/a.py", sha256="ab", sys_path=("/site",))
    assert file.to_dict() == {"source": "file", "path": "/x/a.py", "sha256": "ab", "sys_path": ["/site"]}
    entry = UserArmOrigin(ENTRY_POINT, group="wakelab.arms", entry_point="a = m:A")
    assert entry.to_dict() == {"source": "entry-point", "group": "wakelab.arms", "entry_point": "a = m:A",
                               "distribution": None, "version": None}
    assert entry.label() == "entry point a = m:A" and file.label() == "arm file /x/a.py"
    for origin in (file, entry):
        assert UserArmOrigin.from_dict(origin.to_dict()) == origin
    for bad, message in [([], "origin must be an object, got list"), ({"source": "file", "path": "/x"}, "needs its path and sha256"),
                         ({"source": "entry-point", "entry_point": "a"}, "must read 'name = module:attr'"),
                         ({"source": "pip"}, "unknown user arm source 'pip'"),
                         ({"source": "file", "path": "/x", "sha256": "ab", "sys_path": "/y"}, "sys_path must be a list of folders")]:
        with pytest.raises(ArmFileError, match=re.escape(message)):
            load_origin(bad)


def test_registered_user_arms_are_looked_up_like_built_in_ones(tmp_path: Any, clean_registry: None) -> None:
    path = write(tmp_path, HEADER + EVENT_PATH + "\nARMS = [%s]\n" % arm_source(name="my-arm", family="'fds'"))
    load_arm_file(path)
    assert registry.get_arm("my-arm").family == "fds"
    assert registry.find_arm("my-arm", "fds").name == "my-arm"
    names = registry.arm_names()
    assert names.index("my-arm") > names.index("pipe")  # after the built-in fd arms
    assert registry.get_arm("my-arm").describe()["user_defined"] is True


def test_a_file_imports_from_site_packages_reach_the_workers(tmp_path: Any) -> None:
    """Workers start with -S; the folders the file's imports came from are passed to them."""
    try:
        import idna  # pure Python, in the venv's site-packages, not in the standard library
    except ImportError:
        pytest.skip("needs a pure-Python package from site-packages (idna)")
    if "site-packages" not in (idna.__file__ or ""):
        pytest.skip("idna is not in site-packages here")
    path = write(tmp_path, HEADER + "import idna\n" + EVENT_PATH + "\nARMS = [%s]\n" % arm_source())
    result, folder = run_arms(tmp_path, "--arm-file", path, *QUICK)
    assert result.returncode == 0, result.stderr
    entry = arm_entry(folder, "hostile")
    assert entry["status"] == "ok", entry["reason"]
    assert any("site-packages" in p for p in entry["origin"]["sys_path"])


# ---------------------------------------------------------------- entry points


def _install_provider(tmp_path: Any) -> str:
    """A distribution 'wakelab-demo-arms' 1.2.3 on a folder of its own, offering two entry points."""
    site = tmp_path / "site"
    (site / "demo_arms").mkdir(parents=True)
    (site / "demo_arms" / "__init__.py").write_text(textwrap.dedent(HEADER + EVENT_PATH + """
DEMO = Arm(name="demo-event", family="threads", waiter=BLOCKED, scope=CROSS_THREAD,
           t0="main thread: before Event.set()", t1="waiter: after Event.wait() returns", path=event_path)
"""))
    (site / "demo_arms" / "broken.py").write_text("raise RuntimeError('a broken provider')\n")
    info = site / "wakelab_demo_arms-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wakelab-demo-arms\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text("[wakelab.arms]\ndemo-event = demo_arms:DEMO\nbroken-arm = demo_arms.broken:ARM\n")
    return str(site)


def test_an_installed_package_provides_an_arm_through_the_entry_point_group(tmp_path: Any) -> None:
    site = _install_provider(tmp_path)
    env = {"PYTHONPATH": SRC + os.pathsep + site}
    result, folder = run_arms(tmp_path, "--arms", "demo-event,event", *QUICK, env=env)
    assert result.returncode == 0, result.stderr
    entry = arm_entry(folder, "demo-event")
    assert entry["status"] == "ok" and entry["user_defined"] is True
    origin = entry["origin"]
    assert origin["source"] == "entry-point" and origin["entry_point"] == "demo-event = demo_arms:DEMO"
    assert (origin["distribution"], origin["version"]) == ("wakelab-demo-arms", "1.2.3")
    # Lazy: the broken provider beside it was never imported; asked for, it is one line.
    assert_one_line_usage_error(run_arms(tmp_path, "--arms", "broken-arm", *QUICK, out="b", env=env)[0],
                                "entry point broken-arm = demo_arms.broken:ARM (wakelab-demo-arms 1.2.3)",
                                "RuntimeError: a broken provider")
    assert_one_line_usage_error(run_arms(tmp_path, "--arms", "demo-evnt", *QUICK, out="c", env=env)[0],
                                "unknown arm 'demo-evnt'", "did you mean 'demo-event'?")


# ---------------------------------------------------------------- the examples, for real


def _p50s(folder: str) -> Dict[str, float]:
    return {a["name"]: a["latency"]["p50_ns"] for a in summary_of(folder)["arms"] if a["status"] == "ok"}


def test_the_examples_see_a_planted_delay(tmp_path: Any) -> None:
    """--planted-delay-us 2000 moves each example's p50 by about 2 ms (paired runs)."""
    both = ["--arm-file", MAILBOX, "--arm-file", JOBQUEUE, "-n", "60", "--warmup", "5", "--workers", "2"]
    plain, folder_plain = run_arms(tmp_path, *both, out="plain")
    planted, folder_planted = run_arms(tmp_path, *both, "--planted-delay-us", "2000", out="planted")
    assert plain.returncode == 0 and planted.returncode == 0, plain.stderr + planted.stderr
    before, after = _p50s(folder_plain), _p50s(folder_planted)
    assert sorted(before) == sorted(after) == ["jobqueue-socket", "mailbox"]
    for name in before:
        moved_us = (after[name] - before[name]) / 1000
        assert 1500 <= moved_us <= 4000, (name, before[name], after[name])


def test_the_examples_run_in_a_placement_grid(tmp_path: Any) -> None:
    result, folder = run_arms(tmp_path, "--arm-file", MAILBOX, "--arm-file", JOBQUEUE, "--placement", "same,split", *QUICK)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(folder, "matrix.json"), encoding="utf-8") as fh:
        matrix = json.load(fh)
    assert matrix["complete"] is True
    assert sorted(arm["name"] for arm in matrix["arms"]) == ["jobqueue-socket", "mailbox"]
    assert all(row["status"] == "ok" for arm in matrix["arms"] for row in arm["rows"])
    for cell in matrix["cells"]:
        assert arm_entry(os.path.join(folder, cell["folder"]), "mailbox")["user_defined"] is True


def _other_interpreters() -> List[Any]:
    from wakelab.harness.interpreters import discover, usable

    here = os.path.realpath(sys.executable)
    found = [i for i in usable(discover()) if os.path.realpath(i.path) != here]
    chosen = {}
    for interpreter in found:  # the oldest CPython and a PyPy, where there are
        key = interpreter.implementation
        if key not in chosen or interpreter.version < chosen[key].version:
            chosen[key] = interpreter
    return list(chosen.values())


@pytest.mark.parametrize("implementation", ["cpython", "pypy"])
def test_the_examples_run_on_another_interpreter(tmp_path: Any, implementation: str) -> None:
    others = [i for i in _other_interpreters() if i.implementation == implementation]
    if not others:
        pytest.skip("no other %s interpreter found (see 'wakelab interpreters')" % implementation)
    other = others[0]
    result, folder = run_arms(tmp_path, "--arm-file", MAILBOX, "--arm-file", JOBQUEUE, "--python", other.path, *QUICK)
    assert result.returncode == 0, result.stderr
    summary = summary_of(folder)
    assert summary["interpreter"]["version"] == "%d.%d.%d" % tuple(other.version[:3])
    assert [(a["name"], a["status"]) for a in summary["arms"]] == [("mailbox", "ok"), ("jobqueue-socket", "ok")]


def test_compare_reads_runs_of_user_arms(tmp_path: Any) -> None:
    first, folder_a = run_arms(tmp_path, "--arm-file", MAILBOX, *QUICK, out="a")
    second, folder_b = run_arms(tmp_path, "--arm-file", MAILBOX, *QUICK, out="b")
    assert first.returncode == 0 and second.returncode == 0
    result = wakelab("compare", folder_a, folder_b, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "mailbox" in result.stdout
    assert "Traceback" not in result.stderr


def test_in_process_runs_user_arms_too(tmp_path: Any) -> None:
    result, folder = run_arms(tmp_path, "--arm-file", JOBQUEUE, "-n", "6", "--warmup", "1", "--in-process")
    assert result.returncode == 0, result.stderr
    assert arm_entry(folder, "jobqueue-socket")["status"] == "ok"
