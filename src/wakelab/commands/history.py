"""``wakelab history``: the runs recorded so far, and one arm's trend across them.

``wakelab history`` lists runs, newest first; ``--arm NAME`` shows that arm's
p50 and p99 in every recorded run (across interpreters and machines);
``wakelab history add RUN ...`` records existing bundles.  The database is
``wakelab.history``'s; see there for where it lives and how it stays safe.

Hostnames, lab ids, folders and the rest come from the evidence (or from the
command line): the text output escapes every control character in them
(:func:`wakelab.formatting.escape_text`); ``--json`` escapes them as JSON does.
Filters and paths given on the command line that are not valid UTF-8 are
refused by argparse (one line, exit 2): they are compared with, and stored as, text.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Set

from wakelab.commands import EXIT_OK
from wakelab.commands._options import path_value, utf8_text, whole_number
from wakelab.errors import UsageError
from wakelab.formatting import escape_text

LIMIT_RANGE = (1, 1_000_000)
JSON_SCHEMA_VERSION = 1
FILTER_AS_TEXT = "history filters are matched as text: give it in UTF-8"
HISTORY_AS_TEXT = "the database's path is kept and printed as text: give a UTF-8 path"
RUN_AS_TEXT = "the history records the bundle's folder as text: rename it in UTF-8"
HISTORY_HELP = "history database (default: $WAKELAB_HISTORY, else ${XDG_DATA_HOME:-~/.local/share}/wakelab/history.sqlite3)"


def add_history_option(parser: argparse.ArgumentParser, no_history: bool = False) -> None:
    """Add ``--history PATH`` (and, for ``run``, ``--no-history``) to a command's parser."""
    parser.add_argument("--history", metavar="PATH", type=path_value("a file", HISTORY_AS_TEXT), help=HISTORY_HELP)
    if no_history:
        parser.add_argument("--no-history", action="store_true", help="do not record this run in the history database")


def register(sub: Any) -> None:
    history = sub.add_parser(
        "history",
        usage=(
            "wakelab history [--history PATH] [--arm ARM] [--lab LAB] [--python VERSION] [--host HOST] [--limit N] [--json]\n"
            "       wakelab history add [--history PATH] [--json] RUN [RUN ...]"
        ),
        help="list recorded runs, or one arm's trend across them",
        description=(
            "List the runs recorded in the history database, newest first; with --arm, show one arm's "
            "p50 and p99 in every recorded run, across interpreters and machines. 'wakelab run' records "
            "each run; 'wakelab history add RUN' records an existing bundle."
        ),
    )
    add_history_option(history)
    history.add_argument("--arm", type=utf8_text(why=FILTER_AS_TEXT), metavar="ARM", help="show this arm's figures in every recorded run, oldest first")
    history.add_argument("--lab", type=utf8_text(why=FILTER_AS_TEXT), metavar="LAB", help="only runs of this lab (id or alias)")
    history.add_argument("--python", type=utf8_text(why=FILTER_AS_TEXT), metavar="VERSION", help="only runs on this Python version (3.13 matches 3.13.x; 3.13t: free-threaded)")
    history.add_argument("--host", type=utf8_text(why=FILTER_AS_TEXT), metavar="HOST", help="only runs on this hostname")
    history.add_argument("--limit", type=whole_number(*LIMIT_RANGE), metavar="N", help="only the newest N runs")
    history.add_argument("--json", action="store_true", help="print JSON instead of a table")
    history.set_defaults(handler=cmd_history)

    actions = history.add_subparsers(dest="history_command", metavar="ACTION", parser_class=type(history))
    add = actions.add_parser(
        "add",
        prog="wakelab history add",
        help="record existing evidence bundles in the history",
        description="Record existing evidence bundles in the history. A bundle already recorded is not added twice.",
    )
    add.add_argument("runs", nargs="+", metavar="RUN", type=path_value("a folder", RUN_AS_TEXT), help="an evidence folder or its summary.json")
    # SUPPRESS: an option given before 'add' is kept, not overwritten by this parser's default.
    add.add_argument("--history", metavar="PATH", type=path_value("a file", HISTORY_AS_TEXT), default=argparse.SUPPRESS, help=HISTORY_HELP)
    add.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print what was recorded as JSON")
    add.set_defaults(handler=cmd_history_add)


# ----------------------------------------------------------------------------------------------
# Formatting


def _date(utc: Optional[str]) -> str:
    """``2026-10-01T06:00:00Z`` -> ``2026-10-01 06:00``."""
    if not utc:
        return "-"
    return utc.replace("T", " ")[:16]


