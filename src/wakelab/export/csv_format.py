"""``--format csv``: one row per arm, for spreadsheets and data frames.

hyperfine's conventions: a header row of machine-friendly column names with
the unit in the name, numbers written in full (no thousands separators, no
unit suffixes), and an empty cell where a value does not exist (a rate arm
has no percentiles; p99.9 needs 1000 wakes; a skipped arm has no figures).
"""

from __future__ import annotations

import csv
import io
from typing import Any, List, Mapping, Optional

from wakelab.export.base import Evidence, Export, ExportedFile, Exporter, arm_entries

ARM_COLUMNS = ("arm", "family", "kind", "waiter", "scope", "status", "native")
LATENCY_COLUMNS = (
    "n", "lost", "min_ns", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns", "stdev_ns",
)
RATE_COLUMNS = (
    "rounds", "n_per_round", "ops_per_s", "min_ops_per_s", "max_ops_per_s", "baseline_ops_per_s",
    "ns_per_op", "net_ns_per_op",
)
COLUMNS = ARM_COLUMNS + LATENCY_COLUMNS + RATE_COLUMNS

# A spreadsheet runs a cell that starts with one of these as a formula; evidence
# strings are data, so such a cell gets a leading apostrophe (OWASP's advice).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def format_number(value: Any) -> str:
    """A JSON number as a CSV cell: integers as integers, floats round-trip exactly.

    >>> format_number(109500.0), format_number(2099.5), format_number(7), format_number(None)
    ('109500', '2099.5', '7', '')
    """
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return repr(value)
    return ""


def format_text(value: Optional[object]) -> str:
    """An evidence string as a CSV cell, defused if a spreadsheet would run it."""
    if value is None:
        return ""
    text = str(value)
    if text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text


def arm_row(entry: Mapping[str, Any]) -> List[str]:
    row = [format_text(entry.get("name" if column == "arm" else column)) for column in ARM_COLUMNS]
    latency: Mapping[str, Any] = entry.get("latency") or {}
    rate: Mapping[str, Any] = entry.get("rate") or {}
    row.extend(format_number(latency.get(column)) for column in LATENCY_COLUMNS)
    row.extend(format_number(rate.get(column)) for column in RATE_COLUMNS)
    return row


def format_csv(evidence: Evidence) -> str:
    """The run's arms as CSV text (``\\n`` line ends, header first)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for entry in arm_entries(evidence):
        writer.writerow(arm_row(entry))
    return out.getvalue()


def serialize(evidence: Evidence) -> Export:
    return Export(files=(ExportedFile(evidence.name + ".csv", format_csv(evidence)),))


EXPORTER = Exporter(name="csv", help="one row per arm, times in ns (for spreadsheets and data frames)", serialize=serialize)
