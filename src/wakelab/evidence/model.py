"""The typed evidence model: one bundle as every reader sees it.

``summary.json`` (its JSON Schema, ``summary.schema.json``, is the contract) is loaded, validated and turned into a
:class:`Bundle` here, once; ``compare``, ``report``, ``export`` and ``history`` read a :class:`Bundle` and its typed
records (:class:`ArmRecord`, :class:`LatencyFigures`, :class:`RateFigures`, :class:`Interpreter`) instead of walking the
JSON themselves.  The validated document stays available as :attr:`Bundle.summary` for the renderers that lay out every
field (the JSON export, the honesty block), and a bundle dumps itself back to the same text the runner wrote
(:meth:`Bundle.dumps`).

Records are frozen: reading evidence never changes it.

The records live in the package's modules (words, sections, figures, warnings, interpreter, arms, matrix), each
importing only those before it (tests/test_layers.py), and are read by one reader
(:func:`wakelab.evidence.bundle.read_record`); this module holds :class:`Bundle` and :class:`Grid` and re-exports
every record of a run, so readers import them from here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import typing
from typing import Any, Dict, Mapping, Optional, Tuple, Type, Union

from wakelab.errors import EvidenceError
from wakelab.percentile import percentile
from wakelab.evidence.arms import ArmOrigin, ArmRecord, ArmSamples, RawKept, SamplesFile, WorkerRecord
from wakelab.evidence.figures import (
    LATENCY, PERCENTILE_KEYS, RATE, CpuSide, CpuSplit, LatencyFigures, MedianSpread, RateFigures, RepetitionSpread,
    TraceFigures, TraceHolder
)
from wakelab.evidence.interpreter import Interpreter
from wakelab.evidence.bundle import CELLS_DIR, GridCellIndex, GridIndex, Of, R, Record, T, dumps, json_field, listed, read_as
from wakelab.evidence.sections import (
    Conditions, Execution, LabInfo, Machine, Observed, ObservedProcess, Parameters, Reading, Soak, System, Timer, Tracing
)
from wakelab.evidence.warnings import NOTE_LEVEL, WARNING_LEVEL, WarningKind, WarningRecord
from wakelab.evidence.words import RunState, run_state

if typing.TYPE_CHECKING:
    from wakelab.evidence.matrix import MatrixDoc

# How many repetitions ``wakelab run`` measures unless told (``--repeat``); a bundle without ``execution.repeat``
# measured once.
DEFAULT_REPEAT = 5


def _section(record: Type[R], key: Optional[str]) -> "functools.cached_property[R]":
    """Section ``key`` of the summary (None: the summary itself) as its typed record, read once."""
    return functools.cached_property(lambda bundle: record.from_dict(bundle.summary if key is None else bundle.summary.get(key)))


@dataclasses.dataclass(frozen=True)
class RunFacts(Record):
    """summary.json's own facts about the run (a :class:`Bundle` hands each out as its own attribute)."""

    lab_id: str = json_field("lab.id", default="")
    tool_version: Any = json_field("tool.version", default=None)
    hostname: str = json_field("machine.hostname", default="")
    started_utc: str = ""
    #: When the run ended, as recorded (None while it runs, or for one killed).
    finished_utc: Any = None
    wall_s: Any = None
    #: The user's note on the run (``--note``), None without one.
    note: Any = None
    #: The command line that made the run, as recorded (empty: none recorded).
    command: Tuple[str, ...] = ()
    #: As stored (a reader that asks for another fact is never refused for caveats that are not a list).
    caveats: Tuple[str, ...] = json_field(read=lambda caveats: tuple(caveats) if isinstance(caveats, (list, tuple)) else (), default=())
    #: The run's random id (32 hex digits); None for a bundle from before run ids (or one that records none).
    run_id: Optional[str] = json_field(read=lambda run_id: run_id if isinstance(run_id, str) and run_id else None, default=None)
    complete: bool = False
    interrupted: bool = False
    soak: Optional[Soak] = None
    #: What the machine was doing while the run measured (None: not recorded, a bundle from before it was).
    observed: Optional[Observed] = None
    #: The lab's comparisons, each as the names of its two arms (a, b), in the lab's order.
    lab_comparisons: Tuple[Tuple[str, str], ...] = json_field("lab.comparisons", lambda comparisons: tuple(
        (str(c.get("a")), str(c.get("b"))) for c in comparisons or () if isinstance(c, Mapping)), default=())


class _Fact(Of[RunFacts, T]):
    record = "facts"


class _OfDoc(Of["MatrixDoc", T]):
    record = "doc"


