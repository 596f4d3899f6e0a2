"""Signal storms and realtime scheduling, read from a run's figures (stdlib only): a storm arm's worker ``info``
holds counts (:mod:`wakelab.core.drivers.storm`) that :func:`storm_figures` adds up."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any, List, Mapping, Optional, Tuple

from wakelab.analysis.caveats import Arm, Run, arm_record, bundle_of, worker_infos
from wakelab.analysis.guidance import Advice, Cite, Level
from wakelab.core.model import ROLE_REALTIME
from wakelab.core.registry import arms_with_role
from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.formatting import counted, format_ns, format_ratio

STORMS = "signal storm"
REALTIME = "realtime"

RECEIVER_TITLES = {"handler": "Python handler", "sigwait": "sigtimedwait thread", "wakeup-fd": "wakeup fd",
                   "c-handler": "C handler", "c-sigwait": "C sigtimedwait"}


@dataclasses.dataclass(frozen=True)
class StormInfo:
    """What one storm recorded (:mod:`wakelab.core.drivers.storm` defines each count)."""

    signal: str
    receiver: str
    senders: int
    sender_kind: str
    sent: int
    refused: int
    delivered: int
    flushed: int
    strays: int
    work_lost: Optional[float]  # 1 - storm rate / storm-free rate of the receiver's main thread

    @staticmethod
    def each_of(arm: ArmRecord) -> List["StormInfo"]:
        def read(kind: str, value: Any) -> Any:
            if kind == "str":
                return str(value or "")
            if kind == "int":
                return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
            return float(value) if isinstance(value, (int, float)) else None

        return [StormInfo(**{f.name: read(str(f.type), one.get(f.name)) for f in dataclasses.fields(StormInfo)})
                for one in worker_infos(arm) if "sent" in one]


@dataclasses.dataclass(frozen=True)
class StormFigures(StormInfo):
    """One storm arm's counts, summed over its ``storms`` (``work_lost``: their median), and its reaction times."""

    arm: str
    storms: int
    p50_ns: Optional[float]
    p99_ns: Optional[float]

    @property
    def ratio(self) -> Optional[float]:
        return self.delivered / self.sent if self.sent else None

    @property
    def receiver_title(self) -> str:
        title = RECEIVER_TITLES.get(self.receiver, self.receiver)
        return title + (", thread senders" if self.sender_kind == "thread" else "")


def storm_figures(arm: Arm) -> Optional[StormFigures]:
    """The storm figures of one arm, or None when it is not a measured storm arm."""
    record = arm_record(arm)
    storms = StormInfo.each_of(record)
    if record.family != "storms" or not storms:
        return None
    first = storms[0]
    lost = [s.work_lost for s in storms if s.work_lost is not None]
    latency = record.latency
    sums = {key: sum(getattr(s, key) for s in storms) for key in ("sent", "refused", "delivered", "flushed", "strays")}
    return StormFigures(**dict(dataclasses.asdict(first), **sums, work_lost=statistics.median(lost) if lost else None),
                        arm=record.name, storms=len(storms), p50_ns=latency.p50_ns if latency is not None else None,
                        p99_ns=latency.p99_ns if latency is not None else None)


def storm_table(run: Run) -> List[StormFigures]:
    return [figures for figures in (storm_figures(arm) for arm in bundle_of(run).arms()) if figures is not None]


def format_share(ratio: Optional[float]) -> str:
    """A delivery ratio as a percentage a reader can compare across orders of magnitude: 100 %, 2.9 %, 0.046 %."""
    if ratio is None:
        return "-"
    percent = 100.0 * ratio
    if percent >= 99.95:
        return "%.0f %%" % percent if percent >= 100 else "%.1f %%" % percent
    if percent >= 1:
        return "%.1f %%" % percent
    if percent == 0:
        return "0 %"
    return "%.2g %%" % percent


def _cites(levels: Mapping[str, Level], *storms: StormFigures) -> Tuple[Cite, ...]:
    return tuple(levels[f.arm].cite() for f in storms if f.arm in levels)


