"""What the guidance is made of: the topics of its advice and the records it returns (stdlib only)."""

from __future__ import annotations

import dataclasses
from typing import Iterator, List, Sequence, Tuple

from wakelab.evidence.model import Record

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
class Cite(Record):
    """One figure a claim rests on: ``arm``'s ``figure`` (``p50``, ``p90``, ``p99``, ``min``, ``max``,
    ``notify_late_p50`` -- the p50 of an open-loop arm's notifier lateness -- or ``per_call`` for a rate
    arm: 1e9 / its median ops/s), in nanoseconds."""

    arm: str
    figure: str
    value_ns: float


@dataclasses.dataclass(frozen=True)
class Advice(Record):
    topic: str
    text: str
    cites: Tuple[Cite, ...]


@dataclasses.dataclass(frozen=True)
class Guidance(Record):
    """What a run's figures advise: a one-line ``headline`` and the :class:`Advice` ``items`` (iterating gives them)."""

    headline: str
    items: Tuple[Advice, ...]

    def __iter__(self) -> Iterator[Advice]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def unique_cites(cites: Sequence[Cite]) -> List[Cite]:
    return list(dict.fromkeys(cites))
