"""Where the time goes: each wake split at the kernel's scheduler events.

A traced run (:mod:`wakelab.harness.trace`) records, on the same
CLOCK_MONOTONIC as every ``t0`` and ``t1``, when the kernel wakes the waiter
(``sched_waking``, then ``sched_wakeup`` once it is on a run queue) and when
the waiter is switched onto and off a CPU (``sched_switch``).  Walking the
waiter's own events from ``t0`` to ``t1`` cuts the wake into consecutive
intervals, each credited to one component:

``notify``           ``t0`` to the first ``sched_waking`` of the waiter: the
                     notifier's own path (CPython's ``Event.set``, ``os.write``,
                     ``os.kill`` ... down to the kernel's wake call);
``sched_wake``       ``sched_waking`` to ``sched_wakeup``: getting the waiter onto
                     its CPU's run queue -- for a wake across CPUs the
                     interrupt to that CPU and, if it was idle, its idle exit;
``sched_queue``      ``sched_wakeup`` to the waiter's ``sched_switch`` onto a CPU:
                     waiting in the run queue (behind another task, or the
                     notifier itself on a shared CPU), and any later time the
                     waiter spends preempted while still runnable;
``gil_wait``         every further sleep of the waiter after it first ran, and
                     the wake that ends it (a waiter that runs, finds the GIL
                     taken and sleeps again): a GIL tail lands here;
``interpreter``      the waiter's time on a CPU, up to ``t1``: returning to user
                     space, re-taking the GIL, the bytecode up to ``t1``;
``unattributed``     what the events cannot place (an event the trace lost, a
                     waiter found in an unexpected state); never hidden.

The intervals tile ``[t0, t1]``, so a wake's components sum to its latency
exactly, in integer nanoseconds.  ``sched_wake`` and ``sched_queue`` together
are the *scheduler* component.

Arms whose waiter spins (or wakes itself) are never put to sleep by the
kernel: there is no wake event to split at, and :func:`why_untraceable` says so.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

#: Components in the order of a wake.
COMPONENTS: Tuple[str, ...] = ("notify", "sched_wake", "sched_queue", "gil_wait", "interpreter", "unattributed")
#: What each component is, for renderers and the schema.
COMPONENT_TITLES: Dict[str, str] = {
    "notify": "notify path (t0 to the kernel waking the waiter)",
    "sched_wake": "scheduler: wake delivery (cross-CPU interrupt, idle exit)",
    "sched_queue": "scheduler: run-queue wait (behind another task, preempted)",
    "gil_wait": "GIL wait (extra sleep/wake cycles after the waiter first ran)",
    "interpreter": "interpreter (on a CPU, up to t1)",
    "unattributed": "unattributed (the events cannot place it)",
}
SHORT_NAMES: Dict[str, str] = {
    "notify": "notify",
    "sched_wake": "wake",
    "sched_queue": "queue",
    "gil_wait": "GIL",
    "interpreter": "interp",
    "unattributed": "other",
}


@dataclasses.dataclass(frozen=True)
class SchedEvent:
    """One scheduler event, time in CLOCK_MONOTONIC nanoseconds.

    ``kind`` is ``waking``, ``wakeup``, ``switch`` or ``migrate``; ``tid`` the
    thread the event ran in (the waker, for a wake), ``cpu`` its CPU.  For a
    wake: ``pid`` is the woken thread and ``target_cpu`` where it will run.
    For a switch: ``prev_pid`` leaves the CPU in ``prev_state`` (``S``, ``D``:
    asleep; ``R``, ``R+``: still runnable, preempted) and ``next_pid`` takes it
    (0: the CPU goes idle, or, as ``prev_pid``, comes out of idle).  For a
    migration: ``pid`` moves from ``orig_cpu`` to ``dest_cpu``.
    """

    time_ns: int
    kind: str
    cpu: int
    tid: int
    pid: int = 0
    target_cpu: int = -1
    prev_pid: int = 0
    prev_state: str = ""
    next_pid: int = 0
    orig_cpu: int = -1
    dest_cpu: int = -1


@dataclasses.dataclass(frozen=True)
class WakeSplit:
    """One wake cut into :data:`COMPONENTS` (ns, summing to ``t1 - t0``), and what the events showed.

    ``cycles``: extra sleep/wake cycles after the waiter first ran;
    ``from_idle``: the waiter's first switch-in came from the idle task;
    ``cross_cpu``: the wake was raised on another CPU than the one the waiter
    ran on; ``parked``: the waiter was asleep at ``t0`` (False: running or
    runnable, None: no event before ``t0`` said); ``by_notifier``: the first
    wake came from the notifier's thread.
    """

    parts_ns: Dict[str, int]
    cycles: int = 0
    from_idle: Optional[bool] = None
    cross_cpu: Optional[bool] = None
    parked: Optional[bool] = None
    by_notifier: Optional[bool] = None

    @property
    def attributed(self) -> bool:
        """True when the events placed every nanosecond of the wake."""
        return self.parts_ns.get("unattributed", 0) == 0


# Walk states and the component their time is credited to.
_ASLEEP, _WOKEN, _QUEUED, _RUNNING, _BLOCKED, _REWOKEN, _PREEMPTED, _LOST = range(8)
_BUCKET = {
    _ASLEEP: "notify",
    _WOKEN: "sched_wake",
    _QUEUED: "sched_queue",
    _RUNNING: "interpreter",
    _BLOCKED: "gil_wait",
    _REWOKEN: "gil_wait",
    _PREEMPTED: "sched_queue",
    _LOST: "unattributed",
}


def _asleep(state: str) -> bool:
    return not state.startswith("R")


def _state_before(events: Sequence[SchedEvent], tid: int) -> Tuple[int, Optional[bool]]:
    """The waiter's state from the last of its events before ``t0`` (``events``: those events)."""
    for event in reversed(events):
        if event.kind == "switch":
            if event.next_pid == tid:
                return _RUNNING, False
            if event.prev_pid == tid:
                return (_ASLEEP, True) if _asleep(event.prev_state) else (_PREEMPTED, False)
        elif event.kind == "waking" and event.pid == tid:
            return _WOKEN, False
        elif event.kind == "wakeup" and event.pid == tid:
            return _QUEUED, False
    return _ASLEEP, None  # nothing known: a blocked arm's waiter is parked (the settle)


