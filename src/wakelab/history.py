"""Run history: every run's headline figures in one embedded SQLite database.

A bundle folder is the evidence of one run; the history is the index across
runs, interpreters and machines, so that ``wakelab history --arm event`` can
show how one wake path moves from run to run.  The history never replaces a
bundle: each row keeps the bundle's folder and a copy of its summary.json.

Stdlib only and Python 3.9+, because it runs in the measuring process right
after a run (``wakelab run`` calls :func:`record_run` once the bundle is
written).  Like the rest of the library it raises and never prints.

Where the database lives: ``$WAKELAB_HISTORY`` if set, else
``${XDG_DATA_HOME:-~/.local/share}/wakelab/history.sqlite3``.

Safety rules, because a history is only worth something if it survives:

* **Never destroy what is there.**  A file that is not an SQLite database, or
  fails ``PRAGMA integrity_check``, or is an SQLite database of some other
  program, is refused with one line and left byte for byte as it was: no
  repair, no truncation, no "start a fresh one".  Nothing is written to a file
  before it has passed those checks.  The first is ours, not SQLite's: an
  existing non-empty file must be a regular file that starts with SQLite's
  header (``SQLite format 3\0``, 100 bytes), because SQLite itself takes a
  file too short for that header for an empty database and overwrites it.
* **Every write is one transaction** (``BEGIN IMMEDIATE`` ... ``COMMIT``), in
  SQLite's default rollback-journal mode, so a crash or a full disk mid-record
  leaves the database as it was before.  Migrations run in the same kind of
  transaction: a failed migration leaves the older version intact.
* **Concurrent runs wait for each other** up to a busy timeout, then give up
  with a clear error instead of hanging.
* **A newer schema is never downgraded**: it is refused with a message saying
  to upgrade wakelab or choose another database.

Schema history (``PRAGMA user_version``, also kept in the ``meta`` table):
  0 -- an empty database (a new file): nothing to keep.
  1 -- ``meta``, ``runs`` and ``arm_results`` (wakelab 0.1).
  2 -- ``runs.run_uuid``: summary.json's ``run_id``, unique, the key of a run; ``runs``
       no longer unique on (folder, started_utc), so runs into one folder in the same
       second are kept apart.  Rows recorded before keep ``run_uuid`` NULL and their old key.
  3 -- ``runs.conditions_key``: the conditions that change a figure (placement, load,
       switch interval, loop, settle ...; see :func:`figure_conditions`), canonical JSON,
       so that a same-CPU and a split run never share a key; ``runs.cpu_count`` and
       ``runs.machine_id`` for telling machines apart; ``runs.imported_utc``,
       ``imported_from`` and ``imported_by``: the provenance of a run recorded by
       ``wakelab history import`` (NULL for a run recorded where it was measured).
       Existing rows get their key and CPU count from their stored summary.
  4 -- the conditions key also holds the repetitions (summary.json ``execution.repeat``;
       a bundle without it measured once: 1) and the interpreter build that measured
       (implementation, version, free-threaded build, GIL on, ``PYTHON_GIL``, debug build,
       build string), so that runs of two builds, or of one and five repetitions, are never
       one series.  No column changes: every row's key is recomputed from its stored
       summary.json (a summary that is not JSON keeps its old key).

Where the runs come from: ``wakelab run`` records each run (and each cell of a grid)
as it ends, ``wakelab history add`` records bundles of this machine, and ``wakelab
history import`` records bundles made elsewhere (other machines, CI artifacts), keeping
their machine's facts from the bundle and noting where and when they were imported.
:func:`record_runs` writes any number of runs in one transaction: all or none.

To change the schema: bump :data:`SCHEMA_VERSION`, append one step to
:data:`MIGRATIONS` that turns version N-1 into N using single statements
(never ``executescript``, which commits behind the transaction's back), and
add a test that opens a database of the previous shape.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import sqlite3
import stat
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from wakelab.errors import WakelabError

SCHEMA_VERSION = 4
DB_FILENAME = "history.sqlite3"
ENV_VAR = "WAKELAB_HISTORY"
# How long a second wakelab waits for another one to finish writing.
BUSY_TIMEOUT_S = 10.0
# PRAGMA application_id of a wakelab history ("wake" in ASCII): SQLite's own way to tell
# one program's database files from another's, so that a wrong --history is refused.
APPLICATION_ID = 0x77616B65
# The first 16 bytes of every SQLite 3 database file; its whole header is 100 bytes.
SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_HEADER_BYTES = 100


class HistoryError(WakelabError):
    """The history database cannot be opened, read or written (the run's bundle is unaffected)."""


# ----------------------------------------------------------------------------------------------
# Where the database is


def default_db_path(environ: Optional[Mapping[str, str]] = None) -> str:
    """``$WAKELAB_HISTORY``, else ``${XDG_DATA_HOME:-~/.local/share}/wakelab/history.sqlite3``.

    A relative ``XDG_DATA_HOME`` is ignored, as the XDG base-directory spec asks.
    """
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_VAR)
    if explicit:
        return os.path.expanduser(explicit)
    data_home = env.get("XDG_DATA_HOME") or ""
    if not os.path.isabs(data_home):
        data_home = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "wakelab", DB_FILENAME)


def resolve_db_path(db_path: Optional[str] = None) -> str:
    """``db_path`` (with ``~`` expanded), or the default when it is None or empty."""
    return os.path.expanduser(db_path) if db_path else default_db_path()


# ----------------------------------------------------------------------------------------------
# Schema and migrations


