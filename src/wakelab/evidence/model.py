"""The typed evidence model: one bundle as every reader sees it.

``summary.json`` (its JSON Schema, ``summary.schema.json``, is the contract)
is loaded, validated and turned into a :class:`Bundle` here, once; ``compare``,
``report``, ``export`` and ``history`` read a :class:`Bundle` and its typed
records (:class:`ArmRecord`, :class:`LatencyFigures`, :class:`RateFigures`,
:class:`Interpreter`) instead of walking the JSON themselves.  The validated
document stays available as :attr:`Bundle.summary` for the renderers that lay
out every field (the JSON export, the honesty block), and a bundle dumps
itself back to the same text the runner wrote (:meth:`Bundle.dumps`).

Records are frozen: reading evidence never changes it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import os
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

from wakelab.errors import EvidenceError
from wakelab.percentile import percentile
from wakelab.evidence.sections import Conditions, Execution, LabInfo, Machine, Parameters, Soak, System, Timer, Tracing
from wakelab.evidence.words import FREE_THREADED, RunState, gil_word, run_state

LATENCY = "latency"
RATE = "rate"
PERCENTILE_KEYS = ("p50", "p90", "p99", "p99_9")
# How many repetitions ``wakelab run`` measures unless told (``--repeat``); a bundle without
# ``execution.repeat`` measured once.
DEFAULT_REPEAT = 5


def _opt_float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def _opt_int(value: Any) -> Optional[int]:
    return None if value is None else int(value)


def _plain_number(value: float) -> str:
    return ("%d" % value) if float(value).is_integer() else ("%.1f" % value)


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """The interpreter that measured a run."""

    implementation: str
    version: str
    executable: Optional[str] = None
    free_threaded_build: bool = False
    gil_enabled: Optional[bool] = None
    python_gil_env: Optional[str] = None
    #: The implementation's own version (PyPy's 7.3.11); the Python version on CPython; None in
    #: evidence from before wakelab recorded it.
    implementation_version: Optional[str] = None
    #: The build and compiler strings (``sys.version``'s), and the switch interval it ran with (s), as recorded.
    build: Any = None
    compiler: Any = None
    switch_interval_s: Any = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "Interpreter":
        own = doc.get("implementation_version")
        return cls(
            implementation=str(doc.get("implementation", "Python")),
            version=str(doc.get("version", "?")),
            executable=doc.get("executable"),
            free_threaded_build=bool(doc.get("free_threaded_build")),
            gil_enabled=doc.get("gil_enabled"),
            python_gil_env=doc.get("python_gil_env"),
            implementation_version=None if own is None else str(own),
            build=doc.get("build"),
            compiler=doc.get("compiler"),
            switch_interval_s=doc.get("switch_interval_s"),
        )

    @property
    def own_version(self) -> Optional[str]:
        """The implementation's own version where it is not the Python version (PyPy's 7.3.11); None on CPython."""
        own = self.implementation_version
        return own if own and self.implementation != "CPython" and own != self.version else None

    @property
    def name(self) -> str:
        """``CPython 3.13.0``, or ``PyPy 3.9.16 (7.3.11)`` where the implementation has a version of its own."""
        text = "%s %s" % (self.implementation, self.version)
        return text if self.own_version is None else "%s (%s)" % (text, self.own_version)

    @property
    def label(self) -> str:
        """How every reader names the interpreter: :attr:`name`, then the build and the GIL where they matter.

        ``CPython 3.13.5``; ``CPython 3.13.5 free-threaded (GIL off)`` and
        ``CPython 3.13.5 free-threaded (GIL on)`` (PYTHON_GIL=1); ``(GIL off)``
        on any other build that ran without it; ``PyPy 3.9.16 (7.3.11)``.
        """
        text = self.name
        if self.free_threaded_build:
            text += " " + FREE_THREADED
            if self.gil_enabled is not None:
                text += " (%s)" % gil_word(self.gil_enabled)
        elif self.gil_enabled is False:
            text += " (%s)" % gil_word(False)
        return text

    @property
    def gil_word(self) -> str:
        """``GIL on``, ``GIL off`` or ``GIL state not reported``."""
        return gil_word(self.gil_enabled)


@dataclasses.dataclass(frozen=True)
class LatencyFigures:
    """One latency arm's figures, in nanoseconds (None: too few wakes; ``omitted`` says why)."""

    n: int
    lost: int
    min_ns: Optional[int]
    max_ns: Optional[int]
    mean_ns: Optional[float]
    stdev_ns: Optional[float]
    p50_ns: Optional[float]
    p90_ns: Optional[float]
    p99_ns: Optional[float]
    p99_9_ns: Optional[float]
    omitted: Mapping[str, str]

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "LatencyFigures":
        return cls(
            n=int(doc.get("n") or 0),
            lost=int(doc.get("lost") or 0),
            min_ns=_opt_int(doc.get("min_ns")),
            max_ns=_opt_int(doc.get("max_ns")),
            mean_ns=_opt_float(doc.get("mean_ns")),
            stdev_ns=_opt_float(doc.get("stdev_ns")),
            p50_ns=_opt_float(doc.get("p50_ns")),
            p90_ns=_opt_float(doc.get("p90_ns")),
            p99_ns=_opt_float(doc.get("p99_ns")),
            p99_9_ns=_opt_float(doc.get("p99_9_ns")),
            omitted=dict(doc.get("omitted") or {}),
        )

    def percentile_ns(self, key: str) -> Optional[float]:
        """``p50``, ``p90``, ``p99`` or ``p99_9``."""
        if key not in PERCENTILE_KEYS:
            raise KeyError(key)
        value: Optional[float] = getattr(self, key + "_ns")
        return value


