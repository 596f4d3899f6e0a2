"""The typed evidence model: one bundle as every reader sees it.

summary.json (its contract: summary.schema.json) is loaded, validated and read into a :class:`Bundle` once; compare,
report, export and history read its frozen, typed records instead of walking the JSON.  :attr:`Bundle.summary` keeps the
validated document for the renderers that lay out every field (the JSON export, the honesty block).

The records live in the package's modules (words, sections, figures, warnings, interpreter, arms, matrix), each importing
only those before it (tests/test_layers.py), and are read by :func:`wakelab.evidence.bundle.read_record`; this module
holds :class:`Bundle` and :class:`Grid` and re-exports every record of a run.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import typing
from typing import Any, Dict, Mapping, Optional, Tuple, Type

from wakelab.errors import EvidenceError
from wakelab.percentile import percentile
from wakelab.evidence.arms import ArmOrigin, ArmRecord, ArmSamples, SamplesFile, WorkerRecord
from wakelab.evidence.figures import (
    LATENCY, RATE, CpuSide, CpuSplit, LatencyFigures, MedianSpread, RateFigures, RepetitionSpread,
    TraceFigures, TraceHolder
)
from wakelab.evidence.interpreter import Interpreter
from wakelab.evidence.bundle import CELLS_DIR, GridCellIndex, GridIndex, Of, R, Record, T, json_field, listed, read_as
from wakelab.evidence.sections import (
    Conditions, Execution, LabInfo, Machine, Observed, ObservedProcess, Parameters, Reading, Soak, System, Timer, Tracing
)
from wakelab.evidence.warnings import NOTE_LEVEL, WARNING_LEVEL, WarningKind, WarningRecord
from wakelab.evidence.words import RunState, run_state

if typing.TYPE_CHECKING:
    from wakelab.evidence.matrix import MatrixDoc

# ``wakelab run``'s ``--repeat`` unless told; a bundle without ``execution.repeat`` measured once.
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
    finished_utc: Any = None  # None while the run runs, or for one killed
    wall_s: Any = None
    note: Any = None  # --note
    command: Tuple[str, ...] = ()
    # Read leniently: a reader that asks for another fact is never refused for caveats that are not a list.
    caveats: Tuple[str, ...] = json_field(read=lambda caveats: tuple(caveats) if isinstance(caveats, (list, tuple)) else (), default=())
    #: 32 hex digits; None for a bundle from before run ids.
    run_id: Optional[str] = json_field(read=lambda run_id: run_id if isinstance(run_id, str) and run_id else None, default=None)
    complete: bool = False
    interrupted: bool = False
    soak: Optional[Soak] = None
    observed: Optional[Observed] = None
    #: The names of each comparison's two arms (a, b), in the lab's order.
    lab_comparisons: Tuple[Tuple[str, str], ...] = json_field("lab.comparisons", lambda comparisons: tuple(
        (str(c.get("a")), str(c.get("b"))) for c in comparisons or () if isinstance(c, Mapping)), default=())


class _Fact(Of[RunFacts, T]):
    record = "facts"


class _OfDoc(Of["MatrixDoc", T]):
    record = "doc"


@dataclasses.dataclass(frozen=True)
class Bundle:
    """One validated evidence bundle: ``source`` the path as the user gave it, ``folder`` the bundle's folder (samples
    files are relative to it), its summary, ``label`` how readers name it, and typed views of the summary."""

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
        return os.path.basename(os.path.abspath(self.folder))

    # the run's own facts and its run-wide sections, each read once
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
        """Run-wide section ``section`` as recorded: every key, known or not (empty: absent)."""
        value = self.summary.get(section)
        return value if isinstance(value, Mapping) else {}

    @property
    def run_state(self) -> RunState:
        return run_state(self.complete, self.interrupted, self.finished_utc)

    def warnings(self) -> Tuple[WarningRecord, ...]:
        return tuple(WarningRecord.from_json(w) for w in self.summary.get("warnings") or ())

    def arm_entries(self) -> Tuple[Mapping[str, object], ...]:
        return tuple(self.summary.get("arms") or ())

    def arms(self) -> Tuple[ArmRecord, ...]:
        """The arms, in run order (read once)."""
        return self._arms

    _arms = functools.cached_property(lambda bundle: tuple(ArmRecord.from_dict(entry) for entry in bundle.arm_entries()))

    def arms_by_name(self) -> Dict[str, ArmRecord]:
        return {arm.name: arm for arm in self.arms()}

    def describe(self) -> str:
        interp = self.interpreter
        return "%s, %s, %s %s on %s" % (self.lab_id, self.started_utc, interp.implementation, interp.version, self.hostname)

    # -- samples ----------------------------------------------------------------------

    def samples_file(self, arm: ArmRecord) -> SamplesFile:
        """Arm ``arm``'s samples file as stored (EvidenceError when unusable)."""
        from wakelab.evidence.load import load_samples

        return SamplesFile.from_dict(load_samples(self.folder, dict(arm.entry)))

    def latency_samples(self, arm: ArmRecord) -> ArmSamples:
        """Every raw wake of a measured latency arm; a soak past its raw-sample cap is refused (EvidenceError), where
        :meth:`kept_latency_samples` gives its kept samples."""
        samples = self.kept_latency_samples(arm)
        if not samples.every_wake:
            raise EvidenceError("%s: arm %s is a soak past its raw-sample cap: the samples file holds its first %d of %s "
                                "wakes (the rest are in its histogram), which this reads whole" % (
                                    self.source, arm.name, samples.kept, samples.total))
        return samples

    def kept_latency_samples(self, arm: ArmRecord) -> ArmSamples:
        """The raw wakes a measured latency arm's samples file keeps: every one (n), or a soak's first whole chunks, lining
        up with its worker records (:meth:`raw_kept`) beside a histogram of all n wakes.  EvidenceError (one line) otherwise.
        """
        stored = self.samples_file(arm)
        if stored.kind != LATENCY:
            raise EvidenceError("%s: arm %s: the samples file holds %s samples, the summary says latency" % (
                self.source, arm.name, stored.kind))
        values = tuple(stored.samples_ns)
        total = self.raw_kept(arm, values)
        if total is None:
            raise EvidenceError("%s: the samples of arm %s hold %d wakes but summary.json says n = %s" % (
                os.path.join(self.folder, str(arm.samples_file)), arm.name, len(values), arm.latency and arm.latency.n))
        histogram = stored.histogram
        if total != len(values):
            recorded = histogram.get("total") if histogram is not None else None
            if recorded != total:
                where = "has no histogram" if histogram is None else "has a histogram of %s wakes" % (recorded,)
                raise EvidenceError("%s: arm %s is a soak past its raw-sample cap, but its samples file %s where "
                                    "summary.json says n = %d: the bundle was edited or mixed" % (
                                        self.source, arm.name, where, total))
        components = {str(k): tuple(v) for k, v in sorted(stored.components_ns.items())}
        return ArmSamples(values, components, total, histogram)

    def raw_kept(self, arm: ArmRecord, values: Any) -> Optional[int]:
        """The arm's counted wakes (n) when ``values`` (its raw samples: ints, or a numpy array) are every wake or a soak's
        kept chunks; None when they are not.

        A soak past its raw-sample cap (``soak.raw_kept == len(values) < n``) keeps whole chunks, one worker record each:
        the records' ``n`` must add up to the kept samples, be as many as ``soak.raw_kept_slices``, and each record's
        ``p50_ns`` be the type-7 median of its chunk; EvidenceError (one line) when they do not line up.
        """
        total = arm.latency.n if arm.latency is not None else None
        count = len(values)
        workers = arm.workers or ()
        if count == total:
            return count
        soak = self.soak
        if soak is None or soak.raw_kept != count or total is None or count >= total:
            return None
        refuse = "%s: arm %s is a soak past its raw-sample cap whose kept samples (the first %d of %d wakes) do not " \
                 "line up with its kept chunks' worker records: %%s" % (self.source, arm.name, count, total)
        if not workers or not all(w.in_evidence for w in workers):
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
        return total


