"""Where the time goes: each wake split at the kernel's scheduler events (docs/tracing.md).

Walking a traced waiter's events from ``t0`` to ``t1`` cuts the wake into intervals that tile ``[t0, t1]``, each
credited to one of :data:`COMPONENTS`, so a wake's components sum to its latency exactly (integer ns) and its
re-blocks' causes (:mod:`wakelab.analysis.reblocks`) to its ``gil_wait`` -- a key that keeps its first name, from when
every further sleep was taken for the GIL."""

from __future__ import annotations

import bisect
import dataclasses
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

from wakelab.analysis.caveats import Arm, Run, arm_record, bundle_of
from wakelab.analysis.frames import FrameRecord
from wakelab.analysis.reblocks import (
    ON_PHRASES, Reblock, WaiterContext, blocked_on, cause_order, cause_phrase, resolve_holders, timed_out, waker_role)
from wakelab.analysis.stats import summarize_latency
from wakelab.evidence.figures import ComponentBand, ComponentPercentiles, ReblockCause, TraceComponents
from wakelab.evidence.model import ArmRecord, TraceFigures, TraceHolder
from wakelab.formatting import escape_text, format_us as _us

# Each component in the order of a wake: its title (the HTML legend keeps the GIL's words), its short name,
# and its short name in a band from before re-blocks were named.
_TABLE = (
    ("notify", "notify path (t0 to the kernel waking the waiter)", "notify", "notify"),
    ("sched_wake", "scheduler: wake delivery (cross-CPU interrupt, idle exit)", "wake", "wake"),
    ("sched_queue", "scheduler: run-queue wait (behind another task, preempted)", "queue", "queue"),
    ("gil_wait", "GIL wait (extra sleep/wake cycles after the waiter first ran)", "re-blocked", "GIL"),
    ("interpreter", "interpreter (on a CPU, up to t1)", "own work", "interp"),
    ("unattributed", "unattributed (the events cannot place it)", "other", "other"),
)
COMPONENTS: Tuple[str, ...] = tuple(row[0] for row in _TABLE)
COMPONENT_TITLES: Dict[str, str] = {row[0]: row[1] for row in _TABLE}
SHORT_NAMES: Dict[str, str] = {row[0]: row[2] for row in _TABLE}
_OLD_SHORT_NAMES: Dict[str, str] = {row[0]: row[3] for row in _TABLE}


@dataclasses.dataclass(frozen=True)
class SchedEvent:
    """One scheduler event or system call (CLOCK_MONOTONIC ns) of ``kind`` ``waking``, ``wakeup``, ``switch``,
    ``migrate``, ``enter`` or ``exit``, run in thread ``tid`` of process ``tgid`` (0: not known).  A wake's ``pid`` is
    the woken thread; a switch's ``prev_pid`` leaves in ``prev_state`` (``S``/``D`` asleep, ``R``/``R+`` preempted)
    and ``next_pid`` takes the CPU (0: idle); a system call's ``arg0``/``arg1`` are its first arguments (a futex's word
    and op) and ``ret`` its result (-110: timed out)."""

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
    tgid: int = 0
    syscall: str = ""
    arg0: int = 0
    arg1: int = 0
    ret: int = 0


