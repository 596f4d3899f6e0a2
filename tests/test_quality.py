"""Quality warnings and notes: exact records from fixed inputs, no real timing."""

from __future__ import annotations

import copy
import random

import math
from typing import Any

from wakelab.analysis.quality import (
    QualityFlags,
    derive_warnings,
    find_polling,
    find_populations,
    gil_contended,
    polling_statistics,
    quality_flags,
    switch_interval_tail,
)

# A three-mode event run: 30% near 5 µs, 50% near 20 µs, 20% near 80 µs.
SMALL_MODE = [5000 + 10 * i for i in range(60)]
LARGE_MODE = [20_000 + 50 * i for i in range(100)]
SLOW_MODE = [80_000 + 200 * i for i in range(40)]
THREE_MODES = SMALL_MODE + LARGE_MODE + SLOW_MODE
THREE_POPULATIONS = [
    # 10th..90th percentile of each mode's own samples (type 7): measured values, not bin centres.
    {"share": 0.5, "low_ns": 20_495, "high_ns": 24_455},
    {"share": 0.3, "low_ns": 5_059, "high_ns": 5_531},
    {"share": 0.2, "low_ns": 80_780, "high_ns": 87_020},
]
OMITTED_NOTE = {
    "kind": "percentiles-omitted",
    "level": "note",
    "arm": None,
    "figures": {"left_out": [{"percentile": "p99_9", "n": 200, "needs_n": 1000}]},
}


def _written(record: Any) -> Any:
    """A flag as summary.json stores it (None for none)."""
    return None if record is None else record.to_dict()


def test_one_population_has_none() -> None:
    rng = random.Random(1)
    assert find_populations([int(20_000 * rng.lognormvariate(0, 0.2)) for _ in range(500)]) is None
    assert find_populations([20_000 + 100 * i for i in range(200)]) is None


def test_two_populations_are_found_with_their_measured_ranges() -> None:
    rng = random.Random(2)
    fast = [int(5_000 * rng.lognormvariate(0, 0.1)) for _ in range(300)]
    slow = [int(40_000 * rng.lognormvariate(0, 0.1)) for _ in range(200)]
    assert _written(find_populations(fast + slow)) == {
        "populations": [{"share": 0.6, "low_ns": 4420, "high_ns": 5681}, {"share": 0.4, "low_ns": 34526, "high_ns": 44947}]
    }


def test_the_largest_populations_come_first_not_the_fastest() -> None:
    # The old detector took the first pair of peaks: the 5 µs and 20 µs modes, the two fastest.
    assert _written(find_populations(THREE_MODES)) == {"populations": THREE_POPULATIONS}
    assert _written(find_populations(list(reversed(THREE_MODES)))) == {"populations": THREE_POPULATIONS}


def test_a_small_bump_is_not_a_population() -> None:
    # 8% near 80 µs: below the 10% a population must hold.
    assert find_populations(LARGE_MODE * 2 + SLOW_MODE[:17]) is None


def test_too_few_samples_say_nothing() -> None:
    assert find_populations([1000] * 10 + [100_000] * 10) is None


def test_switch_interval_tail_counts_a_narrow_band_at_each_multiple() -> None:
    samples = [20_000] * 95 + [5_000_000, 5_100_000, 9_900_000, 4_950_000, 10_200_000]
    assert _written(switch_interval_tail(samples, 0.005)) == {"share": 0.05, "count": 5, "interval_s": 0.005, "multiples": [1, 2]}
    assert switch_interval_tail([20_000] * 99 + [5_000_000], 0.005) is None  # one stray sample
    assert switch_interval_tail(samples, 0.002) is None  # 5 and 10 ms are not just above a multiple of 2 ms
    assert switch_interval_tail(samples, None) is None  # no Python thread holds the GIL


def test_switch_interval_tail_ignores_what_the_old_wide_window_took() -> None:
    # 4.1, 6.2, 8.1, 12.4 and 22 ms all fell in the old 4-6.25 / 8-12.5 / 16-25 ms windows.
    assert switch_interval_tail([20_000] * 95 + [4_100_000, 6_200_000, 8_100_000, 12_400_000, 22_000_000], 0.005) is None


