"""Worker processes: protocol, pooling, and every way a worker can fail."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import children
from wakelab.core.model import MeasureParams, RawLatency, RawRate, raw_from_dict, raw_to_dict
from wakelab.harness import worker, workers
from wakelab.harness.conditions import Conditions
from wakelab.harness.runner import Execution, RunPlan, run_plan
from wakelab.labs import LAB_135

SMALL = MeasureParams(n=12, warmup=2, settle_us=200, install_n=300, rounds=4)


def _fake_python(tmp_path, body: str) -> str:
    """An executable that answers --probe like the real interpreter but misbehaves otherwise."""
    path = tmp_path / "fake-python"
    path.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = "--probe" ] && exec %s "$@"; done\n'
        'case "$*" in *-c*) exec %s "$@";; esac\n'
        "%s\n" % (sys.executable, sys.executable, body)
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_split_counts() -> None:
    assert workers.split_counts(200, 3) == [67, 67, 66]
    assert workers.split_counts(2, 3) == [1, 1]
    assert workers.split_counts(7, 1) == [7]


def test_raw_round_trip() -> None:
    latency = RawLatency(samples_ns=(3, 4), lost=1, warmup_discarded=2, components_ns={"x": (1,)}, info={"a": 1})
    assert raw_from_dict(json.loads(json.dumps(raw_to_dict(latency)))) == latency
    rate = RawRate(n_per_round=10, round_ns=(5,), baseline_round_ns=(1,), warmup_rounds=1)
    assert raw_from_dict(raw_to_dict(rate)) == rate
    for bad in ({"kind": "latency", "samples_ns": [1.5], "lost": 0, "warmup_discarded": 0}, {"kind": "x"}, []):
        with pytest.raises(ValueError):
            raw_from_dict(bad)  # type: ignore[arg-type]


def test_workers_split_and_pool_the_wakes(clean_state) -> None:
    results = workers.run_workers("event", SMALL, Conditions(), workers=3)
    assert [len(r.raw.samples_ns) for r in results] == [4, 4, 4]
    assert len({r.pid for r in results}) == 3 and os.getpid() not in {r.pid for r in results}
    pooled = workers.pool_raws([r.raw for r in results])
    assert len(pooled.samples_ns) == 12 and pooled.warmup_discarded == 6


def test_rate_arm_splits_rounds() -> None:
    results = workers.run_workers("signal-install", SMALL, Conditions(), workers=3)
    assert [len(r.raw.round_ns) for r in results] == [2, 1, 1]
    assert len(workers.pool_raws([r.raw for r in results]).round_ns) == 4


def test_worker_applies_conditions() -> None:
    conditions = Conditions(cpu_threads=2, switch_interval_s=0.002)
    (result,) = workers.run_workers("event", SMALL, conditions, workers=1)
    assert result.applied["cpu_threads"] == 2
    assert result.applied["switch_interval_s"] == pytest.approx(0.002)


def test_worker_keeps_stdout_clean_of_arm_output() -> None:
    # The reply goes to the saved stdout; anything printed lands on stderr.
    code = "import sys; sys.path[:0] = [%r]; import wakelab.harness.worker as w; print('noise')" % workers.package_parent()
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True)
    assert out.stdout == "noise\n"  # plain run: sanity of the check itself
    request = json.dumps({"protocol": 1, "arm": "event", "family": "threads", "params": SMALL.to_dict(), "conditions": {}})
    reply = subprocess.run(
        [sys.executable, "-S", "-m", "wakelab.harness.worker"], input=request, capture_output=True, text=True,
        env=workers.worker_env(), timeout=120,
    )
    assert json.loads(reply.stdout)["ok"] is True


@pytest.mark.parametrize(
    "body, message",
    [
        ("echo 'this is not json'", "something that is not a reply (this is not json)"),
        ("echo boom >&2; exit 3", "exited with status 3 without a valid reply (boom)"),
        ("kill -SEGV $$", "killed by signal 11"),
    ],
)
def test_broken_worker_fails_the_arm_not_the_run(tmp_path, body, message) -> None:
    python = _fake_python(tmp_path, body)
    plan = RunPlan(lab=LAB_135, arm_names=["event", "sigusr1-self"], params=SMALL, folder=str(tmp_path),
                   execution=Execution(python=python, workers=2))
    summary = run_plan(plan)
    for entry in summary["arms"]:
        assert entry["status"] == "failed"
        assert message in entry["reason"]
    assert summary["complete"] is False


def test_hung_worker_is_killed_with_its_children(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(workers, "WORKER_GRACE_S", 1.0)
    marker = tmp_path / "grandchild.pid"
    python = _fake_python(tmp_path, "sleep 600 & echo $! > %s; wait" % marker)
    before = children()
    params = dataclasses.replace(SMALL, n=1, warmup=0, timeout_s=0.05, settle_us=0)
    plan = RunPlan(lab=LAB_135, arm_names=["event"], params=params, folder=str(tmp_path), execution=Execution(python=python, workers=1))
    started = time.monotonic()
    summary = run_plan(plan)
    assert time.monotonic() - started < 60
    assert summary["arms"][0]["status"] == "failed"
    assert "worker hung" in summary["arms"][0]["reason"]
    grandchild = int(marker.read_text())
    deadline = time.monotonic() + 5
    while os.path.exists("/proc/%d" % grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists("/proc/%d" % grandchild), "the worker's child outlived it"
    assert children() - before == set()


def test_probe_rejects_what_cannot_measure(tmp_path) -> None:
    with pytest.raises(workers.InterpreterError, match="does not exist"):
        workers.probe_interpreter(str(tmp_path / "nope"))
    not_python = tmp_path / "not-python"
    not_python.write_text("#!/bin/sh\nexit 1\n")
    not_python.chmod(0o755)
    with pytest.raises(workers.InterpreterError, match="does not run as a Python interpreter"):
        workers.probe_interpreter(str(not_python))
    old = tmp_path / "old-python"
    old.write_text("#!/bin/sh\necho 3.8\n")
    old.chmod(0o755)
    with pytest.raises(workers.InterpreterError, match="is Python 3.8; the measuring code needs 3.9 or newer"):
        workers.probe_interpreter(str(old))


def test_run_in_workers_records_execution_and_spread(tmp_path) -> None:
    summary = run_plan(RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=SMALL, folder=str(tmp_path),
                               execution=Execution(workers=3)))
    assert summary["execution"]["mode"] == "workers" and summary["execution"]["workers"] == 3
    event, install = summary["arms"]
    assert len(event["workers"]) == 3 and sum(w["n"] for w in event["workers"]) == 12
    assert event["spread"]["of"] == "p50_ns" and event["spread"]["max_over_min"] >= 1
    assert install["spread"]["of"] == "ops_per_s"
    assert summary["timer"]["harness"]["per_sample_ns"] > 0


class _ReplyingPool:
    """A stand-in worker template that answers every request with ``raw``."""

    def __init__(self, raw) -> None:  # type: ignore[no-untyped-def]
        self.raw = raw
        self.requests: list = []

    def call(self, request, deadline_s):  # type: ignore[no-untyped-def]
        self.requests.append(request)
        return workers.Reply(ok=True, raw=raw_to_dict(self.raw), pid=1)


def test_a_request_is_written_and_read_as_one_record() -> None:
    request = worker.Request("event", "threads", SMALL.to_dict(), {}, {"source": "file"}, True, False)
    assert worker.Request.read(json.loads(json.dumps(request.to_dict()))) == request
    with pytest.raises(ValueError, match="worker protocol 2, expected 1"):
        worker.Request.read(dict(request.to_dict(), protocol=2))
    with pytest.raises(ValueError, match="params and conditions must be objects"):
        worker.Request.read(dict(request.to_dict(), params=[1]))


def test_a_reply_is_read_once_into_its_record() -> None:
    assert workers._parse_reply(b"[1]\n") is None and workers._parse_reply(b'{"error": "x"}\n') is None
    odd = workers._parse_reply(b'{"ok": false, "error": "HarnessError: x", "interpreter": [], "pid": "7"}\n')
    assert odd == workers.Reply(ok=False, error="HarnessError: x")
    full = workers._parse_reply(json.dumps({"ok": True, "unavailable": "no", "raw": {"kind": "latency"}, "interpreter": {"a": 1},
                                            "timer": {"t": 2}, "pid": 7}).encode())
    assert full == workers.Reply(True, None, "no", {"kind": "latency"}, {"a": 1}, {}, {"t": 2}, 7)


def test_check_raw_names_what_is_missing() -> None:
    params = MeasureParams(n=200, install_n=300, rounds=4)
    assert workers.check_raw(RawLatency(samples_ns=(1,) * 198, lost=2, warmup_discarded=10), params, "latency") is None
    assert workers.check_raw(RawLatency(samples_ns=(1, 2), lost=0, warmup_discarded=10), params, "latency") == (
        "returned 2 of 200 counted wakes (2 samples + 0 lost)")
    assert workers.check_raw(RawLatency(samples_ns=(1,) * 199 + (-5,), lost=0, warmup_discarded=0), params, "latency") == (
        "returned 1 negative samples (t1 before t0)")
    rate = RawRate(n_per_round=300, round_ns=(5,) * 4, baseline_round_ns=(1,) * 4, warmup_rounds=1)
    assert workers.check_raw(rate, params, "rate") is None
    assert workers.check_raw(dataclasses.replace(rate, round_ns=(5,) * 3, baseline_round_ns=(1,) * 3), params, "rate") == (
        "returned 3 of 4 counted rounds")
    assert workers.check_raw(dataclasses.replace(rate, n_per_round=30), params, "rate") == "returned rounds of 30 calls, 300 asked for"
    assert workers.check_raw(dataclasses.replace(rate, baseline_round_ns=(1,)), params, "rate") == (
        "returned 1 empty-loop rounds for 4 rounds")
    assert workers.check_raw(rate, params, "latency") == "returned a rate record for a latency arm"


def test_a_short_worker_reply_is_an_arm_failure() -> None:
    pool = _ReplyingPool(RawLatency(samples_ns=(5, 6), lost=0, warmup_discarded=2))
    with pytest.raises(workers.IncompleteReply, match=r"^worker 1 of 3 returned 2 of 4 counted wakes \(2 samples \+ 0 lost\)$"):
        workers.run_workers("event", SMALL, Conditions(), workers=3, pool=pool)  # type: ignore[arg-type]
    assert len(pool.requests) == 1
    full = _ReplyingPool(RawLatency(samples_ns=(5, 6, 7), lost=1, warmup_discarded=2))
    assert len(workers.run_workers("event", SMALL, Conditions(), workers=3, pool=full)) == 3  # type: ignore[arg-type]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_die_with_parent_sets_the_death_signal_and_checks_the_parent() -> None:
    code = (
        "import ctypes, os, signal, sys\n"
        "sys.path[:0] = [%r]\n"
        "from wakelab.harness.worker import die_with_parent\n"
        "assert die_with_parent(signal.SIGTERM, os.getppid()) is True\n"
        "got = ctypes.c_int()\n"
        "assert ctypes.CDLL(None).prctl(2, ctypes.byref(got), 0, 0, 0) == 0  # PR_GET_PDEATHSIG\n"
        "assert die_with_parent(signal.SIGKILL, os.getppid() + 1) is False  # re-parented: the parent is gone\n"
        "print(got.value)\n"
    ) % workers.package_parent()
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "%d\n" % signal.SIGTERM), result.stderr


def test_workers_are_told_this_process_as_their_parent(monkeypatch) -> None:
    started = []
    real_popen = subprocess.Popen

    def popen(args, **kwargs):  # type: ignore[no-untyped-def]
        started.append(list(args))
        return real_popen(args, **kwargs)

    monkeypatch.setattr(workers.subprocess, "Popen", popen)
    workers.run_workers("event", SMALL, Conditions(), workers=1)
    assert started[0][-3:] == ["--parent-pid", str(os.getpid()), "--serve"]
