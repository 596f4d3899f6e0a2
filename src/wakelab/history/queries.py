"""Reading the history: the runs recorded, one arm across them, and the arms it knows.

Every query reads only (a missing database is an empty history) and returns typed, frozen records; ``wakelab history``
lays them out, ``wakelab compare`` reads an arm's earlier runs.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar

from wakelab.evidence.model import Interpreter
from wakelab.formatting import counted
from wakelab.history.conditions import ConditionsKey
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

    def where(self) -> Tuple[str, List[object]]:
        equal = [(column, value) for column, value in (("lab_id", self.lab), ("hostname", self.host)) if value is not None]
        clauses = ["runs.%s = ?" % column for column, _ in equal]
        params: List[object] = [value for _, value in equal]
        if self.python is not None:
            version = self.python[:-1] if self.python.endswith("t") else self.python
            if version != self.python:  # python3.13t: the free-threaded build
                clauses.append("runs.free_threaded = 1")
            clauses.append("(runs.python_version = ? OR substr(runs.python_version, 1, ?) = ?)")
            params += [version, len(version) + 1, version + "."]
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def interpreter_label(implementation: Optional[str], version: Optional[str], free_threaded: Optional[bool],
                      gil_enabled: Optional[bool]) -> str:
    """The interpreter as every reader names it (:attr:`wakelab.evidence.model.Interpreter.label`), from history's columns."""
    if not implementation and not version:
        return "?"
    return Interpreter(implementation or "", version or "", free_threaded_build=bool(free_threaded),
                       gil_enabled=gil_enabled).label.strip()


@dataclasses.dataclass(frozen=True)
class RunFacts:
    """What a run record and an arm point both say about the run: when, where, which lab, its interpreter,
    its machine and its conditions."""

    started_utc: str
    lab_id: Optional[str]
    folder: str
    implementation: Optional[str]
    python_version: Optional[str]
    free_threaded: Optional[bool]
    gil_enabled: Optional[bool]
    hostname: Optional[str]
    cpu_model: Optional[str]
    cpu_count: Optional[int]
    kernel: Optional[str]
    architecture: Optional[str]
    machine_id: Optional[str]
    conditions: Optional[Any]  # summary.json conditions as stored (its text, when edited by hand into something else)
    figure_conditions: Optional[ConditionsKey]  # None: none recorded
    imported_from: Optional[str]  # provenance of a run from 'wakelab history import' (None: measured here)

    @property
    def interpreter_label(self) -> str:
        """``CPython 3.13.5 free-threaded (GIL off)``; ``?`` when the run does not say."""
        return interpreter_label(self.implementation, self.python_version, self.free_threaded, self.gil_enabled)

    @property
    def machine(self) -> str:
        """``AMD EPYC, 2 CPUs, kernel 6.8.0, x86_64``: what the run's bundle says about its machine."""
        count = self.cpu_count
        cpus = counted(count, "CPU") if isinstance(count, int) else None
        kernel = "kernel " + self.kernel if self.kernel else None
        return ", ".join(part for part in (self.cpu_model or "unknown CPU", cpus, kernel, self.architecture) if part)

    @property
    def host(self) -> str:
        return self.hostname or "(no hostname)"


class _Flat:
    def to_dict(self) -> Dict[str, object]:
        """The record as ``wakelab history --json`` writes it: one flat object (an arm's place in its run left out)."""
        out: Dict[str, object] = {}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            if isinstance(value, (RunFacts, ArmRow)):
                out.update((k, v) for k, v in _Flat.to_dict(value).items() if k != "position")  # type: ignore[arg-type]
            else:
                out[field.name] = value.to_dict() if isinstance(value, ConditionsKey) else value
        return out


@dataclasses.dataclass(frozen=True)
class RunRecord(_Flat):
    """One recorded run, as ``wakelab history`` lists it."""

    facts: RunFacts
    id: int
    recorded_utc: str
    complete: Optional[bool]
    interrupted: Optional[bool]  # ended by Ctrl-C or a signal (what was measured is kept)
    run_uuid: Optional[str]  # summary.json run_id (None: recorded from an older bundle)
    arms: int
    arms_ok: int
    imported_utc: Optional[str]
    imported_by: Optional[str]


@dataclasses.dataclass(frozen=True)
class ArmPoint(_Flat):
    """One arm's figures in one recorded run (ns; ops/s for rate arms)."""

    facts: RunFacts
    run_id: int
    figures: ArmRow


def _bool(value: object) -> Optional[bool]:
    return None if value is None else bool(value)


def _loads(text: Optional[str]) -> Optional[Any]:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:  # edited by hand: show the text rather than fail the listing
        return text


def _as_stored(value: R) -> R:
    return value


def _key(text: Optional[str]) -> Optional[ConditionsKey]:
    """A stored conditions key, typed (one edited by hand into something that is not an object: None)."""
    value = _loads(text)
    return ConditionsKey.from_json(value) if isinstance(value, dict) else None


