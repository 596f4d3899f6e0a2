"""Each latency arm's card: its figures, folded, and its histogram and ECDF (runs overlaid)."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from wakelab.evidence.model import ArmSamples
from wakelab.evidence.words import status_word
from wakelab.formatting import DASH, format_ns, format_ratio
from wakelab.report.text import (
    FAMILY_TITLES,
)
from wakelab.report.html.common import _badge, _by_name, _dict, DISTRIBUTION, esc, _latency, _list, _p50, _slug
from wakelab.report.html.load import RunEvidence
from wakelab.report.html.runs import _arm_order, RunLabel, _swatch


class _Plots:
    """The distribution charts of one page, each with its own element id."""

    def __init__(self) -> None:
        self.count = 0

    def next_id(self) -> str:
        self.count += 1
        return "plot-%d" % self.count


def kept_words(kept: int, total: int) -> str:
    """What a figure computed on a soak's kept raw samples is of."""
    return "from the first %s of %s wakes (the raw samples kept)" % (format(kept, ","), format(total, ","))


def soak_plot_words(samples: ArmSamples, counters: Any) -> str:
    """Where a soak past its raw-sample cap's plots come from (every wake, from its histogram; else the kept raw samples)."""
    if counters is None:
        return "Histogram and ECDF %s." % kept_words(samples.kept, samples.total)
    from wakelab.analysis.hdr import RELATIVE_ERROR

    return ("Histogram and ECDF of all %s wakes, from the soak's log-linear histogram (each wake at its counter's value, "
            "within %.2g %% of its own); the samples file keeps the raw samples of the first %s."
            % (format(samples.total, ","), 100 * RELATIVE_ERROR, format(samples.kept, ",")))


def render_distributions(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], plots_: _Plots) -> str:
    """One card per latency arm: its histogram and ECDF (runs overlaid), with each run's figures."""
    from wakelab.report.distribution import COMPONENT_COLORS, Series, distribution_chart
    from wakelab.report.interactive import chart_html

    cards = []
    several = len(runs) > 1
    for name in _arm_order(runs):
        entries = [_by_name(r.summary).get(name) for r in runs]
        first = next(e for e in entries if e is not None)
        series = []
        facts = []
        for run, entry, label in zip(runs, entries, labels):
            who = '%s<b title="%s">%s</b>: ' % (_swatch(label), esc(label.full), esc(label.short)) if several else ""
            if entry is None:
                facts.append('<li class="muted">%snot in this run</li>' % who)
                continue
            if entry.get("status") != "ok" or not entry.get("latency"):
                reason = entry.get("reason")
                facts.append(
                    '<li>%s<span class="badge st-%s">%s</span>%s</li>'
                    % (who, esc(_slug(str(entry.get("status")))), esc(status_word(entry.get("status"))),
                       (" " + esc(reason)) if reason else "")
                )
                continue
            lat = _latency(entry)
            text = "p50 <b>%s</b> · p99 <b>%s</b>%s · max %s · n %s" % (
                esc(format_ns(lat.get("p50_ns"))), esc(format_ns(lat.get("p99_ns"))),
                (" · p99.9 %s" % esc(format_ns(lat["p99_9_ns"]))) if lat.get("p99_9_ns") is not None else "",
                esc(format_ns(lat.get("max_ns"))), esc(lat.get("n")),
            )
            if lat.get("lost"):
                text += ' · <span class="warn">%s lost</span>' % esc(lat["lost"])
            spread = _dict(entry.get("spread"))
            if spread.get("max_over_min") is not None and spread.get("of") == "p50_ns":
                if spread.get("between") == "repetitions":
                    text += " · %s repetitions, medians within %s" % (
                        esc(_dict(entry.get("repetitions")).get("count", DASH)), esc(format_ratio(spread["max_over_min"])))
                else:
                    text += " · %s workers, medians within %s" % (esc(len(_list(entry.get("workers")))), esc(format_ratio(spread["max_over_min"])))
            samples = run.samples.get(name)
            counters = run.histograms.get(name)
            if samples is not None and not samples.every_wake:
                # A soak past its raw-sample cap: the plots are of every wake, from its histogram;
                # what summary.json computed on the raw samples (the workers' spread) is of the first K.
                if spread.get("max_over_min") is not None and spread.get("of") == "p50_ns":
                    text += ", %s" % esc(kept_words(samples.kept, samples.total))
                facts.append("<li>%s%s</li>" % (who, text))
                facts.append('<li class="muted">%s%s</li>' % (who, esc(soak_plot_words(samples, counters))))
            else:
                facts.append("<li>%s%s</li>" % (who, text))
            if samples is None or not samples.samples_ns:
                continue
            if counters is not None and not samples.every_wake:
                values, weights = counters.weighted_values()
                series.append(Series(label.short if several else name, values, lat.get("p50_ns"), lat.get("p99_ns"), label.color,
                                     weights=weights))
                continue
            series.append(Series(label.short if several else name, samples.samples_ns, lat.get("p50_ns"), lat.get("p99_ns"), label.color))
            if not several:
                for j, (comp, values) in enumerate(samples.components_ns.items()):
                    if values:
                        comp_lat = _dict(_dict(entry.get("components")).get(comp))
                        series.append(Series(comp, values, comp_lat.get("p50_ns"), comp_lat.get("p99_ns"),
                                             COMPONENT_COLORS[j % len(COMPONENT_COLORS)], dashed=True))
        figure = (
            '<div class="plot">%s</div>' % chart_html(distribution_chart(plots_.next_id(), series, marks=not several), DISTRIBUTION)
            if series
            else '<p class="muted noplot">No samples to plot.</p>'
        )
        headline = _headline(entries)
        cards.append(
            '<details class="arm" id="arm-%s"><summary><b>%s</b> %s %s %s <span class="muted">%s</span></summary>'
            '<ul class="figs">%s</ul>%s</details>'
            % (
                esc(_slug(name)), esc(name), _badge(FAMILY_TITLES.get(str(first.get("family")), first.get("family")), "fam"),
                _badge(first.get("waiter"), "w-" + str(first.get("waiter"))), _badge(first.get("scope"), "scope"),
                headline, "".join(facts), figure,
            )
        )
    if not cards:
        return '<p class="muted">No latency arms.</p>'
    return '<div class="arms">%s</div>' % "".join(cards)


def _headline(entries: Sequence[Optional[Mapping[str, Any]]]) -> str:
    """The figures a folded arm shows: p50 and p99 of the first run that measured it (escaped)."""
    for entry in entries:
        if entry is not None and _p50(entry) is not None:
            lat = _latency(entry)
            return "p50 %s · p99 %s" % (esc(format_ns(lat.get("p50_ns"))), esc(format_ns(lat.get("p99_ns"))) if lat.get("p99_ns") is not None else DASH)
    for entry in entries:
        if entry is not None:
            return esc(status_word(entry.get("status")))
    return ""


def _distribution_intro(several: bool) -> str:
    text = (
        "Each arm's wakes as a histogram (share of wakes per log-spaced bin; the rare wakes far beyond the rest are "
        "gathered in one hatched bin at the edge, so one outlier cannot squash the others) and an ECDF (fraction of "
        "wakes at or below a latency, over the whole range), both on a log time axis. Open an arm to see them. "
    )
    if several:
        text += "Runs are overlaid in their colours; on the ECDF a dot marks each run's p50 and a diamond its p99."
    else:
        text += "Dashed lines mark p50 and p99; dashed curves are the named components of a wake, where an arm records them."
    return '<p class="muted">%s</p>' % text
