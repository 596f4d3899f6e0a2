"""Guidance: what this run's figures tell someone choosing a wake path (stdlib only).

The original Lab 135 write-up ended with advice for SRE work: Event (or Condition/Queue) for in-process wake-ups;
signals for process control, with handlers that only set a flag or write a byte to a wakeup fd; a busy-wait figure
says nothing about ``pause()`` or ``sigwait``; installing a handler is cheap.  This package turns a run's own figures
into that advice, so that it changes when the figures change and says nothing about an arm the run did not measure
(only arms with status ``ok`` and figures are cited).  Nothing random enters: the rank test is exact and arms are
ordered by p50, then name, so the same evidence always gives the same words.

One module per part, each importing only those above it: ``records``, ``noise``, ``ranking``, ``advice``,
``cautions``; this ``__init__`` puts the advice in its order under its headline."""

from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Sequence

from wakelab.analysis.caveats import bundle_of
from wakelab.analysis.guidance.advice import handoff_advice, install_advice, prefer_advice, process_advice, signal_advice
from wakelab.analysis.guidance.cautions import (
    busy_threads, open_loop_advice, open_loop_words, pitfalls, polling_advice, tail_advice)
from wakelab.analysis.guidance.noise import Level, format_times, measured_levels, positive, rank_test_p
from wakelab.analysis.guidance.ranking import (
    GROUPS, IN_PROCESS, LEADER, PROCESS_GROUP, SIGNAL_GROUP, SLOWER, UNCLEAR, Ranking, format_ranking, group_clause,
    open_loop_interval, open_loop_note, rank_wake_paths)
from wakelab.analysis.guidance.records import OPEN_LOOP, PITFALL, PREFER, SELF_TEST, SIGNALS, TAIL, Advice, Cite, Guidance
from wakelab.evidence.model import Bundle
from wakelab.formatting import counted, format_ns, format_rate


def guidance_for(bundle: Bundle, ranked: Optional[Sequence[Ranking]] = None) -> Guidance:
    """The advice this run's figures support (``ranked``: the bundle's :func:`rank_wake_paths`, if known)."""
    levels = measured_levels(bundle)
    rankings = {r.group: r for r in (rank_wake_paths(bundle) if ranked is None else ranked)}
    in_process = rankings.get(IN_PROCESS)
    items: List[Advice] = []
    clauses: List[str] = []

    def add(more: Sequence[Optional[Advice]], clause: str = "") -> None:
        items.extend(item for item in more if item is not None)
        if clause:
            clauses.append(clause)

    planted = positive(bundle.parameters.planted_delay_us)
    if planted is not None and levels:
        any_level = min(levels.values(), key=lambda lv: lv.name)
        items.append(Advice(SELF_TEST, (
            "Every notify had a planted delay of %s µs: these figures test the harness, and the advice below is "
            "about them, not about this machine." % format_rate(planted)), (any_level.cite(),)))
    interval = open_loop_interval(bundle)
    if interval is not None and levels:
        items.append(open_loop_advice(levels, in_process, interval))
    prefer, clause = prefer_advice(in_process)
    add([prefer], clause)
    processes = process_advice(rankings.get(PROCESS_GROUP))
    if processes is not None:
        add([processes], group_clause(rankings[PROCESS_GROUP], "across processes") if prefer is None else "")
    add(*signal_advice(levels, in_process, rankings.get(SIGNAL_GROUP)))
    install = install_advice(bundle)
    if install is not None:
        add([install], "" if clauses else "installing a signal handler costs %s" % format_ns(install.cites[0].value_ns))
    add([tail_advice(bundle, in_process, levels)])
    add(*handoff_advice(levels))
    from wakelab.analysis import storms  # lazily: it builds on this package

    add(*storms.storm_advice(bundle, levels))
    add(*storms.realtime_advice(bundle, levels))
    add(*polling_advice(bundle, levels, in_process))
    add(pitfalls(levels))
    if not clauses and levels:
        lowest = min(levels.values(), key=lambda lv: (lv.p50_ns, lv.name))
        clauses.append("lowest p50 measured: %s (%s)" % (lowest.name, format_ns(lowest.p50_ns)))
    if not clauses:
        headline = "No arm produced figures in this run: nothing to advise."
    else:
        headline = "; ".join(clauses)
        headline = headline[0].upper() + headline[1:] + "."
        busy = busy_threads(bundle)
        # Each condition of the run, innermost first, prefixed to the headline.
        for prefix in ("Open loop (%s): " % open_loop_words(interval) if interval is not None else None,
                       "With %s beside the waiter: " % counted(busy, "busy Python thread") if busy else None,
                       "Self-test (planted delay %s µs): " % format_rate(planted) if planted is not None else None):
            if prefix is not None:
                headline = prefix + headline[0].lower() + headline[1:]
    return Guidance(headline, tuple(items))


def guidance_dict(summary: Mapping[str, object]) -> Dict[str, object]:
    return guidance_for(bundle_of(summary)).to_dict()


__all__ = [
    "Advice", "Cite", "Guidance", "OPEN_LOOP", "PITFALL", "PREFER", "SELF_TEST", "SIGNALS", "TAIL", "Level", "format_times",
    "rank_test_p", "GROUPS", "IN_PROCESS", "LEADER", "SLOWER", "UNCLEAR", "Ranking", "format_ranking", "open_loop_note",
    "rank_wake_paths", "guidance_dict", "guidance_for",
]
