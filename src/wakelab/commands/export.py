"""``wakelab export``: a run's (or a grid's) evidence as CSV, raw-samples CSV, Markdown, JSON or pyperf files."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List

from wakelab.commands import EXIT_OK
from wakelab.commands._options import path_value, suggest_long_options

OUTPUT_AS_TEXT = "it is printed in messages"


def register(sub: Any) -> None:
    from wakelab.export import EXPORTERS

    export = sub.add_parser(
        "export",
        help="export a run or a grid as csv, samples-csv, markdown, json or pyperf files",
        description=(
            "Export the evidence of a run, or of a grid (a folder with matrix.json and cells/). A grid's csv and "
            "samples-csv are one file whose rows start with a 'cell' column and the cell's value of each grid "
            "dimension; markdown is one file: a table of the cells, then each arm cell by cell with its p50 and p99 "
            "over the first cell; pyperf writes a suite per cell. A cell the grid never ran is left out with a "
            "note; a grid whose cell evidence is missing or whose matrix.json is corrupt is refused. Without -o "
            "the files go beside the evidence, into RUN/export/ (pyperf: RUN/export/pyperf/), named after the run."
        ),
        epilog="Formats: " + "; ".join("%s: %s" % (e.name, e.help) for e in EXPORTERS.values()) + ". "
        "CSV rounding: counts, min_ns, max_ns and ops/s are integers; every other time in ns has one decimal "
        "(0.1 ns, well under the timer's floor); summary.json keeps the exact figures. "
        "Compare two runs with pyperf: python -m pyperf compare_to A/export/pyperf/A.json B/export/pyperf/B.json --table.",
    )
    export.add_argument("run", metavar="RUN", help="an evidence folder or its summary.json, or a grid's folder")
    export.add_argument("-f", "--format", required=True, choices=list(EXPORTERS), help="output format")
    export.add_argument(
        "-o", "--output", metavar="PATH", type=path_value("a path", OUTPUT_AS_TEXT),
        help="where to write: a file; a folder (one that exists, or a path ending in /; for pyperf any path "
        "not ending in .json) to write the default file names into; or - for stdout. Default: RUN/export/. "
        "Files are replaced atomically, all or none",
    )
    suggest_long_options(export)
    export.set_defaults(handler=cmd_export)


def _hint(exporter_name: str, paths: List[str], grid: bool) -> str:
    if exporter_name == "pyperf":
        if grid and len(paths) > 1:
            return " (compare the cells: python -m pyperf compare_to %s --table)" % " ".join(paths)
        return " (compare with another run's: python -m pyperf compare_to %s OTHER.json --table)" % paths[0]
    if exporter_name == "csv":
        return " (every wake: -f samples-csv)"
    return ""


def cmd_export(args: argparse.Namespace) -> int:
    from wakelab.errors import UsageError
    from wakelab.evidence.load import is_grid
    from wakelab.evidence.model import Bundle, Grid
    from wakelab.export import STDOUT, destination_for, get_exporter, write_export
    from wakelab.formatting import escape_text

    exporter = get_exporter(args.format)
    source = Grid.load(args.run) if is_grid(args.run) else Bundle.load(args.run)
    export = exporter.export(source)
    for note in export.notes:
        sys.stderr.write("wakelab: %s\n" % escape_text(note))
    if args.output == STDOUT:
        if len(export.files) != 1:
            raise UsageError("this export is %d files, one per cell: give a folder with -o, not -" % len(export.files))
        sys.stdout.write(escape_text(export.files[0].text, multiline=True))
        sys.stdout.flush()
        return EXIT_OK
    paths = write_export(export, exporter, destination_for(source, exporter, args.output))
    # Default paths as the user would type them: relative to the working directory when under it.
    shown = paths if args.output else [p if os.path.relpath(p).split(os.sep)[0] == os.pardir else os.path.relpath(p) for p in paths]
    what = "%d files to %s" % (len(shown), os.path.dirname(shown[0]) or ".") if len(shown) > 1 else shown[0]
    sys.stderr.write("wakelab: wrote %s%s\n" % (escape_text(what), escape_text(_hint(exporter.name, shown, isinstance(source, Grid)))))
    return EXIT_OK