@dataclasses.dataclass(frozen=True)
class RateFigures:
    """One rate arm's figures: operations per second per round."""

    rounds: int
    n_per_round: int
    ops_per_s: float
    min_ops_per_s: float
    max_ops_per_s: float
    baseline_ops_per_s: float
    net_ns_per_op: Optional[float]
    #: The median round's time per operation (ns).
    ns_per_op: Optional[float] = None

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "RateFigures":
        return cls(
            rounds=int(doc.get("rounds") or 0),
            n_per_round=int(doc.get("n_per_round") or 0),
            ops_per_s=float(doc.get("ops_per_s") or 0.0),
            min_ops_per_s=float(doc.get("min_ops_per_s") or 0.0),
            max_ops_per_s=float(doc.get("max_ops_per_s") or 0.0),
            baseline_ops_per_s=float(doc.get("baseline_ops_per_s") or 0.0),
            net_ns_per_op=_opt_float(doc.get("net_ns_per_op")),
            ns_per_op=_opt_float(doc.get("ns_per_op")),
        )


@dataclasses.dataclass(frozen=True)
class TraceFigures:
    """Where an arm's time goes (a run with ``--trace``; see ``wakelab.analysis.components``).

    ``traced`` False: ``reason`` says why the arm was not split.  Otherwise
    ``at_p50`` / ``at_p99`` map each component (notify, sched_wake,
    sched_queue, gil_wait, interpreter, unattributed) to its mean in ns over
    the wakes ranked around the median / at the tail (they sum to
    ``at_p50_ns`` / ``at_p99_ns``); ``percentiles`` are each component's own
    p50/p90/p99; the overhead is the traced pass's p50 against the untraced one.
    """

    traced: bool
    reason: Optional[str]
    untraced_p50_ns: Optional[float] = None
    traced_p50_ns: Optional[float] = None
    overhead_ratio: Optional[float] = None
    at_p50_ns: Optional[float] = None
    at_p99_ns: Optional[float] = None
    at_p50: Mapping[str, float] = dataclasses.field(default_factory=dict)
    at_p99: Mapping[str, float] = dataclasses.field(default_factory=dict)
    percentiles: Mapping[str, Mapping[str, Optional[float]]] = dataclasses.field(default_factory=dict)
    wakes: int = 0
    fully_attributed: int = 0
    #: Each band's re-blocks by cause (mean ns; they sum to its ``gil_wait``); None for a band from before
    #: re-blocks were named (or no band).
    at_p50_reblocks: Optional[Mapping[str, float]] = None
    at_p99_reblocks: Optional[Mapping[str, float]] = None
    #: The untraced p50 measured again after the traced pass (ns).
    untraced_after_p50_ns: Optional[float] = None
    #: Events perf dropped; wakes re-blocked; switch-ins placed at the waiter's return from its call.
    lost_events: int = 0
    with_gil_cycles: int = 0
    inferred_switch_ins: int = 0
    cross_cpu_fraction: Optional[float] = None
    from_idle_fraction: Optional[float] = None
    #: Who held what the waiter re-blocked on, most time first.
    holders: Tuple["TraceHolder", ...] = ()
    #: The sampled Python frames (``--trace-frames``), as stored (see :mod:`wakelab.analysis.frames`).
    frames: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "TraceFigures":
        comps = doc.get("components") if isinstance(doc.get("components"), Mapping) else {}
        overhead = doc.get("overhead") if isinstance(doc.get("overhead"), Mapping) else {}
        assert isinstance(comps, Mapping) and isinstance(overhead, Mapping)

        def band(key: str) -> Tuple[Optional[float], Dict[str, float]]:
            value = comps.get(key)
            if not isinstance(value, Mapping):
                return None, {}
            parts = value.get("parts_ns") if isinstance(value.get("parts_ns"), Mapping) else {}
            assert isinstance(parts, Mapping)
            return _opt_float(value.get("latency_ns")), {
                str(k): float(v) for k, v in parts.items() if _opt_float(v) is not None
            }

        def causes(key: str) -> Optional[Dict[str, float]]:
            found = _mapping(comps.get(key)).get("reblocks_ns")
            return {str(k): float(v or 0.0) for k, v in found.items()} if isinstance(found, Mapping) else None

        p50_ns, p50 = band("at_p50")
        p99_ns, p99 = band("at_p99")
        raw_percentiles = comps.get("percentiles") if isinstance(comps.get("percentiles"), Mapping) else {}
        assert isinstance(raw_percentiles, Mapping)
        return cls(
            traced=doc.get("traced") is True,
            reason=doc.get("reason") if isinstance(doc.get("reason"), str) else None,
            untraced_p50_ns=_opt_float(overhead.get("untraced_p50_ns")),
            traced_p50_ns=_opt_float(overhead.get("traced_p50_ns")),
            overhead_ratio=_opt_float(overhead.get("ratio")),
            at_p50_ns=p50_ns,
            at_p99_ns=p99_ns,
            at_p50=p50,
            at_p99=p99,
            percentiles={
                str(name): {str(k): _opt_float(v) for k, v in figures.items()}
                for name, figures in raw_percentiles.items()
                if isinstance(figures, Mapping)
            },
            wakes=_opt_int(comps.get("wakes")) or 0,
            fully_attributed=_opt_int(comps.get("fully_attributed")) or 0,
            at_p50_reblocks=causes("at_p50"),
            at_p99_reblocks=causes("at_p99"),
            untraced_after_p50_ns=_opt_float(overhead.get("untraced_after_p50_ns")),
            lost_events=_opt_int(doc.get("lost_events")) or 0,
            with_gil_cycles=_opt_int(comps.get("with_gil_cycles")) or 0,
            inferred_switch_ins=_opt_int(comps.get("inferred_switch_ins")) or 0,
            cross_cpu_fraction=_opt_float(comps.get("cross_cpu_fraction")),
            from_idle_fraction=_opt_float(comps.get("from_idle_fraction")),
            holders=tuple(TraceHolder.from_dict(h) for h in _mapping(comps.get("reblocks")).get("holders") or ()
                          if isinstance(h, Mapping)),
            frames=_mapping(doc.get("frames")),
        )

    @property
    def has_bands(self) -> bool:
        """True when the split recorded where the median wake goes (``at_p50``)."""
        return self.at_p50_ns is not None or bool(self.at_p50)


