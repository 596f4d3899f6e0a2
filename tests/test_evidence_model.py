"""The typed evidence model: one bundle type that compare, report and export all read."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from wakelab.errors import EvidenceError
from wakelab.evidence.bundle import dumps
from wakelab.evidence.model import ArmRecord, Bundle, Interpreter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED = os.path.join(ROOT, "lab-evidence", "135-signal-vs-event-wakeup", "results")


def test_committed_bundle_loads_into_typed_records() -> None:
    bundle = Bundle.load(COMMITTED)
    with open(os.path.join(COMMITTED, "summary.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    assert bundle.lab_id == doc["lab"]["id"]
    assert bundle.complete is doc["complete"]
    arms = bundle.arms_by_name()
    assert list(arms) == [a["name"] for a in doc["arms"]]
    event = arms["event"]
    assert event.latency is not None and event.rate is None and event.measured
    assert event.latency.p50_ns == doc["arms"][0]["latency"]["p50_ns"]
    assert event.latency.p99_ns == doc["arms"][0]["latency"]["p99_ns"]
    install = arms["signal-install"]
    assert install.rate is not None and install.rate.ops_per_s == [a for a in doc["arms"] if a["name"] == "signal-install"][0]["rate"]["ops_per_s"]
    samples = bundle.latency_samples(event)
    assert len(samples.samples_ns) == event.latency.n


def test_a_bundle_dumps_itself_as_the_runner_wrote_it() -> None:
    bundle = Bundle.load(COMMITTED)
    with open(os.path.join(COMMITTED, "summary.json"), encoding="utf-8") as fh:
        assert dumps(bundle.summary) == fh.read()


def test_samples_that_disagree_with_the_summary_are_refused(tmp_path) -> None:
    copy = str(tmp_path / "run")
    shutil.copytree(COMMITTED, copy)
    path = os.path.join(copy, "samples", "event.json")
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    doc["samples_ns"] = doc["samples_ns"][:-1]
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    bundle = Bundle.load(copy)
    with pytest.raises(EvidenceError, match="hold 199 wakes but summary.json says n = 200"):
        bundle.latency_samples(bundle.arms_by_name()["event"])


def test_an_n_stored_as_a_whole_float_still_counts_every_wake(tmp_path) -> None:
    copy = str(tmp_path / "run")
    shutil.copytree(COMMITTED, copy)
    with open(os.path.join(copy, "summary.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    doc["arms"][0]["latency"]["n"] = 200.0
    with open(os.path.join(copy, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    bundle = Bundle.load(copy)
    event = bundle.arms_by_name()["event"]
    assert bundle.latency_samples(event).total == 200
    assert bundle.raw_kept(event, range(200)) == 200
    assert bundle.raw_kept(event, range(199)) is None


def test_a_grid_folder_is_named_as_one(tmp_path) -> None:
    (tmp_path / "cells" / "any").mkdir(parents=True)
    with pytest.raises(EvidenceError, match="is a grid of runs, not one run: use its cells"):
        Bundle.load(str(tmp_path))


def test_interpreter_label_says_build_and_gil() -> None:
    assert Interpreter("CPython", "3.13.0").label == "CPython 3.13.0"
    assert Interpreter("CPython", "3.13.15", free_threaded_build=True, gil_enabled=False).label == "CPython 3.13.15 free-threaded (GIL off)"
    assert Interpreter("CPython", "3.13.15", free_threaded_build=True, gil_enabled=True).label == "CPython 3.13.15 free-threaded (GIL on)"
    assert Interpreter.from_dict({}).label == "Python ?"


def test_the_fields_readers_kept_raw_are_typed() -> None:
    """run_id, finished_utc, machine_id, planted_after_us and debug_build, as recorded; the interpreter's fields as
    recorded beside the model's display defaults."""
    summary = {"run_id": "0123456789abcdef0123456789abcdef", "finished_utc": None,
               "machine": {"hostname": "h", "machine_id": "m-1"}, "parameters": {"planted_after_us": 7},
               "interpreter": {"version": "3.14.0t", "free_threaded_build": True, "debug_build": True}}
    bundle = Bundle(source="", folder="", summary=summary)
    assert (bundle.run_id, bundle.finished_utc, bundle.machine.machine_id) == ("0123456789abcdef0123456789abcdef", None, "m-1")
    assert bundle.parameters.planted_after_us == 7
    interp = bundle.interpreter
    assert interp.debug_build is True and interp.release == "3.14"
    assert (interp.implementation, interp.as_recorded("implementation"), interp.as_recorded("version")) == ("Python", None, "3.14.0t")
    with pytest.raises(KeyError):
        interp.as_recorded("recorded")
    empty = Bundle(source="", folder="", summary={"run_id": ""})
    assert (empty.run_id, empty.machine.machine_id, empty.interpreter.debug_build, empty.interpreter.release) == (None, None, None, "")


