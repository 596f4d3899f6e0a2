"""summary.json as the runner builds it: typed, frozen records, serialised once when it is written.

The run is a :class:`RunSummary`, its arms :class:`ArmEntry` records; the runner
(:mod:`wakelab.harness.runner`) replaces them as the run goes and writes
:meth:`RunSummary.to_dict`.  An arm's figures are built once per repetition from
every repetition so far (:class:`Taken`) into :class:`ArmFigures`: the pooled
figures (:class:`RawFigures`), each worker's
:class:`~wakelab.evidence.model.WorkerRecord` (the loader's own record), the
spread between workers or repetitions (:class:`Spread`), the repetitions'
medians (:class:`Repetitions`), a latency arm's quality flags and CPU split.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import TYPE_CHECKING, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from wakelab import __version__
from wakelab.analysis.quality import QualityFlags, quality_flags
from wakelab.analysis.stats import LatencyStats, RateStats, cpu_split, repetition_spread, summarize_latency, summarize_rate
from wakelab.core.model import LATENCY, Arm, MeasureParams, Raw, RawLatency, RawRate
from wakelab.core.registry import get_arm
from wakelab.evidence import bundle
from wakelab.evidence.model import WorkerRecord
from wakelab.harness.metadata import interpreter_info, machine_info, system_info
from wakelab.harness.observed import Observed
from wakelab.harness.trace_pass import ArmTrace, Tracing
from wakelab.harness.workers import pool_raws

if TYPE_CHECKING:
    from wakelab.harness.runner import RunPlan
    from wakelab.harness.soak import SoakArmFigures, SoakRecord


class ArmStatus(str, enum.Enum):
    """An arm's ``status`` in summary.json (equal to its text, and written as it)."""

    OK = "ok"
    SKIPPED = "skipped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    PENDING = "pending"

    def __str__(self) -> str:
        return self.value


OK, SKIPPED, FAILED, INTERRUPTED, PENDING = ArmStatus


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def jsonable(value: object) -> object:
    """``value`` as JSON can hold it: mappings with text keys, lists, plain scalars; anything else its repr."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _jsonable_dict(value: Mapping[str, object]) -> Dict[str, object]:
    out = jsonable(dict(value))
    assert isinstance(out, dict)
    return out


# -- the records -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RawFigures:
    """An arm's figures from its raw record (every worker's wakes pooled): ``latency`` and its timed
    ``components`` (by name, sorted), or ``rate``; the warm-up discarded; the drivers' ``info``."""

    warmup_discarded: int
    info: Mapping[str, object]
    latency: Optional[LatencyStats] = None
    components: Tuple[Tuple[str, LatencyStats], ...] = ()
    rate: Optional[RateStats] = None

    @classmethod
    def of(cls, raw: Raw) -> "RawFigures":
        info = _jsonable_dict(raw.info)
        if isinstance(raw, RawLatency):
            return cls(raw.warmup_discarded, info, latency=summarize_latency(raw.samples_ns, raw.lost),
                       components=tuple((name, summarize_latency(series)) for name, series in sorted(raw.components_ns.items())))
        assert isinstance(raw, RawRate)
        return cls(raw.warmup_rounds, info, rate=summarize_rate(raw.n_per_round, raw.round_ns, raw.baseline_round_ns))

    def to_dict(self) -> Dict[str, object]:
        """The entry's keys these figures fill (a rate arm's ``latency`` and ``components`` stay as they were)."""
        if self.latency is not None:
            out: Dict[str, object] = {"latency": self.latency.to_dict(),
                             "components": {name: stats.to_dict() for name, stats in self.components}}
        else:
            assert self.rate is not None
            out = {"rate": self.rate.to_dict()}
        out["warmup_discarded"] = self.warmup_discarded
        out["info"] = dict(self.info)
        return out


@dataclasses.dataclass(frozen=True)
class Spread:
    """How far apart the workers' (or, with ``between``, the repetitions') medians are: ``of`` names the
    figure (``p50_ns`` or ``ops_per_s``)."""

    of: str
    min: float
    max: float
    max_over_min: float
    between: Optional[str] = None

    @classmethod
    def of_values(cls, key: str, values: Sequence[Optional[float]], between: Optional[str] = None) -> Optional["Spread"]:
        """The spread of ``values`` (None ignored); None with fewer than two, or one not above zero."""
        known = [float(v) for v in values if v is not None]
        if len(known) < 2 or min(known) <= 0:
            return None
        return cls(key, min(known), max(known), round(max(known) / min(known), 4), between)

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {"of": self.of, "min": self.min, "max": self.max, "max_over_min": self.max_over_min}
        if self.between is not None:
            out["between"] = self.between
        return out


