"""The advice on choosing a wake path: in-process, across processes, by signal, a handler's install, a hand-off.

Each function reads the run's levels or rankings and returns its :class:`~wakelab.analysis.guidance.records.Advice`
(and, where it has one, its clause of the headline); it cites only arms the run measured.  The arms it names by their
part -- a handler's cost against the same path without one, the executors, the install without its Python wrapper --
each declare that part (:class:`wakelab.core.model.Role`), read by :func:`~wakelab.core.registry.arms_with_role`."""

from __future__ import annotations

from typing import List, Mapping, Optional, Tuple

from wakelab.analysis.guidance.noise import (
    LARGE_RATIO, NO_RANGE_RATIO, Level, beyond_noise, clear_of_noise, clearly_faster, format_times, noise_phrase, positive,
    tail_figure, within_noise, within_phrase)
from wakelab.analysis.guidance.ranking import (
    LEADER, UNCLEAR, Ranking, and_list, format_ranking, how_judged, lowest_words, rank_levels, wide_note)
from wakelab.analysis.guidance.records import HANDOFF, INSTALL, PREFER, PROCESSES, SIGNALS, Advice, Cite, unique_cites
from wakelab.core.model import ROLE_HANDLER_COST, ROLE_POOL, ROLE_UNWRAPPED_INSTALL
from wakelab.core.registry import arms_with_role
from wakelab.evidence.model import ArmRecord, Bundle
from wakelab.formatting import format_ns, format_rate, format_ratio

# How many handlers a reload re-installs in the install arithmetic (SIGHUP, SIGTERM, SIGINT).
RELOAD_HANDLERS = 3
# What each executor's hand-off does besides the hand-off, for the pools a run measured.
_POOL_NOTES = (
    ("thread-pool-submit", "a thread pool's worker shares the submitter's GIL (right for I/O, or C code that releases it)"),
    ("interp-pool-submit", "an interpreter pool pickles every task and switches interpreter, but each worker has a GIL of its "
                           "own, so CPU-bound Python runs in parallel: worth it when a task runs much longer than the hand-off"),
    ("process-pool-submit", "a process pool adds a pipe and a feeder thread, and isolates the task completely"),
)


def prefer_advice(ranking: Optional[Ranking]) -> Tuple[Optional[Advice], str]:
    if ranking is None:
        return None, ""
    first = ranking.fastest
    cites = [first.level.cite("p50")]
    p50_word = "open-loop p50" if ranking.open_loop else "p50"
    if len(ranking.ranked) == 1:
        tail_key, tail = tail_figure(first.level)
        if tail is not None:
            cites.append(first.level.cite(tail_key))
        text = ("%s is the only in-process wake path this run measured: %s %s%s. Nothing here ranks it against "
                "another (--lab catalogue ranks it against the other wake paths)."
                % (first.name, p50_word, format_ns(first.level.p50_ns),
                   ", %s %s" % (tail_key.replace("_", "."), format_ns(tail)) if tail is not None else ""))
        if first.name == "event":
            text += " threading.Event is the safe, idiomatic choice for waking a thread."
        return Advice(PREFER, text, tuple(cites)), "in-process, %s wakes a thread in %s (%s)" % (
            first.name, format_ns(first.level.p50_ns), p50_word)
    leaders = ranking.leaders
    unclear = ranking.unclear
    slower = [r for r in ranking.ranked if r.clearly_slower]
    runner_up = ranking.ranked[1]  # a leader too where several lead: cited with them, once
    cites.append(runner_up.level.cite())
    the_next = "the next, %s (%s), is %s that" % (runner_up.name, format_ns(runner_up.level.p50_ns), format_times(runner_up.ratio))
    if ranking.clear_fastest:
        parts = ["Fastest in-process wake: %s, %s %s, clear of every other %s." % (
                     first.name, p50_word, format_ns(first.level.p50_ns), clear_of_noise(first.level)),
                 "Prefer it where the wake path is hot: %s (%s)." % (the_next, noise_phrase(first.level, runner_up.level))]
        headline = "prefer %s in-process (%s %s; %s %s that, %s)" % (
            first.name, format_ns(first.level.p50_ns), p50_word, runner_up.name, format_times(runner_up.ratio),
            clear_of_noise(first.level))
        base_p50 = "the fastest's %s" % p50_word
    else:
        base_p50 = "the lowest %s" % p50_word
        if len(leaders) > 1:
            others = leaders[1:]
            cites += [r.level.cite() for r in others]
            parts = ["No in-process wake is fastest %s. %s of the lowest %s, %s's %s, with each %s's multiple of that: "
                     "%s -- choose among these by API, not speed." % (
                         beyond_noise(first.level), "Within it" if first.level.ranged else "Within %s×" % NO_RANGE_RATIO,
                         p50_word, first.name, format_ns(first.level.p50_ns), p50_word, ", ".join(
                             "%s (%s%s)" % (r.at_p50, format_times(r.ratio),
                                            "; %s" % within_phrase(first.level, r.level) if r.ratio >= LARGE_RATIO else "")
                             for r in others))]
            named = [r for i, r in enumerate(others) if i < 2 or r.name == "event" or len(others) <= 3]
            rest = len(others) - len(named)
            headline = "in-process wakes %s: %s, %s%s (choose among them by API)%s" % (
                within_noise(first.level, "the lowest " + p50_word),
                first.at_p50, ", ".join(r.at_p50 for r in named),
                " and %d more" % rest if rest else "", wide_note(leaders))
        else:
            parts = ["Lowest in-process %s: %s, %s; %s, %s (%s)." % (p50_word, first.name, format_ns(first.level.p50_ns), the_next,
                                                                   clear_of_noise(first.level), noise_phrase(first.level, runner_up.level))]
            headline = "in-process, %s has the lowest %s (%s), though not clearly below %s" % (
                first.name, p50_word, format_ns(first.level.p50_ns), ", ".join(r.name for r in unclear))
        parts.append("How this run judges noise: %s." % how_judged(ranking))
    if unclear:
        cites += [r.level.cite() for r in unclear]
        parts.append("Not clearly slower than %s either, though listed after an arm that is: %s." % (
            first.name, "; ".join("%s (%s %s; %s)" % (r.at_p50, format_times(r.ratio), base_p50, within_phrase(first.level, r.level))
                                  for r in unclear)))
    event = next((r for r in ranking.ranked if r.name == "event"), None)
    if event is not None and event is not first:
        cites.append(event.level.cite())
        event_words = "threading.Event (event, %s)" % format_ns(event.level.p50_ns)
        if event.clearly_slower:
            if not (ranking.clear_fastest and event is ranking.ranked[1]):  # else the headline names it already
                headline += "; event clearly slower (%s %s)" % (format_times(event.ratio), base_p50)
            parts.append("%s is clearly slower, %s %s here; it stays the idiomatic choice where a wake-up is not the "
                         "bottleneck." % (event_words, format_times(event.ratio), base_p50))
        elif event.standing == UNCLEAR:
            headline += "; event %s %s, not clearly slower" % (format_times(event.ratio), base_p50)
            parts.append("%s is not clearly slower than %s: keep it where it fits." % (event_words, first.name))
        else:
            parts.append("%s is among them: keep it where it fits." % event_words)
    if slower:
        last = slower[-1]
        cites.append(last.level.cite())
        parts.append("Slowest: %s, %s (%s %s)." % (last.name, format_ns(last.level.p50_ns), format_times(last.ratio), base_p50))
    return Advice(PREFER, " ".join(parts), tuple(unique_cites(cites))), headline


