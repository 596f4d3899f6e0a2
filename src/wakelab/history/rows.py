"""What one run becomes in the history: a row of ``runs`` and a row of ``arm_results`` per arm, from the typed
evidence model.  Pure: no SQLite here (:mod:`wakelab.history.store` writes the rows).

A few facts are kept as the summary records them: the parameters and conditions whole, and the interpreter's
implementation, version and build kind, which the model reads with a display default ("Python ?", not free-threaded)
where the evidence does not say (:meth:`~wakelab.evidence.model.Interpreter.as_recorded`); the history keeps NULL
there.  An arm's text field the evidence leaves empty is NULL, as is a figure it does not hold.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Mapping, Optional, Tuple

from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.history.conditions import canonical, conditions_key


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _integer(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _flag(value: Any) -> Optional[int]:
    return int(value) if isinstance(value, bool) else None


def _json(value: Any) -> Optional[str]:
    return canonical(value) if value is not None else None


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a run recorded by ``wakelab history import`` came from: the path given (made absolute, symlinks kept, as
    the user named it), when, and the hostname of the machine that imported it (the bundle's own ``machine`` block
    says which measured it)."""

    imported_from: str
    imported_utc: str
    imported_by: Optional[str]


@dataclasses.dataclass(frozen=True)
class StoredFacts:
    """The columns of ``runs`` that schema 3 added from the summary itself (a migration fills them in
    from each row's stored summary.json)."""

    conditions_key: Optional[str]  # figure_conditions(summary), canonical JSON
    cpu_count: Optional[int]
    machine_id: Optional[str]  # summary.json machine.machine_id, when the bundle has one

    @classmethod
    def of(cls, bundle: Bundle) -> "StoredFacts":
        return cls(conditions_key(bundle), _integer(bundle.machine.cpu_count), _text(bundle.machine.machine_id))


@dataclasses.dataclass(frozen=True)
class RunRow:
    """One run as the ``runs`` table holds it, a field per column (see :mod:`wakelab.history.schema`)."""

    run_uuid: Optional[str]  # summary.json run_id (None: a bundle older than run ids)
    recorded_utc: str
    started_utc: str
    finished_utc: Optional[str]
    lab_id: Optional[str]
    folder: str  # the bundle's folder, absolute, symlinks resolved
    complete: int  # 0/1
    interrupted: int
    tool_version: Optional[str]
    implementation: Optional[str]
    python_version: Optional[str]
    build: Optional[str]
    executable: Optional[str]
    free_threaded: Optional[int]
    gil_enabled: Optional[int]
    hostname: Optional[str]
    cpu_model: Optional[str]
    kernel: Optional[str]
    architecture: Optional[str]
    note: Optional[str]
    parameters_json: Optional[str]
    conditions_json: Optional[str]
    summary_json: str  # the whole summary.json, canonical JSON
    conditions_key: Optional[str]
    cpu_count: Optional[int]
    machine_id: Optional[str]
    imported_utc: Optional[str] = None
    imported_from: Optional[str] = None
    imported_by: Optional[str] = None

    @classmethod
    def from_bundle(cls, bundle: Bundle, provenance: Optional[Provenance] = None) -> "RunRow":
        """The row of ``bundle`` (its ``folder`` as the history keeps it); raises ValueError or TypeError
        for a summary that is not plain JSON."""
        summary, interpreter, machine = bundle.summary, bundle.interpreter, bundle.machine
        return cls(
            run_uuid=bundle.run_id, recorded_utc=utc_now(), started_utc=bundle.started_utc, finished_utc=_text(bundle.finished_utc),
            lab_id=_text(bundle.lab.id), folder=bundle.folder, complete=int(bundle.complete), interrupted=int(bundle.interrupted),
            tool_version=_text(bundle.tool_version),
            # As recorded, not as the model names an interpreter that does not say ("Python ?", not free-threaded).
            implementation=_text(interpreter.as_recorded("implementation")), python_version=_text(interpreter.as_recorded("version")),
            build=_text(interpreter.build), executable=_text(interpreter.executable),
            free_threaded=_flag(interpreter.as_recorded("free_threaded_build")), gil_enabled=_flag(interpreter.gil_enabled),
            hostname=_text(machine.hostname), cpu_model=_text(machine.cpu_model), kernel=_text(machine.kernel),
            architecture=_text(machine.architecture), note=_text(bundle.note), parameters_json=_json(summary.get("parameters")),
            conditions_json=_json(summary.get("conditions")), summary_json=canonical(summary), **dataclasses.asdict(StoredFacts.of(bundle)),
            **(dataclasses.asdict(provenance) if provenance else {}),
        )


# The figures of a latency arm that arm_results keeps (LatencyFigures' names).
_LATENCY_COLUMNS = ("n", "lost", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns", "mean_ns")


@dataclasses.dataclass(frozen=True)
class ArmRow:
    """One arm of one run as ``arm_results`` holds it (ns; ops/s for a rate arm; None: not in the evidence)."""

    position: int  # the arm's place in the run
    arm: str
    family: Optional[str]
    kind: Optional[str]
    waiter: Optional[str]
    scope: Optional[str]
    n: Optional[int]
    lost: Optional[int]
    p50_ns: Optional[float]
    p90_ns: Optional[float]
    p99_ns: Optional[float]
    p99_9_ns: Optional[float]
    max_ns: Optional[float]
    mean_ns: Optional[float]
    ops_per_s: Optional[float]
    status: Optional[str]

    @classmethod
    def of_bundle(cls, bundle: Bundle) -> Tuple["ArmRow", ...]:
        arms = [(position, ArmRecord.from_dict(entry)) for position, entry in enumerate(bundle.arm_entries())
                if isinstance(entry, Mapping) and isinstance(entry.get("name"), str)]
        return tuple(cls(position=position, arm=arm.name, family=arm.family or None, kind=arm.kind or None, waiter=arm.waiter or None,
                         scope=arm.scope or None, ops_per_s=getattr(arm.rate, "ops_per_s", None), status=arm.status or None,
                         **{name: getattr(arm.latency, name, None) for name in _LATENCY_COLUMNS}) for position, arm in arms)

