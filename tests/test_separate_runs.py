"""compare of two separate runs: what differed besides the code, level shifts from the history, and
the gate's "not an A/B".

The arithmetic (tell_apart, level_shifts, widen) is tested on exact figures; the command on real
runs, the second with a process spinning beside it, which it must name.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

import pytest

from wakelab.analysis import run_conditions
from wakelab.analysis.compare import ArmComparison, Judgement, RatioCI
from wakelab.evidence.model import Bundle
from wakelab.history import ArmPoint, RunFacts, figure_conditions
from wakelab.history.rows import ArmRow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
SPIN = "import time\nend = time.monotonic() + %f\nwhile time.monotonic() < end:\n    pass\n"


def summary(**changes: Any) -> Dict[str, Any]:
    doc: Dict[str, Any] = {
        "started_utc": "2026-12-03T10:00:00Z", "finished_utc": "2026-12-03T10:00:20Z",
        "parameters": {"placement": "any", "settle_us": 1000, "mode": "closed"},
        "execution": {"mode": "workers", "repeat": 5},
        "conditions": {"cpu_threads": 0, "cpu_procs": 0, "idle_hold": False},
        "interpreter": {"implementation": "CPython", "version": "3.11.7", "build": "main", "compiler": "GCC",
                        "executable": "/usr/bin/python3"},
        "machine": {"hostname": "vm", "cpu_model": "Xeon", "kernel": "6.1"},
        "system": {"cpuidle_governor": "haltpoll", "idle_states": [{"name": "POLL", "disabled": False}],
                   "cpufreq_governor": None, "load_average": [0.2, 0.2, 0.2]},
        "observed": {"start": {"load_average": [0.2, 0.2, 0.2], "cpu_mhz": None, "cpufreq_governors": None,
                               "idle_disabled": {"0": [], "1": []}},
                     "end": {"load_average": [0.3, 0.2, 0.2], "cpu_mhz": None, "cpufreq_governors": None,
                             "idle_disabled": {"0": [], "1": []}},
                     "cpu_busy": {"0": 0.3, "1": 0.2}, "busy_processes": []},
    }
    for key, value in changes.items():
        doc[key] = value
    return doc


def bundle(doc: Dict[str, Any], label: str, folder: str = "/nowhere") -> Bundle:
    return Bundle(source=folder, folder=folder + "/" + label, summary=doc, label=label)


# ----------------------------------------------------------------------------------------------
# Telling two runs apart


def test_a_busy_process_and_the_load_it_brought_are_named_and_the_rest_is_alike() -> None:
    quiet = summary()
    busy = summary(started_utc="2026-12-03T10:05:20Z", finished_utc="2026-12-03T10:05:40Z")
    busy["observed"] = copy.deepcopy(busy["observed"])
    busy["observed"]["end"]["load_average"] = [1.4, 0.5, 0.3]
    busy["observed"]["cpu_busy"] = {"0": 0.9, "1": 1.0}
    busy["observed"]["busy_processes"] = [{"pid": 4242, "name": "burn", "cpu_share": 0.98, "started_during_run": True}]
    told = run_conditions.tell_apart(bundle(quiet, "A"), bundle(busy, "B"))
    assert told.gap_s == 300
    differing = {c.name: c for c in told.differing}
    assert set(differing) == {"load average (1 min)", "busy processes"}
    assert differing["load average (1 min)"].other == "0.20 at the start, 1.40 at the end"
    assert differing["busy processes"].baseline.startswith("none besides the run's own")
    assert differing["busy processes"].other.startswith("burn (pid 4242) 98% of a CPU, started during the run")
    assert {"idle states", "placement", "interpreter build", "machine"} <= set(told.alike)
    assert {"CPU frequency", "CPU frequency governor"} <= set(told.unknown)  # none readable in either
    assert told.to_dict()["advice"].startswith("for a gate, measure both in one run")


def test_frequency_governors_and_disabled_idle_states_are_read_from_both_readings() -> None:
    quiet = summary()
    quiet["observed"] = copy.deepcopy(quiet["observed"])
    quiet["observed"]["start"]["cpu_mhz"] = {"0": 2400.0, "1": 2400.0}
    slow = summary(started_utc="2026-12-03T10:05:20Z", finished_utc="2026-12-03T10:05:40Z")
    slow["observed"] = copy.deepcopy(slow["observed"])
    for part, mhz in (("start", {"0": 2400.0, "1": 2600}), ("end", {"0": 1200.0, "1": 1400.0})):
        slow["observed"][part]["cpu_mhz"] = mhz
        slow["observed"][part]["cpufreq_governors"] = {"0": "powersave", "1": "performance"}
    slow["observed"]["end"]["idle_disabled"] = {"1": ["C6", "C3"], "0": []}
    told = {c.name: c for c in run_conditions.tell_apart(bundle(quiet, "A"), bundle(slow, "B")).conditions}
    frequency, governor, idle = told["CPU frequency"], told["CPU frequency governor"], told["idle states"]
    assert (frequency.baseline, frequency.other, frequency.differs) == (
        "2400 MHz (mean of the CPUs at start and end)", "1900 MHz (mean of the CPUs at start and end)", True)
    assert (governor.baseline, governor.other) == ("not recorded", "performance, powersave")
    assert idle.other == "governor haltpoll; states POLL; disabled on CPU 1: C6, C3" and idle.differs is True


def test_an_older_bundle_says_not_recorded_never_none() -> None:
    old = summary()
    del old["observed"]
    told = run_conditions.tell_apart(bundle(old, "A"), bundle(summary(), "B"))
    conditions = {c.name: c for c in told.conditions}
    assert conditions["busy processes"].baseline == "not recorded" and conditions["busy processes"].differs is None
    assert conditions["load average (1 min)"].baseline == "0.20 at the start, not recorded at the end"


def test_a_section_recorded_empty_is_read_and_an_absent_one_is_not_recorded() -> None:
    empty, absent = summary(system={}, machine={}), summary()
    del absent["system"], absent["machine"]
    told = {c.name: c for c in run_conditions.tell_apart(bundle(empty, "A"), bundle(absent, "B")).conditions}
    assert (told["idle states"].baseline, told["idle states"].other) == ("governor none", "not recorded")
    assert (told["machine"].baseline, told["machine"].other) == ("None, None, kernel None", "not recorded")


def test_cells_of_one_grid_and_copies_of_one_run_are_not_separate(tmp_path) -> None:
    grid = tmp_path / "grid"
    (grid / "cells" / "a").mkdir(parents=True)
    (grid / "cells" / "b").mkdir(parents=True)
    (grid / "matrix.json").write_text("{}", encoding="utf-8")
    a = Bundle(source="a", folder=str(grid / "cells" / "a"), summary={"run_id": "1"}, label="a")
    b = Bundle(source="b", folder=str(grid / "cells" / "b"), summary={"run_id": "2"}, label="b")
    other = Bundle(source="c", folder=str(tmp_path / "run"), summary={"run_id": "3"}, label="c")
    copied = Bundle(source="d", folder=str(tmp_path / "copy"), summary={"run_id": "3"}, label="d")
    assert run_conditions.are_separate(a, b) is False
    assert run_conditions.are_separate(a, other) is True
    assert run_conditions.are_separate(other, copied) is False  # a copy of one run is that run


# ----------------------------------------------------------------------------------------------
# Level shifts from identical earlier runs


def point(doc: Dict[str, Any], started: str, p50_ns: float, **changes: Any) -> ArmPoint:
    facts = RunFacts(
        started_utc=started, lab_id="135", folder="/h/%s" % started, implementation="CPython", python_version="3.11.7",
        free_threaded=False, gil_enabled=True, hostname="vm", cpu_model="Xeon", cpu_count=None, kernel="6.1", architecture=None,
        machine_id=None, conditions=None, figure_conditions=figure_conditions(Bundle("", "", doc)), imported_from=None,
    )
    figures = ArmRow(position=0, arm="event", family="threads", kind="latency", waiter="blocked", scope="cross-thread", n=200,
                     lost=0, p50_ns=p50_ns, p90_ns=None, p99_ns=None, p99_9_ns=None, max_ns=None, mean_ns=None, ops_per_s=None,
                     status="ok")
    of = {f.name for f in dataclasses.fields(RunFacts)}
    facts = dataclasses.replace(facts, **{k: v for k, v in changes.items() if k in of})
    figures = dataclasses.replace(figures, **{k: v for k, v in changes.items() if k not in of})
    return ArmPoint(facts=facts, run_id=1, figures=figures)


def arm(low: float, high: float, ratio: float = 1.2) -> ArmComparison:
    ci = RatioCI(q=50.0, baseline=10000.0, other=10000.0 * ratio, ratio=ratio, low=low, high=high, confidence=0.95,
                 resamples=2000)
    judged = Judgement("p50", ci, "slower", 5.0, 10.0)
    return ArmComparison(name="event", kind="latency", waiter="blocked", scope="cross-thread", n_baseline=200,
                         n_other=200, lost_baseline=0, lost_other=0, ratios={"p50": ci}, test=None, verdict="slower",
                         judgements={"p50": judged})


def test_the_interval_is_widened_to_the_run_to_run_shift_of_identical_earlier_runs() -> None:
    doc = summary()
    a, b = bundle(doc, "A"), bundle(summary(started_utc="2026-12-03T11:00:00Z"), "B")
    levels = [10000.0, 14000.0, 9000.0, 16000.0]
    points = [point(doc, "2026-12-02T0%d:00:00Z" % i, v) for i, v in enumerate(levels)]
    points += [
        point(doc, "2026-12-04T00:00:00Z", 90000.0),  # after both runs: not an earlier run
        point(doc, "2026-12-02T09:00:00Z", 90000.0, hostname="elsewhere"),  # another machine
        point(doc, "2026-12-02T10:00:00Z", 90000.0, figure_conditions=dataclasses.replace(figure_conditions(Bundle("", "", doc)), placement="same")),
        point(doc, "2026-12-02T11:00:00Z", 90000.0, status="failed"),
        point(doc, "2026-12-02T12:00:00Z", 90000.0, arm="pipe"),
    ]
    shifts = run_conditions.level_shifts(points, a, b, "event")
    assert shifts.runs == 4
    s = statistics.stdev(math.log(v) for v in levels)
    assert shifts.log_sd["p50"] == pytest.approx(s)

    narrow = arm(1.15, 1.25)
    widened = run_conditions.widen(narrow, shifts, 0.05, 5.0)
    ci = widened.ratios["p50"]
    z = statistics.NormalDist().inv_cdf(0.975)
    centre = (math.log(1.15) + math.log(1.25)) / 2
    assert math.log(ci.high) - centre == pytest.approx(z * math.sqrt(2) * s)
    assert centre - math.log(ci.low) == pytest.approx(z * math.sqrt(2) * s)
    assert widened.verdict == "cannot tell" and widened.judgements["p50"].verdict == "cannot tell"
    assert "shift ±" in widened.notes[-1] and "intervals widened" in widened.notes[-1]

    # An interval wider than the shifts stays as it was; so does one with too few earlier runs.
    wide = arm(0.5, 3.0)
    assert run_conditions.widen(wide, shifts, 0.05, 5.0).ratios["p50"] == wide.ratios["p50"]
    few = run_conditions.level_shifts(points[:2], a, b, "event")
    assert few.log_sd == {} and few.runs == 2
    kept = run_conditions.widen(narrow, few, 0.05, 5.0)
    assert kept.ratios == narrow.ratios and kept.verdict == "slower"
    assert kept.notes[-1] == run_conditions.NOT_WIDENED


# ----------------------------------------------------------------------------------------------
# The command, on real runs


def wakelab(*argv: str, env: Dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wakelab", *argv], env=env, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Dict[str, Any]:
    """A quiet run, then one with a process (not the run's own) spinning beside it."""
    tmp = str(tmp_path_factory.mktemp("separate"))
    env = dict(os.environ, PYTHONPATH=SRC, WAKELAB_HISTORY=os.path.join(tmp, "history.sqlite3"))
    quick = ["--arms", "event", "-n", "60", "--repeat", "2", "--workers", "2", "-q"]
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    assert wakelab("run", *quick, "-o", a, env=env).returncode == 0
    spinner = subprocess.run(["sh", "-c", '%s -c "$0" >/dev/null 2>&1 & echo $!' % sys.executable, SPIN % 30],
                             capture_output=True, text=True, check=True)
    pid = int(spinner.stdout)
    try:
        time.sleep(0.3)
        assert wakelab("run", *quick, "-o", b, env=env).returncode == 0
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"a": a, "b": b, "env": env, "pid": pid, "tmp": tmp}


