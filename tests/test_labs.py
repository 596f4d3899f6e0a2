"""Labs name only arms that exist, and compare only arms they run."""

from __future__ import annotations

import pytest

from wakelab.core.registry import arm_names, get_arm
from wakelab.errors import UsageError
from wakelab.labs import LAB_135, all_labs, get_lab, lab_arm_names


@pytest.mark.parametrize("lab", all_labs(), ids=lambda lab: lab.id)
def test_lab_arms_and_comparisons_exist(lab) -> None:
    names = lab_arm_names(lab)
    assert names and len(set(names)) == len(names)
    assert set(names) <= set(arm_names())
    for comparison in lab.comparisons:
        assert comparison.a in names and comparison.b in names


def test_matched_pairs_are_like_for_like() -> None:
    matched = get_lab("matched")
    for comparison in matched.comparisons:
        assert get_arm(comparison.a).waiter == get_arm(comparison.b).waiter


def test_lab135_is_the_original_lab() -> None:
    assert get_lab("135") is LAB_135
    assert lab_arm_names(LAB_135) == ["event", "sigusr1-self", "signal-install"]
    assert (LAB_135.params.n, LAB_135.params.install_n, LAB_135.params.rounds) == (200, 20000, 7)


def test_catalogue_runs_every_arm() -> None:
    assert lab_arm_names(get_lab("catalogue")) == arm_names()


def test_unknown_lab_lists_the_valid_ones() -> None:
    with pytest.raises(UsageError, match=r"unknown lab 'nope' \(valid: 135-signal-vs-event-wakeup, matched, catalogue, processes\)"):
        get_lab("nope")
