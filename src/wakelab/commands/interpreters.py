"""``wakelab interpreters``: the Python interpreters found on this machine."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from wakelab.commands import EXIT_OK


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "interpreters",
        help="list the Python interpreters found here (for run --python)",
        description="List the Python 3 interpreters on PATH and in pyenv-style folders, and whether the "
        "measuring code can run on each ('run --python all' uses every usable CPython).",
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.set_defaults(handler=cmd_interpreters)


def cmd_interpreters(args: argparse.Namespace) -> int:
    from wakelab.harness.interpreters import discover
    from wakelab.harness.workers import MIN_PYTHON
    from wakelab.report.text import format_table

    found = discover()
    rows = []
    for interp in found:
        usable = interp.version[:2] >= MIN_PYTHON
        rows.append(
            {
                "label": interp.label,
                "path": interp.path,
                "version": interp.version_text,
                "implementation": interp.implementation,
                "free_threaded": interp.free_threaded,
                "usable": usable,
                "reason": None if usable else "the measuring code needs Python %d.%d or newer" % MIN_PYTHON,
            }
        )
    if args.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    table = [[str(r["label"]), str(r["path"]), "yes" if r["usable"] else "no: %s" % r["reason"]] for r in rows]
    lines = format_table(["interpreter", "path", "usable"], table, align_left=3) if rows else ["  none found"]
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK
