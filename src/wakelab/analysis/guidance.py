"""Guidance: what this run's figures tell someone choosing a wake path (stdlib only).

The original Lab 135 write-up ended with advice for SRE work: Event (or
Condition/Queue) for in-process wake-ups; signals for process control, with
handlers that only set a flag or write a byte to a wakeup fd; handlers run in
the main thread only; a busy-wait figure says nothing about ``pause()`` or
``sigwait``; installing a handler is cheap.  This module turns a run's own
figures into that advice, so that it changes when the figures change and says
nothing about an arm the run did not measure.

:func:`guidance_for` returns a :class:`Guidance`: a one-line ``headline`` and
``items`` (:class:`Advice` records: ``topic``, ``text``, ``cites``), each
citing the arms and figures (:class:`Cite`) it rests on.  Only arms with
status ``ok`` and figures are cited.  :func:`rank_wake_paths` is the ranking
the verdict of a many-armed run lays out.

When is one arm faster than another?
------------------------------------
summary.json keeps no bootstrap interval of an arm's median, but it keeps
each worker process's median (``spread``: the smallest and largest), which is
the run's own view of how far the level moves from one process to the next --
the variation that dominates wake latency (DESIGN: the same arm at 5.7 µs in
one run and 13 µs in the next).  An arm is *clearly* faster than another only
when its range (its worker medians and pooled median) lies wholly below the
other's; with three workers a side that is the exact rank test's strongest
result.  Where a side has no range (one worker, ``--in-process``), nothing
measures the noise, and only a ratio of at least :data:`NO_RANGE_RATIO` is
called a difference; and a ratio under :data:`MIN_CLAIM_RATIO` never is, however
tight the ranges (a planted delay makes every arm's workers agree to a fraction
of a percent).  Arms not clearly apart are "within this run's noise"
of each other, and the guidance says so instead of ranking them.

Which arms are compared with which
----------------------------------
Only like with like: blocked Python waiters in this process (threads, file
descriptors, asyncio, and any other family that is not signals, processes or
the C floor) are the *in-process wake paths*; signal arms, cross-process arms,
spinning waiters and the C floors are grouped apart (:data:`GROUPS`), because
their waiter state or scope makes them other experiments.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from wakelab.evidence.model import LATENCY, ArmRecord, Bundle, WarningKind
from wakelab.core.model import ROLE_HANDLER, ROLE_HANDLER_COST, ROLE_POLLS, ROLE_POOL, ROLE_SIGWAIT, ROLE_UNWRAPPED_INSTALL
from wakelab.core.registry import arms_with_role, declared_group
from wakelab.formatting import format_ns, format_rate, format_ratio

# Without a range of worker medians, only a ratio this large is called a difference.
NO_RANGE_RATIO = 1.5
# Nor is a ratio below this, however tight the ranges: a 4% edge does not choose a wake path.
MIN_CLAIM_RATIO = 1.1

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

# Groups of latency arms that are compared among themselves (see the module docstring).
IN_PROCESS = "in-process"
SIGNAL_GROUP = "signals"
PROCESS_GROUP = "processes"
HANDOFF_GROUP = "handoff"
SPINNING = "spinning"
NATIVE = "native"
STORM_GROUP = "storms"
GROUPS: Tuple[Tuple[str, str], ...] = (
    (IN_PROCESS, "in-process wake (blocked waiter)"),
    (SIGNAL_GROUP, "signal wake (blocked waiter)"),
    (PROCESS_GROUP, "across processes"),
    (HANDOFF_GROUP, "hand-offs (executor submit, or waking a subinterpreter)"),
    (SPINNING, "spinning waiters"),
    (STORM_GROUP, "reaction under a signal storm (see the storm table)"),
    (NATIVE, "C floor"),
)

# Which arm plays which part in the advice -- a handler's cost against the same path without one, the
# arms that run a handler or take a signal with sigwait, the executors, a polling wait's blocking
# alternative, the install without its Python wrapper -- each arm declares (wakelab.core.model.Role);
# arms_with_role reads them.
# How many handlers a reload re-installs in the install arithmetic (SIGHUP, SIGTERM, SIGINT).
RELOAD_HANDLERS = 3


@dataclasses.dataclass(frozen=True)
class Cite:
    """One figure a claim rests on: ``arm``'s ``figure`` (``p50``, ``p90``, ``p99``, ``max``, or
    ``per_call`` for a rate arm: 1e9 / its median ops/s), in nanoseconds."""

    arm: str
    figure: str
    value_ns: float

    def to_dict(self) -> Dict[str, Any]:
        return {"arm": self.arm, "figure": self.figure, "value_ns": self.value_ns}


@dataclasses.dataclass(frozen=True)
class Advice:
    """One claim: its ``topic`` (one of the topic constants), its worded ``text``, and the figures it cites."""

    topic: str
    text: str
    cites: Tuple[Cite, ...]

    def to_dict(self) -> Dict[str, Any]:
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
        """Every arm any item cites, in first-cited order."""
        seen: List[str] = []
        for item in self.items:
            for cite in item.cites:
                if cite.arm not in seen:
                    seen.append(cite.arm)
        return seen

    def to_dict(self) -> Dict[str, Any]:
        return {"headline": self.headline, "items": [item.to_dict() for item in self.items]}


def format_times(ratio: float) -> str:
    """A ratio between arms: two decimals below 2× (``1.08×``, so that 1.08 and 1.12 do not both read
    1.1× on either side of :data:`MIN_CLAIM_RATIO`), else as :func:`~wakelab.formatting.format_ratio`."""
    if math.isfinite(ratio) and 0 < ratio < 1.995:
        return "%.2f×" % ratio
    return format_ratio(ratio)


# -- an arm's level and the noise around it ----------------------------------------------------


def _number(value: Any) -> Optional[float]:
    """A finite float, or None (evidence may hold nulls, booleans or out-of-range numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    result = float(value)
    return result if math.isfinite(result) else None


def _positive(value: Any) -> Optional[float]:
    number = _number(value)
    return number if number is not None and number > 0 else None


@dataclasses.dataclass(frozen=True)
class Level:
    """A measured latency arm's median and the range its worker processes' medians span (ns).

    ``ranged`` is False when the run recorded no range (fewer than two
    workers): ``low_ns == high_ns == p50_ns`` then.
    """

    arm: ArmRecord
    p50_ns: float
    low_ns: float
    high_ns: float
    ranged: bool

    @property
    def name(self) -> str:
        return self.arm.name

    def figure(self, key: str) -> Optional[float]:
        """``p50``, ``p90``, ``p99`` or ``max`` of the arm, in ns (None when not reported)."""
        lat = self.arm.latency
        if lat is None:
            return None
        value = lat.max_ns if key == "max" else getattr(lat, key + "_ns", None)
        return _positive(value)

    def cite(self, key: str = "p50") -> Cite:
        value = self.p50_ns if key == "p50" else self.figure(key)
        return Cite(self.name, key, float(value if value is not None else self.p50_ns))


def level_of(arm: ArmRecord) -> Optional[Level]:
    """The arm's :class:`Level`, or None unless it is a measured latency arm with a positive p50."""
    if arm.kind != LATENCY or not arm.measured or arm.latency is None:
        return None
    p50 = _positive(arm.latency.p50_ns)
    if p50 is None:
        return None
    spread = arm.entry.get("spread") if isinstance(arm.entry, Mapping) else None
    if isinstance(spread, Mapping) and spread.get("of", "p50_ns") == "p50_ns":
        low, high = _positive(spread.get("min")), _positive(spread.get("max"))
        if low is not None and high is not None and low <= high:
            return Level(arm, p50, min(low, p50), max(high, p50), True)
    return Level(arm, p50, p50, p50, False)


def clearly_faster(a: Level, b: Level) -> bool:
    """True when ``a``'s median is below ``b``'s by more than this run's noise (module docstring)."""
    if b.p50_ns < MIN_CLAIM_RATIO * a.p50_ns:
        return False
    if a.ranged and b.ranged:
        return a.high_ns < b.low_ns
    return b.p50_ns >= NO_RANGE_RATIO * a.p50_ns


def _noise_phrase(a: Level, b: Level) -> str:
    """How the run tells a difference between ``a`` and ``b`` (for the text)."""
    if a.ranged and b.ranged:
        return "their worker processes' medians do not overlap, and it is over %s×" % MIN_CLAIM_RATIO
    return "no spread between workers to judge by (a single worker, or in-process), so only a %s× difference counts" % NO_RANGE_RATIO


# -- grouping and ranking ------------------------------------------------------------------------


# Groups whose arms are each an experiment of their own: listed by p50, never ranked.
UNRANKED_GROUPS = (SPINNING, NATIVE, STORM_GROUP)


def group_of(arm: ArmRecord) -> str:
    """Which group of :data:`GROUPS` a latency arm is compared within: the group its family or the arm
    declares (``Family.group``, ``Arm.group``), where its waiter state and scope do not say otherwise."""
    declared = declared_group(arm.name, arm.family)
    if declared in (NATIVE, STORM_GROUP):  # C floors, and each receiver of a storm: experiments of their own
        return declared
    if arm.waiter == "spinning":
        return SPINNING
    if declared == HANDOFF_GROUP:
        return HANDOFF_GROUP
    if arm.scope == "cross-process":
        return PROCESS_GROUP
    return declared or IN_PROCESS


@dataclasses.dataclass(frozen=True)
class Ranked:
    """One arm in a ranking: its level, its p50 over the fastest arm's, and whether it is clearly slower."""

    level: Level
    ratio: float
    clearly_slower: bool

    @property
    def name(self) -> str:
        return self.level.name


@dataclasses.dataclass(frozen=True)
class Ranking:
    """The measured arms of one group, fastest p50 first.

    ``leaders`` are the fastest arm and those not clearly slower than it
    (within this run's noise); ``ranked`` is every arm, in order.
    """

    group: str
    title: str
    ranked: Tuple[Ranked, ...]

    @property
    def comparable(self) -> bool:
        """False for groups whose arms differ in waiter state or scope (spinning waiters, C floors)."""
        return self.group not in UNRANKED_GROUPS

    @property
    def fastest(self) -> Ranked:
        return self.ranked[0]

    @property
    def slowest(self) -> Ranked:
        return self.ranked[-1]

    @property
    def leaders(self) -> Tuple[Ranked, ...]:
        return tuple(r for r in self.ranked if not r.clearly_slower)


def rank_wake_paths(bundle: Bundle) -> Tuple[Ranking, ...]:
    """Each group of measured latency arms (:data:`GROUPS` order) ranked by p50; empty groups left out."""
    levels: Dict[str, List[Level]] = {}
    for arm in bundle.arms():
        level = level_of(arm)
        if level is not None:
            levels.setdefault(group_of(arm), []).append(level)
    rankings = []
    for group, title in GROUPS:
        members = sorted(levels.get(group, []), key=lambda lv: (lv.p50_ns, lv.name))
        if not members:
            continue
        first = members[0]
        ranked = group not in UNRANKED_GROUPS
        rankings.append(Ranking(group, title, tuple(
            Ranked(lv, lv.p50_ns / first.p50_ns, ranked and clearly_faster(first, lv)) for lv in members)))
    return tuple(rankings)


def format_ranking(ranking: Ranking, limit: Optional[int] = None) -> str:
    """``pipe 14.1 µs; eventfd, event within noise; queue 2.2×, ...; slowest: mp-queue 104 µs (7.4×)``.

    ``limit`` keeps the text short: the leaders (at most ``limit``), then only the slowest.
    """
    first = ranking.fastest
    text = "%s %s" % (first.name, format_ns(first.level.p50_ns))
    if len(ranking.ranked) == 1:
        return text
    if not ranking.comparable:
        if len(ranking.ranked) > (2 if limit is not None else 4):
            last = ranking.slowest
            return "%d arms, each its own experiment, from %s to %s %s" % (
                len(ranking.ranked), text, last.name, format_ns(last.level.p50_ns))
        return ", ".join("%s %s" % (r.name, format_ns(r.level.p50_ns)) for r in ranking.ranked) + " (each its own experiment)"
    leaders = [r for r in ranking.leaders if r is not first]
    slower = [r for r in ranking.ranked if r.clearly_slower]
    if leaders:
        shown = leaders if limit is None else leaders[:limit]
        more = len(leaders) - len(shown)
        text += "; within noise: %s%s" % (", ".join("%s %s" % (r.name, format_times(r.ratio)) for r in shown),
                                           " and %d more" % more if more else "")
    if slower:
        last = slower[-1]
        middle = slower[:-1] if limit is None else []
        if middle:
            text += "; clearly slower: %s" % ", ".join("%s %s" % (r.name, format_times(r.ratio)) for r in middle)
        text += "; slowest: %s %s (%s)" % (last.name, format_ns(last.level.p50_ns), format_times(last.ratio))
    return text


# -- the advice ------------------------------------------------------------------------------------


def _measured_levels(bundle: Bundle) -> Dict[str, Level]:
    out: Dict[str, Level] = {}
    for arm in bundle.arms():
        level = level_of(arm)
        if level is not None:
            out[arm.name] = level
    return out


def _tail_figure(level: Level) -> Tuple[str, Optional[float]]:
    """The highest percentile the arm reports (p99, else p90), or its max."""
    for key in ("p99", "p90", "max"):
        value = level.figure(key)
        if value is not None:
            return key, value
    return "max", None


def _prefer_advice(ranking: Optional[Ranking]) -> Tuple[Optional[Advice], str]:
    """The in-process recommendation and its headline clause."""
    if ranking is None:
        return None, ""
    first = ranking.fastest
    cites = [first.level.cite("p50")]
    if len(ranking.ranked) == 1:
        tail_key, tail = _tail_figure(first.level)
        if tail is not None:
            cites.append(first.level.cite(tail_key))
        text = ("%s is the only in-process wake path this run measured: p50 %s%s. Nothing here ranks it against "
                "another (--lab catalogue ranks it against the other wake paths)."
                % (first.name, format_ns(first.level.p50_ns),
                   ", %s %s" % (tail_key.replace("_", "."), format_ns(tail)) if tail is not None else ""))
        if first.name == "event":
            text += " threading.Event is the safe, idiomatic choice for waking a thread."
        return Advice(PREFER, text, tuple(cites)), "in-process, %s wakes a thread in %s (p50)" % (
            first.name, format_ns(first.level.p50_ns))
    leaders = ranking.leaders
    slower = [r for r in ranking.ranked if r.clearly_slower]
    parts = ["Fastest in-process wake: %s, p50 %s." % (first.name, format_ns(first.level.p50_ns))]
    if len(leaders) > 1:
        others = [r for r in leaders if r is not first]
        cites += [r.level.cite() for r in others]
        parts.append("Within this run's noise of it: %s -- choose among these by API, not speed." % ", ".join(
            "%s %s (%s)" % (r.name, format_ns(r.level.p50_ns), format_times(r.ratio)) for r in others))
        named = [r for r in others if r.name == "event"] or others[:1]
        rest = len(others) - len(named)
        headline = "fastest in-process wake: %s %s, with %s%s within noise" % (
            first.name, format_ns(first.level.p50_ns), ", ".join("%s (%s)" % (r.name, format_times(r.ratio)) for r in named),
            " and %d more" % rest if rest else "")
    else:
        runner_up = ranking.ranked[1]
        cites.append(runner_up.level.cite())
        parts.append("Prefer it where the wake path is hot: the next, %s (%s), is %s that, beyond this run's noise "
                     "(%s)." % (runner_up.name, format_ns(runner_up.level.p50_ns), format_times(runner_up.ratio),
                                _noise_phrase(first.level, runner_up.level)))
        headline = "prefer %s in-process (%s; %s %s that)" % (
            first.name, format_ns(first.level.p50_ns), runner_up.name, format_times(runner_up.ratio))
    event = next((r for r in ranking.ranked if r.name == "event"), None)
    if event is not None and event is not first:
        cites.append(event.level.cite())
        if event.clearly_slower:
            if not (len(leaders) == 1 and event is ranking.ranked[1]):  # else the headline names it already
                headline += "; event %s that" % format_times(event.ratio)
            parts.append("threading.Event (event, %s) is %s the fastest here; it stays the idiomatic choice "
                         "where a wake-up is not the bottleneck." % (format_ns(event.level.p50_ns), format_times(event.ratio)))
        else:
            parts.append("threading.Event (event, %s) is among them: keep it where it fits." % format_ns(event.level.p50_ns))
    if slower:
        last = slower[-1]
        cites.append(last.level.cite())
        parts.append("Slowest: %s, %s (%s the fastest)." % (last.name, format_ns(last.level.p50_ns), format_times(last.ratio)))
    return Advice(PREFER, " ".join(parts), tuple(_unique(cites))), headline


def _process_advice(ranking: Optional[Ranking]) -> Optional[Advice]:
    if ranking is None:
        return None
    first = ranking.fastest
    if len(ranking.ranked) == 1:
        return Advice(PROCESSES, "Across processes only %s was measured: p50 %s." % (first.name, format_ns(first.level.p50_ns)),
                      (first.level.cite(),))
    text = "Waking another process: %s." % format_ranking(ranking, limit=3)
    cites = [r.level.cite() for r in ranking.leaders[:4]]
    slowest = ranking.slowest
    if slowest.clearly_slower:
        cites.append(slowest.level.cite())
    return Advice(PROCESSES, text, tuple(_unique(cites)))


def _signal_advice(levels: Mapping[str, Level], in_process: Optional[Ranking],
                   signals: Optional[Ranking]) -> Tuple[List[Advice], str]:
    items: List[Advice] = []
    clause = ""
    for handler, pair in arms_with_role(ROLE_HANDLER_COST):
        plain, what, adds = str(pair.against), pair.isolates, pair.adds
        h, p = levels.get(handler), levels.get(plain)
        if h is None or p is None:
            continue
        extra = h.p50_ns - p.p50_ns
        if clearly_faster(p, h):
            text = ("A handler costs more than delivery: %s p50 %s against %s %s, %s more (%s) for %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), format_ns(extra),
                       format_times(h.p50_ns / p.p50_ns), what))
            clause = clause or "%s %s (%s vs %s)" % (adds, format_ns(extra), handler, plain)
        elif clearly_faster(h, p):
            text = ("%s (p50 %s) was faster than %s (%s) here, beyond this run's noise: %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), what))
        else:
            text = ("%s p50 %s against %s %s: no difference beyond this run's noise, for %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), what))
        items.append(Advice(SIGNALS, text, (h.cite(), p.cite())))
    if signals is not None and in_process is not None:
        best_signal, best_wake = signals.fastest.level, in_process.fastest.level
        cites = (best_signal.cite(), best_wake.cite())
        if clearly_faster(best_wake, best_signal):
            text = ("Signals are not a faster way to wake a thread: the fastest blocked signal path, %s (%s), is %s "
                    "the fastest in-process wake, %s (%s). Use signals for process control (reload, graceful stop)."
                    % (best_signal.name, format_ns(best_signal.p50_ns), format_times(best_signal.p50_ns / best_wake.p50_ns),
                       best_wake.name, format_ns(best_wake.p50_ns)))
            clause = clause or "signals are %s slower than %s" % (format_times(best_signal.p50_ns / best_wake.p50_ns), best_wake.name)
        else:
            text = ("The fastest blocked signal path, %s (%s), is not clearly slower than the fastest in-process wake, "
                    "%s (%s); still, signals reach only the main thread's handlers: keep them for process control."
                    % (best_signal.name, format_ns(best_signal.p50_ns), best_wake.name, format_ns(best_wake.p50_ns)))
        items.append(Advice(SIGNALS, text, cites))
    spin = levels.get("sigusr1-self")
    if spin is not None and not items:
        cites_list = [spin.cite()]
        text = ("sigusr1-self's p50 %s is a self-signal round trip into a Python handler while the main thread "
                "spins: no thread sleeps, so no wake-up is in it." % format_ns(spin.p50_ns))
        wake = in_process.fastest.level if in_process is not None else None
        if wake is not None:
            cites_list.append(wake.cite())
            text += (" It does not make signals a faster wake than %s (%s): the two are not the same experiment. "
                     "Use %s for in-process wait/notify and signals for process control (reload, graceful stop), "
                     "with handlers that set a flag or write a byte to a wakeup fd."
                     % (wake.name, format_ns(wake.p50_ns), wake.name))
        else:
            text += " Use signals for process control (reload, graceful stop), with handlers that set a flag or write a byte to a wakeup fd."
        items.append(Advice(SIGNALS, text, tuple(cites_list)))
        clause = "signals for process control (sigusr1-self's %s is a busy-wait round trip, not a faster wake)" % format_ns(spin.p50_ns)
    return items, clause


def _install_advice(bundle: Bundle) -> Optional[Advice]:
    arms = bundle.arms_by_name()
    install = arms.get("signal-install")
    if install is None or not install.measured or install.rate is None:
        return None
    ops = _positive(install.rate.ops_per_s)
    if ops is None:
        return None
    per_call = 1e9 / ops
    cites = [Cite(install.name, "per_call", per_call)]
    text = ("signal.signal() rebinding ran at %s/s: %s per install, so a reload that re-installs %d handlers spends "
            "%s on it. Registration is not the bottleneck; what the handler and the reload do is (a SIGHUP handler "
            "that parses a config runs the whole parse in the main thread)."
            % (format_rate(ops), format_ns(per_call), RELOAD_HANDLERS, format_ns(RELOAD_HANDLERS * per_call)))
    slowest, fastest = _positive(install.rate.min_ops_per_s), _positive(install.rate.max_ops_per_s)
    if slowest is not None and fastest is not None and fastest / slowest >= NO_RANGE_RATIO:
        text += " Its rounds ranged from %s/s to %s/s." % (format_rate(slowest), format_rate(fastest))
    native = arms.get(str(install.native)) if install.native else None
    native_ops = _positive(native.rate.ops_per_s) if native is not None and native.measured and native.rate else None
    unwrapped = next((arms[n] for n, r in arms_with_role(ROLE_UNWRAPPED_INSTALL) if r.against == install.name and n in arms), None)
    unwrapped_ops = _positive(unwrapped.rate.ops_per_s) if unwrapped is not None and unwrapped.measured and unwrapped.rate else None
    if unwrapped is not None and unwrapped_ops is not None:
        # Where the rebinding cost goes: Lib/signal.py's wrapper, the C function under it, the kernel call.
        inner = 1e9 / unwrapped_ops
        cites.append(Cite(unwrapped.name, "per_call", inner))
        wrapper = per_call - inner
        if wrapper > 0:
            text += " Where it goes: signal.signal %s per call = _signal.signal %s + Python wrapper %s (%.0f%%: its enum " \
                    "conversions of the signal and the old handler)" % (
                        format_ns(per_call), format_ns(inner), format_ns(wrapper), 100 * wrapper / per_call)
        else:
            text += " Where it goes: _signal.signal (%s, the C function under the wrapper) took as long as signal.signal " \
                    "(%s): the wrapper's share is within this run's noise" % (format_ns(inner), format_ns(per_call))
        if native is not None and native_ops is not None:
            cites.append(Cite(native.name, "per_call", 1e9 / native_ops))
            text += "; C sigaction() (%s) %s." % (native.name, format_ns(1e9 / native_ops))
        else:
            text += "."
    elif native is not None and native_ops is not None:
        cites.append(Cite(native.name, "per_call", 1e9 / native_ops))
        text += " C's %s: %s per call (%s faster)." % (native.name, format_ns(1e9 / native_ops), format_ratio(native_ops / ops))
    return Advice(INSTALL, text, tuple(cites))


def _busy_threads(bundle: Bundle) -> int:
    """How many busy Python threads ran beside the waiter (``--cpu-threads``), 0 without load."""
    conditions = bundle.summary.get("conditions") or {}
    busy = conditions.get("cpu_threads") if isinstance(conditions, Mapping) else None
    return busy if isinstance(busy, int) and not isinstance(busy, bool) and busy > 0 else 0


def _tail_advice(bundle: Bundle, in_process: Optional[Ranking], levels: Mapping[str, Level]) -> Optional[Advice]:
    busy = _busy_threads(bundle)
    watched: List[Level] = []
    if in_process is not None:
        watched.append(in_process.fastest.level)
    if "event" in levels and levels["event"] not in watched:
        watched.append(levels["event"])
    if not watched:
        watched = [lv for lv in levels.values() if group_of(lv.arm) not in (NATIVE, STORM_GROUP)][:1]
    if not watched:
        return None
    parts: List[str] = []
    cites: List[Cite] = []
    for level in watched:
        key, tail = _tail_figure(level)
        top = level.figure("max")
        if tail is None:
            continue
        cites += [level.cite(), level.cite(key)]
        phrase = "%s: %s %s, %s its p50" % (level.name, key.replace("_", "."), format_ns(tail), format_ratio(tail / level.p50_ns))
        if top is not None and key != "max":
            cites.append(level.cite("max"))
            phrase += ", max %s" % format_ns(top)
        parts.append(phrase)
    if not parts:
        return None
    worst: Optional[Tuple[float, Level, str, float]] = None
    for level in levels.values():
        if group_of(level.arm) in (NATIVE, STORM_GROUP) or level.figure("p99") is None:
            continue
        p99 = level.figure("p99") or 0.0
        ratio = p99 / level.p50_ns
        if worst is None or ratio > worst[0]:
            worst = (ratio, level, "p99", p99)
    text = "Tail%s: %s." % (" with %d busy Python thread%s beside the waiter" % (busy, "" if busy == 1 else "s") if busy else "",
                             "; ".join(parts))
    if worst is not None and worst[1] not in watched:
        cites.append(worst[1].cite("p99"))
        text += " The widest tail among the wake paths: %s, p99 %s (%s its p50)." % (
            worst[1].name, format_ns(worst[3]), format_ratio(worst[0]))
    tails = [w for w in bundle.warnings() if w.kind is WarningKind.SWITCH_INTERVAL_TAIL and w.arm in levels]
    for warning in tails[:2]:
        figures = warning.figures
        share, interval = _number(figures.get("share")), _number(figures.get("interval_s"))
        if share is None or interval is None:
            continue
        arm = levels[str(warning.arm)]
        cites.append(arm.cite(_tail_figure(arm)[0]))
        text += (" %.1f%% of %s's wakes took just over a %s switch interval: a busy thread held the GIL; keep CPU-bound "
                 "work out of the process that must wake fast, or shorten sys.setswitchinterval." % (
                     100 * share, arm.name, format_ns(interval * 1e9)))
    if not busy:
        text += " No load was added: --cpu-threads 2 shows the tail with busy Python threads holding the GIL."
    return Advice(TAIL, text, tuple(_unique(cites)))


def _polling_advice(bundle: Bundle, levels: Mapping[str, Level], in_process: Optional[Ranking]) -> Tuple[List[Advice], str]:
    """What a wait that polls (a ``polling`` warning, :func:`wakelab.analysis.quality.find_polling`) means, and
    what to use instead; the headline's clause."""
    warnings = [w for w in bundle.warnings() if w.kind is WarningKind.POLLING and w.arm in levels]
    polling = [str(w.arm) for w in warnings]
    items: List[Advice] = []
    clause = ""
    for warning in warnings:
        figures = warning.figures
        period = _positive(figures.get("period_ns"))
        if period is None:
            continue
        level = levels[str(warning.arm)]
        at_least = bool(figures.get("spans_jitter"))
        every = ("every %s or more" if at_least else "about every %s") % format_ns(period)
        cites = [level.cite()]
        text = ("%s's wait polls %s: it looks for the notify, sleeps, and looks again, so a notify is seen only at its "
                "next look -- its wakes spread evenly up to the period, and its p50, %s, is about half of it. That cost "
                "does not shrink on a faster machine. Where the wake path matters, wait on something that blocks in the "
                "kernel until it is notified: threading.Event or Condition, queue.Queue, or a pipe or os.eventfd "
                "the waiter blocks on in select/poll" % (level.name, every, format_ns(level.p50_ns)))
        blocking = [r.level for r in in_process.ranked if r.name not in polling] if in_process is not None else []
        alternative = next((r.against for n, r in arms_with_role(ROLE_POLLS) if n == level.name), None)
        if alternative in levels:
            blocking = [levels[str(alternative)]]
        if blocking:
            cites.append(blocking[0].cite())
            text += " (%s took %s here)" % (blocking[0].name, format_ns(blocking[0].p50_ns))
        text += (". If the loop is your own, a shorter sleep only trades the latency for CPU time."
                 if not at_least else
                 ". The period may be longer than the settle's random part reached: rerun with a larger "
                 "--settle-jitter-us to measure it.")
        items.append(Advice(POLLING, text, tuple(cites)))
        clause = clause or "%s polls (%s): use a wait that blocks" % (level.name, every)
    return items, clause


def _handoff_advice(levels: Mapping[str, Level]) -> Tuple[List[Advice], str]:
    """Threads, subinterpreters or processes for a hand-off, from the executor arms; and what waking a
    subinterpreter by its queue costs against a pipe.  The headline's clause."""
    items: List[Advice] = []
    clause = ""
    pools = sorted((levels[n] for n, _ in arms_with_role(ROLE_POOL) if n in levels), key=lambda lv: lv.p50_ns)
    if pools:
        first = pools[0]
        parts = ["Handing a task to an idle executor worker, submit() to the task's first statement: %s %s (p50)"
                 % (first.name, format_ns(first.p50_ns))]
        for other in pools[1:]:
            apart = "" if clearly_faster(first, other) else ", within this run's noise of it"
            parts.append("%s %s (%s%s)" % (other.name, format_ns(other.p50_ns), format_times(other.p50_ns / first.p50_ns), apart))
        text = "; ".join(parts) + "."
        names = [lv.name for lv in pools]
        notes = []
        if "thread-pool-submit" in names:
            notes.append("a thread pool's worker shares the submitter's GIL (right for I/O, or C code that releases it)")
        if "interp-pool-submit" in names:
            notes.append("an interpreter pool pickles every task and switches interpreter, but each worker has a GIL of "
                         "its own, so CPU-bound Python runs in parallel: worth it when a task runs much longer than "
                         "the hand-off")
        if "process-pool-submit" in names:
            notes.append("a process pool adds a pipe and a feeder thread, and isolates the task completely")
        if notes:
            text += " Besides the hand-off: " + "; ".join(notes) + "."
        items.append(Advice(HANDOFF, text, tuple(lv.cite() for lv in pools)))
        clause = "to hand off a task, %s is fastest (%s)" % (first.name, format_ns(first.p50_ns))
    queue, pipe = levels.get("interp-queue"), levels.get("interp-pipe")
    if queue is not None:
        least = _min_ns(queue) or queue.p50_ns
        text = ("Waking a subinterpreter through concurrent.interpreters.Queue: p50 %s, min %s. Its get() does not "
                "block in the kernel but sleeps and looks again (every 10 ms in CPython 3.14 and 3.15), so a put() is "
                "seen at the waiter's next look" % (format_ns(queue.p50_ns), format_ns(least)))
        cites = [queue.cite(), Cite(queue.name, "min", float(least))]
        if pipe is not None:
            cites.append(pipe.cite())
            text += ("; a subinterpreter blocked on an os.pipe the main interpreter writes woke in %s (interp-pipe, %s "
                     "less). To wake one promptly, block it on a pipe or eventfd and pass the data through the queue "
                     "after the wake." % (format_ns(pipe.p50_ns), format_times(queue.p50_ns / pipe.p50_ns)))
        else:
            text += "."
        items.append(Advice(HANDOFF, text, tuple(cites)))
        if not clause:
            clause = "a subinterpreter's queue wakes in %s (it polls)" % format_ns(queue.p50_ns)
    return items, clause


def _min_ns(level: Level) -> Optional[float]:
    lat = level.arm.latency
    return _positive(lat.min_ns) if lat is not None else None


def _pitfalls(levels: Mapping[str, Level]) -> List[Advice]:
    items: List[Advice] = []
    handlers = [levels[n] for n, _ in arms_with_role(ROLE_HANDLER) if n in levels]
    if handlers:
        h = handlers[0]
        items.append(Advice(PITFALL, (
            "Main-thread-only delivery: CPython runs a Python signal handler only in the main thread, between "
            "bytecodes (%s, p50 %s, with the main thread waiting for it). A main thread busy in C code or "
            "blocked elsewhere runs it late, and a signal aimed at a worker thread is still handled in the main one."
            % (h.name, format_ns(h.p50_ns))), (h.cite(),)))
        cites = tuple(lv.cite() for lv in handlers[:3])
        items.append(Advice(PITFALL, (
            "Heavy handlers: a trivial handler's whole path took %s here; keep a handler to setting a flag "
            "or writing a byte to a wakeup fd, and do the real work on a normal thread -- a handler that takes "
            "milliseconds delays everything the main thread does." % ", ".join(
                "%s (%s)" % (format_ns(lv.p50_ns), lv.name) for lv in handlers[:3])), cites))
    spinning = sorted((lv for lv in levels.values() if group_of(lv.arm) == SPINNING),
                      key=lambda lv: lv.arm.family != "signals")  # the original lab's busy-wait signal first
    for spin in spinning[:2]:
        blocked: Optional[Level] = None
        if spin.arm.family == "signals":
            sigwaits = [n for n, _ in arms_with_role(ROLE_SIGWAIT)]
            blocked = next((levels[n] for n in ["pause-handler"] + sigwaits if n in levels), None)
            about = "a thread blocked in pause() or sigwait"
        else:
            base = spin.name[:-len("-spin")] if spin.name.endswith("-spin") else ""
            blocked = levels.get(base) if base else None
            about = "a waiter blocked in wait()"
        text = "Busy-wait figures: %s's %s was measured with its waiter spinning; it does not apply to %s" % (
            spin.name, format_ns(spin.p50_ns), about)
        cites_list = [spin.cite()]
        if blocked is not None:
            cites_list.append(blocked.cite())
            text += " (%s, whose waiter blocks, took %s here)" % (blocked.name, format_ns(blocked.p50_ns))
        text += "."
        items.append(Advice(PITFALL, text, tuple(cites_list)))
    return items


def _unique(cites: Sequence[Cite]) -> List[Cite]:
    out: List[Cite] = []
    for cite in cites:
        if cite not in out:
            out.append(cite)
    return out


def guidance_for(bundle: Bundle, ranked: Optional[Sequence[Ranking]] = None) -> Guidance:
    """The advice this run's figures support (see the module docstring); nothing cited is unmeasured.

    ``bundle`` is a :class:`~wakelab.evidence.model.Bundle` (from a loaded
    folder, or ``Bundle(source="", folder="", summary=doc)`` for a summary
    document in memory).  Returns a :class:`Guidance`: ``headline`` (one line)
    and ``items``, each an :class:`Advice` with ``topic`` (``in-process wake``,
    ``across processes``, ``signal delivery``, ``handler install``, ``tail``,
    ``hand-off``, ``polling``, ``pitfall`` or ``self-test``; ``signal storm`` and ``realtime``
    from :mod:`wakelab.analysis.storms`), ``text`` and ``cites`` (``arm``,
    ``figure`` -- ``p50``, ``p90``, ``p99``, ``max`` or ``per_call`` --
    and ``value_ns``).  Times are nanoseconds.  ``ranked``: the bundle's
    :func:`rank_wake_paths`, when the caller has them already.
    """
    levels = _measured_levels(bundle)
    rankings = {r.group: r for r in (rank_wake_paths(bundle) if ranked is None else ranked)}
    in_process = rankings.get(IN_PROCESS)
    items: List[Advice] = []
    clauses: List[str] = []
    params = bundle.summary.get("parameters") or {}
    planted = _positive(params.get("planted_delay_us")) if isinstance(params, Mapping) else None
    if planted is not None and levels:
        any_level = next(iter(levels.values()))
        items.append(Advice(SELF_TEST, (
            "Every notify had a planted delay of %s µs: these figures test the harness, and the advice below is "
            "about them, not about this machine." % format_rate(planted)), (any_level.cite(),)))
    prefer, clause = _prefer_advice(in_process)
    if prefer is not None:
        items.append(prefer)
        clauses.append(clause)
    processes = _process_advice(rankings.get(PROCESS_GROUP))
    if processes is not None:
        items.append(processes)
        if prefer is None:
            clauses.append("across processes, %s is fastest (%s)" % (
                rankings[PROCESS_GROUP].fastest.name, format_ns(rankings[PROCESS_GROUP].fastest.level.p50_ns)))
    signal_items, signal_clause = _signal_advice(levels, in_process, rankings.get(SIGNAL_GROUP))
    items += signal_items
    if signal_clause:
        clauses.append(signal_clause)
    install = _install_advice(bundle)
    if install is not None:
        items.append(install)
        if not clauses:
            clauses.append("installing a signal handler costs %s" % format_ns(install.cites[0].value_ns))
    tail = _tail_advice(bundle, in_process, levels)
    if tail is not None:
        items.append(tail)
    handoff, handoff_clause = _handoff_advice(levels)
    items += handoff
    if handoff_clause:
        clauses.append(handoff_clause)
    from wakelab.analysis import storms  # lazily: it builds on this module

    for advise in (storms.storm_advice, storms.realtime_advice):
        more, more_clause = advise(bundle, levels)
        items += more
        if more_clause:
            clauses.append(more_clause)
    polling, polling_clause = _polling_advice(bundle, levels, in_process)
    items += polling
    if polling_clause:
        clauses.append(polling_clause)
    items += _pitfalls(levels)
    if not clauses and levels:
        fastest = min(levels.values(), key=lambda lv: lv.p50_ns)
        clauses.append("fastest measured: %s (%s)" % (fastest.name, format_ns(fastest.p50_ns)))
    if not clauses:
        headline = "No arm produced figures in this run: nothing to advise."
    else:
        headline = "; ".join(clauses)
        headline = headline[0].upper() + headline[1:] + "."
        busy = _busy_threads(bundle)
        if busy:
            headline = "With %d busy Python thread%s beside the waiter: %s" % (busy, "" if busy == 1 else "s", headline[0].lower() + headline[1:])
        if planted is not None:
            headline = "Self-test (planted delay %s µs): %s" % (format_rate(planted), headline[0].lower() + headline[1:])
    return Guidance(headline, tuple(items))


def guidance_dict(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """:func:`guidance_for` of a summary document in memory, in its JSON form (for summary.json)."""
    return guidance_for(Bundle(source="", folder="", summary=summary)).to_dict()


__all__ = [
    "Advice", "Cite", "Guidance", "Level", "Ranked", "Ranking", "clearly_faster", "format_ranking",
    "guidance_dict", "guidance_for", "level_of", "rank_wake_paths",
]