@dataclasses.dataclass(frozen=True)
class TraceHolder:
    """Who held what a traced arm's waiter re-blocked on: what (``on``), who (``role``), their thread ids, in how many wakes."""

    on: str
    role: str
    tids: Tuple[Any, ...]
    wakes: Any

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> "TraceHolder":
        return cls(str(doc.get("on")), str(doc.get("role") or ""), tuple(doc.get("tids") or ()), doc.get("wakes"))


class WarningKind(str, enum.Enum):
    """The kinds of measurement-quality record summary.json's ``warnings`` hold (see :mod:`wakelab.analysis.quality`).

    :mod:`wakelab.analysis.quality` writes them, the renderers word them
    (:func:`wakelab.report.text.format_warning`): a kind renamed in one place
    is renamed in both.
    """

    PERCENTILES_OMITTED = "percentiles-omitted"
    WORKER_SPREAD = "worker-spread"
    POPULATIONS = "populations"
    SWITCH_INTERVAL_TAIL = "switch-interval-tail"
    TIMER_FLOOR = "timer-floor"
    POLLING = "polling"


#: Levels of a warning record: a reason to doubt a figure, or a note on one left out.
WARNING_LEVEL, NOTE_LEVEL = "warning", "note"


@dataclasses.dataclass(frozen=True)
class WarningRecord:
    """One entry of summary.json's ``warnings``: what (``kind``), about which arm, and the figures it rests on.

    ``kind`` is a :class:`WarningKind`, or the kind's text as stored where it
    is none of them (a newer bundle).  ``text`` holds a warning worded by the
    runner (bundles before 0.2 stored sentences), with no kind or figures.
    ``figures`` is the stored mapping (empty when the stored value is not
    one); ``raw`` the entry as stored, for a renderer that must show figures
    it cannot word.
    """

    kind: Union[WarningKind, str]
    level: str = WARNING_LEVEL
    arm: Optional[str] = None
    figures: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    text: Optional[str] = None
    raw: Any = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "WarningRecord":
        """A stored entry (a record, or a sentence from an older bundle) as a record."""
        if isinstance(value, WarningRecord):
            return value
        if not isinstance(value, Mapping):
            return cls(kind="", text=str(value), raw=value)
        kind = value.get("kind")
        try:
            known: Union[WarningKind, str] = WarningKind(kind)
        except ValueError:
            known = "" if kind is None else str(kind)
        figures = value.get("figures")
        arm = value.get("arm")
        return cls(kind=known, level=str(value.get("level") or WARNING_LEVEL), arm=None if arm is None else str(arm),
                   figures=figures if isinstance(figures, Mapping) else {}, raw=value)

    @property
    def is_note(self) -> bool:
        return self.level == NOTE_LEVEL

    def to_dict(self) -> Dict[str, Any]:
        """The record as summary.json stores it."""
        kind = self.kind.value if isinstance(self.kind, WarningKind) else self.kind
        return {"kind": kind, "level": self.level, "arm": self.arm, "figures": dict(self.figures)}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclasses.dataclass(frozen=True)
