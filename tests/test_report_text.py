"""summary.txt rendering: exact output for a fixed summary (golden file)."""

from __future__ import annotations

import os

from conftest import GOLDEN
from wakelab.analysis.caveats import derive_caveats
from wakelab.analysis.quality import derive_warnings
from wakelab.formatting import format_ns, format_rate, format_ratio, format_us
from wakelab.report.text import format_summary


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


def test_like_for_like_pairs_are_not_flagged(lab135_summary) -> None:
    lab135_summary["arms"][1]["waiter"] = "blocked"
    caveats = derive_caveats(lab135_summary)
    assert not any("not identical models" in c for c in caveats)
    assert "like for like: both waiters blocked" in format_summary(lab135_summary)


def test_caveats_for_lost_planted_and_interrupted(lab135_summary) -> None:
    lab135_summary["arms"][0]["latency"]["lost"] = 2
    lab135_summary["parameters"]["planted_delay_us"] = 2000
    lab135_summary["interrupted"] = True
    caveats = derive_caveats(lab135_summary)
    assert any("lost 2 of 202" in c for c in caveats)
    assert any("planted delay of 2000 µs" in c for c in caveats)
    assert any("interrupted" in c for c in caveats)


def test_figures_near_timer_floor_are_flagged(lab135_summary) -> None:
    lab135_summary["timer"]["floor_p50_ns"] = 300
    warnings = derive_warnings(lab135_summary)
    assert any(w.startswith("sigusr1-self: p50 2.10 µs is within 10× the timer floor (300 ns)") for w in warnings)
    assert not any(w.startswith("event:") for w in warnings)


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
