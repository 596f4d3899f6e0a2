"""The history database on disk: where it is, opening it safely, migrating it, and writing runs into it.

Safety rules, because a history is only worth something if it survives:

* **Never destroy what is there.**  A file that is not an SQLite database, or fails ``PRAGMA integrity_check``, or is
  an SQLite database of some other program, is refused with one line and left byte for byte as it was: no repair, no
  truncation, no "start a fresh one".  Nothing is written to a file before it has passed those checks.
* **Every write is one transaction** (``BEGIN IMMEDIATE`` ... ``COMMIT``), in SQLite's default rollback-journal mode,
  so a crash or a full disk mid-record leaves the database as it was before; a failed migration leaves the older
  version intact.
* **Concurrent runs wait for each other** up to a busy timeout, then give up with a clear error instead of hanging.
* **A newer schema is never downgraded**: it is refused, saying to upgrade wakelab or choose another database.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sqlite3
import stat
from typing import Callable, Iterator, List, Mapping, Optional, Sequence, Tuple, TypeVar

from wakelab.errors import WakelabError
from wakelab.evidence.model import Bundle
from wakelab.history import schema
from wakelab.history.rows import ArmRow, Provenance, RunRow, utc_now

T = TypeVar("T")
DB_FILENAME = "history.sqlite3"
ENV_VAR = "WAKELAB_HISTORY"
# How long a second wakelab waits for another one to finish writing.
BUSY_TIMEOUT_S = 10.0
# The first 16 bytes of every SQLite 3 database file; its whole header is 100 bytes.
SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_HEADER_BYTES = 100


class HistoryError(WakelabError):
    """The history database cannot be opened, read or written (the run's bundle is unaffected)."""


def resolve_db_path(db_path: Optional[str] = None, environ: Optional[Mapping[str, str]] = None) -> str:
    """``db_path`` (``~`` expanded); when it is None or empty, ``$WAKELAB_HISTORY``, else
    ``${XDG_DATA_HOME:-~/.local/share}/wakelab/history.sqlite3`` (a relative ``XDG_DATA_HOME`` is ignored, as the XDG
    base-directory spec asks)."""
    env = os.environ if environ is None else environ
    explicit = db_path or env.get(ENV_VAR)
    if explicit:
        return os.path.expanduser(explicit)
    data_home = env.get("XDG_DATA_HOME") or ""
    if not os.path.isabs(data_home):
        data_home = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "wakelab", DB_FILENAME)


def _sqlite_reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _cannot(doing: str, path: str, reason: object) -> HistoryError:
    return HistoryError("cannot %s history database %s: %s (choose another with --history PATH)" % (doing, path, reason))


def _operational(path: str, exc: sqlite3.Error, timeout_s: float, doing: str) -> HistoryError:
    """A HistoryError for an error while reading or writing a database that passed its checks."""
    reason = _sqlite_reason(exc)
    if "locked" in reason or "busy" in reason:
        return HistoryError("history database %s is locked by another process (waited %g s while %s); try again, or use "
                            "--history PATH" % (path, timeout_s, doing))
    if "readonly" in reason or "read-only" in reason or "unable to open" in reason:
        return _cannot("write", path, reason)
    if type(exc) is sqlite3.DatabaseError:  # not a subclass: "malformed", "not a database"
        return _corrupt(path, reason)
    return HistoryError("history database %s: %s while %s" % (path, reason, doing))


def _untouched(what: str, advice: str = "move it aside or use --history PATH") -> HistoryError:
    return HistoryError("%s; it was left untouched: %s" % (what, advice))


def _corrupt(path: str, reason: str) -> HistoryError:
    return _untouched("history database %s is unreadable (%s)" % (path, reason))


def _check_readable(conn: sqlite3.Connection, path: str, timeout_s: float) -> int:
    """The database's schema version, after proving (reading only) that it is an intact wakelab history, not newer."""
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
        raise _untouched("history database %s failed its integrity check (%s)" % (path, first),
                         "restore it from a backup, move it aside, or use --history PATH")
    fresh = version == 0 and application_id == 0 and not tables
    if not fresh and application_id != schema.APPLICATION_ID:
        what = "it has tables %s" % ", ".join(sorted(tables)) if tables else "its application id is %d" % application_id
        raise _untouched("%s is an SQLite database but not a wakelab history (%s)" % (path, what), "use --history PATH")
    if version > schema.SCHEMA_VERSION:
        raise _newer(path, version)
    if version < 0:
        raise _corrupt(path, "negative schema version %d" % version)
    return version


