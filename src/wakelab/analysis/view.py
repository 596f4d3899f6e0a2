"""One run as every renderer lays it out: the bundle and what the analysis draws from it, each field computed the
first time a renderer asks for it and kept."""

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

    bundle: Bundle

    @property
    def summary(self) -> Mapping[str, object]:
        return self.bundle.summary

    @functools.cached_property
    def native_ratios(self) -> Mapping[str, NativeRatio]:
        return native_ratios(self.bundle)

    @functools.cached_property
    def pairings(self) -> Tuple[Pairing, ...]:
        return tuple(lab_pairings(self.bundle))

    @functools.cached_property
    def rankings(self) -> Tuple["Ranking", ...]:
        from wakelab.analysis.guidance import rank_wake_paths
        return rank_wake_paths(self.bundle)

    @functools.cached_property
    def guidance(self) -> "Guidance":
        from wakelab.analysis.guidance import guidance_for
        return guidance_for(self.bundle, self.rankings)

    @functools.cached_property
    def traced_order(self) -> Tuple[Tuple[ArmRecord, Optional[str]], ...]:
        from wakelab.analysis.components import traced_arm_order
        return tuple(traced_arm_order(self.bundle))

    def floor_gaps(self, band: str) -> Tuple["FloorGap", ...]:
        from wakelab.analysis.components import floor_gaps
        return tuple(floor_gaps(self.bundle, band))

    @functools.cached_property
    def warnings(self) -> Tuple[WarningRecord, ...]:
        return tuple(r for r in self.bundle.warnings() if not r.is_note)

    @functools.cached_property
    def notes(self) -> Tuple[WarningRecord, ...]:
        return tuple(r for r in self.bundle.warnings() if r.is_note)

    @functools.cached_property
    def warning_groups(self) -> Tuple[WarningGroup, ...]:
        return group_warnings(self.warnings)

    @functools.cached_property
    def machine_load(self) -> Optional[MachineLoad]:
        return machine_load(self.bundle.summary)


@dataclasses.dataclass(frozen=True)
class AgainstFirst:
    """One run of several against the first (``comparison`` None when there is none, ``why_not`` says why)."""

    comparison: Optional["RunComparison"]
    why_not: Optional[str] = None

    def arm(self, name: str) -> Optional["ArmComparison"]:
        if self.comparison is None:
            return None
        return next((arm for arm in self.comparison.arms if arm.name == name), None)


def compare_with_first(bundles: Sequence[Bundle]) -> Tuple[AgainstFirst, ...]:
    """Each bundle after the first against the first, as ``wakelab compare`` does it with ``--across`` every name:
    the runs of one report were put side by side on purpose."""
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
    if isinstance(run, RunView):
        return run
    return RunView(bundle_of(run))