def split_wake(
    events: Sequence[SchedEvent],
    times: Sequence[int],
    tid: int,
    t0: int,
    t1: int,
    notifier_tid: Optional[int] = None,
) -> WakeSplit:
    """Split the wake ``[t0, t1]`` of waiter ``tid`` at its events.

    ``events`` are the waiter's events in time order (as :func:`~wakelab.harness.trace.parse_script`
    files them) and ``times`` their ``time_ns`` (for bisection).  The parts
    sum to ``t1 - t0`` exactly.
    """
    parts = dict.fromkeys(COMPONENTS, 0)
    start = bisect.bisect_right(times, t0)
    end = bisect.bisect_right(times, t1)
    state, parked = _state_before(events[max(0, start - 64):start], tid)
    pos = t0
    cycles = 0
    from_idle: Optional[bool] = None
    cross_cpu: Optional[bool] = None
    by_notifier: Optional[bool] = None
    waking_cpu: Optional[int] = None
    seen_wake = state != _ASLEEP
    for event in events[start:end]:
        kind = event.kind
        new_state = state
        if kind == "waking" and event.pid == tid:
            if state == _ASLEEP:
                new_state = _WOKEN
                seen_wake = True
                waking_cpu = event.cpu
                if notifier_tid:
                    by_notifier = event.tid == notifier_tid
            elif state == _BLOCKED:
                new_state = _REWOKEN
                cycles += 1
        elif kind == "wakeup" and event.pid == tid:
            if state == _WOKEN:
                new_state = _QUEUED
        elif kind == "switch" and event.next_pid == tid:
            if state == _ASLEEP and not seen_wake:
                state = _LOST  # on a CPU without a wake the trace showed: credit nothing
            if from_idle is None:
                from_idle = event.prev_pid == 0
                if waking_cpu is not None:
                    cross_cpu = waking_cpu != event.cpu
            new_state = _RUNNING
        elif kind == "switch" and event.prev_pid == tid:
            if state == _RUNNING:
                new_state = _BLOCKED if _asleep(event.prev_state) else _PREEMPTED
            else:
                new_state = _LOST
        else:
            continue
        if new_state != state or kind == "switch":
            parts[_BUCKET[state]] += event.time_ns - pos
            pos = event.time_ns
            state = new_state
    # t1 is taken on a CPU: the last stretch is the interpreter's if the events agree.
    parts["interpreter" if state == _RUNNING else "unattributed"] += t1 - pos
    return WakeSplit(parts, cycles, from_idle, cross_cpu, parked, by_notifier)


