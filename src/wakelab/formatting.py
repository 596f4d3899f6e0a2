"""Number formatting shared by the text formats (stdlib only)."""

from __future__ import annotations

from typing import Optional

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
