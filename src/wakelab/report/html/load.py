"""Loading: the bundles a page is made from (runs, grids and their cells), validated, in the page's order."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.view import RunView
from wakelab.evidence.model import ArmSamples, Bundle, Grid

if TYPE_CHECKING:
    from wakelab.analysis.hdr import LogLinearHistogram


@dataclasses.dataclass(frozen=True)
class RunEvidence:
    """A loaded bundle (the evidence model's :class:`Bundle`) and the raw samples of its measured latency arms.

    ``samples`` are the raw samples the samples files keep: every wake, except
    for a soak past its raw-sample cap (``ArmSamples.every_wake`` False),
    whose every wake is in ``histograms`` (its
    :class:`~wakelab.analysis.hdr.LogLinearHistogram`, by arm name).
    """

    bundle: Bundle
    samples: Mapping[str, ArmSamples]
    grid: Optional[str] = None  # the grid folder this run is a cell of
    cell: Optional[str] = None  # its cell's label in that grid
    histograms: Mapping[str, "LogLinearHistogram"] = dataclasses.field(default_factory=dict)

    @property
    def source(self) -> str:
        return self.bundle.source

    @property
    def folder(self) -> str:
        return self.bundle.folder

    @functools.cached_property
    def view(self) -> RunView:
        """The run's analysis (ratios, pairings, guidance ...), computed once for every section that shows it."""
        return RunView(self.bundle)


# --- loading ----------------------------------------------------------------------------


def load_run(path: str, grid: Optional[str] = None, cell: Optional[str] = None) -> RunEvidence:
    """Load and validate the bundle at ``path`` (its folder or its summary.json) with its samples.

    Raises :class:`EvidenceError` when the summary or the samples of an arm
    that says it was measured are missing, corrupt, or disagree in size.
    """
    return run_evidence(Bundle.load(path, label=cell or "", grid_hint="report its cells"), grid, cell)


def run_evidence(bundle: Bundle, grid: Optional[str] = None, cell: Optional[str] = None) -> RunEvidence:
    """A loaded bundle with the samples of its measured latency arms (checked against its summary).

    A soak past its raw-sample cap is read as it is kept: the raw samples of
    its first chunks, and its histogram of every wake (checked here, once).
    """
    from wakelab.analysis.histogram import counters_of

    samples = {arm.name: bundle.kept_latency_samples(arm) for arm in bundle.arms() if arm.kind == "latency" and arm.measured}
    histograms = {name: counters_of(kept, "%s: arm %s" % (bundle.source, name))
                  for name, kept in samples.items() if not kept.every_wake}
    return RunEvidence(bundle, samples, grid, cell, histograms)


@dataclasses.dataclass(frozen=True)
class GridCellView:
    """One cell of a grid as the page lays it out: its label, dimensions and state, and its run (None: never ran)."""

    label: str
    dimensions: Mapping[str, object]
    status: str
    run: Optional[RunEvidence]


@dataclasses.dataclass(frozen=True)
class GridView:
    """A grid folder given to ``report``: the grid as loaded (:class:`~wakelab.evidence.model.Grid`) and every cell
    with its run, in the matrix's order."""

    folder: str
    grid: Grid
    cells: Tuple[GridCellView, ...]


@dataclasses.dataclass(frozen=True)
class ReportInput:
    """What a report is made of: the runs, notes about what was given but could not be shown, and the grids given."""

    runs: List[RunEvidence]
    notes: List[str]
    grids: List[GridView] = dataclasses.field(default_factory=list)


def load_grid(folder: str) -> ReportInput:
    """The cells of the grid in ``folder`` that hold evidence, in the matrix's order (as
    :meth:`wakelab.evidence.model.Grid.load` judges it); a cell not run yet is left out with a note."""
    grid = Grid.load(folder, grid_hint="report its cells")
    views = [GridCellView(cell.label, cell.dimensions, cell.status,
                          run_evidence(cell.bundle, grid=folder, cell=cell.label) if cell.bundle is not None else None)
             for cell in grid.cells]
    runs = [v.run for v in views if v.run is not None]
    pending = grid.missing
    notes = ["%s: %d cell%s not run yet (%s)." % (folder, len(pending), "" if len(pending) == 1 else "s", ", ".join(pending))] if pending else []
    return ReportInput(runs, notes, [GridView(folder, grid, tuple(views))])


def load_runs(paths: Sequence[str]) -> ReportInput:
    """Every run named by ``paths``: a bundle (its folder or summary.json) or a grid folder (its cells)."""
    from wakelab.evidence.load import is_grid_folder, orphan_cells_error, orphan_cells_folder

    runs: List[RunEvidence] = []
    notes: List[str] = []
    grids: List[GridView] = []
    for path in paths:
        if is_grid_folder(path):
            loaded = load_grid(path)
            runs.extend(loaded.runs)
            notes.extend(loaded.notes)
            grids.extend(loaded.grids)
        elif orphan_cells_folder(path):
            raise orphan_cells_error(path)
        else:
            runs.append(load_run(path))
    return ReportInput(runs, notes, grids)


def version_key(version: str) -> Tuple[int, ...]:
    """``3.10.4`` as (3, 10, 4), so that 3.9 sorts before 3.10 (``3.13.0rc1`` as (3, 13, 0))."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def order_runs(runs: Sequence[RunEvidence]) -> List[RunEvidence]:
    """Runs by machine (when there are several), then interpreter version; otherwise as given."""
    hosts = {r.bundle.hostname for r in runs}

    def key(run: RunEvidence) -> Tuple[Any, ...]:
        interp = run.bundle.interpreter
        return (run.bundle.hostname if len(hosts) > 1 else "", version_key(interp.version), interp.implementation,
                interp.free_threaded_build)

    return sorted(runs, key=key)