def _newer(path: str, version: int) -> HistoryError:
    return HistoryError("history database %s was written by a newer wakelab (schema %d); upgrade wakelab or use --history" % (path, version))


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
    with _write_transaction(conn):
        # Re-read under the write lock: another wakelab may have migrated it meanwhile.
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > schema.SCHEMA_VERSION:
            raise _newer(path, version)
        if version == schema.SCHEMA_VERSION:
            return
        for step in schema.MIGRATIONS[version:schema.SCHEMA_VERSION]:
            step(conn)
        from wakelab import __version__

        now = utc_now()
        for verb, key, value in (("IGNORE", "created_utc", now), ("IGNORE", "created_by", "wakelab " + __version__),
                                 ("REPLACE", "schema_version", str(schema.SCHEMA_VERSION)), ("REPLACE", "migrated_utc", now)):
            conn.execute("INSERT OR %s INTO meta (key, value) VALUES (?, ?)" % verb, (key, value))
        # PRAGMA takes no parameters; schema.SCHEMA_VERSION is our own integer.
        conn.execute("PRAGMA user_version = %d" % int(schema.SCHEMA_VERSION))


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _check_sqlite_file(path: str) -> None:
    """Refuse, before SQLite sees it, an existing file that is not an SQLite database.

    SQLite takes a file too short to hold its header for an empty database and writes a new one over it (a one-byte
    text file named history.db was lost that way), so a non-empty file must start with SQLite's 16-byte magic and hold
    its whole 100-byte header.  Only a regular file is read (opened non-blocking, so a FIFO cannot hang us); an empty
    file is a new database.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise _cannot("open", path, exc.strerror or exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise _untouched("history database %s is not a regular file (%s)" % (path, kind), "use --history PATH")
        if info.st_size == 0:
            return
        head = os.read(fd, SQLITE_HEADER_BYTES)
    except OSError as exc:
        raise _cannot("read", path, exc.strerror or exc) from None
    finally:
        os.close(fd)
    if not head.startswith(SQLITE_HEADER):
        raise _untouched("history database %s is not an SQLite database (it does not start with \"SQLite format 3\")" % path)
    if len(head) < SQLITE_HEADER_BYTES:
        raise _corrupt(path, "%d bytes, shorter than SQLite's %d-byte header" % (len(head), SQLITE_HEADER_BYTES))


@contextlib.contextmanager
def open_history(path: str, *, create: bool, timeout_s: float) -> Iterator[Optional[sqlite3.Connection]]:
    """An open, checked, current-schema connection to the history database at ``path``, closed on exit.

    With ``create=False`` a missing database yields None instead of creating a file (listing an empty history writes
    nothing).  An older schema is migrated in place, in one transaction.
    """
    if not os.path.exists(path):
        if not create:
            yield None
            return
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as exc:
            raise _cannot("create", path, exc.strerror or exc) from None
    elif os.path.isdir(path):
        raise HistoryError("history database %s is a directory (give a file with --history PATH)" % path)
    else:
        _check_sqlite_file(path)
    try:
        # isolation_level=None: no implicit transactions; this module issues BEGIN/COMMIT itself.
        conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise _cannot("open", path, _sqlite_reason(exc)) from None
    try:
        version = _check_readable(conn, path, timeout_s)
        if version < schema.SCHEMA_VERSION:
            try:
                _migrate(conn, path)
            except sqlite3.Error as exc:
                raise _operational(path, exc, timeout_s, "migrating it to schema %d" % schema.SCHEMA_VERSION) from None
        conn.execute("PRAGMA foreign_keys = ON")
        yield conn
    finally:
        conn.close()


def check_recordable(path: str, hint: str) -> None:
    """:class:`HistoryError` (ending in ``(hint)``) where a run could not be recorded in the database at ``path``.

    Creates nothing: an existing database is opened and checked as recording will open it (an older schema is migrated
    then, as recording would); a missing one needs its nearest existing folder to be writable.
    """
    if os.path.lexists(path):
        if os.path.isdir(path):
            raise HistoryError("history database %s is a directory (%s)" % (path, hint))
        if not os.access(path, os.R_OK | os.W_OK):
            raise HistoryError("cannot write history database %s: permission denied (%s)" % (path, hint))
        with open_history(path, create=False, timeout_s=BUSY_TIMEOUT_S):
            return
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        problem = "is not writable" if os.path.isdir(parent) else "is not a directory"
        raise HistoryError("cannot create history database %s: %s %s (%s)" % (path, parent, problem, hint))


@dataclasses.dataclass(frozen=True)
class RecordResult:
    """What :func:`record_run` did: ``action`` is added, unchanged or updated; ``folder``, ``run_uuid``
    and ``hostname`` are the recorded run's (its folder absolute, symlinks resolved)."""

    run_id: int
    action: str
    folder: str
    run_uuid: Optional[str]
    hostname: Optional[str]


@dataclasses.dataclass(frozen=True)
class RecordCounts:
    """What recording several runs did: how many runs were added, already there or updated, from how many
    machines (told apart by hostname)."""

    added: int
    unchanged: int
    updated: int
    runs: int
    machines: int

    @classmethod
    def of(cls, results: Sequence[RecordResult]) -> "RecordCounts":
        actions = [r.action for r in results]
        return cls(actions.count("added"), actions.count("unchanged"), actions.count("updated"), len(results),
                   len({r.hostname or "" for r in results}))


