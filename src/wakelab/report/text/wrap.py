"""Layout primitives every section of summary.txt and the short form shares: the page width, wrapping that never
parts a figure from its unit, bullets, and plain-text tables whose cells are escaped (one line each)."""

from __future__ import annotations

import re
import textwrap
from typing import Collection, List, Mapping, Optional, Sequence, Union

from wakelab.analysis.view import RunView
from wakelab.formatting import escape_text


WIDTH = 100


def wrap(text: str, indent: str = "  ", subsequent: Optional[str] = None) -> List[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent if subsequent is None else subsequent,
                         break_on_hyphens=False) or [indent]


_FIGURE_UNIT = re.compile(r"(\d) (ns|µs|ms|s|ops/s)\b")
KEEP = "\u00a0"  # textwrap never breaks at a no-break space


def wrap_figures(text: str, indent: str = "  ", subsequent: Optional[str] = None) -> List[str]:
    """:func:`wrap`, never parting a figure from its unit (``2.10 µs`` stays on one line)."""
    kept = _FIGURE_UNIT.sub(lambda m: m.group(1) + KEEP + m.group(2), text)
    return [line.replace(KEEP, " ") for line in wrap(kept, indent, subsequent)]


def bullets_figures(items: Sequence[str]) -> List[str]:
    return [line for item in items for line in wrap_figures(item, "  - ", "    ")]


def bullets(items: Sequence[str]) -> List[str]:
    return [line for item in items
            for line in textwrap.wrap(item, WIDTH, initial_indent="  - ", subsequent_indent="    ", break_on_hyphens=False)]


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]], align_left: int = 1,
                 right: Optional[Collection[int]] = None) -> List[str]:
    """Plain text table, every cell escaped; the first ``align_left`` columns are left-aligned, the rest right-aligned
    (``right``, when given: those columns are right-aligned, every other one left-aligned)."""
    table = [[escape_text(c) for c in row] for row in [header, *rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for row in table:
        cells = [
            c.rjust(w) if (i >= align_left if right is None else i in right) else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths))
        ]
        out.append("  " + "  ".join(cells).rstrip())
    return out


#: What a section is laid out from: a run's :class:`~wakelab.analysis.view.RunView`, or its summary document.
Run = Union[RunView, Mapping[str, object]]
