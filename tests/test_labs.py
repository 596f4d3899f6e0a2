"""Labs name only arms that exist, and compare only arms they run."""

from __future__ import annotations

import pytest

from wakelab.analysis.caveats import pair_arms, waiter_at_t0
from wakelab.core.registry import arm_names, get_arm
from wakelab.errors import UsageError
from wakelab.labs import LAB_135, MATCHED_PAIRS, Comparison, all_labs, get_lab, lab_arm_names


@pytest.mark.parametrize("lab", all_labs(), ids=lambda lab: lab.id)
def test_lab_arms_and_comparisons_exist(lab) -> None:
    names = lab_arm_names(lab)
    assert names and len(set(names)) == len(names)
    assert set(names) <= set(arm_names())
    for comparison in lab.comparisons:
        assert comparison.a in names and comparison.b in names


@pytest.mark.parametrize("gil", [True, False], ids=["gil", "no-gil"])
@pytest.mark.parametrize("lab_id", ["matched", "catalogue"])
def test_matched_pairs_are_like_for_like(lab_id, gil) -> None:
    # Waiter state, scope and what the waiter does at t0, as the analysis judges them, under
    # either kind of build: the matched lab reports no pair as like for like that is not.
    for comparison in get_lab(lab_id).comparisons:
        pairing = pair_arms(get_arm(comparison.a).describe(), get_arm(comparison.b).describe(), gil)
        assert pairing.like_for_like, (comparison, pairing.differences)


def test_the_old_spinning_pair_is_not_like_for_like() -> None:
    spin = pair_arms(get_arm("sigusr1-self").describe(), get_arm("event-spin").describe(), gil=True)
    assert [(d.aspect, d.a, d.b) for d in spin.differences] == [
        ("scope", "self", "cross-thread"),
        ("waiter at t0", "the notifier itself", "waiting for the GIL"),
    ]
    assert Comparison("sigusr1-self", "event-spin") not in MATCHED_PAIRS


def test_waiter_at_t0() -> None:
    assert waiter_at_t0(get_arm("event").describe(), gil=True) == "parked in the kernel"
    assert waiter_at_t0(get_arm("event-spin").describe(), gil=True) == "waiting for the GIL"
    assert waiter_at_t0(get_arm("event-spin").describe(), gil=False) == "polling"
    assert waiter_at_t0(get_arm("sigusr1-self").describe(), gil=True) == "the notifier itself"
    assert waiter_at_t0(get_arm("native-self-signal").describe(), gil=True) == "the notifier itself"
    assert waiter_at_t0(get_arm("signal-install").describe(), gil=True) == "no waiter"


def test_lab135_is_the_original_lab() -> None:
    assert get_lab("135") is LAB_135
    assert lab_arm_names(LAB_135) == ["event", "sigusr1-self", "signal-install"]
    assert (LAB_135.params.n, LAB_135.params.install_n, LAB_135.params.rounds) == (200, 20000, 7)


def test_catalogue_runs_every_arm() -> None:
    assert lab_arm_names(get_lab("catalogue")) == arm_names()


def test_unknown_lab_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown lab 'nope' \(valid: 135-signal-vs-event-wakeup, matched, catalogue, processes\)"):
        get_lab("nope")
