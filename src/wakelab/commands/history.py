"""``wakelab history``: the runs recorded so far, one arm's trend across them, and recording bundles in it.

:mod:`wakelab.history` computes what is shown (the runs, an arm's points, their groups, the series of one set of
conditions); this module parses the arguments and places it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from wakelab.commands import EXIT_OK
from wakelab.commands._options import path_value, utf8_text, whole_number
from wakelab.errors import EvidenceError, UsageError
from wakelab.formatting import counted, escape_text

if TYPE_CHECKING:
    from wakelab.evidence.model import Bundle
    from wakelab.history import ArmPoint, RunRecord
    from wakelab.history.conditions import ConditionsKey
    from wakelab.history.queries import RunFacts, RunGroup

JSON_SCHEMA_VERSION = 1
FILTER_AS_TEXT = "history filters are matched as text: give it in UTF-8"
HISTORY_AS_TEXT = "the database's path is kept and printed as text: give a UTF-8 path"
RUN_AS_TEXT = "the history records the bundle's folder as text: rename it in UTF-8"
GROUPS = ("host", "machine")


def add_history_option(parser: argparse.ArgumentParser, no_history: bool = False, default: object = None) -> None:
    parser.add_argument("--history", metavar="PATH", type=path_value("a file", HISTORY_AS_TEXT), default=default,
                        help="history database (default: $WAKELAB_HISTORY, else ${XDG_DATA_HOME:-~/.local/share}/wakelab/history.sqlite3)")
    if no_history:
        parser.add_argument("--no-history", action="store_true", help="do not record this run in the history database")


def register(sub: Any) -> None:
    history = sub.add_parser(
        "history", help="list recorded runs, or one arm's trend across them; import runs from other machines",
        usage="wakelab history [--history PATH] [--arm ARM] [--lab LAB] [--python VERSION] [--host HOST] [--limit N]\n"
              "                       [--group {host,machine} | --by-host] [--json]\n"
              "       wakelab history add [--history PATH] [--json] RUN [RUN ...]\n"
              "       wakelab history import [--history PATH] [--json] BUNDLE [BUNDLE ...]",
        description="List the runs recorded in the history database, newest first; with --arm, show one arm's p50 and p99 in "
                    "every recorded run, across interpreters and machines, with the conditions that change it. 'wakelab run' "
                    "records each run; 'wakelab history add RUN' records an existing bundle; 'wakelab history import BUNDLE' "
                    "records bundles made on other machines.")
    add_history_option(history)
    history.add_argument("--arm", type=utf8_text(why=FILTER_AS_TEXT), metavar="ARM",
                         help="show this arm's figures in every recorded run, oldest first, with the conditions that set "
                              "runs apart (placement, load, switch interval, idle hold, loop, settle, planted delay, "
                              "repetitions, interpreter build); --json adds 'series': the runs of each set of conditions")
    history.add_argument("--lab", type=utf8_text(why=FILTER_AS_TEXT), metavar="LAB", help="only runs of this lab (id or alias)")
    history.add_argument("--python", type=utf8_text(why=FILTER_AS_TEXT), metavar="VERSION", help="only runs on this Python version (3.13 matches 3.13.x; 3.13t: free-threaded)")
    history.add_argument("--host", type=utf8_text(why=FILTER_AS_TEXT), metavar="HOST", help="only runs on this hostname")
    history.add_argument("--limit", type=whole_number(1, 1_000_000), metavar="N", help="only the newest N runs")
    grouping = history.add_mutually_exclusive_group()
    grouping.add_argument("--group", choices=GROUPS, metavar="{host,machine}",
                          help="put each machine's runs together: by hostname (host), or by CPU model, CPU count, kernel and "
                               "architecture (machine: for CI runners, whose hostnames change every job)")
    grouping.add_argument("--by-host", dest="group", action="store_const", const="host", help="the same as --group host")
    history.add_argument("--json", action="store_true", help="print JSON instead of a table")
    history.set_defaults(handler=cmd_history)

    actions = history.add_subparsers(dest="history_command", metavar="ACTION", parser_class=type(history))
    for name, metavar, summary, description, what, done in (
        ("add", "RUN", "record existing evidence bundles in the history",
         "Record existing evidence bundles (or grid folders, cell by cell) in the history. A bundle already "
         "recorded is not added twice. All or nothing: one bad RUN records none.",
         "an evidence folder, its summary.json, or a grid folder", "recorded"),
        ("import", "BUNDLE", "record bundles made on other machines (CI artifacts), keeping where they came from",
         "Record evidence bundles made elsewhere -- other machines, CI artifacts -- in this history: single-run "
         "bundles and grid folders (each cell). Each run keeps the machine facts of its own bundle (hostname, "
         "CPU model and count, kernel) and notes where and when it was imported. A run is recognised by its "
         "run id (a bundle older than run ids: by its folder and start time), so importing again adds nothing. "
         "All or nothing: every BUNDLE is read and validated first, and one that is not a valid bundle records none.",
         "an evidence folder, its summary.json, or a grid folder (matrix.json and cells/)", "imported"),
    ):
        action = actions.add_parser(name, prog="wakelab history " + name, help=summary, description=description)
        action.add_argument("paths", nargs="+", metavar=metavar, type=path_value("a folder", RUN_AS_TEXT), help=what)
        # SUPPRESS: an option given before the action is kept, not overwritten by this parser's default.
        add_history_option(action, default=argparse.SUPPRESS)
        action.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print what was %s as JSON" % done)
        action.set_defaults(handler=cmd_history_record)


def _title(runs: RunGroup, group: str) -> str:
    count = counted(len(runs.indices), "run")
    if group == "host":
        return "host %s: %s; %s" % (runs.name, "; ".join(runs.machines), count)
    return "machine %s: %s on %s %s" % (runs.name, count, "host" if len(runs.hosts) == 1 else "hosts", ", ".join(runs.hosts))


def _listing(title: Tuple[str, str], first: str, runs: Sequence[RunFacts], ids: Sequence[int], group: Optional[str],
             header: Sequence[str], rows: Sequence[List[str]], right: Set[int]) -> List[str]:
    """A listing's title (around its count of runs) and table: each row opens with the run, when, which lab, which
    interpreter and (unless grouped by host) the host, then ``rows``' cells, ``header`` naming them and ``right`` the
    right-aligned ones.  With ``group``, each host's or machine's runs get their title and the header again; the column
    widths are shared, so they line up.  Every line is escaped."""
    from wakelab.history import group_runs
    from wakelab.report.text import format_table

    with_host = group != "host"
    opening = [first, "started (UTC)", "lab", "interpreter"] + (["host"] if with_host else [])
    cells = [[str(run_id), run.started_utc.replace("T", " ")[:16] if run.started_utc else "-", run.lab_id or "-", run.interpreter_label] + ([run.hostname or "-"] if with_host else [])
             + row for run, run_id, row in zip(runs, ids, rows)]
    table = format_table(opening + list(header), cells, right={0} | {len(opening) + i for i in right})
    if group is None:
        return [escape_text(title[0] + counted(len(runs), "run") + title[1])] + table
    groups = group_runs(runs, group)
    lines = [escape_text(title[0] + counted(len(runs), "run") + " on %s" % counted(len(groups), group) + title[1])]  # " on 2 hosts"
    return lines + [line for g in groups for line in [escape_text(_title(g, group)), table[0]] + [table[1 + i] for i in g.indices]]


def format_runs(runs: Sequence[RunRecord], db_path: str, group: Optional[str] = None) -> str:
    """The run list as text, grouped by ``group`` (host or machine) if given."""
    from wakelab.evidence.words import run_state

    if not runs:
        return "no runs recorded in %s\n" % escape_text(db_path)
    imported = any(run.imported_utc for run in runs)
    rows = []
    for run in runs:
        row = ["-" if run.complete is None and not run.interrupted else run_state(run.complete, run.interrupted).answer]
        row.append(str(run.arms) if run.arms_ok == run.arms else "%d (%d ok)" % (run.arms, run.arms_ok))
        if imported:
            row.append(("imported " + run.imported_utc[:10]) if run.imported_utc else "-")
        rows.append(row + [run.facts.folder])
    header = ["complete", "arms"] + (["source"] if imported else []) + ["folder"]
    lines = _listing(("HISTORY %s: " % db_path, ", newest first"), "id", [r.facts for r in runs], [r.id for r in runs], group,
                     header, rows, {1})
    return "\n".join(lines) + "\n"


def _plain(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _busy(value: object, what: str, whats: str) -> str:
    if value == 0:
        return "no busy %s" % whats
    return "%s busy %s" % (_plain(value), what if value == 1 else whats)


def _placement(key: ConditionsKey) -> Optional[str]:
    placement, notifier, waiter = key.placement, key.notifier_cpu, key.waiter_cpu
    if placement is None:
        return None
    if placement == "any":
        return "unpinned"
    if placement == "same":
        return "same CPU" + ("" if notifier is None else " (%s)" % _plain(notifier))
    if placement == "split":
        cpus = "" if notifier is None and waiter is None else " (notifier %s, waiter %s)" % (_plain(notifier), _plain(waiter))
        return "split CPUs" + cpus
    return "placement %s" % _plain(placement)


def _loop(key: ConditionsKey) -> Optional[str]:
    if key.loop is None:
        return None
    if key.loop == "open" and key.interval_us is not None:
        return "open loop every %s µs" % _plain(key.interval_us)
    return "%s loop" % _plain(key.loop)


def _settle(key: ConditionsKey) -> Optional[str]:
    if "settle_us" not in key.recorded:
        return None
    jitter = " + random 0-%s µs" % _plain(key.settle_jitter_us) if key.settle_jitter_us else ""
    return "settle %s µs%s" % (_plain(key.settle_us), jitter)


def _planted(key: ConditionsKey) -> Optional[str]:
    if not key.planted_delay_us:
        return None
    after = " after %s µs" % _plain(key.planted_after_us) if key.planted_after_us else ""
    return "planted delay %s µs%s" % (_plain(key.planted_delay_us), after)


def _build(key: ConditionsKey) -> Optional[str]:
    if "build" not in key.recorded and not key.debug_build:
        return None
    words = "build %s" % _plain(key.build) if "build" in key.recorded else "build"
    return words + (" (debug)" if key.debug_build else "")


def _held(field: str, words: Callable[[object], str]) -> Callable[[ConditionsKey], Optional[str]]:
    return lambda key: words(getattr(key, field)) if field in key.recorded else None


_EXECUTION_WORDS = {"workers": "in worker processes", "in-process": "in-process"}
# The order in which a run's conditions are written, and the words of each.  The interpreter that measured
# has no phrase of its own: the interpreter column names it.
_PHRASES: Tuple[Tuple[str, Callable[[ConditionsKey], Optional[str]]], ...] = (
    ("placement", _placement),
    ("loop", _loop),
    ("settle", _settle),
    ("planted", _planted),
    ("repeat", _held("repeat", lambda n: "%s repetition%s" % (_plain(n), "" if n == 1 else "s"))),
    ("busy threads", _held("busy_threads", lambda n: _busy(n, "thread", "threads"))),
    ("busy procs", _held("busy_procs", lambda n: _busy(n, "process", "processes"))),
    ("switch interval", _held("switch_interval_s", lambda s: "default switch interval" if s is None else "switch interval %s s" % _plain(s))),
    ("idle hold", _held("idle_hold", lambda hold: "idle hold" if hold else "no idle hold")),
    ("execution", _held("execution", lambda mode: _EXECUTION_WORDS.get(str(mode), "execution %s" % _plain(mode)))),
    ("PYTHON_GIL", _held("python_gil", lambda value: "PYTHON_GIL=%s" % _plain(value))),
    ("build", _build),
)


def condition_phrases(key: Optional[ConditionsKey]) -> Dict[str, str]:
    """A conditions key (:func:`wakelab.history.figure_conditions`) in words: field -> phrase, in order.

    ``{"placement": "split", "notifier_cpu": 0, "waiter_cpu": 1, "loop": "closed", "settle_us": 1000}`` gives ``split
    CPUs (notifier 0, waiter 1)``, ``closed loop``, ``settle 1000 µs``; a key this wakelab does not know is written
    ``name value``.
    """
    if key is None:
        return {}
    phrases = {field: words(key) for field, words in _PHRASES}
    phrases.update((name, "%s %s" % (name, _plain(value))) for name, value in key.others)
    return {field: text for field, text in phrases.items() if text is not None}


def format_trend(arm: str, points: Sequence[ArmPoint], db_path: str, group: Optional[str] = None) -> str:
    """One arm across runs, oldest first, grouped by ``group`` (host or machine) if given."""
    from wakelab.formatting import format_rate, format_us
    from wakelab.report.text import wrap

    last = points[-1].figures
    rate = last.kind == "rate"
    waiter = "%s waiter" % last.waiter if last.waiter and last.waiter != "none" else None
    identity = ", ".join(part for part in (last.family, last.kind, waiter, last.scope) if part)
    unit = "ops/s is the median round" if rate else "times in µs"
    # A field varies when its words differ between two runs, or when some run does not record it (unknown is not the
    # same as any value).  The build is said only where it varies: the same build string in every row is noise.
    phrases = [condition_phrases(p.facts.figure_conditions) for p in points]
    fields = list(dict.fromkeys(f for words in phrases for f in words))
    varying = [f for f in fields if len({words.get(f) for words in phrases}) > 1]
    constant = [f for f in fields if f not in varying and f != "build"]
    header = (["ops/s"] if rate else ["n", "lost", "p50", "p99"]) + (["conditions"] if varying else []) + ["status"]
    rows = []
    for point, words in zip(points, phrases):
        p = point.figures
        if rate:
            row = [format_rate(p.ops_per_s)]
        else:
            row = ["-" if p.n is None else str(p.n), "-" if p.lost is None else str(p.lost), format_us(p.p50_ns), format_us(p.p99_ns)]
        if varying:
            row.append(", ".join(words[f] for f in varying if f in words) or "-")
        rows.append(row + ["" if p.status == "ok" else (p.status or "-")])
    lines = _listing(("ARM %s (%s): " % (arm, identity), ", oldest first; %s" % unit), "run", [p.facts for p in points],
                     [p.run_id for p in points], group, header, rows, set(range(1 if rate else 4)))
    if constant:
        lines += wrap(escape_text("conditions (every run): %s" % ", ".join(phrases[0][f] for f in constant)))
    hosts = {p.facts.hostname for p in points}
    if len(hosts) > 1 or varying:
        spans = (["%d machines" % len(hosts)] if len(hosts) > 1 else []) + (["different conditions"] if varying else [])
        lines += [""] + wrap(
            "Note: these runs span %s. A wake's cost depends on the machine, its CPU placement and idle "
            "states: compare rows of one host under the same conditions." % " and ".join(spans),
            indent="",
        )
    return "\n".join(lines) + "\n"


def _write_json(schema: str, db_path: str, **doc: object) -> int:
    doc.update(schema="wakelab.history." + schema, schema_version=JSON_SCHEMA_VERSION, database=db_path)
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n")
    return EXIT_OK


def _write_listing(schema: str, db_path: str, records: Sequence[Union[RunRecord, ArmPoint]], ids: Sequence[int],
                   group: Optional[str], **more: object) -> int:
    """``--json`` of a listing: the records, and with ``group`` each host's or machine's runs."""
    from wakelab.history import group_runs

    if group is not None:
        more.update(group_by=group, groups=[{"name": g.name, "hosts": list(g.hosts), "machines": list(g.machines),
                                             "runs": [ids[i] for i in g.indices]} for g in group_runs([r.facts for r in records], group)])
    return _write_json(schema, db_path, runs=[r.to_dict() for r in records], **more)


def cmd_history(args: argparse.Namespace) -> int:
    from wakelab import history
    from wakelab.core.registry import did_you_mean, unknown_name_message
    from wakelab.labs import CUSTOM_ID, all_labs, get_lab

    db_path = history.resolve_db_path(args.history)
    lab = args.lab
    with contextlib.suppress(UsageError):  # a lab this wakelab no longer has may still be in the history
        lab = lab and get_lab(lab).id  # accept aliases such as "135"
    filters = history.HistoryFilter(lab=lab, python=args.python, host=args.host, limit=args.limit)
    if args.arm is None:
        runs = history.list_runs(db_path, filters)
        if not runs and args.lab is not None:
            known = [p.id for p in all_labs()] + [CUSTOM_ID] + [alias for p in all_labs() for alias in p.aliases]
            suggestion = did_you_mean(args.lab, known)
            if args.lab not in known and suggestion:
                raise UsageError("no recorded run of lab %r (%s)" % (args.lab, suggestion))
        if args.json:
            return _write_listing("runs", db_path, runs, [r.id for r in runs], args.group)
        sys.stdout.write(format_runs(runs, db_path, args.group))
        return EXIT_OK
    points = history.arm_trend(args.arm, db_path, filters)
    if not points:
        known = history.recorded_arms(db_path)
        if known and args.arm not in known:
            raise UsageError(unknown_name_message("arm", args.arm, known, "recorded arms", unknown="no recorded run has"))
    if args.json:
        series = [s.to_dict() for s in history.trend_series(points)]
        return _write_listing("trend", db_path, points, [p.run_id for p in points], args.group, arm=args.arm, series=series)
    if points:
        sys.stdout.write(format_trend(args.arm, points, db_path, args.group))
    elif history.list_runs(db_path, history.HistoryFilter(limit=1)):
        sys.stdout.write("no recorded run of arm %s matches the filters\n" % escape_text(args.arm))
    else:
        sys.stdout.write("no runs recorded in %s\n" % escape_text(db_path))
    return EXIT_OK


def read_bundles(paths: Sequence[str]) -> Tuple[List[Bundle], int]:
    """Every run in ``paths`` as a bundle (its ``source`` the path given), and how many grid cells never ran.

    A path is a bundle folder, its summary.json, or a grid folder (each of its cells that ran; a cell's folder must be
    inside the grid).  Every file is read through the evidence loaders (regular files inside the bundle, size caps,
    strict JSON, the schema).  Raises :class:`EvidenceError` at the first path that is not a valid bundle.
    """
    from wakelab.evidence.load import MATRIX_JSON, SUMMARY_JSON, is_grid, load_grid_index, load_summary, resolve_summary_path
    from wakelab.evidence.model import Bundle

    found: List[Bundle] = []
    pending = 0
    for given in paths:
        if not os.path.lexists(given):  # False for a path with a NUL byte, too
            raise EvidenceError("%s: no such file or folder (give a bundle folder, its summary.json, or a grid folder)" % given)
        if is_grid(given):
            index = load_grid_index(given)
            pending += len(index.never_ran)
            found.extend(Bundle(given, cell.folder, load_summary(cell.folder)) for cell in index.with_evidence)
            continue
        summary_path = resolve_summary_path(given)
        if os.path.isdir(given) and not os.path.lexists(summary_path):
            # A folder of bundles is named as such, with how to give them.
            try:
                inner = [name for name in os.listdir(given)
                         if any(os.path.lexists(os.path.join(given, name, file)) for file in (SUMMARY_JSON, MATRIX_JSON))]
            except OSError:
                inner = []
            hint = "; it holds %s: give them as %s" % (counted(len(inner), "bundle"), os.path.join(given, "*")) if inner else ""
            raise EvidenceError("%s is not a wakelab bundle: it has no summary.json (a run) or matrix.json (a grid)%s" % (given, hint))
        found.append(Bundle(given, os.path.dirname(os.path.abspath(summary_path)), load_summary(given)))
    return found, pending


_ACTION_WORDS = {"added": "recorded as run %d", "unchanged": "already recorded as run %d", "updated": "updated run %d"}


def cmd_history_record(args: argparse.Namespace) -> int:
    """``add`` (runs of this machine) or ``import`` (runs made elsewhere, noting where from and when)."""
    import platform

    from wakelab import history

    imported = args.history_command == "import"
    db_path = history.resolve_db_path(args.history)
    # Validate every bundle first, then record them in one transaction: one bad bundle records nothing.
    bundles, pending = read_bundles(args.paths)
    when, by = history.utc_now(), platform.node() or None
    provenance = [history.Provenance(os.path.abspath(b.folder), when, by) if imported else None for b in bundles]
    results = history.record_runs(list(zip(bundles, provenance)), db_path)
    json_out = getattr(args, "json", False)
    if not imported:
        if json_out:
            return _write_json("add", db_path, recorded=[{"run_id": r.run_id, "action": r.action, "folder": r.folder} for r in results])
        sys.stdout.writelines("%s: %s\n" % (escape_text(r.folder), _ACTION_WORDS[r.action] % r.run_id) for r in results)
        sys.stdout.write("history: %s\n" % escape_text(db_path))
        return EXIT_OK
    counts = history.RecordCounts.of(results)
    notes = [text % n for n, text in ((counts.unchanged, "%d already recorded"), (counts.updated, "%d updated")) if n]
    line = "imported %s%s from %s" % (counted(counts.runs, "run"), " (%s)" % ", ".join(notes) if notes else "",
                                      counted(counts.machines, "machine"))
    if pending:
        line += "; %s of a grid never ran" % counted(pending, "cell")
    if json_out:
        done = [{"run_id": r.run_id, "action": r.action, "run_uuid": r.run_uuid, "hostname": r.hostname, "folder": r.folder,
                 "imported_from": p.imported_from if p else None, "given": b.source} for r, b, p in zip(results, bundles, provenance)]
        return _write_json("import", db_path, imported_utc=when, imported_by=by, summary=line, imported=done,
                           counts=dict(dataclasses.asdict(counts), pending_cells=pending))
    sys.stdout.writelines("%s (%s): %s\n" % (escape_text(r.folder), escape_text(r.hostname or "no hostname"),
                                              _ACTION_WORDS[r.action] % r.run_id) for r in results)
    sys.stdout.write("%s\nhistory: %s\n" % (line, escape_text(db_path)))
    return EXIT_OK
