"""Guidance computed from a run's figures: it follows the figures, respects the noise, cites only what was measured."""

from __future__ import annotations

import copy
import json
import os
import random
import re
import subprocess
import sys
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import pytest

from conftest import FIXED_INTERPRETER, FIXED_MACHINE, FIXED_SYSTEM, FIXED_TIMER, is_complete, summarize_raw, worker_spread
from wakelab.analysis.caveats import derive_caveats
from wakelab.analysis.guidance import (
    IN_PROCESS,
    LEADER,
    OPEN_LOOP,
    PITFALL,
    PREFER,
    SELF_TEST,
    SIGNALS,
    SLOWER,
    TAIL,
    UNCLEAR,
    Guidance,
    Ranking,
    format_ranking,
    format_times,
    guidance_dict,
    guidance_for,
    open_loop_note,
    rank_test_p,
    rank_wake_paths,
)
from wakelab.formatting import counted
from wakelab.analysis.quality import derive_warnings
from wakelab.analysis.stats import summarize_latency
from wakelab.core.model import MeasureParams, RawLatency, RawRate
from wakelab.evidence.model import Bundle
from wakelab.formatting import format_ns
from wakelab.harness import runner
from wakelab.labs import get_lab, lab_arm_names

# p50s (µs) of a real catalogue run on this project's 2-vCPU VM (wakelab 0.2.0, CPython 3.11.7).
CATALOGUE_P50_US: Dict[str, float] = {
    "event": 16.6, "condition": 16.9, "lock-handoff": 19.3, "semaphore": 27.3, "queue": 30.9, "simplequeue": 22.0,
    "future": 29.2, "event-spin": 19.7, "queue-spin": 22.5, "sigusr1-self": 3.53, "sigwait-thread-to-main": 26.8,
    "pause-handler": 37.9, "wakeup-fd-select": 36.3, "pthread-kill-sigwait": 21.0, "pipe": 14.1, "eventfd": 15.3,
    "socketpair": 18.4, "selector-pipe": 15.6, "call-soon-threadsafe": 34.7, "asyncio-event": 57.1,
    "run-coroutine-threadsafe": 135.0, "add-signal-handler": 82.6, "kill-sigwait-child": 20.4, "pipe-process": 15.7,
    "mp-event": 38.4, "mp-queue": 104.0, "eventfd-fork": 13.3, "native-condvar": 6.85, "native-pipe": 10.6,
    "native-eventfd": 8.46, "native-socketpair": 16.1, "native-selector-pipe": 10.6, "native-self-signal": 2.23,
    "native-sigwait": 15.2, "native-pause-handler": 16.3, "native-wakeup-fd-select": 16.8, "native-pipe-process": 7.33,
    "native-eventfd-fork": 6.76, "native-kill-sigwait-child": 10.3,
}
RATES_OPS = {"signal-install": 160_949.0, "native-sigaction-install": 3_469_984.0}
# Each worker's level, as a factor of the arm's: a narrow spread (4%), so clear differences stay clear.
NARROW = (0.98, 1.0, 1.02)


def _worker_samples(p50_ns: float, factor: float, m: int = 100, planted_ns: int = 0) -> Tuple[int, ...]:
    """``m`` wakes spread evenly from 0.8x to 1.2x of ``p50_ns * factor``, plus a tail wake at 4x."""
    level = p50_ns * factor
    body = [int(round(level * (0.8 + 0.4 * i / (m - 2)))) + planted_ns for i in range(m - 1)]
    return tuple(body + [int(round(level * 4)) + planted_ns])


def build_summary(
    lab_name: str,
    p50_us: Mapping[str, Optional[float]],
    arms: Optional[Sequence[str]] = None,
    factors: Mapping[str, Sequence[float]] = {},
    planted_us: Mapping[str, int] = {},
    rates: Mapping[str, float] = RATES_OPS,
    workers: bool = True,
) -> Dict[str, object]:
    """A summary of ``lab_name`` whose arms have these p50s (None: skipped), made by the runner's own code."""
    lab = get_lab(lab_name)
    names = list(arms) if arms is not None else lab_arm_names(lab)
    plan = runner.RunPlan(lab=lab, arm_names=names, params=MeasureParams(n=300, install_n=20000, rounds=7),
                          folder="/nonexistent", command=["wakelab", "run"])
    summary = runner.RunSummary.start(plan).to_dict()
    summary.update({
        "started_utc": "2026-12-01T06:00:00Z", "finished_utc": "2026-12-01T06:00:30Z", "wall_s": 30.0,
        "interpreter": dict(FIXED_INTERPRETER), "machine": dict(FIXED_MACHINE), "timer": dict(FIXED_TIMER),
        "system": dict(FIXED_SYSTEM), "tool": {"name": "wakelab", "version": "0.2.0"},
        "execution": {"mode": "workers", "workers": 3, "python": "/usr/bin/python3.13"} if workers else {"mode": "in-process"},
    })
    for entry in summary["arms"]:  # type: ignore[union-attr]
        name = entry["name"]
        if entry["kind"] == "rate":
            ops = rates.get(name)
            if ops is None:
                entry.update(status=runner.SKIPPED, reason="not in this fixture")
                continue
            per_round = int(round(20000 * 1e9 / ops))
            raw = RawRate(n_per_round=20000, round_ns=(per_round,) * 7, baseline_round_ns=(300_000,) * 7, warmup_rounds=1)
            summarize_raw(entry, raw)
            entry["workers"] = [runner.worker_record(raw, 100 + i, {}).to_dict() for i in range(3)] if workers else []
        else:
            p50 = p50_us.get(name)
            if p50 is None:
                entry.update(status=runner.SKIPPED, reason="not available in this fixture")
                continue
            shards = [
                RawLatency(samples_ns=_worker_samples(p50 * 1000, f, 100 if workers else 300, 1000 * planted_us.get(name, 0)),
                           lost=0, warmup_discarded=10)
                for f in (factors.get(name, NARROW) if workers else (1.0,))
            ]
            pooled = RawLatency(samples_ns=tuple(s for shard in shards for s in shard.samples_ns), lost=0, warmup_discarded=30)
            summarize_raw(entry, pooled)
            entry["workers"] = [runner.worker_record(shard, 100 + i, {}).to_dict() for i, shard in enumerate(shards)] if workers else []
        entry["spread"] = worker_spread(entry["workers"])
        entry["status"] = runner.OK
        entry["wall_s"] = 0.5
        entry["samples_file"] = "samples/%s.json" % name
    summary["complete"] = is_complete(summary)
    summary["caveats"] = derive_caveats(summary)
    summary["warnings"] = derive_warnings(summary)
    return summary


