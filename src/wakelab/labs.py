"""Labs: named presets of arms, parameters, comparisons and the prose around them.

Lab 135 reproduces the original "signal vs threading.Event wakeup" lab with
its original parameters.  Later labs widen the question; each names the
pairs of arms whose ratio answers it.  Whether a pair is like for like is
never asserted here: the analysis derives it from the arms' waiter state,
scope and what the waiter does at t0 (:func:`wakelab.analysis.caveats.pair_arms`),
and a test holds every pair of :data:`MATCHED_PAIRS` to it.

A run records :func:`lab_for_run`, not the preset itself: arms chosen with
``--arms`` that are not the lab's own make a lab of their own (``custom``),
and the sentences that speak of how the run was made (one process or worker
processes, pinned or not, closed or open loop) are worded for the run.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from wakelab.core.registry import all_arms, unknown_name_message
from wakelab.core.model import MeasureParams
from wakelab.errors import UsageError

CUSTOM_ID = "custom"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Arm ``a`` against arm ``b``: the report gives ``a / b`` at p50 and p99."""

    a: str
    b: str


@dataclasses.dataclass(frozen=True)
class Lab:
    """A preset: which arms, with which parameters, answering which question."""

    id: str
    title: str
    question: str
    arms: Tuple[str, ...]
    params: MeasureParams = MeasureParams()
    comparisons: Tuple[Comparison, ...] = ()
    methodology: Tuple[str, ...] = ()
    limits: Tuple[str, ...] = ()
    reproduce_script: Optional[str] = None
    aliases: Tuple[str, ...] = ()
    # A custom selection: the preset whose arms it replaced (its parameters and comparisons).
    based_on: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class RunShape:
    """How a run is made, as far as a lab's prose speaks of it."""

    in_process: bool
    workers: int  # fresh worker processes per arm (ignored in process)
    placements: Tuple[str, ...] = ("any",)  # one per cell: any, same or split
    open_loop: bool = False


def _processes(shape: RunShape) -> str:
    """Where each arm ran, as a clause: 'in the runner's own process' or 'in 3 fresh worker processes'."""
    if shape.in_process:
        return "in the runner's own process"
    if shape.workers == 1:
        return "in a fresh worker process of its own"
    return "in %d fresh worker processes, its wakes split between them and pooled" % shape.workers


# The sentences below speak of how a run is made.  The presets hold them as written for the
# original lab; :func:`lab_for_run` rewords each for the run at hand (see _REWORDED).
_ONE_PROCESS = "One machine, one process, one interpreter per run."


def _one_process_for(shape: RunShape) -> str:
    return "One machine and one interpreter per run; each arm ran %s." % _processes(shape)


LAB_135 = Lab(
    id="135-signal-vs-event-wakeup",
    title="Lab 135: signal vs threading.Event wakeup",
    question=(
        "How long does threading.Event take to wake a worker thread, compared with a "
        "SIGUSR1 self-signal reaching its Python handler, and what does installing a "
        "signal handler cost?"
    ),
    arms=("event", "sigusr1-self", "signal-install"),
    params=MeasureParams(n=200, install_n=20000, rounds=7),
    comparisons=(Comparison("event", "sigusr1-self"),),
    methodology=(
        "The sigusr1-self arm spins in the main thread until its handler has run: no "
        "thread sleeps, so no scheduler wake-up is in its figure. The event arm's "
        "worker is asleep in the kernel and must be scheduled back in, so its figure "
        "includes a thread wake-up. Read the ratio as 'a self-signal round trip "
        "against an Event wake-up', not as 'signals beat threads'.",
        "Python runs signal handlers only in the main thread, and only when that "
        "thread next checks for pending signals; a busy-waiting main thread checks "
        "almost at once, a blocked or computing one may not.",
    ),
    limits=(
        _ONE_PROCESS,
        "Not a multi-process signal storm, and no real-time guarantee.",
        "Figures taken in a VM include the hypervisor's idle and wake-up behaviour.",
    ),
    reproduce_script="lab-evidence/135-signal-vs-event-wakeup/results/run_lab.py",
    aliases=("135", "lab135"),
)

# Pairs that answer Lab 135's question like for like: the same waiter state, the same scope and
# the same waiter at t0 on both sides.  There is no spinning pair: sigusr1-self signals its own
# thread, and the spinning thread arms (event-spin, queue-spin) wake another thread which, under
# a GIL, waits for the GIL at t0 instead of polling.
MATCHED_PAIRS = (
    Comparison("pause-handler", "event"),
    Comparison("sigwait-thread-to-main", "event"),
    Comparison("wakeup-fd-select", "pipe"),
)

_UNPINNED = "Figures taken in a VM include the hypervisor's idle and wake-up behaviour; where each side ran is not pinned."


def _unpinned_for(shape: RunShape) -> str:
    vm = "Figures taken in a VM include the hypervisor's idle and wake-up behaviour"
    pinned = [p != "any" for p in shape.placements]
    if not any(pinned):
        return _UNPINNED
    if all(pinned):
        return vm + "; --placement pins the notifier and waiter to virtual CPUs, not to physical ones."
    return vm + "; some cells pin the notifier and waiter (--placement), others leave them unpinned."


