"""One run as every renderer lays it out: the bundle and what the analysis draws from it, computed once.

hyperfine computes relative speeds before any exporter runs; wakelab does the
same for a run.  A :class:`RunView` is built once per loaded bundle
(:func:`view_of`) and handed to summary.txt and the short form, the HTML
report and the Markdown export, which only place its fields: the "vs C"
ratios, the lab's pairings, the rankings of comparable wake paths, the
guidance, and the measurement-quality warnings apart from the notes, gathered
into groups that each say one thing (:mod:`wakelab.analysis.warning_groups`), and
the load the run saw beside it.

Each field is computed the first time a renderer asks for it and kept: a CSV
export that never shows the guidance never pays for it, and a page that shows
the ratios in three places computes them once.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, Mapping, Optional, Tuple, Union

from wakelab.analysis.caveats import NativeRatio, Pairing, lab_pairings, native_ratios
from wakelab.analysis.warning_groups import MachineLoad, WarningGroup, group_warnings, machine_load
from wakelab.evidence.model import Bundle, WarningRecord

if TYPE_CHECKING:
    from wakelab.analysis.guidance import Guidance, Ranking


@dataclasses.dataclass(frozen=True)
class RunView:
    """A loaded run (``bundle``) and the analysis of it that renderers lay out (each computed once, when first read)."""

    bundle: Bundle

    @property
    def summary(self) -> Mapping[str, Any]:
        return self.bundle.summary

    @functools.cached_property
    def native_ratios(self) -> Mapping[str, NativeRatio]:
        """Each arm measured beside its C floor, by arm name, in run order (:func:`~wakelab.analysis.caveats.native_ratios`)."""
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
    def _warnings_and_notes(self) -> Tuple[Tuple[WarningRecord, ...], Tuple[WarningRecord, ...]]:
        records = self.bundle.warnings()
        return tuple(r for r in records if not r.is_note), tuple(r for r in records if r.is_note)

    @property
    def warnings(self) -> Tuple[WarningRecord, ...]:
        """The measurement-quality warnings (a sentence from an older bundle is one)."""
        return self._warnings_and_notes[0]

    @property
    def notes(self) -> Tuple[WarningRecord, ...]:
        """The records of level ``note`` (a percentile left out for want of wakes)."""
        return self._warnings_and_notes[1]

    @functools.cached_property
    def warning_groups(self) -> Tuple[WarningGroup, ...]:
        """:attr:`warnings` gathered by what they say (:func:`~wakelab.analysis.warning_groups.group_warnings`)."""
        return group_warnings(self.warnings)

    @functools.cached_property
    def note_groups(self) -> Tuple[WarningGroup, ...]:
        """:attr:`notes` gathered the same way (a note never joins a warning)."""
        return group_warnings(self.notes)

    @functools.cached_property
    def machine_load(self) -> Optional[MachineLoad]:
        """The other processes that kept the machine busy during the run, or None (:func:`~wakelab.analysis.warning_groups.machine_load`)."""
        return machine_load(self.bundle.summary)


def view_of(run: Union[RunView, Bundle, Mapping[str, Any]]) -> RunView:
    """``run`` as a :class:`RunView`: itself, a loaded bundle's view, or the view of a summary document held in memory."""
    if isinstance(run, RunView):
        return run
    if isinstance(run, Bundle):
        return RunView(run)
    return RunView(Bundle(source="", folder="", summary=run))


__all__ = ["RunView", "view_of"]
