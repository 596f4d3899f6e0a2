"""Python frames in a traced wake (``wakelab run --trace-frames``): harness/frames.py (which
interpreters can publish them, the trampoline switched on and off, perf's call chains read) and
analysis/frames.py (samples counted by call path in each wake's notify path and own work).

Exact on made-up samples; then for real on an interpreter that can (CPython 3.12+ with frame
pointers: the provisioned 3.15), skipped with the reason where none is found or perf cannot
record; and the one line an interpreter that cannot gets.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, Optional

import pytest

from wakelab.analysis import frames as af
from wakelab.harness import frames as hf
from wakelab.harness import trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W, N = 200, 100


def sample(t: int, tid: int, *python: str) -> hf.FrameSample:
    return hf.FrameSample(t, tid, 99, tuple(python))


def test_a_call_chain_keeps_its_python_frames_innermost_first() -> None:
    stack = [
        "\t    ffffffff82258a08 __schedule ([kernel.kallsyms])",
        "\t          2879e0 introselect_<npy::double_tag, false, double> (/usr/lib/numpy.so)",
        "\t    7f0000001000 py::Condition.wait:/usr/lib/python3.15/threading.py+0xa (/tmp/perf-99.map)",
        "\t    7f0000002000 py::Event.wait:/usr/lib/python3.15/threading.py+0xa (/tmp/perf-99.map)",
        "\t          1702b1 [unknown] (/usr/bin/python3.15)",
    ]
    assert hf.parse_stack(stack) == ("Condition.wait", "Event.wait")  # not npy::double_tag
    assert hf.python_frame("py::<module>:/tmp/x.py+0xa") == "<module>"
    assert hf.python_frame("PyEval_EvalFrameDefault") is None


def test_perf_script_samples_are_filed_by_thread_beside_the_events() -> None:
    lines = [
        "  100/200 [001]  10.000001000: cpu-clock/freq=20000,call-graph=fp/: ",
        "\t    7f0000001000 py::Condition.wait:/x/threading.py+0xa (/tmp/perf-100.map)",
        "",
        "  555/555 [000]  10.000002000: cpu-clock/freq=20000,call-graph=fp/: ",
        "\t    7f0000001000 py::other:/x/y.py+0xa (/tmp/perf-555.map)",
        "",
        "  100/200 [001]  10.000003000:                 sched:sched_switch: prev_comm=python prev_pid=200 prev_prio=120 "
        "prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
        "  100/200 [001]  10.000004000: cpu-clock/freq=20000,call-graph=fp/: ",
    ]
    samples: Dict[int, list] = {}
    events = trace.parse_script(lines, {200}, None, samples)
    assert [e.kind for e in events[200]] == ["switch"]
    assert samples == {200: [hf.FrameSample(10_000_001_000, 200, 100, ("Condition.wait",)),
                             hf.FrameSample(10_000_004_000, 200, 100, ())]}
    assert trace.parse_script(lines, {200}) == events  # without frames asked for, the samples are read past


def test_samples_count_in_each_wakes_notify_path_and_own_work() -> None:
    t0s, lat, notify = [1_000, 10_000], [500, 800], [100, 300]
    taken = {
        W: [sample(900, W, "X"), sample(1_200, W, "Condition.wait", "Event.wait", "stamped_wait", "waiter"),
            sample(1_500, W), sample(10_400, W, "Condition.wait", "Event.wait", "stamped_wait"), sample(11_000, W, "Y")],
        N: [sample(1_050, N, "Condition.notify", "Event.set"), sample(1_200, N, "after"),
            sample(10_200, N, "Condition.notify", "Event.set")],
    }
    counts: Dict[str, Dict[str, int]] = {}
    af.count_frames(taken, W, N, t0s, lat, notify, counts)
    assert counts == {
        "interpreter": {"stamped_wait -> Event.wait -> Condition.wait": 2, af.NO_PYTHON: 1},
        "notify": {"Event.set -> Condition.notify": 2},
    }
    summary = af.summarize_frames(counts, 20000)
    assert summary["samples"] == {"notify": 2, "interpreter": 3}
    assert summary["top"]["interpreter"][0] == {"path": "stamped_wait -> Event.wait -> Condition.wait", "samples": 2,
                                                "share": 2 / 3}
    assert af.FrameRecord.from_dict(summary).line() == (
        "python frames (20000 Hz, 3 own work and 2 notify samples): own work: stamped_wait -> Event.wait -> "
        "Condition.wait 67%, (no Python frame) 33%; notify: Event.set -> Condition.notify 100%")
    assert af.FrameRecord.from_dict(af.not_sampled("CPython 3.11.7 cannot")).line() == "python frames: not sampled: CPython 3.11.7 cannot"


def test_which_interpreters_can_publish_their_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    import sysconfig

    reason = hf.why_no_frames()
    if sys.version_info < (3, 12):
        assert reason is not None and "3.12" in reason and "\n" not in reason
    monkeypatch.setattr(sys, "activate_stack_trampoline", lambda kind: None, raising=False)
    monkeypatch.setattr(sysconfig, "get_config_var", lambda key: "-O3 -Wall")
    assert "without frame pointers" in (hf.why_no_frames() or "")
    monkeypatch.setattr(sysconfig, "get_config_var", lambda key: "-O2 -fno-omit-frame-pointer")
    assert hf.why_no_frames() is None if sys.implementation.name == "cpython" else True


def test_the_trampoline_is_switched_on_for_the_block_and_off_after() -> None:
    with hf.published_frames(False) as reason:
        assert reason is None
    active = getattr(sys, "is_stack_trampoline_active", None)
    with hf.published_frames(True) as reason:
        if reason is None:
            assert active is not None and active()
        else:
            assert hf.why_no_frames() == reason
    if active is not None:
        assert not active()
        hf.remove_maps([os.getpid()])
    assert not os.path.exists(hf.MAP_PATH % os.getpid()) or active is None


# -- with the real kernel, on an interpreter that can -------------------------------------------


def _python_with_frames() -> Optional[str]:
    from wakelab.harness.interpreters import discover

    probe = "import sys; sys.path.insert(0, %r); from wakelab.harness.frames import why_no_frames; print(why_no_frames())" % (
        os.path.join(ROOT, "src"))
    for found in sorted(discover(), key=lambda i: i.version, reverse=True):
        if found.implementation != "cpython" or tuple(found.version[:2]) < (3, 12) or found.free_threaded:
            continue
        done = subprocess.run([found.path, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
        if done.returncode == 0 and done.stdout.strip() == "None":
            return found.path
    return None


@pytest.mark.slow
def test_a_traced_run_splits_the_notify_path_by_python_function(tmp_path) -> None:
    reason = trace.precheck()
    if reason:
        pytest.skip(reason)
    python = _python_with_frames()
    if python is None:
        pytest.skip("no CPython 3.12+ built with frame pointers found here (.ci/provision-pythons provides 3.15)")
    folder = tmp_path / "run"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    done = subprocess.run([sys.executable, "-m", "wakelab", "run", "--python", python, "--arms", "event", "--n", "200",
                           "--trace-frames", "-o", str(folder), "--no-history", "-q", "--full"],
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    from wakelab.evidence.load import load_summary

    (entry,) = [a for a in load_summary(str(folder))["arms"] if a["name"] == "event"]
    frames = entry["trace"]["frames"]
    assert frames["sampled"] is True, frames
    notify = [p["path"] for p in frames["top"]["notify"]]
    assert frames["samples"]["notify"] > 0 and any("Event.set" in path for path in notify), frames
    assert "python frames (" in done.stdout
    leftover = [name for name in os.listdir("/tmp") if name.startswith("perf-") and name.endswith(".map")
                and name[5:-4] in {str(w.get("pid")) for w in entry.get("workers") or []}]
    assert not leftover


@pytest.mark.slow
def test_an_interpreter_that_cannot_says_why_in_one_line(tmp_path) -> None:
    reason = trace.precheck()
    if reason:
        pytest.skip(reason)
    if hf.why_no_frames() is None:
        pytest.skip("this interpreter can publish its frames")
    from wakelab.core.model import MeasureParams
    from wakelab.evidence.load import load_summary
    from wakelab.harness.runner import Execution, RunPlan, run_plan
    from wakelab.labs import LAB_135

    plan = RunPlan(lab=LAB_135, arm_names=["event"], params=MeasureParams(n=30, warmup=3, settle_us=500),
                   folder=str(tmp_path), command=["test"], execution=Execution(workers=1, trace=True, trace_frames=True))
    run_plan(plan)
    (entry,) = load_summary(str(tmp_path))["arms"]
    frames = entry["trace"]["frames"]
    assert frames == {"sampled": False, "reason": hf.why_no_frames()}
    assert af.FrameRecord.from_dict(frames).line() == "python frames: not sampled: " + str(hf.why_no_frames())