def p50(summary: Mapping[str, object], arm: str) -> str:
    """The arm's p50 as the guidance words it."""
    entry = next(e for e in summary["arms"] if e["name"] == arm)  # type: ignore[attr-defined]
    return format_ns(entry["latency"]["p50_ns"])


def ratio(summary: Mapping[str, object], a: str, b: str) -> str:
    entries = {e["name"]: e for e in summary["arms"]}  # type: ignore[attr-defined]
    return format_times(entries[a]["latency"]["p50_ns"] / entries[b]["latency"]["p50_ns"])


def guidance_of(summary: Mapping[str, object]) -> Guidance:
    return guidance_for(Bundle(source="", folder="", summary=summary))


def _item(guidance: Guidance, topic: str) -> str:
    texts = [a.text for a in guidance if a.topic == topic]
    assert texts, "no %s advice in %s" % (topic, [a.topic for a in guidance])
    return " ".join(texts)


def _names_in(text: str, names: Iterable[str]) -> List[str]:
    """The arm names that occur in ``text`` as whole names (``pipe`` is not in ``pipe-process``)."""
    return [n for n in names if re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(n), text)]


# -- the recommendation follows the figures ---------------------------------------------------


WAKE_P50_US = {"event": 10.0, "pipe": 14.0, "queue": 30.0}


def test_the_fastest_clear_arm_is_recommended_and_by_how_much() -> None:
    summary = build_summary("custom", WAKE_P50_US, arms=["event", "pipe", "queue"])
    assert (p50(summary, "event"), p50(summary, "pipe"), ratio(summary, "pipe", "event")) == ("10.0 µs", "14.0 µs", "1.40×")
    guidance = guidance_of(summary)
    assert guidance.headline.startswith("Prefer event in-process (10.0 µs p50; pipe 1.40× that, beyond this run's noise)")
    prefer = _item(guidance, PREFER)
    assert "Fastest in-process wake: event, p50 10.0 µs, clear of every other beyond this run's noise." in prefer
    assert ("the next, pipe (14.0 µs), is 1.40× that (every one of pipe's 3 worker medians is above every one of "
            "event's 3, and the ratio is over 1.1×)") in prefer
    assert "Slowest: queue, %s (%s the fastest's p50)." % (p50(summary, "queue"), ratio(summary, "queue", "event")) in prefer
    prefer_item = next(a for a in guidance if a.topic == PREFER)
    assert [(c.arm, c.figure) for c in prefer_item.cites] == [("event", "p50"), ("pipe", "p50"), ("queue", "p50")]
    assert prefer_item.cites[0].value_ns == pytest.approx(10_000, rel=0.01)


def test_a_planted_delay_in_event_changes_the_recommendation() -> None:
    before = guidance_of(build_summary("custom", WAKE_P50_US, arms=["event", "pipe", "queue"]))
    planted = build_summary("custom", WAKE_P50_US, arms=["event", "pipe", "queue"], planted_us={"event": 2000})
    after = guidance_of(planted)
    assert before.headline.startswith("Prefer event in-process")
    assert after.headline.startswith("Prefer pipe in-process (14.0 µs p50; queue %s that, beyond this run's noise); event "
                                     "clearly slower (%s the fastest's p50)"
                                     % (ratio(planted, "queue", "pipe"), ratio(planted, "event", "pipe")))
    prefer = _item(after, PREFER)
    assert prefer.startswith("Fastest in-process wake: pipe, p50 14.0 µs, clear of every other")
    assert "Slowest: event, %s" % p50(planted, "event") in prefer
    event_cites = [c for a in after for c in a.cites if c.arm == "event" and c.figure == "p50"]
    assert event_cites and all(c.value_ns > 2_000_000 for c in event_cites)
    # The ranking the verdict lays out moves the same way.
    (ranking,) = [r for r in rank_wake_paths(Bundle("", "", planted)) if r.group == IN_PROCESS]
    assert [r.name for r in ranking.ranked] == ["pipe", "queue", "event"]