def test_a_broad_tail_is_not_clustering() -> None:
    broad = [2_500_000 + i * 208_500 for i in range(200)]  # evenly from 2.5 to 44 ms
    assert switch_interval_tail([20_000] * 800 + broad, 0.005) is None
    clustered = broad + [5_050_000 + 1000 * i for i in range(40)] + [10_100_000 + 1000 * i for i in range(40)]
    # 80 clustered wakes, and 24 of the broad ones that happen to lie in a band.
    assert _written(switch_interval_tail([20_000] * 720 + clustered, 0.005)) == {
        "share": 0.104, "count": 104, "interval_s": 0.005, "multiples": [1, 2, 3, 4, 5, 6, 7, 8],
    }


def _entry(**fields):  # type: ignore[no-untyped-def]
    entry = {"name": "x", "family": "threads", "scope": "cross-thread", "waiter": "blocked", "workers": []}
    entry.update(fields)
    return entry


def test_gil_contended_only_with_busy_python_threads_and_a_gil() -> None:
    busy = {"interpreter": {"gil_enabled": True}, "conditions": {"cpu_threads": 1}}
    idle = {"interpreter": {"gil_enabled": True}, "conditions": {"cpu_threads": 0}}
    assert gil_contended(_entry(), busy) is True
    assert gil_contended(_entry(scope="self"), busy) is True
    assert gil_contended(_entry(), idle) is False
    assert gil_contended(_entry(workers=[{"applied": {"cpu_threads": 2}}]), idle) is True
    assert gil_contended(_entry(family="native"), busy) is False
    assert gil_contended(_entry(family="processes", scope="cross-process"), busy) is False
    assert gil_contended(_entry(), {"interpreter": {"gil_enabled": False}, "conditions": {"cpu_threads": 1}}) is False
    assert gil_contended(_entry(), {"interpreter": {"gil_enabled": None}, "conditions": {"cpu_threads": 1}}) is True


def test_a_default_run_has_only_the_p99_9_note(lab135_summary) -> None:
    assert derive_warnings(lab135_summary) == [OMITTED_NOTE]


def test_records_from_flags_and_spread(lab135_summary) -> None:
    summary = copy.deepcopy(lab135_summary)
    summary["conditions"]["cpu_threads"] = 1
    event = summary["arms"][0]
    event["quality"] = quality_flags(THREE_MODES[:150] + [5_000_000] * 5, 0.005).to_dict()
    event["spread"] = {"of": "p50_ns", "min": 10_000.0, "max": 25_000.0, "max_over_min": 2.5}
    records = derive_warnings(summary)
    assert records == [
        OMITTED_NOTE,
        {"kind": "worker-spread", "level": "warning", "arm": "event", "figures": {"of": "p50_ns", "max_over_min": 2.5,
                                                                                 "between": "workers"}},
        {
            "kind": "populations", "level": "warning", "arm": "event",
            "figures": {
                "populations": [
                    # 90 wakes of the 20 µs mode and the 5 ms ones: too few for a population of their own.
                    {"share": 0.6129, "low_ns": 20_470, "high_ns": 24_230},
                    {"share": 0.3871, "low_ns": 5_059, "high_ns": 5_531},
                ],
                "cause": None,
            },
        },
        {
            "kind": "switch-interval-tail", "level": "warning", "arm": "event",
            "figures": {"share": 0.0323, "count": 5, "interval_s": 0.005, "multiples": [1]},
        },
    ]
    # Without busy threads no Python thread holds the GIL: the same flags give no tail warning.
    summary["conditions"]["cpu_threads"] = 0
    assert [r["kind"] for r in derive_warnings(summary)] == ["percentiles-omitted", "worker-spread", "populations"]


