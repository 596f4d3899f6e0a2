"""One run as every renderer lays it out: the bundle and what the analysis draws from it, computed once.

As hyperfine computes relative speeds before any exporter runs, a :class:`RunView` is built once per
loaded bundle (:func:`view_of`) and handed to summary.txt, the HTML report and the Markdown export,
which only place its fields.  Each field is computed the first time a renderer asks for it and kept:
an export that never shows the guidance never pays for it."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Tuple, Union

from wakelab.analysis.caveats import NativeRatio, bundle_of, Pairing, lab_pairings, native_ratios
from wakelab.analysis.warning_groups import MachineLoad, WarningGroup, group_warnings, machine_load
from wakelab.evidence.model import ArmRecord, Bundle, WarningRecord

if TYPE_CHECKING:
    from wakelab.analysis.compare import ArmComparison, RunComparison
    from wakelab.analysis.components import FloorGap
    from wakelab.analysis.guidance import Guidance, Ranking


@dataclasses.dataclass(frozen=True)
class RunView:
    """A loaded run (``bundle``) and the analysis of it that renderers lay out (each computed once, when first read)."""

    bundle: Bundle

    @property
    def summary(self) -> Mapping[str, object]:
        return self.bundle.summary

    @functools.cached_property
    def native_ratios(self) -> Mapping[str, NativeRatio]:
        return native_ratios(self.bundle)

    @functools.cached_property
    def pairings(self) -> Tuple[Pairing, ...]:
        """The lab's comparisons whose two arms both ran, in the lab's order."""
        return tuple(lab_pairings(self.bundle))

    @functools.cached_property
    def rankings(self) -> Tuple["Ranking", ...]:
        """Each group of comparable measured latency arms, fastest p50 first."""
        from wakelab.analysis.guidance import rank_wake_paths
        return rank_wake_paths(self.bundle)

    @functools.cached_property
    def guidance(self) -> "Guidance":
        """What the run's figures advise (:func:`~wakelab.analysis.guidance.guidance_for`), from :attr:`rankings`."""
        from wakelab.analysis.guidance import guidance_for
        return guidance_for(self.bundle, self.rankings)

    @functools.cached_property
    def traced_order(self) -> Tuple[Tuple[ArmRecord, Optional[str]], ...]:
        """The arms in the order "where the time goes" shows them, each with the Python arm it is the C floor of
        (None for the others): :func:`~wakelab.analysis.components.traced_arm_order`."""
        from wakelab.analysis.components import traced_arm_order
        return tuple(traced_arm_order(self.bundle))

    def floor_gaps(self, band: str) -> Tuple["FloorGap", ...]:
        from wakelab.analysis.components import floor_gaps
        return tuple(floor_gaps(self.bundle, band))

    @functools.cached_property
    def warnings(self) -> Tuple[WarningRecord, ...]:
        """The measurement-quality warnings (a sentence from an older bundle is one)."""
        return tuple(r for r in self.bundle.warnings() if not r.is_note)

    @functools.cached_property
    def notes(self) -> Tuple[WarningRecord, ...]:
        """The records of level ``note`` (a percentile left out for want of wakes)."""
        return tuple(r for r in self.bundle.warnings() if r.is_note)

    @functools.cached_property
    def warning_groups(self) -> Tuple[WarningGroup, ...]:
        return group_warnings(self.warnings)

    @functools.cached_property
    def machine_load(self) -> Optional[MachineLoad]:
        """The other processes that kept the machine busy during the run, or None (:func:`~wakelab.analysis.warning_groups.machine_load`)."""
        return machine_load(self.bundle.summary)


@dataclasses.dataclass(frozen=True)
class AgainstFirst:
    """One run of several against the first, as ``wakelab compare`` judges it: ``comparison`` None when there is
    none, and ``why_not`` says why (not comparable, compare's libraries missing)."""

    comparison: Optional["RunComparison"]
    why_not: Optional[str] = None

    def arm(self, name: str) -> Optional["ArmComparison"]:
        if self.comparison is None:
            return None
        return next((arm for arm in self.comparison.arms if arm.name == name), None)


def compare_with_first(bundles: Sequence[Bundle]) -> Tuple[AgainstFirst, ...]:
    """Each bundle after the first against the first, as ``wakelab compare FIRST OTHER`` does it with its
    default settings, every difference between the runs compared on purpose (``--across`` every name):
    the runs of one report were put side by side on purpose.  Without compare's libraries (numpy,
    scipy) or for runs compare refuses, a record with ``why_not`` instead."""
    from wakelab.errors import EvidenceError
    from wakelab.extras import install_command, missing

    if missing("compare"):
        why = "compare's verdicts need %s (%s)" % (", ".join(missing("compare")), install_command("compare"))
        return tuple(AgainstFirst(None, why) for _ in bundles[1:])
    from wakelab.analysis.compare import ACROSS_NAMES, Settings, compare_runs

    out = []
    for other in bundles[1:]:
        try:
            out.append(AgainstFirst(compare_runs(bundles[0], other, Settings(), ACROSS_NAMES)))
        except (EvidenceError, ValueError) as exc:
            out.append(AgainstFirst(None, str(exc)))
    return tuple(out)


def view_of(run: Union[RunView, Bundle, Mapping[str, object]]) -> RunView:
    """``run`` as a :class:`RunView`: itself, a loaded bundle's view, or the view of a summary document held in memory."""
    if isinstance(run, RunView):
        return run
    return RunView(bundle_of(run))