def _migrate_0_to_1(conn: sqlite3.Connection) -> None:
    """Create the first schema in an empty database."""
    # PRAGMA takes no parameters; APPLICATION_ID is our own integer.
    conn.execute("PRAGMA application_id = %d" % APPLICATION_ID)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        """
        CREATE TABLE runs (
            id              INTEGER PRIMARY KEY,
            recorded_utc    TEXT NOT NULL,     -- when this row was written
            started_utc     TEXT NOT NULL,     -- summary.json started_utc
            finished_utc    TEXT,
            lab_id          TEXT,
            folder          TEXT NOT NULL,     -- the bundle's folder, absolute
            complete        INTEGER,           -- summary.json complete (0/1)
            interrupted     INTEGER,
            tool_version    TEXT,              -- the wakelab that measured
            implementation  TEXT,              -- CPython, PyPy ...
            python_version  TEXT,
            build           TEXT,
            executable      TEXT,
            free_threaded   INTEGER,           -- Py_GIL_DISABLED build (0/1/NULL)
            gil_enabled     INTEGER,           -- GIL on during the run (0/1/NULL)
            hostname        TEXT,
            cpu_model       TEXT,
            kernel          TEXT,
            architecture    TEXT,
            note            TEXT,
            parameters_json TEXT,
            conditions_json TEXT,              -- summary.json conditions, when present
            summary_json    TEXT NOT NULL,     -- the whole summary.json, canonical JSON
            UNIQUE (folder, started_utc)
        )
        """
    )
    conn.execute(
        """
        CREATE TABLE arm_results (
            run_id    INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            position  INTEGER NOT NULL,        -- order of the arm in the run
            arm       TEXT NOT NULL,
            family    TEXT,
            kind      TEXT,                    -- latency or rate
            waiter    TEXT,
            scope     TEXT,
            n         INTEGER,
            lost      INTEGER,
            p50_ns    REAL,
            p90_ns    REAL,
            p99_ns    REAL,
            p99_9_ns  REAL,
            max_ns    REAL,
            mean_ns   REAL,
            ops_per_s REAL,
            status    TEXT,
            PRIMARY KEY (run_id, position)
        )
        """
    )
    conn.execute("CREATE INDEX arm_results_by_arm ON arm_results (arm, run_id)")
    conn.execute("CREATE INDEX runs_by_start ON runs (started_utc)")


_RUNS_V2 = """
        CREATE TABLE %s (
            id              INTEGER PRIMARY KEY,
            run_uuid        TEXT UNIQUE,       -- summary.json run_id (NULL: a bundle older than run ids)
            recorded_utc    TEXT NOT NULL,     -- when this row was written
            started_utc     TEXT NOT NULL,     -- summary.json started_utc
            finished_utc    TEXT,
            lab_id          TEXT,
            folder          TEXT NOT NULL,     -- the bundle's folder, absolute
            complete        INTEGER,           -- summary.json complete (0/1)
            interrupted     INTEGER,
            tool_version    TEXT,              -- the wakelab that measured
            implementation  TEXT,              -- CPython, PyPy ...
            python_version  TEXT,
            build           TEXT,
            executable      TEXT,
            free_threaded   INTEGER,           -- Py_GIL_DISABLED build (0/1/NULL)
            gil_enabled     INTEGER,           -- GIL on during the run (0/1/NULL)
            hostname        TEXT,
            cpu_model       TEXT,
            kernel          TEXT,
            architecture    TEXT,
            note            TEXT,
            parameters_json TEXT,
            conditions_json TEXT,              -- summary.json conditions, when present
            summary_json    TEXT NOT NULL      -- the whole summary.json, canonical JSON
        )
"""
_RUNS_V1_COLUMNS = (
    "id, recorded_utc, started_utc, finished_utc, lab_id, folder, complete, interrupted, tool_version, "
    "implementation, python_version, build, executable, free_threaded, gil_enabled, hostname, cpu_model, "
    "kernel, architecture, note, parameters_json, conditions_json, summary_json"
)


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    """Add ``runs.run_uuid`` and drop the UNIQUE (folder, started_utc) key.

    SQLite cannot drop a constraint, so ``runs`` is rebuilt (its rows and ids
    kept) the way SQLite's documentation describes: create, copy, drop,
    rename.  Foreign keys are off on a connection being migrated (they are
    switched on after), so dropping the old table deletes no arm_results.
    """
    if conn.execute("PRAGMA foreign_keys").fetchone()[0]:
        raise sqlite3.OperationalError("foreign keys are on; cannot rebuild runs safely")
    conn.execute(_RUNS_V2 % "runs_v2")
    conn.execute("INSERT INTO runs_v2 (%s) SELECT %s FROM runs" % (_RUNS_V1_COLUMNS, _RUNS_V1_COLUMNS))
    conn.execute("DROP TABLE runs")
    conn.execute("ALTER TABLE runs_v2 RENAME TO runs")
    conn.execute("CREATE INDEX runs_by_start ON runs (started_utc)")
    conn.execute("CREATE INDEX runs_by_folder ON runs (folder, started_utc)")


