"""No process outlives ``wakelab``, whatever kills it; SIGTERM and SIGHUP end a run like Ctrl-C.

The real thing: ``wakelab run --arms event --n 100000`` (about half a minute of
measuring) in its own session, a signal once its worker is measuring, then
every process seen under it must be gone within 2 s.  The template and the
worker are also killed or cut off one at a time, to show each guard
(PR_SET_PDEATHSIG in the worker, the template's group kill and liveness pipe,
the getppid re-check) on its own.  A zombie counts as gone: it no longer runs,
and in a container nothing may reap it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Dict, Iterable, List, Optional, Set, Tuple

import pytest

from wakelab.core.model import MeasureParams
from wakelab import history
from wakelab.harness import workers

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's")

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
# Time everything under a killed wakelab has to be gone.
GONE_WITHIN_S = 2.0
LONG = MeasureParams(n=100000, warmup=0)  # ~30 s of wakes: still measuring when the test strikes
# Time for an arm's child process to get past its start-up into the wake loop: killed while it
# starts, it finds its parent gone at its hello and exits of its own accord, proving nothing.
IN_THE_LOOP_S = 1.0


def _table() -> Dict[int, Tuple[int, str]]:
    """pid -> (ppid, state) of every process, from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            table[int(name)] = (int(fields[1]), fields[0])
    return table


def _descendants(root: int) -> Set[int]:
    children: Dict[int, List[int]] = {}
    for pid, (ppid, _) in _table().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _running(pids: Iterable[int]) -> Set[int]:
    """Those of ``pids`` that still exist and are not zombies."""
    table = _table()
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


