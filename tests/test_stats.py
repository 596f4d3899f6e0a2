"""Statistics: exact values on fixed samples, never real timing."""

from __future__ import annotations

import math

import pytest

from wakelab.analysis.stats import min_n_for, percentile, summarize_latency, summarize_rate
from wakelab.evidence.figures import RateFigures


def test_percentile_type7_interpolates_between_ranks() -> None:
    data = [10, 20, 30, 40]
    assert percentile(data, 0) == 10
    assert percentile(data, 100) == 40
    assert percentile(data, 50) == 25.0
    assert percentile(data, 90) == pytest.approx(37.0)
    assert percentile([5], 99) == 5


def test_percentile_rejects_empty_and_out_of_range() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1], 101)


@pytest.mark.parametrize("q, n", [(50, 1), (90, 10), (99, 100), (99.9, 1000)])
def test_min_n_for_tail_percentiles(q: float, n: int) -> None:
    assert min_n_for(q) == n


def test_summarize_latency_exact_figures() -> None:
    samples = list(range(1, 201))  # 1..200 ns
    stats = summarize_latency(samples, lost=3)
    assert stats.n == 200
    assert stats.lost == 3
    assert stats.min_ns == 1 and stats.max_ns == 200
    assert stats.mean_ns == 100.5
    assert stats.percentiles_ns["p50"] == 100.5
    assert stats.percentiles_ns["p90"] == pytest.approx(180.1)
    assert stats.percentiles_ns["p99"] == pytest.approx(198.01)
    assert "p99_9" not in stats.percentiles_ns
    assert stats.omitted == {"p99_9": "needs n >= 1000, this arm has n = 200"}
    assert stats.stdev_ns == pytest.approx(math.sqrt(sum((x - 100.5) ** 2 for x in samples) / 199))
    as_dict = stats.to_dict()
    assert as_dict["p99_9_ns"] is None and as_dict["p50_ns"] == 100.5


def test_summarize_latency_order_does_not_matter() -> None:
    assert summarize_latency([3, 1, 2]) == summarize_latency([1, 2, 3])


def test_summarize_latency_small_and_empty_samples() -> None:
    one = summarize_latency([7])
    assert one.percentiles_ns == {"p50": 7}
    assert one.stdev_ns is None
    assert set(one.omitted) == {"p90", "p99", "p99_9"}
    empty = summarize_latency([], lost=5)
    assert empty.n == 0 and empty.lost == 5 and empty.min_ns is None and empty.mean_ns is None
    assert empty.omitted["p50"] == "no samples"


def test_p99_9_reported_from_1000_samples() -> None:
    stats = summarize_latency(list(range(1000)))
    assert stats.percentiles_ns["p99_9"] == pytest.approx(998.001)


def test_summarize_rate_median_round_and_baseline() -> None:
    # 1000 ops per round; rounds of 1, 2 and 4 ms -> 1e6, 5e5, 2.5e5 ops/s.
    stats = summarize_rate(1000, [2_000_000, 1_000_000, 4_000_000], [100_000, 100_000, 300_000])
    assert stats.rounds == 3
    assert stats.ops_per_s == 500_000
    assert stats.min_ops_per_s == 250_000
    assert stats.max_ops_per_s == 1_000_000
    assert stats.baseline_ops_per_s == 10_000_000
    assert stats.ns_per_op == 2000
    assert stats.net_ns_per_op == 1900
    # The evidence model's RateFigures, stored in summary.json's order: net_ns_per_op after ns_per_op.
    assert isinstance(stats, RateFigures) and list(stats.to_dict())[-2:] == ["ns_per_op", "net_ns_per_op"]


def test_summarize_rate_rejects_empty() -> None:
    with pytest.raises(ValueError):
        summarize_rate(10, [], [1])
    with pytest.raises(ValueError):
        summarize_rate(0, [1], [1])
