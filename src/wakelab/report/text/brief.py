"""The short form ``wakelab run`` prints on a terminal (``--brief``): a screen, not a scroll.

The verdict, the guidance's headline, a compact table and where the full text
is -- about 20 lines for Lab 135, under 40 for the catalogue's 41 arms.
"""

from __future__ import annotations

import math
import os
from typing import Dict, List, Mapping, Optional

from wakelab.analysis.caveats import NativeRatio, lost_wakes
from wakelab.analysis.guidance.ranking import and_list
from wakelab.analysis.view import view_of
from wakelab.evidence.model import ArmRecord
from wakelab.evidence.words import status_word
from wakelab.formatting import DASH, escape_strings, escape_text, format_ns, format_rate, format_ratio, format_us
from wakelab.report.lead import pairing_figures
from wakelab.report.text.verdict import RANK_ABOVE, format_rankings, measured_latency_count, pairing_line
from wakelab.report.text.wrap import Run, format_table, wrap, wrap_figures


#: Up to this many arms not measured, the short form names each; beyond, it counts them by family.
BRIEF_MISSING_BY_NAME = 12
# A compact table with more rows than this is laid out in two columns.
BRIEF_ONE_COLUMN_ROWS = 12
# The short form's length: a screen for a lab of a few arms, and for a many-armed one.
BRIEF_MAX_LINES = 25
BRIEF_MAX_LINES_MANY = 44
NEAREST_MARK = "~"


def _compact_row(arm: ArmRecord, ratio: Optional[NativeRatio], wide: bool) -> List[str]:
    """``[arm, (waiter, scope,) p50, p99, (max,) vs C]`` of a measured latency arm, in µs."""
    lat = arm.latency
    p50, p99, worst = (lat.p50_ns, lat.p99_ns, lat.max_ns) if lat is not None else (None, None, None)
    native = DASH if ratio is None else format_ratio(ratio.ratio) + ("" if ratio.interpreter_share else NEAREST_MARK)
    if wide:
        return [arm.name, arm.waiter, arm.scope, format_us(p50), format_us(p99), format_us(worst), native]
    return [arm.name, format_us(p50), format_us(p99), native]


def format_compact_table(run: Run) -> List[str]:
    """Each measured latency arm's p50 and p99 (µs) and vs C -- two columns side by side for many arms --,
    then the rate arms, the lost wakes and the arms not measured; a C floor a shown arm is set against is in its "vs C"."""
    view = view_of(run)
    arms = view.bundle.arms()
    ratios = view.native_ratios
    floors = {r.native for r in ratios.values()}
    latency = [a for a in arms if a.is_latency and a.measured and a.name not in floors]
    wide = len(latency) <= BRIEF_ONE_COLUMN_ROWS
    rows = [_compact_row(a, ratios.get(a.name), wide) for a in latency]
    show_native = any(row[-1] != DASH for row in rows)
    header = ["latency (µs)", "waiter", "scope", "p50", "p99", "max", "vs C"] if wide else ["latency (µs)", "p50", "p99", "vs C"]
    if not show_native:
        header, rows = header[:-1], [row[:-1] for row in rows]
    lines: List[str] = []
    if rows and wide:
        lines.extend(format_table(header, rows, align_left=3))
    elif rows:
        half = (len(rows) + 1) // 2
        left = format_table(header, rows[:half])
        right = format_table(header, rows[half:]) + [""]
        pad = max(len(line) for line in left)
        lines.extend(("%s  │%s" % (one.ljust(pad), two) if two else one).rstrip() for one, two in zip(left, right))
    for a in arms:
        if not a.is_rate or not a.measured or a.name in floors:
            continue
        ops = a.rate.ops_per_s if a.rate is not None else math.nan
        if not 0 < ops < math.inf:  # a rate of no calls, or beyond float range (RateFigures holds a float)
            continue
        text = "%s: %s ops/s, %s per call" % (a.name, format_rate(ops), format_ns(1e9 / ops))
        ratio = ratios.get(a.name)
        if ratio is not None:
            text += "; C %s faster" % format_ratio(ratio.ratio)
        lines.extend(wrap(text))
    lost = ["%s %d" % (a.name, lost_wakes(a).total) for a in latency if lost_wakes(a).total]
    if lost:
        lines.extend(wrap("Lost wakes: %s." % ", ".join(lost)))
    missing = [a for a in arms if not a.measured]
    if len(missing) > BRIEF_MISSING_BY_NAME:
        # Many (a catalogue where optional libraries, a newer Python or a compiler are missing): by family.
        families: Dict[str, List[str]] = {}
        for a in missing:
            families.setdefault(a.family or "other", []).append(status_word(a.status))
        lines.extend(wrap("Not measured: %d arms -- %s; summary.txt says why, arm by arm." % (len(missing), ", ".join(
            "%s %d (%s)" % (family, len(words), ", ".join(sorted(set(words)))) for family, words in families.items()))))
    elif missing:
        lines.extend(wrap("Not measured: %s." % ", ".join("%s (%s)" % (a.name, status_word(a.status))
                                                          for a in missing)))
    if show_native:
        lines.extend(wrap("vs C: p50 over its C floor's, from this run; %s: a nearest floor, not the same experiment."
                          % NEAREST_MARK))
    return lines


def format_brief(summary: Mapping[str, object], folder: Optional[str] = None) -> str:
    """The short form for a terminal: verdict, guidance headline, compact table, where the full text is; at most
    :data:`BRIEF_MAX_LINES` lines (:data:`BRIEF_MAX_LINES_MANY` for many arms), the lab's pairings left to the full
    text when they would not fit."""
    view = view_of(escape_strings(summary, multiline=False))
    bundle = view.bundle
    rankings = format_rankings(view, 3, several_only=True)  # spinning waiters and C floors: see the table
    pairings = [line for figures in pairing_figures(view) for line in pairing_line(
        figures, "NOT like for like (%s differ)" % and_list([d.aspect for d in figures.pairing.differences])
        if figures.pairing.differences else "like for like")]
    guidance = view.guidance
    warnings = view.warnings
    caveats = bundle.caveats
    where = os.path.join(escape_text(folder), "summary.txt") if folder else "summary.txt"
    counts = [_count(len(guidance), "point of guidance", "points of guidance"), _count(len(caveats), "caveat", "caveats"),
              _count(len(warnings), "measurement-quality warning", "measurement-quality warnings")]

    def assemble(with_pairings: bool) -> List[str]:
        verdict = rankings + (pairings if with_pairings or not rankings else [])
        out = ["%s · %s · %s · %s" % (bundle.lab.name, bundle.started_utc, bundle.interpreter.name, bundle.run_state.word),
               "", "VERDICT"]
        out += verdict or ["  See the table."]
        out += ["", "GUIDANCE"] + wrap_figures(guidance.headline) + [""]
        out += format_compact_table(view)
        out += [""] + wrap("Full text: %s (%s); figures and raw samples beside it." % (where, ", ".join(counts)), "")
        return out

    limit = BRIEF_MAX_LINES_MANY if measured_latency_count(view) > RANK_ABOVE else BRIEF_MAX_LINES
    lines = assemble(with_pairings=True)
    if len(lines) > limit:
        lines = assemble(with_pairings=False)
    return escape_text("\n".join(lines), multiline=True) + "\n"


def _count(n: int, one: str, many: str) -> str:
    return "%s %s" % (n if n else "no", one if n == 1 else many)
