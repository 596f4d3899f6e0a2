"""``wakelab report``: one self-contained HTML page from one or more evidence bundles."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from wakelab.commands import EXIT_OK
from wakelab.errors import OutputError

DEFAULT_OUTPUT = "report.html"


def register(sub: Any) -> None:
    report = sub.add_parser(
        "report",
        help="write a self-contained HTML report (plots included) of one or more runs",
        description=(
            "Write one HTML file, with nothing fetched from the network, holding each run's verdict, lead table, "
            "honesty block and caveats, and plots: every latency arm's histogram and ECDF (log time axis, p50 and "
            "p99 marked), Python arms beside their native floor, and, given several runs, the runs side by side. "
            "Needs matplotlib."
        ),
    )
    report.add_argument("runs", nargs="+", metavar="RUN", help="an evidence folder or its summary.json (several: compare them)")
    report.add_argument("-o", "--output", metavar="FILE", default=DEFAULT_OUTPUT, type=_output_path,
                        help="where to write the page (default: %(default)s; '-' for stdout); an existing file is replaced")
    report.add_argument("-q", "--quiet", action="store_true", help="no line on stderr saying where the report went")
    report.set_defaults(handler=cmd_report)


def _output_path(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("expected a file (or '-' for stdout), got an empty string")
    return text


def check_destination(path: str) -> None:
    """Raise :class:`OutputError` unless a report can be written to ``path``; leaves nothing behind.

    Run before anything is loaded or rendered (rendering loads matplotlib,
    which writes its own cache): a file is tried in the destination's folder,
    as the atomic write will, and removed.
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
    from wakelab.formatting import escape_text
    from wakelab.report.html import count_plots, load_run, render_report, write_report

    if args.output != "-":
        check_destination(args.output)
    runs = [load_run(path) for path in args.runs]
    page = render_report(runs)
    if args.output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
        return EXIT_OK
    write_report(args.output, page)
    if not args.quiet:
        size = len(page.encode("utf-8"))
        sys.stderr.write(
            "wakelab: report in %s (%s, %d plots)\n" % (escape_text(os.path.abspath(args.output)), _size_text(size), count_plots(page))
        )
    return EXIT_OK


def _size_text(size: int) -> str:
    if size >= 1 << 20:
        return "%.1f MB" % (size / (1 << 20))
    return "%d kB" % max(1, round(size / 1024))
