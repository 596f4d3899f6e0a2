"""Small helpers every part of the page uses: escaping, reading a summary's fields, badges."""

from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from wakelab.evidence.model import Interpreter
from wakelab.evidence.words import run_state, status_word
from wakelab.formatting import escape_text


# Structured values (a list, a dict) longer than this are cut in tables (the bundle keeps them whole).
MAX_VALUE_CHARS = 400
# The kind of chart (interactive.chart_html) an arm's histogram and ECDF are.
DISTRIBUTION = "distribution"


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
    state = run_state(summary.get("complete"), summary.get("interrupted"), summary.get("finished_utc"))
    return state.word, "good" if state.good else "bad"


def _badge(text: object, kind: str = "") -> str:
    return '<span class="badge %s">%s</span>' % (esc(_slug(kind or str(text))), esc(text))


def _status_cell(entry: Mapping[str, Any], colspan: int) -> str:
    status = str(entry.get("status"))
    reason = entry.get("reason")
    return '<td class="status" colspan="%d"><span class="badge st-%s">%s</span>%s</td>' % (
        colspan,
        esc(_slug(status)),
        esc(status_word(status)),
        (" " + esc(reason)) if reason else "",
    )