def test_populations_name_a_cause_only_from_the_evidence(lab135_summary) -> None:
    event = lab135_summary["arms"][0]
    event["quality"] = quality_flags(THREE_MODES, 0.005).to_dict()

    def cause():  # type: ignore[no-untyped-def]
        (record,) = [r for r in derive_warnings(lab135_summary) if r["kind"] == "populations"]
        return record["figures"]["cause"]

    assert cause() is None
    event["workers"] = [{"p50_ns": 5_300.0}, {"p50_ns": 21_000.0}, {"p50_ns": 22_000.0}]
    assert cause() == {"kind": "workers", "worker_p50_ns": [5_300.0, 21_000.0, 22_000.0]}
    event["workers"] = [{"p50_ns": 21_000.0}, {"p50_ns": 22_000.0}]
    event["info"] = {"workers": [{"notifier_cpu_seen": 0, "waiter_cpu_seen": 0}, {"notifier_cpu_seen": 0, "waiter_cpu_seen": 1}]}
    assert cause() == {"kind": "placement", "same_cpu_workers": 1, "split_workers": 1}
    lab135_summary["parameters"]["placement"] = "split"  # pinned: where the sides ran is not what varied
    assert cause() is None


def test_timer_floor_fires_on_a_slow_clock(lab135_summary) -> None:
    assert not [r for r in derive_warnings(lab135_summary) if r["kind"] == "timer-floor"]
    lab135_summary["timer"]["floor_p50_ns"] = 300  # an hpet-like clock: about 1 µs per read is common
    lab135_summary["arms"][1]["components"] = {"handler": {"p50_ns": 900.0}}
    assert [r for r in derive_warnings(lab135_summary) if r["kind"] == "timer-floor"] == [
        {"kind": "timer-floor", "level": "warning", "arm": "sigusr1-self",
         "figures": {"series": None, "p50_ns": 2099.5, "floor_ns": 300, "multiple": 10, "clocksource": "tsc"}},
        {"kind": "timer-floor", "level": "warning", "arm": "sigusr1-self",
         "figures": {"series": "handler", "p50_ns": 900.0, "floor_ns": 300, "multiple": 10, "clocksource": "tsc"}},
    ]


# -- polling: wakes spread evenly up to a period -----------------------------------------------------------------

EVEN = [100_000 + 10_000 * i for i in range(200)]  # 100 µs .. 2.09 ms, evenly


def test_an_even_spread_is_described_exactly() -> None:
    assert polling_statistics(EVEN) == {
        "low_ns": 100_000, "high_ns": 2_090_000, "period_ns": 1_990_000, "distance": 0.005, "edge": 0.02,
        "spread_over_floor": 16.6, "thinnest_part": 0.975, "thickest_part": 1.0, "n": 200,
    }
    assert polling_statistics(EVEN[:49]) is None  # too few wakes to judge a shape
    assert polling_statistics([5000] * 100) is None  # no spread at all


def test_an_even_spread_is_a_poll_and_the_random_part_decides_whether_the_period_is_measured() -> None:
    wide = find_polling(EVEN, settle_jitter_us=4000)
    assert wide is not None and wide.period_ns == 1_990_000 and wide.spans_jitter is False
    # As wide as the random part of the settle: the period may be longer than what it reached.
    assert find_polling(EVEN, settle_jitter_us=2000).spans_jitter is True  # type: ignore[union-attr]
    assert find_polling(EVEN).spans_jitter is None  # type: ignore[union-attr]


def test_an_arm_that_takes_no_settle_is_not_looked_at_for_polling() -> None:
    # A storm's receiver never waits for one probe at a time: an even spread of its reactions says
    # nothing about a poll (a catalogue run flagged four storm arms as "these waits poll").
    assert quality_flags(EVEN, None, settle_jitter_us=2000).polling is not None
    assert quality_flags(EVEN, None, settle_jitter_us=2000, settles=False).polling is None
    from wakelab.core.registry import all_arms

    storms = [arm for arm in all_arms() if arm.family == "storms"]
    assert storms and all(not arm.settles for arm in storms)
    assert all(arm.settles for arm in all_arms() if arm.family != "storms")


