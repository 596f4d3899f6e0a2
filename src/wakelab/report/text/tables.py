"""The tables of summary.txt: the lead table, each repetition's p50 and where the wakes ran, the signal storms."""

from __future__ import annotations

from typing import List

from wakelab.analysis.caveats import lost_wakes
from wakelab.analysis.storms import format_share, storm_table
from wakelab.analysis.view import view_of
from wakelab.core.registry import FAMILY_TITLES
from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.evidence.words import status_word
from wakelab.formatting import DASH, format_us
from wakelab.report.lead import (LATENCY_COLUMNS, NATIVE_LEGEND, RATE_COLUMNS, REPETITIONS_LEGEND, format_native_cell, lead_table,
                                 placement_rows, rate_cells)
from wakelab.report.text.wrap import Run, format_table, wrap


def format_lost(arm: ArmRecord) -> str:
    """``3 wakes lost`` with their causes apart when the record tells them (``2 timed out, 1 coalesced``)."""
    lost = lost_wakes(arm)
    if not lost.total:
        return ""
    if not (lost.coalesced or lost.stale):
        return "%d wakes lost (no wake within the timeout)" % lost.total
    parts = ["%d timed out" % lost.timed_out] if lost.timed_out else []
    if lost.coalesced:
        parts.append("%d coalesced into a later wake" % lost.coalesced)
    if lost.stale:
        parts.append("%d answered by an earlier wake" % lost.stale)
    return "%d wakes lost (%s)" % (lost.total, ", ".join(parts))


def format_lead_table(run: Run) -> List[str]:
    """Latency arms grouped by family (times in µs), then rate arms."""
    view = view_of(run)
    table = lead_table(view)
    lines: List[str] = []
    if table.families:
        header = ["latency (µs)", "waiter", "scope", "n", "lost"] + list(LATENCY_COLUMNS) + (["vs C p50"] if table.latency_native else [])
        rows: List[List[str]] = []
        for family, members in table.families:
            if len(table.families) > 1:
                rows.append(["[%s]" % FAMILY_TITLES.get(family, family)] + [""] * (len(header) - 1))
            for member in members:
                a, lat = member.arm, member.figures
                if lat is None:
                    row = [a.name, a.waiter, a.scope, status_word(a.status)]
                elif member.component:
                    row = ["  ." + member.component, "", ""] + member.cells(lat)
                else:
                    row = [a.name, a.waiter, a.scope] + member.cells(lat) + [format_native_cell(table.native(a))]
                rows.append((row + [""] * len(header))[:len(header)])
        lines.extend(format_table(header, rows, align_left=3))
    if table.rates:
        if lines:
            lines.append("")
        header = ["rate", *RATE_COLUMNS] + (["C faster by"] if table.rate_native else [])
        rows = [[a.name, status_word(a.status)] + [""] * (len(header) - 2) if a.rate is None else
                [a.name] + rate_cells(a.rate) + ([format_native_cell(table.native(a))] if table.rate_native else [])
                for a in table.rates]
        lines.extend(format_table(header, rows))
    if table.ratios:
        lines.append("")
        lines.extend(wrap(NATIVE_LEGEND))
    return lines


def format_repetitions_and_placement(run: Run) -> List[str]:
    """Per latency arm: each repetition's p50 and their range, and the same-CPU / cross-CPU
    split of its wakes (µs); empty when no arm has either."""
    header = ["arm", "repetition p50s", "range", "same CPU: n", "p50", "p99", "cross CPU: n", "p50", "p99", "crossed"]
    rows = [[row.arm.name, " ".join(row.repetitions) or DASH, *row.cells] for row in placement_rows(view_of(run))]
    if not rows:
        return []
    lines = format_table(header, rows, align_left=2)
    lines.append("")
    lines.extend(wrap(REPETITIONS_LEGEND))
    return lines


def format_storms(run: Bundle) -> List[str]:
    """The storm arms side by side: sent, delivered, the ratio, the reaction and the main thread's lost work."""
    rows = storm_table(run)
    if not rows:
        return []
    apart = any(f.refused or f.flushed for f in rows)
    header = ["arm", "signal", "received by", "sent", "delivered", "ratio"] + (["refused", "flushed"] if apart else []) + [
        "reaction p50 µs", "p99 µs", "work lost"]
    table = []
    for f in rows:
        line = [f.arm, f.signal, f.receiver_title, "{:,}".format(f.sent), "{:,}".format(f.delivered), format_share(f.ratio)]
        if apart:
            line += ["{:,}".format(f.refused), "{:,}".format(f.flushed)]
        table.append(line + [format_us(f.p50_ns), format_us(f.p99_ns), format_share(f.work_lost)])
    storms = sorted({f.storms for f in rows})
    out = format_table(header, table, align_left=3)
    out += wrap(
        "Sent: os.kill calls that returned without error (refused: EAGAIN, a full real-time queue); delivered: the "
        "times the receiving code ran for the signal (handler calls, sigtimedwait returns, wakeup-fd bytes read); "
        "flushed: still pending when the receiver stopped looking, consumed by the clean-up. %s storm%s per arm, "
        "summed. Reaction: from a probe's send to the first delivery after it. Work lost: the receiver main thread's "
        "loop rate against a storm-free pass (the median over the storms)." % (
            "/".join(str(n) for n in storms), "" if storms == [1] else "s"))
    return out
