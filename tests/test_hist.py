"""``wakelab show RUN --hist``: log-binned histograms (analysis.histogram) laid out for a terminal (report.hist)."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wakelab.analysis.histogram import Bin, Histogram, choose_bins_per_decade, log_histogram
from wakelab.analysis.stats import percentile
from wakelab.cli import main
from wakelab.evidence import bundle
from wakelab.report.hist import format_histogram

EVENT_NS = [10_000 + 1000 * i for i in range(200)]
SIGNAL_NS = [2000 + i for i in range(200)]


def write_bundle(folder, summary: Dict[str, Any]) -> str:
    os.makedirs(folder, exist_ok=True)
    (folder / "summary.json").write_text(bundle.dumps(summary), encoding="utf-8")
    for arm_name, samples in {"event": EVENT_NS, "sigusr1-self": SIGNAL_NS}.items():
        raw = {"kind": "latency", "samples_ns": samples, "lost": 0, "warmup_discarded": 10, "components_ns": {}}
        bundle.write_samples(str(folder), arm_name, bundle.samples_doc(arm_name, raw))
    raw = {"kind": "rate", "n_per_round": 20000, "round_ns": [20_000_000] * 7, "baseline_round_ns": [400_000] * 7, "warmup_rounds": 1}
    bundle.write_samples(str(folder), "signal-install", bundle.samples_doc("signal-install", raw))
    return str(folder)


def arm(summary: Dict[str, Any], name: str) -> Dict[str, Any]:
    return next(a for a in summary["arms"] if a["name"] == name)


def show(capsys, *args: str):
    status = main(["show", *args])
    out, err = capsys.readouterr()
    return status, out, err


def bin_counts(text: str) -> List[int]:
    """The count of every bin row of ``show --hist`` output."""
    return [int(m) for m in re.findall(r"^ +\S+ [nµm]?s – +\S+ [nµm]?s +(\d+)(?: |$)", text, flags=re.MULTILINE)]


def edge(k: int, per_decade: int = 10) -> float:
    return 10.0 ** (k / per_decade)


# -- binning ---------------------------------------------------------------------------------------


def test_a_known_distribution_lands_in_the_right_bins() -> None:
    samples = [1000] * 5 + [2000] * 3 + [1_000_000]
    hist = log_histogram(samples, bins_per_decade=10)
    assert hist.n == 9 and hist.zero_count == 0 and (hist.min_ns, hist.max_ns) == (1000, 1_000_000)
    # From the bin starting at 1 µs (10^3.0) to the one starting at 1 ms (10^6.0): 31 bins.
    assert len(hist.bins) == 31
    assert hist.bins[0] == Bin(1000.0, edge(31), 5)
    assert hist.bins[3] == Bin(edge(33), edge(34), 3)  # 1995.3 <= 2000 < 2511.9
    assert hist.bins[-1] == Bin(1_000_000.0, edge(61), 1)
    assert [b.count for b in hist.bins].count(0) == 28
    assert all(a.high_ns == b.low_ns for a, b in zip(hist.bins, hist.bins[1:]))  # contiguous


def test_a_wake_on_an_edge_belongs_to_the_bin_that_starts_there() -> None:
    hist = log_histogram([9_999, 10_000, 10_001, 100_000], bins_per_decade=10)
    assert hist.bins[0] == Bin(edge(39), 10_000.0, 1)
    assert hist.bins[1] == Bin(10_000.0, edge(41), 2)
    assert hist.bins[-1] == Bin(100_000.0, edge(51), 1)


def test_edges_are_the_same_for_every_run() -> None:
    a = log_histogram([3_000, 40_000], bins_per_decade=5)
    b = log_histogram([35_000, 900_000], bins_per_decade=5)
    edges_a = {x.low_ns for x in a.bins}
    edges_b = {x.low_ns for x in b.bins}
    assert edges_a & edges_b == {edge(k, 5) for k in range(22, 24)}  # the decade 10^4.4 .. 10^4.6 both span


def test_a_far_outlier_does_not_squash_the_body() -> None:
    body = [10_000 + 10 * i for i in range(1000)]  # 10.00 .. 19.99 µs
    hist = log_histogram(body + [50_000_000])  # one 50 ms wake
    full = [b for b in hist.bins if b.count]
    assert len(full) >= 4  # the body keeps its shape: linear bins reaching 50 ms would hold it all in one
    assert sum(b.count for b in full[:-1]) == 1000 and full[-1].count == 1
    assert len(hist.bins) <= 40


def test_resolution_falls_to_fit_the_rows() -> None:
    assert choose_bins_per_decade(1_000, 9_000) == 10
    assert choose_bins_per_decade(1_000, 10_000_000_000) == 5  # 7 decades: 70 bins at 10, 35 at 5
    assert choose_bins_per_decade(1, 1e12) == 2  # 12 decades: 24 bins
    assert log_histogram([1_000, 10_000_000_000]).bins_per_decade == 5


def test_percentiles_are_the_summarys() -> None:
    samples = EVENT_NS
    hist = log_histogram(samples)
    assert hist.p50_ns == percentile(sorted(samples), 50) == 109_500.0
    assert hist.p99_ns == percentile(sorted(samples), 99) == 207_010.0
    assert log_histogram(samples[:99]).p99_ns is None  # p99 needs 100 wakes, as in summary.json
    assert hist.bin_index(hist.p50_ns) == next(i for i, b in enumerate(hist.bins) if b.low_ns <= 109_500 < b.high_ns)


def test_zero_and_bad_samples() -> None:
    hist = log_histogram([0, 0, 500])
    assert hist.zero_count == 2 and sum(b.count for b in hist.bins) == 1 and hist.min_ns == 0
    assert log_histogram([0]).bins == ()
    with pytest.raises(ValueError, match="no samples"):
        log_histogram([])
    with pytest.raises(ValueError, match="negative"):
        log_histogram([5, -1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**11), min_size=1, max_size=300))
def test_every_wake_is_counted_once_in_its_own_bin(samples: List[int]) -> None:
    hist = log_histogram(samples)
    assert hist.zero_count + sum(b.count for b in hist.bins) == len(samples)
    for value in samples:
        if value:
            index = hist.bin_index(value)
            assert index is not None
            assert hist.bins[index].low_ns <= value < hist.bins[index].high_ns
    if hist.bins:
        assert hist.bins[0].count and hist.bins[-1].count  # no empty bins at either end
        assert len(hist.bins) <= 40


# -- layout ----------------------------------------------------------------------------------------


def test_layout_of_a_known_histogram() -> None:
    hist = Histogram(n=9, bins_per_decade=10, bins=(
        Bin(1000.0, edge(31), 5), Bin(edge(31), edge(32), 0), Bin(edge(32), edge(33), 3),
        Bin(edge(33), edge(34), 0), Bin(edge(34), edge(35), 0), Bin(edge(35), edge(36), 0),
        Bin(edge(36), edge(37), 1),
    ), zero_count=0, min_ns=1000, max_ns=4500, p50_ns=1000.0, p99_ns=None)
    text = format_histogram("event", hist, width=60)
    assert text == (
        "event: 9 wakes, on log bins (10 per decade)\n"
        "  min 1.00 µs   p50 1.00 µs   p99 - (needs 100 wakes)   max 4.50 µs\n"
        "  1.00 µs – 1.26 µs 5 ████████████████████████ ◀ p50 1.00 µs\n"
        "  1.26 µs – 1.58 µs 0\n"
        "  1.58 µs – 2.00 µs 3 ██████████████\n"
        "  ⋮ none from 2.00 µs to 3.98 µs\n"
        "  3.98 µs – 5.01 µs 1 █████\n"
    )
    assert max(len(line) for line in text.splitlines()[2:]) <= 60


def test_a_lone_outlier_still_shows_and_both_marks_appear() -> None:
    hist = log_histogram(EVENT_NS * 10 + [50_000_000])
    text = format_histogram("event", hist, width=80)
    rows = text.splitlines()[2:]
    assert rows[-1].endswith(" 1 ▏")  # too small for a full block, never invisible
    assert sum("◀ p50 110 µs" in r for r in rows) == 1 and sum("◀ p99 208 µs" in r for r in rows) == 1
    marks = [r.index("◀") for r in rows if "◀" in r]
    assert len(set(marks)) == 1  # marks line up in one column
    assert any(r.lstrip().startswith("⋮ none from") for r in rows)


def test_titles_are_escaped() -> None:
    text = format_histogram("ev\x1b]0;pwned\x07il", log_histogram([1000]))
    assert "\x1b" not in text and "\x07" not in text and "ev\\x1b]0;pwned\\x07il" in text


# -- wakelab show --hist -----------------------------------------------------------------------------


def test_show_hist_draws_every_latency_arm_and_names_the_rate_arm(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, out, err = show(capsys, folder, "--hist")
    assert (status, err) == (0, "")
    titles = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert titles == [
        "event (blocked waiter, cross-thread): 200 wakes, on log bins (10 per decade)",
        "sigusr1-self (spinning waiter, self): 200 wakes, on log bins (10 per decade)",
        "Not shown: signal-install (rate arm: it times rounds of calls, not wakes).",
    ]
    assert sum(bin_counts(out)) == 400  # every wake of both arms is in a bin


def test_show_hist_of_one_arm(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, out, _ = show(capsys, folder, "--hist", "sigusr1-self")
    assert status == 0
    assert out.startswith("sigusr1-self (spinning waiter, self): 200 wakes")
    assert "event" not in out and "Not shown" not in out
    assert "◀ p50 2.10 µs, p99 2.20 µs" in out  # one bin holds both
    status, out, _ = show(capsys, folder, "--hist", "sigusr1-self,event")
    assert status == 0 and out.index("sigusr1-self (") < out.index("\nevent (")


@pytest.mark.parametrize("wanted, message", [
    ("evnt", "%s: unknown arm 'evnt' (did you mean 'event'?); its latency arms: event, sigusr1-self"),
    ("nothing-like-it", "%s: unknown arm 'nothing-like-it' (its latency arms: event, sigusr1-self)"),
    ("condition", "%s: arm 'condition' was not measured in this run (its latency arms: event, sigusr1-self)"),
    ("signal-install", "arm signal-install is a rate arm: it times rounds of calls, not wakes, so it has no samples "
                       "to draw (its rounds are in summary.txt)"),
])
def test_show_hist_refuses_an_arm_it_cannot_draw(tmp_path, lab135_summary, capsys, wanted, message) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, out, err = show(capsys, folder, "--hist", wanted)
    assert (status, out) == (2, "")
    assert err == "wakelab: error: %s\n" % (message % folder if "%s" in message else message)


def test_show_hist_of_an_arm_that_was_not_measured(tmp_path, lab135_summary, capsys) -> None:
    arm(lab135_summary, "event").update(status="skipped", reason="no\nthreads here", latency=None, samples_file=None)
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, _, err = show(capsys, folder, "--hist", "event")
    assert (status, err) == (2, "wakelab: error: arm event has no wakes to draw: skipped: no threads here\n")
    status, out, _ = show(capsys, folder, "--hist")
    assert status == 0 and out.splitlines()[-1] == "Not shown: event (skipped: no threads here)."


def test_show_hist_escapes_evidence_strings(tmp_path, lab135_summary, capsys) -> None:
    arm(lab135_summary, "event")["waiter"] = "blocked\x1b[2J"
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, out, _ = show(capsys, folder, "--hist", "event")
    assert status == 0 and "\x1b" not in out and out.startswith("event (blocked\\x1b[2J waiter, cross-thread)")


def test_show_hist_with_corrupt_samples_is_one_line(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    (tmp_path / "run" / "samples" / "event.json").write_text("{", encoding="utf-8")
    status, out, err = show(capsys, folder, "--hist")
    assert (status, out) == (2, "") and err.count("\n") == 1 and "event.json is not valid JSON" in err


def test_show_hist_on_a_grid_asks_for_a_cell(tmp_path, lab135_summary, capsys) -> None:
    grid = tmp_path / "grid"
    write_bundle(grid / "cells" / "same", lab135_summary)
    (grid / "matrix.json").write_text("{}", encoding="utf-8")
    status, _, err = show(capsys, str(grid), "--hist")
    assert status == 2
    assert err == "wakelab: error: %s is a grid of runs, not one run: give --hist one of its cells (%s)\n" % (
        grid, grid / "cells" / "same")


def test_show_hist_before_the_run_is_understood(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    expected = show(capsys, folder, "--hist")
    assert show(capsys, "--hist", folder) == expected and expected[0] == 0
    status, out, err = show(capsys, "--hist", "event")
    assert (status, out) == (2, "")
    assert err == "wakelab: error: show needs PATH: an evidence folder or its summary.json, or a grid's folder " \
                  "(wakelab show PATH [--hist [ARM]])\n"


def test_show_without_hist_is_unchanged(tmp_path, lab135_summary, capsys) -> None:
    folder = write_bundle(tmp_path / "run", lab135_summary)
    status, out, _ = show(capsys, folder)
    assert status == 0 and "LEAD TABLE" in out and "◀" not in out


def test_log_bins_hold_a_real_run(tmp_path, capsys) -> None:
    folder = str(tmp_path / "ev")
    assert main(["run", "--in-process", "--arms", "event,signal-install", "-n", "150", "--warmup", "2",
                 "--install-n", "200", "--rounds", "2", "--no-history", "-q", "-o", folder]) == 0
    capsys.readouterr()
    status, out, err = show(capsys, folder, "--hist")
    assert (status, err) == (0, "")
    counts = bin_counts(out)
    assert sum(counts) == 150
    assert len(out.splitlines()) == 2 + len(counts) + out.count("⋮") + 2  # title, figures, rows; blank, note