@dataclasses.dataclass(frozen=True)
class Bundle:
    """One validated evidence bundle: where it is, its summary, and typed views of it.

    ``source`` is the path as the user gave it, ``folder`` the bundle's folder (samples files are relative to it),
    ``label`` how readers name it.
    """

    source: str
    folder: str
    summary: Mapping[str, Any] = dataclasses.field(repr=False)
    label: str = ""

    @classmethod
    def load(cls, path: str, label: str = "", grid_hint: str = "use its cells") -> "Bundle":
        """Load and validate the bundle at ``path`` (its folder or its summary.json).

        Raises :class:`~wakelab.errors.EvidenceError` with one line for anything that is not a valid bundle: a grid
        folder (say which cells to use), a missing or corrupt summary, an arm listed twice.
        """
        from wakelab.evidence.load import load_summary, resolve_summary_path  # lazily: the history imports the model, not the loader

        cells = os.path.join(path, CELLS_DIR)
        if os.path.isdir(path) and not os.path.exists(resolve_summary_path(path)) and os.path.isdir(cells):
            names = sorted(os.path.join(cells, n) for n in os.listdir(cells) if os.path.isdir(os.path.join(cells, n)))
            raise EvidenceError("%s is a grid of runs, not one run: %s (%s)" % (path, grid_hint, listed(names) or "none"))
        summary = load_summary(path)
        names = [str(a.get("name")) for a in read_as(Tuple[Mapping[str, object], ...], summary.get("arms"))]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise EvidenceError("%s lists arm %s more than once" % (resolve_summary_path(path), duplicates[0]))
        folder = os.path.dirname(os.path.abspath(resolve_summary_path(path)))
        return cls(source=path, folder=folder, summary=summary, label=label or os.path.basename(folder))

    @property
    def name(self) -> str:
        """The bundle folder's own name (``lab135-20261001T060000Z``)."""
        return os.path.basename(os.path.abspath(self.folder))

    # -- the run's own facts and its run-wide sections, each read once ----------------
    facts = _section(RunFacts, None)
    lab_id = _Fact(lambda facts: facts.lab_id)
    tool_version = _Fact(lambda facts: facts.tool_version)
    hostname = _Fact(lambda facts: facts.hostname)
    started_utc = _Fact(lambda facts: facts.started_utc)
    finished_utc = _Fact(lambda facts: facts.finished_utc)
    wall_s = _Fact(lambda facts: facts.wall_s)
    note = _Fact(lambda facts: facts.note)
    command = _Fact(lambda facts: facts.command)
    caveats = _Fact(lambda facts: facts.caveats)
    run_id = _Fact(lambda facts: facts.run_id)
    complete = _Fact(lambda facts: facts.complete)
    interrupted = _Fact(lambda facts: facts.interrupted)
    soak = _Fact(lambda facts: facts.soak)
    observed = _Fact(lambda facts: facts.observed)
    lab_comparisons = _Fact(lambda facts: facts.lab_comparisons)
    interpreter = _section(Interpreter, "interpreter")
    lab = _section(LabInfo, "lab")
    parameters = _section(Parameters, "parameters")
    conditions = _section(Conditions, "conditions")
    execution = _section(Execution, "execution")
    machine = _section(Machine, "machine")
    timer = _section(Timer, "timer")
    system = _section(System, "system")
    tracing = _section(Tracing, "tracing")

    def recorded(self, section: str) -> Mapping[str, object]:
        """Run-wide section ``section`` (``conditions``, ``machine`` ...) as recorded: every key, known or not (empty: absent)."""
        value = self.summary.get(section)
        return value if isinstance(value, Mapping) else {}

    @property
    def run_state(self) -> RunState:
        return run_state(self.complete, self.interrupted, self.finished_utc)

    def warnings(self) -> Tuple[WarningRecord, ...]:
        """summary.json's measurement-quality warnings and notes, as records, in their order."""
        return tuple(WarningRecord.from_json(w) for w in self.summary.get("warnings") or ())

    def arm_entries(self) -> Tuple[Mapping[str, object], ...]:
        """The arms' raw entries, in run order (summary.json keeps run order)."""
        return tuple(self.summary.get("arms") or ())

    def arms(self) -> Tuple[ArmRecord, ...]:
        """The arms as typed records, in run order (parsed once)."""
        return self._arms

    _arms = functools.cached_property(lambda bundle: tuple(ArmRecord.from_dict(entry) for entry in bundle.arm_entries()))

    def arms_by_name(self) -> Dict[str, ArmRecord]:
        return {arm.name: arm for arm in self.arms()}

    def entries_by_name(self) -> Dict[str, Mapping[str, object]]:
        return {str(entry["name"]): entry for entry in self.arm_entries()}

    def describe(self) -> str:
        """One line naming the run: lab, start, interpreter, machine."""
        interp = self.interpreter
        return "%s, %s, %s %s on %s" % (self.lab_id, self.started_utc, interp.implementation, interp.version, self.hostname)

    # -- samples ----------------------------------------------------------------------

    def samples_file(self, arm: ArmRecord) -> SamplesFile:
        """Arm ``arm``'s samples file as stored (EvidenceError when unusable)."""
        from wakelab.evidence.load import load_samples

        return SamplesFile.from_dict(load_samples(self.folder, dict(arm.entry)))

    def latency_samples(self, arm: ArmRecord) -> ArmSamples:
        """The raw wakes of a measured latency arm, every one, checked against the summary's n.

        For readers that need every wake (the raw-samples CSV): a soak past its raw-sample cap is refused
        (EvidenceError, one line); readers that can work on the kept samples call :meth:`kept_latency_samples`.
        """
        samples = self.kept_latency_samples(arm)
        if not samples.every_wake:
            raise EvidenceError("%s: arm %s is a soak past its raw-sample cap: the samples file holds its first %d of %s "
                                "wakes (the rest are in its histogram), which this reads whole" % (
                                    self.source, arm.name, samples.kept, samples.total))
        return samples

    def kept_latency_samples(self, arm: ArmRecord) -> ArmSamples:
        """The raw wakes a measured latency arm's samples file keeps: every one, or a soak's first whole chunks.

        Checked against the summary: every wake (n), or, for a soak past its raw-sample cap, the kept chunks lining up
        with the arm's worker records (:meth:`raw_kept`) and a histogram that holds all n wakes.
        ``kept``/``total``/``every_wake`` on the result say which.  Raises :class:`~wakelab.errors.EvidenceError` (one
        line) otherwise.
        """
        stored = self.samples_file(arm)
        if stored.kind != LATENCY:
            raise EvidenceError("%s: arm %s: the samples file holds %s samples, the summary says latency" % (
                self.source, arm.name, stored.kind))
        values = tuple(stored.samples_ns)
        expected = arm.latency.n if arm.latency is not None else None
        kept = self.raw_kept(arm, values)
        if kept is None:
            raise EvidenceError("%s: the samples of arm %s hold %d wakes but summary.json says n = %s" % (
                os.path.join(self.folder, str(arm.samples_file)), arm.name, len(values), expected))
        histogram = stored.histogram
        if not kept.every_wake:
            recorded = histogram.get("total") if histogram is not None else None
            if recorded != kept.total:
                where = "has no histogram" if histogram is None else "has a histogram of %s wakes" % (recorded,)
                raise EvidenceError("%s: arm %s is a soak past its raw-sample cap, but its samples file %s where "
                                    "summary.json says n = %d: the bundle was edited or mixed" % (
                                        self.source, arm.name, where, kept.total))
        components = {str(k): tuple(v) for k, v in sorted(stored.components_ns.items())}
        return ArmSamples(values, components, kept.total, histogram)

    def raw_kept(self, arm: Union[ArmRecord, Mapping[str, object]], values: Any) -> Optional[RawKept]:
        """How many of ``arm``'s wakes ``values`` (its samples file's raw samples) are; None when they do not fit.

        Every wake when ``len(values)`` is the summary's n.  A soak past its raw-sample cap
        (``summary["soak"]["raw_kept"] == len(values) < n``) keeps whole chunks, one worker record each: the records'
        ``n`` must add up to the kept samples, there must be as many as the soak's ``raw_kept_slices``, and each
        record's ``p50_ns`` must be the type-7 median of its chunk's samples, so that each worker record is one unit of
        the kept samples; EvidenceError (one line) when they do not line up.  None for any other disagreement with n
        (the caller words it). ``values`` may be a tuple of ints or a numpy array; ``arm`` its record, or its entry.
        """
        arm = arm if isinstance(arm, ArmRecord) else ArmRecord.from_dict(arm)
        total = arm.latency.n if arm.latency is not None else None
        count = len(values)
        workers = arm.workers or ()
        if count == total:
            return RawKept(count, count, len(workers) or 1)
        soak = self.soak
        if soak is None or soak.raw_kept != count or total is None or count >= total:
            return None
        refuse = "%s: arm %s is a soak past its raw-sample cap whose kept samples (the first %d of %d wakes) do not " \
                 "line up with its kept chunks' worker records: %%s" % (self.source, arm.name, count, total)
        if not workers or not all(w.recorded for w in workers):
            raise EvidenceError(refuse % "it has none")
        sizes = [w.n for w in workers]
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes):
            raise EvidenceError(refuse % "a worker record has no whole n")
        if sum(sizes) != count:
            raise EvidenceError(refuse % ("%d workers' n add up to %d" % (len(sizes), sum(sizes))))
        if soak.raw_kept_slices is not None and soak.raw_kept_slices != len(workers):
            raise EvidenceError(refuse % ("%d worker records, the soak says %s chunks are kept" % (len(workers), soak.raw_kept_slices)))
        start = 0
        for index, (record, size) in enumerate(zip(workers, sizes)):
            chunk = values[start:start + size]
            start += size
            claimed = record.p50_ns
            if not size or claimed is None:
                continue
            as_list = getattr(chunk, "tolist", None)  # a numpy array's values as Python numbers: sorted fast
            median = float(percentile(sorted(as_list() if as_list is not None else chunk), 50.0))
            if not isinstance(claimed, (int, float)) or not math.isclose(median, float(claimed), rel_tol=1e-9, abs_tol=1e-6):
                raise EvidenceError(refuse % ("chunk %d's median is %s ns, its worker record says p50 %s ns"
                                              % (index + 1, ("%d" if median.is_integer() else "%.1f") % median, claimed)))
        return RawKept(count, total, len(workers))

    def dumps(self) -> str:
        """The summary as the runner writes it."""
        return dumps(self.summary)