def process_advice(ranking: Optional[Ranking]) -> Optional[Advice]:
    if ranking is None:
        return None
    first = ranking.fastest
    if len(ranking.ranked) == 1:
        return Advice(PROCESSES, "Across processes only %s was measured: p50 %s." % (first.name, format_ns(first.level.p50_ns)),
                      (first.level.cite(),))
    text = "Waking another process: %s." % format_ranking(ranking, limit=3)
    cites = [r.level.cite() for r in ranking.leaders[:4] + ranking.unclear]
    slowest = ranking.slowest
    if slowest.clearly_slower:
        cites.append(slowest.level.cite())
    return Advice(PROCESSES, text, tuple(unique_cites(cites)))


def signal_advice(levels: Mapping[str, Level], in_process: Optional[Ranking],
                   signals: Optional[Ranking]) -> Tuple[List[Advice], str]:
    items: List[Advice] = []
    clause = ""
    for handler, pair in arms_with_role(ROLE_HANDLER_COST):
        plain, what, adds = str(pair.against), pair.isolates, pair.adds
        h, p = levels.get(handler), levels.get(plain)
        if h is None or p is None:
            continue
        extra = h.p50_ns - p.p50_ns
        against = "%s p50 %s against %s %s" % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns))
        if clearly_faster(p, h):
            text = "A handler costs more than delivery: %s, %s more (%s %s's) for %s." % (
                against, format_ns(extra), format_times(h.p50_ns / p.p50_ns), plain, what)
            clause = clause or "%s %s (%s vs %s)" % (adds, format_ns(extra), handler, plain)
        elif clearly_faster(h, p):
            text = ("%s (p50 %s) was faster than %s (%s) here, beyond this run's noise: %s."
                    % (handler, format_ns(h.p50_ns), plain, format_ns(p.p50_ns), what))
        else:
            slow, fast = (h, p) if h.p50_ns >= p.p50_ns else (p, h)
            wide = (" (%s)" % within_phrase(fast, slow, slow.name + "'s")
                    if slow.p50_ns >= LARGE_RATIO * fast.p50_ns else "")
            text = "%s: no difference beyond this run's noise%s, for %s." % (against, wide, what)
        items.append(Advice(SIGNALS, text, (h.cite(), p.cite())))
    if signals is not None and in_process is not None:
        best_signal, best_wake = signals.fastest.level, in_process.fastest.level
        cites = (best_signal.cite(), best_wake.cite())
        signal_words, wake_words = lowest_words(signals, "blocked signal path"), lowest_words(in_process, "in-process wake")
        if clearly_faster(best_wake, best_signal):
            text = ("Signals are not a faster way to wake a thread: %s, is %s %s. Use signals for process control (reload, "
                    "graceful stop)." % (signal_words, format_times(best_signal.p50_ns / best_wake.p50_ns), wake_words))
            clause = clause or "signals are %s slower than %s" % (format_times(best_signal.p50_ns / best_wake.p50_ns), best_wake.name)
        else:
            text = ("%s, is not clearly slower than %s%s; still, signals reach only the main thread's handlers: keep them for "
                    "process control." % (signal_words[0].upper() + signal_words[1:], wake_words, " (%s)" % within_phrase(
                        best_wake, best_signal) if best_signal.p50_ns >= LARGE_RATIO * best_wake.p50_ns else ""))
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


