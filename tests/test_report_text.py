"""summary.txt rendering: exact output for a fixed summary (golden file)."""

from __future__ import annotations

import os
import re

import copy

from conftest import GOLDEN
from wakelab.analysis.caveats import derive_caveats, lab_pairings, lost_wakes, native_ratios
from wakelab.analysis.quality import derive_warnings
from wakelab.core.registry import get_arm
from wakelab.evidence.model import WarningRecord
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
    assert "Spinning in name only: event-spin (under this interpreter's GIL a waiter in another thread cannot poll" in honesty
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


def word(entry: object) -> str:
    """A warning as summary.json stores it, worded."""
    return format_warning(WarningRecord.from_json(entry))


def test_warning_records_are_worded(lab135_summary) -> None:
    assert word("an old bundle's worded warning") == "an old bundle's worded warning"
    assert word({"kind": "worker-spread", "level": "warning", "arm": "event",
                           "figures": {"of": "p50_ns", "max_over_min": 2.5}}) == (
        "event: worker processes disagree (their medians differ 2.5×): the level shifts between processes; "
        "raise --workers and compare runs side by side.")
    populations = {"kind": "populations", "level": "warning", "arm": "event", "figures": {
        "populations": [{"share": 0.5, "low_ns": 20_495, "high_ns": 24_455}, {"share": 0.3, "low_ns": 5_059, "high_ns": 5_531},
                        {"share": 0.2, "low_ns": 80_780, "high_ns": 87_020}],
        "cause": None}}
    assert word(populations) == (
        "event: three populations of wakes: 50% between 20.5 µs and 24.5 µs, 30% between 5.06 µs and 5.53 µs, "
        "20% between 80.8 µs and 87.0 µs (the middle 80% of each); a single percentile hides that. Nothing this "
        "run recorded tells why; --placement same,split shows whether placement does.")
    populations["figures"]["cause"] = {"kind": "placement", "same_cpu_workers": 1, "split_workers": 2}
    assert word(populations).endswith(
        "Where the two sides ran differed between worker processes (the same CPU in 1, different CPUs in 2), which "
        "can explain it; --placement same,split measures each apart.")
    populations["figures"]["cause"] = {"kind": "workers", "worker_p50_ns": [5300.0, 21000.0]}
    assert word(populations).endswith(
        "The worker processes' medians (5.30 µs, 21.0 µs) fall in different populations: the level shifted between processes.")
    assert word({"kind": "switch-interval-tail", "level": "warning", "arm": "event",
                           "figures": {"share": 0.05, "count": 10, "interval_s": 0.005, "multiples": [1, 2]}}) == (
        "event: 5.0% of wakes (10) took just over 1 or 2 switch interval(s) of 5.00 ms: a busy Python thread held "
        "the GIL and the waiter waited for the interpreter to force a switch.")
    assert word({"kind": "timer-floor", "level": "warning", "arm": "sigusr1-self", "figures": {
        "series": None, "p50_ns": 2099.5, "floor_ns": 300, "multiple": 10, "clocksource": "hpet"}}) == (
        "sigusr1-self: p50 2.10 µs is under 10× the timer floor, 300 ns per perf_counter_ns() pair (clocksource "
        "hpet): the clock's own cost is a tenth of the figure or more.")


def test_a_polling_record_is_worded_with_its_period() -> None:
    figures = {"low_ns": 8_230, "high_ns": 2_059_442, "period_ns": 2_085_882, "distance": 0.0504, "edge": 0.0115,
               "spread_over_floor": 184.42, "thinnest_part": 0.85, "thickest_part": 1.2, "n": 200,
               "settle_jitter_us": 4000, "spans_jitter": False}
    record = {"kind": "polling", "level": "warning", "arm": "poll-2ms", "figures": figures}
    assert word(record) == (
        "poll-2ms: this wait polls about every 2.09 ms: its wakes spread evenly from 8.23 µs to 2.06 ms instead of "
        "bunching near a floor as a blocked wait's do. A notify is seen at the next poll, so a wake costs up to a whole "
        "period, half of it on average, however fast the machine (distance to an even spread 0.05).")
    record["figures"] = dict(figures, settle_jitter_us=2000, spans_jitter=True)
    assert word(record) == (
        "poll-2ms: this wait polls, every 2.09 ms or more slowly: its wakes spread evenly from 8.23 µs to 2.06 ms instead "
        "of bunching near a floor as a blocked wait's do, as far as the settle's random part (2.00 ms) reaches, so the "
        "period may be longer; --settle-jitter-us 4000 (twice that) would measure it (distance to an even spread 0.05). "
        "A wake that polls costs up to a whole period, half of it on average.")