@dataclasses.dataclass(frozen=True)
class GridCell(GridCellIndex):
    """One cell of a grid as matrix.json lists it (:class:`~wakelab.evidence.load.GridCellIndex`) and its run: None for a
    cell that never wrote evidence (the grid stopped before it)."""

    bundle: Optional[Bundle] = None

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
class Grid(GridIndex):
    """A grid folder as every reader sees it: its validated matrix.json, read once as a :class:`MatrixDoc` (``doc``), and
    its cells with their runs, in the matrix's order (``source``: the path as the user gave it).

    Loaded once by :meth:`load` for compare, export and the HTML report alike.  ``matrix`` is matrix.json as stored, for
    the JSON export, which writes it back whole.
    """

    cells: Tuple[GridCell, ...] = ()
    source: str = ""

    @classmethod
    def load(cls, path: str, grid_hint: str = "use its cells") -> "Grid":
        """Read the grid at ``path``: matrix.json and the bundle of every cell that has one.

        The grid is judged by :func:`wakelab.evidence.load.load_grid_index`: a cell that never ran is kept without a
        bundle; a cell whose evidence is gone although matrix.json says it ran, a cell folder outside the grid, a
        corrupt matrix.json, or a cell whose summary is there but invalid is an :class:`EvidenceError` (one line).
        ``grid_hint`` is what a cell that is itself a grid is told to do (see :meth:`Bundle.load`).
        """
        from wakelab.evidence.load import load_grid_index

        index = load_grid_index(path)
        cells = tuple(GridCell(**vars(cell), bundle=Bundle.load(cell.folder, cell.label, grid_hint) if cell.has_evidence else None)
                      for cell in index.cells)
        return cls(source=path, folder=os.path.abspath(path), matrix=index.matrix, cells=cells)

    @functools.cached_property
    def doc(self) -> "MatrixDoc":
        from wakelab.evidence.matrix import MatrixDoc

        return MatrixDoc.from_dict(self.matrix)

    @property
    def name(self) -> str:
        return os.path.basename(os.path.abspath(self.folder))

    # matrix.json's own facts, for the readers that take them from the grid
    dimensions = _OfDoc(lambda doc: doc.dimensions)
    lab = _OfDoc(lambda doc: doc.lab)
    started_utc = _OfDoc(lambda doc: doc.started_utc)
    complete = _OfDoc(lambda doc: doc.complete)

    @property
    def with_evidence(self) -> Tuple[GridCell, ...]:
        return tuple(c for c in self.cells if c.bundle is not None)

    missing = GridIndex.never_ran

    def cell(self, label: str) -> GridCell:
        """The cell named ``label`` (EvidenceError naming the grid's cells when there is none)."""
        for cell in self.cells:
            if cell.label == label:
                return cell
        raise EvidenceError("%s has no cell %s (its cells: %s)" % (self.source, label, listed([c.label for c in self.cells], 8) or "none"))


__all__ = [
    "DEFAULT_REPEAT", "LATENCY", "NOTE_LEVEL", "PERCENTILE_KEYS", "RATE", "WARNING_LEVEL",
    "ArmOrigin", "ArmRecord", "ArmSamples", "Bundle", "Conditions", "CpuSide", "CpuSplit", "Execution", "Grid", "GridCell",
    "Interpreter", "LabInfo", "LatencyFigures", "Machine", "MedianSpread", "Observed", "ObservedProcess", "Parameters", "Reading", "RateFigures", "RawKept",
    "RepetitionSpread", "SamplesFile", "Soak", "System", "Timer", "TraceFigures", "TraceHolder", "Tracing", "WarningKind",
    "WarningRecord", "WorkerRecord",
]
