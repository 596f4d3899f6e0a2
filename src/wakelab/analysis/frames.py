"""Where a traced wake's notify path and the waiter's own work go, by Python function.

With ``wakelab run --trace --trace-frames`` perf samples every CPU with call chains while the workers publish their
Python frames (:mod:`wakelab.harness.frames`).  A thread is sampled only while on a CPU, so a sample of the
**notifier** between ``t0`` and the kernel's wake of the waiter is the notify path's, and one of the **waiter**
between ``t0`` and ``t1`` its own work.  Each is counted by its innermost :data:`PATH_DEPTH` Python frames (``(no
Python frame)``: in the kernel, in C).  A sample stands for about 50 µs of a CPU, so a path's share is a statistical
split over all traced wakes, not a per-wake one; the count says how much it rests on."""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

#: Python frames a call path keeps (the innermost ones).
PATH_DEPTH = 3
#: Call paths the summary lists per part.
TOP_PATHS = 5
NO_PYTHON = "(no Python frame)"
#: The parts of a wake sampled, and how a sentence names them.
PARTS = {"notify": "notify", "interpreter": "own work"}


def call_path(python: Sequence[str], depth: int = PATH_DEPTH) -> str:
    if not python:
        return NO_PYTHON
    return " -> ".join(reversed(list(python[:depth])))


def count_frames(samples: Mapping[int, Sequence[Any]], waiter_tid: int, notifier_tid: Optional[int], t0s: Sequence[int],
                 samples_ns: Sequence[int], notify_ns: Sequence[int], counts: Dict[str, Dict[str, int]]) -> None:
    """Add one worker's samples (by thread id, in time order) to ``counts`` (part -> call path -> samples)."""
    windows = [
        ("interpreter", samples.get(waiter_tid) or [], [(t0, t0 + s) for t0, s in zip(t0s, samples_ns)]),
        ("notify", samples.get(notifier_tid) or [] if notifier_tid else [], [(t0, t0 + n) for t0, n in zip(t0s, notify_ns)]),
    ]
    for part, taken, spans in windows:
        if not taken:
            continue
        times = [sample.time_ns for sample in taken]
        tally = counts.setdefault(part, {})
        for start, end in spans:
            for sample in taken[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]:
                path = call_path(sample.python)
                tally[path] = tally.get(path, 0) + 1


@dataclasses.dataclass(frozen=True)
class CallPath:

    path: Any
    samples: Any
    share: float


@dataclasses.dataclass(frozen=True)
class FrameRecord:
    """``trace.frames``: per part its samples and its :data:`TOP_PATHS` call paths, or why none were sampled."""

    sampled: bool
    reason: Optional[str] = None
    hz: Any = None
    samples: Mapping[str, int] = dataclasses.field(default_factory=dict)
    top: Mapping[str, Tuple[CallPath, ...]] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> Dict[str, object]:
        if not self.sampled:
            return {"sampled": False, "reason": self.reason}
        return {"sampled": True, "reason": None, "hz": self.hz, "samples": dict(self.samples),
                "top": {part: [dataclasses.asdict(p) for p in paths] for part, paths in self.top.items()}}

    @classmethod
    def from_dict(cls, doc: Mapping[str, object]) -> "FrameRecord":
        samples, top = doc.get("samples"), doc.get("top")
        return cls(bool(doc.get("sampled")), str(doc.get("reason") or "unknown reason"), doc.get("hz"),
                   samples if isinstance(samples, Mapping) else {},
                   {part: tuple(CallPath(p.get("path"), p.get("samples"), float(p.get("share") or 0.0)) for p in paths or [])
                    for part, paths in (top.items() if isinstance(top, Mapping) else ())})

    def line(self) -> str:
        """One line: "python frames (20 kHz, 412 and 96 samples): own work: Event.wait -> Condition.wait 41%, ...;
        notify: Event.set -> Condition.notify_all 60%, ..." -- or "python frames: not sampled: REASON"."""
        if not self.sampled:
            return "python frames: not sampled: %s" % self.reason
        pieces = []
        for part in ("interpreter", "notify"):
            shown = ["%s %.0f%%" % (p.path, 100 * p.share) for p in self.top.get(part) or () if p.share >= SHOWN_SHARE]
            if shown:
                pieces.append("%s: %s" % (PARTS[part], ", ".join(shown)))
        counted = " and ".join("%d %s" % (self.samples.get(part) or 0, PARTS[part]) for part in ("interpreter", "notify"))
        head = "python frames (%s Hz, %s samples)" % (self.hz, counted)
        if not pieces:
            return head + ": no sample fell in a wake (a wake far shorter than the sampling period)"
        return head + ": " + "; ".join(pieces)


def summarize_frames(counts: Mapping[str, Mapping[str, int]], hz: int) -> Dict[str, object]:
    """The ``trace.frames`` record of an arm whose frames were sampled."""
    top: Dict[str, Tuple[CallPath, ...]] = {}
    totals: Dict[str, int] = {}
    for part in PARTS:
        tally = counts.get(part) or {}
        total = totals[part] = sum(tally.values())
        ranked = sorted(tally.items(), key=lambda item: (-item[1], item[0]))[:TOP_PATHS]
        top[part] = tuple(CallPath(path, n, n / total) for path, n in ranked)
    return FrameRecord(True, None, hz, totals, top).to_dict()


def not_sampled(reason: str) -> Dict[str, object]:
    """The ``trace.frames`` record of an arm whose frames could not be sampled, saying why."""
    return FrameRecord(False, reason).to_dict()


#: A call path under this share of its part's samples is left out of the line.
SHOWN_SHARE = 0.05