def _yes_no(value: Optional[bool]) -> str:
    return "-" if value is None else ("yes" if value else "no")


def format_runs(runs: Sequence[Any], db_path: str) -> str:
    """The run list as text (``runs`` are :class:`wakelab.history.RunRecord`)."""
    from wakelab.history import interpreter_label

    if not runs:
        return "no runs recorded in %s\n" % escape_text(db_path)
    rows = []
    for run in runs:
        arms = str(run.arms) if run.arms_ok == run.arms else "%d (%d ok)" % (run.arms, run.arms_ok)
        rows.append(
            [
                str(run.id),
                _date(run.started_utc),
                run.lab_id or "-",
                interpreter_label(run.implementation, run.python_version, run.free_threaded, run.gil_enabled),
                run.hostname or "-",
                "interrupted" if run.interrupted else _yes_no(run.complete),
                arms,
                run.folder,
            ]
        )
    header = ["id", "started (UTC)", "lab", "interpreter", "host", "complete", "arms", "folder"]
    plural = "run" if len(runs) == 1 else "runs"
    lines = [escape_text("HISTORY %s: %d %s, newest first" % (db_path, len(runs), plural))]
    lines += _left_table(header, rows, right={0, 6})
    return escape_text("\n".join(lines), multiline=True) + "\n"


def _left_table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Set[int]) -> List[str]:
    """A table whose columns are left-aligned except those in ``right`` (cells escaped: one line each)."""
    table = [[escape_text(c) for c in row] for row in [header, *rows]]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for row in table:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _conditions_key(conditions: Any) -> Optional[str]:
    return None if conditions is None else json.dumps(conditions, sort_keys=True, separators=(", ", ": "))


def _condition_labels(points: Sequence[Any]) -> Dict[str, str]:
    """Conditions (canonical JSON) -> a short label (A, B, ...), in order of first appearance.

    Conditions are opaque here: two runs are under the same conditions when
    their ``conditions`` objects are equal.
    """
    labels: Dict[str, str] = {}
    for point in points:
        key = _conditions_key(point.conditions)
        if key is not None and key not in labels:
            n = len(labels)
            labels[key] = chr(ord("A") + n) if n < 26 else "C%d" % (n + 1)
    return labels


def format_trend(arm: str, points: Sequence[Any], db_path: str) -> str:
    """One arm across runs, oldest first (``points`` are :class:`wakelab.history.ArmPoint`)."""
    from wakelab.history import interpreter_label
    from wakelab.formatting import format_rate, format_us
    from wakelab.report.text import wrap

    last = points[-1]
    rate = last.kind == "rate"
    identity = ", ".join(
        part for part in (last.family, last.kind, "%s waiter" % last.waiter if last.waiter and last.waiter != "none" else None, last.scope) if part
    )
    plural = "run" if len(points) == 1 else "runs"
    unit = "ops/s is the median round" if rate else "times in µs"
    lines = [escape_text("ARM %s (%s): %d %s, oldest first; %s" % (arm, identity, len(points), plural, unit))]
    labels = _condition_labels(points)
    varied = len({_conditions_key(p.conditions) for p in points}) > 1
    header = ["run", "started (UTC)", "lab", "interpreter", "host"]
    header += ["ops/s"] if rate else ["n", "lost", "p50", "p99"]
    if varied:
        header.append("conditions")
    header.append("status")
    rows = []
    for p in points:
        row = [
            str(p.run_id),
            _date(p.started_utc),
            p.lab_id or "-",
            interpreter_label(p.implementation, p.python_version, p.free_threaded, p.gil_enabled),
            p.hostname or "-",
        ]
        if rate:
            row.append(format_rate(p.ops_per_s))
        else:
            row += ["-" if p.n is None else str(p.n), "-" if p.lost is None else str(p.lost), format_us(p.p50_ns), format_us(p.p99_ns)]
        if varied:
            key = _conditions_key(p.conditions)
            row.append("-" if key is None else labels[key])
        row.append("" if p.status == "ok" else (p.status or "-"))
        rows.append(row)
    numeric = set(range(5, 6 if rate else 9))
    lines += _left_table(header, rows, right={0} | numeric)
    if varied:
        for key, label in labels.items():
            lines += wrap(escape_text("conditions %s: %s" % (label, key)))
    elif labels:
        lines += wrap(escape_text("conditions (every run): %s" % next(iter(labels))))
    hosts = {p.hostname for p in points}
    if len(hosts) > 1 or varied:
        spans = []
        if len(hosts) > 1:
            spans.append("%d machines" % len(hosts))
        if varied:
            spans.append("different conditions")
        lines += [""] + wrap(
            "Note: these runs span %s. A wake's cost depends on the machine, its CPU placement and idle "
            "states: compare rows of one host under the same conditions." % " and ".join(spans),
            indent="",
        )
    return escape_text("\n".join(lines), multiline=True) + "\n"