def test_a_difference_inside_the_workers_spread_is_not_called_faster() -> None:
    # event 10 and pipe 12 µs, but each arm's workers range over +-15%: the ranges overlap.
    wide = {"event": (0.85, 1.0, 1.15), "pipe": (0.85, 1.0, 1.15)}
    summary = build_summary("custom", {"event": 10.0, "pipe": 12.0}, arms=["event", "pipe"], factors=wide)
    guidance = guidance_of(summary)
    assert "prefer" not in guidance.headline.lower() and "fastest" not in guidance.headline.lower()
    assert guidance.headline.startswith("In-process wakes within this run's noise of the lowest p50: event %s, pipe %s "
                                        "(choose among them by API)" % (p50(summary, "event"), p50(summary, "pipe")))
    prefer = _item(guidance, PREFER)
    assert prefer.startswith("No in-process wake is fastest beyond this run's noise.")
    assert ("Within it of the lowest p50, event's %s, with each p50's multiple of that: pipe %s (%s) -- choose among these "
            "by API, not speed." % (p50(summary, "event"), p50(summary, "pipe"), ratio(summary, "pipe", "event"))) in prefer
    # The same medians with a narrow spread are a difference; a 5% one is not, however narrow.
    narrow = guidance_of(build_summary("custom", {"event": 10.0, "pipe": 12.0}, arms=["event", "pipe"]))
    assert narrow.headline.startswith("Prefer event in-process (10.0 µs p50; pipe 1.20× that, beyond this run's noise)")
    tight = {"event": (0.999, 1.0, 1.001), "pipe": (0.999, 1.0, 1.001)}
    close = guidance_of(build_summary("custom", {"event": 10.0, "pipe": 10.5}, arms=["event", "pipe"], factors=tight))
    assert "within this run's noise" in close.headline


def test_without_workers_only_a_large_ratio_is_a_difference() -> None:
    one_process = {"workers": False}
    close = guidance_of(build_summary("custom", {"event": 10.0, "pipe": 14.0}, arms=["event", "pipe"], **one_process))
    assert "within 1.5× of the lowest p50 (no spread between workers to judge noise by)" in close.headline
    far = guidance_of(build_summary("custom", {"event": 10.0, "pipe": 16.0}, arms=["event", "pipe"], **one_process))
    assert far.headline.startswith("Prefer event in-process")
    assert "no spread between workers to judge by (a single worker, or in-process), so only a 1.5× difference counts" in " ".join(_item(far, PREFER).split())


# -- a fastest is named only beyond the noise (issue 23: headlines that flipped on noise) -------------


def _in_process(summary: Mapping[str, object]) -> Ranking:
    return next(r for r in rank_wake_paths(Bundle("", "", summary)) if r.group == IN_PROCESS)


def test_the_rank_test_of_the_medians_is_exact() -> None:
    # Two-sided p of c pairs out of order between m and n medians: 2 * P(U <= c) / C(m + n, m).
    assert rank_test_p(0, 3, 3) == pytest.approx(2 / 20)  # no overlap: the strongest three a side can give
    assert rank_test_p(0, 5, 5) == pytest.approx(2 / 252)
    assert rank_test_p(2, 5, 5) == pytest.approx(2 * 4 / 252)  # 1 + 1 + 2 orderings with at most 2 crossings
    assert rank_test_p(3, 5, 5) == pytest.approx(2 * 7 / 252)
    assert rank_test_p(12, 5, 5) == 1.0


def test_many_medians_take_the_rank_tests_normal_approximation(monkeypatch) -> None:
    from wakelab.analysis.guidance import noise

    exact = rank_test_p(300, 30, 30)
    monkeypatch.setattr(noise, "EXACT_PAIRS", 0)
    assert rank_test_p(300, 30, 30) == pytest.approx(exact, rel=0.05)
    assert rank_test_p(0, 40, 40) < 1e-12 and rank_test_p(800, 40, 40) == 1.0


def test_overlapping_top_arms_name_no_fastest() -> None:
    wide = {"event": (0.7, 1.0, 1.4), "pipe": (0.7, 1.0, 1.4)}
    summary = build_summary("custom", {"event": 10.0, "pipe": 12.0, "queue": 30.0}, arms=["event", "pipe", "queue"],
                            factors=wide)
    ranking = _in_process(summary)
    assert not ranking.clear_fastest
    assert [(r.name, r.standing) for r in ranking.ranked] == [("event", LEADER), ("pipe", LEADER), ("queue", SLOWER)]
    verdict = format_ranking(ranking)
    assert verdict == ("within this run's noise of the lowest p50: event %s, pipe %s; slowest: queue %s (%s the lowest p50)"
                       % (p50(summary, "event"), p50(summary, "pipe"), p50(summary, "queue"), ratio(summary, "queue", "event")))
    guidance = guidance_of(summary)
    assert "fastest" not in (verdict + guidance.headline).lower() and "prefer" not in guidance.headline.lower()
    assert guidance.headline.startswith("In-process wakes within this run's noise of the lowest p50: event %s, pipe %s "
                                        "(choose among them by API)" % (p50(summary, "event"), p50(summary, "pipe")))
    assert _item(guidance, PREFER).startswith("No in-process wake is fastest beyond this run's noise. Within it of the "
                                              "lowest p50, event's %s" % p50(summary, "event"))


def test_a_fastest_clear_of_every_other_is_named() -> None:
    summary = build_summary("custom", {"event": 10.0, "pipe": 14.0, "queue": 30.0}, arms=["event", "pipe", "queue"])
    ranking = _in_process(summary)
    assert ranking.clear_fastest and [r.name for r in ranking.leaders] == ["event"]
    assert format_ranking(ranking) == (
        "fastest beyond this run's noise: event 10.0 µs; clearly slower (× its p50): pipe 1.40×; slowest: queue %s (%s)"
        % (p50(summary, "queue"), ratio(summary, "queue", "event")))
    assert guidance_of(summary).headline.startswith("Prefer event in-process (10.0 µs p50; pipe 1.40× that, beyond this "
                                                    "run's noise)")


