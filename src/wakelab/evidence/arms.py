"""One arm of a run as every reader sees it (:class:`ArmRecord`), its workers, where a user-defined arm came from,
and its samples file as stored.

Part of the typed evidence model (:mod:`wakelab.evidence.model` re-exports every name; :class:`Bundle` hands
the records out and checks the samples against the summary).  Stdlib only.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from wakelab.evidence.figures import (
    LATENCY,
    RATE,
    CpuSplit,
    LatencyFigures,
    MedianSpread,
    RateFigures,
    RepetitionSpread,
    TraceFigures,
    _mapping,
    _opt_int,
)


@dataclasses.dataclass(frozen=True)
class ArmOrigin:
    """Where a user-defined arm came from: an arm file (its path and sha256) or an entry point (and its distribution)."""

    source: Any = None
    path: Any = None
    sha256: Any = None
    entry_point: Any = None
    distribution: Any = None
    version: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> "ArmOrigin":
        d = _mapping(doc)
        return cls(**{f.name: d.get(f.name) for f in dataclasses.fields(cls)})

    @property
    def from_file(self) -> bool:
        return self.source == "file"


@dataclasses.dataclass(frozen=True)
class WorkerRecord:
    """One worker process's part of an arm (``workers``): its wakes or rounds, pid, lost wakes, what it applied, its p50.

    Values as recorded; ``recorded`` is False for an entry that is not a record at all.
    The runner builds these too (:func:`wakelab.harness.summary.worker_record`) and
    writes them with :meth:`to_dict`: writer and loader share the record.
    """

    recorded: bool = True
    n: Any = None
    rounds: Any = None
    pid: Any = None
    lost: Any = None
    p50_ns: Any = None
    repetition: Any = None
    applied: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    max_ns: Any = None
    ops_per_s: Any = None
    #: A soak's chunk: the warm-up wakes its worker discarded.
    warmup_discarded: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> "WorkerRecord":
        if not isinstance(doc, Mapping):
            return cls(recorded=False)
        applied = doc.get("applied")
        return cls(True, doc.get("n"), doc.get("rounds"), doc.get("pid"), doc.get("lost"), doc.get("p50_ns"),
                   doc.get("repetition"), applied if isinstance(applied, Mapping) else {}, doc.get("max_ns"),
                   doc.get("ops_per_s"), doc.get("warmup_discarded"))

    def to_dict(self) -> Dict[str, Any]:
        """The record as summary.json stores it: a latency worker's n, lost, p50 and max, or a rate worker's rounds
        and ops/s (the one whose ``n`` is None); a soak chunk's warm-up and a repetition only where recorded."""
        out: Dict[str, Any] = {"pid": self.pid, "applied": dict(self.applied)}
        if self.n is not None:
            out.update(n=self.n, lost=self.lost, p50_ns=self.p50_ns, max_ns=self.max_ns)
        else:
            out.update(rounds=self.rounds, ops_per_s=self.ops_per_s)
        if self.warmup_discarded is not None:
            out["warmup_discarded"] = self.warmup_discarded
        if self.repetition is not None:
            out["repetition"] = self.repetition
        return out


def _took_waiter_policy(doc: Mapping[str, Any]) -> bool:
    """Whether an arm's waiter ran under the requested policy (a driver recorded ``waiter_sched``, in a worker's info)."""
    info = doc.get("info") or {}
    if not isinstance(info, Mapping):
        return False
    workers = info.get("workers")
    infos: Sequence[Any] = workers if isinstance(workers, list) else [info]
    return any(isinstance(one, Mapping) and one.get("waiter_sched") for one in infos)


