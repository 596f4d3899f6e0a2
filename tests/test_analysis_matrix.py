"""The matrix as typed records (:mod:`wakelab.analysis.matrix`): each arm's cells against its first measured cell,
a rate cell's ops/s against the first, and each arm against its C floor in the same cell -- computed once, exactly."""

from __future__ import annotations

from typing import Any, Dict, Optional

import pytest

from wakelab.analysis.matrix import compare_matrix


def latency(cell: str, p50: Optional[float], p99: Optional[float], **extra: Any) -> Dict[str, Any]:
    figures = {"n": 100, "lost": 0, "min_ns": 900, "p50_ns": p50, "p90_ns": p50, "p99_ns": p99, "max_ns": 10**6}
    return dict({"cell": cell, "status": "ok", "kind": "latency", "latency": figures, "rate": None,
                 "spread": {"max_over_min": 1.2}}, **extra)


def rate(cell: str, ops: float) -> Dict[str, Any]:
    figures = {"rounds": 5, "n_per_round": 10, "ops_per_s": ops, "min_ops_per_s": ops, "max_ops_per_s": ops,
               "baseline_ops_per_s": ops, "ns_per_op": 1e9 / ops, "net_ns_per_op": 1.0}
    return {"cell": cell, "status": "ok", "kind": "rate", "latency": None, "rate": figures, "spread": None}


def test_cells_are_set_against_the_first_measured_cell() -> None:
    matrix = compare_matrix({"lab": {"id": "x"}, "cells": [], "arms": [
        {"name": "event", "rows": [dict(latency("a", None, None), status="failed", latency=None),
                                   latency("b", 10_000.0, 40_000.0), latency("c", 5_000.0, 80_000.0, spread={"max_over_min": "x"})]},
        {"name": "install", "rows": [rate("a", 200_000.0), rate("b", 300_000.0)]},
    ]})
    event, install = matrix.arms
    assert (event.kind, event.base_cell, install.kind) == ("latency", "b", "rate")
    failed, base, other = event.rows
    assert failed.arm.latency is None and failed.p50_ratio is None and failed.arm.status == "failed"
    assert (base.p50_ratio, base.p99_ratio, base.entry.spread) == (1.0, 1.0, 1.2)
    assert (other.p50_ratio, other.p99_ratio, other.entry.spread) == (0.5, 2.0, None)
    assert other.tone.tail_worse and other.tone.css == "slower"
    assert [row.rate_ratio for row in install.rows] == [1.0, pytest.approx(1.5)]
    assert matrix.doc.title == "x" and not matrix.has_native


def test_each_cell_is_set_against_its_own_c_floor() -> None:
    matrix = compare_matrix({"lab": {"id": "x"}, "cells": [], "arms": [
        {"name": "event", "rows": [latency("a", 10_000.0, 1.0, native="native-condvar", native_match="matched"),
                                   latency("b", 30_000.0, 1.0, native="native-condvar", native_match="nearest")]},
        {"name": "native-condvar", "rows": [latency("a", 4_000.0, 1.0), dict(latency("b", 1.0, 1.0), status="failed")]},
    ]})
    event, floor = matrix.arms
    same, failed_floor = (row.native for row in event.rows)
    assert same is not None and (same.ratio, same.match, same.interpreter_share) == (2.5, "matched", True)
    assert failed_floor is None  # its floor failed in that cell
    assert matrix.has_native and event.has_native and not floor.has_native
