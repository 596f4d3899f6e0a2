"""summary.txt rendering: exact output for a fixed summary (golden file)."""

from __future__ import annotations

import os

import copy

from conftest import GOLDEN
from wakelab.analysis.caveats import derive_caveats, lab_pairings, lost_wakes, native_ratios
from wakelab.analysis.quality import derive_warnings
from wakelab.core.registry import get_arm
from wakelab.formatting import format_ns, format_rate, format_ratio, format_us
from wakelab.report.text import format_lead_table, format_summary, format_verdict, format_warning


def _golden(name: str, text: str) -> str:
    path = os.path.join(GOLDEN, name)
    if os.environ.get("WAKELAB_UPDATE_GOLDEN"):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def test_lab135_summary_txt_matches_golden(lab135_summary) -> None:
    text = format_summary(lab135_summary)
    assert text == _golden("lab135_summary.txt", text)


def test_verdict_is_computed_from_figures(lab135_summary) -> None:
    text = format_summary(lab135_summary)
    assert "event: p50 110 µs, p99 207 µs over 200 wakes" in text
    assert "sigusr1-self: p50 2.10 µs" in text
    assert "event / sigusr1-self = 52× at p50" in text
    assert "NOT like for like" in text
    # Change the figures and the verdict follows.
    lab135_summary["arms"][0]["latency"]["p50_ns"] = 21_000.0
    assert "event: p50 21.0 µs" in format_summary(lab135_summary)
    assert "= 10× at p50" in format_summary(lab135_summary)


def _verdict(summary) -> str:  # type: ignore[no-untyped-def]
    """The verdict as one line (wrapping undone)."""
    return " ".join(line.strip() for line in format_verdict(summary))


def test_like_for_like_pairs_are_not_flagged(lab135_summary) -> None:
    lab135_summary["arms"][1].update(waiter="blocked", scope="cross-thread")
    caveats = derive_caveats(lab135_summary)
    assert not any("not the same experiment" in c for c in caveats)
    assert "like for like: both blocked, cross-thread; at t0 the waiter is parked in the kernel." in _verdict(lab135_summary)


def test_same_waiter_state_in_another_scope_is_not_like_for_like(lab135_summary) -> None:
    # The old test called this pair like for like because both waiters were blocked.
    lab135_summary["arms"][1]["waiter"] = "blocked"
    (pairing,) = lab_pairings(lab135_summary)
    assert not pairing.like_for_like
    assert "= 52× at p50, 94× at p99; NOT like for like (scope: cross-thread against self)." in _verdict(lab135_summary)


def _spin_pair_summary(lab135_summary, gil_enabled):  # type: ignore[no-untyped-def]
    """The old matched lab's spinning pair, sigusr1-self against event-spin, as a run reports it."""
    summary = copy.deepcopy(lab135_summary)
    spin = dict(summary["arms"][0], **{k: v for k, v in get_arm("event-spin").describe().items()})
    summary["arms"] = [summary["arms"][1], spin]
    summary["lab"]["comparisons"] = [{"a": "sigusr1-self", "b": "event-spin"}]
    summary["interpreter"]["gil_enabled"] = gil_enabled
    return summary


def test_sigusr1_self_against_event_spin_is_not_like_for_like(lab135_summary) -> None:
    # Before: "like for like: both waiters spinning (scopes differ: self against cross-thread)".
    for gil in (True, False):
        (pairing,) = lab_pairings(_spin_pair_summary(lab135_summary, gil))
        assert not pairing.like_for_like
    text = _verdict(_spin_pair_summary(lab135_summary, True))
    assert "sigusr1-self / event-spin = 0.019× at p50, 0.011× at p99; NOT like for like (scope: self against cross-thread; " \
        "waiter at t0: the notifier itself against waiting for the GIL)." in text
    honesty = " ".join(format_summary(_spin_pair_summary(lab135_summary, True)).split())
    assert "Spinning in name only under this interpreter's GIL (event-spin): a waiter in another thread cannot poll" in honesty
    assert "Spinning in name only" not in format_summary(_spin_pair_summary(lab135_summary, False))


def test_caveats_for_lost_planted_and_interrupted(lab135_summary) -> None:
    lab135_summary["arms"][0]["latency"]["lost"] = 2
    lab135_summary["parameters"]["planted_delay_us"] = 2000
    lab135_summary["interrupted"] = True
    caveats = derive_caveats(lab135_summary)
    assert "event lost 2 of 202 counted wakes: 2 with no wake within the 1.0 s timeout." in caveats
    assert any("planted delay of 2000 µs" in c for c in caveats)
    assert any("interrupted" in c for c in caveats)