def _poll(rng: random.Random, n: int, period_us: float, jitter_us: float) -> list:
    """Wakes of a wait polled every ``period_us`` after a settle of 1 ms plus a random part."""
    return [int(1000 * (period_us - ((1000 + rng.uniform(0, jitter_us)) % period_us) + 60 + abs(rng.gauss(0, 20))))
            for _ in range(n)]


def test_polls_are_found_with_their_period() -> None:
    rng = random.Random(7)
    for period_us, jitter_us in ((2080, 2080), (2080, 4160), (2080, 3950), (10_050, 20_100), (1060, 2120)):
        for n in (200, 1000):
            found = find_polling(_poll(rng, n, period_us, jitter_us), int(jitter_us))
            assert found is not None, (period_us, jitter_us, n)
            assert abs(found.period_ns - 1000 * period_us) <= 0.1 * 1000 * period_us


def test_the_shapes_of_waits_that_block_are_not_polls() -> None:
    rng = random.Random(11)
    for n in (50, 200, 1000):
        shapes = {
            "lognormal 0.5": [int(20_000 * math.exp(rng.gauss(0, 0.5))) for _ in range(n)],
            "lognormal 1.0": [int(20_000 * math.exp(rng.gauss(0, 1.0))) for _ in range(n)],
            "gamma k=4": [int(10_000 * rng.gammavariate(4, 1)) for _ in range(n)],
            "normal": [max(1, int(rng.gauss(100_000, 30_000))) for _ in range(n)],
            # Two levels, as a 2-vCPU VM gives a blocked wake: the same CPU or the other, idle, one.
            "two levels": [int(rng.gauss(15_000, 2000) if rng.random() < 0.5 else rng.gauss(35_000, 4000)) for _ in range(n)],
            # A busy Python thread: the waiter gets the GIL at once, or after a 5 ms switch interval.
            "busy thread": [int(rng.gauss(20_000, 3000) if rng.random() < 0.5 else 5_000_000 + rng.expovariate(1 / 200_000))
                            for _ in range(n)],
        }
        for name, samples in shapes.items():
            assert find_polling(samples, 2000) is None, (name, n, polling_statistics(samples))


def test_a_polling_flag_is_a_warning_record(lab135_summary) -> None:
    summary = copy.deepcopy(lab135_summary)
    summary["arms"][0]["quality"] = quality_flags(EVEN, None, settle_jitter_us=4000).to_dict()
    records = derive_warnings(summary)
    assert records[-1] == {"kind": "polling", "level": "warning", "arm": "event", "figures": {
        "low_ns": 100_000, "high_ns": 2_090_000, "period_ns": 1_990_000, "distance": 0.005, "edge": 0.02,
        "spread_over_floor": 16.6, "thinnest_part": 0.975, "thickest_part": 1.0, "n": 200,
        "settle_jitter_us": 4000, "spans_jitter": False,
    }}
    # Older bundles' flags have no polling key: nothing is said.
    del summary["arms"][0]["quality"]["polling"]
    assert [r["kind"] for r in derive_warnings(summary)] == ["percentiles-omitted"]



def test_the_flags_are_written_in_a_fixed_order_and_read_back_whole() -> None:
    flags = quality_flags(THREE_MODES[:150] + [5_000_000] * 5, 0.005)
    assert flags.populations is not None and flags.switch_interval_tail is not None
    written = flags.to_dict()
    assert list(written) == ["populations", "switch_interval_tail", "polling"]
    assert list(written["switch_interval_tail"]) == ["share", "count", "interval_s", "multiples"]
    assert QualityFlags.from_dict(written) == flags
    polled = quality_flags(EVEN, None, settle_jitter_us=4000)
    assert polled.polling is not None
    assert list(polled.to_dict()["polling"]) == [
        "low_ns", "high_ns", "period_ns", "distance", "edge", "spread_over_floor", "thinnest_part", "thickest_part", "n",
        "settle_jitter_us", "spans_jitter",
    ]
    assert QualityFlags.from_dict(polled.to_dict()) == polled
    # No flags stored (a rate arm's entry, an older bundle): none read.
    assert QualityFlags.from_dict(None) == QualityFlags.from_dict({}) == QualityFlags()