@dataclasses.dataclass(frozen=True)
class WakeSplit:
    """One wake cut into :data:`COMPONENTS` (ns, summing to ``t1 - t0``) and what the events showed (None: no event
    said); ``inferred`` counts switch-ins placed at the waiter's return from the call it slept in."""

    parts_ns: Dict[str, int]
    cycles: int = 0
    from_idle: Optional[bool] = None
    cross_cpu: Optional[bool] = None
    parked: Optional[bool] = None
    by_notifier: Optional[bool] = None
    reblocks: Tuple[Reblock, ...] = ()
    inferred: int = 0

    @property
    def attributed(self) -> bool:
        return self.parts_ns.get("unattributed", 0) == 0

    def causes_ns(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for block in self.reblocks:
            out[block.cause] = out.get(block.cause, 0) + block.asleep_ns
        return out


# Walk states and the component their time is credited to.  A sleep after the waiter first ran
# (_BLOCKED) is a re-block; the scheduler's time getting it back on a CPU (_REWOKEN, _REQUEUED) is
# the scheduler's, as for the first wake.
_ASLEEP, _WOKEN, _QUEUED, _RUNNING, _BLOCKED, _REWOKEN, _REQUEUED, _PREEMPTED = range(8)
_BUCKET = ("notify", "sched_wake", "sched_queue", "interpreter", "gil_wait", "sched_wake", "sched_queue", "sched_queue")


def _asleep(state: str) -> bool:
    return not state.startswith("R")


def _state_before(events: Sequence[SchedEvent], tid: int) -> Tuple[int, Optional[bool]]:
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


class _Walk:
    def __init__(self, tid: int, t0: int, state: int, context: WaiterContext) -> None:
        self.tid = tid
        self.context = context
        self.parts = dict.fromkeys(COMPONENTS, 0)
        self.pos = t0
        self.state = state
        self.woken = False  # the wake that ends the wait for the notify was seen
        self.ran = False  # the waiter was seen on a CPU after that wake
        self.waking_cpu: Optional[int] = None
        self.from_idle: Optional[bool] = None
        self.cross_cpu: Optional[bool] = None
        self.by_notifier: Optional[bool] = None
        self.inferred = 0
        self.call: Optional[SchedEvent] = None  # the system call the waiter is in (entered, not left)
        self.blocks: List[Reblock] = []
        self.sleeping: Optional[Reblock] = None  # the re-block being slept, until its wake
        self.leaving: Optional[int] = None  # index of the re-block whose call's exit may say it timed out
        self.tgid = 0  # the waiter's process, once one of its own events says
        self.early: Optional[SchedEvent] = None  # a wake raised while it was still on its CPU
        # A re-block left unplaced at a switch-in with no wake seen: (its time, the re-block), until
        # the exit of its call says whether its timeout ended it.
        self.unconfirmed: Optional[Tuple[int, Reblock]] = None

    def credit(self, until: int, bucket: Optional[str] = None) -> None:
        bucket = bucket or _BUCKET[self.state]
        span = until - self.pos
        self.parts[bucket] += span
        if bucket == "gil_wait" and self.sleeping is not None:
            self.sleeping = dataclasses.replace(self.sleeping, asleep_ns=self.sleeping.asleep_ns + span)
        self.pos = until

    def first_run(self, event: SchedEvent, from_idle: Optional[bool]) -> None:
        if self.woken and not self.ran:
            self.ran = True
            self.from_idle = from_idle
            if self.waking_cpu is not None:
                self.cross_cpu = self.waking_cpu != event.cpu

    def end_sleep(self) -> None:
        if self.sleeping is not None and self.sleeping.asleep_ns > 0:
            self.blocks.append(self.sleeping)
        self.sleeping = None

    def waking(self, event: SchedEvent) -> None:
        if self.state == _ASLEEP:
            self.credit(event.time_ns)
            self.state, self.woken, self.waking_cpu = _WOKEN, True, event.cpu
            if self.context.notifier_tid:
                self.by_notifier = event.tid == self.context.notifier_tid
        elif self.state == _BLOCKED:
            self.credit(event.time_ns)
            if self.sleeping is not None:
                by = waker_role(event.tid, event.tgid, self.tgid, self.context)
                call = self.call
                if by in ("process", "unknown") and call is not None and call.syscall == "futex" and call.arg1 & 0x80:
                    # Nothing outside the process can wake a private futex: a wake raised in another
                    # process's (or the idle task's) context is its timer's interrupt.  Even if the
                    # call then returns 0 (the holder's wake took it off the futex before it ran).
                    by = "timeout"
                self.sleeping = dataclasses.replace(self.sleeping, by=by, ended_ns=event.time_ns,
                                                    holder_tid=None if by == "timeout" else event.tid or None)
                count = len(self.blocks)
                self.end_sleep()
                # The exit of the call it slept in will say whether that wake was its timeout.
                self.leaving = count if len(self.blocks) > count else None
            self.state = _REWOKEN
        elif self.state == _RUNNING:
            # A wake raised while the waiter is still on its CPU, on its way to sleep (the kernel
            # names a wake only of a task that set itself asleep): if a switch-out follows, that
            # sleep was over before it began (see switch_out); if not, the call never slept.
            self.early = event
        # A wake of a waiter already runnable: nothing changes.

    def wakeup(self, event: SchedEvent) -> None:
        if self.state in (_WOKEN, _REWOKEN):
            self.credit(event.time_ns)
            self.state = _QUEUED if self.state == _WOKEN else _REQUEUED

    def switch_in(self, event: SchedEvent) -> None:
        if self.state in (_ASLEEP, _BLOCKED):
            # On a CPU without a wake the trace showed: not placed -- unless the exit of the call it
            # slept in, next, says the call timed out (its timer fired where nothing is recorded):
            # then it was asleep on what it waited for until then (see syscall).
            unplaced = event.time_ns - self.pos
            self.credit(event.time_ns, "unattributed")
            if self.state == _BLOCKED and self.sleeping is not None:
                self.unconfirmed = (unplaced, self.sleeping)
                self.sleeping = None
            self.end_sleep()
        elif self.state != _RUNNING:
            self.credit(event.time_ns)
        self.first_run(event, event.prev_pid == 0)
        self.state = _RUNNING

    def on_cpu(self, event: SchedEvent) -> None:
        if self.state == _RUNNING:
            return
        # Its first act on a CPU after a sleep is to return from the call it slept in: that exit
        # bounds the switch-in the trace did not show (within a microsecond or two).  Until then,
        # an event in its context (an interrupt's wake of another task) is the kernel's, on the way
        # back.  Any other first event leaves the stretch unplaced: it ran for an unknown time.
        woken = self.state in (_WOKEN, _QUEUED, _REWOKEN, _REQUEUED)
        if woken and event.kind not in ("enter", "exit") and self.call is not None and self.call.kind == "enter":
            return
        if woken and event.kind == "exit":
            self.credit(event.time_ns)
            self.inferred += 1
        elif self.state == _BLOCKED and event.kind == "exit" and self.sleeping is not None \
                and event.syscall == self.sleeping.syscall:
            # A re-block ended by a wake raised where nothing is recorded (a timer firing on an
            # idle CPU): the exit of the call it slept in ends it, and says whether it timed out.
            self.credit(event.time_ns)
            by = "timeout" if timed_out(event.syscall, event.ret) else "unknown"
            self.sleeping = dataclasses.replace(self.sleeping, by=by, ended_ns=event.time_ns)
            self.end_sleep()
            self.inferred += 1
        else:
            self.credit(event.time_ns, "unattributed")
            self.end_sleep()
        self.first_run(event, None)
        self.state = _RUNNING

    def handoff(self, event: SchedEvent) -> None:
        """The waiter, on a CPU, wakes another thread: inside a futex call on the GIL that is the
        GIL's previous holder, told that the switch it asked for happened (CPython's forced
        switching): the holder of the GIL waits that ended in timeouts just before."""
        call = self.call
        if call is None or call.kind != "enter" or call.syscall != "futex" \
                or blocked_on("futex", call.arg0, call.tgid, self.context) != "gil":
            return
        role = waker_role(event.pid, self.tgid, self.tgid, self.context)
        for index in range(len(self.blocks) - 1, -1, -1):
            block = self.blocks[index]
            if block.on != "gil" or block.by != "timeout" or block.holder:
                break
            self.blocks[index] = dataclasses.replace(block, holder=role, holder_tid=event.pid)

    def switch_out(self, event: SchedEvent) -> None:
        if self.state != _RUNNING:
            # It ran with no event to say since when: the stretch is not placed.
            self.credit(event.time_ns, "unattributed")
            self.end_sleep()
            self.first_run(event, None)
        else:
            self.credit(event.time_ns)
        early, self.early = self.early, None
        if not _asleep(event.prev_state):
            self.state = _PREEMPTED
        elif not self.woken:
            self.state = _ASLEEP  # not yet notified: still the wait the notify ends
            if early is not None:  # ... and its wake already raised
                self.waking(dataclasses.replace(early, time_ns=event.time_ns))
        else:
            call = self.call
            syscall, address, tgid = (call.syscall, call.arg0, call.tgid) if call is not None else ("", 0, 0)
            on = blocked_on(syscall, address, tgid, self.context)
            self.sleeping = Reblock(on=on, by="unknown", asleep_ns=0, syscall=syscall,
                                    address=address if call is not None else None)
            self.state = _BLOCKED
            if early is not None:  # woken on its way to sleep: asleep for no time, the wake pending
                self.waking(dataclasses.replace(early, time_ns=event.time_ns))

    def syscall(self, event: SchedEvent) -> None:
        self.early = None  # back in its own code: a wake raised before found it awake
        unconfirmed, self.unconfirmed = self.unconfirmed, None
        index, self.leaving = self.leaving, None
        if event.kind == "enter":
            self.call = event
            return
        call, self.call = self.call, None
        if call is None or not timed_out(event.syscall, event.ret):
            return
        if unconfirmed is not None and event.syscall == unconfirmed[1].syscall:
            # The sleep ended by its timeout, on a CPU that records nothing: a re-block after all.
            span, block = unconfirmed
            self.parts["unattributed"] -= span
            self.parts["gil_wait"] += span
            self.blocks.append(dataclasses.replace(block, by="timeout", asleep_ns=block.asleep_ns + span,
                                                   ended_ns=event.time_ns))
            self.inferred += 1
        elif index is not None and event.syscall == self.blocks[index].syscall:
            self.blocks[index] = dataclasses.replace(self.blocks[index], by="timeout", holder_tid=None)


def split_wake(events: Sequence[SchedEvent], times: Sequence[int], tid: int, t0: int, t1: int,
               notifier_tid: Optional[int] = None, context: Optional[WaiterContext] = None) -> WakeSplit:
    """Split the wake ``[t0, t1]`` of waiter ``tid`` at its time-ordered ``events`` (``times``: their ``time_ns``);
    ``context`` names its re-blocks (by default only ``notifier_tid`` is known)."""
    ctx = context if context is not None else WaiterContext(notifier_tid=notifier_tid)
    if ctx.notifier_tid is None and notifier_tid is not None:
        ctx = dataclasses.replace(ctx, notifier_tid=notifier_tid)
    start = bisect.bisect_right(times, t0)
    end = bisect.bisect_right(times, t1)
    before = events[max(0, start - 64):start]
    state, parked = _state_before(before, tid)
    walk = _Walk(tid, t0, state, ctx)
    for event in reversed(before):  # the call the waiter was in at t0
        if event.tid == tid and event.kind in ("enter", "exit"):
            walk.call = event if event.kind == "enter" else None
            break
    for event in events[start:end]:
        kind = event.kind
        if event.tid == tid and event.tgid:
            walk.tgid = event.tgid
        if kind == "waking" and event.pid == tid:
            walk.waking(event)
        elif kind == "wakeup" and event.pid == tid:
            walk.wakeup(event)
        elif kind == "switch" and event.next_pid == tid:
            walk.switch_in(event)
        elif kind == "switch" and event.prev_pid == tid:
            walk.switch_out(event)
        elif event.tid == tid:
            # The waiter's own system call, or a wake it raised: it is on a CPU.
            walk.on_cpu(event)
            if kind in ("enter", "exit"):
                walk.syscall(event)
            elif kind == "waking":
                walk.handoff(event)
    # t1 is taken on a CPU: the last stretch is the interpreter's if the events agree.
    walk.credit(t1, "interpreter" if walk.state == _RUNNING else "unattributed")
    walk.end_sleep()
    blocks = resolve_holders(walk.blocks, ctx, walk.tgid)
    return WakeSplit(walk.parts, len(blocks), walk.from_idle, walk.cross_cpu, parked, walk.by_notifier, blocks, walk.inferred)


def why_untraceable(arm: Arm) -> Optional[str]:
    """Why an arm's wakes cannot be split at scheduler events (None: they can)."""
    record = arm_record(arm)
    if not record.is_latency:
        return "not a wake: a rate arm times a loop of calls"
    if record.waiter == "spinning":
        return "the waiter spins on a CPU: the kernel never puts it to sleep, so there is no wake event to split at"
    if record.scope == "self":
        return "notifier and waiter are one thread: it never sleeps between t0 and t1"
    if record.waiter != "blocked":
        return "no waiter the kernel wakes"
    return None


def split_wakes(events: Sequence[SchedEvent], tid: int, t0s: Sequence[int], samples_ns: Sequence[int],
                notifier_tid: Optional[int] = None, context: Optional[WaiterContext] = None) -> List[WakeSplit]:
    times = [e.time_ns for e in events]
    return [split_wake(events, times, tid, t0, t0 + s, notifier_tid, context) for t0, s in zip(t0s, samples_ns)]


def component_series(splits: Sequence[WakeSplit]) -> Dict[str, List[int]]:
    """Per component, its value in every wake (the samples file's ``components_ns``), plus ``gil_cycles``."""
    series: Dict[str, List[int]] = {name: [s.parts_ns[name] for s in splits] for name in COMPONENTS}
    series["gil_cycles"] = [s.cycles for s in splits]
    return series


def reblock_series(splits: Sequence[WakeSplit]) -> Dict[str, List[int]]:
    """Per re-block cause, its time in every wake (the samples file's ``traced.reblocks_ns``)."""
    per_wake = [s.causes_ns() for s in splits]
    causes = cause_order(c for wake in per_wake for c in wake)
    return {cause: [wake.get(cause, 0) for wake in per_wake] for cause in causes}


def _band_means(samples_ns: Sequence[int], series: Mapping[str, Sequence[int]], q_low: float, q_high: float,
                reblocks: Optional[Mapping[str, Sequence[int]]] = None) -> Optional[ComponentBand]:
    """Mean latency, components and (given ``reblocks``) causes of the wakes ranked between quantiles ``q_low`` and
    ``q_high``."""
    n = len(samples_ns)
    if n == 0:
        return None
    order = sorted(range(n), key=lambda i: samples_ns[i])
    lo = min(int(q_low * n), n - 1)
    hi = max(lo + 1, min(n, int(round(q_high * n))))
    chosen = order[lo:hi]
    k = len(chosen)
    causes: Optional[Dict[str, float]] = None
    if reblocks is not None:
        means = {cause: sum(values[i] for i in chosen) / k for cause, values in reblocks.items()}
        causes = {cause: mean for cause, mean in means.items() if mean}
    parts = {name: sum(series[name][i] for i in chosen) / k for name in COMPONENTS}
    return ComponentBand(wakes=k, latency_ns=sum(samples_ns[i] for i in chosen) / k, parts_ns=parts, reblocks_ns=causes)


#: How many holders of what the waiter re-blocked on the summary names.
HOLDERS_SHOWN = 5


def _holders(splits: Sequence[WakeSplit]) -> Tuple[TraceHolder, ...]:
    """Who held what the waiter re-blocked on, most time first."""
    asleep: Dict[Tuple[str, str], int] = {}
    tids: Dict[Tuple[str, str], Set[int]] = {}
    wakes: Dict[Tuple[str, str], int] = {}
    for split in splits:
        held = set()
        for block in split.reblocks:
            if block.holder_tid is not None and block.holder:
                key = (block.on, block.holder)
                asleep[key] = asleep.get(key, 0) + block.asleep_ns
                tids.setdefault(key, set()).add(block.holder_tid)
                held.add(key)
        for key in held:
            wakes[key] = wakes.get(key, 0) + 1
    return tuple(TraceHolder(on=key[0], role=key[1], tids=tuple(sorted(tids[key])), wakes=wakes[key], asleep_ns=asleep[key])
                 for key in sorted(asleep, key=lambda key: (-asleep[key], key))[:HOLDERS_SHOWN])


def summarize_components(samples_ns: Sequence[int], splits: Sequence[WakeSplit]) -> TraceComponents:
    """The ``trace.components`` figures of an arm: per component (and ``scheduler`` = wake + queue) its own
    p50/p90/p99, which do not sum; ``at_p50``/``at_p99`` the mean components of the wakes ranked 45th-55th
    and from the 99th percentile, which do."""
    series = component_series(splits)
    causes = reblock_series(splits)
    columns = dict(series, scheduler=[a + b for a, b in zip(series["sched_wake"], series["sched_queue"])])
    percentiles: Dict[str, ComponentPercentiles] = {}
    for name in COMPONENTS + ("scheduler",):
        stats = summarize_latency(columns[name])
        percentiles[name] = {key: getattr(stats, key) for key in ("p50_ns", "p90_ns", "p99_ns", "mean_ns", "max_ns")}
    n = len(splits)
    idle = [s.from_idle for s in splits if s.from_idle is not None]
    cross = [s.cross_cpu for s in splits if s.cross_cpu is not None]
    by_cause: Dict[str, ReblockCause] = {}
    for cause, values in causes.items():
        present = [v for v in values if v]
        by_cause[cause] = ReblockCause(wakes=len(present), total_ns=sum(present), p50_ns=summarize_latency(present).p50_ns)
    return TraceComponents(wakes=n, fully_attributed=sum(1 for s in splits if s.attributed),
                           with_gil_cycles=sum(1 for s in splits if s.cycles),
                           from_idle_fraction=(sum(idle) / len(idle)) if idle else None,
                           cross_cpu_fraction=(sum(cross) / len(cross)) if cross else None,
                           parked_at_t0_fraction=(sum(1 for s in splits if s.parked) / n) if n else None,
                           inferred_switch_ins=sum(s.inferred for s in splits), percentiles=percentiles,
                           at_p50=_band_means(samples_ns, series, 0.45, 0.55, causes),
                           at_p99=_band_means(samples_ns, series, 0.99, 1.0, causes), causes=by_cause,
                           holders=_holders(splits))


def check_sums(samples_ns: Sequence[int], series: Mapping[str, Sequence[int]]) -> bool:
    """True when every wake's components sum to its latency exactly (ns)."""
    return all(sum(series[name][i] for name in COMPONENTS) == s for i, s in enumerate(samples_ns))


#: A re-block cause under this share of its band's latency is folded into "other re-blocks".
CAUSE_SHOWN_SHARE = 0.01


def band_sentence(label: str, latency_ns: Optional[float], parts: Mapping[str, float],
                  causes: Optional[Mapping[str, float]], native: bool = False) -> str:
    """A band as a sentence: "p50 5066 µs = notify 1011 + wake 7.22 + queue 100 + re-blocked on the GIL the notifier
    held 1745 + the waiter's own work 2002 + other 200", causes largest first.  A band from before re-blocks were
    named (``causes`` None) reads as before, a C floor's extra sleeps as re-sleeps (``native``)."""
    if causes is None:
        # In C there is no GIL: the extra sleep/wake cycles are the waiter re-sleeping on a lock.
        names = dict(_OLD_SHORT_NAMES, gil_wait="re-sleep") if native else _OLD_SHORT_NAMES
        shown = ["%s %s" % (names[name], _us(parts.get(name))) for name in COMPONENTS[:-1]]
    else:
        latency = float(latency_ns or 0.0)
        shown = ["%s %s" % (SHORT_NAMES[name], _us(parts.get(name))) for name in COMPONENTS[:3]]
        folded = float(parts.get("gil_wait") or 0.0)
        for cause, value in sorted(causes.items(), key=lambda item: (-item[1], item[0])):
            if value > 0 and value >= CAUSE_SHOWN_SHARE * latency:
                shown.append("%s %s" % (cause_phrase(cause), _us(value)))
                folded -= value
        if folded >= 0.0005 * max(latency, 1.0) and folded > 0.5:
            shown.append("other re-blocks %s" % _us(folded))
        shown.append("the waiter's own work %s" % _us(parts.get("interpreter")))
    text = "%s %s µs = %s" % (label, _us(latency_ns), " + ".join(shown))
    unplaced = parts.get("unattributed")
    return text + " + other %s" % _us(unplaced) if unplaced else text


def _holder_note(holder: TraceHolder) -> str:
    tids = [str(t) for t in holder.tids]
    names = {"notifier": "the notifier", "busy": "busy thread", "thread": "thread", "process": "thread"}
    who = names.get(holder.role, holder.role)
    if holder.role != "notifier" and tids:
        who = (who + "s " if len(tids) > 1 else who + " ") + ", ".join(tids[:3]) + (" ..." if len(tids) > 3 else "")
        if len(tids) > 1:
            who += " (one per worker)"
    if holder.role == "process":
        who += " of another process"
    return "%s held by %s in %s wakes" % (ON_PHRASES.get(holder.on, holder.on), who, holder.wakes)


_NAMED_HEAD = [
    "  each wake split at the kernel's scheduler events and the waiter's blocking calls (perf,",
    "  CLOCK_MONOTONIC), in µs; the parts of a wake sum to it: notify path + scheduler (wake",
    "  delivery, run-queue wait) + each further sleep, named by what it waited on and who held",
    "  it + the waiter's own work on a CPU up to t1; 'at p50' = mean of the wakes ranked",
    "  45th-55th percentile.",
]
_OLD_HEAD = [
    "  each wake split at the kernel's scheduler events (perf, CLOCK_MONOTONIC), in µs; the",
    "  parts of a wake sum to it: notify path + scheduler (wake delivery, run-queue wait) +",
    "  GIL wait (for C: re-sleep on a lock) + interpreter; 'at p50' = mean of the wakes ranked",
    "  45th-55th percentile.",
]


def _trace_notes(trace: TraceFigures, named: bool) -> List[str]:
    notes = []
    if trace.untraced_p50_ns is not None:
        note = "traced p50 %s vs untraced %s" % (_us(trace.traced_p50_ns), _us(trace.untraced_p50_ns))
        if trace.untraced_after_p50_ns is not None:
            note += " before, %s after" % _us(trace.untraced_after_p50_ns)
        note += " µs"
        if trace.overhead_ratio is not None:
            note += " (x%.2f)" % trace.overhead_ratio
        notes.append(note)
    if trace.lost_events:
        notes.append("perf dropped %d events (a busy machine): their wakes are unattributed" % trace.lost_events)
    if trace.wakes:
        notes.append("%d/%d wakes fully attributed" % (trace.fully_attributed, trace.wakes))
        if trace.with_gil_cycles:
            notes.append(("%d re-blocked" if named else "%d with GIL cycles") % trace.with_gil_cycles)
        if trace.inferred_switch_ins:
            notes.append("%d switch-ins placed at the waiter's return from its call (its CPU's idle task"
                         " records no events)" % trace.inferred_switch_ins)
        notes.extend(_holder_note(h) for h in trace.holders[:2])
        for value, label in ((trace.cross_cpu_fraction, "cross-CPU"), (trace.from_idle_fraction, "onto an idle CPU")):
            if value is not None and value >= 0.005:
                notes.append("%s %.0f%%" % (label, 100 * value))
    return notes


def format_where_the_time_goes(run: Run) -> List[str]:
    """The WHERE THE TIME GOES block of summary.txt (empty when the run was not asked to trace)."""
    bundle = bundle_of(run)
    tracing = bundle.tracing
    if not tracing.requested:
        return []
    traces = [(arm, arm.trace) for arm in bundle.arms()]
    if not tracing.traced and not any(trace is not None and trace.traced for _, trace in traces):
        return ["  not traced: " + escape_text(tracing.reason or "unknown reason")]
    named = any(trace is not None and trace.at_p50_reblocks is not None for _, trace in traces)
    out = list(_NAMED_HEAD if named else _OLD_HEAD)
    if not tracing.traced:
        out.append("  tracing stopped during the run: " + escape_text(tracing.reason or "unknown reason"))
    for arm, _ in traced_arm_order(bundle):
        trace = arm.trace
        name = escape_text(arm.name)
        if trace is None:
            continue
        if not trace.traced:
            if arm.is_latency:
                out.append("  %-26s not split: %s" % (name, escape_text(trace.reason or "")))
            continue  # a rate arm: nothing that wakes
        native = arm.family == "native"
        if trace.has_bands:
            out.append("  %-26s %s" % (name, band_sentence("p50", trace.at_p50_ns, trace.at_p50, trace.at_p50_reblocks, native)))
        if trace.at_p99_ns is not None or trace.at_p99:
            out.append("  %-26s %s" % ("", band_sentence("p99", trace.at_p99_ns, trace.at_p99, trace.at_p99_reblocks, native)))
        notes = _trace_notes(trace, named)
        if notes:
            out.append("  %-26s (%s)" % ("", "; ".join(notes)))
        if trace.frames:
            out.append("  %-26s %s" % ("", FrameRecord.from_dict(trace.frames).line()))
    return [escape_text(line) for line in out]


def traced_arm_order(run: Run) -> List[Tuple[ArmRecord, Optional[str]]]:
    """The arms in the order "where the time goes" shows them: pairs ``(arm, floor_of)``, each C floor once, after
    the first Python arm it is the floor of (``floor_of`` names that arm; None for the others)."""
    arms = bundle_of(run).arms()
    by_name = {a.name: a for a in arms}
    floors = {a.native for a in arms if a.native}
    shown: set = set()
    order: List[Tuple[ArmRecord, Optional[str]]] = []
    for arm in arms:
        if arm.name in shown or (arm.family == "native" and arm.name in floors):
            continue
        order.append((arm, None))
        shown.add(arm.name)
        floor = by_name.get(arm.native) if arm.native else None
        if floor is not None and floor.name not in shown:
            order.append((floor, arm.name))
            shown.add(floor.name)
    order.extend((arm, None) for arm in arms if arm.name not in shown)  # a floor whose Python arms are all absent
    return order


class TracedSeriesError(ValueError):
    """The samples file's ``traced`` part is not a per-wake component series of its traced wakes."""


def _wake_ints(values: object, n: int, what: str) -> List[int]:
    if not isinstance(values, list) or len(values) != n or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**63 for v in values
    ):
        raise TracedSeriesError("traced %s must be %d non-negative integers (one per traced wake)" % (what, n))
    return values


