"""One arm of a run as every reader sees it (:class:`ArmRecord`), its workers, where a user-defined arm came from,
and its samples file as stored.

Part of the typed evidence model (:mod:`wakelab.evidence.model` re-exports every name; :class:`Bundle` hands the records
out and checks the samples against the summary).  Stdlib only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from wakelab.evidence.figures import (
    LATENCY, RATE, CpuSplit, LatencyFigures, MedianSpread, RateFigures, RepetitionSpread, TraceFigures
)
from wakelab.evidence.bundle import Record, json_field, json_meta


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
    """One worker process's part of an arm (``workers``): its wakes or rounds, pid, lost wakes, what it applied, its p50.

    Values as recorded; ``recorded`` is False for an entry that is not a record at all. The runner builds these too
    (:func:`wakelab.harness.summary.worker_record`) and writes them with :meth:`to_dict`: writer and loader share the
    record.
    """

    recorded: bool = json_field("", lambda value: isinstance(value, Mapping), default=True)
    n: Any = None
    rounds: Any = None
    pid: Any = None
    lost: Any = None
    p50_ns: Any = None
    repetition: Any = None
    applied: Mapping[str, object] = dataclasses.field(default_factory=dict)
    max_ns: Any = None
    ops_per_s: Any = None
    #: A soak's chunk: the warm-up wakes its worker discarded.
    warmup_discarded: Any = None

    def to_dict(self) -> Dict[str, object]:
        """The record as summary.json stores it: a latency worker's n, lost, p50 and max, or a rate worker's rounds
        and ops/s (the one whose ``n`` is None); a soak chunk's warm-up and a repetition only where recorded."""
        out: Dict[str, object] = {"pid": self.pid, "applied": dict(self.applied)}
        if self.n is not None:
            out.update(n=self.n, lost=self.lost, p50_ns=self.p50_ns, max_ns=self.max_ns)
        else:
            out.update(rounds=self.rounds, ops_per_s=self.ops_per_s)
        if self.warmup_discarded is not None:
            out["warmup_discarded"] = self.warmup_discarded
        if self.repetition is not None:
            out["repetition"] = self.repetition
        return out


def _took_waiter_policy(doc: object) -> bool:
    """Whether an arm's waiter ran under the requested policy (a driver recorded ``waiter_sched``, in a worker's info)."""
    info = doc.get("info") or {} if isinstance(doc, Mapping) else None
    if not isinstance(info, Mapping):
        return False
    workers = info.get("workers")
    infos: Sequence[object] = workers if isinstance(workers, list) else [info]
    return any(isinstance(one, Mapping) and one.get("waiter_sched") for one in infos)


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
    #: Each timed component of a wake (``components``: the C floor's .read, ...), by name, sorted.
    components: Tuple[Tuple[str, LatencyFigures], ...] = json_field(read=_components, default=())
    repetitions: Optional[RepetitionSpread] = None
    cpu_split: Optional[CpuSplit] = None
    user_defined: bool = False
    origin: Optional[ArmOrigin] = None
    #: The arm's own random part of the settle, where it needs more than the run's (µs).
    settle_jitter_us: Any = None
    #: The waiter ran under the requested scheduling policy (its driver recorded ``waiter_sched``).
    took_waiter_policy: bool = json_field("", _took_waiter_policy, default=False)
    #: Each worker process's part, in worker order (None: the arm records no list of workers).
    workers: Optional[Tuple[WorkerRecord, ...]] = json_field(
        read=lambda value: tuple(WorkerRecord.from_dict(w) for w in value) if isinstance(value, list) else None, default=None)
    warmup_discarded: Any = None
    #: The arm's wall time, every worker and repetition (s).
    wall_s: Any = None

    @property
    def trace(self) -> Optional[TraceFigures]:
        """Where the arm's time goes, in a run that asked for tracing (None otherwise)."""
        return TraceFigures.from_section(self.entry.get("trace"))

    @property
    def spread(self) -> Optional[MedianSpread]:
        """How far apart the arm's workers' (or repetitions') own medians are (None: not recorded)."""
        return MedianSpread.from_section(self.entry.get("spread"))

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
    def p50_ns(self) -> Optional[float]:
        """The latency arm's p50 (None: no latency figures, or too few wakes)."""
        return self.latency.p50_ns if self.latency is not None else None

    @property
    def measured(self) -> bool:
        """True when the arm ended ``ok`` with figures of its kind."""
        return self.status == "ok" and (self.latency is not None if self.kind == LATENCY else self.rate is not None)