def record_run(bundle: Bundle, db_path: Optional[str] = None, *, timeout_s: float = BUSY_TIMEOUT_S) -> RecordResult:
    """Record one run (``bundle``: its summary and folder) in the history, as :func:`record_runs` records each."""
    return record_runs([(bundle, None)], db_path, timeout_s=timeout_s)[0]


def _rows(bundle: Bundle, provenance: Optional[Provenance]) -> Tuple[RunRow, Tuple[ArmRow, ...]]:
    """The rows of one run, or :class:`HistoryError` for a summary the history cannot keep."""
    summary, folder = bundle.summary, bundle.folder
    if not isinstance(summary, Mapping) or not isinstance(summary.get("started_utc"), str):
        raise HistoryError("cannot record run in %s: its summary has no started_utc" % folder)
    if not isinstance(summary.get("arms"), list):
        raise HistoryError("cannot record run in %s: its summary has no arms list" % folder)
    bundle = dataclasses.replace(bundle, folder=os.path.realpath(folder))  # one run, however its folder is reached
    try:
        row = RunRow.from_bundle(bundle, provenance)
    except (TypeError, ValueError) as exc:
        raise HistoryError("cannot record run in %s: its summary is not plain JSON (%s)" % (folder, exc)) from None
    return row, ArmRow.of_bundle(bundle)


def record_runs(runs: Sequence[Tuple[Bundle, Optional[Provenance]]], db_path: Optional[str] = None, *,
                timeout_s: float = BUSY_TIMEOUT_S) -> List[RecordResult]:
    """Record several runs, ``(bundle, provenance)`` each, in one transaction: all or none.

    Idempotent: a run is identified by its summary's ``run_id`` (a bundle older than run ids: by its folder and
    ``started_utc``); recording it again changes nothing (``unchanged``), and a newer state of the same bundle (one
    recorded while it was still running) updates its row in place.  ``provenance`` is None for a run recorded where
    it was measured.  Every summary is checked before the database is opened: one that cannot be recorded raises
    :class:`HistoryError` and nothing is written; so does a failure while writing (the transaction rolls back)."""
    prepared = [_rows(bundle, provenance) for bundle, provenance in runs]
    path = resolve_db_path(db_path)
    if not prepared:
        return []
    with open_history(path, create=True, timeout_s=timeout_s) as conn:
        assert conn is not None
        doing = "recording the run" if len(prepared) == 1 else "recording %d runs" % len(prepared)
        try:
            with _write_transaction(conn):
                return [_store(conn, row, arms) for row, arms in prepared]
        except sqlite3.Error as exc:
            raise _operational(path, exc, timeout_s, doing) from None


_RUN_COLUMNS = tuple(field.name for field in dataclasses.fields(RunRow))
_ARM_COLUMNS = ("run_id",) + tuple(field.name for field in dataclasses.fields(ArmRow))


def _insert(table: str, columns: Sequence[str]) -> str:
    return "INSERT INTO %s (%s) VALUES (%s)" % (table, ", ".join(columns), ", ".join("?" * len(columns)))


def _store(conn: sqlite3.Connection, row: RunRow, arms: Sequence[ArmRow]) -> RecordResult:
    if row.run_uuid is not None:
        found = conn.execute("SELECT id, summary_json FROM runs WHERE run_uuid = ?", (row.run_uuid,)).fetchone()
    else:
        found = conn.execute("SELECT id, summary_json FROM runs WHERE run_uuid IS NULL AND folder = ? AND started_utc = ?",
                             (row.folder, row.started_utc)).fetchone()
    done = functools.partial(RecordResult, folder=row.folder, run_uuid=row.run_uuid, hostname=row.hostname or None)
    if found is not None and found[1] == row.summary_json:
        return done(run_id=int(found[0]), action="unchanged")
    values = list(dataclasses.astuple(row))
    if found is None:
        run_id, action = int(conn.execute(_insert("runs", _RUN_COLUMNS), values).lastrowid or 0), "added"
    else:
        run_id, action = int(found[0]), "updated"
        conn.execute("UPDATE runs SET %s WHERE id = ?" % ", ".join("%s = ?" % c for c in _RUN_COLUMNS), values + [run_id])
        conn.execute("DELETE FROM arm_results WHERE run_id = ?", (run_id,))
    conn.executemany(_insert("arm_results", _ARM_COLUMNS), [(run_id,) + dataclasses.astuple(arm) for arm in arms])
    return done(run_id=run_id, action=action)


def read(db_path: Optional[str], timeout_s: float, query: Callable[[sqlite3.Connection], List[T]]) -> List[T]:
    """``query(conn)`` on the history at ``db_path``, reading only (a missing database is an empty history: [])."""
    path = resolve_db_path(db_path)
    with open_history(path, create=False, timeout_s=timeout_s) as conn:
        if conn is None:
            return []
        try:
            return query(conn)
        except sqlite3.Error as exc:
            raise _operational(path, exc, timeout_s, "reading it") from None

