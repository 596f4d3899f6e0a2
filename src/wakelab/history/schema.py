"""The history database's schema: its tables, and the steps that bring an older database up to date.

Schema history (``PRAGMA user_version``, also kept in the ``meta`` table):
  0 -- an empty database (a new file): nothing to keep.
  1 -- ``meta``, ``runs`` and ``arm_results`` (wakelab 0.1).
  2 -- ``runs.run_uuid``: summary.json's ``run_id``, unique, the key of a run; ``runs`` no longer unique on (folder,
       started_utc), so runs into one folder in the same second are kept apart.  Rows recorded before keep
       ``run_uuid`` NULL and their old key.
  3 -- ``runs.conditions_key``: the conditions that change a figure (placement, load, switch interval, loop, settle
       ...; see :mod:`wakelab.history.conditions`), canonical JSON, so that a same-CPU and a split run never share a
       key; ``runs.cpu_count`` and ``runs.machine_id`` for telling machines apart; ``runs.imported_utc``,
       ``imported_from`` and ``imported_by``: the provenance of a run recorded by ``wakelab history import`` (NULL for
       a run recorded where it was measured). Existing rows get their key and CPU count from their stored summary.
  4 -- the conditions key also holds the repetitions (summary.json ``execution.repeat``; a bundle without it measured
       once: 1) and the interpreter build that measured (implementation, version, free-threaded build, GIL on,
       ``PYTHON_GIL``, debug build, build string), so that runs of two builds, or of one and five repetitions, are
       never one series.  No column changes: every row's key is recomputed from its stored summary.json (a summary
       that is not JSON keeps its old key).

To change the schema: bump :data:`SCHEMA_VERSION`, append one step to :data:`MIGRATIONS` that turns version N-1 into N
using single statements (never ``executescript``, which commits behind the transaction's back), and add a test that
opens a database of the previous shape.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Callable, List, Sequence

from wakelab.evidence.model import Bundle
from wakelab.history.rows import StoredFacts

SCHEMA_VERSION = 4
# PRAGMA application_id of a wakelab history ("wake" in ASCII): SQLite's own way to tell
# one program's database files from another's, so that a wrong --history is refused.
APPLICATION_ID = 0x77616B65


# The runs table as schema 1 made it, and as schema 2 rebuilds it: run_uuid added, no longer unique on (folder, started_utc).
_RUNS_V1_BODY = """\
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
            conditions_json TEXT,              -- summary.json conditions, when present"""
_RUNS = """
        CREATE TABLE %s (
            id              INTEGER PRIMARY KEY,%s
""" + _RUNS_V1_BODY + """
            summary_json    TEXT NOT NULL%s    -- the whole summary.json, canonical JSON%s
        )
        """
_RUNS_V1 = _RUNS % ("runs", "", ",", "\n            UNIQUE (folder, started_utc)")
_RUNS_V2 = _RUNS % ("runs_v2", "\n            run_uuid        TEXT UNIQUE,       -- summary.json run_id (NULL: a bundle older than run ids)", "", "")
_RUNS_V1_COLUMNS = ", ".join(["id"] + [line.split()[0] for line in _RUNS_V1_BODY.splitlines()] + ["summary_json"])


def _migrate_0_to_1(conn: sqlite3.Connection) -> None:
    # PRAGMA takes no parameters; APPLICATION_ID is our own integer.
    conn.execute("PRAGMA application_id = %d" % APPLICATION_ID)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(_RUNS_V1)
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


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    """Add ``runs.run_uuid`` and drop the UNIQUE (folder, started_utc) key.

    SQLite cannot drop a constraint, so ``runs`` is rebuilt (its rows and ids kept) the way SQLite's documentation
    describes: create, copy, drop, rename.  Foreign keys are off on a connection being migrated (they are switched on
    after), so dropping the old table deletes no arm_results.
    """
    if conn.execute("PRAGMA foreign_keys").fetchone()[0]:
        raise sqlite3.OperationalError("foreign keys are on; cannot rebuild runs safely")
    conn.execute(_RUNS_V2)
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
    """Add the conditions key, the CPU count, machine id and import provenance to ``runs``, filled in for its rows."""
    for name, kind in _RUNS_V3_COLUMNS:
        conn.execute("ALTER TABLE runs ADD COLUMN %s %s" % (name, kind))
    _refill(conn, ("conditions_key", "cpu_count", "machine_id"))
    conn.execute("CREATE INDEX runs_by_host ON runs (hostname, started_utc)")
    conn.execute("CREATE INDEX runs_by_conditions ON runs (conditions_key)")


def _refill(conn: sqlite3.Connection, columns: Sequence[str]) -> None:
    """Derive ``columns`` (fields of :class:`StoredFacts`, named by each step: a later schema's column does not exist
    yet in an earlier step) afresh for every row from the summary.json it keeps.  Nothing is lost, and it can be
    repeated; a stored summary edited by hand into something that is not a JSON object keeps what its row had."""
    assignments = ", ".join("%s = ?" % name for name in columns)
    for run_id, text in conn.execute("SELECT id, summary_json FROM runs").fetchall():
        try:
            summary = json.loads(text)
        except (TypeError, ValueError):
            continue
        if isinstance(summary, dict):
            facts = StoredFacts.of(Bundle(source="", folder="", summary=summary))
            conn.execute("UPDATE runs SET %s WHERE id = ?" % assignments, tuple(getattr(facts, name) for name in columns) + (run_id,))


def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    """Schema 4's conditions key gains the repetitions and the interpreter build: recompute it, and only it."""
    _refill(conn, ("conditions_key",))


# MIGRATIONS[v] turns a database of version v into version v + 1.
MIGRATIONS: List[Callable[[sqlite3.Connection], None]] = [_migrate_0_to_1, _migrate_1_to_2, _migrate_2_to_3, _migrate_3_to_4]