def test_an_arm_within_noise_only_by_its_own_spread_is_said_so_among_the_slower() -> None:
    # pipe is clearly slower than event; queue, higher still, is not: one of its workers woke faster than event's.
    factors = {"queue": (0.5, 1.0, 3.0)}
    summary = build_summary("custom", {"event": 10.0, "pipe": 14.0, "queue": 16.0}, arms=["event", "pipe", "queue"],
                            factors=factors)
    ranking = _in_process(summary)
    assert [(r.name, r.standing) for r in ranking.ranked] == [("event", LEADER), ("pipe", SLOWER), ("queue", UNCLEAR)]
    assert not ranking.clear_fastest and [r.name for r in ranking.unclear] == ["queue"]
    queue = next(r for r in ranking.ranked if r.name == "queue").level
    spread = "its 3 worker processes' medians ranged %s to %s, event's " % (format_ns(queue.low_ns), format_ns(queue.high_ns))
    verdict = format_ranking(ranking)
    assert verdict.startswith("lowest p50, clear of the next beyond this run's noise: event 10.0 µs; clearly slower (× the "
                              "lowest p50): pipe 1.40×; slowest: queue %s (%s; not clearly slower: %s"
                              % (p50(summary, "queue"), ratio(summary, "queue", "event"), spread)), verdict
    assert "its own spread" in format_ranking(ranking, limit=3)
    guidance = guidance_of(summary)
    assert guidance.headline.startswith("In-process, event has the lowest p50 (10.0 µs), though not clearly below queue")
    assert "Not clearly slower than event either, though listed after an arm that is: queue" in _item(guidance, PREFER)
    assert spread in _item(guidance, PREFER)


def test_the_within_noise_group_is_a_prefix_of_the_p50_order() -> None:
    rng = random.Random(23)
    for trial in range(60):
        names = ["event", "condition", "queue", "pipe", "eventfd", "socketpair", "selector-pipe"]
        p50s = {n: rng.uniform(5.0, 15.0) for n in names}
        factors = {n: tuple(rng.uniform(0.6, 1.8) if rng.random() < 0.3 else rng.uniform(0.95, 1.05) for _ in range(5))
                   for n in names}
        ranking = _in_process(build_summary("custom", p50s, arms=names, factors=factors))
        standings = [r.standing for r in ranking.ranked]
        first_slower = standings.index(SLOWER) if SLOWER in standings else len(standings)
        assert set(standings[:first_slower]) == {LEADER}, (trial, standings)
        assert LEADER not in standings[first_slower:], (trial, standings)
        text = format_ranking(ranking)
        for r in ranking.ranked[1:]:
            if r.standing == UNCLEAR:  # an exception to the order says why, where it is listed
                assert re.search(r"%s [\d.]+×[ (;]+not clearly slower: its 5 worker processes' medians ranged" % re.escape(r.name), text), text
        if not ranking.clear_fastest:
            assert "fastest" not in text and "prefer" not in guidance_of(build_summary("custom", p50s, arms=names, factors=factors)).headline.lower()


def test_a_large_ratio_is_called_noise_only_with_the_ranges_that_make_it_so() -> None:
    # event's workers woke at 3, 10 and 40 µs: pipe, 2.5× event's p50, is inside that noise, and the text says how wide it is.
    factors = {"event": (0.3, 1.0, 4.0)}
    summary = build_summary("custom", {"event": 10.0, "pipe": 25.0}, arms=["event", "pipe"], factors=factors)
    ranking = _in_process(summary)
    assert [r.standing for r in ranking.ranked] == [LEADER, LEADER] and ranking.ranked[1].ratio >= 2.0
    event = ranking.ranked[0].level
    wide = "event's %s to %s" % (format_ns(event.low_ns), format_ns(event.high_ns))
    verdict = format_ranking(ranking)
    assert re.search(r"pipe 2\d\.\d µs \(2\.\d× the lowest p50; its 3 worker processes' medians ranged 2\d\.\d µs to 2\d\.\d µs, %s\)"
                     % re.escape(wide), verdict), verdict
    guidance = guidance_of(summary)
    assert wide in _item(guidance, PREFER)
    assert guidance.headline.endswith("(choose among them by API) -- noise that wide: event's 3 worker processes' medians "
                                      "ranged %s to %s." % (format_ns(event.low_ns), format_ns(event.high_ns)))
    # A hand-off 5× the lowest is within the noise only as wide as one pool's workers: its clause says how wide.
    pools = {"thread-pool-submit": 60.0, "interp-pool-submit": 12.0, "process-pool-submit": 174.0}
    handoff = guidance_of(build_summary("handoff", pools, arms=list(pools), factors={"interp-pool-submit": (0.5, 1.0, 6.0)}))
    assert re.search(r"[Tt]o hand off a task, interp-pool-submit 12\.\d µs and thread-pool-submit 60\.\d µs are within this "
                     r"run's noise of the lowest p50 -- noise that wide: interp-pool-submit's 3 worker processes' medians "
                     r"ranged 6\.\d+ µs to 7\d\.\d µs", handoff.headline), handoff.headline
    assert re.search(r"thread-pool-submit 60\.\d µs \(5\.0×; within this run's noise of interp-pool-submit: its 3 worker "
                     r"processes' medians ranged", _item(handoff, "hand-off"))
    # The same medians with every worker agreeing are clearly apart.
    assert _in_process(build_summary("custom", {"event": 10.0, "pipe": 25.0}, arms=["event", "pipe"])).clear_fastest