_COMMON_LIMITS = (
    "One machine and one interpreter per run; compare interpreters or machines side by side, never across days.",
    _UNPINNED,
)

LAB_MATCHED = Lab(
    id="matched",
    title="Matched pairs: signal vs threading.Event, like for like",
    question=(
        "Lab 135 compared a blocked Event waiter with a spinning signal waiter. With the waiter "
        "state held equal, how do signal wake paths compare with threading.Event and a pipe, and "
        "how far is each above the same experiment in C?"
    ),
    arms=(
        "event", "pause-handler", "sigwait-thread-to-main", "pipe", "wakeup-fd-select",
        "event-spin", "sigusr1-self", "signal-install",
        "native-condvar", "native-sigwait", "native-pipe", "native-self-signal", "native-sigaction-install",
        "native-pause-handler", "native-wakeup-fd-select",
    ),
    comparisons=MATCHED_PAIRS,
    methodology=(
        "Each comparison pairs two arms that are the same experiment but for the mechanism: the "
        "same waiter state, the same scope, and the waiter doing the same thing at t0. A blocked "
        "signal waiter has to be woken by another thread, so the pairs are all blocked and "
        "cross-thread: both waiters parked in the kernel.",
        "sigusr1-self, the spinning signal arm, has no like-for-like Event counterpart. It signals "
        "its own thread, and a thread cannot wait on an Event it sets itself; event-spin wakes "
        "another thread, which under a GIL is not polling at t0 but waiting for the GIL the "
        "notifier holds. sigusr1-self is compared with its C floor only.",
        "The 'vs C' column divides each Python arm's p50 by the p50 of its C floor, run in this "
        "run. Where the C experiment is the same (same scope, waiter state and t1) the ratio is the "
        "interpreter's share; where there is only a nearest floor, the column says so and the ratio "
        "is not the interpreter's share.",
    ),
    limits=_COMMON_LIMITS,
)

_IN_ONE_PROCESS = ", in one process,"


def _in_one_process_for(shape: RunShape) -> str:
    if shape.in_process:
        return ", in the runner's own process,"
    if shape.workers == 1:
        return ", in a fresh worker process of its own,"
    return ", in %d fresh worker processes of its own," % shape.workers


_SETTLE = "Blocked waiters announce their wait and are left to settle before t0; spinning waiters poll."


def _settle_for(shape: RunShape) -> str:
    if shape.open_loop:
        return ("Notifies go out on a fixed schedule (open loop) and each latency is taken from the scheduled "
                "instant; waiters are not left to settle first.")
    return _SETTLE


_CATALOGUE_RUNS = "Every arm available here runs in turn%s with the same parameters. %s" % (_IN_ONE_PROCESS, _SETTLE)


LAB_CATALOGUE = Lab(
    id="catalogue",
    title="The wake-mechanism catalogue",
    question=(
        "How long does each common way of waking a waiter in Python take on this machine -- threads, "
        "signals, file descriptors, asyncio and processes -- and how far above the native floor is each?"
    ),
    arms=("*",),
    comparisons=MATCHED_PAIRS,
    methodology=(
        _CATALOGUE_RUNS,
        "Arms are grouped by family. Compare within one waiter state; the verdict's ratios are the "
        "matched pairs that answer Lab 135's question fairly. 'vs C' is each arm's p50 over its C "
        "floor's: the interpreter's share where the floor is the same experiment, and marked "
        "'nearest floor' where it is only the closest one.",
    ),
    limits=_COMMON_LIMITS,
)

_CHILDREN_STARTED = "Children are started once per arm; start-up is in no sample."


def _children_started_for(shape: RunShape) -> str:
    if shape.in_process or shape.workers == 1:
        return _CHILDREN_STARTED
    return "Children are started once per arm in each worker process; start-up is in no sample."


LAB_PROCESSES = Lab(
    id="processes",
    title="Waking another process",
    question=(
        "How long does it take to wake a waiter in another process -- by signal, pipe, eventfd or "
        "multiprocessing -- compared with waking a thread?"
    ),
    arms=(
        "kill-sigwait-child", "pipe-process", "eventfd-fork", "mp-event", "mp-queue",
        "event", "pipe", "native-kill-sigwait-child", "native-pipe-process", "native-eventfd-fork",
        "native-condvar", "native-pipe",
    ),
    comparisons=(Comparison("pipe-process", "pipe"), Comparison("mp-event", "event")),
    methodology=(
        "t0 is taken in the parent and t1 in the child. Both are perf_counter_ns(), which on Linux "
        "reads CLOCK_MONOTONIC: one clock for every process of the machine, so the difference is "
        "meaningful across processes. " + _CHILDREN_STARTED,
    ),
    limits=_COMMON_LIMITS,
)

_LABS: List[Lab] = [LAB_135, LAB_MATCHED, LAB_CATALOGUE, LAB_PROCESSES]


def _all_comparisons() -> Tuple[Comparison, ...]:
    seen: List[Comparison] = []
    for lab in _LABS:
        seen += [c for c in lab.comparisons if c not in seen]
    return tuple(seen)