class RepetitionSpread:
    """``repetitions``: how many repetitions an arm had, and each one's own figure (p50 or ops/s) with their range.

    ``range_pct`` is (largest - smallest) / their median, in percent.
    """

    count: Any = None
    #: The repetitions' spread was recorded (a run of one repetition has none).
    has_spread: bool = False
    values: Tuple[Any, ...] = ()
    range_pct: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["RepetitionSpread"]:
        d = _mapping(doc)
        if not d:
            return None
        spread = _mapping(d.get("spread"))
        values = spread.get("values")
        return cls(d.get("count"), bool(spread), tuple(values) if isinstance(values, (list, tuple)) else (),
                   spread.get("range_pct"))


@dataclasses.dataclass(frozen=True)
class MedianSpread:
    """``spread``: how far apart an arm's own medians are (each worker's, or each repetition's): largest over smallest.

    ``of`` names the figure (``p50_ns``, ``ops_per_s``), ``between`` what they are of (``workers``, ``repetitions``).
    """

    max_over_min: Optional[float] = None
    of: Any = None
    between: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["MedianSpread"]:
        d = _mapping(doc)
        return cls(_opt_float(d.get("max_over_min")), d.get("of"), d.get("between")) if d else None


@dataclasses.dataclass(frozen=True)
class CpuSide:
    """The wakes of one side of a CPU split: how many, their p50 and p99 (ns); ``recorded`` False when the split lacks the side."""

    n: Any = 0
    p50_ns: Any = None
    p99_ns: Any = None
    recorded: bool = True

    @classmethod
    def from_dict(cls, doc: object) -> "CpuSide":
        d = _mapping(doc)
        return cls(d.get("n", 0), d.get("p50_ns"), d.get("p99_ns"), isinstance(doc, Mapping))


@dataclasses.dataclass(frozen=True)
class CpuSplit:
    """``cpu_split``: an arm's wakes by where they ran -- notifier and waiter on the same CPU, or on two."""

    same_cpu: CpuSide
    cross_cpu: CpuSide
    cross_share: Any = None
    #: Wakes whose CPUs were not both read.
    unknown: Any = None

    @classmethod
    def from_dict(cls, doc: object) -> Optional["CpuSplit"]:
        d = _mapping(doc)
        if not d:
            return None
        return cls(CpuSide.from_dict(d.get("same_cpu")), CpuSide.from_dict(d.get("cross_cpu")), d.get("cross_share"),
                   d.get("unknown"))


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