# Each repetition's p50 (µs) of four in-process arms in a real catalogue run (5 repetitions; issue 23): its verdict
# listed selector-pipe (1.64×) "within noise" before event (1.55×) "clearly slower", on ranges that one wide
# repetition of either arm made overlap.
ISSUE_23_REPETITIONS_US = {
    "eventfd": (4.59, 6.74, 5.65, 6.05, 2.49), "condition": (8.86, 6.88, 8.56, 6.45, 7.43),
    "event": (7.27, 7.88, 8.63, 7.37, 9.15), "selector-pipe": (24.5, 7.05, 5.91, 6.80, 25.8),
}


def test_the_run_of_issue_23_reads_in_order() -> None:
    p50s = {"eventfd": 5.19, "condition": 7.60, "event": 8.05, "selector-pipe": 8.54}
    factors = {n: tuple(v / p50s[n] for v in reps) for n, reps in ISSUE_23_REPETITIONS_US.items()}
    summary = build_summary("custom", p50s, arms=list(p50s), factors=factors)
    ranking = _in_process(summary)
    # The rank test of five medians a side: condition (one crossing), event (none), selector-pipe (two) are slower.
    assert {r.name: r.standing for r in ranking.ranked} == {
        "eventfd": LEADER, "condition": SLOWER, "event": SLOWER, "selector-pipe": SLOWER}
    assert "within" not in format_ranking(ranking)


# -- the same evidence gives the same words --------------------------------------------------------


def test_the_same_evidence_always_gives_the_same_words() -> None:
    wide = {"event": (0.7, 1.0, 1.4), "pipe": (0.7, 1.0, 1.4), "queue": (0.5, 1.0, 3.0)}
    summary = build_summary("catalogue", CATALOGUE_P50_US, factors=wide)

    def words(doc: Mapping[str, object]) -> Tuple[object, ...]:
        bundle = Bundle("", "", doc)
        return (guidance_dict(doc), tuple(format_ranking(r) for r in rank_wake_paths(bundle)),
                tuple(format_ranking(r, 3) for r in rank_wake_paths(bundle)))

    first = words(summary)
    assert words(copy.deepcopy(summary)) == first
    shuffled = copy.deepcopy(summary)
    random.Random(23).shuffle(shuffled["arms"])  # type: ignore[arg-type]
    assert words(shuffled) == first  # the order arms ran in does not change the words


def test_the_words_do_not_depend_on_the_process_that_renders_them() -> None:
    from conftest import GOLDEN

    folder = os.path.join(GOLDEN, "bundles", "catalogue")
    script = ("import json, sys\n"
              "from wakelab.evidence.model import Bundle\n"
              "from wakelab.analysis.guidance import guidance_dict, rank_wake_paths, format_ranking\n"
              "doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
              "print(json.dumps([guidance_dict(doc), [format_ranking(r) for r in rank_wake_paths(Bundle('', '', doc))]]))\n")
    outputs = []
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        done = subprocess.run([sys.executable, "-c", script, os.path.join(folder, "summary.json")], env=env,
                              capture_output=True, text=True, timeout=120, check=True)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] and outputs[0].strip()


# -- open loop -----------------------------------------------------------------------------------


def _open_loop(summary: Dict[str, object], interval_us: int = 500, late_us: float = 80.0) -> Dict[str, object]:
    summary["parameters"].update(mode="open", interval_us=interval_us)  # type: ignore[union-attr]
    for entry in summary["arms"]:  # type: ignore[union-attr]
        if entry.get("latency"):
            entry["components"] = {"notify_late": summarize_latency([int(late_us * 1000)] * 50).to_dict()}
    return summary


def test_open_loop_figures_say_what_they_are() -> None:
    summary = _open_loop(build_summary("custom", {"event": 144.0, "pipe": 150.0}, arms=["event", "pipe"]))
    guidance = guidance_of(summary)
    assert guidance.headline.startswith("Open loop (a notify every 500 µs; latencies from each notify's scheduled "
                                        "instant, the notifier's lateness included): ")
    assert guidance.items[0].topic == OPEN_LOOP
    said = guidance.items[0].text
    assert said.startswith("Open loop: every latency here is taken from its notify's scheduled instant (one every "
                           "500 µs, whether or not the waiter was ready), not from t0")
    assert "(event's p50 %s holds 80.0 µs of it: notify_late)" % p50(summary, "event") in said
    assert "any wait behind an earlier wake" in said and "--mode closed" in said
    assert ("event", "notify_late_p50") in [(c.arm, c.figure) for c in guidance.items[0].cites]
    assert "open-loop p50" in _item(guidance, PREFER)
    ranking = _in_process(summary)
    assert ranking.open_loop and format_ranking(ranking).startswith("open loop, p50s from each notify's scheduled instant -- ")
    assert open_loop_note(Bundle("", "", summary)) == (
        "open loop: p50s from each notify's scheduled instant (one every 500 µs), so they include the notifier's "
        "lateness and any wait behind an earlier wake")
    # One arm: the headline's figure is marked too.
    alone = guidance_of(_open_loop(build_summary("custom", {"event": 144.0}, arms=["event"])))
    assert "event wakes a thread in %s (open-loop p50)" % "144 µs" in alone.headline
    # A closed loop says none of it.
    closed = build_summary("custom", {"event": 144.0, "pipe": 150.0}, arms=["event", "pipe"])
    words = " ".join([guidance_of(closed).headline] + [a.text for a in guidance_of(closed)])
    assert "open loop" not in words.lower() and "open-loop" not in words
    assert open_loop_note(Bundle("", "", closed)) is None
    assert not _in_process(closed).open_loop


