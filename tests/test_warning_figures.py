"""A warning record's figures read into the record of its kind, or refused when they are not what the kind says."""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

from wakelab.analysis.warning_figures import (
    CauseKind,
    OmittedFigures,
    OmittedPercentile,
    PollingFigures,
    Population,
    PopulationCause,
    PopulationsFigures,
    SpreadFigures,
    StoredEntry,
    SwitchTailFigures,
    TimerFloorFigures,
    figures_of,
)
from wakelab.evidence.model import WarningRecord
from wakelab.report.text import format_warning


def record(kind: str, figures: Any, arm: Any = "event") -> WarningRecord:
    return WarningRecord.from_json({"kind": kind, "level": "warning", "arm": arm, "figures": figures})


def test_each_kind_reads_what_its_wording_needs() -> None:
    assert figures_of(record("percentiles-omitted", {"left_out": [{"percentile": "p99_9", "n": 20, "needs_n": 1000}]})) == (
        OmittedFigures(left_out=(OmittedPercentile("p99_9", 20, 1000),)))
    assert figures_of(record("worker-spread", {"of": "p50_ns", "max_over_min": 2.5, "between": "repetitions"})) == (
        SpreadFigures(medians=True, between_repetitions=True, max_over_min=2.5))
    populations: Dict[str, Any] = {"populations": [{"share": 0.5, "low_ns": 1, "high_ns": 2}] * 5,
                                   "cause": {"kind": "workers", "worker_p50_ns": [5.0, 9.0]}}
    read = figures_of(record("populations", populations))
    assert read == PopulationsFigures(count=5, named=(Population(0.5, 1, 2),) * 3, cause=PopulationCause(
        CauseKind.WORKERS, worker_p50_ns=(5.0, 9.0)))
    assert figures_of(record("switch-interval-tail", {"share": 0.05, "count": 3, "interval_s": 0.005, "multiples": [2, "1"]})) == (
        SwitchTailFigures(0.05, 3, 0.005, (1, 2)))
    assert figures_of(record("timer-floor", {"series": "", "p50_ns": 900, "multiple": 10, "floor_ns": 50})) == (
        TimerFloorFigures(None, 900, 50, 10, None))
    assert figures_of(record("polling", {"period_ns": 2e6, "low_ns": 1, "high_ns": 2, "distance": "0.1"})) == (
        PollingFigures(low_ns=1, high_ns=2, period_ns=2e6, distance=0.1))
    assert StoredEntry.of(record("newer-kind", [1], arm=0)) == StoredEntry(0, "newer-kind", [1])


@pytest.mark.parametrize("kind, figures", [
    ("percentiles-omitted", {"left_out": ["p99"]}),
    ("populations", {"populations": "abc"}),
    ("populations", {"populations": [{"share": "half", "low_ns": 1, "high_ns": 2}]}),
    ("populations", {"populations": [{"share": 0.5, "low_ns": 1}]}),
    ("populations", {"populations": [], "cause": "the CPUs"}),
    ("switch-interval-tail", {"share": "most"}),
    ("switch-interval-tail", {"multiples": ["first"]}),
    ("polling", {"low_ns": 1, "high_ns": 2, "distance": 0.1}),
    ("newer-kind", {}),
])
def test_figures_that_are_not_what_the_kind_says_are_refused(kind: str, figures: Dict[str, Any]) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        figures_of(record(kind, figures))
    assert format_warning(record(kind, figures)).startswith("event: %s: {" % kind)  # shown as stored


def test_an_infinite_settle_is_shown_as_stored_not_a_traceback() -> None:
    figures = {"period_ns": 2e6, "low_ns": 1, "high_ns": 2e6, "distance": 0.1, "settle_jitter_us": float("inf"),
               "spans_jitter": True}
    assert format_warning(record("polling", figures)).startswith('event: polling: {"distance": 0.1')


def test_a_cause_is_written_back_as_it_was_read_key_order_included() -> None:
    causes: List[Dict[str, Any]] = [
        {"kind": "cpus", "cross_share": 0.4, "same_cpu_p50_ns": 5000.0, "cross_cpu_p50_ns": 20000.0, "same_cpu_n": 120,
         "cross_cpu_n": 80},
        {"kind": "workers", "worker_p50_ns": [5300.0, 21000.0]},
        {"kind": "placement", "same_cpu_workers": 1, "split_workers": 2},
        {"kind": "newer-cause", "what": [1]},
    ]
    for cause in causes:
        read = PopulationCause.from_stored(cause)
        assert read is not None
        assert list(read.to_dict().items()) == list(cause.items())


def test_a_record_that_cannot_be_worded_is_shown_as_stored() -> None:
    # An unknown kind without figures shows none; a known kind's figures are shown as stored, whatever they are.
    assert format_warning(record("newer-kind", None)) == "event: newer-kind: {}"
    assert format_warning(record("polling", None)) == "event: polling: null"
    assert format_warning(record("polling", [1])) == "event: polling: [1]"
    assert format_warning(WarningRecord.from_json({"level": "warning", "arm": "a"})) == "a: None: {}"