def _cmdline(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _wait_for(condition, timeout_s: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out after %.0f s waiting for %s" % (timeout_s, what))


def _measuring_worker(template: int) -> Set[int]:
    """The template's forked worker(s), once one exists."""
    return {pid for pid in _descendants(template) if _cmdline(pid)}


def _gone_after(pids: Set[int], since: float) -> float:
    """Seconds from ``since`` until every one of ``pids`` is gone (fails past GONE_WITHIN_S)."""
    deadline = since + GONE_WITHIN_S
    while _running(pids) and time.monotonic() < deadline:
        time.sleep(0.005)
    left = _running(pids)
    assert not left, "still running %.1f s after the kill: %s" % (
        GONE_WITHIN_S, ["%d %s" % (pid, _cmdline(pid)) for pid in sorted(left)])
    return time.monotonic() - since


def _kill_everything(pids: Iterable[int]) -> None:
    for pid in _running(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _start_run(out: str, *options: str, history: Optional[str] = None) -> "subprocess.Popen[str]":
    recording = ["--history", history] if history else ["--no-history"]
    return subprocess.Popen(
        [sys.executable, "-m", "wakelab", "run", "--arms", "event", "--n", "100000", "-o", out, *recording, "-q", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env=dict(os.environ, PYTHONPATH=SRC),
    )


def _template_and_worker(root: int, depth: int = 2) -> Set[int]:
    """Every process under ``root`` once the template's worker is measuring (``depth`` 3: once
    the worker's arm has started its own child)."""

    def ready() -> Set[int]:
        found = _descendants(root)
        deepest = {root}
        for _ in range(depth):
            deepest = {pid for pid in found if _table().get(pid, (0, ""))[0] in deepest and _cmdline(pid)}
        return found if deepest else set()

    found = _wait_for(ready, 60, "the worker template to fork a worker")
    if depth > 2:
        time.sleep(IN_THE_LOOP_S)
    return found


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_end_a_run_like_ctrl_c(tmp_path, signum, status) -> None:
    out = str(tmp_path / "ev")
    db = str(tmp_path / "history.db")
    proc = _start_run(out, history=db)
    seen: Set[int] = set()
    try:
        seen = _template_and_worker(proc.pid)
        killed = time.monotonic()
        os.kill(proc.pid, signum)
        _, stderr = proc.communicate(timeout=GONE_WITHIN_S + 10)
        _gone_after(seen | {proc.pid}, killed)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_everything(seen)
    assert proc.returncode == status
    assert stderr == "wakelab: interrupted; the evidence so far (complete: false) is in %s\n" % out
    with open(os.path.join(out, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    assert summary["interrupted"] is True and summary["complete"] is False
    (arm,) = summary["arms"]
    assert arm["status"] == "interrupted"
    assert arm["reason"] == "interrupted by %s" % signal.Signals(signum).name
    # The interrupted run is in the history, marked so.
    (row,) = history.list_runs(db)
    assert (row.facts.folder, row.complete, row.interrupted) == (os.path.realpath(out), False, True)
    show = subprocess.run([sys.executable, "-m", "wakelab", "show", out], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=SRC))
    assert show.returncode == 0, show.stderr


@pytest.mark.parametrize("options", [(), ("--arms", "kill-sigwait-child", "--timeout-s", "20")], ids=["event", "arm-child"])
def test_sigkill_of_wakelab_takes_its_workers_down(tmp_path, options) -> None:
    # With a child process of the arm's, waiting up to 20 s for a wake that will not come: only
    # the template's kill of its whole group ends it in time.
    proc = _start_run(str(tmp_path / "ev"), *options)
    seen: Set[int] = set()
    try:
        seen = _template_and_worker(proc.pid, depth=3 if options else 2)
        killed = time.monotonic()
        proc.kill()
        proc.communicate(timeout=10)
        _gone_after(seen, killed)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _kill_everything(seen)
    assert proc.returncode == -signal.SIGKILL


def _start_template(parent_pid: int) -> "subprocess.Popen[bytes]":
    """A worker template, as WorkerPool starts it, with this test as its parent."""
    return subprocess.Popen(
        [sys.executable, "-S", "-m", "wakelab.harness.worker", "--parent-pid", str(parent_pid), "--serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=workers.worker_env(), start_new_session=True,
    )


def _measure_long(template: "subprocess.Popen[bytes]") -> Set[int]:
    assert template.stdin is not None
    request = {"protocol": 1, "arm": "event", "family": "threads", "params": LONG.to_dict(), "conditions": {}}
    template.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
    template.stdin.flush()
    return _wait_for(lambda: _measuring_worker(template.pid), 60, "the template to fork a worker")


def _end(template: "subprocess.Popen[bytes]") -> None:
    try:
        os.killpg(template.pid, signal.SIGKILL)  # the group outlives its leader while a member lives
    except ProcessLookupError:
        pass
    template.wait()
    for stream in (template.stdin, template.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def test_a_forked_worker_dies_with_its_template() -> None:
    # SIGKILL of the template alone: nothing but the worker's own PR_SET_PDEATHSIG ends it.
    template = _start_template(os.getpid())
    try:
        worker = _measure_long(template)
        killed = time.monotonic()
        template.kill()
        template.wait()
        _gone_after(worker, killed)
    finally:
        _end(template)


def test_what_a_dead_workers_arm_started_is_killed_with_it() -> None:
    # A worker killed alone (the template lives on) cannot reap its arm's child, which would wait
    # out its 20 s timeout; the template kills it when it reaps the worker.
    from wakelab.core.registry import get_arm

    params = MeasureParams(n=100000, warmup=0, timeout_s=20.0)
    request = {"protocol": 1, "arm": "kill-sigwait-child", "family": get_arm("kill-sigwait-child").family,
               "params": params.to_dict(), "conditions": {}}
    template = _start_template(os.getpid())
    try:
        assert template.stdin is not None and template.stdout is not None
        template.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
        template.stdin.flush()
        worker = _wait_for(lambda: {p for p in _measuring_worker(template.pid) if _table()[p][0] == template.pid}, 60, "a worker")
        arm_child = _wait_for(lambda: {p for p in _descendants(min(worker)) if _cmdline(p)}, 60, "the arm's child")
        time.sleep(IN_THE_LOOP_S)
        killed = time.monotonic()
        os.kill(min(worker), signal.SIGKILL)
        _gone_after(arm_child, killed)
        reply = json.loads(template.stdout.readline())
        assert reply["ok"] is False and reply["error"] == "worker killed by signal 9"
    finally:
        _end(template)


def test_the_template_takes_its_worker_down_when_its_input_closes() -> None:
    # The liveness pipe: the runner (here, this test) is still alive, so no death signal comes;
    # end of input while a worker measures means the runner is gone.
    template = _start_template(os.getpid())
    try:
        worker = _measure_long(template)
        killed = time.monotonic()
        assert template.stdin is not None
        template.stdin.close()
        template.wait(GONE_WITHIN_S + 5)
        _gone_after(worker, killed)
    finally:
        _end(template)
    assert template.returncode in (-signal.SIGKILL, 3)


@pytest.mark.parametrize("mode", ["--serve", "--probe"])
def test_a_worker_whose_parent_is_already_gone_exits_at_once(mode) -> None:
    # The parent named on the command line is not this process's parent: it died before the
    # death signal was set up (the process was re-parented), so none will come.
    proc = subprocess.Popen(
        [sys.executable, "-S", "-m", "wakelab.harness.worker", "--parent-pid", "1", mode],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=workers.worker_env(),
    )
    try:
        out, _ = proc.communicate(timeout=30)  # stdin stays open: a template would wait on it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3 and out == b""


def _run_code(code: str, timeout_s: float = 60) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-S", "-c", "import sys; sys.path.insert(0, %r)\n" % SRC + code],
                          capture_output=True, text=True, timeout=timeout_s)


def test_sigterm_raises_terminated_and_the_handlers_are_restored() -> None:
    code = (
        "import os, signal\n"
        "from wakelab import cli\n"
        "seen = []\n"
        "def dispatch(argv):\n"
        "    seen.append(signal.getsignal(signal.SIGTERM))\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return 0\n"
        "cli._dispatch = dispatch\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup\n"
        "status = cli.main([])\n"
        "assert seen[0] not in (signal.SIG_DFL, None), seen\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
        "assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN\n"
        "sys.exit(status)\n"
    )
    result = _run_code(code)
    assert (result.returncode, result.stderr) == (143, "wakelab: interrupted by SIGTERM\n")


def test_a_second_sigterm_during_the_clean_ending_stops_at_once() -> None:
    code = (
        "import os, signal, time\n"
        "from wakelab import cli\n"
        "def dispatch(argv):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(5)\n"
        "    except cli.Terminated:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)  # a cleanup that would never end\n"
        "        time.sleep(60)\n"
        "    return 0\n"
        "cli._dispatch = dispatch\n"
        "sys.exit(cli.main([]))\n"
    )
    started = time.monotonic()
    result = _run_code(code)
    assert result.returncode == -signal.SIGTERM and result.stderr == ""
    assert time.monotonic() - started < 30


# Ctrl-C at a precise point of the start-up: a finder that raises KeyboardInterrupt when the
# module is imported, as a Ctrl-C arriving during that import would.
_INTERRUPT_AT = """
class _CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == %r:
            raise KeyboardInterrupt
sys.meta_path.insert(0, _CtrlC())
sys.argv = ["wakelab", "run", "--arms", "event", "--n", "5", "-o", %r, "--no-history", "-q"]
"""


@pytest.mark.parametrize("module", ["wakelab.cli", "wakelab.errors", "argparse", "wakelab.commands.run", "wakelab.harness.runner"])
def test_ctrl_c_during_start_up_prints_one_line_not_a_traceback(tmp_path, module) -> None:
    # python -m wakelab
    start = _INTERRUPT_AT % (module, str(tmp_path / "m")) + "import runpy; runpy.run_module('wakelab', run_name='__main__')\n"
    result = _run_code(start)
    assert (result.returncode, result.stderr) == (130, "wakelab: interrupted\n")
    # the console script: it imports wakelab.cli itself, unguarded
    script = _INTERRUPT_AT % (module, str(tmp_path / "s")) + "from wakelab.cli import main\nsys.exit(main())\n"
    result = _run_code(script)
    if module == "wakelab.cli":
        return  # the script's own import, before any of wakelab's code can catch anything
    assert (result.returncode, result.stderr) == (130, "wakelab: interrupted\n")


def test_the_c_floor_dies_with_the_worker_that_started_it(tmp_path) -> None:
    # wakelab SIGKILLed: its template and worker die by PR_SET_PDEATHSIG, and nobody is left to
    # kill the C binary the worker ran; it must watch its parent itself.
    from wakelab.core.drivers import floor

    try:
        binary = floor.floor_binary().path
    except floor.NativeFloorError as exc:
        pytest.skip("no native floor here: %s" % exc)
    runner = ("import os, subprocess, sys; from wakelab.core.drivers import floor; from wakelab.core.model import MeasureParams; "
              "subprocess.run([sys.argv[1], 'native-condvar'] + floor._floor_args(MeasureParams(n=100000, warmup=0), None))")
    parent = subprocess.Popen([sys.executable, "-c", runner, binary], env=dict(os.environ, PYTHONPATH=SRC),
                              stdout=subprocess.DEVNULL, start_new_session=True)
    seen: Set[int] = set()
    try:
        seen = _wait_for(lambda: {p for p in _descendants(parent.pid) if binary in _cmdline(p)}, 60, "the C floor to start")
        time.sleep(IN_THE_LOOP_S)
        killed = time.monotonic()
        parent.kill()
        parent.wait()
        _gone_after(seen, killed)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        _kill_everything(seen)


def test_the_c_floor_refuses_to_start_for_a_parent_already_gone() -> None:
    from wakelab.core.drivers import floor

    try:
        binary = floor.floor_binary().path
    except floor.NativeFloorError as exc:
        pytest.skip("no native floor here: %s" % exc)
    done = subprocess.run([binary, "native-condvar", "n=100000", "parent_pid=1"], capture_output=True, timeout=30)
    assert (done.returncode, done.stdout) == (3, b"")


def _catches_sigint(pid: int) -> bool:
    try:
        with open("/proc/%d/status" % pid) as fh:
            caught = next(int(line.split()[1], 16) for line in fh if line.startswith("SigCgt:"))
    except (OSError, StopIteration, ValueError):
        return False
    return bool(caught & (1 << (signal.SIGINT - 1)))


def test_an_early_ctrl_c_exits_130_not_by_the_signal(tmp_path) -> None:
    # Ctrl-C in the first tenths of a second, while wakelab starts: its one line, then exit 130.
    # The interpreter's own shutdown once ended about one such run in three by SIGINT itself (-2).
    statuses = []
    for i in range(20):
        with subprocess.Popen([sys.executable, "-m", "wakelab", "run", "--arms", "event", "--n", "100000",
                               "-o", str(tmp_path / ("ev%d" % i)), "--no-history", "-q"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=SRC)) as proc:
            try:
                # Once Python handles SIGINT (before that, the default action ends any process by it),
                # and then a little later each time: inside wakelab's start-up.
                pid = proc.pid
                _wait_for(lambda: _catches_sigint(pid), 30, "Python to install its SIGINT handler")  # noqa: B023
                time.sleep(0.02 + 0.005 * i)
                proc.send_signal(signal.SIGINT)
                _, err = proc.communicate(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if "Could not import runpy module" in err:
            continue  # struck inside the interpreter's own start-up, before any code of wakelab's
        statuses.append(proc.returncode)
        assert "Traceback" not in err
    assert len(statuses) >= 10 and set(statuses) == {130}, statuses


def test_the_program_exits_at_once_with_a_signals_status(monkeypatch) -> None:
    # The mechanism behind the test above, deterministic: flushed output, then os._exit(130).
    from wakelab import cli

    calls = []
    monkeypatch.setattr(cli, "main", lambda: 130)
    monkeypatch.setattr(os, "_exit", lambda status: calls.append(status))
    with pytest.raises(SystemExit):  # os._exit is faked: the code goes on to sys.exit
        cli.console_main()
    assert calls == [130]
    monkeypatch.setattr(cli, "main", lambda: 1)
    with pytest.raises(SystemExit) as done:
        cli.console_main()
    assert done.value.code == 1 and calls == [130]


class _Lock:
    pass


def _swallow_a_ctrl_c() -> None:
    """A SIGINT whose handler runs inside a weakref callback (importlib runs such callbacks while it imports), where
    the interpreter can only hand its KeyboardInterrupt to sys.unraisablehook and go on."""
    import weakref

    def callback(ref) -> None:
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):  # the handler runs here, between these bytecodes, and raises
            pass

    lock = _Lock()
    keep = weakref.ref(lock, callback)
    del lock  # the callback runs now; its KeyboardInterrupt is dropped
    assert keep() is None


def test_a_ctrl_c_the_interpreter_swallows_still_ends_the_command(tmp_path, monkeypatch, capsys) -> None:
    # The race behind the early Ctrl-C test, made certain (_swallow_a_ctrl_c while the parser is built).  wakelab must
    # still stop before it measures anything.
    from wakelab import cli

    real = cli.build_parser

    def swallowing_build_parser():
        _swallow_a_ctrl_c()
        return real()

    monkeypatch.setattr(cli, "build_parser", swallowing_build_parser)
    swallowed: list = []  # what the interpreter drops goes to sys.unraisablehook (pytest's, else)
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: swallowed.append(unraisable.exc_type))
    before = signal.getsignal(signal.SIGINT)
    folder = tmp_path / "run"
    status = cli.main(["run", "--arms", "event", "--n", "5", "-o", str(folder), "--no-history", "-q"])
    err = capsys.readouterr().err
    from wakelab.commands import INTERRUPTS

    assert INTERRUPTS == [signal.SIGINT]  # the interpreter did drop it; the latch noted it
    assert swallowed == []  # and the interpreter's "Exception ignored" traceback for it was not printed
    assert status == 130 and err == "wakelab: interrupted\n"
    assert sys.unraisablehook is not None and sys.unraisablehook.__name__ == "<lambda>"  # the hook wakelab found, again
    assert not (folder / "summary.json").exists()  # nothing was measured
    assert signal.getsignal(signal.SIGINT) is before  # wakelab's handler is gone again


def test_a_ctrl_c_while_a_class_is_made_is_one_line_too(monkeypatch, capsys) -> None:
    # The other race behind the early Ctrl-C test, made certain: the SIGINT lands while a class with a
    # cached_property is created (``import platform`` makes one).  Python 3.11 and older hand it on as
    # "RuntimeError: Error calling __set_name__", the KeyboardInterrupt its cause; newer ones as itself.
    from wakelab import cli

    class _Lands:
        def __set_name__(self, owner, name) -> None:
            signal.raise_signal(signal.SIGINT)

    def make_a_class(argv):
        type("made", (), {"attr": _Lands()})
        return 0

    monkeypatch.setattr(cli, "_dispatch", make_a_class)
    before = signal.getsignal(signal.SIGINT)
    assert cli.main(["run"]) == 130
    assert capsys.readouterr().err == "wakelab: interrupted\n"
    assert signal.getsignal(signal.SIGINT) is before

    def fails(argv):
        raise RuntimeError("not an interrupt")

    monkeypatch.setattr(cli, "_dispatch", fails)  # any other RuntimeError is not taken for one
    with pytest.raises(RuntimeError, match="not an interrupt"):
        cli.main(["run"])


def test_a_ctrl_c_swallowed_after_the_commands_last_look_is_still_reported(monkeypatch, capsys) -> None:
    # wakelab keeps the interpreter's "Exception ignored" report of a swallowed Ctrl-C quiet only while the command
    # has yet to look for one (and raise it); swallowed after that look, the interpreter's report is left to be seen.
    from wakelab import cli
    from wakelab.commands import raise_if_interrupted

    def dispatch(argv) -> int:
        raise_if_interrupted()  # the command's last look: nothing yet
        _swallow_a_ctrl_c()
        return 0

    reported: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: reported.append(unraisable.exc_type))
    monkeypatch.setattr(cli, "_dispatch", dispatch)
    assert cli.main(["show", "x"]) == 0
    assert reported == [KeyboardInterrupt]


@pytest.mark.parametrize("argv, ends", [(["run", "--bogus"], "usage error"), (["show", "--help"], "help")])
def test_a_ctrl_c_swallowed_before_a_command_ends_early_is_still_raised(monkeypatch, capsys, argv, ends) -> None:
    # A Ctrl-C the interpreter swallows while the parser is built, in a command that then ends before it looks for
    # one (argparse's exit on --help or a usage error): kept quiet, so it must still end wakelab as an interrupt.
    from wakelab import cli

    real = cli.build_parser

    def swallowing_build_parser():
        _swallow_a_ctrl_c()
        return real()

    reported: list = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: reported.append(unraisable.exc_type))
    monkeypatch.setattr(cli, "build_parser", swallowing_build_parser)
    assert cli.main(argv) == 130, ends
    assert capsys.readouterr().err.endswith("wakelab: interrupted\n") and reported == []
