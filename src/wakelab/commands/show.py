"""``wakelab show``: validate a bundle's summary.json and print its text summary."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wakelab.commands import EXIT_OK


def register(sub: Any) -> None:
    show = sub.add_parser("show", help="re-render summary.txt (or a grid's matrix.txt) from the evidence",
                          description="Validate a bundle's summary.json and print its text summary; for the folder "
                          "of a grid run (several interpreters or conditions), print its side-by-side matrix.")
    show.add_argument("path", metavar="PATH", help="an evidence folder or its summary.json, or a grid's folder")
    show.set_defaults(handler=cmd_show)

def cmd_show(args: argparse.Namespace) -> int:
    from wakelab.evidence.load import is_grid_folder, load_matrix, load_summary

    if is_grid_folder(args.path):
        from wakelab.report.matrix_text import format_matrix

        sys.stdout.write(format_matrix(load_matrix(args.path)))
        return EXIT_OK
    from wakelab.report.text import format_summary

    sys.stdout.write(format_summary(load_summary(args.path)))
    return EXIT_OK
