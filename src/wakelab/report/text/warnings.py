"""The wording of each warning and note of summary.json, one record at a time: its kind chooses the sentence
(:data:`_WORDINGS`), its figures typed for the kind by :func:`~wakelab.analysis.warning_figures.figures_of`."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Optional, Sequence

from wakelab.analysis.warning_figures import (CauseKind, OmittedFigures, PollingFigures, PopulationCause, PopulationsFigures,
                                              SpreadFigures, StoredEntry, SwitchTailFigures, TimerFloorFigures, figures_of)
from wakelab.evidence.model import WarningKind, WarningRecord
from wakelab.formatting import format_ns, format_percent, format_ratio

def format_warning(record: WarningRecord) -> str:
    """One warning or note of summary.json, worded.

    A sentence from an older bundle is kept as it is.  The schema leaves ``figures`` open, so a record whose figures
    are not what its kind says (a hand-edited or newer bundle: :func:`~wakelab.analysis.warning_figures.figures_of`
    raises, or the wording cannot place them), or whose kind is none of :class:`WarningKind`, is shown as stored.
    """
    if record.text is not None:
        return record.text
    try:
        return _WORDINGS[WarningKind(record.kind)](record.arm, figures_of(record))
    except (AttributeError, KeyError, OverflowError, TypeError, ValueError):
        stored = StoredEntry.of(record)
        # An unknown kind without figures shows none ({}); a known kind's figures are shown as they are.
        figures = stored.figures if stored.figures or isinstance(record.kind, WarningKind) else {}
        return "%s%s: %s" % ("%s: " % stored.arm if stored.arm else "", stored.kind,
                             json.dumps(figures, sort_keys=True, default=repr))


def _multiples(ks: Sequence[int]) -> str:
    ks = sorted(int(k) for k in ks)
    if not ks:
        return "a few"
    if ks == list(range(ks[0], ks[-1] + 1)) and len(ks) > 2:
        return "%d-%d" % (ks[0], ks[-1])
    return " or ".join(str(k) for k in ks) if len(ks) <= 2 else ", ".join(str(k) for k in ks[:-1]) + " or %d" % ks[-1]


def _population_cause(cause: Optional[PopulationCause]) -> str:
    if cause is None:
        return "Nothing this run recorded tells why; --placement same,split shows whether placement does."
    if cause.kind is CauseKind.CPUS:
        share = cause.cross_share
        return "Where each wake ran explains it: %s of wakes crossed CPUs, p50 %s against %s on one CPU." % (
            format_percent(float(share) * 100) if isinstance(share, (int, float)) else "some",
            format_ns(cause.cross_cpu_p50_ns), format_ns(cause.same_cpu_p50_ns))
    if cause.kind is CauseKind.WORKERS:
        medians = ", ".join(format_ns(m) for m in cause.worker_p50_ns or ())
        return "The worker processes' medians (%s) fall in different populations: the level shifted between processes." % medians
    if cause.kind is CauseKind.PLACEMENT:
        return ("Where the two sides ran differed between worker processes (the same CPU in %s, different CPUs in %s), "
                "which can explain it; --placement same,split measures each apart." % (cause.same_cpu_workers, cause.split_workers))
    return "Cause recorded: %s." % json.dumps(cause.stored, sort_keys=True)


_COUNT_WORDS = {2: "two", 3: "three", 4: "four"}


def _word_percentiles_omitted(arm: object, f: OmittedFigures) -> str:
    shown = ", ".join(
        "%s where n = %s (it needs n >= %s)" % (str(x.percentile).replace("_", "."), x.n, x.needs_n) for x in f.left_out)
    return ("Percentiles left out for want of wakes: %s. A tail percentile pQ needs n >= 1/(1-Q/100), so that at "
            "least one wake lies above it; raise --n to report it." % shown)


def _word_worker_spread(arm: object, f: SpreadFigures) -> str:
    what, ratio = "medians" if f.medians else "rates", format_ratio(f.max_over_min)
    if f.between_repetitions:
        return ("%s: repetitions disagree (their %s differ %s): the level shifts over the run; compare gives such an arm "
                "a wider interval, and more repetitions (--repeat) narrow it." % (arm, what, ratio))
    return ("%s: worker processes disagree (their %s differ %s): the level shifts between processes; raise --workers "
            "and compare runs side by side." % (arm, what, ratio))


def _word_populations(arm: object, f: PopulationsFigures) -> str:
    described = ", ".join("%.0f%% between %s and %s" % (100 * p.share, format_ns(p.low_ns), format_ns(p.high_ns))
                          for p in f.named)
    more = " and %d smaller" % (f.count - len(f.named)) if f.count > len(f.named) else ""
    return ("%s: %s populations of wakes: %s%s (the middle 80%% of each); a single percentile hides that. %s"
            % (arm, _COUNT_WORDS.get(f.count, str(f.count)), described, more, _population_cause(f.cause)))


def _word_switch_interval_tail(arm: object, f: SwitchTailFigures) -> str:
    return ("%s: %.1f%% of wakes (%s) took just over %s switch interval(s) of %s: a busy Python thread held the GIL "
            "and the waiter waited for the interpreter to force a switch."
            % (arm, 100 * f.share, f.count, _multiples(f.multiples), format_ns(f.interval_s * 1e9)))


def _word_timer_floor(arm: object, f: TimerFloorFigures) -> str:
    series = " of .%s" % f.series if f.series else ""
    clocksource = " (clocksource %s)" % f.clocksource if f.clocksource else ""
    return ("%s: p50%s %s is under %s× the timer floor, %s ns per perf_counter_ns() pair%s: the clock's own cost "
            "is a tenth of the figure or more." % (arm, series, format_ns(f.p50_ns), f.multiple, f.floor_ns, clocksource))


def _word_polling(arm: object, f: PollingFigures) -> str:
    spread = "its wakes spread evenly from %s to %s instead of bunching near a floor as a blocked wait's do" % (
        format_ns(f.low_ns), format_ns(f.high_ns))
    figures = "(distance to an even spread %.2f)" % f.distance
    jitter = f.settle_jitter_us
    if f.spans_jitter and jitter:
        return ("%s: this wait polls, every %s or more slowly: %s, as far as the settle's random part (%s) reaches, "
                "so the period may be longer; --settle-jitter-us %d (twice that) would measure it %s. A wake that "
                "polls costs up to a whole period, half of it on average." % (
                    arm, format_ns(f.period_ns), spread, format_ns(float(jitter) * 1000), 2 * int(jitter), figures))
    return ("%s: this wait polls about every %s: %s. A notify is seen at the next poll, so a wake costs up to a whole "
            "period, half of it on average, however fast the machine %s." % (arm, format_ns(f.period_ns), spread, figures))


#: How each kind of record is worded: ``(arm, figures of its kind) -> sentence``.
_WORDINGS: Dict[WarningKind, Callable[[object, Any], str]] = {
    WarningKind.PERCENTILES_OMITTED: _word_percentiles_omitted,
    WarningKind.WORKER_SPREAD: _word_worker_spread,
    WarningKind.POPULATIONS: _word_populations,
    WarningKind.SWITCH_INTERVAL_TAIL: _word_switch_interval_tail,
    WarningKind.POLLING: _word_polling,
    WarningKind.TIMER_FLOOR: _word_timer_floor,
}
