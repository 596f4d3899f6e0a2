"""Loading: the bundles a page is made from (runs, grids and their cells), validated, in the page's order."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Any, List, Mapping, Sequence, Tuple

from wakelab.analysis.view import RunView
from wakelab.evidence.model import ArmSamples, Bundle, Grid
from wakelab.formatting import counted

if TYPE_CHECKING:
    from wakelab.analysis.hdr import LogLinearHistogram

# What a grid folder given where a run is expected (a grid's cell that is one) is told to do.
GRID_HINT = "report its cells"


@dataclasses.dataclass(frozen=True)
class RunEvidence:
    """A loaded bundle (the evidence model's :class:`Bundle`) and the raw samples of its measured latency arms.

    ``samples`` are the raw samples the samples files keep: every wake, except for a soak past its raw-sample cap
    (``ArmSamples.every_wake`` False), whose every wake is in ``histograms`` (a LogLinearHistogram, by arm name).
    """

    bundle: Bundle
    samples: Mapping[str, ArmSamples]
    histograms: Mapping[str, "LogLinearHistogram"] = dataclasses.field(default_factory=dict)

    @functools.cached_property
    def view(self) -> RunView:
        """The run's analysis (ratios, pairings, guidance ...), computed once for every section that shows it."""
        return RunView(self.bundle)


def load_run(path: str) -> RunEvidence:
    """Load and validate the bundle at ``path`` (its folder or its summary.json) with its samples."""
    return run_evidence(Bundle.load(path, grid_hint=GRID_HINT))


def run_evidence(bundle: Bundle) -> RunEvidence:
    """A loaded bundle with the samples of its measured latency arms (checked against its summary); a soak past its
    raw-sample cap as it is kept: the raw samples of its first chunks, and its histogram of every wake."""
    from wakelab.analysis.histogram import counters_of

    samples = {arm.name: bundle.kept_latency_samples(arm) for arm in bundle.arms() if arm.kind == "latency" and arm.measured}
    histograms = {name: counters_of(kept, "%s: arm %s" % (bundle.source, name))
                  for name, kept in samples.items() if not kept.every_wake}
    return RunEvidence(bundle, samples, histograms)


@dataclasses.dataclass(frozen=True)
class ReportInput:
    """What a report is made of: the runs, notes about what was given but could not be shown, and the grids given."""

    runs: List[RunEvidence]
    notes: List[str]
    grids: List[Grid]


def load_runs(paths: Sequence[str]) -> ReportInput:
    """Every run named by ``paths``: a bundle (its folder or summary.json) or a grid folder (its cells that ran, in the
    matrix's order; a cell not run yet is left out with a note)."""
    from wakelab.evidence.load import is_grid

    loaded = ReportInput([], [], [])
    for path in paths:
        if not is_grid(path):
            loaded.runs.append(load_run(path))
            continue
        grid = Grid.load(path, grid_hint=GRID_HINT)
        loaded.runs.extend(run_evidence(cell.evidence) for cell in grid.with_evidence)
        loaded.grids.append(grid)
        if grid.never_ran:
            loaded.notes.append("%s: %s not run yet (%s)." % (path, counted(len(grid.never_ran), "cell"), ", ".join(grid.never_ran)))
    return loaded


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
