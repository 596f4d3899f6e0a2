"""Several runs on one page: their labels, what differs between them, the tables that compare them, each run's own sections."""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.analysis.compare import ArmComparison, format_ratio_plain
from wakelab.analysis.view import AgainstFirst
from wakelab.evidence.model import ArmRecord, Bundle, LatencyFigures
from wakelab.evidence.words import status_word
from wakelab.formatting import DASH, format_rate, format_ratio, format_us
# The rule a ratio is coloured by is matrix.txt's, so that the text and the page judge a tail alike.
from wakelab.analysis.matrix import positive_ratio, ratio_tone
from wakelab.report.html.common import esc, _plain, _run_state, _slug, table
from wakelab.report.html.load import RunEvidence
from wakelab.report.honesty import clip
from wakelab.report.html.sections import (render_caveats, render_details, render_guidance, render_honesty, render_lead_table,
                                          render_repetitions_and_placement, render_verdict)


_DIFF_SECTIONS = ("interpreter", "conditions", "execution", "parameters", "machine")


def _flat(bundle: Bundle) -> Dict[str, str]:
    flat = {"lab": str(bundle.lab.id), "wakelab": str(bundle.tool_version)}
    for section in _DIFF_SECTIONS:
        recorded = bundle.recorded(section)
        flat.update(("%s.%s" % (section, key), _plain(recorded[key])) for key in sorted(recorded, key=str))
    return flat


def differing_fields(runs: Sequence[RunEvidence]) -> List[str]:
    """Fields (``section.key``) whose values are not the same in every run, in a stable order."""
    flats = [_flat(r.bundle) for r in runs]
    return [k for k in dict.fromkeys(k for flat in flats for k in flat) if len({f.get(k, DASH) for f in flats}) > 1]


@dataclasses.dataclass(frozen=True)
class RunLabel:
    """How the page names a run: ``short`` (``#2 settle1001us``: its note or folder) and ``full`` (with its
    interpreter, its machine in a fleet, and the conditions that set it apart)."""

    short: str
    full: str
    color: str


# Conditions named in a run's label, at most; the table "What differs" has them all.
MAX_LABEL_CONDITIONS = 3
MAX_SHORT_LABEL_CHARS = 32
MAX_HOST_CHARS = 24
# Parent folders a run's name may take in to tell it from another run's folder of the same name.
MAX_PARENT_FOLDERS = 3
# Besides conditions, the fields a run's label names when they tell the runs apart (a grid's placements, settle times).
LABEL_FIELDS = ("parameters.placement", "parameters.settle_us", "parameters.mode", "execution.mode", "execution.workers")


def _run_name(run: RunEvidence, parents: int) -> str:
    """A run's name: its note (``--note``), else its folder's name with ``parents`` parent folders (the end kept)."""
    note = " ".join(str(run.bundle.note or "").split())
    if note:
        return clip(note, MAX_SHORT_LABEL_CHARS)
    path = "/".join(p for p in os.path.abspath(run.bundle.folder or run.bundle.source).split(os.sep)[-1 - parents:] if p)
    return path if len(path) <= MAX_SHORT_LABEL_CHARS else "…" + path[1 - MAX_SHORT_LABEL_CHARS:]


def run_names(runs: Sequence[RunEvidence]) -> List[str]:
    """Each run's name (:func:`_run_name`), parent folders taken in until no two runs' names are the same."""
    parents = [0] * len(runs)
    names = [_run_name(run, 0) for run in runs]
    for _ in range(MAX_PARENT_FOLDERS):
        clashing = [i for i, name in enumerate(names) if names.count(name) > 1]
        if not clashing:
            break
        for i in clashing:
            parents[i] += 1
            names[i] = _run_name(runs[i], parents[i])
    return names


