"""The sections of one run: verdict, lead table, repetitions and placement, honesty, caveats, details, guidance."""

from __future__ import annotations

import math
from typing import List, Mapping, Optional, Sequence, Tuple, Union

from wakelab.analysis.caveats import NativeRatio
from wakelab.analysis.guidance import Guidance
from wakelab.analysis.view import RunView, view_of
from wakelab.evidence.sections import Conditions, Parameters, Soak, System
from wakelab.evidence.words import FREE_THREADED
from wakelab.formatting import DASH, finite_number, format_ns, format_rate, format_ratio
from wakelab.core.registry import FAMILY_TITLES
from wakelab.report.lead import (LATENCY_COLUMNS, NEAREST_FLOOR, lead_table, native_text, pairing_detail, placement_rows, rate_cells,
                                 us_cells, verdict_figures)
from wakelab.report.text import NATIVE_LEGEND, format_lost, format_warning, load_words, reproduce_commands, waiter_states
from wakelab.report.html.common import MAX_VALUE_CHARS, _badge, _list, _slug, _status_cell, esc
from wakelab.report.html.load import RunEvidence
from wakelab.report.text.honesty import ON_GIL, ONE_WAITER_STATE, execution_words, harness_words, spinning_on_gil

#: What a section is laid out from: a loaded run, its analysis view, or its summary document.
Run = Union[RunEvidence, RunView, Mapping[str, object]]


def _view(run: Run) -> RunView:
    """The run's :class:`~wakelab.analysis.view.RunView` (a loaded run's own, computed once)."""
    return run.view if isinstance(run, RunEvidence) else view_of(run)


def render_verdict(run: Run) -> str:
    """The lab's comparisons first (the answer), then each measured arm's p50 and p99.

    The same figures and judgements as summary.txt's verdict, from the same
    analysis view; only the order differs, so that the answer is the first thing read.
    """
    view = _view(run)
    arm_items: List[str] = []
    comparison_items: List[str] = []
    for arm in view.bundle.arms():
        figures = tuple(esc(f) for f in verdict_figures(arm) or ()) if arm.ok else ()
        if not figures:
            continue
        if arm.latency is not None:
            text = "<strong>%s</strong>: p50 <b>%s</b>, p99 <b>%s</b> over %s wakes %s %s" % (
                (esc(arm.name),) + figures + (_badge(arm.waiter, "w-" + arm.waiter), esc(arm.scope)))
            if arm.latency.lost:
                text += ' <span class="warn">%s.</span>' % esc(format_lost(arm))
        else:
            text = "<strong>%s</strong>: <b>%s ops/s</b> (median of %s rounds of %s calls; empty loop %s iterations/s)" % (
                (esc(arm.name),) + figures)
        arm_items.append("<li>%s</li>" % text)
    for pairing in view.pairings:
        if pairing.p50_ratio is None:
            continue
        judgement = ('<span class="badge good">like for like</span> %s' if pairing.like_for_like
                     else '<span class="badge bad">NOT like for like</span> %s') % esc(pairing_detail(pairing))
        comparison_items.append("<li><strong>%s / %s</strong> = <b>%s</b> at p50%s. %s.</li>" % (
            esc(pairing.a), esc(pairing.b), esc(format_ratio(pairing.p50_ratio)),
            (", <b>%s</b> at p99" % esc(format_ratio(pairing.p99_ratio))) if pairing.p99_ratio is not None else "", judgement))
    if not arm_items:
        return '<p class="muted">No arm produced figures in this run.</p>'
    out = ""
    if comparison_items:
        out += '<ul class="answer">%s</ul>' % "".join(comparison_items)
    return out + '<ul class="verdict">%s</ul>' % "".join(arm_items)


def _native_cell(ratio: Optional[NativeRatio]) -> str:
    """A "vs C" cell (escaped HTML): the ratio, badged "nearest floor" unless the floor is the same experiment."""
    if ratio is None:
        return DASH
    text, nearest = native_text(ratio)
    title = "the closest C experiment, not the same one: not the interpreter's share"
    return '%s <span class="badge nearest" title="%s">%s</span>' % (esc(text), esc(title), esc(NEAREST_FLOOR)) if nearest else esc(text)