def why_untraceable(arm: Mapping[str, Any]) -> Optional[str]:
    """Why an arm's wakes cannot be split at scheduler events (None: they can).

    ``arm`` is its identity as in ``summary.json`` (``waiter``, ``scope``, ``kind`` ...).
    """
    if arm.get("kind") != "latency":
        return "not a wake: a rate arm times a loop of calls"
    if arm.get("waiter") == "spinning":
        return "the waiter spins on a CPU: the kernel never puts it to sleep, so there is no wake event to split at"
    if arm.get("scope") == "self":
        return "notifier and waiter are one thread: it never sleeps between t0 and t1"
    if arm.get("waiter") != "blocked":
        return "no waiter the kernel wakes"
    return None


def split_wakes(
    events: Sequence[SchedEvent],
    tid: int,
    t0s: Sequence[int],
    samples_ns: Sequence[int],
    notifier_tid: Optional[int] = None,
) -> List[WakeSplit]:
    """:func:`split_wake` for every wake (``t1 = t0 + sample``), in order."""
    times = [e.time_ns for e in events]
    return [split_wake(events, times, tid, t0, t0 + s, notifier_tid) for t0, s in zip(t0s, samples_ns)]


def component_series(splits: Sequence[WakeSplit]) -> Dict[str, List[int]]:
    """Per component, its value in every wake (the samples file's ``components_ns``), plus
    ``gil_cycles`` (the count of extra cycles per wake)."""
    series: Dict[str, List[int]] = {name: [s.parts_ns[name] for s in splits] for name in COMPONENTS}
    series["gil_cycles"] = [s.cycles for s in splits]
    return series


def _band_means(samples_ns: Sequence[int], series: Mapping[str, Sequence[int]], q_low: float, q_high: float) -> Optional[Dict[str, Any]]:
    """Mean latency and mean components of the wakes ranked between quantiles ``q_low`` and ``q_high``."""
    n = len(samples_ns)
    if n == 0:
        return None
    order = sorted(range(n), key=lambda i: samples_ns[i])
    lo = min(int(q_low * n), n - 1)
    hi = max(lo + 1, min(n, int(round(q_high * n))))
    chosen = order[lo:hi]
    k = len(chosen)
    out: Dict[str, Any] = {"wakes": k, "latency_ns": sum(samples_ns[i] for i in chosen) / k}
    out["parts_ns"] = {name: sum(series[name][i] for i in chosen) / k for name in COMPONENTS}
    return out