def test_compare_of_separate_runs_names_the_busy_process_and_the_gate_says_it_is_no_ab(two_runs) -> None:
    result = wakelab("compare", two_runs["a"], two_runs["b"], "--fail-on-regression", "10", env=two_runs["env"])
    assert result.returncode in (0, 1), result.stderr
    text = result.stdout
    assert "separate runs" in text and "(not an A/B" in text
    [busy] = [line for line in text.splitlines() if "differed: busy processes" in line]
    assert "(pid %d)" % two_runs["pid"] in busy.split("; B ", 1)[1]  # B saw it (A may have seen others' work)
    assert "not an A/B: A and B are separate runs" in text and "wakelab ab BASE HEAD" in text
    # Each run's history made the other's "earlier runs" too few: said, not hidden.
    assert run_conditions.NOT_WIDENED in " ".join(text.split())

    doc = json.loads(wakelab("compare", two_runs["a"], two_runs["b"], "--fail-on-regression", "10", "--json",
                             env=two_runs["env"]).stdout)
    told = doc["separate_runs"]["B"]
    assert "busy processes" in [c["name"] for c in told["differing"]]
    assert doc["regression_check"]["not_an_ab"].startswith("not an A/B")


def test_identical_earlier_runs_in_the_history_widen_the_interval(two_runs) -> None:
    """Three earlier runs recorded with the same conditions and machine as A, their p50s 25x apart: a shift
    far wider than the interval of two tiny runs even on a loaded machine (at 2x apart the plain interval
    was once wider already, and nothing was widened)."""
    from wakelab import history

    db = os.path.join(two_runs["tmp"], "shifts.sqlite3")
    with open(os.path.join(two_runs["a"], "summary.json"), encoding="utf-8") as fh:
        base = json.load(fh)
    for i, scale in enumerate((0.2, 1.0, 5.0)):
        earlier = copy.deepcopy(base)
        earlier["run_id"] = "earlier%d" % i
        earlier["started_utc"] = "2026-01-0%dT00:00:00Z" % (i + 1)
        for entry in earlier["arms"]:
            entry["latency"]["p50_ns"] *= scale
            entry["latency"]["p99_ns"] = (entry["latency"].get("p99_ns") or 1000.0) * scale
        folder = os.path.join(two_runs["tmp"], "earlier%d" % i)
        history.record_run(Bundle(folder, folder, earlier), db)

    def p50(*extra: str) -> Dict[str, Any]:
        out = wakelab("compare", two_runs["a"], two_runs["b"], "--json", *extra, env=two_runs["env"])
        assert out.returncode == 0, out.stderr
        [arm_doc] = json.loads(out.stdout)["comparisons"][0]["arms"]
        return dict(arm_doc["ratios"]["p50"], notes=arm_doc["notes"])

    plain, widened = p50("--no-history"), p50("--history", db)
    assert math.log(widened["ci_high"] / widened["ci_low"]) > math.log(plain["ci_high"] / plain["ci_low"])
    assert widened["ratio"] == plain["ratio"]
    assert any("3 identical earlier runs of event in the history shift" in n for n in widened["notes"])
    assert run_conditions.NO_HISTORY in plain["notes"]


def test_compare_of_a_grid_is_not_separate_runs(tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=SRC, WAKELAB_HISTORY=str(tmp_path / "h.sqlite3"))
    folder = str(tmp_path / "grid")
    made = wakelab("run", "--arms", "event", "-n", "30", "--repeat", "2", "--workers", "2", "--settle-us", "200,201",
                   "-q", "-o", folder, env=env)
    assert made.returncode == 0, made.stderr
    result = wakelab("compare", folder, "--fail-on-regression", "1000", env=env)
    assert result.returncode == 0, result.stderr
    assert "separate runs" not in result.stdout and "not an A/B" not in result.stdout
    lines: List[str] = json.loads(wakelab("compare", folder, "--json", env=env).stdout).keys()  # type: ignore[assignment]
    assert "separate_runs" not in lines