@dataclasses.dataclass(frozen=True)
class Bundle:
    """One validated evidence bundle: where it is, its summary, and typed views of it.

    ``source`` is the path as the user gave it, ``folder`` the bundle's folder
    (samples files are relative to it), ``label`` how readers name it.
    """

    source: str
    folder: str
    summary: Mapping[str, Any] = dataclasses.field(repr=False)
    label: str = ""

    @classmethod
    def load(cls, path: str, label: str = "", grid_hint: str = "use its cells") -> "Bundle":
        """Load and validate the bundle at ``path`` (its folder or its summary.json).

        Raises :class:`~wakelab.errors.EvidenceError` with one line for
        anything that is not a valid bundle: a grid folder (say which cells to
        use), a missing or corrupt summary, an arm listed twice.
        """
        from wakelab.evidence.load import load_summary, resolve_summary_path

        cells = os.path.join(path, "cells")
        if os.path.isdir(path) and not os.path.exists(resolve_summary_path(path)) and os.path.isdir(cells):
            names = sorted(n for n in os.listdir(cells) if os.path.isdir(os.path.join(cells, n)))
            shown = ", ".join(os.path.join(cells, n) for n in names[:3]) or "none"
            if len(names) > 3:
                shown += ", ... (%d in all)" % len(names)
            raise EvidenceError("%s is a grid of runs, not one run: %s (%s)" % (path, grid_hint, shown))
        summary = load_summary(path)
        names = [str(a.get("name")) for a in summary.get("arms", [])]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise EvidenceError("%s lists arm %s more than once" % (resolve_summary_path(path), duplicates[0]))
        folder = os.path.dirname(os.path.abspath(resolve_summary_path(path)))
        return cls(source=path, folder=folder, summary=summary, label=label or os.path.basename(folder))

    # -- typed views ------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The bundle folder's own name (``lab135-20261001T060000Z``)."""
        return os.path.basename(os.path.abspath(self.folder))

    @property
    def interpreter(self) -> Interpreter:
        return Interpreter.from_dict(self.summary.get("interpreter") or {})

    @property
    def lab_id(self) -> str:
        return str((self.summary.get("lab") or {}).get("id") or "")

    @property
    def lab_comparisons(self) -> Tuple[Tuple[str, str], ...]:
        """The lab's comparisons, each as the names of its two arms (a, b), in the lab's order."""
        comparisons = _mapping(self.summary.get("lab")).get("comparisons") or ()
        return tuple((str(c.get("a")), str(c.get("b"))) for c in comparisons if isinstance(c, Mapping))

    # -- the run-wide sections, each parsed once -------------------------------------------

    @functools.cached_property
    def lab(self) -> LabInfo:
        return LabInfo.from_dict(self.summary.get("lab"))

    @functools.cached_property
    def parameters(self) -> Parameters:
        return Parameters.from_dict(self.summary.get("parameters"))

    @functools.cached_property
    def conditions(self) -> Conditions:
        return Conditions.from_dict(self.summary.get("conditions"))

    @functools.cached_property
    def execution(self) -> Execution:
        return Execution.from_dict(self.summary.get("execution"))

    @functools.cached_property
    def machine(self) -> Machine:
        return Machine.from_dict(self.summary.get("machine"))

    @functools.cached_property
    def timer(self) -> Timer:
        return Timer.from_dict(self.summary.get("timer"))

    @functools.cached_property
    def system(self) -> System:
        return System.from_dict(self.summary.get("system"))

    @functools.cached_property
    def tracing(self) -> Tracing:
        return Tracing.from_dict(self.summary.get("tracing"))

    @functools.cached_property
    def soak(self) -> Optional[Soak]:
        return Soak.from_dict(self.summary.get("soak"))

    @property
    def tool_version(self) -> Any:
        return (self.summary.get("tool") or {}).get("version")

    @property
    def wall_s(self) -> Any:
        return self.summary.get("wall_s")

    @property
    def note(self) -> Any:
        """The user's note on the run (``--note``), None without one."""
        return self.summary.get("note")

    @property
    def command(self) -> Tuple[str, ...]:
        """The command line that made the run, as recorded (empty: none recorded)."""
        command = self.summary.get("command")
        return tuple(str(c) for c in command) if isinstance(command, list) else ()

    def recorded(self, section: str) -> Mapping[str, Any]:
        """Run-wide section ``section`` (``conditions``, ``machine`` ...) as recorded: every key, known or not (empty: absent)."""
        value = self.summary.get(section)
        return value if isinstance(value, Mapping) else {}

    @property
    def caveats(self) -> Tuple[str, ...]:
        return tuple(self.summary.get("caveats") or ())

    @property
    def started_utc(self) -> str:
        return str(self.summary.get("started_utc") or "")

    @property
    def hostname(self) -> str:
        return str((self.summary.get("machine") or {}).get("hostname") or "")

    @property
    def complete(self) -> bool:
        return bool(self.summary.get("complete"))

    @property
    def interrupted(self) -> bool:
        return bool(self.summary.get("interrupted"))

    @property
    def run_state(self) -> RunState:
        """How far the run got (complete, interrupted, cut short, in progress)."""
        return run_state(self.summary.get("complete"), self.summary.get("interrupted"), self.summary.get("finished_utc"))

    def warnings(self) -> Tuple[WarningRecord, ...]:
        """summary.json's measurement-quality warnings and notes, as records, in their order."""
        return tuple(WarningRecord.from_json(w) for w in self.summary.get("warnings") or ())

    def arm_entries(self) -> Tuple[Mapping[str, Any], ...]:
        """The arms' raw entries, in run order (summary.json keeps run order)."""
        return tuple(self.summary.get("arms") or ())

    def arms(self) -> Tuple[ArmRecord, ...]:
        """The arms as typed records, in run order (parsed once)."""
        return self._arms

    @functools.cached_property
    def _arms(self) -> Tuple[ArmRecord, ...]:
        return tuple(ArmRecord.from_dict(entry) for entry in self.arm_entries())

    def arms_by_name(self) -> Dict[str, ArmRecord]:
        return {arm.name: arm for arm in self.arms()}

    def entries_by_name(self) -> Dict[str, Mapping[str, Any]]:
        """The arms' raw entries by name."""
        return {str(entry["name"]): entry for entry in self.arm_entries()}

    def describe(self) -> str:
        """One line naming the run: lab, start, interpreter, machine."""
        interp = self.interpreter
        return "%s, %s, %s %s on %s" % (self.lab_id, self.started_utc, interp.implementation, interp.version, self.hostname)

    # -- samples ----------------------------------------------------------------------

    def samples_doc(self, entry: Mapping[str, Any]) -> Dict[str, Any]:
        """The raw samples document of arm ``entry`` (EvidenceError when unusable)."""
        from wakelab.evidence.load import load_samples

        return load_samples(self.folder, dict(entry))

    def samples_file(self, arm: ArmRecord) -> SamplesFile:
        """Arm ``arm``'s samples file as stored (EvidenceError when unusable)."""
        return SamplesFile.from_dict(self.samples_doc(arm.entry))

    def latency_samples(self, arm: ArmRecord) -> ArmSamples:
        """The raw wakes of a measured latency arm, every one, checked against the summary's n.

        For readers that need every wake (the raw-samples CSV): a soak past
        its raw-sample cap is refused (EvidenceError, one line); readers that
        can work on the kept samples call :meth:`kept_latency_samples`.
        """
        samples = self.kept_latency_samples(arm)
        if not samples.every_wake:
            raise EvidenceError("%s: arm %s is a soak past its raw-sample cap: the samples file holds its first %d of %s "
                                "wakes (the rest are in its histogram), which this reads whole" % (
                                    self.source, arm.name, samples.kept, samples.total))
        return samples

    def kept_latency_samples(self, arm: ArmRecord) -> ArmSamples:
        """The raw wakes a measured latency arm's samples file keeps: every one, or a soak's first whole chunks.

        Checked against the summary: every wake (n), or, for a soak past its
        raw-sample cap, the kept chunks lining up with the arm's worker
        records (:meth:`raw_kept`) and a histogram that holds all n wakes.
        ``kept``/``total``/``every_wake`` on the result say which.  Raises
        :class:`~wakelab.errors.EvidenceError` (one line) otherwise.
        """
        doc = self.samples_doc(arm.entry)
        if doc.get("kind") != LATENCY:
            raise EvidenceError("%s: arm %s: the samples file holds %s samples, the summary says latency" % (
                self.source, arm.name, doc.get("kind")))
        values = tuple(doc.get("samples_ns") or ())
        expected = arm.latency.n if arm.latency is not None else None
        kept = self.raw_kept(arm.entry, values)
        if kept is None:
            raise EvidenceError("%s: the samples of arm %s hold %d wakes but summary.json says n = %s" % (
                os.path.join(self.folder, str(arm.samples_file)), arm.name, len(values), expected))
        histogram = doc.get("histogram")
        if not isinstance(histogram, Mapping):
            histogram = None
        if not kept.every_wake:
            recorded = histogram.get("total") if histogram is not None else None
            if recorded != kept.total:
                where = "has no histogram" if histogram is None else "has a histogram of %s wakes" % (recorded,)
                raise EvidenceError("%s: arm %s is a soak past its raw-sample cap, but its samples file %s where "
                                    "summary.json says n = %d: the bundle was edited or mixed" % (
                                        self.source, arm.name, where, kept.total))
        components = {str(k): tuple(v) for k, v in sorted((doc.get("components_ns") or {}).items())}
        return ArmSamples(values, components, kept.total, histogram)

    def raw_kept(self, entry: Mapping[str, Any], values: Any) -> Optional[RawKept]:
        """How many of arm ``entry``'s wakes ``values`` (its samples file's raw samples) are; None when they do not fit.

        Every wake when ``len(values)`` is the summary's n.  A soak past its
        raw-sample cap (``summary["soak"]["raw_kept"] == len(values) < n``)
        keeps whole chunks, one worker record each: the records' ``n`` must
        add up to the kept samples, there must be as many as the soak's
        ``raw_kept_slices``, and each record's ``p50_ns`` must be the type-7
        median of its chunk's samples, so that each worker record is one unit
        of the kept samples; EvidenceError (one line) when they do not line
        up.  None for any other disagreement with n (the caller words it).
        ``values`` may be a tuple of ints or a numpy array.
        """
        name = entry.get("name")
        latency = entry.get("latency") if isinstance(entry.get("latency"), Mapping) else {}
        assert isinstance(latency, Mapping)
        total = latency.get("n")
        count = len(values)
        if count == total:
            workers = entry.get("workers")
            return RawKept(count, count, len(workers) if isinstance(workers, list) and workers else 1)
        soak = self.summary.get("soak") if isinstance(self.summary.get("soak"), Mapping) else None
        if soak is None or soak.get("raw_kept") != count or not isinstance(total, int) or count >= total:
            return None
        refuse = "%s: arm %s is a soak past its raw-sample cap whose kept samples (the first %d of %d wakes) do not " \
                 "line up with its kept chunks' worker records: %%s" % (self.source, name, count, total)
        workers = entry.get("workers")
        if not isinstance(workers, list) or not workers or not all(isinstance(w, Mapping) for w in workers):
            raise EvidenceError(refuse % "it has none")
        sizes = [w.get("n") for w in workers]
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes):
            raise EvidenceError(refuse % "a worker record has no whole n")
        if sum(sizes) != count:
            raise EvidenceError(refuse % ("%d workers' n add up to %d" % (len(sizes), sum(sizes))))
        slices = soak.get("raw_kept_slices")
        if slices is not None and slices != len(workers):
            raise EvidenceError(refuse % ("%d worker records, the soak says %s chunks are kept" % (len(workers), slices)))
        start = 0
        for index, (record, size) in enumerate(zip(workers, sizes)):
            chunk = values[start:start + size]
            start += size
            claimed = record.get("p50_ns")
            if not size or claimed is None:
                continue
            as_list = getattr(chunk, "tolist", None)  # a numpy array's values as Python numbers: sorted fast
            median = float(percentile(sorted(as_list() if as_list is not None else chunk), 50.0))
            if not isinstance(claimed, (int, float)) or not math.isclose(median, float(claimed), rel_tol=1e-9, abs_tol=1e-6):
                raise EvidenceError(refuse % ("chunk %d's median is %s ns, its worker record says p50 %s ns"
                                              % (index + 1, _plain_number(median), claimed)))
        return RawKept(count, total, len(workers))

    # -- dumping ----------------------------------------------------------------------

    def dumps(self) -> str:
        """The summary as the runner writes it (sorted keys, stable text)."""
        from wakelab.evidence.bundle import dumps

        return dumps(self.summary)