def run_labels(runs: Sequence[RunEvidence]) -> List[RunLabel]:
    """``#1 NAME`` (:func:`run_names`; the position keeps two runs of one name apart), and in full with the
    interpreter, the machine in a fleet, and the conditions that tell the runs apart."""
    from wakelab.report.distribution import PALETTE

    differing = [k for k in differing_fields(runs) if k.startswith("conditions.") or k in LABEL_FIELDS]
    # A condition as requested says what the run was meant to be; its applied_ twin is in the table.
    requested = [k for k in differing if not k.split(".", 1)[1].startswith("applied_")] or differing
    shown = requested[:MAX_LABEL_CONDITIONS]
    labels = []
    fleet = len({r.bundle.hostname for r in runs}) > 1
    for i, (run, name) in enumerate(zip(runs, run_names(runs)), 1):
        flat = _flat(run.bundle)
        short = "#%d %s" % (i, name)
        secondary = ([clip(run.bundle.hostname or "?", MAX_HOST_CHARS)] if fleet else []) + [
            clip(run.bundle.interpreter.label, MAX_SHORT_LABEL_CHARS)]
        extra = ", ".join("%s=%s" % (k.split(".", 1)[1], flat.get(k, DASH)) for k in shown)
        if len(requested) > len(shown):
            extra += ", …"
        full = " · ".join([short] + secondary) + (" (%s)" % extra if extra else "")
        labels.append(RunLabel(short, full, PALETTE[(i - 1) % len(PALETTE)]))
    return labels


def _swatch(label: RunLabel) -> str:
    return '<span class="swatch" style="background:%s"></span>' % esc(label.color)


def render_runs_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    """One row per run (grouped by machine when they come from several: a fleet)."""
    fleet = len({r.bundle.hostname for r in runs}) > 1
    rows = []
    host: Optional[str] = None
    for run, label in zip(runs, labels):
        bundle = run.bundle
        if fleet and bundle.hostname != host:
            host = bundle.hostname
            machine = bundle.machine
            rows.append('<tr class="family"><th colspan="5">machine %s <span class="muted">%s %s, %s, %s CPUs</span></th></tr>' % (
                esc(host or "?"), esc(machine.os), esc(machine.kernel), esc(machine.cpu_model), esc(machine.cpu_count)))
        state, css = _run_state(bundle)
        rows.append(
            '<tr><th scope="row">%s%s</th><td><code>%s</code></td><td>%s<br><span class="muted">%s</span></td><td>%s</td>'
            '<td><span class="badge %s">%s</span></td></tr>' % (_swatch(label), esc(label.full), esc(bundle.source), esc(bundle.lab.id),
                                                                esc(bundle.started_utc), _conditions_words(bundle), css, esc(state)))
    return table("runs", "", "<th>run</th><th>evidence</th><th>lab, started (UTC)</th><th>conditions</th><th>state</th>", "".join(rows))


# Dimensions a set of runs can vary in: (key, title, the run's value in words; None: "N title" of the recorded condition).
DIMENSIONS: Tuple[Tuple[str, str, Optional[Callable[[Bundle], str]]], ...] = (
    ("machine", "machine", lambda b: b.hostname or "?"),
    ("interpreter", "interpreter", lambda b: b.interpreter.label),
    ("placement", "placement", lambda b: str(b.parameters.placement or "any")),
    ("settle_us", "settle time", lambda b: "settle %s µs" % b.parameters.settle_us),
    ("cpu_threads", "busy threads", None),
    ("cpu_procs", "busy processes", None),
    ("idle_hold", "idle hold", lambda b: "idle hold" if b.conditions.idle_hold else "no idle hold"),
    ("switch_interval_s", "switch interval", lambda b: "default switch interval" if b.conditions.switch_interval_s is None
     else "switch interval %s s" % b.conditions.switch_interval_s),
    ("mode", "loop", lambda b: "%s loop" % (b.parameters.mode or "closed")),
)