def _num_cells(cells: Sequence[str]) -> str:
    return "".join('<td class="num">%s</td>' % c for c in cells)


def render_lead_table(run: Run) -> str:
    """Latency arms grouped by family (µs, with a log-scaled p50 bar), then rate arms."""
    table = lead_table(_view(run))
    out: List[str] = []
    if table.families:
        show_native = table.latency_native
        p50s = [p for p in (row.arm.p50_ns if row.arm.ok and not row.component else None for _, rows in table.families for row in rows) if p]
        lo, hi = (min(p50s), max(p50s)) if p50s else (1.0, 1.0)
        head = "".join("<th>%s</th>" % c for c in ("n", "lost") + LATENCY_COLUMNS)
        if show_native:
            head += '<th title="p50 over the p50 of its C floor, in this run">vs C p50</th>'
        width = 4 + 2 + len(LATENCY_COLUMNS) + (1 if show_native else 0)
        rows: List[str] = []
        for family, members in table.families:
            if len(table.families) > 1:
                rows.append('<tr class="family"><th colspan="%d">%s</th></tr>' % (width, esc(FAMILY_TITLES.get(family, family))))
            for a, lat, component in members:
                if component and lat is not None:
                    rows.append('<tr class="component"><th scope="row">↳ %s</th><td colspan="3"></td>%s%s</tr>' % (
                        esc(component), _num_cells([esc(lat.n), ""] + [esc(c) for c in us_cells(lat)]), "<td></td>" if show_native else ""))
                    continue
                name_cells = '<th scope="row"><a href="#arm-%s">%s</a></th><td>%s</td><td>%s</td>' % (
                    esc(_slug(a.name)), esc(a.name), _badge(a.waiter, "w-" + a.waiter), esc(a.scope))
                if not a.ok or lat is None:
                    rows.append('<tr class="not-ok">%s<td></td>%s</tr>' % (name_cells, _status_cell(a, width - 4)))
                    continue
                cells = [esc(lat.n), '<span class="warn">%s</span>' % esc(lat.lost) if lat.lost else "0"] + [esc(c) for c in us_cells(lat)]
                cells[3] = "<b>%s</b>" % cells[3]
                rows.append('<tr>%s<td class="bar">%s</td>%s%s</tr>' % (name_cells, _log_bar(lat.p50_ns, lo, hi), _num_cells(cells),
                                                                    '<td class="num">%s</td>' % _native_cell(table.native(a)) if show_native else ""))
        out.append(
            '<div class="table-wrap"><table class="lead"><caption>Wake latency, µs (p50 bar on a log scale)</caption>'
            '<thead><tr><th>arm</th><th>waiter</th><th>scope</th><th aria-label="p50 on a log scale"></th>%s</tr></thead><tbody>%s</tbody></table></div>'
            % (head, "".join(rows))
        )
    if table.rates:
        columns = ["calls/round", "rounds", "median ops/s", "slowest", "fastest", "empty loop/s", "net ns/call"]
        columns += ["C is faster by"] if table.rate_native else []
        rows = []
        for a in table.rates:
            name = '<th scope="row">%s</th>' % esc(a.name)
            if not a.ok or a.rate is None:
                rows.append('<tr class="not-ok">%s%s</tr>' % (name, _status_cell(a, len(columns))))
                continue
            cells = [esc(c) for c in rate_cells(a.rate)] + ([_native_cell(table.native(a))] if table.rate_native else [])
            cells[2] = "<b>%s</b>" % cells[2]
            rows.append("<tr>%s%s</tr>" % (name, _num_cells(cells)))
        out.append(
            '<div class="table-wrap"><table class="lead rate"><caption>Rate arms</caption><thead><tr><th>arm</th>%s</tr></thead>'
            "<tbody>%s</tbody></table></div>" % ("".join("<th>%s</th>" % esc(c) for c in columns), "".join(rows))
        )
    if table.ratios:
        out.append('<p class="muted legend">%s</p>' % esc(NATIVE_LEGEND))
    return "".join(out) or '<p class="muted">This run has no arms.</p>'


