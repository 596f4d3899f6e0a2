"""What a figure does not say: open-loop figures, the tail, a wait that polls, and the pitfalls of signals.

An open-loop figure (``--mode open``) is taken from each notify's *scheduled* instant, not from ``t0``: it includes the
notifier's own lateness (the ``notify_late`` component) and any wait behind an earlier wake.  The guidance says so
first (:func:`open_loop_advice`), and marks every figure it quotes from such a run
(:func:`~wakelab.analysis.guidance.ranking.open_loop_note`)."""

from __future__ import annotations

from typing import List, Mapping, Optional, Tuple

from wakelab.analysis.guidance.noise import Level, positive, tail_figure
from wakelab.analysis.guidance.ranking import NATIVE, SPINNING, STORM_GROUP, Ranking, group_of
from wakelab.analysis.guidance.records import OPEN_LOOP, PITFALL, POLLING, TAIL, Advice, Cite, unique_cites
from wakelab.core.model import ROLE_HANDLER, ROLE_POLLS, ROLE_SIGWAIT
from wakelab.core.registry import arms_with_role
from wakelab.evidence.model import Bundle, WarningKind
from wakelab.formatting import counted, format_ns, format_rate, format_ratio


def open_loop_words(interval_us: float) -> str:
    every = "a notify every %s µs; " % format_rate(interval_us) if interval_us else ""
    return "%slatencies from each notify's scheduled instant, the notifier's lateness included" % every


def open_loop_advice(levels: Mapping[str, Level], in_process: Optional[Ranking], interval_us: float) -> Advice:
    level = in_process.fastest.level if in_process is not None else min(levels.values(), key=lambda lv: (lv.p50_ns, lv.name))
    cites = [level.cite()]
    every = "one every %s µs, " % format_rate(interval_us) if interval_us else ""
    text = ("Open loop: every latency here is taken from its notify's scheduled instant (%swhether or not the waiter "
            "was ready), not from t0, the notify call itself, as in a closed loop. So it includes the notifier's own "
            "lateness -- its sleep overshooting the schedule" % every)
    late = next((positive(figures.p50_ns) for name, figures in level.arm.components if name == "notify_late"), None)
    if late is not None:
        cites.append(Cite(level.name, "notify_late_p50", late))
        text += " (%s's p50 %s holds %s of it: notify_late)" % (level.name, format_ns(level.p50_ns), format_ns(late))
    text += (" -- and any wait behind an earlier wake still in progress (a notify merged into it is counted lost, as "
             "coalesced). It is the latency a steady stream of requests sees, not the wake alone: compare it only "
             "with open-loop figures at the same interval; --mode closed measures the wake from t0.")
    return Advice(OPEN_LOOP, text, tuple(cites))


def busy_threads(bundle: Bundle) -> int:
    busy = bundle.conditions.cpu_threads
    return busy if isinstance(busy, int) and not isinstance(busy, bool) and busy > 0 else 0


def tail_advice(bundle: Bundle, in_process: Optional[Ranking], levels: Mapping[str, Level]) -> Optional[Advice]:
    busy = busy_threads(bundle)
    watched: List[Level] = []
    if in_process is not None:
        watched.append(in_process.fastest.level)
    if "event" in levels and levels["event"] not in watched:
        watched.append(levels["event"])
    if not watched:
        watched = sorted((lv for lv in levels.values() if group_of(lv.arm) not in (NATIVE, STORM_GROUP)),
                         key=lambda lv: (lv.p50_ns, lv.name))[:1]
    if not watched:
        return None
    parts: List[str] = []
    cites: List[Cite] = []
    for level in watched:
        key, tail = tail_figure(level)
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
    # Ties go to the first name, whatever the run order.
    p99s = [(lv, lv.figure("p99")) for lv in sorted(levels.values(), key=lambda lv: lv.name)
            if group_of(lv.arm) not in (NATIVE, STORM_GROUP)]
    worst = max(((p99 / lv.p50_ns, lv, p99) for lv, p99 in p99s if p99 is not None), key=lambda t: t[0], default=None)
    text = "Tail%s: %s." % (" with %s beside the waiter" % counted(busy, "busy Python thread") if busy else "", "; ".join(parts))
    if worst is not None and worst[1] not in watched:
        cites.append(worst[1].cite("p99"))
        text += " The widest tail among the wake paths: %s, p99 %s (%s its p50)." % (
            worst[1].name, format_ns(worst[2]), format_ratio(worst[0]))
    tails = [w for w in bundle.warnings() if w.kind is WarningKind.SWITCH_INTERVAL_TAIL and w.arm in levels]
    for warning in tails[:2]:
        figures = warning.figures
        share, interval = positive(figures.get("share")), positive(figures.get("interval_s"))
        if share is None or interval is None:
            continue
        arm = levels[str(warning.arm)]
        cites.append(arm.cite(tail_figure(arm)[0]))
        text += (" %.1f%% of %s's wakes took just over a %s switch interval: a busy thread held the GIL; keep CPU-bound "
                 "work out of the process that must wake fast, or shorten sys.setswitchinterval." % (
                     100 * share, arm.name, format_ns(interval * 1e9)))
    if not busy:
        text += " No load was added: --cpu-threads 2 shows the tail with busy Python threads holding the GIL."
    return Advice(TAIL, text, tuple(unique_cites(cites)))


def polling_advice(bundle: Bundle, levels: Mapping[str, Level], in_process: Optional[Ranking]) -> Tuple[List[Advice], str]:
    warnings = [w for w in bundle.warnings() if w.kind is WarningKind.POLLING and w.arm in levels]
    polling = [str(w.arm) for w in warnings]
    items: List[Advice] = []
    clause = ""
    for warning in warnings:
        figures = warning.figures
        period = positive(figures.get("period_ns"))
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


def pitfalls(levels: Mapping[str, Level]) -> List[Advice]:
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
                      key=lambda lv: (lv.arm.family != "signals", lv.name))  # the original lab's busy-wait signal first
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
