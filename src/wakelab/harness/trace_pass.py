"""The traced pass of a measured arm (``wakelab run --trace``): see "Tracing" in :mod:`wakelab.harness.runner`.

:func:`trace_arm` finds a frozen :class:`ArmTrace` (the arm's ``trace`` entry) and the samples
document that adds the traced wakes beside the untraced ones; the runner stores both.  It is handed
how to measure (:data:`Measure`), so this module knows nothing of workers or repetitions.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from wakelab.analysis.components import WakeSplit, component_series, reblock_series, split_wakes, summarize_components, why_untraceable
from wakelab.analysis.stats import LatencyStats, summarize_latency
from wakelab.core.model import Arm, Raw, RawLatency, raw_to_dict
from wakelab.evidence import bundle
from wakelab.evidence.figures import TraceComponents
from wakelab.evidence.model import WorkerRecord
from wakelab.harness import trace as sched_trace
from wakelab.harness.workers import pool_raws

if TYPE_CHECKING:
    from wakelab.harness.runner import RunPlan
    from wakelab.harness.summary import ArmEntry

#: ``measure(plan, stamps=..., frames=...)``: ``(raws, worker records)`` of one quiet pass over the arm.
Measure = Callable[..., Tuple[List[Raw], List[WorkerRecord]]]

#: How the overhead is measured, as summary.json's ``tracing`` record says it.
OVERHEAD_METHOD = ("each traced arm is measured three times in this run: untraced (its figures), traced, and "
                   "an untraced one after it brackets the traced pass; overhead = traced p50 / mean of the two untraced p50s")


@dataclasses.dataclass(frozen=True)
class Tracing:
    """summary.json's ``tracing``: asked for, and whether the run traces (``reason``: why not);
    ``frames_unavailable`` (``--trace-frames``): why the interpreter cannot publish its frames, once it
    said so (it is not sampled again)."""

    requested: bool
    traced: bool = False
    reason: Optional[str] = None
    frames_unavailable: Optional[str] = None

    @classmethod
    def new(cls, requested: bool) -> "Tracing":
        """The record before any arm ran."""
        return cls(requested, reason=None if requested else "not asked for (wakelab run --trace)")

    def to_dict(self) -> Dict[str, object]:
        out: Dict[str, object] = {
            "requested": self.requested,
            "traced": self.traced,
            "reason": self.reason,
            "tool": "perf record -a -k CLOCK_MONOTONIC",
            "events": list(sched_trace.default_events()),
            "clock": "CLOCK_MONOTONIC",
            "overhead_method": OVERHEAD_METHOD,
        }
        if self.frames_unavailable is not None:
            out["frames_unavailable"] = self.frames_unavailable
        return out


class NotSplit(RuntimeError):
    """The driver says why its wakes cannot be split (the message), after the traced pass."""


@dataclasses.dataclass(frozen=True)
class Overhead:
    """The traced pass's p50 against the untraced passes before (the arm's figures) and after it."""

    untraced_p50_ns: Optional[float]
    untraced_after_p50_ns: Optional[float]
    traced_p50_ns: Optional[float]

    @property
    def ratio(self) -> Optional[float]:
        """Traced p50 over the mean of the untraced passes before and after the traced one."""
        baselines = [v for v in (self.untraced_p50_ns, self.untraced_after_p50_ns) if isinstance(v, (int, float)) and v > 0]
        baseline = sum(baselines) / len(baselines) if baselines else None
        return round(self.traced_p50_ns / baseline, 4) if baseline and self.traced_p50_ns is not None else None

    def to_dict(self) -> Dict[str, Optional[float]]:
        return {"untraced_p50_ns": self.untraced_p50_ns, "untraced_after_p50_ns": self.untraced_after_p50_ns,
                "traced_p50_ns": self.traced_p50_ns, "ratio": self.ratio}


@dataclasses.dataclass(frozen=True)
class ArmTrace:
    """An arm's ``trace`` entry: not split (``traced`` False, ``reason`` why), or where its wakes' time went."""

    traced: bool
    reason: Optional[str]
    wall_s: float = 0.0
    perf_data_bytes: Optional[int] = None
    events: int = 0
    lost_events: Optional[int] = None
    latency: Optional[LatencyStats] = None
    overhead: Optional[Overhead] = None
    #: :func:`wakelab.analysis.components.summarize_components`'s record.
    components: Optional[TraceComponents] = None
    #: ``--trace-frames``: the Python frames sampled (None: not asked for).
    frames: Optional[Mapping[str, object]] = None

    @classmethod
    def not_split(cls, reason: Optional[str]) -> "ArmTrace":
        return cls(False, reason)

    def to_dict(self) -> Dict[str, object]:
        if not self.traced:
            return {"traced": False, "reason": self.reason}
        assert self.latency is not None and self.overhead is not None
        out: Dict[str, object] = {
            "traced": True,
            "reason": None,
            "wall_s": self.wall_s,
            "perf_data_bytes": self.perf_data_bytes,
            "events": self.events,
            "lost_events": self.lost_events,
            "latency": self.latency.to_dict(),
            "overhead": self.overhead.to_dict(),
            "components": self.components.to_dict() if self.components is not None else None,
        }
        if self.frames is not None:
            out["frames"] = self.frames
        return out


@dataclasses.dataclass(frozen=True)
class TracedPass:
    """Every worker's wakes of the traced pass split at its waiter's events, pooled in worker order."""

    samples_ns: List[int]
    lost: int
    splits: List[WakeSplit]
    order: Tuple[str, ...]
    events: int
    frames: Mapping[str, object]


def trace_arm(plan: "RunPlan", arm: Arm, entry: "ArmEntry", untraced_p50_ns: Optional[float], tracing: Tracing,
              emit: Callable[..., None], measure: Measure) -> Tuple[ArmTrace, Optional[Dict[str, object]], Tracing]:
    """The traced pass of a measured arm (``entry``, its untraced p50 ``untraced_p50_ns``): its ``trace``
    record, the samples document to write in place of the arm's (None: nothing to add), and the
    run's ``tracing`` record as it now stands.

    Never fails the arm: whatever goes wrong is recorded as the reason the
    arm was not split.  A session perf cannot start ends tracing for the run
    (``tracing`` says why).
    """
    if not tracing.traced:
        return ArmTrace.not_split(tracing.reason), None, tracing
    reason = why_untraceable(dict(entry.identity))
    if reason is None and plan.params.mode != "closed":
        reason = "open loop: wakes are matched to notifies after the fact, so no wake has one t0 to split from"
    if reason is None and not arm.driver:
        reason = "this arm has no driver that reports its waiter's thread"
    if reason is not None:
        return ArmTrace.not_split(reason), None, tracing
    emit("arm-trace", arm=arm.name)
    plan = dataclasses.replace(plan, params=arm.params_for(plan.params))
    # --trace-frames: a C floor's threads have no Python frames, and an interpreter that said it
    # cannot publish them is not sampled again.
    frames = plan.execution.trace_frames and arm.family != "native" and not tracing.frames_unavailable
    session = sched_trace.SchedTrace(frames=frames)
    try:
        try:
            session.start()
        except sched_trace.TraceUnavailable as exc:
            emit("trace-unavailable", reason=str(exc))
            return ArmTrace.not_split(str(exc)), None, dataclasses.replace(tracing, traced=False, reason=str(exc))
        started = time.perf_counter()
        try:
            raws, workers = measure(plan, stamps=True, frames=frames)
        finally:
            session.stop()
        wall_s = round(time.perf_counter() - started, 6)
        traced = split_traced(session, raws, workers)
        # The machine drifts between passes: an untraced pass after the traced one brackets it.
        after, _ = measure(plan)
        after_p50 = summarize_latency(pool_raws(after).samples_ns).percentiles_ns.get("p50")  # type: ignore[union-attr]
    except KeyboardInterrupt:
        raise
    except NotSplit as exc:
        return ArmTrace.not_split(str(exc)), None, tracing
    except Exception as exc:  # the arm's own figures stand; say why it was not split
        return ArmTrace.not_split("the traced pass failed: %s: %s" % (type(exc).__name__, exc)), None, tracing
    finally:
        data_bytes = session.data_bytes()
        session.close()
    traced_stats = summarize_latency(traced.samples_ns, traced.lost)
    found_frames: Optional[Mapping[str, object]] = None
    if plan.execution.trace_frames:
        from wakelab.analysis.frames import not_sampled

        if frames:
            found_frames = traced.frames
            if not traced.frames.get("sampled"):
                tracing = dataclasses.replace(tracing, frames_unavailable=str(traced.frames.get("reason")))
        else:
            found_frames = not_sampled(
                "a C floor: its threads run no Python" if arm.family == "native" else str(tracing.frames_unavailable))
    record = ArmTrace(
        traced=True,
        reason=None,
        wall_s=wall_s,
        perf_data_bytes=data_bytes,
        events=traced.events,
        lost_events=session.lost_events,
        latency=traced_stats,
        overhead=Overhead(untraced_p50_ns, after_p50, _opt_number(traced_stats.percentiles_ns.get("p50"))),
        components=summarize_components(traced.samples_ns, traced.splits),
        frames=found_frames,
    )
    doc = bundle.samples_doc(arm.name, raw_to_dict(pool_raws(raws)))
    base = entry.samples_file
    if base:  # keep the untraced samples the arm's figures come from; add the traced pass beside them
        doc = _untraced_doc(plan.folder, arm.name, base) or doc
    doc["traced"] = {
        "samples_ns": traced.samples_ns,
        "components_ns": component_series(traced.splits),
        "reblocks_ns": reblock_series(traced.splits),
        "components": list(traced.order),
        "unit": "ns",
    }
    return record, doc, tracing


def _opt_number(value: object) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _untraced_doc(folder: str, arm_name: str, relative: str) -> Optional[Dict[str, object]]:
    """The samples document the untraced pass wrote (None if it cannot be read back)."""
    try:
        with open(os.path.join(folder, relative), "rb") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("arm") == arm_name else None


def split_traced(session: sched_trace.SchedTrace, raws: Sequence[Raw], workers: Sequence[WorkerRecord] = ()) -> TracedPass:
    """Every worker's wakes split at its waiter's events, pooled in worker order (``workers``:
    each worker's record, whose ``applied`` names its busy threads)."""
    from wakelab.analysis.components import COMPONENTS
    from wakelab.analysis.frames import count_frames, not_sampled, summarize_frames
    from wakelab.analysis.reblocks import context_from, gil_releases
    from wakelab.harness.frames import SAMPLE_HZ, remove_maps

    tids = set()
    for raw in raws:
        for key in ("waiter_tid", "notifier_tid"):
            value = raw.info.get(key)
            if isinstance(value, int):
                tids.add(value)
    recorded = [w.applied.get("cpu_thread_tids") for w in workers]  # each worker's busy threads (--cpu-threads)
    busy = [[t for t in r if isinstance(t, int)] if isinstance(r, list) else [] for r in recorded]
    tids.update(t for worker in busy for t in worker)  # who lets go of the GIL
    by_tid = session.events(tids)
    samples: List[int] = []
    splits: List[WakeSplit] = []
    lost = 0
    frame_counts: Dict[str, Dict[str, int]] = {}
    no_frames: Optional[str] = None
    for index, raw in enumerate(raws):
        assert isinstance(raw, RawLatency)
        info = raw.info
        t0s = info.pop("wake_t0_ns", None)  # bulky: in the samples file's traced part, not in info
        tid = info.get("waiter_tid")
        if isinstance(info.get("not_split"), str):
            raise NotSplit(str(info["not_split"]))
        if not isinstance(t0s, list) or len(t0s) != len(raw.samples_ns) or not isinstance(tid, int):
            raise RuntimeError("the traced worker did not report its waiter's thread and each wake's t0")
        notifier = info.get("notifier_tid")
        context = context_from(info, busy[index] if index < len(busy) else ())
        others = [e for t in {notifier, *context.busy_tids} if isinstance(t, int) for e in by_tid.get(t, []) if e.tid == t]
        context = dataclasses.replace(context, gil_releases=gil_releases(others, context))
        info.pop("interpreter_data", None)  # where the GIL lives: used here, not kept in summary.json
        these = split_wakes(by_tid.get(tid, []), tid, t0s, raw.samples_ns, notifier if isinstance(notifier, int) else None,
                            context)
        splits.extend(these)
        if session.frames:
            if isinstance(info.get("frames_unavailable"), str):
                no_frames = str(info.pop("frames_unavailable"))
            count_frames(session.samples, tid, notifier if isinstance(notifier, int) else None, t0s, raw.samples_ns,
                         [split.parts_ns["notify"] for split in these], frame_counts)
        samples.extend(raw.samples_ns)
        lost += raw.lost
    if session.frames:  # the workers' trampoline names, read by perf script: no longer needed
        # Only this run's processes: those of the events its own threads raised, and its workers.
        remove_maps({e.tgid for tid, events in by_tid.items() for e in events if e.tid == tid}
                    | {int(w.pid) for w in workers if w.pid})
    return TracedPass(
        frames=not_sampled(no_frames) if no_frames else summarize_frames(frame_counts, SAMPLE_HZ),
        samples_ns=samples,
        lost=lost,
        splits=splits,
        order=tuple(COMPONENTS),
        events=sum(len(v) for k, v in by_tid.items() if any(r.info.get("waiter_tid") == k for r in raws)),
    )