REPETITIONS_LEGEND = (
    "Repetitions: each repetition's own p50, in the order they ran; range: (largest - smallest) over their median. "
    "Where they ran: a wake's CPUs are read outside the timed window (the notifier's right before t0, the waiter's "
    "right after t1); crossed: the share of the wakes with both CPUs known that ran on two CPUs. '-' where an arm "
    "does not record them (self-signal arms, the C floor's process experiments, open loop); a p99 needs 100 wakes "
    "in its population."
)


def render_repetitions_and_placement(run: Run) -> str:
    """Per latency arm, each repetition's own p50 and their range, and its wakes split by where they ran.

    Empty for a bundle that has neither (made before ``--repeat``), so such a page is as it was.
    """
    rows: List[str] = []
    for row in placement_rows(_view(run)):
        if not row.arm.ok:
            continue
        cells = [esc(" · ".join(row.repetitions) or DASH)] + [esc(c) for c in row.cells]
        if row.unknown is not None:
            cells[-1] += ' <span class="muted">(%s unknown)</span>' % esc(row.unknown)
        rows.append('<tr><th scope="row"><a href="#arm-%s">%s</a></th>%s</tr>' % (
            esc(_slug(row.arm.name)), esc(row.arm.name), "".join('<td class="num">%s</td>' % c for c in cells)))
    if not rows:
        return ""
    return (
        '<div class="table-wrap"><table class="reps"><caption>Wake latency, µs: each repetition\'s own p50, '
        "and the wakes split by where they ran</caption><thead>"
        '<tr><th rowspan="2">arm</th><th colspan="2">repetitions</th><th colspan="3">same CPU</th><th colspan="3">cross CPU</th>'
        '<th rowspan="2">crossed</th></tr>'
        "<tr><th>p50 of each</th><th>range</th><th>n</th><th>p50</th><th>p99</th><th>n</th><th>p50</th><th>p99</th></tr>"
        "</thead><tbody>%s</tbody></table></div>"
        '<p class="muted legend">%s</p>' % ("".join(rows), esc(REPETITIONS_LEGEND))
    )


def _log_bar(value: Optional[float], lo: float, hi: float) -> str:
    """A bar whose length is ``value``'s place between ``lo`` and ``hi`` on a log scale."""
    if value is None or value <= 0 or lo <= 0:
        return ""
    span = math.log(hi / lo) if hi > lo else 1.0
    share = 0.08 + 0.92 * (math.log(value / lo) / span if hi > lo else 1.0)
    return '<span class="p50bar" style="width:%.0f%%"></span>' % (100 * min(1.0, max(0.0, share)))


def _dl(rows: Sequence[Tuple[str, str]]) -> str:
    """A definition list; ``rows`` are (label, already-escaped HTML)."""
    return '<dl class="facts">%s</dl>' % "".join("<dt>%s</dt><dd>%s</dd>" % (esc(k), v) for k, v in rows if v)


