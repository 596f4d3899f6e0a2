"""The HTML report: one self-contained page from one or more evidence bundles (analysis side).

The page holds what ``summary.txt`` holds -- verdict, lead table, honesty
block, caveats -- rendered as HTML from the same summary documents, plus the
pictures a text file cannot give: each arm's latency distribution
(histogram and ECDF on a log time axis, p50 and p99 marked), each Python
arm's p50 beside its native floor, and, given several runs, the runs side by
side (per arm p50 to p99, labelled by interpreter and conditions).

Self-contained means the page never fetches anything: the styles are inline,
the plots are inline SVG (see :mod:`wakelab.report.plots`), there is no
script at all, and a Content-Security-Policy forbids every fetch and every
script, so even a page someone edited by hand cannot phone home.

Every string that comes from evidence (a note, a mechanism, a lab title, a
failure reason, a condition) is escaped with :func:`html.escape` where it
enters the page; figures drawn by matplotlib are escaped by its SVG writer.
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.errors import OutputError, UsageError
from wakelab.evidence.bundle import atomic_write_text
from wakelab.evidence.model import ArmSamples, Bundle, Interpreter
from wakelab.analysis.caveats import (
    WAITING_FOR_GIL,
    NativeRatio,
    gil_enabled,
    lab_pairings,
    native_ratios,
    waiter_at_t0,
)
from wakelab.formatting import DASH, escape_text, format_ns, format_rate, format_ratio, format_us
from wakelab.report.text import (
    FAMILY_TITLES,
    NATIVE_LEGEND,
    NEAREST_FLOOR,
    format_lost,
    format_warning,
    reproduce_commands,
    split_warnings,
)

MATPLOTLIB_HINT = "pip install 'matplotlib>=3.6'"
# Structured values (a list, a dict) longer than this are cut in tables (the bundle keeps them whole).
MAX_VALUE_CHARS = 400
STATUS_WORDS = {"ok": "ok", "skipped": "skipped", "failed": "FAILED", "interrupted": "interrupted", "pending": "not run"}


@dataclasses.dataclass(frozen=True)
class RunEvidence:
    """A loaded bundle (the evidence model's :class:`Bundle`) and the raw samples of its measured latency arms."""

    bundle: Bundle
    samples: Mapping[str, ArmSamples]

    @property
    def source(self) -> str:
        return self.bundle.source

    @property
    def folder(self) -> str:
        return self.bundle.folder

    @property
    def summary(self) -> Mapping[str, Any]:
        return self.bundle.summary


# --- loading ----------------------------------------------------------------------------


def load_run(path: str) -> RunEvidence:
    """Load and validate the bundle at ``path`` (its folder or its summary.json) with its samples.

    Raises :class:`EvidenceError` when the summary or the samples of an arm
    that says it was measured are missing, corrupt, or disagree in size.
    """
    bundle = Bundle.load(path, grid_hint="report its cells")
    samples = {arm.name: bundle.latency_samples(arm) for arm in bundle.arms() if arm.kind == "latency" and arm.measured}
    return RunEvidence(bundle, samples)


# --- small helpers ----------------------------------------------------------------------


def esc(value: object) -> str:
    """Evidence text made safe to place in HTML (element content or a quoted attribute).

    Control characters become visible escapes (``\\x1b``) first, so that a page printed
    to a terminal (``-o -``) cannot carry an escape sequence, and the page shows what is there.
    """
    return html.escape(escape_text(str(value), multiline=True), quote=True)


def _plain(value: object) -> str:
    """A value from the evidence as short plain text (JSON for anything structured)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return "%g" % value
    if isinstance(value, (int,)):
        return str(value)
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _pairs(mapping: object) -> List[Tuple[str, str]]:
    """``(key, value)`` text pairs of a dict from the evidence (empty for anything else)."""
    if not isinstance(mapping, dict):
        return []
    return [(str(k), _plain(v)) for k, v in sorted(mapping.items(), key=lambda kv: str(kv[0]))]


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> List[Any]:
    return list(value) if isinstance(value, list) else []


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in text.lower())


def _latency(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(entry.get("latency"))


def _p50(entry: Optional[Mapping[str, Any]]) -> Optional[float]:
    if not entry or entry.get("status") != "ok":
        return None
    return _latency(entry).get("p50_ns")


def _arms(summary: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    return [a for a in _list(summary.get("arms")) if isinstance(a, dict)]


def _by_name(summary: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    return {str(a.get("name")): a for a in _arms(summary)}


def interpreter_label(summary: Mapping[str, Any]) -> str:
    """``CPython 3.13.5``, with ``free-threaded`` / ``GIL off`` when they apply."""
    return Interpreter.from_dict(_dict(summary.get("interpreter"))).label


def _run_state(summary: Mapping[str, Any]) -> Tuple[str, str]:
    """(word, css class) for the run's completeness, as summary.txt words it."""
    if summary.get("complete"):
        return "complete", "good"
    if summary.get("interrupted"):
        return "INCOMPLETE (interrupted)", "bad"
    if summary.get("finished_utc"):
        return "INCOMPLETE (see caveats)", "bad"
    return "IN PROGRESS (or stopped before the end)", "bad"


def _badge(text: object, kind: str = "") -> str:
    return '<span class="badge %s">%s</span>' % (esc(_slug(kind or str(text))), esc(text))


def _status_cell(entry: Mapping[str, Any], colspan: int) -> str:
    status = str(entry.get("status"))
    reason = entry.get("reason")
    return '<td class="status" colspan="%d"><span class="badge st-%s">%s</span>%s</td>' % (
        colspan,
        esc(_slug(status)),
        esc(STATUS_WORDS.get(status, status)),
        (" " + esc(reason)) if reason else "",
    )


# --- sections ---------------------------------------------------------------------------


def render_verdict(summary: Mapping[str, Any]) -> str:
    """The lab's comparisons first (the answer), then each measured arm's p50 and p99.

    The same figures and judgements as summary.txt's verdict, computed from the
    same document; only the order differs, so that the answer is the first thing read.
    """
    arm_items: List[str] = []
    comparison_items: List[str] = []
    for entry in _arms(summary):
        if entry.get("status") != "ok":
            continue
        name = esc(entry.get("name"))
        if entry.get("latency"):
            lat = _latency(entry)
            p99 = lat.get("p99_ns")
            text = "<strong>%s</strong>: p50 <b>%s</b>, p99 <b>%s</b> over %s wakes %s %s" % (
                name,
                esc(format_ns(lat.get("p50_ns"))),
                esc(format_ns(p99)) if p99 is not None else "not reported",
                esc(lat.get("n")),
                _badge(entry.get("waiter"), "w-" + str(entry.get("waiter"))),
                esc(entry.get("scope")),
            )
            if lat.get("lost"):
                text += ' <span class="warn">%s.</span>' % esc(format_lost(entry))
        elif entry.get("rate"):
            rate = _dict(entry.get("rate"))
            text = "<strong>%s</strong>: <b>%s ops/s</b> (median of %s rounds of %s calls; empty loop %s iterations/s)" % (
                name,
                esc(format_rate(rate.get("ops_per_s"))),
                esc(rate.get("rounds")),
                esc(format_rate(rate.get("n_per_round"))),
                esc(format_rate(rate.get("baseline_ops_per_s"))),
            )
        else:
            continue
        arm_items.append("<li>%s</li>" % text)
    for pairing in lab_pairings(summary):
        if pairing.p50_ratio is None:
            continue
        if pairing.like_for_like:
            judgement = '<span class="badge good">like for like</span> both %s, %s; at t0 the waiter is %s' % (
                esc(pairing.waiter), esc(pairing.scope), esc(pairing.at_t0)
            )
        else:
            judgement = '<span class="badge bad">NOT like for like</span> %s' % "; ".join(
                "%s: %s against %s" % (esc(d.aspect), esc(d.a), esc(d.b)) for d in pairing.differences
            )
        comparison_items.append(
            "<li><strong>%s / %s</strong> = <b>%s</b> at p50%s. %s.</li>"
            % (
                esc(pairing.a), esc(pairing.b), esc(format_ratio(pairing.p50_ratio)),
                (", <b>%s</b> at p99" % esc(format_ratio(pairing.p99_ratio))) if pairing.p99_ratio is not None else "",
                judgement,
            )
        )
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
    text = esc(format_ratio(ratio.ratio))
    if ratio.interpreter_share:
        return text
    title = "the closest C experiment, not the same one: not the interpreter's share"
    return '%s <span class="badge nearest" title="%s">%s</span>' % (text, esc(title), esc(NEAREST_FLOOR))


def render_lead_table(summary: Mapping[str, Any]) -> str:
    """Latency arms grouped by family (µs, with a log-scaled p50 bar), then rate arms."""
    arms = _arms(summary)
    ratios = native_ratios(summary)
    latency_arms = [a for a in arms if a.get("kind") == "latency"]
    rate_arms = [a for a in arms if a.get("kind") == "rate"]
    out: List[str] = []
    if latency_arms:
        show_native = any(str(a.get("name")) in ratios for a in latency_arms)
        p50s = [p for p in (_p50(a) for a in latency_arms) if p]
        lo, hi = (min(p50s), max(p50s)) if p50s else (1.0, 1.0)
        columns = ["n", "lost", "min", "p50", "p90", "p99", "p99.9", "max", "mean"]
        head = "".join("<th>%s</th>" % c for c in columns)
        if show_native:
            head += '<th title="p50 over the p50 of its C floor, in this run">vs C p50</th>'
        width = 4 + len(columns) + (1 if show_native else 0)
        rows: List[str] = []
        families: List[str] = []
        for a in latency_arms:
            if str(a.get("family")) not in families:
                families.append(str(a.get("family")))
        for family in families:
            if len(families) > 1:
                rows.append('<tr class="family"><th colspan="%d">%s</th></tr>' % (width, esc(FAMILY_TITLES.get(family, family))))
            for a in latency_arms:
                if str(a.get("family")) != family:
                    continue
                name_cells = '<th scope="row"><a href="#arm-%s">%s</a></th><td>%s</td><td>%s</td>' % (
                    esc(_slug(str(a.get("name")))), esc(a.get("name")),
                    _badge(a.get("waiter"), "w-" + str(a.get("waiter"))), esc(a.get("scope")),
                )
                lat = _latency(a)
                if a.get("status") != "ok" or not lat:
                    rows.append('<tr class="not-ok">%s<td></td>%s</tr>' % (name_cells, _status_cell(a, width - 4)))
                    continue
                bar = _log_bar(lat.get("p50_ns"), lo, hi)
                cells = [
                    esc(lat.get("n")),
                    '<span class="warn">%s</span>' % esc(lat.get("lost")) if lat.get("lost") else "0",
                ] + [esc(format_us(lat.get(k))) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns")]
                cells[3] = "<b>%s</b>" % cells[3]
                row = '<tr>%s<td class="bar">%s</td>%s' % (name_cells, bar, "".join('<td class="num">%s</td>' % c for c in cells))
                if show_native:
                    row += '<td class="num">%s</td>' % _native_cell(ratios.get(str(a.get("name"))))
                rows.append(row + "</tr>")
                for comp_name, comp in sorted(_dict(a.get("components")).items()):
                    comp = _dict(comp)
                    comp_cells = [esc(comp.get("n")), ""] + [
                        esc(format_us(comp.get(k))) for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns")
                    ]
                    rows.append(
                        '<tr class="component"><th scope="row">↳ %s</th><td colspan="3"></td>%s%s</tr>'
                        % (esc(comp_name), "".join('<td class="num">%s</td>' % c for c in comp_cells), "<td></td>" if show_native else "")
                    )
        out.append(
            '<div class="table-wrap"><table class="lead"><caption>Wake latency, µs (p50 bar on a log scale)</caption>'
            '<thead><tr><th>arm</th><th>waiter</th><th>scope</th><th aria-label="p50 on a log scale"></th>%s</tr></thead><tbody>%s</tbody></table></div>'
            % (head, "".join(rows))
        )
    if rate_arms:
        show_native = any(str(a.get("name")) in ratios for a in rate_arms)
        columns = ["calls/round", "rounds", "median ops/s", "slowest", "fastest", "empty loop/s", "net ns/call"]
        if show_native:
            columns.append("C is faster by")
        rows = []
        for a in rate_arms:
            rate = _dict(a.get("rate"))
            name = '<th scope="row">%s</th>' % esc(a.get("name"))
            if a.get("status") != "ok" or not rate:
                rows.append('<tr class="not-ok">%s%s</tr>' % (name, _status_cell(a, len(columns))))
                continue
            net = rate.get("net_ns_per_op")
            cells = [
                esc(format_rate(rate.get("n_per_round"))), esc(rate.get("rounds")),
                "<b>%s</b>" % esc(format_rate(rate.get("ops_per_s"))),
                esc(format_rate(rate.get("min_ops_per_s"))), esc(format_rate(rate.get("max_ops_per_s"))),
                esc(format_rate(rate.get("baseline_ops_per_s"))),
                esc("%.1f" % net) if isinstance(net, (int, float)) else DASH,
            ]
            if show_native:
                cells.append(_native_cell(ratios.get(str(a.get("name")))))
            rows.append("<tr>%s%s</tr>" % (name, "".join('<td class="num">%s</td>' % c for c in cells)))
        out.append(
            '<div class="table-wrap"><table class="lead rate"><caption>Rate arms</caption><thead><tr><th>arm</th>%s</tr></thead>'
            "<tbody>%s</tbody></table></div>" % ("".join("<th>%s</th>" % esc(c) for c in columns), "".join(rows))
        )
    if ratios:
        out.append('<p class="muted legend">%s</p>' % esc(NATIVE_LEGEND))
    return "".join(out) or '<p class="muted">This run has no arms.</p>'


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


def _kv_html(mapping: object) -> str:
    return "; ".join("%s: <code>%s</code>" % (esc(k), esc(v)) for k, v in _pairs(mapping))


def render_honesty(summary: Mapping[str, Any]) -> str:
    """When, on what, how: the facts a reader needs before quoting a figure."""
    interp = _dict(summary.get("interpreter"))
    machine = _dict(summary.get("machine"))
    params = _dict(summary.get("parameters"))
    timer = _dict(summary.get("timer"))
    gil = interp.get("gil_enabled")
    gil_text = {True: "GIL on", False: "GIL off", None: "GIL state not reported"}.get(gil, str(gil)) if isinstance(gil, (bool, type(None))) else str(gil)
    rows: List[Tuple[str, str]] = [
        ("Date", "%s (UTC), wall time %s s" % (esc(summary.get("started_utc")), esc(summary.get("wall_s")))),
        (
            "Interpreter",
            "%s <span class=\"muted\">(%s; %s)</span>, %s%s, switch interval %s s%s"
            % (
                esc(interpreter_label(summary)), esc(interp.get("build")), esc(interp.get("compiler")),
                "free-threaded build, " if interp.get("free_threaded_build") else "", esc(gil_text),
                esc(interp.get("switch_interval_s")),
                (" · <code>%s</code>" % esc(interp["executable"])) if interp.get("executable") else "",
            ),
        ),
        (
            "Machine",
            "%s %s %s, %s, %s CPUs (allowed: %s)%s"
            % (
                esc(machine.get("os")), esc(machine.get("kernel")), esc(machine.get("architecture")),
                esc(machine.get("cpu_model")), esc(machine.get("cpu_count")), esc(_plain(machine.get("cpus_allowed"))),
                (", host <code>%s</code>" % esc(machine["hostname"])) if machine.get("hostname") else "",
            ),
        ),
    ]
    if timer:
        rows.append((
            "Timer",
            "%s (%s); back-to-back floor <b>%s ns</b> median, %s ns min"
            % (esc(timer.get("clock")), esc(timer.get("implementation")), esc(timer.get("floor_p50_ns")), esc(timer.get("floor_min_ns"))),
        ))
    rows.append((
        "Waits",
        "blocked waiters settle %s µs before each notify; %s warm-up wakes discarded per latency arm and %s warm-up "
        "round(s) per rate arm; every wait times out after %s s (a lost wake)"
        % (esc(params.get("settle_us")), esc(params.get("warmup")), esc(params.get("warmup_rounds")), esc(params.get("timeout_s"))),
    ))
    rows.append(("Parameters", _kv_html(params)))
    for key, label in (("execution", "Execution"), ("conditions", "Conditions"), ("system", "System")):
        if summary.get(key):
            rows.append((label, _kv_html(summary.get(key))))
    latency_arms = [a for a in _arms(summary) if a.get("kind") == "latency"]
    if len({str(a.get("waiter")) for a in latency_arms}) > 1:
        states: Dict[str, List[str]] = {}
        for a in latency_arms:
            states.setdefault(str(a.get("waiter")), []).append(str(a.get("name")))
        described = "; ".join("%s waiter: %s" % (esc(state), esc(", ".join(names))) for state, names in states.items())
        rows.append((
            "Models",
            '<span class="warn">These arms are not identical models</span> (%s). Compare arms only within one waiter state.' % described,
        ))
    gil = gil_enabled(summary)
    on_gil = [str(a.get("name")) for a in latency_arms if waiter_at_t0(a, gil) == WAITING_FOR_GIL]
    if on_gil:
        rows.append((
            "Spinning under the GIL",
            "%s: a waiter in another thread cannot poll while the notifier runs, so at t0 it is waiting for the GIL, "
            "and its wake is the GIL's hand-over." % esc(", ".join(on_gil)),
        ))
    if summary.get("note"):
        rows.append(("Note", esc(summary["note"])))
    command = _list(summary.get("command"))
    if command:
        rows.append(("Command", "<code>%s</code>" % esc(" ".join(str(c) for c in command))))
    return _dl(rows)


def render_caveats(summary: Mapping[str, Any]) -> str:
    caveats = [c for c in _list(summary.get("caveats"))]
    quality, notes = split_warnings([w for w in _list(summary.get("warnings")) if isinstance(w, (str, dict))])
    parts: List[str] = []
    if caveats:
        parts.append('<ul class="caveats">%s</ul>' % "".join("<li>%s</li>" % esc(c) for c in caveats))
    if quality:
        parts.append(
            '<h3>Measurement-quality warnings</h3><ul class="caveats quality">%s</ul>'
            % "".join("<li>%s</li>" % esc(format_warning(w)) for w in quality)
        )
    if notes:
        parts.append('<h3>Notes</h3><ul class="caveats notes">%s</ul>' % "".join("<li>%s</li>" % esc(format_warning(w)) for w in notes))
    return "".join(parts) or '<p class="muted">No caveats: every arm ran, no wake was lost.</p>'


def render_details(summary: Mapping[str, Any]) -> str:
    """What each arm times, the methodology, limits and how to reproduce: folded away."""
    lab = _dict(summary.get("lab"))
    rows = "".join(
        '<tr><th scope="row">%s</th><td>%s</td><td>%s</td><td>%s</td></tr>'
        % (esc(a.get("name")), esc(a.get("mechanism")), esc(a.get("t0")), esc(a.get("t1")))
        for a in _arms(summary)
    )
    parts = [
        '<details><summary>What each arm times (t0, t1)</summary><div class="table-wrap"><table class="defs">'
        "<thead><tr><th>arm</th><th>mechanism</th><th>t0</th><th>t1</th></tr></thead><tbody>%s</tbody></table></div></details>" % rows
    ]
    if _list(lab.get("methodology")):
        parts.append("<details><summary>Methodology</summary>%s</details>" % "".join("<p>%s</p>" % esc(p) for p in lab["methodology"]))
    if _list(lab.get("limits")):
        parts.append("<details><summary>Limits</summary><ul>%s</ul></details>" % "".join("<li>%s</li>" % esc(p) for p in lab["limits"]))
    try:
        commands = reproduce_commands(summary)
    except (KeyError, TypeError, AttributeError):
        commands = []
    if commands:
        parts.append("<details><summary>Reproduce</summary>%s</details>" % "".join("<pre><code>%s</code></pre>" % esc(c) for c in commands))
    return "".join(parts)


def native_pairs(summary: Mapping[str, Any]) -> List[Any]:
    """Python latency arms measured beside their native counterpart in this run."""
    from wakelab.report.plots import NativePair

    pairs = []
    for ratio in native_ratios(summary).values():
        if ratio.kind == "latency":
            # The plot labels each bar "<arm> vs <native>": a nearest floor says so in that label.
            native = ratio.native if ratio.interpreter_share else "%s (%s)" % (ratio.native, NEAREST_FLOOR)
            pairs.append(NativePair(ratio.arm, native, ratio.python_value, ratio.native_value))
    return pairs


# --- several runs -----------------------------------------------------------------------

_DIFF_SECTIONS = ("interpreter", "conditions", "execution", "parameters", "machine")


def _flat(summary: Mapping[str, Any]) -> Dict[str, str]:
    flat = {"lab": str(_dict(summary.get("lab")).get("id")), "wakelab": str(_dict(summary.get("tool")).get("version"))}
    for section in _DIFF_SECTIONS:
        for key, value in _pairs(summary.get(section)):
            flat["%s.%s" % (section, key)] = value
    return flat


def differing_fields(runs: Sequence[RunEvidence]) -> List[str]:
    """Fields (``section.key``) whose values are not the same in every run, in a stable order."""
    flats = [_flat(r.summary) for r in runs]
    keys: List[str] = []
    for flat in flats:
        keys.extend(k for k in flat if k not in keys)
    return [k for k in keys if len({f.get(k, DASH) for f in flats}) > 1]


@dataclasses.dataclass(frozen=True)
class RunLabel:
    """How the page names a run: ``short`` (``#2 CPython 3.13.5``) and ``full`` (with what sets it apart)."""

    short: str
    full: str
    color: str


# Conditions named in a run's label, at most; the table "What differs" has them all.
MAX_LABEL_CONDITIONS = 3
MAX_SHORT_LABEL_CHARS = 32


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def run_labels(runs: Sequence[RunEvidence]) -> List[RunLabel]:
    """``#1 CPython 3.11.7``, and in full with the conditions that tell the runs apart."""
    from wakelab.report.plots import PALETTE

    differing = [k for k in differing_fields(runs) if k.startswith("conditions.") or k in ("execution.mode", "execution.workers")]
    # A condition as requested says what the run was meant to be; its applied_ twin is in the table.
    requested = [k for k in differing if not k.split(".", 1)[1].startswith("applied_")] or differing
    shown = requested[:MAX_LABEL_CONDITIONS]
    labels = []
    for i, run in enumerate(runs, 1):
        flat = _flat(run.summary)
        short = "#%d %s" % (i, _truncate(interpreter_label(run.summary), MAX_SHORT_LABEL_CHARS))
        extra = ", ".join("%s=%s" % (k.split(".", 1)[1], flat.get(k, DASH)) for k in shown)
        if len(requested) > len(shown):
            extra += ", …"
        labels.append(RunLabel(short, "%s (%s)" % (short, extra) if extra else short, PALETTE[(i - 1) % len(PALETTE)]))
    return labels


def _swatch(label: RunLabel) -> str:
    return '<span class="swatch" style="background:%s"></span>' % esc(label.color)


def render_runs_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    rows = []
    for run, label in zip(runs, labels):
        s = run.summary
        state, css = _run_state(s)
        rows.append(
            '<tr><th scope="row">%s%s</th><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>'
            % (
                _swatch(label), esc(label.full), esc(run.source), esc(_dict(s.get("lab")).get("id")), esc(s.get("started_utc")),
                esc(_dict(s.get("machine")).get("hostname")), _kv_html(s.get("conditions")) or '<span class="muted">-</span>',
                '<span class="badge %s">%s</span>' % (css, esc(state)),
            )
        )
    return (
        '<div class="table-wrap"><table class="runs"><thead><tr><th>run</th><th>evidence</th><th>lab</th><th>started (UTC)</th>'
        "<th>host</th><th>conditions</th><th>state</th></tr></thead><tbody>%s</tbody></table></div>" % "".join(rows)
    )


def render_differences(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    fields = differing_fields(runs)
    notes = []
    if any(f.startswith("machine.hostname") or f.startswith("machine.cpu_model") for f in fields):
        notes.append("These runs come from different machines: a difference may be the machine, not the interpreter or the conditions.")
    if any(f.startswith("parameters.") for f in fields):
        notes.append("The runs used different parameters (see below): compare with care.")
    if "lab" in fields:
        notes.append("The runs are of different labs; only arms present in both are compared.")
    if not fields:
        return '<p class="muted">Nothing recorded differs between these runs except the date: they repeat one experiment.</p>'
    flats = [_flat(r.summary) for r in runs]
    head = "".join("<th>%s</th>" % esc(label.short) for label in labels)
    rows = "".join(
        '<tr><th scope="row"><code>%s</code></th>%s</tr>' % (esc(f), "".join("<td>%s</td>" % esc(fl.get(f, DASH)) for fl in flats))
        for f in fields
    )
    return "%s<div class=\"table-wrap\"><table class=\"diff\"><caption>What differs between the runs</caption><thead><tr><th>field</th>%s</tr></thead>" \
        "<tbody>%s</tbody></table></div>" % ("".join('<p class="note">%s</p>' % esc(n) for n in notes), head, rows)


def _arm_order(runs: Sequence[RunEvidence], kind: Optional[str] = "latency") -> List[str]:
    names: List[str] = []
    for run in runs:
        for a in _arms(run.summary):
            if (kind is None or a.get("kind") == kind) and str(a.get("name")) not in names:
                names.append(str(a.get("name")))
    return names


def render_comparison_table(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    names = _arm_order(runs)
    maps = [_by_name(r.summary) for r in runs]
    head = "".join(
        '<th colspan="%d" title="%s">%s%s</th>' % (2 if i == 0 else 3, esc(label.full), _swatch(label), esc(label.short))
        for i, label in enumerate(labels)
    )
    sub = "".join("<th>p50</th><th>p99</th>" + ("<th>p50 vs #1</th>" if i else "") for i in range(len(runs)))
    rows = []
    for name in names:
        cells = []
        base = _p50(maps[0].get(name))
        for i, m in enumerate(maps):
            entry = m.get(name)
            width = 2 if i == 0 else 3
            if entry is None:
                cells.append('<td class="muted" colspan="%d">not in this run</td>' % width)
                continue
            if _p50(entry) is None:
                cells.append('<td class="muted" colspan="%d">%s</td>' % (width, esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status")))))
                continue
            lat = _latency(entry)
            cells.append('<td class="num"><b>%s</b></td><td class="num">%s</td>' % (esc(format_us(lat.get("p50_ns"))), esc(format_us(lat.get("p99_ns")))))
            if i:
                ratio = lat["p50_ns"] / base if base else None
                css = "" if ratio is None else ("slower" if ratio > 1.1 else "faster" if ratio < 1 / 1.1 else "")
                cells.append('<td class="num %s">%s</td>' % (css, esc(format_ratio(ratio))))
        rows.append('<tr><th scope="row"><a href="#arm-%s">%s</a></th>%s</tr>' % (esc(_slug(name)), esc(name), "".join(cells)))
    return (
        '<div class="table-wrap"><table class="compare"><caption>p50 and p99 per run, µs; the ratio is each run\'s p50 over run #1\'s '
        "(above 1: slower than #1)</caption><thead><tr><th rowspan=\"2\">arm</th>%s</tr><tr>%s</tr></thead><tbody>%s</tbody></table></div>"
        % (head, sub, "".join(rows))
    )


def render_rate_comparison(runs: Sequence[RunEvidence], labels: Sequence[RunLabel]) -> str:
    """Median ops/s of each rate arm per run, and each run's rate over run #1's."""
    names = _arm_order(runs, "rate")
    if not names:
        return ""
    maps = [_by_name(r.summary) for r in runs]
    head = "".join('<th title="%s">%s%s</th>' % (esc(label.full), _swatch(label), esc(label.short)) for label in labels)
    rows = []
    for name in names:
        rates = [_dict(m.get(name, {}).get("rate")).get("ops_per_s") if m.get(name, {}).get("status") == "ok" else None for m in maps]
        cells = []
        for i, rate in enumerate(rates):
            if rate is None:
                entry = maps[i].get(name)
                cells.append('<td class="muted">%s</td>' % ("not in this run" if entry is None else esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status")))))
                continue
            text = "<b>%s</b>" % esc(format_rate(rate))
            if i and rates[0]:
                text += ' <span class="muted">(%s of #1)</span>' % esc(format_ratio(rate / rates[0]))
            cells.append('<td class="num">%s</td>' % text)
        rows.append('<tr><th scope="row">%s</th>%s</tr>' % (esc(name), "".join(cells)))
    return (
        '<div class="table-wrap"><table class="compare rate"><caption>Rate arms: median ops/s per run (higher is faster)</caption>'
        "<thead><tr><th>arm</th>%s</tr></thead><tbody>%s</tbody></table></div>" % (head, "".join(rows))
    )


# --- distributions ----------------------------------------------------------------------


class _Plots:
    """Numbers the figures of one page, so every SVG gets its own id prefix."""

    def __init__(self) -> None:
        self.count = 0

    def prefix(self) -> str:
        self.count += 1
        return "f%d-" % self.count


def render_distributions(runs: Sequence[RunEvidence], labels: Sequence[RunLabel], plots_: _Plots) -> str:
    """One card per latency arm: its histogram and ECDF (runs overlaid), with each run's figures."""
    from wakelab.report.plots import COMPONENT_COLORS, Series, plot_distribution

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
                    % (who, esc(_slug(str(entry.get("status")))), esc(STATUS_WORDS.get(str(entry.get("status")), entry.get("status"))),
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
                text += " · %s workers, medians within %s" % (esc(len(_list(entry.get("workers")))), esc(format_ratio(spread["max_over_min"])))
            facts.append("<li>%s%s</li>" % (who, text))
            samples = run.samples.get(name)
            if samples is None or not samples.samples_ns:
                continue
            series.append(Series(label.short if several else name, samples.samples_ns, lat.get("p50_ns"), lat.get("p99_ns"), label.color))
            if not several:
                for j, (comp, values) in enumerate(samples.components_ns.items()):
                    if values:
                        comp_lat = _dict(_dict(entry.get("components")).get(comp))
                        series.append(Series(comp, values, comp_lat.get("p50_ns"), comp_lat.get("p99_ns"),
                                             COMPONENT_COLORS[j % len(COMPONENT_COLORS)], dashed=True))
        figure = (
            '<div class="plot">%s</div>' % plot_distribution(series, id_prefix=plots_.prefix(), marks=not several)
            if series
            else '<p class="muted noplot">No samples to plot.</p>'
        )
        cards.append(
            '<article class="arm" id="arm-%s"><h3>%s %s %s %s</h3><ul class="figs">%s</ul>%s</article>'
            % (
                esc(_slug(name)), esc(name), _badge(first.get("family"), "fam"),
                _badge(first.get("waiter"), "w-" + str(first.get("waiter"))), _badge(first.get("scope"), "scope"),
                "".join(facts), figure,
            )
        )
    if not cards:
        return '<p class="muted">No latency arms.</p>'
    return '<div class="arms">%s</div>' % "".join(cards)


# --- the page ---------------------------------------------------------------------------

CSS = """
:root{--fg:#1d2329;--muted:#5f6b76;--line:#dfe3e8;--soft:#f5f7f9;--accent:#0072B2;--good:#1a7f37;--bad:#b3261e;--warn:#8a5a00;
color-scheme:light}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:#fff;color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,
"Noto Sans","Liberation Sans",sans-serif}
main{max-width:1280px;margin:0 auto;padding:24px 28px 64px}
header.top{border-bottom:1px solid var(--line);padding-bottom:14px;margin-bottom:8px}
h1{font-size:1.65rem;line-height:1.25;margin:0 0 6px}
h2{font-size:1.2rem;margin:34px 0 10px;padding-top:6px;border-top:1px solid var(--line)}
h3{font-size:1rem;margin:18px 0 8px}
.question{font-size:1.05rem;color:#333;max-width:80ch;margin:6px 0 8px}
.meta{color:var(--muted);font-size:.9rem;margin:0}
nav.toc{font-size:.88rem;margin:10px 0 0;display:flex;flex-wrap:wrap;gap:4px 14px}
nav.toc a{color:var(--accent);text-decoration:none}
nav.toc a:hover{text-decoration:underline}
a{color:var(--accent)}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.85em}
pre{background:var(--soft);padding:10px 12px;border-radius:6px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
.muted{color:var(--muted)}
.warn{color:var(--warn);font-weight:600}
.note{background:#fff8e6;border-left:4px solid #e0a800;padding:8px 12px;margin:8px 0;border-radius:4px}
.swatch{display:inline-block;width:.7em;height:.7em;border-radius:2px;margin-right:5px;vertical-align:0}
.badge{display:inline-block;font-size:.72rem;font-weight:600;line-height:1.5;padding:0 7px;border-radius:999px;
background:#eef1f4;color:#39434d;vertical-align:1px;white-space:nowrap;margin-right:4px}
.badge.good{background:#dcf3e3;color:var(--good)}
.badge.bad,.badge.st-failed,.badge.st-interrupted{background:#fde3e1;color:var(--bad)}
.badge.st-skipped,.badge.st-pending{background:#fff1cc;color:var(--warn)}
.badge.nearest{background:#eeeeee;color:#444444;font-weight:500}
.badge.w-blocked{background:#e3effa;color:#0a4f86}
.badge.w-spinning{background:#fbe9d7;color:#8a4500}
.answer{list-style:none;padding:12px 16px;margin:8px 0 14px;background:var(--soft);border-radius:8px;font-size:1.05rem}
.answer li{margin:4px 0}
.verdict{padding-left:1.2em;margin:6px 0;columns:2 520px;column-gap:32px}
.verdict li{margin:2px 0;break-inside:avoid}
.table-wrap{overflow-x:auto;margin:8px 0 12px}
table{border-collapse:collapse;font-size:.9rem;font-variant-numeric:tabular-nums}
caption{text-align:left;color:var(--muted);font-size:.82rem;padding:0 0 6px;caption-side:top}
th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-weight:600;color:#39434d;border-bottom:2px solid #c9d0d7;white-space:nowrap;background:#fff;position:sticky;top:0}
td.num{text-align:right;white-space:nowrap}
table.lead thead th:nth-child(n+5){text-align:right}
table.lead th[scope=row]{font-weight:600;white-space:nowrap}
table.lead th[scope=row] a{color:inherit;text-decoration:none}
table.lead th[scope=row] a:hover{color:var(--accent);text-decoration:underline}
tr.family th{background:var(--soft);color:#39434d;font-size:.82rem;text-transform:uppercase;letter-spacing:.04em;padding-top:10px}
tr.component th,tr.component td{color:var(--muted);font-size:.84rem;font-weight:400}
tbody tr:hover{background:#fafbfc}
td.bar{width:120px;min-width:90px;vertical-align:middle}
.p50bar{display:block;height:8px;border-radius:4px;background:linear-gradient(90deg,#8fc1e3,#0072B2)}
td.status{color:#39434d}
td.slower{color:var(--bad)} td.faster{color:var(--good)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:6px 18px;margin:8px 0}
dl.facts dt{font-weight:600;color:#39434d}
dl.facts dd{margin:0;overflow-wrap:anywhere}
ul.caveats{padding-left:1.2em}
ul.caveats li{margin:4px 0}
details{margin:8px 0;border:1px solid var(--line);border-radius:6px;padding:6px 12px}
details summary{cursor:pointer;font-weight:600}
.arms{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:16px}
article.arm{border:1px solid var(--line);border-radius:8px;padding:10px 14px 8px;background:#fff;min-width:0}
article.arm h3{margin:0 0 4px;font-size:1rem}
ul.figs{list-style:none;margin:0 0 4px;padding:0;font-size:.85rem;color:#39434d}
.plot svg{display:block;width:100%;height:auto}
.plot.wide{max-width:920px}
.noplot{margin:8px 0}
section.run{margin-top:8px}
footer{margin-top:48px;color:var(--muted);font-size:.82rem;border-top:1px solid var(--line);padding-top:10px}
@media (max-width:700px){main{padding:16px}.arms{grid-template-columns:1fr}dl.facts{grid-template-columns:1fr}}
@media print{thead th{position:static}.arms{display:block}article.arm{break-inside:avoid;margin-bottom:12px}}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta http-equiv="Content-Security-Policy" content="%s">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="wakelab">'
        '<link rel="icon" href="data:,">'
        "<title>%s</title><style>%s</style></head>\n<body><main>%s</main></body></html>\n"
        % (CSP, esc(title), CSS.strip(), body)
    )


def _section(anchor: str, title: str, body: str, toc: List[Tuple[str, str]]) -> str:
    toc.append((anchor, title))
    return '<section id="%s"><h2>%s</h2>%s</section>' % (esc(anchor), esc(title), body)


def _run_sections(run: RunEvidence, label: Optional[RunLabel], anchor: str, plots_: _Plots, toc: List[Tuple[str, str]]) -> str:
    s = run.summary
    parts = [
        "<h3>Verdict (from this run's figures)</h3>" if label else "",
        render_verdict(s),
    ]
    pairs = native_pairs(s)
    body_lead = render_lead_table(s)
    body_native = ""
    if pairs:
        from wakelab.report.plots import plot_native_pairs

        body_native = (
            '<p class="muted">Each Python arm\'s p50 beside the p50 of its C floor, measured in this run. Where the C '
            'experiment is the same (same scope, waiter state and t1) the gap is the interpreter\'s share of the wake; '
            'a floor marked "nearest floor" is only the closest C experiment, and its gap is not.</p><div class="plot wide">%s</div>'
            % plot_native_pairs(pairs, id_prefix=plots_.prefix())
        )
    if label is None:
        out = [
            _section("verdict", "Verdict", "".join(parts), toc),
            _section("lead-table", "Lead table", body_lead, toc),
            _section("honesty", "Lab honesty", render_honesty(s), toc),
            _section("caveats", "Caveats", render_caveats(s), toc),
        ]
        if body_native:
            out.append(_section("native", "Python vs native (C)", body_native, toc))
        return "".join(out)
    state, css = _run_state(s)
    toc.append((anchor, label.short))
    return (
        '<section class="run" id="%s"><h2>%s%s <span class="badge %s">%s</span></h2><p class="meta"><code>%s</code> · %s · %s</p>%s'
        "<h3>Lead table</h3>%s%s<h3>Lab honesty</h3>%s<h3>Caveats</h3>%s%s</section>"
        % (
            esc(anchor), _swatch(label), esc(label.full), css, esc(state), esc(run.source), esc(_dict(s.get("lab")).get("title")), esc(s.get("started_utc")),
            "".join(parts), body_lead, ("<h3>Python vs native (C)</h3>" + body_native) if body_native else "",
            render_honesty(s), render_caveats(s), render_details(s),
        )
    )


def render_report(runs: Sequence[RunEvidence]) -> str:
    """The whole HTML page for ``runs`` (one or more loaded bundles)."""
    if not runs:
        raise UsageError("give at least one evidence folder")
    from wakelab.report.plots import PlottingUnavailable

    try:
        return _render(runs)
    except PlottingUnavailable as exc:
        raise UsageError("the HTML report needs matplotlib and numpy (%s): %s" % (MATPLOTLIB_HINT, exc)) from None


def _render(runs: Sequence[RunEvidence]) -> str:
    from wakelab import __version__
    from wakelab.report.plots import RunFigures, figures_by_arm, plot_run_comparison

    plots_ = _Plots()
    toc: List[Tuple[str, str]] = []
    first = runs[0].summary
    lab = _dict(first.get("lab"))
    same_lab = len({str(_dict(r.summary.get("lab")).get("id")) for r in runs}) == 1
    several = len(runs) > 1
    title = str(lab.get("title") or lab.get("id") or "wakelab run") if same_lab else "wakelab: %d runs compared" % len(runs)
    header = ["<header class=\"top\"><h1>%s</h1>" % esc(title)]
    if same_lab and lab.get("question"):
        header.append('<p class="question">%s</p>' % esc(lab["question"]))
    body: List[str] = []
    if not several:
        state, css = _run_state(first)
        header.append(
            '<p class="meta">wakelab %s · %s · %s · <span class="badge %s">%s</span> · <code>%s</code></p>'
            % (esc(_dict(first.get("tool")).get("version")), esc(first.get("started_utc")), esc(interpreter_label(first)),
               css, esc(state), esc(runs[0].source))
        )
        labels = [RunLabel(interpreter_label(first), interpreter_label(first), "#0072B2")]
        body.append(_run_sections(runs[0], None, "run-1", plots_, toc))
        body.append(_section("distributions", "Latency distributions", _distribution_intro(False) + render_distributions(runs, labels, plots_), toc))
        details = render_details(first)
        if details:
            body.append(_section("details", "Definitions, methodology, reproduce", details, toc))
    else:
        labels = run_labels(runs)
        header.append('<p class="meta">%d runs · report by wakelab %s</p>' % (len(runs), esc(__version__)))
        arms = [name for name in _arm_order(runs) if any(name in figures_by_arm(r.summary) for r in runs)]
        comparison = [render_runs_table(runs, labels), render_differences(runs, labels)]
        if arms:
            chart = plot_run_comparison(
                arms, [RunFigures(label.full, figures_by_arm(r.summary), label.color) for r, label in zip(runs, labels)],
                id_prefix=plots_.prefix(),
            )
            comparison.append("<h3>p50 to p99 per arm, per run</h3><div class=\"plot wide\">%s</div>" % chart)
        comparison.append(render_comparison_table(runs, labels))
        comparison.append(render_rate_comparison(runs, labels))
        body.append(_section("comparison", "Runs compared", "".join(comparison), toc))
        body.append(_section("distributions", "Latency distributions", _distribution_intro(True) + render_distributions(runs, labels, plots_), toc))
        for i, (run, label) in enumerate(zip(runs, labels), 1):
            body.append(_run_sections(run, label, "run-%d" % i, plots_, toc))
    nav = '<nav class="toc">%s</nav>' % "".join('<a href="#%s">%s</a>' % (esc(a), esc(t)) for a, t in toc)
    header.append(nav + "</header>")
    footer = (
        "<footer>Generated by wakelab %s from the evidence bundle%s above. Times are wake latencies t1 - t0 "
        "(perf_counter_ns); percentiles use linear interpolation between closest ranks. %d plot%s.</footer>"
        % (esc(__version__), "s" if several else "", plots_.count, "" if plots_.count == 1 else "s")
    )
    return _page(title, "".join(header) + "".join(body) + footer)


def _distribution_intro(several: bool) -> str:
    text = (
        "Each arm's wakes as a histogram (share of wakes per bin) and an ECDF (fraction of wakes at or below a latency), "
        "both on a log time axis. "
    )
    if several:
        text += "Runs are overlaid in their colours; on the ECDF a dot marks each run's p50 and a diamond its p99."
    else:
        text += "Dashed lines mark p50 and p99; dashed curves are the named components of a wake, where an arm records them."
    return '<p class="muted">%s</p>' % text


def count_plots(page: str) -> int:
    """How many figures a rendered page holds."""
    return page.count("<svg ")


def write_report(path: str, page: str) -> None:
    """Write ``page`` to ``path`` atomically; :class:`OutputError` with the OS's reason if it cannot."""
    try:
        atomic_write_text(path, page)
    except OSError as exc:
        raise OutputError("cannot write the report to %s: %s (choose another path with -o)" % (path, exc.strerror or exc)) from None
