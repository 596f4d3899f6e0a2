"""Worker liveness and bounded reads: a stalled worker (or template) is found within seconds
whatever n is, a child that writes without end is cut off, and interpreter probes that hang
are killed with everything they started."""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import signal
import stat
import sys
import threading
import time
from typing import Callable, List, Optional

import pytest

from conftest import children
from wakelab import cli
from wakelab.core.drivers import HANDSHAKE_SLACK_S
from wakelab.core.model import MeasureParams
from wakelab.harness import interpreters, worker, workers
from wakelab.harness.conditions import Conditions
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.labs import LAB_135

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the liveness watch reads /proc")

# 100,000 wakes: the old n-proportional deadline alone would have waited ~28 h for a stalled worker.
HUGE = MeasureParams(n=100000, warmup=2, settle_us=200, timeout_s=1.0, install_n=300, rounds=4)
# However a fault makes a test wait, it ends by then (the watcher kills what it started).
GIVE_UP_S = 60.0


def _kids(pid: int) -> List[int]:
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


class _Staller(threading.Thread):
    """SIGSTOPs the first forked worker (or its template) once it measures; kills all at GIVE_UP_S."""

    def __init__(self, before: set, target: str) -> None:
        super().__init__(daemon=True)
        self.before, self.target = before, target
        self.stopped_at: Optional[float] = None
        self.template = self.worker = 0
        self.done = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.done.is_set() and time.monotonic() - started < GIVE_UP_S:
            if self.stopped_at is None:
                for template in children() - self.before:
                    kids = _kids(template)
                    if kids:
                        self.template, self.worker = template, kids[0]
                        time.sleep(0.3)  # measuring by now
                        os.kill(self.template if self.target == "template" else self.worker, signal.SIGSTOP)
                        self.stopped_at = time.monotonic()
                        break
            time.sleep(0.02)
        if not self.done.is_set() and self.template:
            os.killpg(self.template, signal.SIGKILL)  # the fault under test: do not hang the suite


def _stalled(target: str, measure: Callable[[], object]) -> tuple:
    before = children()
    staller = _Staller(before, target)
    staller.start()
    try:
        outcome = measure()
        ended = time.monotonic()
    finally:
        staller.done.set()
        staller.join()
    assert staller.stopped_at is not None, "no worker was seen"
    return outcome, ended - staller.stopped_at, staller, before


def test_a_stopped_worker_fails_its_arm_within_seconds_and_the_run_goes_on(tmp_path) -> None:
    plan = RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=HUGE, folder=str(tmp_path),
                   execution=Execution(workers=1))
    summary, detected_s, staller, before = _stalled("worker", lambda: run_plan(plan))
    event, install = summary["arms"]
    assert event["status"] == "failed"
    assert "worker stalled: it and its children did not run for" in event["reason"]
    assert install["status"] == "ok"  # the run went on
    # "a few seconds plus the longest single wait", whatever n is (the rate arm is quick)
    bound = worker.stall_after_s(HUGE.to_dict()) + 2 * worker.HEARTBEAT_S
    print("stopped worker detected after %.2f s (bound %.1f s)" % (detected_s, bound))
    assert detected_s < bound + 15, (detected_s, bound)
    assert not _alive(staller.worker)
    assert children() - before == set()


def test_a_stopped_template_is_found_by_its_missing_heartbeat() -> None:
    request = {"protocol": 1, "arm": "event", "family": "threads", "params": HUGE.to_dict(), "conditions": Conditions().to_dict()}
    pool = workers.WorkerPool()

    def call() -> str:
        try:
            pool.call(request, workers.worker_deadline_s(HUGE))
        except workers.WorkerError as exc:
            return str(exc)
        finally:
            pool.close()
        return "replied"

    message, detected_s, staller, before = _stalled("template", call)
    assert message.startswith("worker stalled: its template sent no heartbeat for"), message
    print("stopped template detected after %.2f s" % detected_s)
    assert detected_s < workers.TEMPLATE_SILENCE_S + 15
    assert _gone_within(staller.worker, 5) and not _alive(staller.template)
    assert children() - before == set()


def test_stall_bound_covers_every_single_wait() -> None:
    params = MeasureParams(settle_us=2_000_000, settle_jitter_us=500_000, timeout_s=4.0, planted_delay_us=300_000,
                           planted_after_us=100_000, interval_us=50_000)
    # The settle's random part is a wait too: a wake may draw all of it.
    assert worker.stall_after_s(params.to_dict()) == pytest.approx(worker.STALL_GRACE_S + 2.95 + 4.0 + HANDSHAKE_SLACK_S)
    assert worker.HANDSHAKE_SLACK_S == HANDSHAKE_SLACK_S  # the template's copy of the drivers' slack
    # The backstop deadline of a latency arm no longer carries the rate arms' allowance.
    assert workers.worker_deadline_s(MeasureParams(n=10, warmup=0, settle_us=0, timeout_s=0.1)) < workers.WORKER_GRACE_S + 2