def readable(value: object) -> str:
    """A structured value from the evidence in words, never JSON: ``yes``/``no``, lists joined, dicts as ``key value``."""
    if value is None:
        return "not reported"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (list, tuple)):
        return ", ".join(readable(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return "; ".join("%s %s" % (k, readable(v)) for k, v in sorted(value.items(), key=lambda kv: str(kv[0])))
    text = str(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _idle_words(system: System, conditions: Conditions) -> str:
    """The CPU idle set-up in words: driver, governor, each state's exit latency, and the idle hold."""
    parts = []
    if system.cpuidle_driver or system.cpuidle_governor:
        parts.append("cpuidle driver <b>%s</b>, governor %s" % (esc(readable(system.cpuidle_driver)),
                                                                 esc(readable(system.cpuidle_governor))))
    states = system.states
    if states:
        words = ["%s (exit %s µs%s)" % (esc(readable(state.name)), esc(readable(state.exit_latency_us)), ", disabled" if state.disabled else "")
                 for state in states]
        disabled = sum(1 for state in states if state.disabled)
        parts.append("idle states %s; %s" % (", ".join(words), "none disabled" if not disabled else "%d disabled" % disabled))
    if conditions.idle_hold:
        parts.append("<b>/dev/cpu_dma_latency held at 0</b> (idle CPUs kept shallow)" if conditions.applied_idle_hold
                     else '<span class="warn">idle hold requested but not applied</span>')
    else:
        parts.append("no low-latency idle request held (deep idle states allowed)")
    return "; ".join(parts)


def _system_words(system: System) -> str:
    """The system's settings in words: the known ones first, then every other one recorded (a newer wakelab's)."""
    parts = []
    recorded = system.recorded
    if system.clocksource:
        parts.append("clocksource <b>%s</b>" % esc(readable(system.clocksource)))
    if "cpufreq_governor" in recorded:
        parts.append("frequency governor %s" % esc(readable(system.cpufreq_governor)))
    if system.smt_active is not None:
        parts.append("SMT %s" % ("on" if str(system.smt_active) in ("1", "True", "true") else "off"))
    if "isolated_cpus" in recorded:
        parts.append("isolated CPUs: %s" % esc(system.isolated_cpus or "none"))
    if "nohz_full" in recorded:
        parts.append("nohz_full: %s" % esc(system.nohz_full or "not set"))
    load = _list(system.load_average)
    if len(load) == 3:
        parts.append("load average %s (1, 5, 15 min)" % esc(" / ".join(readable(v) for v in load)))
    if system.hypervisor:
        parts.append("<b>under a hypervisor</b> (its idle and wake-up behaviour is in every figure)")
    known = {"clocksource", "cpufreq_governor", "smt_active", "isolated_cpus", "nohz_full", "load_average", "hypervisor",
             "idle_states", "cpuidle_driver", "cpuidle_governor"}
    for key in sorted(k for k in recorded if k not in known):
        parts.append("%s: %s" % (esc(key.replace("_", " ")), esc(readable(recorded[key]))))
    return "; ".join(parts)


def _placement_words(params: Parameters, conditions: Conditions) -> str:
    placement = params.placement or "any"
    if placement == "any":
        where = "unpinned (the scheduler chose the CPUs)"
    elif placement == "same":
        where = "notifier and waiter pinned to <b>one CPU</b> (CPU %s)" % esc(params.notifier_cpu)
    else:
        where = "notifier pinned to CPU %s, waiter to CPU %s (<b>split</b>)" % (esc(params.notifier_cpu), esc(params.waiter_cpu))
    load = [esc(words) for words in load_words(conditions)]
    return "%s; load: %s" % (where, "; ".join(load) if load else "none added")


def _soak_words(soak: Soak) -> str:
    """A soak's duration and where its figures come from (summary.txt's Soak line, with what the page draws from)."""
    text = "%s s asked for, %s s run, in %s consecutive workers%s; n, lost, min, max, mean and stdev are exact" % (
        esc(soak.duration_s), esc(soak.elapsed_s), esc(soak.chunks),
        "" if soak.finished else ' <span class="warn">(ended early)</span>')
    if _list(soak.from_histogram):
        relative = finite_number(soak.relative_error)
        text += (", the percentiles come from a log-linear histogram of every wake (HdrHistogram layout, %s significant "
                 "digits: within %s of the exact ones). The raw samples kept are the first %s wakes, of the first %s "
                 "workers; the workers' spread and the quality flags are computed on them, the plots are of every wake"
                 % (esc(soak.significant_digits), esc(DASH if relative is None else "%.2g %%" % (100 * relative)),
                    esc(soak.raw_kept), esc(soak.raw_kept_slices)))
    else:
        text += ", and so are the percentiles (every wake's raw sample is kept)"
    return text


def _timing_words(params: Parameters) -> str:
    if params.open_loop:
        timing = "open loop: a notify every %s µs on a fixed schedule, latency from the scheduled instant" % esc(params.interval_us)
    else:
        timing = "closed loop: blocked waiters settle %s µs before each notify, latency from t0" % esc(params.settle_us)
    return (
        "%s; %s counted wakes per latency arm after %s warm-up wakes; rate arms: %s rounds of %s calls after %s warm-up round(s); "
        "every wait times out after %s s (a lost wake)%s"
        % (timing, esc(params.n), esc(params.warmup), esc(params.rounds), esc(format_rate(params.install_n)),
           esc(params.warmup_rounds), esc(params.timeout_s),
           ('; <span class="warn">planted delay %s µs</span> (self-test)' % esc(params.planted_delay_us)) if params.planted_delay_us else "")
    )


def render_honesty(run: Run) -> str:
    """When, on what, how: the facts a reader needs before quoting a figure, in words (no raw JSON)."""
    bundle = _view(run).bundle
    interp, machine, params, timer = bundle.interpreter, bundle.machine, bundle.parameters, bundle.timer
    system, conditions = bundle.system, bundle.conditions
    rows: List[Tuple[str, str]] = [
        ("Date", "%s (UTC), wall time %s s" % (esc(bundle.started_utc), esc(bundle.wall_s))),
        (
            "Interpreter",
            "%s <span class=\"muted\">(%s; %s)</span>, %s%s, switch interval %s s%s"
            % (
                esc(interp.label), esc(interp.build), esc(interp.compiler),
                "%s build, " % FREE_THREADED if interp.free_threaded_build else "", esc(interp.gil_word),
                esc(interp.switch_interval_s),
                (" · <code>%s</code>" % esc(interp.executable)) if interp.executable else "",
            ),
        ),
        (
            "Machine",
            "%s%s %s %s, %s, %s CPUs (allowed: %s)"
            % (
                ("host <b>%s</b>: " % esc(machine.hostname)) if machine.hostname else "",
                esc(machine.os), esc(machine.kernel), esc(machine.architecture),
                esc(machine.cpu_model), esc(machine.cpu_count), esc(readable(machine.cpus_allowed)),
            ),
        ),
    ]
    if timer.present:
        text = "%s (%s); back-to-back floor <b>%s ns</b> median, %s ns min: no figure below it means anything" % (
            esc(timer.clock), esc(timer.implementation), esc(timer.floor_p50_ns), esc(timer.floor_min_ns))
        if timer.harness is not None:
            text += "; harness bookkeeping " + harness_words(timer, esc)
        rows.append(("Clock", text))
    execution = bundle.execution
    if execution.present:
        python = " · <code>%s</code>" % esc(execution.python) if execution.python else ""
        rows.append(("Execution", execution_words(execution, esc) + python))
    if bundle.soak is not None:
        rows.append(("Soak", _soak_words(bundle.soak)))
    rows.append(("Timing", _timing_words(params)))
    rows.append(("Placement", _placement_words(params, conditions)))
    if system.present or conditions.present:
        rows.append(("CPU idle", _idle_words(system, conditions)))
    if system.present:
        rows.append(("System", _system_words(system)))
    described = waiter_states(bundle.arms())
    if described:
        rows.append(("Models", '<span class="warn">These arms are not identical models</span> (%s).%s' % (esc(described), ONE_WAITER_STATE)))
    if spinning_on_gil(bundle):
        rows.append(("Spinning under the GIL", "%s: %s" % (esc(", ".join(spinning_on_gil(bundle))), ON_GIL)))
    if bundle.note:
        rows.append(("Note", esc(bundle.note)))
    if bundle.command:
        rows.append(("Command", "<code>%s</code>" % esc(" ".join(bundle.command))))
    recorded = "".join(
        "<dt>%s</dt><dd>%s</dd>" % (esc(section), esc(readable(bundle.recorded(section))))
        for section in ("parameters", "conditions", "execution", "system") if bundle.recorded(section)
    )
    out = _dl(rows)
    if recorded:
        out += '<details class="recorded"><summary>Every recorded setting</summary><dl class="facts">%s</dl></details>' % recorded
    return out


def render_caveats(run: Run) -> str:
    """The caveats, then the measurement-quality warnings -- the load the run saw first, the arms that share a
    warning on one item with each arm's own sentence folded under it -- and the notes."""
    from wakelab.report.text import format_machine_load, format_warning_group

    view = _view(run)
    caveats = view.bundle.caveats
    quality = [g for g in view.warning_groups if all(isinstance(w.raw, (str, dict)) for w in g.records)]
    notes = [w for w in view.notes if isinstance(w.raw, (str, dict))]
    parts: List[str] = []
    if caveats:
        parts.append('<ul class="caveats">%s</ul>' % "".join("<li>%s</li>" % esc(c) for c in caveats))
    items = ["<li>%s</li>" % esc(format_machine_load(view.machine_load))] if view.machine_load is not None else []
    for group in quality:
        if group.grouped:
            items.append("<li>%s<details><summary>Arm by arm</summary><ul>%s</ul></details></li>" % (
                esc(format_warning_group(group)), "".join("<li>%s</li>" % esc(format_warning(w)) for w in group.records)))
        else:
            items.append("<li>%s</li>" % esc(format_warning(group.records[0])))
    if items:
        parts.append('<h3>Measurement-quality warnings</h3><ul class="caveats quality">%s</ul>' % "".join(items))
    if notes:
        parts.append('<h3>Notes</h3><ul class="caveats notes">%s</ul>' % "".join("<li>%s</li>" % esc(format_warning(w)) for w in notes))
    return "".join(parts) or '<p class="muted">No caveats: every arm ran, no wake was lost.</p>'


def render_details(run: Run) -> str:
    """What each arm times, the methodology, limits and how to reproduce: folded away."""
    view = _view(run)
    lab = view.bundle.lab
    rows = "".join(
        '<tr><th scope="row">%s</th><td>%s</td><td>%s</td><td>%s</td></tr>'
        % (esc(a.name), esc(a.mechanism), esc(a.t0), esc(a.t1))
        for a in view.bundle.arms()
    )
    parts = [
        '<details><summary>What each arm times (t0, t1)</summary><div class="table-wrap"><table class="defs">'
        "<thead><tr><th>arm</th><th>mechanism</th><th>t0</th><th>t1</th></tr></thead><tbody>%s</tbody></table></div></details>" % rows
    ]
    if lab.methodology:
        parts.append("<details><summary>Methodology</summary>%s</details>" % "".join("<p>%s</p>" % esc(p) for p in lab.methodology))
    if lab.limits:
        parts.append("<details><summary>Limits</summary><ul>%s</ul></details>" % "".join("<li>%s</li>" % esc(p) for p in lab.limits))
    try:
        commands = reproduce_commands(view)
    except (KeyError, TypeError, AttributeError):
        commands = []
    if commands:
        parts.append("<details><summary>Reproduce</summary>%s</details>" % "".join("<pre><code>%s</code></pre>" % esc(c) for c in commands))
    return "".join(parts)


def guidance_of(run: Run) -> Guidance:
    """What the run's figures advise, as the analysis layer words it (:func:`wakelab.analysis.guidance.guidance_for`)."""
    return _view(run).guidance


def render_guidance(run: RunEvidence) -> str:
    """The GUIDANCE section's body (escaped HTML): the headline, then each claim with the figures it cites."""
    found = guidance_of(run)
    if not found.headline and not found.items:
        return ""
    # A cite links to the arm's distributions where it has them (latency arms); a rate arm's is plain text.
    cards = {a.name for a in run.bundle.arms() if a.is_latency}
    items = []
    for advice in found.items:
        cites = "".join(
            ('<a class="cite" href="#arm-%s">%%s</a>' % esc(_slug(cite.arm)) if cite.arm in cards else '<span class="cite">%s</span>')
            % ("%s %s %s" % (esc(cite.arm), esc(cite.figure.replace("per_call", "per call")), esc(format_ns(cite.value_ns))))
            for cite in advice.cites
        )
        items.append('<li><span class="badge topic">%s</span> %s%s</li>' % (
            esc(advice.topic), esc(advice.text), (' <span class="cites">%s</span>' % cites) if cites else ""))
    return '<p class="answer">%s</p><ul class="guidance">%s</ul>' % (esc(found.headline), "".join(items))