def test_a_record_with_unexpected_figures_is_shown_raw() -> None:
    assert word({"kind": "percentiles-omitted", "level": "note", "arm": None, "figures": {"left_out": 1.5}}) == (
        'percentiles-omitted: {"left_out": 1.5}')
    assert word({"kind": "from-a-newer-wakelab", "level": "warning", "arm": "event", "figures": {"x": 1}}) == (
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


# -- guidance in summary.txt, the ranked verdict, the short form -------------------------------------


def _section(text: str, title: str) -> str:
    start = text.index("\n" + title) + 1
    end = text.index("\n\n", start)
    return text[start:end]


def test_summary_txt_gives_the_full_guidance_after_the_verdict(lab135_summary) -> None:
    from wakelab.analysis.guidance import guidance_for
    from wakelab.evidence.model import Bundle

    text = format_summary(lab135_summary)
    titles = [line for line in text.splitlines() if line and line == line.lstrip() and line.isupper() is False and line[:4].isupper()]
    assert titles.index("GUIDANCE (drawn from this run's figures; each point names what it rests on)") == (
        titles.index("VERDICT (from this run's figures)") + 1)
    guidance = guidance_for(Bundle("", "", lab135_summary))
    section = " ".join(_section(text, "GUIDANCE").split())
    assert " ".join(guidance.headline.split()) in section
    assert len(guidance) == 7
    for item in guidance:
        assert " ".join(item.text.split()) in section


def test_a_many_armed_verdict_ranks_the_arms() -> None:
    from test_guidance import CATALOGUE_P50_US, build_summary

    summary = build_summary("catalogue", CATALOGUE_P50_US)
    verdict = format_verdict(summary)
    # The fixture's workers agree within 4%: 14.1 against 15.6 µs (1.11×) is a difference, 15.3 µs (1.09×) is not.
    text = " ".join(" ".join(verdict).split())
    assert text.startswith("in-process wake (blocked waiter): within this run's noise of the lowest p50: pipe 14.1 µs, "
                           "eventfd 15.3 µs; clearly slower (× the lowest p50): selector-pipe 1.11×, event 1.18×, ")
    assert "slowest: run-coroutine-threadsafe 135 µs (9.6×)" in text
    assert not any(line.startswith("  event: p50") for line in verdict)  # no line per arm: the table has them
    assert "across processes: fastest beyond this run's noise: eventfd-fork 13.3 µs;" in text
    assert any(line.startswith("  signal-install: 160,949 ops/s") for line in verdict)
    assert len(verdict) < 36  # the old per-arm verdict of a catalogue run took 34 (the ranking now says what × and noise are)
    few = build_summary("custom", {"event": 10.0, "pipe": 14.0}, arms=["event", "pipe"])
    assert format_verdict(few)[0].startswith("  event: p50 ")


def _catalogue_variants():  # type: ignore[no-untyped-def]
    from test_guidance import CATALOGUE_P50_US, build_summary

    yield "every arm", build_summary("catalogue", CATALOGUE_P50_US)
    no_c = {k: (None if k.startswith("native-") else v) for k, v in CATALOGUE_P50_US.items()}
    yield "no C compiler", build_summary("catalogue", no_c, rates={"signal-install": 160_949.0})
    lossy = build_summary("catalogue", CATALOGUE_P50_US)
    for entry in lossy["arms"]:
        if entry.get("latency"):
            entry["latency"]["lost"] = 3
    yield "lost wakes everywhere", lossy
    wide = {k: (0.7, 1.0, 1.4) for k in CATALOGUE_P50_US}
    yield "everything within noise", build_summary("catalogue", CATALOGUE_P50_US, factors=wide)


def test_the_short_form_fits_a_screen(lab135_summary) -> None:
    from wakelab.report.text import BRIEF_MAX_LINES, BRIEF_MAX_LINES_MANY, format_brief

    assert (BRIEF_MAX_LINES, BRIEF_MAX_LINES_MANY) == (25, 44)
    long_folder = "/home/someone/projects/wakelab-runs/135-signal-vs-event-wakeup-20261201T103000Z"
    committed = os.path.join(os.path.dirname(GOLDEN), "..", "lab-evidence", "135-signal-vs-event-wakeup", "results")
    from wakelab.evidence.load import load_summary

    for summary in (lab135_summary, load_summary(committed)):
        lines = format_brief(summary, long_folder).splitlines()
        assert len(lines) <= 25, "\n".join(lines)
        assert max(len(line) for line in lines) <= 100
        assert lines[2] == "VERDICT" and "GUIDANCE" in lines[:12]
        assert "Full text: %s/summary.txt (" % long_folder in " ".join(lines[-3:])
    for name, summary in _catalogue_variants():
        lines = format_brief(summary, long_folder).splitlines()
        assert len(lines) <= BRIEF_MAX_LINES_MANY, (name, len(lines), "\n".join(lines))
        assert max(len(line) for line in lines) <= 100, name
        assert lines[2] == "VERDICT" and lines[3].startswith("  in-process wake (blocked waiter): "), name
        assert "summary.txt" in "".join(lines[-2:])


def test_the_short_form_matches_golden(lab135_summary) -> None:
    from wakelab.report.text import format_brief

    text = format_brief(lab135_summary, "/tmp/wakelab-runs/lab135")
    assert text == _golden("lab135_brief.txt", text)


def test_the_short_form_lists_what_was_not_measured() -> None:
    from test_guidance import CATALOGUE_P50_US, build_summary
    from wakelab.report.text import format_brief

    no_c = {k: (None if k.startswith("native-") else v) for k, v in CATALOGUE_P50_US.items()}
    text = " ".join(format_brief(build_summary("catalogue", no_c, rates={"signal-install": 160_949.0,
                                                                         "signal-install-unwrapped": 1_000_000.0})).split())
    # Many arms not measured: counted by family, each family with what kept its arms out.
    # (Any family with skipped arms may stand before asynclibs: a new family must not break this test.)
    assert re.search(r"Not measured: \d+ arms -- (\S+ \d+ \(skipped\), )*asynclibs 5 \(skipped\), .*native \d+ \(skipped\)", text), text
    assert "vs C" not in text  # no floor measured, no column


def _run(args, tty: bool, tmp_path):  # type: ignore[no-untyped-def]
    """``wakelab run ARGS`` with stdout on a pseudo-terminal (``tty``) or a pipe: (exit code, stdout, stderr)."""
    import subprocess
    import sys
    import threading

    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(GOLDEN), "..", "src"))
    command = [sys.executable, "-m", "wakelab", "run", "--no-history", "-o", str(tmp_path / "ev"), *args]
    if not tty:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        return done.returncode, done.stdout, done.stderr
    master, slave = os.openpty()
    chunks = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        done = subprocess.run(command, stdout=slave, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    finally:
        os.close(slave)
    reader.join(10)
    os.close(master)
    return done.returncode, b"".join(chunks).decode("utf-8").replace("\r\n", "\n"), done.stderr


RUN_ARGS = ["--arms", "event,sigusr1-self", "--n", "5", "--warmup", "1", "--workers", "1"]


def test_run_prints_the_short_form_on_a_terminal_and_the_full_text_off_it(tmp_path) -> None:
    code, out, err = _run(RUN_ARGS, True, tmp_path)
    assert code == 0, err
    assert "\nGUIDANCE\n" in out and "Full text: %s/summary.txt" % (tmp_path / "ev") in " ".join(out.split("\n"))
    assert "LAB HONESTY" not in out and "wakelab: evidence in" not in err  # the short form says where
    code, out, err = _run(RUN_ARGS, False, tmp_path)
    assert code == 0, err
    with open(tmp_path / "ev" / "summary.txt", encoding="utf-8") as fh:
        assert out == fh.read()  # scripts still read summary.txt
    assert "wakelab: evidence in %s (complete: true)" % (tmp_path / "ev") in err


def test_full_and_brief_override_the_terminal_test(tmp_path) -> None:
    code, out, err = _run(RUN_ARGS + ["--full"], True, tmp_path)
    assert code == 0, err
    with open(tmp_path / "ev" / "summary.txt", encoding="utf-8") as fh:
        assert out == fh.read()
    code, out, err = _run(RUN_ARGS + ["--brief", "-q"], False, tmp_path)
    assert code == 0, err
    assert out.startswith("Custom selection") and "\nGUIDANCE\n" in out and "LAB HONESTY" not in out
    assert len(out.splitlines()) <= 25
    code, out, err = _run(RUN_ARGS + ["--brief", "--json"], False, tmp_path)
    assert code == 2 and out == ""
    assert "argument --json: not allowed with argument --brief" in err or "argument --brief: not allowed with argument --json" in err


def test_the_brief_and_the_full_text_say_one_run_state(lab135_summary) -> None:
    # The short form once said "INCOMPLETE" for a run still in progress and for one cut short alike.
    from wakelab.report.text import format_brief

    for changes, word in (({"complete": False, "interrupted": True}, "INCOMPLETE (interrupted)"),
                          ({"complete": False, "interrupted": False}, "INCOMPLETE (see caveats)"),
                          ({"complete": False, "interrupted": False, "finished_utc": None}, "IN PROGRESS (or stopped before the end)")):
        summary = dict(lab135_summary, **changes)
        assert " · %s" % word in format_brief(summary).splitlines()[0]
        assert " · %s" % word in format_summary(summary).splitlines()[1]


def test_every_warning_kind_is_worded() -> None:
    # quality.py writes the evidence model's kinds and text.py words the same enum: no kind falls back to raw JSON.
    from wakelab.evidence.model import WarningKind
    from wakelab.report.text import _WORDINGS

    assert set(_WORDINGS) == set(WarningKind)
    record = WarningRecord.from_json({"kind": "worker-spread", "level": "warning", "arm": "event",
                                      "figures": {"of": "p50_ns", "max_over_min": 2.0}})
    assert record.kind is WarningKind.WORKER_SPREAD and record.to_dict()["kind"] == "worker-spread"
    assert format_warning(record).startswith("event: worker processes disagree (their medians differ 2.0×)")
    assert word({"kind": "newer-kind", "arm": "x", "figures": {"a": 1}}) == 'x: newer-kind: {"a": 1}'
    # A pre-0.2 sentence is a warning, a percentiles-omitted entry a note: the split the WARNINGS and Notes sections make.
    old, note = (WarningRecord.from_json(w) for w in ("an old sentence", {"kind": "percentiles-omitted", "level": "note", "figures": {}}))
    assert (old.text, old.is_note) == ("an old sentence", False) and (note.kind, note.is_note) == (WarningKind.PERCENTILES_OMITTED, True)