@dataclasses.dataclass(frozen=True)
class GridCell(GridCellIndex):
    """One cell of a grid as matrix.json lists it, and its run (None: the grid stopped before it)."""

    bundle: Optional[Bundle] = None

    @property
    def evidence(self) -> Bundle:
        """The cell's run, for a reader that took only :attr:`Grid.with_evidence`."""
        if self.bundle is None:
            raise EvidenceError("cell %s has no evidence (%s)" % (self.label, self.status))
        return self.bundle

    @property
    def why_missing(self) -> Optional[str]:
        return None if self.bundle is not None else "no evidence (%s)" % self.status


@dataclasses.dataclass(frozen=True)
class Grid(GridIndex):
    """A grid folder as every reader sees it: matrix.json as stored (``matrix``, which the JSON export writes back whole)
    and read once (``doc``), and its cells with their runs, in the matrix's order."""

    cells: Tuple[GridCell, ...] = ()
    source: str = ""

    @classmethod
    def load(cls, path: str, grid_hint: str = "use its cells") -> "Grid":
        """Read the grid at ``path`` (judged by :func:`wakelab.evidence.load.load_grid_index`) and the bundle of every cell
        that has one; ``grid_hint`` is what a cell that is itself a grid is told to do (see :meth:`Bundle.load`)."""
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

    def cell(self, label: str) -> GridCell:
        for cell in self.cells:
            if cell.label == label:
                return cell
        raise EvidenceError("%s has no cell %s (its cells: %s)" % (self.source, label, listed([c.label for c in self.cells], 8) or "none"))


__all__ = [
    "DEFAULT_REPEAT", "LATENCY", "NOTE_LEVEL", "RATE", "WARNING_LEVEL",
    "ArmOrigin", "ArmRecord", "ArmSamples", "Bundle", "Conditions", "CpuSide", "CpuSplit", "Execution", "Grid", "GridCell",
    "Interpreter", "LabInfo", "LatencyFigures", "Machine", "MedianSpread", "Observed", "ObservedProcess", "Parameters", "Reading", "RateFigures",
    "RepetitionSpread", "SamplesFile", "Soak", "System", "Timer", "TraceFigures", "TraceHolder", "Tracing", "WarningKind",
    "WarningRecord", "WorkerRecord",
]