@dataclasses.dataclass(frozen=True)
class Repetitions:
    """``repetitions``: how many repetitions have figures, of which figure, and their medians' spread
    (:func:`wakelab.analysis.stats.repetition_spread`; None with fewer than two)."""

    count: int
    of: str
    spread: Optional[Mapping[str, object]]

    def to_dict(self) -> Dict[str, object]:
        return {"count": self.count, "of": self.of, "spread": None if self.spread is None else dict(self.spread)}


@dataclasses.dataclass(frozen=True)
class ArmFigures:
    """Everything an arm's repetitions so far measured, as its summary.json entry holds it (its wall time
    aside: the entry's own).  ``quality`` and ``cpu_split`` are a latency arm's only (None: a rate arm's
    entry keeps its own); ``spread`` is between workers with one repetition, between repetitions with several."""

    figures: RawFigures
    workers: Tuple[WorkerRecord, ...]
    spread: Optional[Spread]
    repetitions: Repetitions
    quality: Optional[QualityFlags] = None
    cpu_split: Optional[Mapping[str, object]] = None

    @property
    def counted(self) -> Optional[Tuple[int, int]]:
        latency, rate = self.figures.latency, self.figures.rate
        if latency is not None:
            return latency.n + latency.lost, latency.lost
        assert rate is not None
        return rate.rounds * rate.n_per_round, 0

    def to_dict(self) -> Dict[str, object]:
        out = self.figures.to_dict()
        if self.figures.latency is not None:
            out["quality"] = None if self.quality is None else self.quality.to_dict()
            out["cpu_split"] = None if self.cpu_split is None else dict(self.cpu_split)
        out["workers"] = [worker.to_dict() for worker in self.workers]
        out["spread"] = None if self.spread is None else self.spread.to_dict()
        out["repetitions"] = self.repetitions.to_dict()
        return out


@dataclasses.dataclass
class Taken:
    """What an arm's repetitions measured so far: every worker's raw record in order, their
    records (each with its ``repetition``), and each repetition's pooled median.  It grows as the
    repetitions come in; :func:`arm_figures` reads it into frozen records."""

    raws: List[Raw] = dataclasses.field(default_factory=list)
    workers: List[WorkerRecord] = dataclasses.field(default_factory=list)
    medians: List[Optional[float]] = dataclasses.field(default_factory=list)
    wall_s: float = 0.0

    def add(self, repetition: int, raws: Sequence[Raw], workers: Sequence[WorkerRecord]) -> None:
        """One repetition's workers: their raw records and their figures (which repetition, recorded)."""
        self.raws.extend(raws)
        self.workers.extend(dataclasses.replace(worker, repetition=repetition) for worker in workers)
        if raws:
            self.medians.append(pooled_median(raws))


def arm_figures(raw: Raw, taken: Taken, kind: str, repeat: int, tail_interval_s: Optional[float],
                settle_jitter_us: Optional[int], settles: bool = True) -> ArmFigures:
    """The figures of every repetition in ``taken`` (at least one worker's): ``raw`` is their raw records pooled.

    ``tail_interval_s``: the switch interval where a busy Python thread may
    hold the GIL the waiter needs (None: no tail looked for);
    ``settle_jitter_us``: the settle's random part (None: an open loop); ``settles``: False for an
    arm that takes no settle (``Arm.settles``), whose wakes are not looked at for polling.
    """
    key = "p50_ns" if kind == LATENCY else "ops_per_s"  # the figure the spreads compare
    quality = split = None
    if isinstance(raw, RawLatency):
        quality = quality_flags(raw.samples_ns, tail_interval_s, settle_jitter_us=settle_jitter_us, settles=settles)
        split = cpu_split(raw.samples_ns, raw.waiter_cpus, raw.notifier_cpus)
    # With repetitions, the spread that matters is between them (each pools its workers' wakes).
    if repeat == 1:
        spread = Spread.of_values(key, [getattr(w, key) for w in taken.workers])
    else:
        spread = Spread.of_values(key, taken.medians, between="repetitions")
    return ArmFigures(
        figures=RawFigures.of(raw),
        workers=tuple(taken.workers),
        spread=spread,
        repetitions=Repetitions(len(taken.medians), key, repetition_spread(taken.medians)),
        quality=quality,
        cpu_split=split,
    )


