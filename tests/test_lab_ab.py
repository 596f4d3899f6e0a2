"""The labs' A/Bs over a grid (:mod:`wakelab.analysis.lab_ab`): reading the matrix document, and the dispatch by name."""

from __future__ import annotations

from wakelab.analysis import lab_ab


def test_the_matrix_document_is_read_once_into_records() -> None:
    doc = {
        "cells": [
            {"label": "gil", "dimensions": {"placement": "same", "cpu_threads": 1},
             "interpreter": {"version": "3.13.5", "free_threaded_build": False, "gil_enabled": True}},
            {"label": "ft", "dimensions": {}, "interpreter": {"version": "3.13.5t", "free_threaded_build": True}},
            {"label": "none"},
        ],
        "arms": [{"name": "event", "rows": [
            {"cell": "gil", "kind": "latency", "latency": {"p50_ns": 5000, "p99_ns": 0, "max_ns": "9"}},
            {"cell": "ft", "status": "skipped", "reason": "no free-threaded build", "latency": None},
        ]}],
    }
    cells, arms = lab_ab.read_matrix(doc)
    assert [(c.label, c.placement, c.cpu_threads, c.role, c.release) for c in cells] == [
        ("gil", "same", 1, lab_ab.GIL_BUILD, "3.13"), ("ft", "None", 0, lab_ab.NO_GIL, "3.13"), ("none", "None", 0, None, "")]
    [arm] = arms
    measured, skipped = arm.rows
    assert arm.name == "event" and measured.measured and not skipped.measured
    # A figure that is missing, not a number or not above 0 is no figure.
    assert dict(measured.figures) == {"p50": 5000.0, "p99": None, "max": None}
    assert skipped.reason == "no free-threaded build" and skipped.figures["p50"] is None


def test_a_verdict_is_found_by_the_name_its_lab_gives_it() -> None:
    doc = {"command": ["wakelab", "run"], "cells": [], "arms": []}
    assert lab_ab.matrix_verdict("gil-ab", doc) == lab_ab.gil_ab(doc)
    assert lab_ab.matrix_verdict("realtime-ab", doc)["title"].startswith("WHAT REALTIME SCHEDULING BOUGHT")