def storm_advice(bundle: Bundle, levels: Mapping[str, Level]) -> Tuple[List[Advice], str]:
    """What this run's storms say, and the headline's clause."""
    rows = {f.arm: f for f in storm_table(bundle)}
    if not rows:
        return [], ""
    items: List[Advice] = []

    def share(f: StormFigures) -> str:
        return "%s of %s sent (%s)" % ("{:,}".format(f.delivered), "{:,}".format(f.sent), format_share(f.ratio))

    handlers = [f for f in rows.values() if f.receiver == "handler" and f.sender_kind != "thread"]
    clause = ""
    if handlers:
        parts = ["%s: %s" % (f.signal, share(f)) for f in handlers]
        worst = min(handlers, key=lambda f: f.ratio if f.ratio is not None else 1.0)
        text = (
            "A Python handler under a storm of %d sender processes ran for a fraction of the signals sent -- %s. "
            "CPython's C handler only sets a flag that the main thread checks between bytecodes, so deliveries merge "
            "into one handler call however many there were, and a real-time signal's queue is lost at the "
            "interpreter's level too. A program that counts signals, or expects one handler run per SIGCHLD or "
            "SIGHUP, is wrong by that much under load." % (handlers[0].senders, "; ".join(parts)))
        items.append(Advice(STORMS, text, _cites(levels, *handlers)))
        clause = "a Python handler saw %s of a %s storm" % (format_share(worst.ratio), worst.signal)
    better = [f for f in rows.values() if f.receiver in ("sigwait", "wakeup-fd", "c-handler", "c-sigwait")
              and f.ratio is not None]
    queued = [f for f in better if f.signal.startswith("SIGRT")]
    if queued:
        best = max(queued, key=lambda f: (f.ratio or 0.0, f.receiver in ("sigwait", "wakeup-fd")))
        parts = ["%s %s" % (RECEIVER_TITLES.get(f.receiver, f.receiver), share(f)) for f in queued]
        text = (
            "To see every signal, take real-time signals off their queue one by one: %s. signal.sigtimedwait "
            "(sigwaitinfo) in a thread that blocks the signal, or a wakeup fd (CPython's C handler writes one byte a "
            "delivery; read and count the bytes), sees what C sees; counting in C (a sigaction handler) is the floor."
            % "; ".join(parts))
        items.append(Advice(STORMS, text, _cites(levels, *queued)))
        if clause:
            clause += ", %s %s" % (RECEIVER_TITLES.get(best.receiver, best.receiver), format_share(best.ratio))
    standard = [f for f in better if f.signal == "SIGUSR1"]
    if standard:
        floor = max(standard, key=lambda f: f.ratio or 0.0)
        text = (
            "A standard signal is one pending bit in the kernel: sends while it is pending merge before any code "
            "runs, so no receiver counts a SIGUSR1 storm -- the most any saw here was %s (%s). Count events another "
            "way (a pipe, an eventfd, a counter), and treat a standard signal as 'at least one happened'."
            % (format_share(floor.ratio), floor.arm))
        items.append(Advice(STORMS, text, _cites(levels, floor)))
    lost = [f for f in rows.values() if f.work_lost is not None and f.receiver in ("handler", "sigwait", "wakeup-fd")]
    if lost:
        heaviest = max(lost, key=lambda f: f.work_lost or 0.0)
        text = (
            "The storm's cost to the receiver's main thread (its loop rate against a storm-free pass): %s. It counts "
            "the senders' share of the CPUs as well as the handling; where the signal is taken in another thread the "
            "main thread pays for that thread's GIL turns instead."
            % "; ".join("%s %s" % (f.arm, format_share(f.work_lost)) for f in sorted(lost, key=lambda f: -(f.work_lost or 0.0))[:4]))
        items.append(Advice(STORMS, text, _cites(levels, heaviest)))
    return items, clause


def _busy(bundle: Bundle) -> Tuple[int, int]:
    conditions = bundle.conditions
    threads = conditions.cpu_threads
    procs = conditions.recorded.get("applied_cpu_procs", conditions.cpu_procs)
    return (threads if isinstance(threads, int) else 0), (procs if isinstance(procs, int) else 0)


