"""The labs' A/Bs over a grid (:mod:`wakelab.analysis.lab_ab`): reading the matrix document, and the dispatch by name."""

from __future__ import annotations

import json

from wakelab.analysis import lab_ab
from wakelab.evidence.matrix import GIL_BUILD, NO_GIL, MatrixDoc, MatrixVerdict


def test_the_matrix_document_is_read_once_into_the_evidence_records() -> None:
    """The A/Bs read the matrix document through :class:`MatrixDoc`: a cell's placement, busy threads, its interpreter's
    role and release; an arm's row there, whether it measured, why not, and its figures."""
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
    matrix = MatrixDoc.from_dict(doc)
    assert [(c.label, c.placement, c.cpu_threads, c.role, c.release) for c in matrix.cells] == [
        ("gil", "same", 1, lab_ab.GIL_BUILD, "3.13"), ("ft", "None", 0, lab_ab.NO_GIL, "3.13"), ("none", "None", 0, None, "")]
    [(name, (measured, skipped))] = matrix.arms
    assert name == "event" and measured.measured and not skipped.measured
    # A figure that is missing, not a number or not above 0 is no figure.
    assert dict(measured.figures) == {"p50": 5000.0, "p99": None, "max": None}
    assert skipped.arm.reason == "no free-threaded build" and skipped.figures["p50"] is None
    # A verdict over the records is the verdict over the document they were read from.
    assert lab_ab.gil_ab(matrix).to_dict() == lab_ab.matrix_verdict("gil-ab", doc)


def test_a_verdict_is_found_by_the_name_its_lab_gives_it() -> None:
    doc = {"command": ["wakelab", "run"], "cells": [], "arms": []}
    assert lab_ab.matrix_verdict("gil-ab", doc) == lab_ab.gil_ab(MatrixDoc.from_dict(doc)).to_dict()
    assert str(lab_ab.matrix_verdict("realtime-ab", doc)["title"]).startswith("WHAT REALTIME SCHEDULING BOUGHT")


def test_a_verdict_is_stored_as_matrix_json_has_it_and_read_back_whole() -> None:
    interp = {GIL_BUILD: {"version": "3.13.5", "free_threaded_build": False, "gil_enabled": True},
              NO_GIL: {"version": "3.13.5t", "free_threaded_build": True, "gil_enabled": False}}
    doc = {"cells": [{"label": role, "dimensions": {"placement": "split", "cpu_threads": 0}, "interpreter": interp[role]}
                     for role in interp],
           "arms": [{"name": "event", "rows": [{"cell": GIL_BUILD, "status": "ok", "kind": "latency",
                                                "latency": {"p50_ns": 5000, "p99_ns": 8000, "max_ns": 9000}},
                                               {"cell": NO_GIL, "status": "ok", "kind": "latency",
                                                "latency": {"p50_ns": 10000, "p99_ns": 8000, "max_ns": 9000}}]}]}
    stored = json.loads(json.dumps(lab_ab.matrix_verdict("gil-ab", doc)))
    assert sorted(stored) == ["roles", "rows", "sentences", "summary", "tables", "title"]
    assert stored["rows"] == [{"arm": "event", "placement": "split", "cpu_threads": 0,
                               "p50": {GIL_BUILD: 5000.0, NO_GIL: 10000.0, "ratio": 2.0, "forced_ratio": None},
                               "p99": {GIL_BUILD: 8000.0, NO_GIL: 8000.0, "ratio": 1.0, "forced_ratio": None},
                               "max": {GIL_BUILD: 9000.0, NO_GIL: 9000.0, "ratio": 1.0, "forced_ratio": None}}]
    assert stored["summary"][0]["p50"]["arms_grew"] == 1 and stored["summary"][0]["arms"] == 1
    ab = lab_ab.gil_ab(MatrixDoc.from_dict(doc))
    read = MatrixVerdict.from_dict(stored)
    assert read is not None and (read.title, read.tables, read.sentences) == (ab.title, ab.tables, ab.sentences)