def test_a_few_armed_verdict_says_what_its_open_loop_figures_hold() -> None:
    from wakelab.report.text import format_verdict

    summary = _open_loop(build_summary("custom", {"event": 144.0, "pipe": 150.0}, arms=["event", "pipe"]))
    verdict = format_verdict(summary)
    text = " ".join(" ".join(verdict).split())
    note = open_loop_note(Bundle("", "", summary))
    assert note is not None
    # Once, before the first per-arm line, the clause the guidance computed.
    assert text.startswith("%s%s. event: p50 " % (note[0].upper(), note[1:]))
    assert text.count("scheduled instant") == 1 and "(one every 500 µs)" in text
    # A closed run's verdict says none of it.
    closed = build_summary("custom", {"event": 144.0, "pipe": 150.0}, arms=["event", "pipe"])
    closed_verdict = format_verdict(closed)
    assert closed_verdict[0].startswith("  event: p50 ")
    assert "open loop" not in " ".join(closed_verdict).lower()


def test_one_in_process_arm_is_described_not_ranked(lab135_summary) -> None:
    guidance = guidance_of(lab135_summary)
    assert guidance.headline == ("In-process, event wakes a thread in 110 µs (p50); signals for process control "
                                 "(sigusr1-self's 2.10 µs is a busy-wait round trip, not a faster wake).")
    prefer = _item(guidance, PREFER)
    assert prefer.startswith("event is the only in-process wake path this run measured: p50 110 µs, p99 207 µs.")
    signals = _item(guidance, SIGNALS)
    assert "It does not make signals a faster wake than event (110 µs)" in signals
    # Change the figure and the advice follows.
    lab135_summary["arms"][0]["latency"]["p50_ns"] = 21_000.0
    assert "event wakes a thread in 21.0 µs" in guidance_of(lab135_summary).headline


# -- signals, install, tail, pitfalls -----------------------------------------------------------


def test_a_handler_path_is_costed_against_its_sigwait_counterpart() -> None:
    arms = ["pause-handler", "sigwait-thread-to-main", "pipe"]
    summary = build_summary("custom", {"pause-handler": 38.0, "sigwait-thread-to-main": 26.0, "pipe": 14.0}, arms=arms)
    guidance = guidance_of(summary)
    signals = _item(guidance, SIGNALS)
    extra = format_ns(next(e for e in summary["arms"] if e["name"] == "pause-handler")["latency"]["p50_ns"]  # type: ignore[attr-defined]
                      - next(e for e in summary["arms"] if e["name"] == "sigwait-thread-to-main")["latency"]["p50_ns"])  # type: ignore[attr-defined]
    assert ("A handler costs more than delivery: pause-handler p50 %s against sigwait-thread-to-main %s, %s more (%s "
            "sigwait-thread-to-main's) for running a Python handler" % (
                p50(summary, "pause-handler"), p50(summary, "sigwait-thread-to-main"), extra,
                ratio(summary, "pause-handler", "sigwait-thread-to-main"))) in signals
    assert "a Python handler adds %s (pause-handler vs sigwait-thread-to-main)" % extra in guidance.headline
    assert ("Signals are not a faster way to wake a thread: the fastest blocked signal path, sigwait-thread-to-main (%s), is %s"
            % (p50(summary, "sigwait-thread-to-main"), ratio(summary, "sigwait-thread-to-main", "pipe"))) in signals
    same = build_summary("custom", {"pause-handler": 26.5, "sigwait-thread-to-main": 26.0, "pipe": 14.0}, arms=arms)
    assert "pause-handler p50 %s against sigwait-thread-to-main %s: no difference beyond this run's noise" % (
        p50(same, "pause-handler"), p50(same, "sigwait-thread-to-main")) in _item(guidance_of(same), SIGNALS)
    assert "handler adds" not in guidance_of(same).headline


def test_install_rate_is_worded_as_time_per_reload() -> None:
    summary = build_summary("custom", {}, arms=["signal-install", "native-sigaction-install"])
    install = next(a for a in guidance_of(summary) if a.topic == "handler install")
    assert install.text.startswith("signal.signal() rebinding ran at 160,949/s: 6.21 µs per install, so a reload that "
                                   "re-installs 3 handlers spends 18.6 µs on it.")
    assert "C's native-sigaction-install: 288 ns per call (22× faster)." in install.text
    assert [(c.arm, c.figure) for c in install.cites] == [("signal-install", "per_call"), ("native-sigaction-install", "per_call")]
    assert install.cites[0].value_ns == pytest.approx(1e9 / 160_949, rel=1e-3)


def test_the_tail_says_whether_load_was_added() -> None:
    summary = build_summary("custom", WAKE_P50_US, arms=["event", "pipe", "queue"])
    tail = _item(guidance_of(summary), TAIL)
    assert tail.startswith("Tail: event: p99 ")
    assert "No load was added: --cpu-threads 2" in tail
    summary["conditions"]["cpu_threads"] = 2  # type: ignore[index]
    loaded = _item(guidance_of(summary), TAIL)
    assert loaded.startswith("Tail with 2 busy Python threads beside the waiter: event: p99 ")
    assert "No load was added" not in loaded
    assert guidance_of(summary).headline.startswith("With 2 busy Python threads beside the waiter: prefer event in-process")


def test_pitfalls_need_the_arms_they_cite(lab135_summary) -> None:
    pitfalls = [a for a in guidance_of(lab135_summary) if a.topic == PITFALL]
    texts = " ".join(a.text for a in pitfalls)
    assert "Main-thread-only delivery" in texts and "Heavy handlers" in texts
    assert ("Busy-wait figures: sigusr1-self's 2.10 µs was measured with its waiter spinning; it does not apply to a thread "
            "blocked in pause() or sigwait.") in texts
    assert all(c.arm == "sigusr1-self" for a in pitfalls for c in a.cites)
    only_event = guidance_of(build_summary("custom", {"event": 10.0}, arms=["event"]))
    assert not [a for a in only_event if a.topic in (PITFALL, SIGNALS)]