# ``--lab custom --arms A,B``: a selection of arms not taken from a preset (the REPRODUCE line of
# a custom run names it).  It compares any pair of a preset whose both arms it runs.
LAB_CUSTOM = Lab(
    id=CUSTOM_ID,
    title="Custom selection",
    question="How long does each selected arm take on this machine?",
    arms=(),
    comparisons=_all_comparisons(),
    limits=_COMMON_LIMITS,
)

# Sentences of the presets that speak of how the run was made, and how to word each for a run.
_REWORDED: Dict[str, Callable[[RunShape], str]] = {
    _ONE_PROCESS: _one_process_for,
    _UNPINNED: _unpinned_for,
    _IN_ONE_PROCESS: _in_one_process_for,
    _SETTLE: _settle_for,
    _CHILDREN_STARTED: _children_started_for,
}


def all_labs() -> List[Lab]:
    """The presets (``custom`` is not one: it has no arms of its own)."""
    return list(_LABS)


def lab_names() -> List[str]:
    return [lab.id for lab in _LABS]


def get_lab(name: str) -> Lab:
    """The lab called ``name`` (id or alias, or ``custom``); :class:`UsageError` lists the valid ones."""
    for lab in _LABS + [LAB_CUSTOM]:
        if name == lab.id or name in lab.aliases:
            return lab
    aliases = [alias for lab in _LABS for alias in lab.aliases]
    raise UsageError(unknown_name_message("lab", name, lab_names() + [CUSTOM_ID], also=aliases))


def lab_arm_names(lab: Lab) -> List[str]:
    """The lab's arms; ``*`` stands for every registered arm."""
    if lab.arms == ("*",):
        return [arm.name for arm in all_arms()]
    return list(lab.arms)


def _name_list(names: Sequence[str], most: int = 6) -> str:
    if len(names) <= most:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:most]), len(names) - most)


def _pairs(comparisons: Sequence[Comparison]) -> str:
    return ", ".join("%s / %s" % (c.a, c.b) for c in comparisons)


def custom_lab(base: Lab, arm_names: Sequence[str]) -> Lab:
    """The lab of ``arm_names`` chosen instead of ``base``'s own arms: ``custom``, not ``base``.

    It keeps ``base``'s parameters and those of its comparisons whose both arms were chosen,
    and claims none of its question.
    """
    names = list(arm_names)
    kept = tuple(c for c in base.comparisons if c.a in names and c.b in names)
    methodology = []
    if base.id == CUSTOM_ID:
        methodology.append("These arms were chosen with --arms: %s." % ", ".join(names))
        source = "the preset labs"
    else:
        methodology.append(
            "These arms were chosen with --arms instead of the %s lab's own (%s): %s. A selection is a lab of "
            "its own, recorded as custom, and claims none of that lab's question."
            % (base.id, _name_list(lab_arm_names(base)), ", ".join(names))
        )
        source = "the %s lab" % base.id
    runs = "Each arm runs in turn%s with the same parameters." if len(names) > 1 else "The arm runs%s with the parameters given."
    methodology.append("%s %s" % (runs % _IN_ONE_PROCESS, _SETTLE))
    if kept:
        methodology.append(
            "Ratios reported: %s, kept from %s because both arms of each were chosen. Compare other arms only "
            "within one waiter state and scope: the caveats say where a pair is not like for like." % (_pairs(kept), source)
        )
    else:
        methodology.append(
            "No ratio is reported: no comparison of %s has both its arms in this selection. Read the arms side by "
            "side, within one waiter state and scope." % source
        )
    return Lab(
        id=CUSTOM_ID,
        title="Custom selection: " + _name_list(names),
        question=("How long does each of these arms take on this machine: %s?" % _name_list(names, most=12)
                  if len(names) > 1 else "How long does %s take on this machine?" % names[0]),
        arms=tuple(names),
        params=base.params,
        comparisons=kept,
        methodology=tuple(methodology),
        limits=_COMMON_LIMITS,
        based_on=None if base.id == CUSTOM_ID else base.id,
    )


def is_own_selection(lab: Lab, arm_names: Sequence[str]) -> bool:
    """True when ``arm_names`` are ``lab``'s own arms (in any order)."""
    return lab.id != CUSTOM_ID and sorted(arm_names) == sorted(lab_arm_names(lab))


def _reword(text: str, shape: RunShape) -> str:
    for sentence, reword in _REWORDED.items():
        if sentence in text:
            text = text.replace(sentence, reword(shape))
    return text


def lab_for_run(lab: Lab, arm_names: Sequence[str], shape: RunShape) -> Lab:
    """The lab a run of ``arm_names`` under ``lab`` records: ``lab`` itself when they are its own
    arms, else :func:`custom_lab`; its methodology and limits worded for ``shape``."""
    chosen = lab if is_own_selection(lab, arm_names) else custom_lab(lab, arm_names)
    return dataclasses.replace(
        chosen,
        methodology=tuple(_reword(p, shape) for p in chosen.methodology),
        limits=tuple(_reword(p, shape) for p in chosen.limits),
    )