def dimension_words(bundle: Bundle, key: str) -> str:
    """The run's value of dimension ``key``, in words (plain text)."""
    _, title, words = next(d for d in DIMENSIONS if d[0] == key)
    return words(bundle) if words is not None else "%s %s" % (bundle.conditions.recorded.get(key) or 0, title)


def _conditions_words(bundle: Bundle) -> str:
    """Placement and load of a run in a few words (escaped)."""
    params, conditions = bundle.parameters, bundle.conditions
    shown = {"settle_us": params.settle_us is not None, "cpu_threads": conditions.cpu_threads, "cpu_procs": conditions.cpu_procs,
             "idle_hold": conditions.idle_hold, "switch_interval_s": conditions.switch_interval_s is not None}
    words = ["placement " + dimension_words(bundle, "placement")] + [dimension_words(bundle, key) for key, show in shown.items() if show]
    return ", ".join(esc(word) for word in words)


# Parameters that are conditions a grid sweeps (where the two sides ran, the settle time, the loop), not a change of method.
CONDITION_PARAMETERS = ("placement", "notifier_cpu", "waiter_cpu", "settle_us", "settle_jitter_us", "mode", "interval_us")
# Parameters that differ between any two runs without making them different experiments: each run draws
# its own seed for the settle's random part (recorded so that it can be reproduced).
RUN_OWN_PARAMETERS = ("seed", "settle_stream")