def traced_series(doc: Mapping[str, object]) -> Optional[Dict[str, List[int]]]:
    """The per-wake series of a samples document's ``traced`` part, ``{"latency": [...], <component>: [...]}`` (None
    when it has none; :class:`TracedSeriesError` when they are not one summing integer per wake)."""
    part = doc.get("traced")
    if part is None:
        return None
    if not isinstance(part, Mapping):
        raise TracedSeriesError("'traced' is not an object")
    samples, series = part.get("samples_ns"), part.get("components_ns")
    if not isinstance(samples, list) or not isinstance(series, Mapping):
        raise TracedSeriesError("'traced' needs samples_ns and components_ns")
    out = {"latency": _wake_ints(samples, len(samples), "samples_ns")}
    out.update((name, _wake_ints(series.get(name), len(samples), "component %s" % name)) for name in COMPONENTS)
    if not check_sums(out["latency"], out):
        raise TracedSeriesError("the traced components do not sum to each wake's latency")
    return out


def traced_reblocks(doc: Mapping[str, object], series: Optional[Mapping[str, List[int]]]) -> Optional[Dict[str, List[int]]]:
    """The per-wake re-block series by cause of a samples document's ``traced`` part (None when it has none), checked
    against its :func:`traced_series` as that is."""
    part = doc.get("traced")
    causes = part.get("reblocks_ns") if isinstance(part, Mapping) else None
    if series is None or causes is None:
        return None
    if not isinstance(causes, Mapping):
        raise TracedSeriesError("traced reblocks_ns is not an object")
    n = len(series["latency"])
    out = {str(cause): _wake_ints(values, n, "re-block %s" % cause) for cause, values in causes.items()}
    if any(sum(values[i] for values in out.values()) != series["gil_wait"][i] for i in range(n)):
        raise TracedSeriesError("the traced re-blocks do not sum to each wake's gil_wait")
    return out


