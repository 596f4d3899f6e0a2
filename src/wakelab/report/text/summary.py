"""``summary.txt`` assembled: the heading, then each section in its order, every string escaped."""

from __future__ import annotations

from typing import List, Mapping, Tuple

from wakelab.analysis.components import format_where_the_time_goes
from wakelab.analysis.view import view_of
from wakelab.formatting import escape_strings, escape_text
from wakelab.report.honesty import honesty_facts
from wakelab.report.text.honesty import arm_definitions, reproduce_commands
from wakelab.report.text.quality import QUALITY_TITLE, QUALITY_TITLE_GROUPED, format_quality
from wakelab.report.text.tables import format_lead_table, format_repetitions_and_placement, format_storms
from wakelab.report.text.verdict import format_guidance, format_verdict
from wakelab.report.text.warnings import format_warning
from wakelab.report.text.wrap import bullets, wrap


def format_summary(summary: Mapping[str, object], arm_by_arm: bool = False) -> str:
    """The whole summary.txt for ``summary`` (``arm_by_arm``: every measurement-quality warning on its own, as
    ``wakelab show --full`` prints them, instead of gathered by what they say)."""
    summary = escape_strings(summary, multiline=True)  # line feeds kept for wrapped text; cells and headings escape them
    view = view_of(summary)
    bundle = view.bundle
    lab = bundle.lab
    out: List[str] = [
        escape_text(lab.name),
        escape_text("wakelab %s · %s · %s · %s"
                    % (bundle.tool_version, bundle.started_utc, bundle.interpreter.name, bundle.run_state.word)),
        "",
    ]
    if lab.question:
        out.extend(wrap(str(lab.question), ""))
        out.append("")
    sections: List[Tuple[str, List[str]]] = [
        ("VERDICT (from this run's figures)", format_verdict(view)),
        ("GUIDANCE (drawn from this run's figures; each point names what it rests on)", format_guidance(view.guidance)),
        ("LEAD TABLE", format_lead_table(view)),
        ("LAB HONESTY", bullets([fact.sentence for fact in honesty_facts(bundle)])),
    ]
    storms = format_storms(bundle)  # empty unless the run measured a signal storm
    if storms:
        sections.insert(1, ("SIGNAL STORMS (what reached the code, summed over every storm of each arm)", storms))
    spread = format_repetitions_and_placement(view)
    if spread:
        sections.insert(3, ("REPETITIONS AND PLACEMENT (each repetition's own p50; wakes by where they ran)", spread))
    where = format_where_the_time_goes(summary)  # empty unless the run asked for --trace
    if where:
        sections.insert(2, ("WHERE THE TIME GOES", where))
    if lab.methodology:
        sections.append(("METHODOLOGY", [line for i, paragraph in enumerate(lab.methodology)
                                         for line in ([""] if i else []) + wrap(paragraph)]))
    sections.append(("WHAT EACH ARM TIMES", arm_definitions(bundle.arms())))
    if bundle.caveats:
        sections.append(("CAVEATS", bullets(bundle.caveats)))
    quality = format_quality(view, arm_by_arm=arm_by_arm)
    if quality:
        grouped = not arm_by_arm and any(g.grouped for g in view.warning_groups)
        sections.append((QUALITY_TITLE_GROUPED if grouped else QUALITY_TITLE, quality))
    if view.notes:
        sections.append(("NOTES", bullets([format_warning(w) for w in view.notes])))
    if lab.limits:
        sections.append(("LIMITS", bullets(lab.limits)))
    sections.append(("REPRODUCE", ["  " + escape_text(c) for c in reproduce_commands(view)]))
    for title, body in sections:
        out.append(title)
        out.extend(body)
        out.append("")
    return escape_text("\n".join(out), multiline=True)
