"""``summary.txt``: the run for people, rendered from the summary document alone.

Everything is computed from the document, so ``wakelab show`` can re-render any
bundle.  Stdlib only (the runner renders it while measuring).  One module per
part of the text, each importing only those above it in this list:

- :mod:`~wakelab.report.text.wrap`: the page width, wrapping that keeps a figure with its unit,
  bullets, plain-text tables;
- :mod:`~wakelab.report.text.tables`: the lead table, the repetitions and placement, the signal storms;
- :mod:`~wakelab.report.text.verdict`: the verdict (a line per arm, or rankings) and the guidance;
- :mod:`~wakelab.report.text.honesty`: LAB HONESTY, WHAT EACH ARM TIMES, REPRODUCE;
- :mod:`~wakelab.report.text.warnings`: the wording of each warning and note, one record at a time;
- :mod:`~wakelab.report.text.quality`: MEASUREMENT QUALITY -- the load beside the run, then the warnings
  gathered by what they say, within about a dozen lines (``wakelab show --full``: arm by arm);
- :mod:`~wakelab.report.text.summary`: :func:`format_summary`, the whole summary.txt in its order;
- :mod:`~wakelab.report.text.brief`: :func:`format_brief`, the short form ``wakelab run`` prints on a
  terminal -- a screen, not a scroll.

Every string of the document is evidence from outside (a note, a hostname, a
reason): it is rendered through :func:`wakelab.formatting.escape_text`, so no
control character reaches summary.txt or a terminal, and a table cell or a
heading stays on its line.

The names other modules use are importable from ``wakelab.report.text`` itself.
"""

from __future__ import annotations

from wakelab.report.text.brief import BRIEF_MAX_LINES, BRIEF_MAX_LINES_MANY, format_brief
from wakelab.report.text.honesty import arm_definitions, load_words, origin_text, reproduce_commands, waiter_states
from wakelab.report.text.quality import QUALITY_TITLE, QUALITY_TITLE_GROUPED, format_group_arms, format_machine_load, format_warning_group
from wakelab.report.text.summary import format_summary
from wakelab.report.text.tables import NATIVE_LEGEND, format_lead_table, format_lost, format_storms
from wakelab.report.text.verdict import format_verdict
from wakelab.report.text.warnings import _WORDINGS as _WORDINGS
from wakelab.report.text.warnings import format_warning
from wakelab.report.text.wrap import Run, bullets, format_table, wrap

__all__ = [
    "Run", "bullets", "format_table", "wrap",
    "NATIVE_LEGEND", "format_lead_table", "format_lost", "format_storms", "format_verdict",
    "arm_definitions", "load_words", "origin_text", "reproduce_commands", "waiter_states",
    "format_warning", "QUALITY_TITLE", "QUALITY_TITLE_GROUPED", "format_group_arms", "format_machine_load",
    "format_warning_group", "format_summary", "BRIEF_MAX_LINES", "BRIEF_MAX_LINES_MANY", "format_brief",
]