@dataclasses.dataclass(frozen=True)
class FloorGap:
    """How a traced Python arm's band (``p50`` or ``p99``) differs from its traced C floor's, component by component
    (``parts_ns`` sum to ``extra_ns``); ``matched`` is False for a nearest floor (not the same experiment)."""

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


def floor_gaps(run: Run, band: str = "p50") -> List[FloorGap]:
    """:class:`FloorGap` of every traced Python arm whose C floor was traced in the same run, in :func:`traced_arm_order`."""
    by_name = {a.name: a for a in bundle_of(run).arms()}

    def band_of(arm: Optional[ArmRecord]) -> Optional[Tuple[float, Mapping[str, float]]]:
        trace = arm.trace if arm is not None else None
        if trace is None or not trace.traced:
            return None
        latency_ns, parts = (trace.at_p50_ns, trace.at_p50) if band == "p50" else (trace.at_p99_ns, trace.at_p99)
        return (latency_ns or 0.0, parts) if latency_ns is not None or parts else None

    gaps: List[FloorGap] = []
    for arm, floor_of in traced_arm_order(run):
        if floor_of is not None or not arm.native:
            continue
        mine, theirs = band_of(arm), band_of(by_name.get(arm.native))
        if mine is None or theirs is None:
            continue
        parts = {name: mine[1].get(name, 0.0) - theirs[1].get(name, 0.0) for name in COMPONENTS}
        gaps.append(FloorGap(arm.name, arm.native, band, mine[0], theirs[0], parts, arm.native_match != "nearest"))
    return gaps