def summarize_components(samples_ns: Sequence[int], splits: Sequence[WakeSplit]) -> Dict[str, Any]:
    """The ``trace.components`` figures of an arm: per component its percentiles, and where the
    median wake and the tail wakes go.

    ``percentiles``: for each component (and ``scheduler`` = ``sched_wake`` +
    ``sched_queue``) its own p50/p90/p99 over the wakes -- these do not sum.
    ``at_p50`` / ``at_p99``: the mean latency and mean components of the
    wakes ranked around the median (45th to 55th percentile) and at the tail
    (99th percentile and above) -- these do sum (up to rounding).
    """
    from wakelab.analysis.stats import summarize_latency

    series = component_series(splits)
    series_sched = [a + b for a, b in zip(series["sched_wake"], series["sched_queue"])]
    percentiles: Dict[str, Any] = {}
    for name in COMPONENTS + ("scheduler",):
        values = series_sched if name == "scheduler" else series[name]
        stats = summarize_latency(values).to_dict()
        percentiles[name] = {k: stats.get(k) for k in ("p50_ns", "p90_ns", "p99_ns", "mean_ns", "max_ns")}
    n = len(splits)
    idle = [s.from_idle for s in splits if s.from_idle is not None]
    cross = [s.cross_cpu for s in splits if s.cross_cpu is not None]
    return {
        "wakes": n,
        "fully_attributed": sum(1 for s in splits if s.attributed),
        "with_gil_cycles": sum(1 for s in splits if s.cycles),
        "from_idle_fraction": (sum(idle) / len(idle)) if idle else None,
        "cross_cpu_fraction": (sum(cross) / len(cross)) if cross else None,
        "parked_at_t0_fraction": (sum(1 for s in splits if s.parked) / n) if n else None,
        "percentiles": percentiles,
        "at_p50": _band_means(samples_ns, series, 0.45, 0.55),
        "at_p99": _band_means(samples_ns, series, 0.99, 1.0),
    }


def check_sums(samples_ns: Sequence[int], series: Mapping[str, Sequence[int]]) -> bool:
    """True when every wake's components sum to its latency exactly."""
    return all(sum(series[name][i] for name in COMPONENTS) == s for i, s in enumerate(samples_ns))


# -- text --------------------------------------------------------------------------------------


def _us(value: Optional[float]) -> str:
    from wakelab.formatting import format_us

    return format_us(value)


def _band_line(label: str, band: Mapping[str, Any], native: bool = False) -> str:
    parts: Mapping[str, float] = band.get("parts_ns") or {}
    # In C there is no GIL: the extra sleep/wake cycles are the waiter re-sleeping on a lock.
    names = dict(SHORT_NAMES, gil_wait="re-sleep") if native else SHORT_NAMES
    shown = ["%s %s" % (names[name], _us(parts.get(name))) for name in COMPONENTS if name != "unattributed"]
    text = "%s %s µs = %s" % (label, _us(band.get("latency_ns")), " + ".join(shown))
    if parts.get("unattributed"):
        text += " + other %s" % _us(parts.get("unattributed"))
    return text