@dataclasses.dataclass(frozen=True)
class ArmRecord:
    """One arm of a run: its identity, how it ended, and its figures."""

    name: str
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
    entry: Mapping[str, Any] = dataclasses.field(repr=False, compare=False)
    #: Each timed component of a wake (``components``: the C floor's .read, ...), by name, sorted.
    components: Tuple[Tuple[str, LatencyFigures], ...] = ()
    repetitions: Optional[RepetitionSpread] = None
    cpu_split: Optional[CpuSplit] = None
    user_defined: bool = False
    origin: Optional[ArmOrigin] = None
    #: The arm's own random part of the settle, where it needs more than the run's (µs).
    settle_jitter_us: Any = None
    #: The waiter ran under the requested scheduling policy (its driver recorded ``waiter_sched``).
    took_waiter_policy: bool = False
    #: Each worker process's part, in worker order (None: the arm records no list of workers).
    workers: Optional[Tuple[WorkerRecord, ...]] = None
    warmup_discarded: Any = None
    #: The arm's wall time, every worker and repetition (s).
    wall_s: Any = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "ArmRecord":
        latency = doc.get("latency")
        rate = doc.get("rate")
        return cls(
            name=str(doc.get("name")),
            family=str(doc.get("family") or ""),
            kind=str(doc.get("kind") or ""),
            mechanism=str(doc.get("mechanism") or ""),
            waiter=str(doc.get("waiter") or ""),
            scope=str(doc.get("scope") or ""),
            t0=str(doc.get("t0") or ""),
            t1=str(doc.get("t1") or ""),
            native=doc.get("native"),
            native_match=doc.get("native_match"),
            driver=str(doc.get("driver") or ""),
            status=str(doc.get("status") or ""),
            reason=doc.get("reason"),
            requested=_opt_int(doc.get("requested")),
            latency=LatencyFigures.from_dict(latency) if isinstance(latency, Mapping) else None,
            rate=RateFigures.from_dict(rate) if isinstance(rate, Mapping) else None,
            samples_file=doc.get("samples_file"),
            entry=doc,
            components=tuple((str(k), LatencyFigures.from_dict(v)) for k, v in sorted(_mapping(doc.get("components")).items())
                             if isinstance(v, Mapping)),
            repetitions=RepetitionSpread.from_dict(doc.get("repetitions")),
            cpu_split=CpuSplit.from_dict(doc.get("cpu_split")),
            user_defined=bool(doc.get("user_defined")),
            origin=ArmOrigin.from_dict(doc.get("origin")) if isinstance(doc.get("origin"), Mapping) else None,
            settle_jitter_us=doc.get("settle_jitter_us"),
            took_waiter_policy=_took_waiter_policy(doc),
            workers=tuple(WorkerRecord.from_dict(w) for w in doc["workers"]) if isinstance(doc.get("workers"), list) else None,
            warmup_discarded=doc.get("warmup_discarded"),
            wall_s=doc.get("wall_s"),
        )

    @property
    def trace(self) -> Optional[TraceFigures]:
        """Where the arm's time goes, in a run that asked for tracing (None otherwise)."""
        doc = self.entry.get("trace")
        return TraceFigures.from_dict(doc) if isinstance(doc, Mapping) else None

    @property
    def spread(self) -> Optional[MedianSpread]:
        """How far apart the arm's workers' (or repetitions') own medians are (None: not recorded)."""
        return MedianSpread.from_dict(self.entry.get("spread"))

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

    Usually every counted wake (``kept == total``).  A soak past its
    raw-sample cap keeps only the raw samples of its first whole chunks
    (``kept < total``); its ``histogram`` (the samples file's log-linear
    histogram, as stored: read it with
    :meth:`wakelab.analysis.hdr.LogLinearHistogram.from_dict`) then holds
    every wake.  ``histogram`` is None for an arm whose samples file has none.
    """

    samples_ns: Tuple[int, ...]
    components_ns: Mapping[str, Tuple[int, ...]]
    counted: Optional[int] = None  # the arm's counted wakes (summary.json's n); None: len(samples_ns)
    histogram: Optional[Mapping[str, Any]] = dataclasses.field(default=None, repr=False)

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
class SamplesFile:
    """An arm's samples file (``samples/<arm>.json``) as stored: its kind and its series, in ns.

    Read by :meth:`Bundle.samples_file`, which has checked each series of the
    file's kind to be a list of whole non-negative ns; not checked against the
    summary (see :meth:`Bundle.kept_latency_samples` for that).  A latency
    file has ``samples_ns`` and ``components_ns``; a rate file ``round_ns``,
    ``baseline_round_ns`` and ``n_per_round`` (None unless a whole number).
    """

    kind: Any
    samples_ns: Sequence[int] = ()
    components_ns: Mapping[str, Sequence[int]] = dataclasses.field(default_factory=dict)
    round_ns: Sequence[int] = ()
    baseline_round_ns: Sequence[int] = ()
    n_per_round: Optional[int] = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "SamplesFile":
        per_round = doc.get("n_per_round")
        return cls(doc.get("kind"), doc.get("samples_ns") or (), dict(doc.get("components_ns") or {}),
                   doc.get("round_ns") or (), doc.get("baseline_round_ns") or (),
                   per_round if isinstance(per_round, int) and not isinstance(per_round, bool) else None)


@dataclasses.dataclass(frozen=True)
class RawKept:
    """How many of an arm's counted wakes its samples file keeps as raw samples, and in how many worker units.

    ``kept == total`` for every ordinary arm.  A soak past its raw-sample cap
    keeps ``kept < total``: the first ``units`` whole chunks, one worker
    record each in the arm's ``workers``, checked to line up (see
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
