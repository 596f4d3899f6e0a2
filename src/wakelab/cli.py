"""The ``wakelab`` command: parse, dispatch to a command's ``cmd_*``, choose the exit code.

Only this module and ``wakelab.commands`` print or exit; the library raises.
Exit status: 0 the command did its work (a run may still have lost wakes or
skipped arms: see ``complete`` in summary.json), 1 an arm failed, 2 bad input
(one line on stderr), 130 interrupted (the partial evidence is kept,
``complete: false``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn, Optional, Sequence

from wakelab import __version__
from wakelab.commands import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, command_modules
from wakelab.errors import WakelabError, one_line


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad command line gives one line on stderr, not usage plus error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, "%s: error: %s (see %s --help)\n" % (self.prog, message, self.prog))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="wakelab",
        description=(
            "How long does it take to wake a waiter in Python, on this machine and interpreter? "
            "Measures per-wake latency (percentiles, not an average) and writes the evidence."
        ),
        epilog="Exit status: 0 done, 1 an arm failed, 2 bad input, 130 interrupted (partial evidence kept).",
    )
    parser.add_argument("--version", action="version", version="wakelab " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in command_modules():
        importlib.import_module("wakelab.commands." + name).register(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return int(args.handler(args))
    except WakelabError as exc:
        sys.stderr.write("wakelab: error: %s\n" % one_line(str(exc)))
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("wakelab: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Survive `| head`: stop quietly, and keep Python from complaining at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
