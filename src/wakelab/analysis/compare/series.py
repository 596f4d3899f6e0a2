"""What an arm is compared on: its samples, checked against its summary figures (a bundle edited or mixed is
refused), and their units."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping, Optional, Sequence, Tuple, cast

from wakelab.analysis.compare.records import Run
from wakelab.errors import EvidenceError
from wakelab.evidence.model import ArmRecord
from wakelab.percentile import percentile as type7_percentile

# Recomputed figures must match the summary's to this relative tolerance.
_FIGURE_TOLERANCE = 1e-9


def _mismatch(run: Run, name: str, what: str, from_samples: object, in_summary: object) -> EvidenceError:
    return EvidenceError("%s: arm %s: the samples file does not match summary.json (%s %s from the samples, %s in the "
                         "summary): the bundle was edited or mixed" % (run.source, name, what, from_samples, in_summary))


def _close(a: float, b: Optional[float]) -> bool:
    return b is not None and math.isclose(a, b, rel_tol=_FIGURE_TOLERANCE, abs_tol=1e-6)


def load_series(run: Run, arm: ArmRecord) -> Tuple[Any, str]:
    """The values an arm is compared on, checked against its summary figures, and their unit: a latency arm's wake
    times (ns, one float64 array: every wake, or the first whole chunks a soak past its raw-sample cap keeps), a
    rate arm's ops/s per round."""
    name = arm.name
    stored = run.samples_file(arm)
    if stored.kind != arm.kind:
        raise EvidenceError("%s: arm %s: the samples file holds %s samples, summary.json says %s" % (
            run.source, name, stored.kind, arm.kind))
    unit = stored.unit
    if arm.is_latency:
        import numpy as np

        # One float64 array, the parsed file dropped at once: a large bundle's samples are
        # held as 8 bytes each, not as Python numbers (two 80 MB bundles fit in a few hundred MB).
        samples = np.asarray(stored.samples_ns, dtype=np.float64)
        del stored
        n = arm.latency.n if arm.latency is not None else None
        if samples.size != n:
            # A soak past its raw-sample cap keeps its first chunks (EvidenceError when they do not line up
            # with its worker records); its p50 is the histogram's, so each chunk's is checked instead.
            if run.raw_kept(arm, samples) is None:
                raise _mismatch(run, name, "n", samples.size, n)
        elif samples.size:
            p50 = float(np.percentile(samples, 50.0))  # linear interpolation: type 7
            if not _close(p50, arm.p50_ns):
                raise _mismatch(run, name, "p50", p50, arm.p50_ns)
        return samples, unit
    n_per_round = stored.n_per_round
    if n_per_round is None or n_per_round <= 0:
        raise EvidenceError("%s: arm %s: the samples file has no valid n_per_round" % (run.source, name))
    rates = [n_per_round * 1e9 / max(t, 1) for t in stored.round_ns]
    rounds = arm.rate.rounds if arm.rate is not None else None
    ops_per_s = arm.rate.ops_per_s if arm.rate is not None else None
    if len(rates) != rounds:
        raise _mismatch(run, name, "rounds", len(rates), rounds)
    if rates:
        median = type7_percentile(sorted(rates), 50.0)
        if not _close(median, ops_per_s):
            raise _mismatch(run, name, "median ops/s", median, ops_per_s)
    return rates, unit


def traced(arm: ArmRecord) -> bool:
    """The arm was split into the components of a wake (``wakelab run --trace``)."""
    trace = arm.trace
    return trace is not None and trace.traced


@dataclasses.dataclass(frozen=True)
class TracedPass:
    """The per-wake figures of a traced pass (ns, in wake order): each wake's latency, its components (summing to it)
    and each named re-block cause's time (None: a bundle from before re-blocks were named)."""

    latency: Sequence[float]
    components: Mapping[str, Sequence[float]]
    reblocks: Optional[Mapping[str, Sequence[float]]] = None

    @property
    def wakes(self) -> int:
        return len(self.latency)


def load_traced_components(run: Run, arm: ArmRecord) -> TracedPass:
    """The per-wake components of a traced arm's traced pass, checked: well formed, each wake's components summing
    to its latency, as many wakes as the summary's ``trace.components.wakes``."""
    import numpy as np

    from wakelab.analysis.components import COMPONENTS, TracedSeriesError, traced_reblocks, traced_series

    name = arm.name
    part = {"traced": run.samples_file(arm).traced}  # as the components' readers take it
    try:
        series = traced_series(part)
        reblocks = traced_reblocks(part, series)
    except TracedSeriesError as exc:
        raise EvidenceError("%s: arm %s: the samples file's traced part is unusable: %s" % (run.source, name, exc)) from None
    del part
    if series is None:
        raise EvidenceError("%s: arm %s: summary.json says it was traced, but its samples file has no traced part"
                            % (run.source, name))
    wakes = arm.trace.wakes if arm.trace is not None else None
    if len(series["latency"]) != wakes:
        raise _mismatch(run, name, "traced wakes", len(series["latency"]), wakes)
    if not series["latency"]:
        raise EvidenceError("%s: arm %s: the traced pass holds no wake" % (run.source, name))
    def floats(values: Sequence[int]) -> Sequence[float]:  # one float64 array (a sequence of floats to its readers)
        return cast(Sequence[float], np.asarray(values, dtype=np.float64))

    return TracedPass(floats(series["latency"]), {key: floats(series[key]) for key in COMPONENTS},
                      None if reblocks is None else {cause: floats(values) for cause, values in reblocks.items()})


def status_reason(run: Run, arm: ArmRecord) -> Optional[str]:
    """Why an arm of ``run`` cannot be compared (it did not end ok, or has no samples); None when it can."""
    if not arm.ok:
        return "%s in %s%s" % (arm.status, run.label, (": %s" % arm.reason) if arm.reason else "")
    if arm.is_latency:
        if arm.latency is None or not arm.latency.n:
            return "no samples in %s" % run.label
    elif arm.rate is None:
        return "no samples in %s" % run.label
    return None


def arm_units(arm: ArmRecord, values: Any) -> Any:
    """The arm's values split into its worker slices (on each worker record's ``n``, or ``rounds`` for a rate arm),
    the units of the two-level bootstrap (:func:`wakelab.analysis.hierarchical.split_units`)."""
    from wakelab.analysis.hierarchical import slice_sizes, split_units
    return split_units(values, slice_sizes(arm.workers, "n" if arm.is_latency else "rounds"))
