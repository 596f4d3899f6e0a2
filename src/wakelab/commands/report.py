"""``wakelab report``: one self-contained HTML page from one or more evidence bundles or grids."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from wakelab.commands import EXIT_OK
from wakelab.commands._options import not_empty
from wakelab.errors import OutputError

DEFAULT_OUTPUT = "report.html"


def register(sub: Any) -> None:
    report = sub.add_parser(
        "report",
        help="write a self-contained HTML report (interactive charts and plots included) of one or more runs or grids",
        description=(
            "Write one HTML file, with nothing fetched from the network, holding each run's guidance, verdict, lead "
            "table, honesty block and caveats, and charts: every latency arm on one shared log axis (p50, p90 to p99, "
            "its C floor beside it; sortable, families can be hidden, hover for the figures), the rate arms, and each "
            "arm's histogram and ECDF on demand. Given several runs or a grid folder (matrix.json and cells/), its "
            "cells are compared: ordered by machine and interpreter version, a heat map per dimension that varies, "
            "runs from several machines labelled by host (a fleet). A grid gets its matrix: its cells, then each arm "
            "cell by cell with its p50 and p99 over the first cell's. A ratio is green only when the p50 is faster "
            "by more than 10% and the p99 is not worse; a p99 worse by more than 10% is drawn red with its ratio, "
            "whatever the p50 did. A grid cell that never ran is noted; a cell whose evidence is missing, or a "
            "corrupt matrix.json, is refused. Needs plotly (inlined in the page): pip install 'wakelab[report]'."
        ),
    )
    report.add_argument("runs", nargs="+", metavar="RUN",
                        help="an evidence folder, its summary.json, or a grid folder (several: compare them)")
    report.add_argument("-o", "--output", metavar="FILE", type=not_empty("a file (or '-' for stdout)"),
                        help="where to write the page ('-' for stdout; an existing file is replaced). Default: "
                             "%s beside the evidence (inside the one RUN or grid folder given); with several RUNs, "
                             "%s in the working directory" % (DEFAULT_OUTPUT, DEFAULT_OUTPUT))
    report.add_argument("-q", "--quiet", action="store_true", help="no line on stderr saying where the report went")
    report.set_defaults(handler=cmd_report)


def default_output(runs: Any) -> str:
    """``report.html`` beside the evidence: in the one run's (or grid's) folder; several runs have
    no one folder, so the working directory."""
    if len(runs) != 1:
        return DEFAULT_OUTPUT
    given = runs[0]
    folder = given if os.path.isdir(given) else os.path.dirname(given)
    return os.path.join(folder, DEFAULT_OUTPUT)


def check_destination(path: str) -> None:
    """Raise :class:`OutputError` unless a report can be written to ``path``; leaves nothing behind.

    Run before anything is loaded or rendered: a file is tried in the destination's folder, as the atomic write will.
    """
    import errno
    import tempfile

    from wakelab.formatting import escape_text

    def refuse(reason: str) -> OutputError:
        return OutputError("cannot write the report to %s: %s (choose another path with -o)" % (escape_text(path), reason))

    if os.path.isdir(path):
        raise refuse(os.strerror(errno.EISDIR))
    try:
        fd, probe = tempfile.mkstemp(prefix=".wakelab-report-", suffix=".probe", dir=os.path.dirname(os.path.abspath(path)))
    except OSError as exc:
        raise refuse(str(exc.strerror or exc)) from None
    os.close(fd)
    os.unlink(probe)


def cmd_report(args: argparse.Namespace) -> int:
    from wakelab.extras import require
    from wakelab.formatting import counted, escape_text
    from wakelab.report.html import count_charts, count_plots, load_runs, render_report, write_report

    require("report", "wakelab report")
    if args.output is None:
        args.output = default_output(args.runs)
    if args.output != "-":
        check_destination(args.output)
    loaded = load_runs(args.runs)
    page = render_report(loaded.runs, loaded.notes, loaded.grids)
    if args.output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return EXIT_OK
    write_report(args.output, page)
    if not args.quiet:
        size = len(page.encode("utf-8"))
        size_text = "%.1f MB" % (size / (1 << 20)) if size >= 1 << 20 else "%d kB" % max(1, round(size / 1024))
        charts = count_charts(page)
        sys.stderr.write(
            "wakelab: report in %s (%s, %s, %s, %d plots)\n" % (
                escape_text(os.path.abspath(args.output)), size_text, counted(len(loaded.runs), "run"),
                counted(charts, "interactive chart"), count_plots(page) - charts)
        )
    return EXIT_OK
