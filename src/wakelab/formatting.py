"""Number formatting shared by the text formats (stdlib only)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional

from wakelab.errors import CONTROL_ESCAPES

DASH = "-"


def _finite(value: Optional[float]) -> Optional[float]:
    """``value`` as a float, or None when it is missing or beyond float range."""
    if value is None:
        return None
    try:
        result = float(value)
    except (OverflowError, TypeError, ValueError):
        return None
    return result if result == result and abs(result) != float("inf") else None


def finite_number(value: object) -> Optional[float]:
    """A finite number from the evidence as a float, else None (a bool, a string, NaN are not figures)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def positive_ratio(value: object, base: object) -> Optional[float]:
    """``value / base`` when both are positive finite numbers, else None (no ratio of a missing or zero figure)."""
    a, b = finite_number(value), finite_number(base)
    return a / b if a is not None and b is not None and a > 0 and b > 0 else None


def format_ns_plain(value: Optional[float]) -> str:
    """A nanosecond figure with one decimal and no unit (``980.0``), ``-`` when missing."""
    number = _finite(value)
    return DASH if number is None else "%.1f" % number


def format_ns(value: Optional[float]) -> str:
    """A duration given in ns, in the unit that keeps three significant digits.

    >>> format_ns(850), format_ns(11234), format_ns(1534000), format_ns(None)
    ('850 ns', '11.2 µs', '1.53 ms', '-')
    """
    value = _finite(value)
    if value is None:
        return DASH
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(value) >= scale:
            return "%s %s" % (_three_digits(value / scale), unit)
    return "%d ns" % round(value)


def format_us(value_ns: Optional[float]) -> str:
    """A duration given in ns, written in µs with three significant digits (no unit)."""
    value_ns = _finite(value_ns)
    if value_ns is None:
        return DASH
    return _three_digits(value_ns / 1e3)


def format_signed_us(value_ns: float, minus: str = "-") -> str:
    """A difference given in ns, in µs with its sign (``+7.58``, ``-5.92``; no sign on 0)."""
    return ("+" if value_ns > 0 else minus if value_ns < 0 else "") + format_us(abs(value_ns))


def counted(n: int, noun: str, plural: str = "s") -> str:
    """``n`` of ``noun``: "1 busy process", "2 busy processes" (``plural``: the ending of more than one)."""
    return "%d %s%s" % (n, noun, "" if n == 1 else plural)


def _three_digits(x: float) -> str:
    if abs(x) >= 100:
        return "%.0f" % x
    if abs(x) >= 10:
        return "%.1f" % x
    return "%.2f" % x


def format_rate(ops_per_s: Optional[float]) -> str:
    """Operations per second with thousands separators: ``1,092,573``."""
    ops_per_s = _finite(ops_per_s)
    if ops_per_s is None:
        return DASH
    return "{:,.0f}".format(ops_per_s)


def format_percent(value: Optional[float], sign: str = "") -> str:
    """A percentage to two or three figures ("5.4%", "88%"), after ``sign`` (for example "±");
    a dash when unknown, "inf" when infinite."""
    if value is None or math.isnan(value):
        return DASH
    if math.isinf(value):
        return "inf"
    return sign + (("%.0f%%" if abs(value) >= 10 else "%.1f%%") % value)


def format_ratio(value: Optional[float]) -> str:
    """A ratio such as ``5.1×``."""
    value = _finite(value)
    if value is None:
        return DASH
    if value >= 10:
        return "%.0f×" % value
    if value >= 1:
        return "%.1f×" % value
    return "%.2g×" % value


# -- text from evidence, on a terminal ------------------------------------------------------
#
# Notes, hostnames, reasons, paths: every string a bundle or the history holds comes from
# outside, and a terminal runs the control sequences in it (ESC ] 0 ; ... BEL retitles the
# window, ESC [ 2 J clears it, a C1 CSI does the same without an ESC).  Whatever prints them
# writes them through :func:`escape_text`, which turns every such character into a visible
# escape.  Backslashes are left alone, so escaping twice changes nothing.

_ESCAPES = CONTROL_ESCAPES  # see wakelab.errors: the one table of characters never shown raw
_ESCAPES_MULTILINE = {c: e for c, e in _ESCAPES.items() if c != 0x0A}


def escape_text(text: object, multiline: bool = False) -> str:
    """``text`` safe to print on a terminal: control characters as visible escapes (``\\x1b``).

    ``multiline`` keeps line feeds (for a whole rendered report); otherwise they
    are escaped too, so a table cell or a one-line field stays one line.  Lone
    surrogates, which no encoder writes, become ``\\udcxx``.

    >>> escape_text("host\\x1b]0;pwned\\x07"), escape_text("a\\nb"), escape_text("a\\nb", multiline=True)
    ('host\\\\x1b]0;pwned\\\\x07', 'a\\\\x0ab', 'a\\nb')
    """
    value = str(text).translate(_ESCAPES_MULTILINE if multiline else _ESCAPES)
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def escape_strings(value: Any, multiline: bool = False) -> Any:
    """A copy of the JSON-like ``value`` with every string in it (keys too) passed through :func:`escape_text`."""
    if isinstance(value, str):
        return escape_text(value, multiline)
    if isinstance(value, Mapping):
        return {escape_text(k, multiline) if isinstance(k, str) else k: escape_strings(v, multiline) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escape_strings(v, multiline) for v in value]
    return value
