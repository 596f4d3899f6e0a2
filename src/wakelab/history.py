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
  before it has passed those checks.
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
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from wakelab.errors import WakelabError

SCHEMA_VERSION = 2
DB_FILENAME = "history.sqlite3"
ENV_VAR = "WAKELAB_HISTORY"
# How long a second wakelab waits for another one to finish writing.
BUSY_TIMEOUT_S = 10.0
# PRAGMA application_id of a wakelab history ("wake" in ASCII): SQLite's own way to tell
# one program's database files from another's, so that a wrong --history is refused.
APPLICATION_ID = 0x77616B65


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


# MIGRATIONS[v] turns a database of version v into version v + 1.
MIGRATIONS: List[Callable[[sqlite3.Connection], None]] = [_migrate_0_to_1, _migrate_1_to_2]


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
    if not isinstance(summary, Mapping) or not isinstance(summary.get("started_utc"), str):
        raise HistoryError("cannot record run in %s: its summary has no started_utc" % folder)
    if not isinstance(summary.get("arms"), list):
        raise HistoryError("cannot record run in %s: its summary has no arms list" % folder)
    try:
        summary_json = _canonical(summary)
    except (TypeError, ValueError) as exc:
        raise HistoryError("cannot record run in %s: its summary is not plain JSON (%s)" % (folder, exc)) from None
    folder = os.path.realpath(folder)
    path = resolve_db_path(db_path)
    row = _run_row(summary, folder, summary_json)
    arms = _arm_rows(summary)
    with open_history(path, create=True, timeout_s=timeout_s) as conn:
        assert conn is not None
        try:
            with _write_transaction(conn):
                return _store(conn, row, arms, path)
        except sqlite3.Error as exc:
            raise _operational(path, exc, timeout_s, "recording the run") from None


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
        "runs.conditions_json, runs.run_uuid, runs.interrupted FROM runs%s ORDER BY runs.started_utc DESC, runs.id DESC" % where
    )
    if filters.limit is not None:
        sql += " LIMIT %d" % int(filters.limit)

    def query(conn: sqlite3.Connection) -> List[RunRecord]:
        return [
            RunRecord(
                id=r[0], started_utc=r[1], recorded_utc=r[2], lab_id=r[3], folder=r[4], complete=_bool(r[5]),
                implementation=r[6], python_version=r[7], free_threaded=_bool(r[8]), gil_enabled=_bool(r[9]),
                hostname=r[10], cpu_model=r[11], kernel=r[12], arms=r[13], arms_ok=r[14], conditions=_loads(r[15]),
                run_uuid=r[16], interrupted=_bool(r[17]),
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
        "arm_results.p99_9_ns, arm_results.max_ns, arm_results.mean_ns, arm_results.ops_per_s "
        "FROM arm_results JOIN runs ON runs.id = arm_results.run_id%s "
        "ORDER BY runs.started_utc DESC, runs.id DESC, arm_results.position DESC" % where
    )
    if filters.limit is not None:
        sql += " LIMIT %d" % int(filters.limit)

    def query(conn: sqlite3.Connection) -> List[ArmPoint]:
        points = []
        for r in conn.execute(sql, params + [arm]):
            values = list(r)
            values[6], values[7], values[9] = _bool(r[6]), _bool(r[7]), _loads(r[9])
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
    """``CPython 3.13.5``; free-threaded builds get python3.13t's ``t``, and ``(GIL on)`` if it was."""
    label = " ".join(part for part in (implementation, version) if part) or "?"
    if free_threaded:
        label += "t"
        if gil_enabled:
            label += " (GIL on)"
    return label


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
    "list_runs",
    "arm_trend",
    "recorded_arms",
    "interpreter_label",
)