@dataclasses.dataclass(frozen=True)
class GridCell:
    """One cell of a grid: its label, its value of each grid dimension, its state in matrix.json, and its run.

    ``bundle`` is None for a cell that never wrote evidence (the grid stopped
    before it); ``status`` is matrix.json's (pending / running / done).
    """

    label: str
    dimensions: Mapping[str, Any]
    status: str
    bundle: Optional[Bundle]

    @property
    def evidence(self) -> Bundle:
        """The cell's run, for a reader that took only :attr:`Grid.with_evidence` (EvidenceError otherwise)."""
        if self.bundle is None:
            raise EvidenceError("cell %s has no evidence (%s)" % (self.label, self.status))
        return self.bundle

    @property
    def why_missing(self) -> Optional[str]:
        """``no evidence (pending)`` for a cell without a run; None for one with."""
        return None if self.bundle is not None else "no evidence (%s)" % self.status


@dataclasses.dataclass(frozen=True)
class Grid:
    """A grid folder as every reader sees it: its validated matrix.json and its cells, in the matrix's order.

    Loaded once by :meth:`load` for compare, export and the HTML report alike.
    """

    source: str
    folder: str
    matrix: Mapping[str, Any] = dataclasses.field(repr=False)
    cells: Tuple[GridCell, ...] = ()

    @classmethod
    def load(cls, path: str, grid_hint: str = "use its cells") -> "Grid":
        """Read the grid at ``path``: matrix.json and the bundle of every cell that has one.

        The grid is judged by :func:`wakelab.evidence.load.load_grid_index`: a
        cell that never ran is kept without a bundle; a cell whose evidence is
        gone although matrix.json says it ran, a cell folder outside the grid,
        a corrupt matrix.json, or a cell whose summary is there but invalid is
        an :class:`EvidenceError` (one line).  ``grid_hint`` is what a cell that
        is itself a grid is told to do (see :meth:`Bundle.load`).
        """
        from wakelab.evidence.load import load_grid_index

        index = load_grid_index(path)
        cells = tuple(
            GridCell(cell.label, dict(cell.dimensions), cell.status,
                     Bundle.load(cell.folder, label=cell.label, grid_hint=grid_hint) if cell.has_evidence else None)
            for cell in index.cells
        )
        return cls(source=path, folder=os.path.abspath(path), matrix=index.matrix, cells=cells)

    @property
    def name(self) -> str:
        """The grid folder's own name."""
        return os.path.basename(os.path.abspath(self.folder))

    @property
    def dimensions(self) -> Tuple[str, ...]:
        """matrix.json's dimension names, in its order (``python``, ``placement``, ``settle_us`` ...)."""
        return tuple(str(d) for d in self.matrix.get("dimensions") or ())

    @property
    def lab(self) -> LabInfo:
        """The lab the grid ran (matrix.json's ``lab``)."""
        return LabInfo.from_dict(self.matrix.get("lab"))

    @property
    def started_utc(self) -> Any:
        return self.matrix.get("started_utc")

    @property
    def complete(self) -> Any:
        """matrix.json's ``complete``: every cell ran (None: not recorded)."""
        return self.matrix.get("complete")

    @property
    def with_evidence(self) -> Tuple[GridCell, ...]:
        """The cells that have a run, in the matrix's order."""
        return tuple(c for c in self.cells if c.bundle is not None)

    @property
    def missing(self) -> Tuple[str, ...]:
        """Labels of the cells that never wrote evidence (the grid stopped before them)."""
        return tuple(c.label for c in self.cells if c.bundle is None)

    def cell(self, label: str) -> GridCell:
        """The cell named ``label`` (EvidenceError naming the grid's cells when there is none)."""
        for cell in self.cells:
            if cell.label == label:
                return cell
        names = [c.label for c in self.cells]
        shown = ", ".join(names[:8]) + (", ... (%d in all)" % len(names) if len(names) > 8 else "")
        raise EvidenceError("%s has no cell %s (its cells: %s)" % (self.source, label, shown or "none"))