def test_coalesced_open_loop_notifies_are_not_called_timeouts(lab135_summary) -> None:
    event = lab135_summary["arms"][0]
    event["latency"]["lost"] = 5
    # Pooled from two workers: 3 notifies coalesced, 1 stale wake, so 1 timed out.
    event["info"] = {"workers": [{"mode": "open", "coalesced": 2}, {"mode": "open", "coalesced": 1, "stale_wakes": 1}]}
    lost = lost_wakes(event)
    assert (lost.total, lost.coalesced, lost.stale, lost.timed_out) == (5, 3, 1, 1)
    caveats = derive_caveats(lab135_summary)
    assert (
        "event lost 5 of 205 counted wakes: 1 with no wake within the 1.0 s timeout; 3 coalesced (the notify came "
        "while the waiter was still busy with an earlier wake, which answered both); 1 answered by an earlier "
        "notify's wake (t1 before t0)." in caveats
    )
    assert "5 wakes lost (1 timed out, 3 coalesced into a later wake, 1 answered by an earlier wake)." in _verdict(lab135_summary)
    event["info"] = {"coalesced": 5}
    assert "event lost 5 of 205 counted wakes: 5 coalesced" in " ".join(derive_caveats(lab135_summary))
    assert "timeout" not in " ".join(c for c in derive_caveats(lab135_summary) if c.startswith("event lost"))


def test_warning_records_are_worded(lab135_summary) -> None:
    assert format_warning("an old bundle's worded warning") == "an old bundle's worded warning"
    assert format_warning({"kind": "worker-spread", "level": "warning", "arm": "event",
                           "figures": {"of": "p50_ns", "max_over_min": 2.5}}) == (
        "event: worker processes disagree (their medians differ 2.5×): the level shifts between processes; "
        "raise --workers and compare runs side by side.")
    populations = {"kind": "populations", "level": "warning", "arm": "event", "figures": {
        "populations": [{"share": 0.5, "low_ns": 20_495, "high_ns": 24_455}, {"share": 0.3, "low_ns": 5_059, "high_ns": 5_531},
                        {"share": 0.2, "low_ns": 80_780, "high_ns": 87_020}],
        "cause": None}}
    assert format_warning(populations) == (
        "event: three populations of wakes: 50% between 20.5 µs and 24.5 µs, 30% between 5.06 µs and 5.53 µs, "
        "20% between 80.8 µs and 87.0 µs (the middle 80% of each); a single percentile hides that. Nothing this "
        "run recorded tells why; --placement same,split shows whether placement does.")
    populations["figures"]["cause"] = {"kind": "placement", "same_cpu_workers": 1, "split_workers": 2}
    assert format_warning(populations).endswith(
        "Where the two sides ran differed between worker processes (the same CPU in 1, different CPUs in 2), which "
        "can explain it; --placement same,split measures each apart.")
    populations["figures"]["cause"] = {"kind": "workers", "worker_p50_ns": [5300.0, 21000.0]}
    assert format_warning(populations).endswith(
        "The worker processes' medians (5.30 µs, 21.0 µs) fall in different populations: the level shifted between processes.")
    assert format_warning({"kind": "switch-interval-tail", "level": "warning", "arm": "event",
                           "figures": {"share": 0.05, "count": 10, "interval_s": 0.005, "multiples": [1, 2]}}) == (
        "event: 5.0% of wakes (10) took just over 1 or 2 switch interval(s) of 5.00 ms: a busy Python thread held "
        "the GIL and the waiter waited for the interpreter to force a switch.")
    assert format_warning({"kind": "timer-floor", "level": "warning", "arm": "sigusr1-self", "figures": {
        "series": None, "p50_ns": 2099.5, "floor_ns": 300, "multiple": 10, "clocksource": "hpet"}}) == (
        "sigusr1-self: p50 2.10 µs is under 10× the timer floor, 300 ns per perf_counter_ns() pair (clocksource "
        "hpet): the clock's own cost is a tenth of the figure or more.")


def test_a_record_with_unexpected_figures_is_shown_raw() -> None:
    assert format_warning({"kind": "percentiles-omitted", "level": "note", "arm": None, "figures": {"left_out": 1.5}}) == (
        'percentiles-omitted: {"left_out": 1.5}')
    assert format_warning({"kind": "from-a-newer-wakelab", "level": "warning", "arm": "event", "figures": {"x": 1}}) == (
        'event: from-a-newer-wakelab: {"x": 1}')


def test_figures_near_timer_floor_are_flagged(lab135_summary) -> None:
    lab135_summary["timer"]["floor_p50_ns"] = 300
    lab135_summary["warnings"] = derive_warnings(lab135_summary)
    text = format_summary(lab135_summary)
    assert "  - sigusr1-self: p50 2.10 µs is under 10× the timer floor, 300 ns per perf_counter_ns() pair" in text
    assert "  - event: p50" not in text


def test_the_p99_9_omission_is_a_note_not_a_warning(lab135_summary) -> None:
    text = format_summary(lab135_summary)
    assert "MEASUREMENT QUALITY" not in text
    assert "NOTES\n  - Percentiles left out for want of wakes: p99.9 where n = 200 (it needs n >= 1000)." in text