def _ops(arm: Optional[ArmRecord]) -> Optional[float]:
    return positive(arm.rate.ops_per_s) if arm is not None and arm.measured and arm.rate is not None else None


def install_advice(bundle: Bundle) -> Optional[Advice]:
    arms = bundle.arms_by_name()
    install = arms.get("signal-install")
    ops = _ops(install)
    if ops is None or install is None or install.rate is None:
        return None
    per_call = 1e9 / ops
    cites = [Cite(install.name, "per_call", per_call)]
    text = ("signal.signal() rebinding ran at %s/s: %s per install, so a reload that re-installs %d handlers spends "
            "%s on it. Registration is not the bottleneck; what the handler and the reload do is (a SIGHUP handler "
            "that parses a config runs the whole parse in the main thread)."
            % (format_rate(ops), format_ns(per_call), RELOAD_HANDLERS, format_ns(RELOAD_HANDLERS * per_call)))
    slowest, fastest = positive(install.rate.min_ops_per_s), positive(install.rate.max_ops_per_s)
    if slowest is not None and fastest is not None and fastest / slowest >= NO_RANGE_RATIO:
        text += " Its rounds ranged from %s/s to %s/s." % (format_rate(slowest), format_rate(fastest))
    native = arms.get(str(install.native)) if install.native else None
    native_ops = _ops(native)
    unwrapped = next((arms[n] for n, r in arms_with_role(ROLE_UNWRAPPED_INSTALL) if r.against == install.name and n in arms), None)
    unwrapped_ops = _ops(unwrapped)
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


def handoff_advice(levels: Mapping[str, Level]) -> Tuple[List[Advice], str]:
    items: List[Advice] = []
    clause = ""
    ranked = rank_levels([levels[n] for n, _ in arms_with_role(ROLE_POOL) if n in levels])
    pools = [r.level for r in ranked]
    if ranked:
        first = ranked[0]
        text = "Handing a task to an idle executor worker, submit() to the task's first statement: %s (p50)" % first.at_p50
        entries = []
        for other in ranked[1:]:
            apart = ""
            if not other.clearly_slower:
                if not first.level.ranged or not other.level.ranged:
                    apart = "; %s" % within_phrase(first.level, other.level)
                else:
                    apart = "; within this run's noise of %s" % first.name
                    if other.ratio >= LARGE_RATIO:
                        apart += ": %s" % within_phrase(first.level, other.level)
            entries.append("%s (%s%s)" % (other.at_p50, format_times(other.ratio), apart))
        if entries:
            text += "; then, × its p50: %s" % ", ".join(entries)
        text += "."
        notes = [note for name, note in _POOL_NOTES if any(lv.name == name for lv in pools)]
        if notes:
            text += " Besides the hand-off: " + "; ".join(notes) + "."
        items.append(Advice(HANDOFF, text, tuple(lv.cite() for lv in pools)))
        leaders = [r for r in ranked if r.standing == LEADER]
        if len(ranked) == 1:
            clause = "to hand off a task, %s takes %s (p50)" % (first.name, format_ns(first.level.p50_ns))
        elif len(leaders) == 1:
            clause = "to hand off a task, %s is fastest (%s, %s)" % (first.name, format_ns(first.level.p50_ns), clear_of_noise(first.level))
            unclear = [r.name for r in ranked if r.standing == UNCLEAR]
            if unclear:
                clause += ", though not clearly faster than %s" % ", ".join(unclear)
        else:
            clause = "to hand off a task, %s are %s%s" % (
                and_list([r.at_p50 for r in leaders]), within_noise(first.level, "the lowest p50"),
                wide_note(leaders))
    queue, pipe = levels.get("interp-queue"), levels.get("interp-pipe")
    if queue is not None:
        least = queue.figure("min") or queue.p50_ns
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