# ----------------------------------------------------------------------------------------------
# Handlers


def _filters(args: argparse.Namespace) -> Any:
    from wakelab.history import HistoryFilter

    lab = args.lab
    if lab is not None:
        from wakelab.labs import get_lab

        try:
            lab = get_lab(lab).id  # accept aliases such as "135"
        except UsageError:
            pass  # a lab this wakelab no longer has may still be in the history
    return HistoryFilter(lab=lab, python=args.python, host=args.host, limit=args.limit)


def _dump(doc: Dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def cmd_history(args: argparse.Namespace) -> int:
    from wakelab import history

    db_path = history.resolve_db_path(args.history)
    filters = _filters(args)
    if args.arm is None:
        runs = history.list_runs(db_path, filters)
        if not runs and args.lab is not None:
            from wakelab.core.registry import did_you_mean
            from wakelab.labs import CUSTOM_ID, all_labs

            known = [lab.id for lab in all_labs()] + [CUSTOM_ID] + [alias for lab in all_labs() for alias in lab.aliases]
            suggestion = did_you_mean(args.lab, known)
            if args.lab not in known and suggestion:
                raise UsageError("no recorded run of lab %r (%s)" % (args.lab, suggestion))
        if args.json:
            doc = {"schema": "wakelab.history.runs", "schema_version": JSON_SCHEMA_VERSION, "database": db_path,
                   "runs": [r.to_dict() for r in runs]}
            sys.stdout.write(_dump(doc))
        else:
            sys.stdout.write(format_runs(runs, db_path))
        return EXIT_OK
    points = history.arm_trend(args.arm, db_path, filters)
    if not points:
        known = history.recorded_arms(db_path)
        if known and args.arm not in known:
            from wakelab.core.registry import did_you_mean

            suggestion = did_you_mean(args.arm, known)
            if suggestion:
                raise UsageError("no recorded run has arm %r (%s); recorded arms: %s" % (args.arm, suggestion, ", ".join(known)))
            raise UsageError("no recorded run has arm %r (recorded arms: %s)" % (args.arm, ", ".join(known)))
    if args.json:
        doc = {"schema": "wakelab.history.trend", "schema_version": JSON_SCHEMA_VERSION, "database": db_path,
               "arm": args.arm, "runs": [p.to_dict() for p in points]}
        sys.stdout.write(_dump(doc))
    elif points:
        sys.stdout.write(format_trend(args.arm, points, db_path))
    elif _has_runs(db_path):
        sys.stdout.write("no recorded run of arm %s matches the filters\n" % escape_text(args.arm))
    else:
        sys.stdout.write("no runs recorded in %s\n" % escape_text(db_path))
    return EXIT_OK


def _has_runs(db_path: str) -> bool:
    from wakelab import history

    return bool(history.list_runs(db_path, history.HistoryFilter(limit=1)))


def cmd_history_add(args: argparse.Namespace) -> int:
    import os

    from wakelab import history
    from wakelab.evidence.load import load_summary, resolve_summary_path

    db_path = history.resolve_db_path(args.history)
    # Validate every bundle first: one bad RUN records nothing.
    bundles = []
    for run in args.runs:
        summary = load_summary(run)
        bundles.append((summary, os.path.dirname(os.path.abspath(resolve_summary_path(run)))))
    results = [(history.record_run(summary, folder, db_path), folder) for summary, folder in bundles]
    if getattr(args, "json", False):
        doc = {"schema": "wakelab.history.add", "schema_version": JSON_SCHEMA_VERSION, "database": db_path,
               "recorded": [{"run_id": r.run_id, "action": r.action, "folder": os.path.realpath(f)} for r, f in results]}
        sys.stdout.write(_dump(doc))
        return EXIT_OK
    words = {"added": "recorded as run %d", "unchanged": "already recorded as run %d", "updated": "updated run %d"}
    for result, folder in results:
        sys.stdout.write("%s: %s\n" % (escape_text(os.path.realpath(folder)), words[result.action] % result.run_id))
    sys.stdout.write("history: %s\n" % escape_text(db_path))
    return EXIT_OK