# Columns schema 3 adds to runs (ALTER TABLE ADD COLUMN keeps every row and id).
_RUNS_V3_COLUMNS = (
    ("conditions_key", "TEXT"),   # figure_conditions(summary), canonical JSON (NULL: the summary says none)
    ("cpu_count", "INTEGER"),     # summary.json machine.cpu_count
    ("machine_id", "TEXT"),       # summary.json machine.machine_id, when the bundle has one
    ("imported_utc", "TEXT"),     # when 'wakelab history import' recorded it (NULL: recorded where measured)
    ("imported_from", "TEXT"),    # the path it was imported from, absolute, as given
    ("imported_by", "TEXT"),      # the hostname of the machine that imported it
)


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    """Add the conditions key, the CPU count, machine id and import provenance to ``runs``.

    Rows recorded before get their conditions key and CPU count from the
    summary.json each row keeps; a summary edited by hand into something that
    is not JSON keeps NULL there (it still lists).
    """
    for name, kind in _RUNS_V3_COLUMNS:
        conn.execute("ALTER TABLE runs ADD COLUMN %s %s" % (name, kind))
    for run_id, summary in _stored_summaries(conn):
        facts = _machine_facts(summary)
        conn.execute(
            "UPDATE runs SET conditions_key = ?, cpu_count = ?, machine_id = ? WHERE id = ?",
            (facts["conditions_key"], facts["cpu_count"], facts["machine_id"], run_id),
        )
    conn.execute("CREATE INDEX runs_by_host ON runs (hostname, started_utc)")
    conn.execute("CREATE INDEX runs_by_conditions ON runs (conditions_key)")


def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    """Recompute every row's conditions key: schema 4's key adds the repetitions and the interpreter build.

    The key is derived from the summary.json each row keeps, so nothing is
    lost and the step can be repeated; a stored summary that is not a JSON
    object (edited by hand) keeps the key it had.
    """
    for run_id, summary in _stored_summaries(conn):
        conn.execute("UPDATE runs SET conditions_key = ? WHERE id = ?", (_machine_facts(summary)["conditions_key"], run_id))


def _stored_summaries(conn: sqlite3.Connection) -> List[Tuple[int, Dict[str, Any]]]:
    """``(row id, summary)`` of every run whose stored summary.json is a JSON object (a summary
    edited by hand into something else is left out, and its row keeps what it had)."""
    rows = []
    for run_id, text in conn.execute("SELECT id, summary_json FROM runs").fetchall():
        try:
            summary = json.loads(text)
        except (TypeError, ValueError):
            continue
        if isinstance(summary, dict):
            rows.append((run_id, summary))
    return rows


# MIGRATIONS[v] turns a database of version v into version v + 1.
MIGRATIONS: List[Callable[[sqlite3.Connection], None]] = [_migrate_0_to_1, _migrate_1_to_2, _migrate_2_to_3, _migrate_3_to_4]


# ----------------------------------------------------------------------------------------------
# Opening safely


def _sqlite_reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _connect(path: str, timeout_s: float) -> sqlite3.Connection:
    try:
        # isolation_level=None: no implicit transactions; this module issues BEGIN/COMMIT itself.
        return sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise HistoryError(
            "cannot open history database %s: %s (choose another with --history PATH)" % (path, _sqlite_reason(exc))
        ) from None


def _operational(path: str, exc: sqlite3.Error, timeout_s: float, doing: str) -> HistoryError:
    """A HistoryError for an error while reading or writing a database that passed its checks."""
    reason = _sqlite_reason(exc)
    if "locked" in reason or "busy" in reason:
        return HistoryError(
            "history database %s is locked by another process (waited %g s while %s); try again, or use --history PATH"
            % (path, timeout_s, doing)
        )
    if "readonly" in reason or "read-only" in reason or "unable to open" in reason:
        return HistoryError("cannot write history database %s: %s (choose another with --history PATH)" % (path, reason))
    if type(exc) is sqlite3.DatabaseError:  # not a subclass: "malformed", "not a database"
        return _corrupt(path, reason)
    return HistoryError("history database %s: %s while %s" % (path, reason, doing))


def _corrupt(path: str, reason: str) -> HistoryError:
    return HistoryError(
        "history database %s is unreadable (%s); it was left untouched: move it aside or use --history PATH" % (path, reason)
    )


def _check_readable(conn: sqlite3.Connection, path: str, timeout_s: float) -> int:
    """The database's schema version, after proving it is an intact wakelab history.

    Only reads.  Raises :class:`HistoryError` for a file that is not SQLite,
    fails the integrity check, belongs to another program or is newer.
    """
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        application_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.OperationalError as exc:
        raise _operational(path, exc, timeout_s, "checking it") from None
    except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed"
        raise _corrupt(path, _sqlite_reason(exc)) from None
    if problems != ["ok"]:
        first = problems[0] if problems else "no answer"
        raise HistoryError(
            "history database %s failed its integrity check (%s); it was left untouched: "
            "restore it from a backup, move it aside, or use --history PATH" % (path, first)
        )
    fresh = version == 0 and application_id == 0 and not tables
    if not fresh and application_id != APPLICATION_ID:
        what = "it has tables %s" % ", ".join(sorted(tables)) if tables else "its application id is %d" % application_id
        raise HistoryError(
            "%s is an SQLite database but not a wakelab history (%s); it was left untouched: use --history PATH"
            % (path, what)
        )
    if version > SCHEMA_VERSION:
        raise _newer(path, version)
    if version < 0:
        raise _corrupt(path, "negative schema version %d" % version)
    return version


def _newer(path: str, version: int) -> HistoryError:
    return HistoryError(
        "history database %s was written by a newer wakelab (schema %d); upgrade wakelab or use --history" % (path, version)
    )