def _script(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


ENDLESS = "exec tr '\\000' x < /dev/zero"


def test_an_endless_line_from_a_worker_is_one_clear_error_in_bounded_memory(tmp_path) -> None:
    python = _script(tmp_path, "fake-python", 'case "$*" in *--serve*) %s;; esac\nexec %s "$@"' % (ENDLESS, sys.executable))
    params = MeasureParams(n=12, warmup=2, settle_us=200, install_n=300, rounds=4)
    (tmp_path / "out").mkdir()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    before = children()
    summary = run_plan(RunPlan(lab=LAB_135, arm_names=["event", "sigusr1-self"], params=params, folder=str(tmp_path / "out"),
                               execution=Execution(python=python, workers=1)))
    cap = worker.reply_cap_bytes(dataclasses.replace(params).to_dict())
    for entry in summary["arms"]:
        assert entry["status"] == "failed"
        assert entry["reason"].endswith("worker reply exceeds %d bytes (killed)" % cap), entry["reason"]
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 64 * 1024
    assert children() - before == set()


def _stdin_closed(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if not os.readlink("/proc/%d/fd/0" % pid).startswith("pipe:"):
                return True
        except OSError:
            return True
        time.sleep(0.01)
    return False


def _call_after_stdin_closed(tmp_path, body: str) -> str:
    """The request meets a template that has already closed its stdin (a broken pipe)."""
    python = _script(tmp_path, "fake-python", body)
    request = {"protocol": 1, "arm": "event", "params": MeasureParams(n=12, warmup=2).to_dict()}
    with workers.WorkerPool(python) as pool:
        proc = pool._start()
        assert _stdin_closed(proc.pid)
        started = time.monotonic()
        with pytest.raises(workers.WorkerError) as caught:
            pool.call(request, deadline_s=GIVE_UP_S)
        assert time.monotonic() - started < GIVE_UP_S / 2
        assert proc.poll() is not None
    return str(caught.value)


def test_a_template_that_stops_reading_but_writes_on_is_cut_off(tmp_path) -> None:
    # Once a broken pipe waited for the process to exit, and a template still writing never did.
    message = _call_after_stdin_closed(tmp_path, "exec 0<&-\n" + ENDLESS)
    assert message.startswith("worker reply exceeds"), message


def test_a_template_that_closes_its_pipes_but_lives_on_is_killed(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(workers, "DIED_WAIT_S", 0.5)
    message = _call_after_stdin_closed(tmp_path, "exec 0<&- 1>&-\nexec sleep 600")
    assert "did not exit" in message, message


def test_an_endless_probe_reply_is_refused(tmp_path) -> None:
    python = _script(tmp_path, "fake-python", 'case "$*" in *--probe*) %s;; esac\nexec %s "$@"' % (ENDLESS, sys.executable))
    with pytest.raises(workers.InterpreterError, match=r"reply exceeds %d bytes" % workers.PROBE_CAP_BYTES):
        workers.probe_interpreter(python)


def test_run_bounded_caps_output_and_kills_the_group_on_timeout(tmp_path) -> None:
    marker = tmp_path / "grandchild"
    with pytest.raises(workers.ChildOverflow):
        workers.run_bounded(["sh", "-c", ENDLESS], timeout_s=30, cap_bytes=10000)
    started = time.monotonic()
    with pytest.raises(workers.ChildTimeout):
        workers.run_bounded(["sh", "-c", "sleep 600 & echo $! > %s; sleep 600" % marker], timeout_s=1)
    assert time.monotonic() - started < 5
    assert _gone_within(int(marker.read_text()), 2)
    # Exited, but a grandchild still holds the pipes: the answer is not held up, the grandchild is killed.
    done = workers.run_bounded(["sh", "-c", "sleep 600 & echo $! > %s; echo hi; echo err >&2" % marker], timeout_s=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"hi\n", b"err\n")
    assert _gone_within(int(marker.read_text()), 2)


def test_interpreters_with_a_hanging_python_returns_in_time_and_leaves_nothing(tmp_path, monkeypatch, capsys) -> None:
    marker = tmp_path / "grandchild"
    sleep = shutil.which("sleep")  # PATH holds only the fake below
    _script(tmp_path, "python3.99", "%s 600 &\necho $! > %s\n%s 600" % (sleep, marker, sleep))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    monkeypatch.setenv("WAKELAB_CACHE", str(tmp_path / "no-cache"))  # nor the interpreter cache CI fills
    monkeypatch.delenv("WAKELAB_INTERPRETERS", raising=False)
    monkeypatch.setattr(interpreters, "PROBE_TIMEOUT_S", 2.0)
    assert interpreters.PROBE_TIMEOUT_S < 30  # the shipped timeout is monkeypatched only to keep this quick
    before = children()
    started = time.monotonic()
    assert cli.main(["interpreters"]) == 0
    assert time.monotonic() - started < 2.0 + 3
    assert "none found" in capsys.readouterr().out
    assert _gone_within(int(marker.read_text()), 2), "the probe's grandchild was left behind"
    assert children() - before == set()


def test_shipped_probe_timeout_is_short() -> None:
    assert interpreters.PROBE_TIMEOUT_S <= 10


@pytest.mark.parametrize("reply, why", [
    ('{"ok": false, "error": "no _thread here"}', "no _thread here"),
    ('{"ok": true}', "without the interpreter's identity"),
])
def test_a_probe_that_answers_without_an_interpreter_is_refused(tmp_path, reply, why) -> None:
    # A probe that said it failed was once taken as an interpreter with no identity and no timer floor.
    python = _script(tmp_path, "fake-python", "case \"$*\" in *--probe*) echo '%s'; exit 0;; esac\nexec %s \"$@\""
                     % (reply, sys.executable))
    with pytest.raises(workers.InterpreterError, match="cannot run wakelab's measuring code: .*" + why):
        workers.probe_interpreter(python)
