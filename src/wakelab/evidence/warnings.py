"""summary.json's measurement-quality records: their kinds, their levels, and one record as every reader sees it."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, Mapping, Optional, Union

from wakelab.evidence.bundle import Record, json_field, json_meta


class WarningKind(str, enum.Enum):
    """The kinds of summary.json's ``warnings``: :mod:`wakelab.analysis.quality` writes them, the renderers word them
    (:func:`wakelab.report.text.format_warning`), so a kind renamed in one place is renamed in both."""

    PERCENTILES_OMITTED = "percentiles-omitted"
    WORKER_SPREAD = "worker-spread"
    POPULATIONS = "populations"
    SWITCH_INTERVAL_TAIL = "switch-interval-tail"
    TIMER_FLOOR = "timer-floor"
    POLLING = "polling"


#: Levels of a warning record: a reason to doubt a figure, or a note on one left out.
WARNING_LEVEL, NOTE_LEVEL = "warning", "note"


def _kind(kind: object) -> Union[WarningKind, str]:
    try:
        return WarningKind(kind)
    except ValueError:
        return "" if kind is None else str(kind)


@dataclasses.dataclass(frozen=True)
class WarningRecord(Record):
    """One entry of summary.json's ``warnings``: what (``kind``; its text where it is no :class:`WarningKind`, a newer
    bundle's), about which arm, and the figures it rests on.  ``text`` holds a sentence (bundles before 0.2 stored
    those), with no kind or figures; ``raw`` the entry as stored, for a renderer that must show figures it cannot word."""

    kind: Union[WarningKind, str] = dataclasses.field(metadata=json_meta(read=_kind))
    level: str = json_field(read=lambda level: str(level or WARNING_LEVEL), default=WARNING_LEVEL)
    arm: Optional[str] = json_field(read=lambda arm: None if arm is None else str(arm), default=None)
    figures: Mapping[str, object] = dataclasses.field(default_factory=dict)
    text: Optional[str] = json_field(read=lambda _: None, default=None)  # a stored record is never a sentence
    raw: Any = json_field("", default=None, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: object) -> "WarningRecord":
        """A stored entry (a record, or a sentence from an older bundle) as a record."""
        if isinstance(value, WarningRecord):
            return value
        return cls.from_dict(value) if isinstance(value, Mapping) else cls(kind="", text=str(value), raw=value)

    @property
    def is_note(self) -> bool:
        return self.level == NOTE_LEVEL

    def to_dict(self) -> Dict[str, object]:
        kind = self.kind.value if isinstance(self.kind, WarningKind) else self.kind
        return {"kind": kind, "level": self.level, "arm": self.arm, "figures": dict(self.figures)}