# How a record's field is read from its columns: the SQL (default ``<table>.<field>``) and what
# turns the stored value into the field's (default: as stored).
_SQL = {
    "id": "runs.id", "run_id": "runs.id", "conditions": "runs.conditions_json", "figure_conditions": "runs.conditions_key",
    "arms": "(SELECT count(*) FROM arm_results a WHERE a.run_id = runs.id)",
    "arms_ok": "(SELECT count(*) FROM arm_results a WHERE a.run_id = runs.id AND a.status = 'ok')",
}
_READ: Mapping[str, Callable[[Any], Any]] = {
    "complete": _bool, "interrupted": _bool, "free_threaded": _bool, "gil_enabled": _bool,
    "conditions": _loads, "figure_conditions": _key,
}
# The records a record holds whole (by their annotation), and the table of their columns.
_PARTS: Mapping[object, Tuple[type, str]] = {"RunFacts": (RunFacts, "runs"), "ArmRow": (ArmRow, "arm_results")}


def _select(record: Type[R], table: str = "runs") -> Tuple[List[str], Callable[[Iterator[Any]], R]]:
    """The columns of ``record``'s fields (those of a record it holds: theirs), and the function that
    reads a record off a result row's values."""
    parts: List[Tuple[str, Any]] = [(field.name, _select(*_PARTS[field.type]) if field.type in _PARTS else None)
             for field in dataclasses.fields(record)]  # type: ignore[arg-type]
    sql = [c for name, part in parts for c in (part[0] if part else [_SQL.get(name, "%s.%s" % (table, name))])]

    def build(values: Iterator[Any]) -> R:
        return record(**{name: part[1](values) if part else _READ.get(name, _as_stored)(next(values)) for name, part in parts})

    return sql, build


def _query(record: Type[R], source: str, order: str, filters: HistoryFilter, db_path: Optional[str], timeout_s: float,
           *also: Tuple[str, object]) -> List[R]:
    """Records of ``record`` from ``source`` (tables) that pass ``filters`` and the clauses ``also`` (SQL, value)."""
    columns, build = _select(record)
    where, params = filters.where()
    for clause, value in also:
        where, params = (where + " AND " if where else " WHERE ") + clause, params + [value]
    sql = "SELECT %s FROM %s%s ORDER BY %s" % (", ".join(columns), source, where, order)
    sql += "" if filters.limit is None else " LIMIT %d" % int(filters.limit)
    return read(db_path, timeout_s, lambda conn: [build(iter(row)) for row in conn.execute(sql, params)])


@dataclasses.dataclass(frozen=True)
class RunGroup:
    """The runs of one host or machine in a listing: ``indices`` into it, in its order."""

    name: str
    indices: Tuple[int, ...]
    hosts: Tuple[str, ...]
    machines: Tuple[str, ...]


def group_runs(runs: Sequence[RunFacts], by: str) -> List[RunGroup]:
    """``runs`` by host (hostname) or by machine (:attr:`RunFacts.machine`: for CI runners, whose hostnames
    change every job), sorted by name."""
    members: Dict[str, List[int]] = {}
    for index, run in enumerate(runs):
        members.setdefault(run.host if by == "host" else run.machine, []).append(index)
    return [RunGroup(name, tuple(ix), tuple(sorted({runs[i].host for i in ix})), tuple(sorted({runs[i].machine for i in ix})))
            for name, ix in sorted(members.items())]


@dataclasses.dataclass(frozen=True)
class Series:
    """The runs (ids) of one arm's trend under one set of conditions."""

    conditions: Optional[ConditionsKey]
    runs: Tuple[int, ...]

    def to_dict(self) -> Dict[str, object]:
        return {"conditions": None if self.conditions is None else self.conditions.to_dict(), "runs": list(self.runs)}


def trend_series(points: Sequence[ArmPoint]) -> List[Series]:
    """The points cut into series, one per conditions key, oldest first.

    A trend is read along one series: two runs share one only when every recorded condition that changes a figure
    (placement, load, loop, settle, repetitions, the interpreter build ...) is the same, so a same-CPU and a split run
    never do.  Points without a key (none recorded) are a series of their own each: unknown is not the same as
    anything.
    """
    series: Dict[object, Tuple[Optional[ConditionsKey], List[int]]] = {}
    for index, point in enumerate(points):
        key = point.facts.figure_conditions
        text = json.dumps(key.to_dict(), sort_keys=True) if key is not None and key.recorded else index  # keyless: its own
        series.setdefault(text, (key, []))[1].append(point.run_id)
    return [Series(key, tuple(runs)) for key, runs in series.values()]


def list_runs(db_path: Optional[str] = None, filters: HistoryFilter = HistoryFilter(), *,
              timeout_s: float = BUSY_TIMEOUT_S) -> List[RunRecord]:
    """Recorded runs, newest first (by start time).  A missing database is an empty history."""
    return _query(RunRecord, "runs", "runs.started_utc DESC, runs.id DESC", filters, db_path, timeout_s)


def arm_trend(arm: str, db_path: Optional[str] = None, filters: HistoryFilter = HistoryFilter(), *,
              timeout_s: float = BUSY_TIMEOUT_S) -> List[ArmPoint]:
    """One arm's figures across recorded runs, oldest first; ``limit`` keeps the newest runs."""
    return _query(ArmPoint, "arm_results JOIN runs ON runs.id = arm_results.run_id",
                  "runs.started_utc DESC, runs.id DESC, arm_results.position DESC", filters, db_path, timeout_s,
                  ("arm_results.arm = ?", arm))[::-1]


def recorded_arms(db_path: Optional[str] = None, *, timeout_s: float = BUSY_TIMEOUT_S) -> List[str]:
    """Every arm name that appears in the history, sorted."""
    return read(db_path, timeout_s, lambda conn: [r[0] for r in conn.execute("SELECT DISTINCT arm FROM arm_results ORDER BY arm")])