def render_differences(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    fields = differing_fields(runs)
    notes = []
    if any(f.startswith("machine.hostname") or f.startswith("machine.cpu_model") for f in fields):
        notes.append("These runs come from different machines: a difference may be the machine, not the interpreter or the conditions.")
    if any(f.startswith("parameters.") and f.split(".", 1)[1] not in CONDITION_PARAMETERS + RUN_OWN_PARAMETERS for f in fields):
        notes.append("The runs used different parameters (see below): compare with care.")
    if "lab" in fields:
        notes.append("The runs are of different labs; only arms present in both are compared.")
    if not fields:
        return '<p class="muted">Nothing recorded differs between these runs except the date: they repeat one experiment.</p>'
    flats = [_flat(r.bundle) for r in runs]
    tables = []
    for chunk in _chunks(len(runs), MAX_RUNS_PER_TABLE):
        head = "".join("<th>%s</th>" % esc(labels[i].short) for i in chunk)
        rows = "".join(
            '<tr><th scope="row"><code>%s</code></th>%s</tr>' % (esc(f), "".join("<td>%s</td>" % esc(flats[i].get(f, DASH)) for i in chunk))
            for f in fields
        )
        tables.append(table("diff", "What differs between the runs", "<th>field</th>" + head, rows))
    return "".join('<p class="note">%s</p>' % esc(n) for n in notes) + "".join(tables)


def _arm_order(runs: Sequence[RunEvidence], kind: Optional[str] = "latency") -> List[str]:
    return list(dict.fromkeys(a.name for run in runs for a in run.bundle.arms() if kind is None or a.kind == kind))


# Runs side by side in one table, at most: more are split into tables of this many, so none scrolls sideways.
MAX_RUNS_PER_TABLE = 6


def _chunks(count: int, size: int) -> List[range]:
    return [range(i, min(i + size, count)) for i in range(0, count, size)]


def _ratio_html(p50_ratio: Optional[float], p99_ratio: Optional[float], suffix: str = "") -> str:
    """A p50 ratio coloured by :func:`ratio_tone`, with the p99 ratio beside it when the tail got worse (escaped)."""
    tone = ratio_tone(p50_ratio, p99_ratio)
    text = esc(format_ratio(p50_ratio)) + esc(suffix) if p50_ratio is not None else ""
    if tone.tail_worse:
        text += '%s<span class="tail">p99 %s</span>' % (" · " if text else "", esc(format_ratio(p99_ratio)))
    return '<span class="ratio %s" title="%s">%s</span>' % (tone.css, esc(tone.why), text)


def _verdicts_html(arm: ArmComparison) -> str:
    """compare's verdict on each percentile it judged, with the ratio and its interval as compare prints them, one line
    each (escaped)."""
    lines = []
    # As the ratios' colours (matrix.txt's rule): nothing is green while a percentile got slower.
    worse = any(judged.verdict == "slower" for judged in arm.judgements.values())
    for key, judged in arm.judgements.items():
        ci = judged.ci
        interval = " (%s–%s)" % (format_ratio_plain(ci.low), format_ratio_plain(ci.high)) if not (math.isnan(ci.low) or math.isnan(ci.high)) else ""
        lines.append('<span class="ratio %s" title="%s">%s %s %s×%s</span>' % (
            esc(judged.verdict if judged.verdict == "slower" or (judged.verdict == "faster" and not worse) else "same"),
            esc(judged.reason or ""),
            esc(key.replace("_", ".")), esc(judged.verdict).replace(" ", "&nbsp;"), esc(format_ratio_plain(ci.ratio)),
            esc(interval).replace(" ", "&nbsp;")))
    if not lines:  # too few samples or rounds: compare's notes say why
        lines.append('<span class="ratio" title="%s">%s</span>' % (esc("; ".join(arm.notes)), esc(arm.verdict).replace(" ", "&nbsp;")))
    return "<br>".join(lines)


def _not_judged(labels: Sequence[RunLabel], versus: Sequence[AgainstFirst]) -> str:
    """Why a run has no verdicts against the first (escaped), one note per run."""
    return "".join('<p class="note">%s against %s: no verdicts, %s.</p>' % (esc(labels[i].short), esc(labels[0].short), esc(v.why_not))
                   for i, v in enumerate(versus, 1) if v.why_not)


def _latency_of(arm: Optional[ArmRecord]) -> Optional[LatencyFigures]:
    return arm.latency if arm is not None and arm.ok and arm.p50_ns is not None else None


COMPARE_CAPTIONS = {
    "latency": ("compare", "p50 / p99 per run, µs; below, what wakelab compare says of each run against run #1: its verdict at each "
                "percentile and the ratio to #1 with its 95% interval (above 1: slower than #1; red: slower, green: faster, by more "
                "than 5%). Where compare did not judge, the p50 vs #1, coloured by more than 10%"),
    "rate": ("compare rate", "Rate arms: median operations per second per run (higher is faster), the slowest and the fastest round; "
             "below, compare's verdict on each run's median against run #1's, the ratio of ops/s with its 95% interval (above 1: "
             "faster than #1)"),
}


def _compare_tables(kind: str, runs: Sequence[RunEvidence], labels: Sequence[RunLabel], versus: Sequence[AgainstFirst],
                    cell: Callable[[ArmRecord, Optional[ArmRecord], Optional[ArmComparison], int], Optional[str]],
                    row_head: Callable[[str], str]) -> str:
    """Each ``kind`` arm's row with a cell per run (``cell``: its HTML, None: not measured), in tables that fit a laptop's width."""
    names = _arm_order(runs, kind)
    records = [r.bundle.arms_by_name() for r in runs]
    css, caption = COMPARE_CAPTIONS[kind]
    tables = []
    for chunk in _chunks(len(runs), MAX_RUNS_PER_TABLE):
        head = "".join('<th title="%s">%s%s</th>' % (esc(labels[i].full), _swatch(labels[i]), esc(labels[i].short)) for i in chunk)
        rows = []
        for name in names:
            cells = []
            for i in chunk:
                arm = records[i].get(name)
                judged = versus[i - 1].arm(name) if i and len(versus) >= i else None
                text = cell(arm, records[0].get(name), judged, i) if arm is not None else None
                cells.append('<td class="num">%s</td>' % text if text is not None else '<td class="muted">%s</td>' % (
                    "not in this run" if arm is None else esc(status_word(arm.status))))
            rows.append('<tr><th scope="row">%s</th>%s</tr>' % (row_head(name), "".join(cells)))
        tables.append(table(css, caption, "<th>arm</th>" + head, "".join(rows)))
    return "".join(tables)


def _latency_cell(arm: ArmRecord, first: Optional[ArmRecord], judged: Optional[ArmComparison], i: int) -> Optional[str]:
    lat, base = _latency_of(arm), _latency_of(first)
    if lat is None:
        return None
    ratio = positive_ratio(lat.p50_ns, base.p50_ns) if i and base is not None else None
    below = _verdicts_html(judged) if judged is not None else (
        _ratio_html(ratio, positive_ratio(lat.p99_ns, base.p99_ns if base is not None else None)) if ratio is not None else "")
    return "<b>%s</b> / %s%s" % (esc(format_us(lat.p50_ns)), esc(format_us(lat.p99_ns)), ("<br>" + below) if below else "")


def _rate_cell(arm: ArmRecord, first: Optional[ArmRecord], judged: Optional[ArmComparison], i: int) -> Optional[str]:
    rate = arm.rate if arm.measured else None
    if rate is None:
        return None
    text = '<b>%s</b><br><span class="muted">%d&nbsp;rounds, %s–%s</span>' % (
        esc(format_rate(rate.ops_per_s)), rate.rounds, esc(format_rate(rate.min_ops_per_s)), esc(format_rate(rate.max_ops_per_s)))
    if judged is not None:
        text += "<br>" + _verdicts_html(judged)
    elif i and first is not None and first.rate is not None and first.measured and first.rate.ops_per_s:
        text += '<br><span class="ratio">%s of #1</span>' % esc(format_ratio(rate.ops_per_s / first.rate.ops_per_s))
    return text


def render_comparison_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], versus: Sequence[AgainstFirst] = ()) -> str:
    """p50 / p99 of each arm per run (µs), each run after the first with compare's verdicts against it (``versus``:
    :func:`~wakelab.analysis.view.compare_with_first`), or its p50 over the first's where compare did not judge it."""
    return _not_judged(labels, versus) + _compare_tables(
        "latency", runs, labels, versus, _latency_cell, lambda name: '<a href="#arm-%s">%s</a>' % (esc(_slug(name)), esc(name)))