def test_a_planted_delay_is_said_first() -> None:
    summary = build_summary("custom", WAKE_P50_US, arms=["event", "pipe", "queue"])
    summary["parameters"]["planted_delay_us"] = 2000  # type: ignore[index]
    guidance = guidance_of(summary)
    assert guidance.headline.startswith("Self-test (planted delay 2,000 µs): prefer event in-process")
    assert guidance.items[0].topic == SELF_TEST


# -- only what was measured ----------------------------------------------------------------------


def test_arms_not_measured_are_never_cited_nor_named() -> None:
    rng = random.Random(135)
    every = list(CATALOGUE_P50_US)
    for trial in range(40):
        kept = {name: p50 for name, p50 in CATALOGUE_P50_US.items() if rng.random() < (0.2 + 0.6 * trial / 40)}
        rates = {name: ops for name, ops in RATES_OPS.items() if rng.random() < 0.5}
        summary = build_summary("catalogue", kept, rates=rates)
        if trial % 3 == 0 and kept:  # a failed arm keeps no figures either
            victim = sorted(kept)[0]
            entry = next(e for e in summary["arms"] if e["name"] == victim)  # type: ignore[union-attr]
            entry.update(status="failed", reason="boom")
            del kept[victim]
        measured = set(kept) | set(rates)
        guidance = guidance_of(summary)
        cited = {cite.arm for advice in guidance for cite in advice.cites}
        assert cited <= measured, (trial, cited - measured)
        words = " ".join([guidance.headline] + [a.text for a in guidance])
        assert not _names_in(words, set(every) - measured), (trial, _names_in(words, set(every) - measured))
        for advice in guidance:
            assert advice.cites, advice  # every claim rests on a figure


def test_no_figures_no_advice() -> None:
    summary = build_summary("custom", {}, arms=["event", "pipe"], rates={})
    guidance = guidance_of(summary)
    assert guidance.headline == "No arm produced figures in this run: nothing to advise."
    assert len(guidance) == 0


def test_guidance_has_a_json_form() -> None:
    summary = build_summary("catalogue", CATALOGUE_P50_US)
    doc = guidance_dict(summary)
    assert json.loads(json.dumps(doc)) == doc
    assert set(doc) == {"headline", "items"}
    for item in doc["items"]:
        assert set(item) == {"topic", "text", "cites"}
        for cite in item["cites"]:
            assert set(cite) == {"arm", "figure", "value_ns"} and cite["value_ns"] > 0


def test_hostile_figures_do_not_break_the_guidance(lab135_summary) -> None:
    for value in (0, -5.0, None, 1e308):
        summary = copy.deepcopy(lab135_summary)
        summary["arms"][0]["latency"]["p50_ns"] = value
        summary["arms"][0]["spread"] = {"of": "p50_ns", "min": value, "max": "x"}
        summary["arms"][2]["rate"]["ops_per_s"] = value
        guidance = guidance_of(summary)
        assert guidance.headline
        if value is None or value <= 0:
            assert "event" not in {cite.arm for advice in guidance for cite in advice.cites}


def test_the_json_form_is_what_the_schema_documents() -> None:
    from wakelab.evidence.load import validate_summary

    summary = build_summary("catalogue", CATALOGUE_P50_US)
    summary["guidance"] = guidance_dict(summary)
    validate_summary(json.loads(json.dumps(summary)), "summary.json")


def test_install_cost_is_split_into_wrapper_c_function_and_kernel_call() -> None:
    rates = dict(RATES_OPS, **{"signal-install-unwrapped": 1_000_000.0})
    summary = build_summary("custom", {}, arms=["signal-install", "signal-install-unwrapped", "native-sigaction-install"],
                            rates=rates)
    install = next(a for a in guidance_of(summary) if a.topic == "handler install")
    assert ("Where it goes: signal.signal 6.21 µs per call = _signal.signal 1.00 µs + Python wrapper 5.21 µs (84%: its enum "
            "conversions of the signal and the old handler); C sigaction() (native-sigaction-install) 288 ns.") in install.text
    assert "22× faster" not in install.text  # the split replaces the bare C comparison
    assert [(c.arm, c.figure) for c in install.cites] == [
        ("signal-install", "per_call"), ("signal-install-unwrapped", "per_call"), ("native-sigaction-install", "per_call")]
    assert install.cites[1].value_ns == pytest.approx(1000.0)
    # The text report and summary.json carry the same sentence (guidance is computed once).
    assert "Python wrapper 5.21 µs" in json.dumps(guidance_dict(summary), ensure_ascii=False)
    # Unwrapped measured as slow as the wrapper (noise): no negative wrapper share is claimed.
    slow = build_summary("custom", {}, arms=["signal-install", "signal-install-unwrapped"],
                         rates=dict(RATES_OPS, **{"signal-install-unwrapped": 150_000.0}))
    text = next(a for a in guidance_of(slow) if a.topic == "handler install").text
    assert "the wrapper's share is within this run's noise" in text and "Python wrapper" not in text
    # Without the unwrapped arm, the install item is as before.
    plain = build_summary("custom", {}, arms=["signal-install", "native-sigaction-install"])
    assert "Where it goes" not in next(a for a in guidance_of(plain) if a.topic == "handler install").text


