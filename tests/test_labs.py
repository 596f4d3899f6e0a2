"""Labs name only arms that exist, and compare only arms they run."""

from __future__ import annotations

import pytest

from wakelab.analysis.caveats import pair_arms, waiter_at_t0
from wakelab.core.registry import arm_names, get_arm
from wakelab.errors import UsageError
from wakelab.labs import (
    LAB_135, MATCHED_PAIRS, Comparison, RunShape, all_labs, get_lab, lab_arm_names, lab_for_run,
)

WORKERS_3 = RunShape(in_process=False, workers=3)


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
    with pytest.raises(UsageError, match=r"unknown lab 'nope' \(valid: 135-signal-vs-event-wakeup, matched, catalogue, processes, handoff, free-threading, storms, realtime, custom\)"):
        get_lab("nope")


@pytest.mark.parametrize("lab", all_labs(), ids=lambda lab: lab.id)
def test_a_lab_run_with_its_own_arms_is_that_lab(lab) -> None:
    arms = lab_arm_names(lab)
    for order in (arms, arms[::-1]):
        ran = lab_for_run(lab, order, WORKERS_3)
        assert (ran.id, ran.title, ran.question, ran.comparisons) == (lab.id, lab.title, lab.question, lab.comparisons)


def test_a_custom_selection_is_its_own_lab() -> None:
    lab = lab_for_run(LAB_135, ["event", "queue"], WORKERS_3)
    assert (lab.id, lab.title, lab.arms, lab.comparisons) == ("custom", "Custom selection: event, queue", ("event", "queue"), ())
    assert lab.reproduce_script is None and lab.params == LAB_135.params and lab.based_on == LAB_135.id
    prose = " ".join((lab.title, lab.question) + lab.methodology + lab.limits)
    assert "Lab 135" not in prose and LAB_135.question not in prose
    assert "SIGUSR1" not in prose and "ratio as" not in prose  # none of Lab 135's methodology
    assert "claims none of that lab's question" in lab.methodology[0]
    assert "No ratio is reported" in lab.methodology[2]


def test_a_custom_selection_keeps_only_comparisons_it_runs_both_arms_of() -> None:
    matched = get_lab("matched")
    lab = lab_for_run(matched, ["event", "pause-handler", "pipe", "sigwait-thread-to-main"], WORKERS_3)
    assert lab.id == "custom"
    assert lab.comparisons == (Comparison("pause-handler", "event"), Comparison("sigwait-thread-to-main", "event"))
    assert "pause-handler / event, sigwait-thread-to-main / event, kept from the matched lab" in lab.methodology[2]
    # Lab 135's arms and one more: a selection still, with Lab 135's own comparison.
    plus = lab_for_run(LAB_135, ["event", "sigusr1-self", "signal-install", "pipe"], WORKERS_3)
    assert plus.id == "custom" and plus.comparisons == LAB_135.comparisons
    # --lab custom (what a custom run's REPRODUCE line says): the presets' comparisons it runs both arms of.
    again = lab_for_run(get_lab("custom"), ["event", "sigusr1-self", "signal-install", "pipe"], WORKERS_3)
    assert (again.id, again.title, again.comparisons, again.limits) == (plus.id, plus.title, plus.comparisons, plus.limits)


def test_long_selections_keep_the_title_short() -> None:
    names = arm_names()[:9]
    lab = lab_for_run(get_lab("catalogue"), names, WORKERS_3)
    assert lab.title == "Custom selection: %s and 3 more" % ", ".join(names[:6])


@pytest.mark.parametrize("lab", all_labs(), ids=lambda lab: lab.id)
@pytest.mark.parametrize("shape", [RunShape(False, 3), RunShape(False, 1), RunShape(True, 3)], ids=["workers3", "workers1", "in-process"])
def test_limits_and_methodology_say_how_the_run_was_made(lab, shape) -> None:
    for arms in (lab_arm_names(lab), lab_arm_names(lab)[:1]):
        ran = lab_for_run(lab, arms, shape)
        prose = " ".join(ran.methodology + ran.limits)
        if shape.in_process:
            assert "worker process" not in prose
        else:
            assert "one process" not in prose and "the runner's own process" not in prose
        # Lab 135, the catalogue and every custom selection say where the arms ran.
        if ran.id in (LAB_135.id, "catalogue", "custom"):
            said = {(True, 3): "the runner's own process", (False, 3): "3 fresh worker processes",
                    (False, 1): "a fresh worker process of its own"}
            assert said[shape.in_process, shape.workers] in prose


def test_execution_wording() -> None:
    limit = lab_for_run(LAB_135, lab_arm_names(LAB_135), WORKERS_3).limits[0]
    assert limit == "One machine and one interpreter per run; each arm ran in 3 fresh worker processes, its wakes split between them and pooled."
    assert lab_for_run(LAB_135, lab_arm_names(LAB_135), RunShape(False, 1)).limits[0] == (
        "One machine and one interpreter per run; each arm ran in a fresh worker process of its own.")
    assert lab_for_run(LAB_135, lab_arm_names(LAB_135), RunShape(True, 3)).limits[0] == (
        "One machine and one interpreter per run; each arm ran in the runner's own process.")
    catalogue = get_lab("catalogue")
    method = lab_for_run(catalogue, lab_arm_names(catalogue), RunShape(False, 2, open_loop=True)).methodology[0]
    assert method == ("Every arm available here runs in turn, in 2 fresh worker processes of its own, with the same "
                      "parameters. Notifies go out on a fixed schedule (open loop) and each latency is taken from the "
                      "scheduled instant; waiters are not left to settle first.")
    processes = get_lab("processes")
    assert lab_for_run(processes, lab_arm_names(processes), WORKERS_3).methodology[0].endswith(
        "Children are started once per arm in each worker process; start-up is in no sample.")


@pytest.mark.parametrize("placements, says", [
    (("any",), "where each side ran is not pinned."),
    (("split",), "--placement pins the notifier and waiter to virtual CPUs, not to physical ones."),
    (("same", "any"), "some cells pin the notifier and waiter (--placement), others leave them unpinned."),
])
def test_limits_say_whether_the_sides_were_pinned(placements, says) -> None:
    matched = get_lab("matched")
    limits = lab_for_run(matched, lab_arm_names(matched), RunShape(False, 3, placements=placements)).limits
    assert limits[1].endswith("behaviour; " + says)
