"""Reading the history: the runs recorded, one arm across them, and the arms it knows.

Every query reads only (a missing database is an empty history) and returns typed, frozen
records; ``wakelab history`` lays them out, ``wakelab compare`` reads an arm's earlier runs.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar

from wakelab.evidence.model import Interpreter
from wakelab.history.rows import ArmRow
from wakelab.history.store import BUSY_TIMEOUT_S, read

R = TypeVar("R")


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

    def limited(self, sql: str) -> str:
        return sql if self.limit is None else sql + " LIMIT %d" % int(self.limit)


def interpreter_label(implementation: Optional[str], version: Optional[str], free_threaded: Optional[bool],
                      gil_enabled: Optional[bool]) -> str:
    """The interpreter as every reader names it (:attr:`wakelab.evidence.model.Interpreter.label`), from history's columns."""
    if not implementation and not version:
        return "?"
    return Interpreter(implementation or "", version or "", free_threaded_build=bool(free_threaded),
                       gil_enabled=gil_enabled).label.strip()


class RunFacts:
    """What a run record and an arm point both say about the run: when, which lab, its interpreter and its machine."""

    started_utc: str
    lab_id: Optional[str]
    implementation: Optional[str]
    python_version: Optional[str]
    free_threaded: Optional[bool]
    gil_enabled: Optional[bool]
    hostname: Optional[str]
    cpu_model: Optional[str]
    cpu_count: Optional[int]
    kernel: Optional[str]
    architecture: Optional[str]

    @property
    def interpreter_label(self) -> str:
        """``CPython 3.13.5 free-threaded (GIL off)``; ``?`` when the run does not say."""
        return interpreter_label(self.implementation, self.python_version, self.free_threaded, self.gil_enabled)

    def to_dict(self) -> Dict[str, Any]:
        """The record as ``wakelab history --json`` writes it."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]


@dataclasses.dataclass(frozen=True)
class RunRecord(RunFacts):
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


@dataclasses.dataclass(frozen=True)
class ArmPoint(RunFacts):
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


# How a record's field is read from its columns: the SQL (default ``runs.<field>``) and what
# turns the stored value into the field's (default: as stored).
_SQL = {
    "id": "runs.id", "run_id": "runs.id", "conditions": "runs.conditions_json", "figure_conditions": "runs.conditions_key",
    "arms": "(SELECT count(*) FROM arm_results a WHERE a.run_id = runs.id)",
    "arms_ok": "(SELECT count(*) FROM arm_results a WHERE a.run_id = runs.id AND a.status = 'ok')",
}
_ARM_COLUMNS = frozenset(field.name for field in dataclasses.fields(ArmRow))
_READ: Mapping[str, Callable[[Any], Any]] = {
    "complete": _bool, "interrupted": _bool, "free_threaded": _bool, "gil_enabled": _bool,
    "conditions": _loads, "figure_conditions": _key,
}


def _select(record: Type[R]) -> Tuple[str, Callable[[Tuple[Any, ...]], R]]:
    """``SELECT`` the columns of ``record``'s fields, and the function that turns a result row into a record."""
    names = [field.name for field in dataclasses.fields(record)]  # type: ignore[arg-type]
    sql = ", ".join(_SQL.get(name, ("arm_results.%s" if name in _ARM_COLUMNS else "runs.%s") % name) for name in names)

    def build(row: Tuple[Any, ...]) -> R:
        return record(**{name: _READ[name](value) if name in _READ else value for name, value in zip(names, row)})

    return "SELECT " + sql, build


def list_runs(
    db_path: Optional[str] = None, filters: HistoryFilter = HistoryFilter(), *, timeout_s: float = BUSY_TIMEOUT_S
) -> List[RunRecord]:
    """Recorded runs, newest first (by start time).  A missing database is an empty history."""
    where, params = filters.where()
    select, build = _select(RunRecord)
    sql = filters.limited("%s FROM runs%s ORDER BY runs.started_utc DESC, runs.id DESC" % (select, where))

    def query(conn: sqlite3.Connection) -> List[RunRecord]:
        return [build(row) for row in conn.execute(sql, params)]

    return read(db_path, timeout_s, query)


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
    select, build = _select(ArmPoint)
    sql = filters.limited(
        "%s FROM arm_results JOIN runs ON runs.id = arm_results.run_id%s "
        "ORDER BY runs.started_utc DESC, runs.id DESC, arm_results.position DESC" % (select, where)
    )

    def query(conn: sqlite3.Connection) -> List[ArmPoint]:
        return [build(row) for row in conn.execute(sql, params + [arm])][::-1]

    return read(db_path, timeout_s, query)


def recorded_arms(db_path: Optional[str] = None, *, timeout_s: float = BUSY_TIMEOUT_S) -> List[str]:
    """Every arm name that appears in the history, sorted."""

    def query(conn: sqlite3.Connection) -> List[str]:
        return [r[0] for r in conn.execute("SELECT DISTINCT arm FROM arm_results ORDER BY arm")]

    return read(db_path, timeout_s, query)


__all__ = ["ArmPoint", "HistoryFilter", "RunFacts", "RunRecord", "arm_trend", "interpreter_label", "list_runs", "recorded_arms"]
