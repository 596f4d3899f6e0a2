"""What the guidance is made of: the topics of its advice and the records it returns (stdlib only)."""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Sequence, Tuple

# Topics of the advice, in the order they are given.
PREFER = "in-process wake"
PROCESSES = "across processes"
SIGNALS = "signal delivery"
INSTALL = "handler install"
TAIL = "tail"
POLLING = "polling"
HANDOFF = "hand-off"
PITFALL = "pitfall"
SELF_TEST = "self-test"
OPEN_LOOP = "open loop"


@dataclasses.dataclass(frozen=True)
class Cite:
    """One figure a claim rests on: ``arm``'s ``figure`` (``p50``, ``p90``, ``p99``, ``min``, ``max``,
    ``notify_late_p50`` -- the p50 of an open-loop arm's notifier lateness -- or ``per_call`` for a rate
    arm: 1e9 / its median ops/s), in nanoseconds."""

    arm: str
    figure: str
    value_ns: float

    def to_dict(self) -> Dict[str, object]:
        return {"arm": self.arm, "figure": self.figure, "value_ns": self.value_ns}


@dataclasses.dataclass(frozen=True)
class Advice:

    topic: str
    text: str
    cites: Tuple[Cite, ...]

    def to_dict(self) -> Dict[str, object]:
        return {"topic": self.topic, "text": self.text, "cites": [c.to_dict() for c in self.cites]}


@dataclasses.dataclass(frozen=True)
class Guidance:
    """What a run's figures advise: a one-line ``headline`` and the :class:`Advice` ``items``.

    Iterating a Guidance gives its items.  ``to_dict()`` is its JSON form::

        {"headline": str,
         "items": [{"topic": str, "text": str,
                    "cites": [{"arm": str, "figure": str, "value_ns": float}, ...]}, ...]}
    """

    headline: str
    items: Tuple[Advice, ...]

    def __iter__(self) -> Iterator[Advice]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def cited_arms(self) -> List[str]:
        return list(dict.fromkeys(cite.arm for item in self.items for cite in item.cites))

    def to_dict(self) -> Dict[str, object]:
        return {"headline": self.headline, "items": [item.to_dict() for item in self.items]}


def unique_cites(cites: Sequence[Cite]) -> List[Cite]:
    return list(dict.fromkeys(cites))