def pooled_median(raws: Sequence[Raw]) -> Optional[float]:
    """One repetition's own median: p50 of its workers' pooled wakes, or its rate arm's ops/s."""
    raw = pool_raws(raws)
    if isinstance(raw, RawLatency):
        return summarize_latency(raw.samples_ns).percentiles_ns.get("p50")
    assert isinstance(raw, RawRate)
    return summarize_rate(raw.n_per_round, raw.round_ns, raw.baseline_round_ns).ops_per_s


def worker_record(raw: Raw, pid: int, applied: Mapping[str, object]) -> WorkerRecord:
    """One worker's own figures, kept beside the pooled ones to show the spread."""
    if isinstance(raw, RawLatency):
        stats = summarize_latency(raw.samples_ns, raw.lost)
        return WorkerRecord(pid=pid, applied=_jsonable_dict(applied), n=stats.n, lost=stats.lost,
                            p50_ns=stats.percentiles_ns.get("p50"), max_ns=stats.max_ns)
    rate = summarize_rate(raw.n_per_round, raw.round_ns, raw.baseline_round_ns)
    return WorkerRecord(pid=pid, applied=_jsonable_dict(applied), rounds=rate.rounds, ops_per_s=rate.ops_per_s)


# -- the arm's entry and the run's summary, as records -----------------------------------------


def _empty_figures() -> Dict[str, object]:
    """An entry's figures before any repetition measured (a rate arm keeps the latency ones so)."""
    return {"warmup_discarded": None, "latency": None, "components": {}, "rate": None, "info": {}, "workers": [],
            "spread": None, "repetitions": None, "cpu_split": None, "quality": {}}


@dataclasses.dataclass(frozen=True)
class ArmEntry:
    """An arm's entry in summary.json: its identity (:meth:`~wakelab.core.model.Arm.describe`, with the
    settle's random part and its origin where they are its own), how far it got, and what it measured.

    The runner replaces it (:func:`dataclasses.replace`) as the arm goes; :meth:`to_dict` serialises it.
    """

    identity: Mapping[str, object]
    requested: int
    status: ArmStatus = ArmStatus.PENDING
    reason: Optional[str] = None
    wall_s: Optional[float] = None
    #: ``counted`` (wakes or operations accounted for, wakes lost; None: none taken) and ``to_dict``.
    figures: Optional[Union[ArmFigures, "SoakArmFigures"]] = None
    samples_file: Optional[str] = None
    trace: Optional[ArmTrace] = None

    @classmethod
    def of(cls, arm: Arm, params: MeasureParams, origin: Optional[Mapping[str, object]] = None) -> "ArmEntry":
        """The entry before the arm ran: ``pending``, every figure empty."""
        identity = dict(arm.describe())
        own = arm.params_for(params).settle_jitter_us
        if arm.kind == LATENCY and own != params.settle_jitter_us:
            # The arm asked for a larger random part of the settle than the run's: say so where its figures are.
            identity["settle_jitter_us"] = own
        if origin is not None:  # a side of an A/B that loads a user arm from its own file says so
            identity["origin"] = dict(origin)
        return cls(identity, params.install_n * params.rounds if arm.kind != LATENCY else params.n)

    @property
    def name(self) -> str:
        return str(self.identity["name"])

    def ended(self, status: ArmStatus, reason: Optional[str]) -> "ArmEntry":
        return dataclasses.replace(self, status=status, reason=reason)

    def to_dict(self) -> Dict[str, object]:
        out = dict(self.identity)
        out.update(_empty_figures())
        if self.figures is not None:
            out.update(self.figures.to_dict())
        out.update(status=self.status.value, reason=self.reason, requested=self.requested, wall_s=self.wall_s,
                   samples_file=self.samples_file)
        if self.trace is not None:
            out["trace"] = self.trace.to_dict()
        return out