@contextlib.contextmanager
def _write_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (including KeyboardInterrupt)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # SQLite may already have rolled back (disk full, I/O error)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """Bring the database up to :data:`SCHEMA_VERSION` in one transaction."""
    with _write_transaction(conn):
        # Re-read under the write lock: another wakelab may have migrated it meanwhile.
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise _newer(path, version)
        if version == SCHEMA_VERSION:
            return
        for step in MIGRATIONS[version:SCHEMA_VERSION]:
            step(conn)
        from wakelab import __version__

        now = utc_now()
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('created_utc', ?)", (now,))
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('created_by', ?)", ("wakelab " + __version__,))
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('migrated_utc', ?)", (now,))
        # PRAGMA takes no parameters; SCHEMA_VERSION is our own integer.
        conn.execute("PRAGMA user_version = %d" % int(SCHEMA_VERSION))


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def _check_sqlite_file(path: str) -> None:
    """Refuse, before SQLite sees it, an existing file that is not an SQLite database.

    SQLite takes a file too short to hold its header for an empty database and
    writes a new one over it (a one-byte text file named history.db was lost
    that way), so a non-empty file must start with SQLite's 16-byte magic and
    hold its whole 100-byte header.  Only a regular file is read (opened
    non-blocking, so a FIFO cannot hang us, and checked with ``fstat``); an
    empty file is a new database.  Nothing is written.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise HistoryError(
            "cannot open history database %s: %s (choose another with --history PATH)" % (path, exc.strerror or exc)
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise HistoryError(
                "history database %s is not a regular file (%s); it was left untouched: use --history PATH"
                % (path, _file_kind(info.st_mode))
            )
        if info.st_size == 0:
            return
        head = os.read(fd, SQLITE_HEADER_BYTES)
    except OSError as exc:
        raise HistoryError("cannot read history database %s: %s (choose another with --history PATH)" % (path, exc.strerror or exc)) from None
    finally:
        os.close(fd)
    if not head.startswith(SQLITE_HEADER):
        raise HistoryError(
            "history database %s is not an SQLite database (it does not start with \"SQLite format 3\"); "
            "it was left untouched: move it aside or use --history PATH" % path
        )
    if len(head) < SQLITE_HEADER_BYTES:
        raise _corrupt(path, "%d bytes, shorter than SQLite's %d-byte header" % (len(head), SQLITE_HEADER_BYTES))


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


@contextlib.contextmanager
def open_history(
    db_path: Optional[str] = None, *, create: bool = True, timeout_s: float = BUSY_TIMEOUT_S
) -> Iterator[Optional[sqlite3.Connection]]:
    """An open, checked, current-schema connection to the history database.

    With ``create=False`` a missing database yields None instead of creating
    a file (listing an empty history writes nothing).  An older schema is
    migrated in place, in one transaction.  The connection is closed on exit.
    """
    path = resolve_db_path(db_path)
    if not os.path.exists(path):
        if not create:
            yield None
            return
        parent = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise HistoryError(
                "cannot create history database %s: %s (choose another with --history PATH)" % (path, exc.strerror or exc)
            ) from None
    elif os.path.isdir(path):
        raise HistoryError("history database %s is a directory (give a file with --history PATH)" % path)
    else:
        _check_sqlite_file(path)
    conn = _connect(path, timeout_s)
    try:
        version = _check_readable(conn, path, timeout_s)
        if version < SCHEMA_VERSION:
            try:
                _migrate(conn, path)
            except sqlite3.Error as exc:
                raise _operational(path, exc, timeout_s, "migrating it to schema %d" % SCHEMA_VERSION) from None
        conn.execute("PRAGMA foreign_keys = ON")
        yield conn
    finally:
        conn.close()


# ----------------------------------------------------------------------------------------------
# Recording a run


@dataclasses.dataclass(frozen=True)
class RecordResult:
    """What :func:`record_run` did: ``action`` is added, unchanged or updated."""

    run_id: int
    action: str
    db_path: str


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _dict(value: Any) -> Dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _integer(value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _flag(value: Any) -> Optional[int]:
    return int(value) if isinstance(value, bool) else None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _run_row(summary: Mapping[str, Any], folder: str, summary_json: str) -> Dict[str, Any]:
    interpreter = _dict(summary.get("interpreter"))
    machine = _dict(summary.get("machine"))
    conditions = summary.get("conditions")
    parameters = summary.get("parameters")
    run_uuid = summary.get("run_id")
    return {
        "run_uuid": run_uuid if isinstance(run_uuid, str) and run_uuid else None,
        "recorded_utc": utc_now(),
        "started_utc": summary["started_utc"],
        "finished_utc": _text(summary.get("finished_utc")),
        "lab_id": _text(_dict(summary.get("lab")).get("id")),
        "folder": folder,
        "complete": _flag(summary.get("complete")),
        "interrupted": _flag(summary.get("interrupted")),
        "tool_version": _text(_dict(summary.get("tool")).get("version")),
        "implementation": _text(interpreter.get("implementation")),
        "python_version": _text(interpreter.get("version")),
        "build": _text(interpreter.get("build")),
        "executable": _text(interpreter.get("executable")),
        "free_threaded": _flag(interpreter.get("free_threaded_build")),
        "gil_enabled": _flag(interpreter.get("gil_enabled")),
        "hostname": _text(machine.get("hostname")),
        "cpu_model": _text(machine.get("cpu_model")),
        "kernel": _text(machine.get("kernel")),
        "architecture": _text(machine.get("architecture")),
        "note": _text(summary.get("note")),
        "parameters_json": _canonical(parameters) if parameters is not None else None,
        "conditions_json": _canonical(conditions) if conditions is not None else None,
        "summary_json": summary_json,
    }


def _arm_rows(summary: Mapping[str, Any]) -> List[Tuple[Any, ...]]:
    rows = []
    for position, entry in enumerate(summary.get("arms") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        latency, rate = _dict(entry.get("latency")), _dict(entry.get("rate"))
        rows.append(
            (
                position,
                entry["name"],
                _text(entry.get("family")),
                _text(entry.get("kind")),
                _text(entry.get("waiter")),
                _text(entry.get("scope")),
                _integer(latency.get("n")),
                _integer(latency.get("lost")),
                _number(latency.get("p50_ns")),
                _number(latency.get("p90_ns")),
                _number(latency.get("p99_ns")),
                _number(latency.get("p99_9_ns")),
                _number(latency.get("max_ns")),
                _number(latency.get("mean_ns")),
                _number(rate.get("ops_per_s")),
                _text(entry.get("status")),
            )
        )
    return rows


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a run recorded by ``wakelab history import`` came from.

    ``imported_from`` is the path given (made absolute, symlinks kept, as the
    user named it), ``imported_utc`` when, ``imported_by`` the hostname of the
    machine that imported it.  The machine that *measured* the run is the
    bundle's own ``machine`` block, recorded as it is.
    """

    imported_from: str
    imported_utc: str
    imported_by: Optional[str]


