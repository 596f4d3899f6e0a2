"""Small helpers every part of the page uses: escaping, plain text of recorded values, badges."""

from __future__ import annotations

import html
import json
from typing import Tuple

from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.evidence.words import status_word
from wakelab.formatting import escape_text
from wakelab.report.honesty import clip


# The kind of chart (interactive.chart_html) an arm's histogram and ECDF are.
DISTRIBUTION = "distribution"


class IdCounter:
    """Element ids of one page's charts of one kind (``PREFIX-1``, ``PREFIX-2`` ...: ``chart`` the charts at a glance,
    ``plot`` the arms' distributions), and how many there are."""

    def __init__(self, prefix: str = "chart") -> None:
        self.prefix = prefix
        self.count = 0

    def next_id(self) -> str:
        self.count += 1
        return "%s-%d" % (self.prefix, self.count)


def esc(value: object) -> str:
    """Evidence text made safe to place in HTML (element content or a quoted attribute); control characters become
    visible escapes (``\\x1b``) first, so that a page printed to a terminal cannot carry an escape sequence."""
    return html.escape(escape_text(str(value), multiline=True), quote=True)


def table(css: str, caption: str, head: str, rows: str, attrs: str = "") -> str:
    """A table that scrolls on its own in a narrow window: ``caption`` ('' for none), ``head`` (the header row's cells)
    and ``rows`` are HTML."""
    return ('<div class="table-wrap"><table class="%s"%s>%s<thead><tr>%s</tr></thead><tbody>%s</tbody></table></div>'
            % (css, attrs, "<caption>%s</caption>" % caption if caption else "", head, rows))


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
    return clip(text)


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in text.lower())


def _run_state(bundle: Bundle) -> Tuple[str, str]:
    """(word, css class) for the run's completeness, as summary.txt words it."""
    state = bundle.run_state
    return state.word, "good" if state.good else "bad"


def _badge(text: object, kind: str = "") -> str:
    return '<span class="badge %s">%s</span>' % (esc(_slug(kind or str(text))), esc(text))


def _status_badge(arm: ArmRecord) -> str:
    return '<span class="badge st-%s">%s</span>%s' % (esc(_slug(arm.status)), esc(status_word(arm.status)),
                                                      (" " + esc(arm.reason)) if arm.reason else "")


def _status_cell(arm: ArmRecord, colspan: int) -> str:
    return '<td class="status" colspan="%d">%s</td>' % (colspan, _status_badge(arm))