def _budget(bundle: Bundle) -> Tuple[object, object]:
    """The machine's realtime budget (runtime, period; µs) as the first arm that recorded it says."""
    for arm in bundle.arms():
        for one in worker_infos(arm):
            budget = one.get("rt_budget")
            if isinstance(budget, Mapping):
                return budget.get("sched_rt_runtime_us"), budget.get("sched_rt_period_us")
    return None, None


def realtime_advice(bundle: Bundle, levels: Mapping[str, Level]) -> Tuple[List[Advice], str]:
    """What SCHED_FIFO bought the waiter in this run, and its pitfalls; and the headline's clause."""
    # (normal, FIFO): each realtime arm declares the arm it is under normal scheduling (wakelab.core.model.Role).
    pairs = [(levels[str(r.against)], levels[b]) for b, r in arms_with_role(ROLE_REALTIME) if r.against in levels and b in levels]
    if not pairs:
        return [], ""
    threads, procs = _busy(bundle)
    load = ", ".join(x for x in (counted(procs, "busy process", "es") if procs else "",
                                 counted(threads, "busy Python thread") if threads else "") if x) or "no load added"
    items: List[Advice] = []
    clause = ""
    for normal, fifo in pairs:
        a99, b99 = normal.figure("p99"), fifo.figure("p99")
        if a99 is None or b99 is None:
            continue
        ratio = b99 / a99
        text = ("Under SCHED_FIFO 80 the %s waiter's p99 was %s against %s under the normal policy (%s; p50 %s against "
                "%s), with %s." % ("Python" if normal.name == "event" else "C", format_ns(b99), format_ns(a99), format_ratio(ratio),
                                   format_ns(fifo.p50_ns), format_ns(normal.p50_ns), load))
        if normal.name == "event":
            if threads and ratio > 0.67:
                text += (" With a busy Python thread beside it the FIFO waiter runs at once but cannot run Python until "
                         "that thread gives up the GIL, at the end of its switch interval: the GIL takes back what "
                         "realtime bought. Realtime helps a Python waiter only where no other thread of the process "
                         "computes in Python.")
            elif ratio < 0.67 and threads:
                text += (" Realtime shortened the tail even beside a busy Python thread (the FIFO waiter asks for the GIL "
                         "at once), but the GIL still costs it: the realtime lab's cell without a busy thread shows how "
                         "much.")
            elif ratio < 0.67:
                text += " Realtime protected the tail from the competing load."
            clause = "SCHED_FIFO took the event waiter's p99 from %s to %s" % (format_ns(a99), format_ns(b99))
        items.append(Advice(REALTIME, text, (normal.cite("p99"), fifo.cite("p99"))))
    runtime, period = _budget(bundle)
    throttle = ""
    if isinstance(runtime, int) and isinstance(period, int) and 0 < runtime < period:
        throttle = (" This machine lets realtime tasks run %s of every %s µs on a CPU: a FIFO thread that never blocks "
                    "(a busy-wait, a Python loop) is stopped for the other %s µs of each period (RT throttling), and "
                    "until then nothing normal runs on its CPU." % ("{:,}".format(runtime), "{:,}".format(period),
                                                                    "{:,}".format(period - runtime)))
    elif runtime == -1:
        throttle = (" This machine does not throttle realtime tasks (sched_rt_runtime_us is -1): a FIFO thread that "
                    "never blocks keeps its CPU from every normal task for good.")
    first = pairs[0][1]
    items.append(Advice(REALTIME, (
        "Pitfalls of a realtime waiter: it must block, not spin.%s The notifier stays a normal task unless it is "
        "switched too (--notifier-policy): a hog can delay it before t0, and a FIFO thread spinning on its CPU starves "
        "it. And the GIL is not scheduled by priority: a FIFO waiter waits for it like any thread." % throttle),
        (first.cite("p99"),)))
    return items, clause