def format_where_the_time_goes(summary: Mapping[str, Any]) -> List[str]:
    """The WHERE THE TIME GOES block of summary.txt: per traced arm, where its median and
    tail wakes go, Python beside its C floor; an untraced run or arm says why (empty when the
    run was not asked to trace).  Strings from the evidence are escaped."""
    from wakelab.formatting import escape_text

    tracing: Mapping[str, Any] = summary.get("tracing") or {}
    if not tracing.get("requested"):
        return []
    arms = [a for a in summary.get("arms") or [] if isinstance(a, Mapping)]
    any_split = any(isinstance(a.get("trace"), Mapping) and a["trace"].get("traced") for a in arms)
    if not tracing.get("traced") and not any_split:
        return ["  not traced: " + escape_text(tracing.get("reason") or "unknown reason")]
    out = [
        "  each wake split at the kernel's scheduler events (perf, CLOCK_MONOTONIC), in µs; the",
        "  parts of a wake sum to it: notify path + scheduler (wake delivery, run-queue wait) +",
        "  GIL wait (for C: re-sleep on a lock) + interpreter; 'at p50' = mean of the wakes ranked",
        "  45th-55th percentile.",
    ]
    if not tracing.get("traced"):
        out.append("  tracing stopped during the run: " + escape_text(tracing.get("reason") or "unknown reason"))
    by_name = {a.get("name"): a for a in arms}
    shown = set()
    order: List[Mapping[str, Any]] = []
    for arm in arms:
        if arm.get("name") in shown or arm.get("family") == "native" and any(
            b.get("native") == arm.get("name") for b in arms
        ):
            continue
        order.append(arm)
        shown.add(arm.get("name"))
        floor = by_name.get(arm.get("native"))
        if floor is not None and floor.get("name") not in shown:
            order.append(floor)
            shown.add(floor.get("name"))
    for arm in order:
        trace: Mapping[str, Any] = arm.get("trace") or {}
        name = escape_text(arm.get("name"))
        if not trace:
            continue
        if not trace.get("traced"):
            if arm.get("kind") != "latency":
                continue  # a rate arm: nothing that wakes
            out.append("  %-26s not split: %s" % (name, escape_text(trace.get("reason") or "")))
            continue
        comps: Mapping[str, Any] = trace.get("components") or {}
        at50 = comps.get("at_p50")
        at99 = comps.get("at_p99")
        native = arm.get("family") == "native"
        if at50:
            out.append("  %-26s %s" % (name, _band_line("p50", at50, native)))
        if at99:
            out.append("  %-26s %s" % ("", _band_line("p99", at99, native)))
        overhead: Mapping[str, Any] = trace.get("overhead") or {}
        notes = []
        if overhead.get("untraced_p50_ns") is not None:
            note = "traced p50 %s vs untraced %s" % (_us(overhead.get("traced_p50_ns")), _us(overhead.get("untraced_p50_ns")))
            if overhead.get("untraced_after_p50_ns") is not None:
                note += " before, %s after" % _us(overhead.get("untraced_after_p50_ns"))
            note += " µs"
            if isinstance(overhead.get("ratio"), (int, float)):
                note += " (x%.2f)" % overhead["ratio"]
            notes.append(note)
        if trace.get("lost_events"):
            notes.append("perf dropped %d events (a busy machine): their wakes are unattributed" % trace["lost_events"])
        if comps.get("wakes"):
            notes.append("%d/%d wakes fully attributed" % (comps.get("fully_attributed") or 0, comps.get("wakes") or 0))
            if comps.get("with_gil_cycles"):
                notes.append("%d with GIL cycles" % comps["with_gil_cycles"])
            for key, label in (("cross_cpu_fraction", "cross-CPU"), ("from_idle_fraction", "onto an idle CPU")):
                value = comps.get(key)
                if isinstance(value, (int, float)) and value >= 0.005:
                    notes.append("%s %.0f%%" % (label, 100 * value))
        if notes:
            out.append("  %-26s (%s)" % ("", "; ".join(notes)))
    return [escape_text(line) for line in out]


# -- views for renderers (HTML, compare) ----------------------------------------------------------


def traced_arm_order(summary: Mapping[str, Any]) -> List[Tuple[Mapping[str, Any], Optional[str]]]:
    """The arms of a run in the order a "where the time goes" view shows them: each Python arm,
    then its C floor (once, after the first arm it is the floor of); pairs ``(arm entry, floor_of)``
    where ``floor_of`` names the Python arm a C floor is shown beside (None for the others)."""
    arms = [a for a in summary.get("arms") or [] if isinstance(a, Mapping)]
    by_name = {a.get("name"): a for a in arms}
    floors = {a.get("native") for a in arms if a.get("native")}
    shown: set = set()
    order: List[Tuple[Mapping[str, Any], Optional[str]]] = []
    for arm in arms:
        name = arm.get("name")
        if name in shown or (arm.get("family") == "native" and name in floors):
            continue
        order.append((arm, None))
        shown.add(name)
        floor = by_name.get(arm.get("native"))
        if floor is not None and floor.get("name") not in shown:
            order.append((floor, str(name)))
            shown.add(floor.get("name"))
    for arm in arms:  # a floor whose Python arms are all absent still has its place
        if arm.get("name") not in shown:
            order.append((arm, None))
            shown.add(arm.get("name"))
    return order