def _with_floors(lab135_summary):  # type: ignore[no-untyped-def]
    """Lab 135's arms beside C floors: event matched (native-condvar), sigusr1-self only nearest."""
    summary = copy.deepcopy(lab135_summary)
    event, signal, install = summary["arms"]
    event.update(native="native-condvar", native_match="matched")
    signal.update(native="native-self-signal", native_match="nearest")
    install.update(native="native-sigaction-install", native_match=None)  # a bundle before 0.2
    condvar = dict(copy.deepcopy(event), name="native-condvar", family="native", native=None, native_match=None)
    condvar["latency"]["p50_ns"] = 22_000.0
    self_signal = dict(copy.deepcopy(signal), name="native-self-signal", family="native", native=None, native_match=None)
    self_signal["latency"]["p50_ns"] = 1_050.0
    sigaction = dict(copy.deepcopy(install), name="native-sigaction-install", family="native", native=None, native_match=None)
    sigaction["rate"]["ops_per_s"] = 5_000_000.0
    summary["arms"] = [event, signal, install, condvar, self_signal, sigaction]
    return summary


def test_native_ratios_are_computed_once_and_labelled(lab135_summary) -> None:
    summary = _with_floors(lab135_summary)
    ratios = native_ratios(summary)
    assert {k: (r.native, r.match, r.kind, r.ratio, r.interpreter_share) for k, r in ratios.items()} == {
        "event": ("native-condvar", "matched", "latency", 109_500 / 22_000, True),
        "sigusr1-self": ("native-self-signal", "nearest", "latency", 2099.5 / 1050, False),
        # No recorded relation: never called the interpreter's share.
        "signal-install": ("native-sigaction-install", "nearest", "rate", 5.0, False),
    }
    table = format_lead_table(summary)
    assert any(line.startswith("  event ") and line.endswith("  5.0×") for line in table)
    assert any(line.startswith("  sigusr1-self ") and line.endswith("2.0× (nearest floor)") for line in table)
    assert any(line.startswith("  signal-install ") and line.endswith("5.0× (nearest floor)") for line in table)
    assert "the interpreter's share; a ratio marked 'nearest floor' is against the closest C experiment" in " ".join(
        line.strip() for line in table)
    summary["arms"][3]["status"] = "failed"  # a floor that did not run gives no ratio
    assert "event" not in native_ratios(summary)


def test_missing_arms_render_their_status(lab135_summary) -> None:
    entry = lab135_summary["arms"][1]
    entry.update(status="skipped", reason="needs the main thread", latency=None)
    text = format_summary(lab135_summary)
    assert "sigusr1-self  spinning  self          skipped" in text


def test_number_formats() -> None:
    assert format_ns(850) == "850 ns"
    assert format_ns(11_234) == "11.2 µs"
    assert format_ns(1_534_000) == "1.53 ms"
    assert format_ns(2_500_000_000) == "2.50 s"
    assert format_ns(None) == "-"
    assert format_us(2_203) == "2.20"
    assert format_us(123_456) == "123"
    assert format_rate(1_092_573.4) == "1,092,573"
    assert format_ratio(5.08) == "5.1×"
    assert format_ratio(52.4) == "52×"
    assert format_ratio(0.148) == "0.15×"
    assert format_ratio(0.0123) == "0.012×"


def test_matrix_shows_vs_c_per_cell_and_labels_a_nearest_floor() -> None:
    from wakelab.report.matrix_text import format_matrix

    def row(cell: str, p50: float, **extra: object) -> dict:
        return dict({"cell": cell, "status": "ok", "kind": "latency", "waiter": "blocked", "spread": None, "rate": None,
                     "latency": {"n": 200, "lost": 0, "min_ns": p50, "p50_ns": p50, "p90_ns": p50, "p99_ns": p50, "max_ns": p50}},
                    **extra)

    doc = {
        "lab": {"id": "matched"}, "started_utc": "2026-10-01T06:00:00Z", "complete": True, "cells": [],
        "arms": [
            {"name": "event", "rows": [row("same", 10_000.0, native="native-condvar", native_match="matched"),
                                       row("split", 30_000.0, native="native-condvar", native_match="matched")]},
            {"name": "pause-handler", "rows": [row("same", 12_000.0, native="native-sigwait", native_match="nearest"),
                                               row("split", 36_000.0, native="native-sigwait", native_match="nearest")]},
            {"name": "native-condvar", "rows": [row("same", 4_000.0), row("split", 20_000.0)]},
            {"name": "native-sigwait", "rows": [row("same", 6_000.0), dict(row("split", 0.0), status="failed", latency=None)]},
        ],
    }
    text = format_matrix(doc)
    event = text.split("\nevent\n")[1].split("\n\n")[0].splitlines()
    assert event[0].endswith("vs C p50") and event[1].endswith("  2.5×") and event[2].endswith("  1.5×")
    pause = text.split("\npause-handler\n")[1].split("\n\n")[0].splitlines()
    assert pause[1].endswith("2.0× (nearest floor)")
    assert pause[2].endswith("  -")  # its floor failed in that cell
    assert "vs C" not in text.split("\nnative-condvar\n")[1].split("\n\n")[0]
    assert "a ratio marked 'nearest floor' is against the closest C experiment" in " ".join(text.split())
    for arm in doc["arms"]:
        for r in arm["rows"]:
            r.pop("native", None)
    assert "vs C" not in format_matrix(doc)  # a matrix before 0.2: no relation recorded, no column