def test_a_wait_that_polls_is_named_with_what_to_use_instead() -> None:
    summary = build_summary("catalogue", {"event": 20.0, "queue": 30.0}, arms=["event", "queue"])
    entry = next(e for e in summary["arms"] if e["name"] == "queue")  # type: ignore[attr-defined]
    entry["quality"] = {"polling": {"low_ns": 60_000, "high_ns": 2_100_000, "period_ns": 2_040_000, "distance": 0.05,
                                    "edge": 0.02, "spread_over_floor": 20.0, "thinnest_part": 0.8, "thickest_part": 1.2,
                                    "n": 300, "settle_jitter_us": 4000, "spans_jitter": False}}
    summary["warnings"] = derive_warnings(summary)
    guidance = guidance_of(summary)
    text = _item(guidance, "polling")
    assert text.startswith("queue's wait polls about every 2.04 ms: it looks for the notify, sleeps, and looks again")
    assert "blocks in the kernel" in text and "(event took %s here)" % p50(summary, "event") in text
    assert [c.arm for a in guidance if a.topic == "polling" for c in a.cites] == ["queue", "event"]
    assert "queue polls (about every 2.04 ms): use a wait that blocks" in guidance.headline
    # As wide as the random part of the settle: the period is a lower bound, and the advice says how to measure it.
    entry["quality"]["polling"].update(settle_jitter_us=2000, spans_jitter=True)
    summary["warnings"] = derive_warnings(summary)
    text = _item(guidance_of(summary), "polling")
    assert "polls every 2.04 ms or more" in text and "--settle-jitter-us" in text
    # No polling warning, no polling advice.
    entry["quality"] = {}
    summary["warnings"] = derive_warnings(summary)
    assert not [a for a in guidance_of(summary) if a.topic == "polling"]


# -- hand-offs (the hand-off lab) ----------------------------------------------------------------

HANDOFF_P50_US = {
    "thread-pool-submit": 38.0, "interp-pool-submit": 108.0, "process-pool-submit": 174.0,
    "interp-queue": 5000.0, "interp-pipe": 17.0, "queue": 53.0, "pipe": 33.0,
    "native-condvar": 3.0, "native-pipe": 6.0, "native-pipe-process": 9.0,
}


def test_the_hand_off_lab_advises_executors_and_the_subinterpreter_wake_apart() -> None:
    summary = build_summary("handoff", HANDOFF_P50_US)
    g = guidance_for(Bundle(source="", folder="", summary=summary))
    rankings = {r.group: [x.name for x in r.ranked] for r in rank_wake_paths(Bundle(source="", folder="", summary=summary))}
    # The hand-off arms are compared among themselves, not with the in-process wake paths.
    assert rankings["in-process"] == ["pipe", "queue"]
    assert rankings["handoff"] == ["interp-pipe", "thread-pool-submit", "interp-pool-submit", "process-pool-submit", "interp-queue"]
    handoff = [a for a in g.items if a.topic == "hand-off"]
    assert len(handoff) == 2
    pools, wake = handoff
    assert re.match(r"Handing a task to an idle executor worker, submit\(\) to the task's first statement: "
                    r"thread-pool-submit 38\.\d µs \(p50\); then, × its p50: interp-pool-submit 10\d µs \(2\.8×\), "
                    r"process-pool-submit 17\d µs \(4\.6×\)\.", pools.text), pools.text
    assert [c.arm for c in pools.cites] == ["thread-pool-submit", "interp-pool-submit", "process-pool-submit"]
    assert re.search(r"interp-pipe, 29\d× less", wake.text) and "p50 5.0" in wake.text, wake.text
    assert {c.arm for c in wake.cites} == {"interp-queue", "interp-pipe"}
    assert re.search(r"to hand off a task, thread-pool-submit is fastest \(38\.\d µs, beyond this run's noise\)", g.headline), g.headline


def test_hand_off_advice_cites_only_what_ran() -> None:
    only_pools = {k: v for k, v in HANDOFF_P50_US.items() if k not in ("interp-queue", "interp-pipe", "interp-pool-submit")}
    g = guidance_for(Bundle(source="", folder="", summary=build_summary("handoff", only_pools)))
    handoff = [a for a in g.items if a.topic == "hand-off"]
    assert len(handoff) == 1 and "interp" not in handoff[0].text.split("Besides")[0]
    assert "interpreter pool" not in handoff[0].text and "subinterpreter" not in g.headline


# ---------------------------------------------------------------- roles and groups the arms declare


def test_the_arms_declare_their_roles_and_groups() -> None:
    """Every role names a role the advice knows and, where it sets two arms side by side, a registered arm;
    every declared group is one of the groups the guidance compares within."""
    from wakelab.analysis.guidance import GROUPS
    from wakelab.core.model import ROLE_HANDLER_COST, ROLES
    from wakelab.core.registry import all_arms, families

    names = {arm.name for arm in all_arms()}
    groups = {group for group, _ in GROUPS}
    for arm in all_arms():
        assert arm.group is None or arm.group in groups, arm.name
        for role in arm.roles:
            assert role.name in ROLES, (arm.name, role)
            assert role.against is None or role.against in names, (arm.name, role)
            if role.name == ROLE_HANDLER_COST:
                assert role.against and role.isolates and role.adds, (arm.name, role)
    assert all(family.group is None or family.group in groups for family in families())


def test_a_count_is_worded_with_its_noun() -> None:
    assert counted(1, "busy process", "es") == "1 busy process" and counted(2, "busy process", "es") == "2 busy processes"
    assert counted(0, "busy Python thread") == "0 busy Python threads"
