"""Quality warnings: exact fixtures, no real timing."""

from __future__ import annotations

import random

from wakelab.analysis.quality import derive_warnings, find_modes, quality_flags, switch_interval_tail


def test_one_population_has_no_modes() -> None:
    rng = random.Random(1)
    samples = [int(20_000 * rng.lognormvariate(0, 0.2)) for _ in range(500)]
    assert find_modes(samples) is None


def test_two_populations_are_found() -> None:
    rng = random.Random(2)
    fast = [int(5_000 * rng.lognormvariate(0, 0.1)) for _ in range(300)]
    slow = [int(40_000 * rng.lognormvariate(0, 0.1)) for _ in range(200)]
    modes = find_modes(fast + slow)
    assert modes is not None
    assert 4_000 < modes["low_mode_ns"] < 6_500
    assert 30_000 < modes["high_mode_ns"] < 50_000
    assert abs(modes["high_share"] - 0.4) < 0.02


def test_too_few_samples_say_nothing() -> None:
    assert find_modes([1000] * 10 + [100_000] * 10) is None


def test_switch_interval_tail() -> None:
    samples = [20_000] * 95 + [5_000_000, 5_100_000, 9_900_000, 4_900_000, 10_200_000]
    tail = switch_interval_tail(samples, 0.005)
    assert tail == {"share": 0.05, "interval_s": 0.005}
    assert switch_interval_tail([20_000] * 99 + [5_000_000], 0.005) is None  # one stray sample
    assert switch_interval_tail(samples, 0.001) is None  # 5 ms is not near 1..4 ms


def test_warnings_from_flags_and_spread(lab135_summary) -> None:
    event = lab135_summary["arms"][0]
    event["quality"] = quality_flags([20_000] * 95 + [5_000_000] * 5, 0.005)
    event["spread"] = {"of": "p50_ns", "min": 10_000.0, "max": 25_000.0, "max_over_min": 2.5}
    warnings = derive_warnings(lab135_summary)
    assert any(w.startswith("event: worker processes disagree (their medians differ 2.5×)") for w in warnings)
    assert any(w.startswith("event: 5.0% of wakes took about 1-4 switch intervals (5.00 ms each)") for w in warnings)