class TracedSeriesError(ValueError):
    """The samples file's ``traced`` part is not a per-wake component series of its traced wakes."""


def traced_series(doc: Mapping[str, Any]) -> Optional[Dict[str, List[int]]]:
    """The per-wake component series of a samples document's ``traced`` part (None when it has none).

    Returns ``{"latency": [...], <component>: [...], ...}`` for :data:`COMPONENTS`, each list as long
    as the traced wakes; raises :class:`TracedSeriesError` when the part is malformed (a missing
    component, lists of other lengths, values that are not non-negative integers, or wakes whose
    components do not sum to their latency).
    """
    part = doc.get("traced")
    if part is None:
        return None
    if not isinstance(part, Mapping):
        raise TracedSeriesError("'traced' is not an object")
    samples = part.get("samples_ns")
    series = part.get("components_ns")
    if not isinstance(samples, list) or not isinstance(series, Mapping):
        raise TracedSeriesError("'traced' needs samples_ns and components_ns")

    def ints(values: Any, what: str) -> List[int]:
        if not isinstance(values, list) or len(values) != len(samples) or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in values
        ):
            raise TracedSeriesError("traced %s must be %d non-negative integers (one per traced wake)" % (what, len(samples)))
        return values

    out: Dict[str, List[int]] = {"latency": ints(samples, "samples_ns")}
    for name in COMPONENTS:
        out[name] = ints(series.get(name), "component %s" % name)
    if not check_sums(out["latency"], out):
        raise TracedSeriesError("the traced components do not sum to each wake's latency")
    return out


@dataclasses.dataclass(frozen=True)
class FloorGap:
    """How a traced Python arm's band (``p50``: the median wakes, ``p99``: the tail) differs from its
    traced C floor's, component by component: "Python is 2x C" as "Python's extra 6 µs: 4 in the
    notify path, 2 after the waiter is on a CPU".  ``parts_ns`` maps each component to the arm's
    band mean minus the floor's (ns; they sum to ``extra_ns``); ``matched`` is False for a nearest
    floor (not the same experiment)."""

    arm: str
    floor: str
    band: str
    arm_ns: float
    floor_ns: float
    parts_ns: Dict[str, float]
    matched: bool

    @property
    def extra_ns(self) -> float:
        return self.arm_ns - self.floor_ns


def floor_gaps(summary: Mapping[str, Any], band: str = "p50") -> List[FloorGap]:
    """:class:`FloorGap` of every traced Python arm whose C floor was traced in the same run, in
    :func:`traced_arm_order` order (``band``: ``p50`` or ``p99``)."""
    key = {"p50": "at_p50", "p99": "at_p99"}[band]
    arms = [a for a in summary.get("arms") or [] if isinstance(a, Mapping)]
    by_name = {a.get("name"): a for a in arms}

    def band_of(entry: Optional[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
        trace = entry.get("trace") if isinstance(entry, Mapping) else None
        if not isinstance(trace, Mapping) or trace.get("traced") is not True:
            return None
        found = (trace.get("components") or {}).get(key)
        if not isinstance(found, Mapping) or not isinstance(found.get("parts_ns"), Mapping):
            return None
        return found

    gaps: List[FloorGap] = []
    for entry, floor_of in traced_arm_order(summary):
        if floor_of is not None or not entry.get("native"):
            continue
        mine, theirs = band_of(entry), band_of(by_name.get(entry.get("native")))
        if mine is None or theirs is None:
            continue
        parts = {name: float(mine["parts_ns"].get(name) or 0.0) - float(theirs["parts_ns"].get(name) or 0.0) for name in COMPONENTS}
        gaps.append(FloorGap(str(entry.get("name")), str(entry.get("native")), band, float(mine.get("latency_ns") or 0.0),
                             float(theirs.get("latency_ns") or 0.0), parts, entry.get("native_match") != "nearest"))
    return gaps