def render_rate_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], versus: Sequence[AgainstFirst] = ()) -> str:
    """Several runs' rate arms in a table of their own (ops/s is not a wake time): each run's median ops/s and its
    slowest and fastest round, each run after the first with compare's verdict against it (else its rate over the first's)."""
    return _compare_tables("rate", runs, labels, versus, _rate_cell, esc) if _arm_order(runs, "rate") else ""


def _run_sections(run: RunEvidence, label: RunLabel, anchor: str, toc: List[Tuple[str, str]]) -> str:
    """One run of several, folded: its guidance, verdict, lead table, honesty block, caveats and definitions."""
    repetitions = render_repetitions_and_placement(run)
    guidance = render_guidance(run)
    state, css = _run_state(run.bundle)
    toc.append((anchor, label.short))
    return (
        '<details class="run" id="%s"><summary><h2>%s%s <span class="badge %s">%s</span></h2></summary>'
        '<p class="meta"><code>%s</code> · %s · %s</p>%s'
        "<h3>Verdict (from this run's figures)</h3>%s<h3>Lead table</h3>%s%s<h3>Lab honesty</h3>%s<h3>Caveats</h3>%s%s</details>"
        % (esc(anchor), _swatch(label), esc(label.full), css, esc(state), esc(run.bundle.source), esc(run.bundle.lab.title),
           esc(run.bundle.started_utc), ("<h3>Guidance</h3>" + guidance) if guidance else "", render_verdict(run),
           render_lead_table(run), ("<h3>Repetitions and placement</h3>" + repetitions) if repetitions else "",
           render_honesty(run), render_caveats(run), render_details(run)))