def record_run(
    summary: Mapping[str, Any],
    folder: str,
    db_path: Optional[str] = None,
    *,
    timeout_s: float = BUSY_TIMEOUT_S,
) -> RecordResult:
    """Record one run (its summary.json document and its bundle folder) in the history.

    Idempotent: a run is identified by its summary's ``run_id`` (a bundle
    older than run ids: by its folder and ``started_utc``); adding
    it again changes nothing, and adding a newer state of the same bundle
    (for example one recorded while it was still running) updates the row in
    place.  Raises :class:`HistoryError`; the database is then as it was.
    """
    return record_runs([(summary, folder, None)], db_path, timeout_s=timeout_s)[0]


def record_runs(
    runs: Sequence[Tuple[Mapping[str, Any], str, Optional[Provenance]]],
    db_path: Optional[str] = None,
    *,
    timeout_s: float = BUSY_TIMEOUT_S,
) -> List[RecordResult]:
    """Record several runs, ``(summary, folder, provenance)`` each, in one transaction: all or none.

    Each run is recorded as :func:`record_run` records one (same key, same
    idempotence); a run given twice is recorded once, the second time
    ``unchanged``.  ``provenance`` is None for a run recorded where it was
    measured.  Every summary is checked before the database is opened: one
    that cannot be recorded raises :class:`HistoryError` and nothing is
    written; so does a failure while writing (the transaction rolls back).
    """
    prepared = []
    for summary, folder, provenance in runs:
        if not isinstance(summary, Mapping) or not isinstance(summary.get("started_utc"), str):
            raise HistoryError("cannot record run in %s: its summary has no started_utc" % folder)
        if not isinstance(summary.get("arms"), list):
            raise HistoryError("cannot record run in %s: its summary has no arms list" % folder)
        try:
            summary_json = _canonical(summary)
        except (TypeError, ValueError) as exc:
            raise HistoryError("cannot record run in %s: its summary is not plain JSON (%s)" % (folder, exc)) from None
        row = _run_row(summary, os.path.realpath(folder), summary_json)
        row.update(_machine_facts(summary))
        row.update(_provenance_row(provenance))
        prepared.append((row, _arm_rows(summary)))
    path = resolve_db_path(db_path)
    if not prepared:
        return []
    with open_history(path, create=True, timeout_s=timeout_s) as conn:
        assert conn is not None
        doing = "recording the run" if len(prepared) == 1 else "recording %d runs" % len(prepared)
        try:
            with _write_transaction(conn):
                return [_store(conn, row, arms, path) for row, arms in prepared]
        except sqlite3.Error as exc:
            raise _operational(path, exc, timeout_s, doing) from None


def _provenance_row(provenance: Optional[Provenance]) -> Dict[str, Any]:
    if provenance is None:
        return {"imported_utc": None, "imported_from": None, "imported_by": None}
    return {
        "imported_utc": provenance.imported_utc,
        "imported_from": provenance.imported_from,
        "imported_by": provenance.imported_by,
    }


# ----------------------------------------------------------------------------------------------
# The conditions a figure depends on

# Why a key of its own: summary.json's ``conditions`` block holds the load and the idle hold, but
# the placement, the loop, the settle and the planted delay are ``parameters``; two runs that
# differ only there (a same-CPU cell and a split cell of one grid: p50 5.6 against 26.5 µs) had
# equal ``conditions`` and were shown as one series.  The key gathers every recorded condition
# that changes what a wake costs, and leaves out what only changes how precisely it is known
# (n, warm-up, timeouts, rounds, the number of workers).  A condition the summary does not
# record is left out of the key, not guessed: "unknown" is not "none".  Two exceptions, both facts
# of the bundle's age rather than guesses: a bundle without ``execution.repeat`` measured each arm
# once (repetitions came later), and a bundle without ``PYTHON_GIL`` ran without it set.
#
# The interpreter that measured is part of the key too (schema 4): the interpreter column shows
# "CPython 3.13.5t", but a GIL build and a free-threaded one, PYTHON_GIL=1 or not, a debug build or
# two builds of one version are different wake paths, and a series of one must not continue into
# the other.

