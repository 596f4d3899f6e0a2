"""One arm of a run as every reader sees it (:class:`ArmRecord`), its workers, where a user-defined arm came from,
and its samples file as stored (:class:`~wakelab.evidence.model.Bundle` checks it against the summary)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from wakelab.evidence.figures import (
    LATENCY, RATE, CpuSplit, LatencyFigures, MedianSpread, RateFigures, RepetitionSpread, TraceFigures
)
from wakelab.evidence.bundle import Record, json_field, json_meta, read_as


@dataclasses.dataclass(frozen=True)
class ArmOrigin(Record):
    """Where a user-defined arm came from: an arm file (its path and sha256) or an entry point (and its distribution)."""

    source: Any = None
    path: Any = None
    sha256: Any = None
    entry_point: Any = None
    distribution: Any = None
    version: Any = None

    @property
    def from_file(self) -> bool:
        return self.source == "file"


@dataclasses.dataclass(frozen=True)
class WorkerRecord(Record):
    """One worker process's part of an arm (``workers``), values as recorded (``in_evidence`` False: an entry that is not a
    record at all).  The runner writes these too (:func:`wakelab.harness.summary.worker_record`)."""

    n: Any = None
    rounds: Any = None
    pid: Any = None
    lost: Any = None
    p50_ns: Any = None
    repetition: Any = None
    applied: Mapping[str, object] = dataclasses.field(default_factory=dict)
    max_ns: Any = None
    ops_per_s: Any = None
    warmup_discarded: Any = None  # a soak's chunk

    @property
    def recorded(self) -> bool:  # analysis/guidance/noise.py's name for in_evidence
        return self.in_evidence

    def to_dict(self) -> Dict[str, object]:
        """A latency worker's n, lost, p50 and max, or a rate worker's rounds and ops/s (its ``n`` None); a soak chunk's
        warm-up and a repetition only where recorded."""
        figures = ("n", "lost", "p50_ns", "max_ns") if self.n is not None else ("rounds", "ops_per_s")
        out: Dict[str, object] = {"pid": self.pid, "applied": dict(self.applied)}
        out.update((key, getattr(self, key)) for key in figures)
        out.update((key, getattr(self, key)) for key in ("warmup_discarded", "repetition") if getattr(self, key) is not None)
        return out


def _infos(info: object) -> Tuple[Mapping[str, object], ...]:
    if not isinstance(info, Mapping):
        return ()
    workers = info.get("workers")
    return tuple(w for w in workers if isinstance(w, Mapping)) if isinstance(workers, list) else (info,)


def _components(value: object) -> Tuple[Tuple[str, LatencyFigures], ...]:
    return tuple((str(k), LatencyFigures.from_dict(v)) for k, v in sorted(value.items()) if isinstance(v, Mapping)) \
        if isinstance(value, Mapping) else ()


@dataclasses.dataclass(frozen=True)
class ArmRecord(Record):
    """One arm of a run: its identity, how it ended, and its figures."""

    name: str = dataclasses.field(metadata=json_meta(read=str))
    family: str
    kind: str
    mechanism: str
    waiter: str
    scope: str
    t0: str
    t1: str
    native: Optional[str]
    native_match: Optional[str]
    driver: str
    status: str
    reason: Optional[str]
    requested: Optional[int]
    latency: Optional[LatencyFigures]
    rate: Optional[RateFigures]
    samples_file: Optional[str]
    entry: Mapping[str, object] = dataclasses.field(metadata=json_meta(""), repr=False, compare=False)
    #: Each timed component of a wake (the C floor's .read, ...), by name, sorted.
    components: Tuple[Tuple[str, LatencyFigures], ...] = json_field(read=_components, default=())
    repetitions: Optional[RepetitionSpread] = None
    cpu_split: Optional[CpuSplit] = None
    user_defined: bool = False
    origin: Optional[ArmOrigin] = None
    #: The arm's own random part of the settle, where it needs more than the run's (µs).
    settle_jitter_us: Any = None
    #: The driver's own free-form ``info``: each worker process's (under ``workers``) where there were several, else the one.
    infos: Tuple[Mapping[str, object], ...] = json_field("info", _infos, default=(), repr=False)
    #: In worker order (None: the arm records no list of workers).
    workers: Optional[Tuple[WorkerRecord, ...]] = json_field(
        read=lambda value: tuple(WorkerRecord.from_dict(w) for w in value) if isinstance(value, list) else None, default=None)
    warmup_discarded: Any = None
    wall_s: Any = None  # every worker and repetition
    spread: Optional[MedianSpread] = None

    @functools.cached_property
    def trace(self) -> Optional[TraceFigures]:
        """Where the arm's time goes (None: not traced), read when asked: a reader that never shows it never fails on it."""
        return read_as(Optional[TraceFigures], self.entry.get("trace"))

    @property
    def is_latency(self) -> bool:
        return self.kind == LATENCY

    @property
    def is_rate(self) -> bool:
        return self.kind == RATE

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def took_waiter_policy(self) -> bool:
        """A driver recorded ``waiter_sched``: the waiter ran under the requested scheduling policy."""
        return any(one.get("waiter_sched") for one in self.infos)

    @property
    def p50_ns(self) -> Optional[float]:
        return self.latency.p50_ns if self.latency is not None else None

    @property
    def measured(self) -> bool:
        """True when the arm ended ``ok`` with figures of its kind."""
        return self.status == "ok" and (self.latency is not None if self.kind == LATENCY else self.rate is not None)


@dataclasses.dataclass(frozen=True)
class ArmSamples:
    """The raw samples of one latency arm, checked against the summary: usually all ``total`` counted wakes.  A soak past
    its raw-sample cap keeps those of its first whole chunks (``kept < total``); its ``histogram`` (the samples file's, as
    stored: read it with :meth:`wakelab.analysis.hdr.LogLinearHistogram.from_dict`) then holds every wake."""

    samples_ns: Tuple[int, ...]
    components_ns: Mapping[str, Tuple[int, ...]]
    total: int
    histogram: Optional[Mapping[str, object]] = dataclasses.field(default=None, repr=False)

    @property
    def kept(self) -> int:
        return len(self.samples_ns)

    @property
    def every_wake(self) -> bool:
        return self.kept == self.total


@dataclasses.dataclass(frozen=True)
class SamplesFile(Record):
    """An arm's samples file (``samples/<arm>.json``) as stored, each series of its kind checked to be whole ns >= 0 but
    not against the summary (:meth:`Bundle.kept_latency_samples` does that)."""

    kind: Any
    samples_ns: Sequence[int] = json_field(read=lambda value: value or (), default=())
    components_ns: Mapping[str, Sequence[int]] = json_field(read=lambda value: dict(value or {}), default_factory=dict)
    round_ns: Sequence[int] = json_field(read=lambda value: value or (), default=())
    baseline_round_ns: Sequence[int] = json_field(read=lambda value: value or (), default=())
    n_per_round: Optional[int] = json_field(read=lambda value: value if isinstance(value, int) and not isinstance(value, bool) else None,
                                            default=None)
    #: A soak's log-linear histogram of every wake, as stored.
    histogram: Optional[Mapping[str, object]] = dataclasses.field(default=None, repr=False)
    unit: str = json_field(read=str, default="ns")
    #: The traced pass's part (``wakelab run --trace``), as stored: :func:`wakelab.analysis.components.traced_series` checks it.
    traced: object = dataclasses.field(default=None, repr=False)