@dataclasses.dataclass(frozen=True)
class ArmSamples:
    """The raw samples of one latency arm, as ``samples/<arm>.json`` holds them (checked against the summary).

    Usually every counted wake (``kept == total``).  A soak past its raw-sample cap keeps only the raw samples of its
    first whole chunks (``kept < total``); its ``histogram`` (the samples file's log-linear histogram, as stored: read
    it with :meth:`wakelab.analysis.hdr.LogLinearHistogram.from_dict`) then holds every wake.  ``histogram`` is None for
    an arm whose samples file has none.
    """

    samples_ns: Tuple[int, ...]
    components_ns: Mapping[str, Tuple[int, ...]]
    counted: Optional[int] = None  # the arm's counted wakes (summary.json's n); None: len(samples_ns)
    histogram: Optional[Mapping[str, object]] = dataclasses.field(default=None, repr=False)

    @property
    def kept(self) -> int:
        """Raw samples held."""
        return len(self.samples_ns)

    @property
    def total(self) -> int:
        """The arm's counted wakes: summary.json's n (the raw samples held, when not given)."""
        return self.kept if self.counted is None else self.counted

    @property
    def every_wake(self) -> bool:
        """True when the raw samples are every counted wake (not a soak past its raw-sample cap)."""
        return self.kept == self.total


@dataclasses.dataclass(frozen=True)
class SamplesFile(Record):
    """An arm's samples file (``samples/<arm>.json``) as stored: its kind and its series, in ns.

    Read by :meth:`Bundle.samples_file`, which has checked each series of the file's kind to be a list of whole
    non-negative ns; not checked against the summary (see :meth:`Bundle.kept_latency_samples` for that).  A latency file
    has ``samples_ns`` and ``components_ns``; a rate file ``round_ns``, ``baseline_round_ns`` and ``n_per_round`` (None
    unless a whole number).
    """

    kind: Any
    samples_ns: Sequence[int] = json_field(read=lambda value: value or (), default=())
    components_ns: Mapping[str, Sequence[int]] = json_field(read=lambda value: dict(value or {}), default_factory=dict)
    round_ns: Sequence[int] = json_field(read=lambda value: value or (), default=())
    baseline_round_ns: Sequence[int] = json_field(read=lambda value: value or (), default=())
    n_per_round: Optional[int] = json_field(read=lambda value: value if isinstance(value, int) and not isinstance(value, bool) else None,
                                            default=None)
    #: A soak's log-linear histogram of every wake, as stored (None: the file has none).
    histogram: Optional[Mapping[str, object]] = dataclasses.field(default=None, repr=False)
    unit: str = json_field(read=str, default="ns")
    #: The traced pass's part (``wakelab run --trace``), as stored: :func:`wakelab.analysis.components.traced_series` checks it.
    traced: object = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass(frozen=True)
class RawKept:
    """How many of an arm's counted wakes its samples file keeps as raw samples, and in how many worker units.

    ``kept == total`` for every ordinary arm.  A soak past its raw-sample cap keeps ``kept < total``: the first
    ``units`` whole chunks, one worker record each in the arm's ``workers``, checked to line up (see
    :meth:`Bundle.raw_kept`).
    """

    kept: int
    total: int
    units: int

    @property
    def every_wake(self) -> bool:
        return self.kept == self.total

    def to_dict(self) -> Dict[str, int]:
        return {"kept": self.kept, "of": self.total, "units": self.units}


__all__ = ["ArmOrigin", "ArmRecord", "ArmSamples", "RawKept", "SamplesFile", "WorkerRecord"]
