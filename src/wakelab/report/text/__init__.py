"""``summary.txt``: the run for people, rendered from the summary document alone (stdlib only: the runner renders it
while measuring), so ``wakelab show`` can re-render any bundle.

One module per part of the text, each importing only those before it: :mod:`.wrap` (layout primitives),
:mod:`.tables`, :mod:`.verdict`, :mod:`.honesty`, :mod:`.warnings` (each warning's wording), :mod:`.quality`,
:mod:`.summary` (the whole summary.txt) and :mod:`.brief` (the short form ``wakelab run`` prints).  Every string
of the document is evidence from outside: it goes through :func:`wakelab.formatting.escape_text`, so no control
character reaches summary.txt or a terminal.
"""

from __future__ import annotations

from wakelab.report.text.brief import BRIEF_MAX_LINES, BRIEF_MAX_LINES_MANY, format_brief
from wakelab.report.text.honesty import arm_definitions, origin_text, reproduce_commands
from wakelab.report.text.quality import QUALITY_TITLE, QUALITY_TITLE_GROUPED, format_group_arms, format_machine_load, format_warning_group
from wakelab.report.text.summary import format_summary
from wakelab.report.text.tables import format_lead_table, format_lost, format_storms
from wakelab.report.text.verdict import format_verdict
from wakelab.report.text.warnings import _WORDINGS as _WORDINGS
from wakelab.report.text.warnings import format_warning
from wakelab.report.text.wrap import Run, bullets, format_table, wrap

__all__ = [
    "Run", "bullets", "format_table", "wrap",
    "format_lead_table", "format_lost", "format_storms", "format_verdict",
    "arm_definitions", "origin_text", "reproduce_commands",
    "format_warning", "QUALITY_TITLE", "QUALITY_TITLE_GROUPED", "format_group_arms", "format_machine_load",
    "format_warning_group", "format_summary", "BRIEF_MAX_LINES", "BRIEF_MAX_LINES_MANY", "format_brief",
]