_KNOWN_CONDITIONS = ("cpu_threads", "cpu_procs", "applied_cpu_procs", "switch_interval_s", "idle_hold", "applied_idle_hold")
# summary.json interpreter field -> conditions key field, for the facts of the build that change a wake.
_INTERPRETER_KEYS = (
    ("implementation", "implementation"),
    ("version", "python_version"),
    ("free_threaded_build", "free_threaded"),
    ("gil_enabled", "gil_enabled"),
    ("debug_build", "debug_build"),
    ("build", "build"),
)
# Repetitions of a bundle that does not say: it measured each arm once.
REPEAT_WHEN_ABSENT = 1


def _repeat(parameters: Any, execution: Any) -> Any:
    """summary.json ``execution.repeat`` (older names in ``parameters`` accepted), 1 when absent."""
    if isinstance(execution, dict) and execution.get("repeat") is not None:
        return execution["repeat"]
    if isinstance(parameters, dict):
        for name in ("repeat", "repetitions"):
            if parameters.get(name) is not None:
                return parameters[name]
    return REPEAT_WHEN_ABSENT


def figure_conditions(summary: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The conditions of a run that change its figures, as a flat JSON object (None: none recorded).

    Keys, each present only when the summary records it:
    ``placement`` (any / same / split) with ``notifier_cpu`` and ``waiter_cpu``
    when pinned; ``loop`` (closed / open) with ``interval_us`` for an open
    loop; ``settle_us``, and ``settle_jitter_us`` when the settle had a random
    part; ``planted_delay_us`` and ``planted_after_us`` when a
    delay was planted; ``repeat`` (repetitions per arm: summary.json
    ``execution.repeat``, 1 when the bundle does not say); ``busy_threads``;
    ``busy_procs`` and ``idle_hold`` as applied (the request when nothing says
    what was applied); ``switch_interval_s`` (None: the interpreter's
    default); ``execution`` (workers / in-process); and the interpreter
    build: ``implementation``, ``python_version``, ``free_threaded``,
    ``gil_enabled``, ``debug_build``, ``build`` as recorded, and
    ``python_gil`` when ``PYTHON_GIL`` was set.  Keys of ``conditions``
    that this wakelab does not know are kept as they are, so that a newer
    condition still tells runs apart.
    """
    parameters, conditions, execution = summary.get("parameters"), summary.get("conditions"), summary.get("execution")
    key: Dict[str, Any] = {}
    if isinstance(parameters, dict):
        placement = parameters.get("placement")
        key["placement"] = placement if isinstance(placement, str) and placement else "any"
        if key["placement"] != "any":
            for name in ("notifier_cpu", "waiter_cpu"):
                if parameters.get(name) is not None:
                    key[name] = parameters[name]
        mode = parameters.get("mode")
        key["loop"] = mode if isinstance(mode, str) and mode else "closed"  # before open loop, every run was closed
        if key["loop"] != "closed" and "interval_us" in parameters:
            key["interval_us"] = parameters["interval_us"]
        if "settle_us" in parameters:
            key["settle_us"] = parameters["settle_us"]
        if parameters.get("settle_jitter_us"):  # a random part; 0 or absent: every settle the same
            key["settle_jitter_us"] = parameters["settle_jitter_us"]
        if parameters.get("planted_delay_us"):
            key["planted_delay_us"] = parameters["planted_delay_us"]
            key["planted_after_us"] = parameters.get("planted_after_us") or 0
    if isinstance(parameters, dict) or isinstance(execution, dict):
        key["repeat"] = _repeat(parameters, execution)
    if isinstance(conditions, dict):
        if "cpu_threads" in conditions:
            key["busy_threads"] = conditions["cpu_threads"]
        for name, applied, requested in (("busy_procs", "applied_cpu_procs", "cpu_procs"), ("idle_hold", "applied_idle_hold", "idle_hold")):
            if applied in conditions:
                key[name] = conditions[applied]
            elif requested in conditions:
                key[name] = conditions[requested]
        if "switch_interval_s" in conditions:
            key["switch_interval_s"] = conditions["switch_interval_s"]
        for name in sorted(conditions):
            if name not in _KNOWN_CONDITIONS:
                key[name] = conditions[name]
    if isinstance(execution, dict) and isinstance(execution.get("mode"), str):
        key["execution"] = execution["mode"]
    interpreter = summary.get("interpreter")
    if isinstance(interpreter, dict):
        for field, name in _INTERPRETER_KEYS:
            if interpreter.get(field) is not None:
                key[name] = interpreter[field]
        gil_env = interpreter.get("python_gil_env")
        if isinstance(gil_env, str) and gil_env:
            key["python_gil"] = gil_env
    return key or None


def _machine_facts(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """The schema-3 columns that come from the summary itself."""
    machine = _dict(summary.get("machine"))
    key = figure_conditions(summary)
    try:
        conditions_key = _canonical(key) if key is not None else None
    except (TypeError, ValueError):
        conditions_key = None
    return {
        "conditions_key": conditions_key,
        "cpu_count": _integer(machine.get("cpu_count")),
        "machine_id": _text(machine.get("machine_id")),
    }


def _store(conn: sqlite3.Connection, row: Dict[str, Any], arms: List[Tuple[Any, ...]], path: str) -> RecordResult:
    if row.get("run_uuid") is not None:
        found = conn.execute("SELECT id, summary_json FROM runs WHERE run_uuid = ?", (row["run_uuid"],)).fetchone()
    else:
        found = conn.execute(
            "SELECT id, summary_json FROM runs WHERE run_uuid IS NULL AND folder = ? AND started_utc = ?",
            (row["folder"], row["started_utc"]),
        ).fetchone()
    if found is not None and found[1] == row["summary_json"]:
        return RecordResult(run_id=int(found[0]), action="unchanged", db_path=path)
    columns = sorted(row)
    if found is None:
        cursor = conn.execute(
            "INSERT INTO runs (%s) VALUES (%s)" % (", ".join(columns), ", ".join("?" * len(columns))),
            [row[c] for c in columns],
        )
        run_id, action = int(cursor.lastrowid or 0), "added"
    else:
        run_id, action = int(found[0]), "updated"
        conn.execute(
            "UPDATE runs SET %s WHERE id = ?" % ", ".join("%s = ?" % c for c in columns),
            [row[c] for c in columns] + [run_id],
        )
        conn.execute("DELETE FROM arm_results WHERE run_id = ?", (run_id,))
    conn.executemany(
        "INSERT INTO arm_results (run_id, position, arm, family, kind, waiter, scope, n, lost, p50_ns, p90_ns, "
        "p99_ns, p99_9_ns, max_ns, mean_ns, ops_per_s, status) VALUES (?%s)" % (", ?" * 16),
        [(run_id,) + arm for arm in arms],
    )
    return RecordResult(run_id=run_id, action=action, db_path=path)


# ----------------------------------------------------------------------------------------------
# Reading


@dataclasses.dataclass(frozen=True)
class HistoryFilter:
    """Which runs to show: exact lab id, Python version prefix (``3.13`` or ``3.13t``), exact hostname."""

    lab: Optional[str] = None
    python: Optional[str] = None
    host: Optional[str] = None
    limit: Optional[int] = None

    def where(self) -> Tuple[str, List[Any]]:
        clauses: List[str] = []
        params: List[Any] = []
        if self.lab is not None:
            clauses.append("runs.lab_id = ?")
            params.append(self.lab)
        if self.python is not None:
            version = self.python
            if version.endswith("t"):  # python3.13t: the free-threaded build
                version = version[:-1]
                clauses.append("runs.free_threaded = 1")
            clauses.append("(runs.python_version = ? OR substr(runs.python_version, 1, ?) = ?)")
            params += [version, len(version) + 1, version + "."]
        if self.host is not None:
            clauses.append("runs.hostname = ?")
            params.append(self.host)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """One recorded run, as ``wakelab history`` lists it."""

    id: int
    started_utc: str
    recorded_utc: str
    lab_id: Optional[str]
    folder: str
    complete: Optional[bool]
    implementation: Optional[str]
    python_version: Optional[str]
    free_threaded: Optional[bool]
    gil_enabled: Optional[bool]
    hostname: Optional[str]
    cpu_model: Optional[str]
    kernel: Optional[str]
    arms: int
    arms_ok: int
    conditions: Optional[Any]
    run_uuid: Optional[str] = None  # summary.json run_id (None: recorded from an older bundle)
    interrupted: Optional[bool] = None  # ended by Ctrl-C or a signal (what was measured is kept)
    architecture: Optional[str] = None
    cpu_count: Optional[int] = None
    machine_id: Optional[str] = None
    figure_conditions: Optional[Dict[str, Any]] = None  # see figure_conditions() (None: none recorded)
    imported_utc: Optional[str] = None  # provenance of a run from 'wakelab history import' (None: measured here)
    imported_from: Optional[str] = None
    imported_by: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ArmPoint:
    """One arm's figures in one recorded run (ns; ops/s for rate arms)."""

    run_id: int
    started_utc: str
    lab_id: Optional[str]
    folder: str
    implementation: Optional[str]
    python_version: Optional[str]
    free_threaded: Optional[bool]
    gil_enabled: Optional[bool]
    hostname: Optional[str]
    conditions: Optional[Any]
    arm: str
    family: Optional[str]
    kind: Optional[str]
    waiter: Optional[str]
    scope: Optional[str]
    status: Optional[str]
    n: Optional[int]
    lost: Optional[int]
    p50_ns: Optional[float]
    p90_ns: Optional[float]
    p99_ns: Optional[float]
    p99_9_ns: Optional[float]
    max_ns: Optional[float]
    mean_ns: Optional[float]
    ops_per_s: Optional[float]
    figure_conditions: Optional[Dict[str, Any]] = None  # see figure_conditions() (None: none recorded)
    cpu_model: Optional[str] = None
    cpu_count: Optional[int] = None
    kernel: Optional[str] = None
    architecture: Optional[str] = None
    machine_id: Optional[str] = None
    imported_from: Optional[str] = None  # None: recorded where it was measured

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def _bool(value: Any) -> Optional[bool]:
    return None if value is None else bool(value)


def _loads(text: Optional[str]) -> Optional[Any]:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:  # edited by hand: show the text rather than fail the listing
        return text


def _key(text: Optional[str]) -> Optional[Dict[str, Any]]:
    """A stored conditions key as an object (one edited by hand into something else: None)."""
    value = _loads(text)
    return value if isinstance(value, dict) else None


def _read(db_path: Optional[str], timeout_s: float, query: Callable[[sqlite3.Connection], List[Any]]) -> List[Any]:
    path = resolve_db_path(db_path)
    with open_history(path, create=False, timeout_s=timeout_s) as conn:
        if conn is None:
            return []
        try:
            return query(conn)
        except sqlite3.Error as exc:
            raise _operational(path, exc, timeout_s, "reading it") from None


def list_runs(
    db_path: Optional[str] = None, filters: HistoryFilter = HistoryFilter(), *, timeout_s: float = BUSY_TIMEOUT_S
) -> List[RunRecord]:
    """Recorded runs, newest first (by start time).  A missing database is an empty history."""
    where, params = filters.where()
    sql = (
        "SELECT runs.id, runs.started_utc, runs.recorded_utc, runs.lab_id, runs.folder, runs.complete, "
        "runs.implementation, runs.python_version, runs.free_threaded, runs.gil_enabled, runs.hostname, "
        "runs.cpu_model, runs.kernel, "
        "(SELECT count(*) FROM arm_results a WHERE a.run_id = runs.id), "
        "(SELECT count(*) FROM arm_results a WHERE a.run_id = runs.id AND a.status = 'ok'), "
        "runs.conditions_json, runs.run_uuid, runs.interrupted, runs.architecture, runs.cpu_count, runs.machine_id, "
        "runs.conditions_key, runs.imported_utc, runs.imported_from, runs.imported_by "
        "FROM runs%s ORDER BY runs.started_utc DESC, runs.id DESC" % where
    )
    if filters.limit is not None:
        sql += " LIMIT %d" % int(filters.limit)

    def query(conn: sqlite3.Connection) -> List[RunRecord]:
        return [
            RunRecord(
                id=r[0], started_utc=r[1], recorded_utc=r[2], lab_id=r[3], folder=r[4], complete=_bool(r[5]),
                implementation=r[6], python_version=r[7], free_threaded=_bool(r[8]), gil_enabled=_bool(r[9]),
                hostname=r[10], cpu_model=r[11], kernel=r[12], arms=r[13], arms_ok=r[14], conditions=_loads(r[15]),
                run_uuid=r[16], interrupted=_bool(r[17]), architecture=r[18], cpu_count=r[19], machine_id=r[20],
                figure_conditions=_key(r[21]), imported_utc=r[22], imported_from=r[23], imported_by=r[24],
            )
            for r in conn.execute(sql, params)
        ]

    return _read(db_path, timeout_s, query)


def arm_trend(
    arm: str,
    db_path: Optional[str] = None,
    filters: HistoryFilter = HistoryFilter(),
    *,
    timeout_s: float = BUSY_TIMEOUT_S,
) -> List[ArmPoint]:
    """One arm's figures across recorded runs, oldest first; ``limit`` keeps the newest runs."""
    where, params = filters.where()
    where = (where + " AND" if where else " WHERE") + " arm_results.arm = ?"
    sql = (
        "SELECT runs.id, runs.started_utc, runs.lab_id, runs.folder, runs.implementation, runs.python_version, "
        "runs.free_threaded, runs.gil_enabled, runs.hostname, runs.conditions_json, arm_results.arm, "
        "arm_results.family, arm_results.kind, arm_results.waiter, arm_results.scope, arm_results.status, "
        "arm_results.n, arm_results.lost, arm_results.p50_ns, arm_results.p90_ns, arm_results.p99_ns, "
        "arm_results.p99_9_ns, arm_results.max_ns, arm_results.mean_ns, arm_results.ops_per_s, "
        "runs.conditions_key, runs.cpu_model, runs.cpu_count, runs.kernel, runs.architecture, runs.machine_id, "
        "runs.imported_from "
        "FROM arm_results JOIN runs ON runs.id = arm_results.run_id%s "
        "ORDER BY runs.started_utc DESC, runs.id DESC, arm_results.position DESC" % where
    )
    if filters.limit is not None:
        sql += " LIMIT %d" % int(filters.limit)

    def query(conn: sqlite3.Connection) -> List[ArmPoint]:
        points = []
        for r in conn.execute(sql, params + [arm]):
            values = list(r)
            values[6], values[7], values[9], values[25] = _bool(r[6]), _bool(r[7]), _loads(r[9]), _key(r[25])
            points.append(ArmPoint(*values))
        points.reverse()
        return points

    return _read(db_path, timeout_s, query)


def recorded_arms(db_path: Optional[str] = None, *, timeout_s: float = BUSY_TIMEOUT_S) -> List[str]:
    """Every arm name that appears in the history, sorted."""

    def query(conn: sqlite3.Connection) -> List[str]:
        return [r[0] for r in conn.execute("SELECT DISTINCT arm FROM arm_results ORDER BY arm")]

    return _read(db_path, timeout_s, query)


def interpreter_label(implementation: Optional[str], version: Optional[str], free_threaded: Optional[bool],
                      gil_enabled: Optional[bool]) -> str:
    """The interpreter as every reader names it (:attr:`wakelab.evidence.model.Interpreter.label`), from history's columns."""
    from wakelab.evidence.model import Interpreter

    if not implementation and not version:
        return "?"
    return Interpreter(implementation or "", version or "", free_threaded_build=bool(free_threaded),
                       gil_enabled=gil_enabled).label.strip()


__all__: Sequence[str] = (
    "SCHEMA_VERSION",
    "HistoryError",
    "HistoryFilter",
    "RecordResult",
    "RunRecord",
    "ArmPoint",
    "default_db_path",
    "resolve_db_path",
    "open_history",
    "record_run",
    "record_runs",
    "Provenance",
    "figure_conditions",
    "list_runs",
    "arm_trend",
    "recorded_arms",
    "interpreter_label",
)