def test_the_grid_writer_and_readers_share_the_matrix_records() -> None:
    """A cell and a row as the grid runner writes them (MatrixCell.of, MatrixEntry.of, to_dict) read back as the same
    records, the row and the interpreter stored as the summary has them."""
    from wakelab.evidence.matrix import GIL_BUILD, MatrixCell, MatrixDoc, MatrixEntry

    interp = {"implementation": "CPython", "version": "3.13.5", "free_threaded_build": False, "extra": [1]}
    cell = MatrixCell.of("a", {"placement": "split", "cpu_threads": 2}, "done", True, interp)
    stored = cell.to_dict()
    assert stored == {"label": "a", "folder": os.path.join("cells", "a"), "dimensions": {"placement": "split", "cpu_threads": 2},
                      "status": "done", "complete": True, "interpreter": interp}
    entry = {"name": "event", "status": "ok", "kind": "latency", "latency": {"p50_ns": 10, "p99_ns": 20.5, "max_ns": 30, "x": "y"},
             "waiter": "blocked", "samples_file": "samples/event.json"}
    row = MatrixEntry.of("event", "a", ArmRecord.from_dict(entry)).to_dict()
    assert row == {"cell": "a", "status": "ok", "reason": None, "latency": entry["latency"], "rate": None, "spread": None,
                   "waiter": "blocked", "kind": "latency", "native": None, "native_match": None}
    assert MatrixEntry.of("event", "b", None).to_dict()["status"] == "pending"
    matrix = MatrixDoc.from_dict({"lab": {"id": "x"}, "cells": [stored], "arms": [{"name": "event", "rows": [row]}],
                                  "command": ["wakelab", "run"]})
    [read] = matrix.cells
    assert read == cell and (read.placement, read.cpu_threads, read.role, read.release) == ("split", 2, GIL_BUILD, "3.13")
    [(name, (back,))] = matrix.arms
    assert back.to_dict() == row and back.measured and dict(back.figures) == {"p50": 10.0, "p99": 20.5, "max": 30.0}
    assert matrix.command == ("wakelab", "run")


def test_the_observed_section_reads_as_records_and_its_absence_as_none() -> None:
    observed = {"start": {"load_average": [1.5, 1.0, 0.5], "cpufreq_governors": {"0": "performance"}, "idle_disabled": {"1": ["C6"]}},
                "end": {"load_average": None}, "busy_processes": [{"pid": 7, "name": "cc1", "cpu_share": 0.9}, "not a record"]}
    bundle = Bundle("run", "run", {"observed": observed, "parameters": {"placement": "spread"}})
    seen = bundle.observed
    assert seen is not None and seen.start is not None and seen.end is not None
    assert (seen.start.load_1min, seen.end.load_1min) == (1.5, None)
    assert [(p.pid, p.name, p.cpu_share, p.started_during_run) for p in seen.busy_processes or ()] == [(7, "cc1", 0.9, None)]
    assert bundle.parameters.present and not bundle.machine.present
    assert Bundle("run", "run", {"observed": {}}).observed is None and Bundle("run", "run", {}).observed is None
    unread, none = (Bundle("run", "run", {"observed": {"busy_processes": value, "end": 1}}).observed for value in ({}, []))
    assert unread is not None and none is not None and (unread.busy_processes, unread.end, none.busy_processes) == (None, None, ())


def test_an_arm_reads_its_worker_infos_once_and_whether_its_waiter_took_the_policy() -> None:
    pooled = ArmRecord.from_dict({"name": "a", "info": {"workers": [{"waiter_sched": "fifo 10"}, "junk", {"sent": 3}]}})
    assert pooled.infos == ({"waiter_sched": "fifo 10"}, {"sent": 3}) and pooled.took_waiter_policy
    alone = ArmRecord.from_dict({"name": "b", "info": {"sent": 1}})
    assert alone.infos == ({"sent": 1},) and not alone.took_waiter_policy
    assert ArmRecord.from_dict({"name": "c", "info": "x"}).infos == () and not ArmRecord.from_dict({"name": "d"}).took_waiter_policy
