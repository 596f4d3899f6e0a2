"""The typed evidence model: one bundle type that compare, report and export all read."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from wakelab.errors import EvidenceError
from wakelab.evidence.model import Bundle, Interpreter

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
    assert event.latency.percentile_ns("p99") == doc["arms"][0]["latency"]["p99_ns"]
    install = arms["signal-install"]
    assert install.rate is not None and install.rate.ops_per_s == [a for a in doc["arms"] if a["name"] == "signal-install"][0]["rate"]["ops_per_s"]
    samples = bundle.latency_samples(event)
    assert len(samples.samples_ns) == event.latency.n


def test_a_bundle_dumps_itself_as_the_runner_wrote_it() -> None:
    bundle = Bundle.load(COMMITTED)
    with open(os.path.join(COMMITTED, "summary.json"), encoding="utf-8") as fh:
        assert bundle.dumps() == fh.read()


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


def test_a_grid_folder_is_named_as_one(tmp_path) -> None:
    (tmp_path / "cells" / "any").mkdir(parents=True)
    with pytest.raises(EvidenceError, match="is a grid of runs, not one run: use its cells"):
        Bundle.load(str(tmp_path))


def test_interpreter_label_says_build_and_gil() -> None:
    assert Interpreter("CPython", "3.13.0").label == "CPython 3.13.0"
    assert Interpreter("CPython", "3.13.15", free_threaded_build=True, gil_enabled=False).label == "CPython 3.13.15 free-threaded (GIL off)"
    assert Interpreter("CPython", "3.13.15", free_threaded_build=True, gil_enabled=True).label == "CPython 3.13.15 free-threaded (GIL on)"
    assert Interpreter.from_dict({}).label == "Python ?"