def all_taken(arms: Iterable[Tuple[str, object, Optional[Tuple[int, int]]]]) -> bool:
    """True when at least one of ``(status, requested, counted)`` was measured, every measured arm took
    every sample it was asked for and lost none, and no arm failed, was cut short or was not reached.
    Arms skipped because they cannot run here do not count against it."""
    ran = [(status, (requested, 0) == counted) for status, requested, counted in arms if status != ArmStatus.SKIPPED]
    return bool(ran) and all(status == ArmStatus.OK and every for status, every in ran)


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """summary.json: ``head`` (what is known before any arm runs, as written), the arms' entries, and
    what the run adds as it goes; replaced, never changed, and serialised by :meth:`to_dict`.

    The caveats, warnings and guidance are derived from the document each time it is written
    (:func:`wakelab.harness.runner.bundle_writer`).
    """

    head: Mapping[str, object]
    interpreter: Mapping[str, object]
    arms: Tuple[ArmEntry, ...]
    timer: Optional[Mapping[str, object]] = None
    #: The conditions as the first pass found them (``applied_`` keys beside the plan's).
    applied: Mapping[str, object] = dataclasses.field(default_factory=dict)
    tracing: Optional[Tracing] = None
    observed: Optional[Observed] = None
    #: A soak's own record (:class:`wakelab.harness.soak.SoakRecord`).
    soak: Optional["SoakRecord"] = None
    finished_utc: Optional[str] = None
    wall_s: Optional[float] = None
    interrupted: bool = False
    complete: bool = False

    @classmethod
    def start(cls, plan: "RunPlan", interpreter: Optional[Mapping[str, object]] = None,
              timer: Optional[Mapping[str, object]] = None) -> "RunSummary":
        """The summary before any arm ran (``complete: false``)."""
        lab = plan.lab
        head = {
            "schema": bundle.SCHEMA_NAME,
            "schema_version": bundle.SCHEMA_VERSION,
            "tool": {"name": "wakelab", "version": __version__},
            "lab": {
                "id": lab.id,
                "title": lab.title,
                "question": lab.question,
                "methodology": list(lab.methodology),
                "limits": list(lab.limits),
                "reproduce_script": lab.reproduce_script,
                "comparisons": [{"a": c.a, "b": c.b} for c in lab.comparisons if c.a in plan.arm_names and c.b in plan.arm_names],
            },
            "run_id": uuid.uuid4().hex,
            "started_utc": utc_now(),
            "command": list(plan.command),
            "note": plan.note,
            "parameters": plan.params.to_dict(),
            "execution": plan.execution.to_dict(),
            "conditions": plan.execution.conditions.to_dict(),
            "machine": machine_info(),
            "system": system_info(),
        }
        origins = plan.execution.arm_origins
        arms = tuple(ArmEntry.of(get_arm(name), plan.params, origins.get(name)) for name in plan.arm_names)
        return cls(head, interpreter if interpreter is not None else interpreter_info(), arms, timer)

    def amend(self, **head: object) -> "RunSummary":
        """The summary with parts of its head replaced (a soak's execution and parameters)."""
        return dataclasses.replace(self, head={**self.head, **head})

    def with_arm(self, entry: ArmEntry) -> "RunSummary":
        """The summary with ``entry`` in place of the arm of its name."""
        return dataclasses.replace(self, arms=tuple(entry if a.name == entry.name else a for a in self.arms))

    def is_complete(self) -> bool:
        """See :func:`all_taken`."""
        return all_taken((a.status, a.requested, a.figures.counted if a.figures else None) for a in self.arms)

    def to_dict(self) -> Dict[str, object]:
        """summary.json's document (the JSON summary.schema.json describes), its caveats and warnings still empty."""
        conditions = self.head["conditions"]
        assert isinstance(conditions, dict)
        out = dict(self.head)
        out.update(interpreter=dict(self.interpreter), timer=self.timer, arms=[entry.to_dict() for entry in self.arms],
                   conditions=dict(conditions, **{"applied_" + k: v for k, v in self.applied.items()}),
                   finished_utc=self.finished_utc, wall_s=self.wall_s, complete=self.complete, interrupted=self.interrupted,
                   caveats=[], warnings=[])
        if self.tracing is not None:
            out["tracing"] = self.tracing.to_dict()
        if self.observed is not None:
            out["observed"] = dataclasses.asdict(self.observed)
        if self.soak is not None:
            out["soak"] = self.soak.to_dict()
        return out
