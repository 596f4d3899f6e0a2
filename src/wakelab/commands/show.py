"""``wakelab show``: validate a bundle's summary.json and print its text summary."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wakelab.commands import EXIT_OK


def register(sub: Any) -> None:
    show = sub.add_parser("show", help="re-render summary.txt from a summary.json",
                          description="Validate a bundle's summary.json and print its text summary.")
    show.add_argument("path", metavar="PATH", help="an evidence folder or its summary.json")
    show.set_defaults(handler=cmd_show)

def cmd_show(args: argparse.Namespace) -> int:
    from wakelab.evidence.load import load_summary
    from wakelab.report.text import format_summary

    summary = load_summary(args.path)
    sys.stdout.write(format_summary(summary))
    return EXIT_OK
