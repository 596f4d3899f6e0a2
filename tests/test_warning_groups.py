"""Warnings gathered by what they say: one sentence for the arms that share it, every record kept in the JSON."""

from __future__ import annotations

import copy
import json
import os
import shutil
from typing import Any, Dict, List, Optional

from conftest import GOLDEN
from wakelab.analysis.view import view_of
from wakelab.analysis.warning_figures import CauseKind
from wakelab.analysis.warning_groups import (
    DURATION_NS,
    RATIO,
    Explanation,
    group_warnings,
    machine_load,
)
from wakelab.evidence.model import WarningKind, WarningRecord
from wakelab.report.text import (
    QUALITY_TITLE,
    QUALITY_TITLE_GROUPED,
    format_group_arms,
    format_summary,
    format_warning,
    format_warning_group,
)

CATALOGUE = os.path.join(GOLDEN, "bundles", "catalogue")


def spread(arm: str, ratio: Any, between: str = "repetitions", of: str = "p50_ns", level: str = "warning") -> Dict[str, Any]:
    return {"kind": "worker-spread", "level": level, "arm": arm,
            "figures": {"of": of, "max_over_min": ratio, "between": between}}


def populations(arm: str, fast_ns: int, slow_ns: int, cause: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return {"kind": "populations", "level": "warning", "arm": arm, "figures": {
        "populations": [{"share": 0.7, "low_ns": fast_ns, "high_ns": int(fast_ns * 1.2)},
                        {"share": 0.3, "low_ns": slow_ns, "high_ns": int(slow_ns * 1.2)}],
        "cause": cause}}


CPUS = {"kind": "cpus", "cross_share": 0.6, "same_cpu_p50_ns": 9_000.0, "cross_cpu_p50_ns": 50_000.0,
        "same_cpu_n": 80, "cross_cpu_n": 120}
WORKERS = {"kind": "workers", "worker_p50_ns": [6_000.0, 6_500.0, 29_000.0]}
POLLING = {"kind": "polling", "level": "warning", "arm": "poll-arm", "figures": {
    "low_ns": 68_200, "high_ns": 7_100_000, "period_ns": 7_190_000, "distance": 0.13, "edge": 0.01,
    "spread_over_floor": 90.0, "thinnest_part": 0.8, "thickest_part": 1.2, "n": 200,
    "settle_jitter_us": 2000, "spans_jitter": True}}
NOTE = {"kind": "percentiles-omitted", "level": "note", "arm": None,
        "figures": {"left_out": [{"percentile": "p99_9", "n": 200, "needs_n": 1000}]}}


def records(*entries: Any) -> List[WarningRecord]:
    return [WarningRecord.from_json(e) for e in entries]


def test_the_same_warning_about_several_arms_is_one_group_worst_first() -> None:
    (group,) = group_warnings(records(spread("a", 5.9), spread("b", 11.0), spread("c", 2.0)))
    assert group.grouped and group.kind is WarningKind.WORKER_SPREAD and group.unit == RATIO
    assert group.explanation == Explanation(between_repetitions=True, medians=True)
    assert [(m.arm, m.figure) for m in group.members] == [("b", 11.0), ("a", 5.9), ("c", 2.0)]
    assert [r.arm for r in group.records] == ["b", "a", "c"]


def test_a_different_explanation_is_another_group_in_order_of_first_appearance() -> None:
    groups = group_warnings(records(
        spread("a", 3.0), populations("a", 5_000, 40_000, CPUS), spread("b", 2.0, between="workers"),
        populations("b", 5_000, 20_000, WORKERS), spread("c", 4.0), populations("c", 6_000, 60_000, CPUS),
        spread("d", 2.5, between="workers"), populations("d", 5_000, 50_000, None), spread("e", 1.6, of="ops_per_s"),
        spread("f", 1.7, of="ops_per_s"), populations("e", 5_000, 40_000, WORKERS), populations("f", 5_000, 9_000, None)))
    assert [(g.kind.value, g.explanation, [r.arm for r in g.records]) for g in groups] == [
        ("worker-spread", Explanation(True, True), ["c", "a"]),
        ("populations", Explanation(cause=CauseKind.CPUS), ["c", "a"]),  # levels 10× and 8.0× apart
        ("worker-spread", Explanation(False, True), ["d", "b"]),
        ("populations", Explanation(cause=CauseKind.WORKERS), ["e", "b"]),  # 8.0× and 4.0×
        ("populations", Explanation(), ["d", "f"]),  # 10× and 1.8×
        ("worker-spread", Explanation(True, False), ["f", "e"]),  # rates
    ]
    workers = groups[3]
    assert [round(m.figure, 2) for m in workers.members] == [8.0, 4.0]
    assert all(g.grouped and len(g.records) == 2 for g in groups)


def test_a_note_never_joins_a_warning() -> None:
    groups = group_warnings(records(spread("a", 3.0), spread("b", 4.0, level="note"), spread("c", 5.0),
                                    spread("d", 6.0, level="note")))
    assert [(g.level, [r.arm for r in g.records]) for g in groups] == [("warning", ["c", "a"]), ("note", ["d", "b"])]


def test_a_lone_odd_or_worded_record_stands_as_itself() -> None:
    lone = records(spread("a", 3.0), POLLING, spread("b", 2.0, between="workers"))
    groups = group_warnings(lone)
    assert [g.grouped for g in groups] == [False, False, False]
    assert [g.records for g in groups] == [(r,) for r in lone]
    assert [format_warning_group(g) for g in groups] == [format_warning(r) for r in lone]
    odd = records("an old bundle's sentence", "an old bundle's sentence",
                  {"kind": "newer-kind", "level": "warning", "arm": "a", "figures": {"x": 1}},
                  {"kind": "newer-kind", "level": "warning", "arm": "b", "figures": {"x": 1}},
                  spread("a", "many"), spread("b", "many"),
                  populations("a", 5_000, 40_000, {"kind": "from-a-newer-wakelab"}),
                  populations("b", 5_000, 40_000, {"kind": "from-a-newer-wakelab"}))
    assert [len(g.records) for g in group_warnings(odd)] == [1] * len(odd)


HOSTILE = [None, True, "x", "0.1", [], [1], {}, {"a": 1}, float("nan"), float("inf"), -1, 0, 10 ** 400]


def test_hostile_figures_are_worded_or_shown_as_stored_and_never_break_grouping() -> None:
    tail = {"kind": "switch-interval-tail", "level": "warning", "arm": "x", "figures": {
        "share": 0.05, "count": 10, "interval_s": 0.005, "multiples": [1, 2]}}
    floor = {"kind": "timer-floor", "level": "warning", "arm": "x", "figures": {
        "series": None, "p50_ns": 900.0, "floor_ns": 300, "multiple": 10, "clocksource": "hpet"}}
    seen = {"worded": 0, "stored": 0}

    def outcome(text: str, entry: Dict[str, Any], figures: Dict[str, Any], arm: str) -> str:
        stored = "%s: %s: %s" % (arm, entry["kind"], json.dumps(figures, sort_keys=True))
        if text == stored:
            return "stored"
        assert text.startswith(arm + ": ") and not text.startswith("%s: %s: {" % (arm, entry["kind"])), text
        return "worded"

    for entry in (spread("x", 2.0), populations("x", 5_000, 40_000, CPUS), tail, floor, POLLING):
        assert outcome(format_warning(records(entry)[0]), entry, entry["figures"], entry["arm"]) == "worded"
        for key in entry["figures"]:
            for value in HOSTILE:
                figures = dict(entry["figures"], **{key: value})
                pair = records(*(dict(entry, arm=arm, figures=figures) for arm in ("a", "b")))
                assert all(format_warning_group(g) for g in group_warnings(pair))
                for arm, record in zip(("a", "b"), pair):
                    seen[outcome(format_warning(record), entry, figures, arm)] += 1
    # Both ways occur: a value it can word is worded, one it cannot is shown as it was stored.
    assert seen["worded"] > 100 and seen["stored"] > 100, seen


def test_a_group_says_its_sentence_once_then_the_arms_and_their_figures() -> None:
    (group,) = group_warnings(records(spread("a", 5.9), spread("b", 11.0), spread("c", 2.0)))
    text = format_warning_group(group)
    assert text == ("Repetitions disagree (the level shifts over the run; compare widens the interval, --repeat narrows "
                    "it), medians apart by: b 11×, a 5.9×, c 2.0× (3 arms).")
    assert format_warning_group(group, shown=1).endswith(": b 11× and 2 more (3 arms).")
    (polls,) = group_warnings(records(POLLING, dict(POLLING, arm="other", figures=dict(POLLING["figures"], period_ns=7_000_000))))
    assert polls.unit == DURATION_NS
    assert format_warning_group(polls).endswith("every: other 7.00 ms, poll-arm 7.19 ms (2 arms).")
    assert "--settle-jitter-us 4000" in format_warning_group(polls)


# -- a default catalogue run (5 worker processes, 3 repetitions, 200 wakes) on a noisy VM ----------

LONG_NAMES = ["storm-usr1-c-handler", "storm-rt-handler-threads", "uvloop-call-soon-threadsafe",
              "run-coroutine-threadsafe", "sigwait-thread-to-main", "native-kill-sigwait-child"]


def catalogue_like(observed: Optional[Dict[str, Any]] = None,
                   causes: Optional[List[Optional[Dict[str, Any]]]] = None) -> Dict[str, Any]:
    """The golden catalogue's summary with the warnings of a default catalogue run on a noisy VM: 27 arms
    whose repetitions disagree; two populations in 24 (8 explained by the CPUs, 13 by the workers, 3
    unexplained: ``causes`` gives them in another order); one wait that polls; the p99.9 note."""
    with open(os.path.join(CATALOGUE, "summary.json"), encoding="utf-8") as fh:
        summary = json.load(fh)
    names = LONG_NAMES + [a["name"] for a in summary["arms"]]
    warnings: List[Dict[str, Any]] = [NOTE]
    warnings += [spread(name, 1.5 + (7 * i) % 23) for i, name in enumerate(names[:27])]
    causes = causes or [CPUS] * 8 + [WORKERS] * 13 + [None] * 3
    warnings += [populations(name, 5_000 + 100 * i, 20_000 + 3_000 * i, cause) for i, (name, cause) in enumerate(zip(names, causes))]
    warnings.append(dict(POLLING, arm="storm-rt-c-sigwait"))
    summary["warnings"] = warnings
    if observed is not None:
        summary["observed"] = observed
    return summary


def quality_section(text: str) -> List[str]:
    """``sed -n '/MEASUREMENT QUALITY/,/^NOTES/p'``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "MEASUREMENT QUALITY" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("NOTES"))
    return lines[start:end + 1]


def test_a_catalogue_runs_quality_section_fits_fifteen_lines() -> None:
    summary = catalogue_like()
    before = copy.deepcopy(summary)
    section = quality_section(format_summary(summary))
    assert summary == before  # laid out, never changed
    assert len(section) <= 15, "\n".join(section)
    assert section[0] == QUALITY_TITLE_GROUPED  # it says where each arm's own warning is
    text = " ".join(line.strip() for line in section)
    assert text.count("Repetitions disagree") == 1 and "(27 arms)" in text
    assert text.count("populations of wakes") == 1 and "(8 arms)" in text and "(13 arms)" in text and "(3 arms)" in text
    assert "storm-rt-c-sigwait: this wait polls, every 7.19 ms or more slowly" in text  # about one arm: in full
    worst = max(range(27), key=lambda i: (1.5 + (7 * i) % 23, -i))
    assert "medians apart by: %s" % (LONG_NAMES + [a["name"] for a in summary["arms"]])[worst] in text


def test_show_full_lists_every_warning_arm_by_arm() -> None:
    summary = catalogue_like()
    section = quality_section(format_summary(summary, arm_by_arm=True))
    assert section[0] == QUALITY_TITLE
    body = "\n".join(section)
    for record in summary["warnings"][1:]:
        assert format_warning(WarningRecord.from_json(record)).split(": ")[0] + ": " in body
    assert body.count(": repetitions disagree (their medians differ") == 27
    assert body.count("populations of wakes:") == 24


def test_a_loaded_machine_is_said_once_with_the_load_it_saw() -> None:
    observed = {"start": {"load_average": [0.27, 0.65, 0.86]}, "end": {"load_average": [2.1, 1.0, 0.9]},
                "cpu_busy": {"0": 0.9, "1": 0.95}, "busy_share": 0.1,
                "busy_processes": [{"pid": 4242, "name": "stress", "cpu_share": 0.97, "started_during_run": True}]}
    summary = catalogue_like(observed)
    text = format_summary(summary)
    section = quality_section(text)
    assert len(section) <= 15, "\n".join(section)
    # Said once, first (it may explain the rest), on one line.
    assert section[1] == "  - The machine was busy: stress (pid 4242) 97% of a CPU; load average 0.27 → 2.10 over the run."
    assert text.count("The machine was busy") == 1
    assert machine_load(dict(observed, busy_processes=[])) is None
    assert machine_load({"observed": dict(observed, busy_processes=[])}) is None
    assert machine_load({}) is None and machine_load({"observed": {"busy_processes": "x"}}) is None
    assert "The machine was busy" not in format_summary(catalogue_like())


BUSY = {"start": {"load_average": [0.27, 0.65, 0.86]}, "end": {"load_average": [2.1, 1.0, 0.9]},
        "busy_processes": [{"pid": 4242, "name": "stress", "cpu_share": 0.97, "started_during_run": True}]}
UNEXPLAINED_FIRST = [None] * 3 + [CPUS] * 8 + [WORKERS] * 13  # their worst arm has a long name, as measured


def test_on_a_busy_machine_the_load_line_counts_and_the_section_still_fits_fifteen_lines() -> None:
    # The unexplained populations' line wraps even naming its worst arm alone; with the load line on top the
    # bullets were 13 lines.  Last, that cause gives its count alone; every other group keeps naming its worst.
    section = quality_section(format_summary(catalogue_like(BUSY, UNEXPLAINED_FIRST)))
    assert len(section) <= 15, "\n".join(section)
    assert section[1].startswith("  - The machine was busy: stress (pid 4242)")
    assert "    nothing recorded tells why (measure --placement same,split): 3 arms;" in section
    text = " ".join(line.strip() for line in section)
    assert "medians apart by: event-spin 24× and 26 more (27 arms)" in text
    assert "where each wake ran explains them: queue 8.3×" in text and "(8 arms)" in text
    assert "the level shifted between worker processes: eventfd 12×" in text and "(13 arms)" in text
    assert "storm-rt-c-sigwait: this wait polls, every 7.19 ms or more slowly" in text  # about one arm: in full
    # Without the load line it fits naming them: the count alone is a last resort, not a habit.
    quiet = " ".join(line.strip() for line in quality_section(format_summary(catalogue_like(None, UNEXPLAINED_FIRST))))
    assert "measure --placement same,split): uvloop-call-soon-threadsafe 5.0×" in quiet


def test_a_group_named_by_its_count_alone() -> None:
    (group,) = group_warnings(records(populations("a", 5_000, 40_000, None), populations("b", 5_000, 20_000, None)))
    assert format_group_arms(group, shown=0) == "2 arms"
    assert format_group_arms(group, shown=1) == "a 8.0× and 1 more (2 arms)"


def test_the_html_report_names_a_group_once_and_folds_each_arms_own() -> None:
    from wakelab.report.html.sections import render_caveats

    summary = catalogue_like()
    before = copy.deepcopy(summary)
    html = render_caveats(view_of(summary))
    assert summary == before  # grouping lays the records out, never reorders or rewrites them
    assert html.count("Repetitions disagree") == 1
    assert html.count("Arm by arm") == 4  # repetitions and the three causes of populations
    assert html.count(": repetitions disagree (their medians differ") == 27  # each arm's own, folded
    assert html.count("storm-rt-c-sigwait: this wait polls") == 1


def test_summary_json_and_its_export_keep_every_warning(tmp_path: Any, capsysbinary: Any) -> None:
    from wakelab.cli import main

    folder = tmp_path / "run"
    shutil.copytree(CATALOGUE, folder)
    summary = catalogue_like()
    with open(folder / "summary.json", "w", encoding="utf-8") as fh:
        json.dump(summary, fh)
    capsysbinary.readouterr()
    assert main(["export", "-f", "json", "-o", "-", str(folder)]) == 0
    exported = json.loads(capsysbinary.readouterr().out.decode("utf-8"))
    assert exported["warnings"] == summary["warnings"]
    assert main(["show", str(folder)]) == 0
    assert len(quality_section(capsysbinary.readouterr().out.decode("utf-8"))) <= 15
    assert main(["show", "--full", str(folder)]) == 0
    assert capsysbinary.readouterr().out.decode("utf-8").count(": repetitions disagree") == 27


def test_a_run_with_nothing_to_group_reads_as_before() -> None:
    # The golden outputs hold the rest; here: one warning about one arm is its full sentence, under the plain title.
    path = os.path.join(os.path.dirname(GOLDEN), "..", "lab-evidence", "135-signal-vs-event-wakeup", "results", "summary.json")
    with open(path, encoding="utf-8") as fh:
        summary = json.load(fh)
    section = quality_section(format_summary(summary))
    assert section[0] == QUALITY_TITLE and section[1].startswith("  - event: repetitions disagree (their medians differ")


def test_gil_tails_and_timer_floors_group_by_their_interval_and_floor() -> None:
    def tail(arm: str, share: float, interval_s: float) -> Dict[str, Any]:
        return {"kind": "switch-interval-tail", "level": "warning", "arm": arm,
                "figures": {"share": share, "count": 10, "interval_s": interval_s, "multiples": [1, 2]}}

    def floor(arm: str, series: Optional[str], p50_ns: float, floor_ns: int = 300) -> Dict[str, Any]:
        return {"kind": "timer-floor", "level": "warning", "arm": arm, "figures": {
            "series": series, "p50_ns": p50_ns, "floor_ns": floor_ns, "multiple": 10, "clocksource": "hpet"}}

    groups = group_warnings(records(tail("event", 0.05, 0.005), floor("sigusr1-self", None, 2099.5), tail("queue", 0.12, 0.005),
                                    tail("pipe", 0.2, 0.001), floor("event", "wake", 1500.0), floor("pipe", None, 900.0, 50)))
    assert [(g.grouped, [m.label for m in g.members] or [r.arm for r in g.records]) for g in groups] == [
        (True, ["queue", "event"]), (True, ["event.wake", "sigusr1-self"]), (False, ["pipe"]), (False, ["pipe"])]
    assert format_warning_group(groups[0]).endswith("share of the wakes: queue 12%, event 5.0% (2 arms).")
    assert format_warning_group(groups[1]) == (
        "p50 under 10× the timer floor, 300 ns per perf_counter_ns() pair (clocksource hpet): the clock's own cost is a "
        "tenth of the figure or more; p50: event.wake 1.50 µs, sigusr1-self 2.10 µs (2 figures).")
